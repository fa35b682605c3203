//! The ptrace method of the kernel gate, the fallback where seccomp user notification
//! is missing (gVisor, kernels before 5.0; see `notify` for the fast path): the task's
//! supervisor follows every process and thread of the task (fork, vfork and clone events
//! attach them before they run) and answers two kinds of stop:
//!
//! - **the exec call** (seccomp stop, before the kernel reads anything): the path and
//!   argv are read from the caller's memory and decided. A denial skips the call with
//!   EACCES, so the caller prints its usual "permission denied", and a line from
//!   whalebox naming the rule goes to the caller's stderr. An allow only records what
//!   was allowed: the file's identity and the argv.
//! - **the exec event** (the new image is loaded and has not run a single instruction;
//!   the other threads of the process are gone): the loaded file and argv are read from
//!   /proc, where nothing can change them any more, and compared with what was allowed.
//!   If another thread changed the path or argv between the decision and the kernel's
//!   own read, they differ, and the image is decided afresh as it is; if that is a
//!   denial it is killed before it runs. This check, not the first one, is what the
//!   security rests on; the first is what makes a denial an ordinary error.
//!
//! One decision per exec: the exec event only verifies. A `#!` script's interpreter is
//! decided with the script, in the same question (see `decide`, shared with `notify`).
//!
//! One event loop over ptrace stops: the per-process states it keeps (what was allowed,
//! what each stop waits for, which threads belong to which process) are read and
//! changed together at every stop. The memory reads are in `tracee`, the filter in
//! `filter`, the decisions in `decide`, the server link in `link`.

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::time::Duration;

use nix::errno::Errno;
use nix::libc;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::ptrace::{self, Event};
use nix::sys::signal::{self, SigSet, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use super::decide::{self, Answer, Decider, Expect};
use super::identity::Identities;
use super::start;
use super::tracee;

/// How the gate is run.
pub struct Options {
    /// The decision server's socket.
    pub server: Option<PathBuf>,
    /// The decision server's pid: whoever answers on the socket must be that process
    /// (`SO_PEERCRED`), so a relay put in its place is never believed.
    pub server_pid: Option<i32>,
    /// How long an exec may wait for its answer (an `ask` waits for a person).
    pub timeout: Duration,
    /// What the task's first process does before it installs the gate: join its
    /// cgroup, set its rlimits (see `crate::limits`).
    pub setup: crate::limits::ChildSetup,
    /// The task's programs may trace each other (notification method only): see
    /// `filter` and `notify` for what is traded.
    pub debuggers: bool,
    /// The programs the policy does not simply allow, by content (see `identity`).
    pub known: Vec<super::identity::Known>,
    /// A connection to the decision server made ahead ([`super::connect_ahead`]): used
    /// instead of `server` and `server_pid`.
    pub ahead: Option<std::os::unix::net::UnixStream>,
}

/// How the task's first program ended.
pub enum End {
    Exited(i32),
    Signaled(Signal),
    /// The server went away (parent-death signal): kill everything.
    Hangup,
}

/// One traced thread.
#[derive(Debug, Clone, Default)]
struct Proc {
    /// The programs that led to this one, from the task's first program down.
    ancestors: Vec<String>,
    /// The program this process runs (basename).
    program: String,
    /// Has exec'd since it was forked (its program is its own, not its parent's).
    execd: bool,
    expect: Option<Expect>,
    /// The exec the server last refused this process (file, argv) and why: a shell's
    /// PATH search retries the same file through another directory (`/bin/touch` after
    /// `/usr/bin/touch`), which must not ask the person again or list a second denial.
    refused: Option<(tracee::FileId, Vec<Vec<u8>>, String)>,
}

impl Proc {
    fn chain(&self) -> Vec<String> {
        let mut c = self.ancestors.clone();
        if !self.program.is_empty() {
            c.push(self.program.clone());
        }
        c
    }

    fn became(&mut self, label: String) {
        if !self.execd && !self.program.is_empty() {
            self.ancestors.push(std::mem::take(&mut self.program));
        }
        self.program = label;
        self.execd = true;
        self.refused = None;
    }
}

/// A tracee stopped until the server answers.
enum Waiting {
    /// In its exec call: a denial fails the call.
    Call {
        pid: Pid,
        expect: Expect,
        shown: String,
    },
    /// With an image loaded that nobody decided: a denial kills it.
    Loaded {
        pid: Pid,
        label: String,
        shown: String,
    },
}

/// The signals the event loop reads (tracee stops, the parent-death signal) as a
/// descriptor, blocked for the process.
pub(super) fn signal_fd() -> Result<SignalFd, String> {
    let mut mask = SigSet::empty();
    mask.add(Signal::SIGCHLD);
    mask.add(Signal::SIGHUP);
    signal::sigprocmask(SigmaskHow::SIG_BLOCK, Some(&mask), None)
        .map_err(|e| format!("sigprocmask: {e}"))?;
    SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
        .map_err(|e| format!("signalfd: {e}"))
}

/// Drain the signal descriptor; true when the parent-death signal came.
pub(super) fn hung_up_by(signals: &SignalFd) -> bool {
    while let Ok(Some(info)) = signals.read_signal() {
        if info.ssi_signo == Signal::SIGHUP as u32 {
            return true;
        }
    }
    false
}

struct Tracer {
    root: Pid,
    root_started: bool,
    procs: HashMap<Pid, Proc>,
    /// New tracees whose parent's fork event has not been seen yet.
    held: HashSet<Pid>,
    decider: Decider<Waiting>,
}

/// Start `program args` as the traced root of a task and serve its execs until it ends.
/// Err: the gate could not be installed (nothing ran). `hung_up` says whether the
/// parent-death signal already came.
pub fn run(
    program: &OsStr,
    args: &[OsString],
    options: &Options,
    hung_up: &dyn Fn() -> bool,
) -> Result<End, String> {
    let signals = signal_fd()?;
    let root = start::start(program, args, &options.setup)?;
    let mut tracer = Tracer {
        root: root.pid,
        root_started: false,
        procs: HashMap::from([(
            root.pid,
            Proc {
                execd: true,
                ..Proc::default()
            },
        )]),
        held: HashSet::new(),
        decider: Decider::new(
            options.server.clone(),
            options.server_pid,
            options.timeout,
            Identities::new(options.known.clone()),
        )
        .connected_ahead(options.ahead.as_ref().and_then(|s| s.try_clone().ok())),
    };
    let end = tracer.serve(&signals, hung_up);
    tracer.decider.flush(Duration::from_secs(2));
    if !tracer.root_started
        && let Ok(End::Exited(126)) = end
    {
        let mut why = [0u8; 512];
        let n = nix::unistd::read(&root.report, &mut why).unwrap_or(0);
        if n > 0 {
            return Err(format!(
                "the seccomp filter cannot be installed ({})",
                String::from_utf8_lossy(&why[..n])
            ));
        }
    }
    end
}

impl Tracer {
    fn serve(&mut self, signals: &SignalFd, hung_up: &dyn Fn() -> bool) -> Result<End, String> {
        loop {
            if hung_up() {
                return Ok(End::Hangup);
            }
            if let Some(end) = self.reap() {
                return Ok(end);
            }
            for answer in self.decider.tick() {
                self.answered(answer);
            }
            let (signalled, answered) = {
                let mut fds = vec![PollFd::new(signals.as_fd(), PollFlags::POLLIN)];
                if let Some(fd) = self.decider.server_fd() {
                    fds.push(PollFd::new(fd, PollFlags::POLLIN));
                }
                match poll(&mut fds, PollTimeout::from(self.decider.poll_timeout())) {
                    Ok(_) | Err(Errno::EINTR) => {}
                    Err(e) => return Err(format!("poll: {e}")),
                }
                let hit = |f: &PollFd| f.revents().is_some_and(|r| !r.is_empty());
                (hit(&fds[0]), fds.get(1).is_some_and(hit))
            };
            if signalled && hung_up_by(signals) {
                return Ok(End::Hangup);
            }
            if answered {
                for answer in self.decider.answers() {
                    self.answered(answer);
                }
            }
        }
    }
    /// Handle every stop and exit there is; Some when the root ended.
    fn reap(&mut self) -> Option<End> {
        loop {
            let status = match waitpid(None, Some(WaitPidFlag::WNOHANG | WaitPidFlag::__WALL)) {
                Ok(WaitStatus::StillAlive) | Err(_) => return None,
                Ok(s) => s,
            };
            match status {
                WaitStatus::PtraceEvent(pid, _, ev) if ev == Event::PTRACE_EVENT_SECCOMP as i32 => {
                    self.exec_call(pid)
                }
                WaitStatus::PtraceEvent(pid, _, ev) if ev == Event::PTRACE_EVENT_EXEC as i32 => {
                    self.exec_loaded(pid)
                }
                WaitStatus::PtraceEvent(pid, _, ev)
                    if ev == Event::PTRACE_EVENT_FORK as i32
                        || ev == Event::PTRACE_EVENT_VFORK as i32
                        || ev == Event::PTRACE_EVENT_CLONE as i32 =>
                {
                    self.forked(pid, ev == Event::PTRACE_EVENT_CLONE as i32)
                }
                WaitStatus::PtraceEvent(pid, sig, ev) if ev == Event::PTRACE_EVENT_STOP as i32 => {
                    if matches!(
                        sig,
                        Signal::SIGSTOP | Signal::SIGTSTP | Signal::SIGTTIN | Signal::SIGTTOU
                    ) {
                        // A group-stop: stay stopped, but let SIGCONT and events through.
                        // SAFETY: PTRACE_LISTEN takes no pointers.
                        unsafe {
                            libc::ptrace(libc::PTRACE_LISTEN, pid.as_raw(), 0, 0);
                        }
                    } else if self.procs.contains_key(&pid) {
                        let _ = ptrace::cont(pid, None);
                    } else {
                        // A new tracee, before its parent's fork event: hold it until we
                        // know where it comes from.
                        self.held.insert(pid);
                    }
                }
                WaitStatus::PtraceEvent(pid, _, _) => {
                    let _ = ptrace::cont(pid, None);
                }
                // A signal on its way to a tracee: let it through.
                WaitStatus::Stopped(pid, sig) => {
                    let _ = ptrace::cont(pid, sig);
                }
                WaitStatus::Exited(pid, code) => {
                    self.gone(pid);
                    if pid == self.root {
                        return Some(End::Exited(code));
                    }
                }
                WaitStatus::Signaled(pid, sig, _) => {
                    self.gone(pid);
                    if pid == self.root {
                        return Some(End::Signaled(sig));
                    }
                }
                _ => {}
            }
        }
    }

    fn gone(&mut self, pid: Pid) {
        self.procs.remove(&pid);
        self.held.remove(&pid);
    }

    fn forked(&mut self, parent: Pid, thread_like: bool) {
        if let Ok(new) = ptrace::getevent(parent) {
            let child = Pid::from_raw(new as i32);
            let mut entry = self.procs.get(&parent).cloned().unwrap_or_default();
            entry.expect = None;
            // A thread runs its process's program; a forked child runs its parent's
            // until it execs its own.
            entry.execd = thread_like && entry.execd;
            self.procs.insert(child, entry);
            if self.held.remove(&child) {
                let _ = ptrace::cont(child, None);
            }
        }
        let _ = ptrace::cont(parent, None);
    }

    /// A seccomp stop: an exec about to happen.
    fn exec_call(&mut self, pid: Pid) {
        let call = match tracee::exec_call(pid) {
            Ok(c) => c,
            Err(e) => {
                self.refuse(
                    pid,
                    &format!("an exec whalebox cannot read ({e})"),
                    "(unreadable)",
                );
                return;
            }
        };
        let Ok(plan) = decide::plan(pid, &call, self.decider.known()) else {
            // Missing or not executable: the kernel fails it on its own (PATH search);
            // should a thread make it succeed, the exec event decides the image.
            if let Some(p) = self.procs.get_mut(&pid) {
                p.expect = None;
            }
            let _ = ptrace::cont(pid, None);
            return;
        };
        let again = self
            .procs
            .get(&pid)
            .and_then(|p| p.refused.as_ref())
            .and_then(|(file, argv, reason)| {
                (*file == plan.expect.file && *argv == plan.expect.argv).then(|| reason.clone())
            });
        if let Some(reason) = again {
            self.refuse(pid, &reason, &plan.shown);
            return;
        }
        if pid == self.root && !self.root_started {
            // The task's own program, chosen (and for `run`, decided) by whalebox.
            self.allow_call(pid, plan.expect);
            return;
        }
        let chain = self.procs.get(&pid).map(Proc::chain).unwrap_or_default();
        let request = plan.request(pid, chain);
        let waiting = Waiting::Call {
            pid,
            expect: plan.expect.clone(),
            shown: plan.shown.clone(),
        };
        match self.decider.decide(request, waiting) {
            Ok(true) => self.allow_call(pid, plan.expect),
            Ok(false) => {}
            Err(why) => self.refuse(pid, &why, &plan.shown),
        }
    }

    fn allow_call(&mut self, pid: Pid, expect: Expect) {
        if let Some(p) = self.procs.get_mut(&pid) {
            p.expect = Some(expect);
        }
        let _ = ptrace::cont(pid, None);
    }

    /// Skip the exec call with EACCES and say why on the caller's stderr.
    fn refuse(&mut self, pid: Pid, reason: &str, shown: &str) {
        if let Some(p) = self.procs.get_mut(&pid) {
            p.expect = None;
        }
        if tracee::fail_call(pid, libc::EACCES).is_err() {
            // The call cannot be skipped: the process must not go on into it.
            let _ = signal::kill(pid, Signal::SIGKILL);
            return;
        }
        tracee::tell(pid, &format!("whalebox: denied {shown}: {reason}"));
        let _ = ptrace::cont(pid, None);
    }

    /// An exec event: the new image is loaded and has not run.
    fn exec_loaded(&mut self, pid: Pid) {
        // A thread other than the leader that execs takes over the leader's pid.
        let former = ptrace::getevent(pid)
            .map(|t| Pid::from_raw(t as i32))
            .unwrap_or(pid);
        let mut entry = self
            .procs
            .remove(&former)
            .or_else(|| self.procs.get(&pid).cloned())
            .unwrap_or_default();
        let loaded = tracee::loaded(pid);
        if let Some(e) = entry.expect.take().filter(|e| e.matches(&loaded)) {
            if pid == self.root {
                self.root_started = true;
            }
            entry.became(e.label);
            self.procs.insert(pid, entry);
            let _ = ptrace::cont(pid, None);
            return;
        }
        // Not what was decided (a thread changed the path or argv after the check, or
        // an exec the filter did not stop): decide the image as it is.
        self.procs.insert(pid, entry);
        let shown = tracee::exe(pid);
        let label = decide::basename(&shown);
        let chain = self.procs.get(&pid).map(Proc::chain).unwrap_or_default();
        let request = decide::request(pid, &shown, &loaded.argv, "loaded", chain);
        let waiting = Waiting::Loaded {
            pid,
            label: label.clone(),
            shown: shown.clone(),
        };
        match self.decider.decide(request, waiting) {
            Ok(true) => self.run_loaded(pid, label),
            Ok(false) => {}
            Err(why) => self.kill_loaded(pid, &shown, &why),
        }
    }

    fn run_loaded(&mut self, pid: Pid, label: String) {
        if let Some(p) = self.procs.get_mut(&pid) {
            p.became(label);
        }
        let _ = ptrace::cont(pid, None);
    }

    fn kill_loaded(&mut self, pid: Pid, shown: &str, reason: &str) {
        tracee::kill_before_run(pid, shown, reason);
        let _ = ptrace::cont(pid, None);
    }

    fn answered(&mut self, answer: Answer<Waiting>) {
        let Answer {
            waiting,
            allowed,
            reason,
        } = answer;
        match waiting {
            Waiting::Call { pid, expect, .. } if allowed => self.allow_call(pid, expect),
            Waiting::Call { pid, shown, expect } => {
                if let Some(p) = self.procs.get_mut(&pid) {
                    p.refused = Some((expect.file, expect.argv, reason.clone()));
                }
                self.refuse(pid, &reason, &shown)
            }
            Waiting::Loaded { pid, label, .. } if allowed => self.run_loaded(pid, label),
            Waiting::Loaded { pid, shown, .. } => self.kill_loaded(pid, &shown, &reason),
        }
    }
}
