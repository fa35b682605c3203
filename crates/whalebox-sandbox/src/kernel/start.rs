//! Starting a task's first program under the gate, so that no instruction of the
//! task's own runs outside it and a gate that cannot be installed stops the task before
//! anything ran:
//!
//! - notification method: fork; the child installs the filter with a listener, hands
//!   the listener to the supervisor (SCM_RIGHTS on a socket pair) and execs, which is
//!   already a question to the supervisor;
//! - ptrace method: fork; the child stops itself, the supervisor seizes it with the
//!   options that follow every fork, clone and exec, and only then does the child
//!   install the filter and exec.
//!
//! Either way the child first enters a Landlock domain of its own, nested in the
//! supervisor's (where the kernel has Landlock): the kernel then refuses every process
//! of the task ptrace-class access to the supervisor (`/proc/PID/mem`, `pidfd_getfd`,
//! `process_vm_writev`), root or not, so none can take its listener or rewrite it. The
//! supervisor is also not dumpable (see the supervisor), which is enough for other users.

use std::ffi::{CString, OsStr, OsString};
use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use nix::libc;
use nix::sys::ptrace::{self, Options as PtraceOptions};
use nix::sys::signal::{self, SigSet, SigmaskHow, Signal};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid, fork};

use super::filter::{self, Method};
use super::notify::Refusal;
use super::tracee;
use crate::limits::ChildSetup;

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
/// gated zsh the kernel decides its execs (it believes it only under a seccomp filter).
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
pub fn start(program: &OsStr, args: &[OsString], setup: &ChildSetup) -> Result<Root, String> {
    // Every process is traced by the supervisor: none can have a tracer of its own.
    let bpf = filter::gate_filter(Method::Ptrace, false)?;
    let exec = Exec::new(program, args)?;
    let (report_r, report_w) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| format!("pipe: {e}"))?;
    // SAFETY: the supervisor is single-threaded; the child only makes system calls and
    // writes before it execs or exits.
    let pid = match unsafe { fork() } {
        Err(e) => return Err(format!("fork: {e}")),
        Ok(ForkResult::Child) => {
            drop(report_r);
            child_signals();
            if let Err(why) = setup.enter() {
                let _ = nix::unistd::write(&report_w, why.as_bytes());
                // SAFETY: leaving the child without running the parent's destructors.
                unsafe { libc::_exit(126) };
            }
            let _ = signal::raise(Signal::SIGSTOP);
            own_domain();
            if let Err(e) = filter::install_gate(&bpf, Method::Ptrace) {
                let _ = nix::unistd::write(&report_w, e.why.as_bytes());
                // SAFETY: leaving the child without running the parent's destructors.
                unsafe { libc::_exit(126) };
            }
            exec.run()
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
            // One that ended before it stopped says why (its limits could not be set);
            // the pipe is read only then, when no writer is left to block it.
            if let Ok(WaitStatus::Exited(..) | WaitStatus::Signaled(..)) = other {
                let mut why = [0u8; 256];
                let n = nix::unistd::read(&report_r, &mut why).unwrap_or(0);
                if n > 0 {
                    return fail(String::from_utf8_lossy(&why[..n]).into_owned());
                }
            }
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

/// The first program's exec, prepared before `fork` (the child only makes system calls).
struct Exec {
    path: CString,
    argv: Vec<CString>,
    env: Vec<CString>,
    shown: String,
}

impl Exec {
    fn new(program: &OsStr, args: &[OsString]) -> Result<Exec, String> {
        Ok(Exec {
            path: tracee::cstring(program.as_bytes())?,
            argv: std::iter::once(program)
                .chain(args.iter().map(OsString::as_os_str))
                .map(|a| tracee::cstring(a.as_bytes()))
                .collect::<Result<_, _>>()?,
            env: environment(),
            shown: program.to_string_lossy().into_owned(),
        })
    }

    /// In the child: exec, or say why not and exit 127 (not found) or 126.
    fn run(&self) -> ! {
        let mut argp: Vec<*const libc::c_char> = self.argv.iter().map(|a| a.as_ptr()).collect();
        argp.push(std::ptr::null());
        let mut envp: Vec<*const libc::c_char> = self.env.iter().map(|e| e.as_ptr()).collect();
        envp.push(std::ptr::null());
        // SAFETY: NUL-terminated strings and NULL-terminated arrays that outlive the call.
        unsafe { libc::execve(self.path.as_ptr(), argp.as_ptr(), envp.as_ptr()) };
        let err = std::io::Error::last_os_error();
        let code = if err.kind() == std::io::ErrorKind::NotFound {
            127
        } else {
            126
        };
        let line = format!("whalebox: cannot start {}: {err}\n", self.shown);
        let _ = nix::unistd::write(std::io::stderr(), line.as_bytes());
        // SAFETY: leaving the child without running the parent's destructors.
        unsafe { libc::_exit(code) }
    }
}

/// In the child: dumpable again (it inherits the supervisor's "not dumpable", which
/// would keep a supervisor without CAP_SYS_PTRACE from reading its memory, files and
/// from attaching to it; its exec resets the flag anyway), and the signal mask and
/// dispositions a program expects.
fn child_signals() {
    let _ = nix::sys::prctl::set_dumpable(true);
    let _ = signal::sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None);
    // Rust ignores SIGPIPE and an ignored signal survives exec: give the task the
    // default back, as std's Command does (else `yes | head` ends with an error).
    // SAFETY: restoring a default disposition.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// In the child: a Landlock domain nested in the supervisor's, which denies nothing a
/// task does (making block devices) but puts the supervisor out of the task's ptrace
/// reach. Where the kernel has no Landlock this does nothing (best effort): the
/// supervisor being non-dumpable still keeps out every user but root.
///
/// Since ABI 2 every ruleset handles REFER (rename and link across directories) even when
/// it does not say so, and a layer that grants it nowhere makes every such rename fail
/// with EXDEV: so the whole tree is granted REFER here (`cargo build`'s renames into
/// `target/`, `os.replace`, `ln a/b/f a/h`). The other layers still decide where a task
/// may write.
///
/// It also scopes signals (ABI 6): no process of the task can signal the supervisor,
/// whose death would orphan the task's daemons out of every reach (the task's layer
/// scopes signals too, but the supervisor is inside that one).
fn own_domain() {
    use landlock::{
        AccessFs, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
    };
    // Landlock needs no new privileges of an unprivileged process (the filter does too).
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    let with_refer = PathFd::new("/").ok().map(|root| {
        Ruleset::default()
            .handle_access(AccessFs::MakeBlock | AccessFs::Refer)
            .and_then(|r| r.scope(Scope::Signal))
            .and_then(|r| r.create())
            .and_then(|r| r.add_rule(PathBeneath::new(root, AccessFs::Refer)))
            .and_then(|r| r.restrict_self())
    });
    if !matches!(with_refer, Some(Ok(_))) {
        // Never run the task outside a domain of its own: renames across directories
        // then fail, but the supervisor stays out of reach.
        let _ = Ruleset::default()
            .handle_access(AccessFs::MakeBlock)
            .and_then(|r| r.scope(Scope::Signal))
            .and_then(|r| r.create())
            .and_then(|r| r.restrict_self());
    }
}

/// The started root under the notification method, with the filter's listener.
pub struct Notified {
    pub pid: Pid,
    pub listener: OwnedFd,
}

/// Fork and start `program args` under the notification method.
pub fn start_notified(
    program: &OsStr,
    args: &[OsString],
    setup: &ChildSetup,
    debuggers: bool,
) -> Result<Notified, Refusal> {
    use nix::sys::socket::{
        AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags, SockFlag, SockType, recvmsg,
        sendmsg, socketpair,
    };
    let bpf = filter::gate_filter(Method::Notify, debuggers).map_err(Refusal::Failed)?;
    let exec = Exec::new(program, args).map_err(Refusal::Failed)?;
    let (ours, theirs) = socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .map_err(|e| Refusal::Failed(format!("socketpair: {e}")))?;
    // SAFETY: the supervisor is single-threaded; the child only makes system calls and
    // writes before it execs or exits.
    let pid = match unsafe { fork() } {
        Err(e) => return Err(Refusal::Failed(format!("fork: {e}"))),
        Ok(ForkResult::Child) => {
            drop(ours);
            child_signals();
            if let Err(why) = setup.enter() {
                let mut msg = b"S".to_vec();
                msg.extend_from_slice(why.as_bytes());
                let _ = nix::unistd::write(&theirs, &msg);
                // SAFETY: leaving the child without running destructors.
                unsafe { libc::_exit(126) }
            }
            own_domain();
            // The first byte says what follows: L a listener, N no user notification
            // here (the ptrace method may do), E another failure.
            match filter::install_gate(&bpf, Method::Notify) {
                Ok(Some(listener)) => {
                    let fds = [listener.as_raw_fd()];
                    let sent = sendmsg::<()>(
                        theirs.as_raw_fd(),
                        &[IoSlice::new(b"L")],
                        &[ControlMessage::ScmRights(&fds)],
                        MsgFlags::empty(),
                        None,
                    );
                    drop(listener);
                    if sent.is_err() {
                        // SAFETY: leaving the child without running destructors.
                        unsafe { libc::_exit(126) };
                    }
                    drop(theirs);
                    exec.run()
                }
                Ok(None) => unsafe { libc::_exit(126) },
                Err(e) => {
                    let mut msg = if e.no_notify {
                        b"N".to_vec()
                    } else {
                        b"E".to_vec()
                    };
                    msg.extend_from_slice(e.why.as_bytes());
                    let _ = nix::unistd::write(&theirs, &msg);
                    // SAFETY: leaving the child without running destructors.
                    unsafe { libc::_exit(126) }
                }
            }
        }
        Ok(ForkResult::Parent { child }) => child,
    };
    drop(theirs);
    let fail = |why: Refusal| -> Result<Notified, Refusal> {
        let _ = signal::kill(pid, Signal::SIGKILL);
        let _ = waitpid(pid, None);
        Err(why)
    };
    let mut buf = [0u8; 1024];
    let mut space = nix::cmsg_space!([std::os::fd::RawFd; 1]);
    let (bytes, listener) = {
        let mut iov = [IoSliceMut::new(&mut buf)];
        match recvmsg::<()>(
            ours.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        ) {
            Ok(msg) => {
                let fd = msg.cmsgs().ok().and_then(|mut c| {
                    c.find_map(|m| match m {
                        ControlMessageOwned::ScmRights(fds) => fds.first().copied(),
                        _ => None,
                    })
                });
                (msg.bytes, fd)
            }
            Err(e) => return fail(Refusal::Failed(format!("recvmsg: {e}"))),
        }
    };
    match (buf.first(), listener) {
        // SAFETY: SCM_RIGHTS gave us a new descriptor.
        (Some(b'L'), Some(fd)) => Ok(Notified {
            pid,
            listener: unsafe { OwnedFd::from_raw_fd(fd) },
        }),
        (Some(b'N'), _) => fail(Refusal::NoNotify(
            String::from_utf8_lossy(&buf[1..bytes]).into_owned(),
        )),
        (Some(b'S'), _) => fail(Refusal::Failed(
            String::from_utf8_lossy(&buf[1..bytes]).into_owned(),
        )),
        (Some(b'E'), _) => fail(Refusal::Failed(format!(
            "the seccomp filter cannot be installed ({})",
            String::from_utf8_lossy(&buf[1..bytes])
        ))),
        _ => fail(Refusal::Failed(
            "the task's first process ended before it installed the filter".into(),
        )),
    }
}
