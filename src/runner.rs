//! `whalebox run -- CMD ARGS…` and `whalebox shell`: one command, or an interactive
//! zsh, inside the full sandbox (Landlock, the gated zsh and its policy), on the
//! caller's own terminal and standard streams. This is how a CI job runs its build and
//! tests fenced in. The caller must already be inside the server layer
//! ([`Env::enter_sandbox`]); the task layer is added by the supervisor, as for
//! shell_run.

use std::ffi::OsString;
use std::process::Command;

use crate::shell::supervisor;
use crate::tools::{Env, ShellBoundary};

/// What to run inside the sandbox.
pub enum What {
    /// A program and its arguments, exec'd by the gated zsh.
    Command(Vec<OsString>),
    /// An interactive gated zsh.
    Shell,
}

/// Run `what` and return its exit status (128 + N for a signal), or why it could not
/// start. Approvals go to the terminal when there is one, else the profile's `on_ask`.
pub fn run(env: &Env, what: What) -> Result<i32, String> {
    if env.approver.get().is_none()
        && let Some(tty) = crate::boundary::tty::terminal_approver()
    {
        env.approver.set(tty);
    }
    let cfg = &env.profile.shell;
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
    let shell: OsString = match env.shell_boundary() {
        Ok(ShellBoundary::Gated { zsh, vars: gate }) => {
            vars.extend(gate.into_iter().map(|(k, v)| (k.into(), v.into())));
            zsh.into()
        }
        Ok(ShellBoundary::Ungated { why, best_effort }) => {
            if best_effort {
                eprintln!("whalebox: running ungated (exec_boundary = best-effort): {why}");
            }
            plain()?
        }
        Err(why) => {
            return Err(format!(
                "the exec boundary is required, but {why}; build the gated zsh (nix/zsh/build.sh) \
                 or set [shell] exec_boundary = \"best-effort\""
            ));
        }
    };
    let mut shell_args: Vec<OsString> = vec!["-f".into()];
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
    let exe = std::env::current_exe().map_err(|e| format!("cannot find whalebox itself: {e}"))?;
    let mut args: Vec<OsString> = vec![
        supervisor::SUBCOMMAND.into(),
        std::process::id().to_string().into(),
    ];
    if let Some(s) = &env.sandbox {
        args.push(supervisor::SANDBOX_FLAG.into());
        args.push(serde_json::to_string(s).map_err(|e| e.to_string())?.into());
    }
    args.push("--".into());
    args.push(shell.clone());
    args.extend(shell_args);
    // Same process group as us: the command stays the terminal's foreground job.
    let mut child = Command::new(exe)
        .args(args)
        .env_clear()
        .envs(vars)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", shell.to_string_lossy()))?;
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
    Ok(status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}
