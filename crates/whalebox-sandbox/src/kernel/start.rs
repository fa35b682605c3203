//! Starting a task's first program under the gate: fork; the child stops itself, the
//! supervisor seizes it with the options that follow every fork, clone and exec, and
//! only then does the child install the seccomp filter and exec. So no instruction of
//! the task's own runs untraced, and a gate that cannot be installed stops the task
//! before anything ran.

use std::ffi::{CString, OsStr, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use nix::libc;
use nix::sys::ptrace::{self, Options as PtraceOptions};
use nix::sys::signal::{self, SigSet, SigmaskHow, Signal};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid, fork};

use super::{filter, tracee};

/// The started root: its pid, and the pipe its filter error comes on (if it could not
/// install the filter, it exits 126 and says why there).
pub struct Root {
    pub pid: Pid,
    pub report: OwnedFd,
}

/// The ptrace options of every tracee (inherited by auto-attached children).
fn options() -> PtraceOptions {
    PtraceOptions::PTRACE_O_TRACESECCOMP
        | PtraceOptions::PTRACE_O_TRACEEXEC
        | PtraceOptions::PTRACE_O_TRACEFORK
        | PtraceOptions::PTRACE_O_TRACEVFORK
        | PtraceOptions::PTRACE_O_TRACECLONE
        // The tracer's death kills the task: nothing runs on untraced.
        | PtraceOptions::PTRACE_O_EXITKILL
}

/// The environment the root gets: the supervisor's own, plus the mark that tells a
/// gated zsh the kernel decides its execs (it checks that it really is traced).
fn environment() -> Vec<CString> {
    std::env::vars_os()
        .filter(|(k, _)| k != "WHALEBOX_GATE_KERNEL")
        .chain(std::iter::once(("WHALEBOX_GATE_KERNEL".into(), "1".into())))
        .filter_map(|(k, v): (OsString, OsString)| {
            let mut kv = k.into_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            CString::new(kv).ok()
        })
        .collect()
}

/// Fork and start `program args` as a tracee. Signals of the caller's mask are
/// unblocked in the child. The supervisor must be single-threaded.
pub fn start(program: &OsStr, args: &[OsString]) -> Result<Root, String> {
    let bpf = filter::exec_filter()?;
    let env = environment();
    let path = tracee::cstring(program.as_bytes())?;
    let argv: Vec<CString> = std::iter::once(program)
        .chain(args.iter().map(OsString::as_os_str))
        .map(|a| tracee::cstring(a.as_bytes()))
        .collect::<Result<_, _>>()?;
    let (report_r, report_w) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| format!("pipe: {e}"))?;
    // SAFETY: the supervisor is single-threaded; the child only makes system calls and
    // writes before it execs or exits.
    let pid = match unsafe { fork() } {
        Err(e) => return Err(format!("fork: {e}")),
        Ok(ForkResult::Child) => {
            drop(report_r);
            let _ = signal::sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None);
            // Rust ignores SIGPIPE and an ignored signal survives exec: give the task the
            // default back, as std's Command does (else `yes | head` ends with an error).
            // SAFETY: restoring a default disposition.
            unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
            let _ = signal::raise(Signal::SIGSTOP);
            if let Err(e) = filter::install(&bpf) {
                let _ = nix::unistd::write(&report_w, e.as_bytes());
                // SAFETY: leaving the child without running the parent's destructors.
                unsafe { libc::_exit(126) };
            }
            let mut argp: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
            argp.push(std::ptr::null());
            let mut envp: Vec<*const libc::c_char> = env.iter().map(|e| e.as_ptr()).collect();
            envp.push(std::ptr::null());
            // SAFETY: NUL-terminated strings and NULL-terminated arrays that outlive the call.
            unsafe { libc::execve(path.as_ptr(), argp.as_ptr(), envp.as_ptr()) };
            let err = std::io::Error::last_os_error();
            let code = if err.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            let line = format!(
                "whalebox: cannot start {}: {err}\n",
                program.to_string_lossy()
            );
            let _ = nix::unistd::write(std::io::stderr(), line.as_bytes());
            // SAFETY: as above.
            unsafe { libc::_exit(code) };
        }
        Ok(ForkResult::Parent { child }) => child,
    };
    drop(report_w);
    let fail = |why: String| -> Result<Root, String> {
        let _ = signal::kill(pid, Signal::SIGKILL);
        let _ = waitpid(pid, None);
        Err(why)
    };
    match waitpid(pid, Some(WaitPidFlag::WUNTRACED)) {
        Ok(WaitStatus::Stopped(_, Signal::SIGSTOP)) => {}
        other => {
            return fail(format!(
                "the task's first process did not stop as expected: {other:?}"
            ));
        }
    }
    if let Err(e) = ptrace::seize(pid, options()) {
        return fail(format!(
            "ptrace is refused here ({e}): a container's seccomp profile or Yama's \
             ptrace_scope = 3 forbids it"
        ));
    }
    let _ = signal::kill(pid, Signal::SIGCONT);
    Ok(Root {
        pid,
        report: report_r,
    })
}
