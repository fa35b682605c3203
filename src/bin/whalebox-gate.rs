//! whalebox-gate: the exec boundary's client as a program
//! (`whalebox-gate --whalebox-gate SHELL PROGRAM ARGV0 ARGV1 …`). It asks the decision
//! server on `$WHALEBOX_GATE_SOCKET` and, when allowed, execs PROGRAM with the argv and
//! the environment it was given; a script without `#!` runs under SHELL as `sh` (empty:
//! /bin/sh). Anything else (a denial, no server, a bad reply, a timeout) ends with exit
//! 126 and a line on stderr: the gate fails closed. The patched zsh has the same client
//! built in (an extra exec per command costs more than the boundary's budget); this
//! program serves exec points that are not zsh. whalebox puts its path in
//! `$WHALEBOX_GATE` for them.
//!
//! Wire format, both ways: a 4-byte big-endian length, then that many bytes of JSON.
//! Request `{program, argv, cwd, pid}`; reply `{decision, reason}`.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::time::Duration;

const DENIED: i32 = 126;
/// An `ask` may wait for a person; past this the answer is no.
const DEFAULT_TIMEOUT_MS: u64 = 120_000;
const MAX_REPLY: usize = 1 << 20;
/// ENOEXEC on Linux (the gate stays std-only).
const ENOEXEC: i32 = 8;

fn deny(program: &str, reason: &str) -> ! {
    eprintln!("whalebox: denied {program}: {reason}");
    std::process::exit(DENIED);
}

fn lossy(s: &std::ffi::OsStr) -> String {
    String::from_utf8_lossy(s.as_bytes()).into_owned()
}

fn ask(program: &str, argv: &[OsString]) -> Result<(String, String), String> {
    let socket = std::env::var_os("WHALEBOX_GATE_SOCKET")
        .ok_or("WHALEBOX_GATE_SOCKET is not set (no decision server)")?;
    let timeout = std::env::var("WHALEBOX_GATE_TIMEOUT_MS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(DEFAULT_TIMEOUT_MS);
    let mut stream = UnixStream::connect(&socket)
        .map_err(|e| format!("no decision server at {}: {e}", lossy(&socket)))?;
    stream
        .set_read_timeout(Some(Duration::from_millis(timeout)))
        .map_err(|e| e.to_string())?;
    let cwd = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    let request = serde_json::json!({
        "program": program,
        "argv": argv.iter().map(|a| lossy(a)).collect::<Vec<_>>(),
        "cwd": cwd,
        "pid": std::process::id(),
    })
    .to_string();
    let mut frame = (request.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(request.as_bytes());
    stream
        .write_all(&frame)
        .map_err(|e| format!("cannot ask the decision server: {e}"))?;
    let mut len = [0u8; 4];
    stream
        .read_exact(&mut len)
        .map_err(|e| format!("no answer from the decision server: {e}"))?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_REPLY {
        return Err("the decision server's reply is too large".into());
    }
    let mut body = vec![0u8; len];
    stream
        .read_exact(&mut body)
        .map_err(|e| format!("a cut reply from the decision server: {e}"))?;
    let reply: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| format!("a bad reply: {e}"))?;
    let decision = reply["decision"].as_str().unwrap_or("").to_string();
    let reason = reply["reason"].as_str().unwrap_or("").to_string();
    Ok((decision, reason))
}

unsafe extern "C" {
    fn signal(signum: std::ffi::c_int, handler: usize) -> usize;
    #[link_name = "execve"]
    fn sys_execve(
        path: *const std::ffi::c_char,
        argv: *const *const std::ffi::c_char,
        envp: *const *const std::ffi::c_char,
    ) -> std::ffi::c_int;
}

/// execve(2) itself: std's `Command::exec` goes through execvp, whose ENOEXEC fallback
/// would run a script without `#!` with /bin/sh, outside the boundary.
fn execve(program: &OsString, argv: &[OsString]) -> std::io::Error {
    let c = |s: &std::ffi::OsStr| std::ffi::CString::new(s.as_bytes()).ok();
    let Some(path) = c(program) else {
        return std::io::Error::from(std::io::ErrorKind::InvalidInput);
    };
    let args: Option<Vec<_>> = argv.iter().map(|a| c(a)).collect();
    let env: Option<Vec<_>> = std::env::vars_os()
        .map(|(k, v)| {
            let mut kv = k;
            kv.push("=");
            kv.push(v);
            c(&kv)
        })
        .collect();
    let (Some(args), Some(env)) = (args, env) else {
        return std::io::Error::from(std::io::ErrorKind::InvalidInput);
    };
    let mut argp: Vec<*const std::ffi::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    argp.push(std::ptr::null());
    let mut envp: Vec<*const std::ffi::c_char> = env.iter().map(|e| e.as_ptr()).collect();
    envp.push(std::ptr::null());
    // Rust ignores SIGPIPE at start and an ignored signal survives exec: give the
    // program the default back, as std's Command does (else `yes | head` never ends
    // by the signal and prints "Broken pipe").
    const SIGPIPE: std::ffi::c_int = 13;
    const SIG_DFL: usize = 0;
    // SAFETY: restoring a default disposition just before exec.
    unsafe { signal(SIGPIPE, SIG_DFL) };
    // SAFETY: NUL-terminated strings and NULL-terminated arrays that outlive the call.
    unsafe { sys_execve(path.as_ptr(), argp.as_ptr(), envp.as_ptr()) };
    std::io::Error::last_os_error()
}

fn main() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(std::ffi::OsStr::new("--whalebox-gate")) {
        eprintln!("whalebox-gate is run by the gated zsh, not by hand");
        std::process::exit(2);
    }
    let (Some(shell), Some(program)) = (args.next(), args.next()) else {
        deny("(nothing)", "no program given");
    };
    let argv: Vec<OsString> = args.collect();
    let shown = lossy(&program);
    match ask(&shown, &argv) {
        Ok((d, _)) if d == "allow" => {}
        Ok((d, reason)) if d == "deny" || d == "ask" => deny(&shown, &reason),
        Ok((d, _)) => deny(&shown, &format!("unknown decision `{d}`")),
        Err(e) => deny(&shown, &e),
    }
    let err = execve(&program, &argv);
    if err.raw_os_error() == Some(ENOEXEC) {
        // A script without `#!`: zsh would hand it to /bin/sh; the gated zsh in sh
        // emulation runs it instead, so its commands stay gated.
        let sh = if shell.is_empty() {
            OsString::from("/bin/sh")
        } else {
            shell
        };
        let mut sh_argv = vec![OsString::from("sh"), program.clone()];
        sh_argv.extend(argv.iter().skip(1).cloned());
        let err = execve(&sh, &sh_argv);
        eprintln!("whalebox-gate: {shown}: {err}");
        std::process::exit(DENIED);
    }
    eprintln!("zsh: {shown}: {err}");
    let code = if err.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        DENIED
    };
    std::process::exit(code);
}
