//! whalebox-gate: the program the patched zsh execs instead of every external command
//! (`whalebox-gate --whalebox-gate PROGRAM ARGV0 ARGV1 …`). It asks the decision server
//! on `$WHALEBOX_GATE_SOCKET` and, when allowed, execs PROGRAM with the argv and the
//! environment it was given. Anything else (a denial, no server, a bad reply, a
//! timeout) ends with exit 126 and a line on stderr: the gate fails closed.
//!
//! Wire format, both ways: a 4-byte big-endian length, then that many bytes of JSON.
//! Request `{program, argv, cwd, pid}`; reply `{decision, reason}`.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
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

fn main() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(std::ffi::OsStr::new("--whalebox-gate")) {
        eprintln!("whalebox-gate is run by the gated zsh, not by hand");
        std::process::exit(2);
    }
    let Some(program) = args.next() else {
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
    let mut cmd = std::process::Command::new(&program);
    if let Some((argv0, rest)) = argv.split_first() {
        cmd.arg0(argv0).args(rest);
    }
    let err = cmd.exec();
    if err.raw_os_error() == Some(ENOEXEC) {
        // A script without `#!`: run it with /bin/sh, as zsh would.
        let err = std::process::Command::new("/bin/sh")
            .arg0("sh")
            .arg(&program)
            .args(argv.iter().skip(1))
            .exec();
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
