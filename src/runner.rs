//! `whalebox run -- CMD ARGS…` and `whalebox shell`: one command, or an interactive
//! zsh, inside the full sandbox (Landlock, the gated zsh and its policy), on the
//! caller's own terminal and standard streams. This is how a CI job runs its build and
//! tests fenced in. The caller must already be inside the server layer
//! ([`Env::enter_sandbox`]); the task layer is added by the supervisor, as for
//! shell_run.
//!
//! `run` passes stdin and stdout through untouched (full-screen programs keep their
//! terminal) but, when Landlock is in force, reads the command's stderr through a pipe:
//! each chunk goes straight on to whalebox's own stderr, and the last [`TAIL_BYTES`]
//! are kept, so that after a failing command whalebox can name the paths the sandbox
//! refused and the preset or profile key that would allow each.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use crate::session::{Env, ShellBoundary};
use crate::shell::supervisor;

/// What to run inside the sandbox.
pub enum What {
    /// A program and its arguments, exec'd by the gated zsh.
    Command(Vec<OsString>),
    /// An interactive gated zsh.
    Shell,
}

/// The label `whalebox run`'s one command has in the network fence's records.
const RUN_TASK: &str = "run";

/// Run `what` and return its exit status (128 + N for a signal), or why it could not
/// start. Approvals go to the terminal when there is one, else the profile's `on_ask`.
pub fn run(env: &Env, what: What) -> Result<i32, String> {
    if env.approver.get().is_none()
        && let Some(tty) = crate::boundary::tty::terminal_approver()
    {
        env.approver.set(tty);
    }
    let cfg = &env.profile.shell;
    // Only a fence in force can have refused something worth reporting.
    let report = matches!(what, What::Command(_)) && env.sandbox.is_some() && env.in_sandbox();
    let mut vars: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| !k.to_string_lossy().starts_with("WHALEBOX_GATE"))
        .filter(|(k, _)| k != "TMPDIR")
        .collect();
    vars.push(("TMPDIR".into(), env.private.tmp.clone().into()));
    let plain = || -> Result<OsString, String> {
        crate::shell::spawn::find_shell(cfg.program.as_deref())
            .map(OsString::from)
            .ok_or_else(|| "no shell found (zsh, bash or sh in PATH, or [shell] program)".into())
    };
    let mut exec_gate = None;
    let shell: OsString = match env.shell_boundary() {
        Ok(ShellBoundary::Gated {
            zsh,
            vars: gate,
            kernel,
            note,
            ..
        }) => {
            vars.extend(gate.into_iter().map(|(k, v)| (k.into(), v.into())));
            exec_gate = kernel;
            if let Some(note) = note {
                eprintln!("whalebox: {note}");
            }
            match zsh {
                Some(zsh) => zsh.into(),
                None => plain()?,
            }
        }
        Ok(ShellBoundary::Ungated { why, best_effort }) => {
            if best_effort {
                eprintln!("whalebox: running ungated (exec_boundary = best-effort): {why}");
            }
            plain()?
        }
        Err(why) => {
            return Err(format!(
                "the exec boundary is required, but {why}; see `whalebox doctor`, \
                 or set [shell] exec_boundary = \"best-effort\""
            ));
        }
    };
    let mut shell_args: Vec<OsString> = vec!["-f".into()];
    // The program as PATH finds it: a shell that may not execute it names only the
    // bare name ("zsh:1: permission denied: cargo").
    let program = match &what {
        What::Command(argv) => argv.first().and_then(in_path),
        What::Shell => None,
    };
    match what {
        What::Command(argv) => {
            // `"$@"` as the shell's last command: zsh execs it (through the gate) in
            // place, so the exit status is the program's own.
            shell_args.extend(["-c".into(), "\"$@\"".into(), "whalebox-run".into()]);
            shell_args.extend(argv);
        }
        What::Shell => {
            shell_args.push("-i".into());
            vars.push(("PS1".into(), "[whalebox] %~ %# ".into()));
        }
    }
    // The egress proxy serves on this runtime's threads while we wait for the command.
    let runtime = tokio::runtime::Runtime::new()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let _in_runtime = runtime.enter();
    let network = env
        .task_network("whalebox run")
        .map_err(|e| format!("{}; {}", e.message, e.next_step))?;
    if let Some((_, net)) = &network {
        vars.retain(|(k, _)| !net.env.iter().any(|(n, _)| k.to_str() == Some(n.as_str())));
        vars.extend(net.env.iter().map(|(k, v)| (k.into(), v.into())));
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find whalebox itself: {e}"))?;
    let mut args: Vec<OsString> = vec![
        supervisor::SUBCOMMAND.into(),
        std::process::id().to_string().into(),
    ];
    if let Some(s) = env
        .task_sandbox(network.as_ref().map(|(_, n)| n))
        .map_err(|e| e.message.clone())?
    {
        args.push(supervisor::SANDBOX_FLAG.into());
        args.push(s.into());
    }
    if let Some(gate) = &exec_gate {
        args.extend(gate.args());
    }
    if let Some(join) = env.task_join() {
        args.push(supervisor::JOIN_FLAG.into());
        args.push(join.into());
    }
    if env.profile.shell.user_namespaces.allowed() {
        args.push(supervisor::USER_NAMESPACES_FLAG.into());
        args.push("1".into());
    }
    if let Some((_, net)) = &network {
        if net.landlock_fence {
            args.push(supervisor::SOCKET_FILTER_FLAG.into());
            args.push("1".into());
        }
        for note in &net.notes {
            eprintln!("whalebox: {note}");
        }
    }
    args.push("--".into());
    args.push(shell.clone());
    args.extend(shell_args);
    // Same process group as us: the command stays the terminal's foreground job.
    let mut command = Command::new(exe);
    command.args(args).env_clear().envs(vars);
    if report {
        command.stderr(Stdio::piped());
    }
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", shell.to_string_lossy()))?;
    if let Some((fence, net)) = &network {
        fence.started(net.token(), Some((RUN_TASK, child.id() as i32)));
    }
    let tee = child.stderr.take().map(Tee::start);
    // Ctrl-C and Ctrl-\ are for the command; we wait for it like system(3) does.
    // SAFETY: ignoring signals; no handler runs.
    unsafe {
        use nix::sys::signal::{SigHandler, Signal, signal};
        let _ = signal(Signal::SIGINT, SigHandler::SigIgn);
        let _ = signal(Signal::SIGQUIT, SigHandler::SigIgn);
    }
    let status = child
        .wait()
        .map_err(|e| format!("cannot wait for the command: {e}"))?;
    use std::os::unix::process::ExitStatusExt;
    let code = status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    // The supervisor kills what the command left behind, so the pipe closes as it
    // exits; the wait is bounded all the same (a stray holder of the write end).
    let tail = tee.map(|t| t.finish(Duration::from_secs(2)));
    if let Some((fence, _)) = &network {
        runtime.block_on(fence.ended(RUN_TASK, Duration::from_millis(500)));
        for line in fence.report(RUN_TASK).1 {
            eprintln!("whalebox: {line}");
        }
    }
    if code != 0
        && let (Some(tail), Some(sandbox)) = (tail, &env.sandbox)
    {
        let mut tail = tail;
        if let Some((name, path)) = &program
            && tail
                .to_ascii_lowercase()
                .contains(&format!("permission denied: {}", name.to_ascii_lowercase()))
        {
            tail.push_str(&format!("\n{}: Permission denied\n", path.display()));
        }
        for line in refused(sandbox, &tail) {
            eprintln!("{line}");
        }
    }
    Ok(code)
}

/// A bare program name and where PATH finds it (`None` for a path, or not found).
fn in_path(program: &OsString) -> Option<(String, std::path::PathBuf)> {
    let name = program.to_str()?;
    if name.contains('/') || name.is_empty() {
        return None;
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
        .map(|p| (name.to_string(), p))
}

/// How much of a command's stderr is kept for the report.
pub const TAIL_BYTES: usize = 64 * 1024;
/// At most this many refused paths are reported (the most recent).
const MAX_REPORTED: usize = 10;

/// The report lines for the paths the sandbox refused, as named in `stderr`:
/// `whalebox: the sandbox refused PATH: it is in preset "rust" …; add …`.
pub fn refused(sandbox: &crate::guard::landlock::Sandbox, stderr: &str) -> Vec<String> {
    let paths = crate::shell::diagnose::denied_paths(stderr);
    let lines: Vec<String> = paths
        .iter()
        .filter_map(|p| {
            // The kernel judges the file a symlink leads to, not the link.
            let path = std::path::Path::new(p);
            match path.canonicalize().ok().filter(|real| real != path) {
                Some(real) => {
                    let why = sandbox.refusal(&real)?;
                    Some(format!(
                        "whalebox: the sandbox refused {p} (that is {}): {why}",
                        real.display()
                    ))
                }
                None => {
                    let why = sandbox.refusal(path)?;
                    Some(format!("whalebox: the sandbox refused {p}: {why}"))
                }
            }
        })
        .collect();
    let skip = lines.len().saturating_sub(MAX_REPORTED);
    lines.into_iter().skip(skip).collect()
}

/// A command's stderr, copied to ours as it comes, its end kept.
struct Tee {
    tail: Arc<Mutex<Vec<u8>>>,
    done: mpsc::Receiver<()>,
}

impl Tee {
    fn start(mut from: std::process::ChildStderr) -> Tee {
        let tail = Arc::new(Mutex::new(Vec::new()));
        let (tx, done) = mpsc::channel();
        let keep = tail.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                match from.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        // Our stderr going away must not stall the command: keep reading.
                        let mut err = std::io::stderr().lock();
                        let _ = err.write_all(&buf[..n]).and_then(|()| err.flush());
                        drop(err);
                        let mut t = keep.lock().unwrap_or_else(|e| e.into_inner());
                        t.extend_from_slice(&buf[..n]);
                        if t.len() > 2 * TAIL_BYTES {
                            let cut = t.len() - TAIL_BYTES;
                            t.drain(..cut);
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = tx.send(());
        });
        Tee { tail, done }
    }

    /// The kept end as text, once the pipe closed or `wait` passed.
    fn finish(self, wait: Duration) -> String {
        let _ = self.done.recv_timeout(wait);
        let t = self.tail.lock().unwrap_or_else(|e| e.into_inner());
        let start = t.len().saturating_sub(TAIL_BYTES);
        String::from_utf8_lossy(&t[start..]).into_owned()
    }
}
