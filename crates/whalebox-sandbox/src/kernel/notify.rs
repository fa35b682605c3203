//! The user-notification method of the kernel gate, the fast path: the task's filter
//! returns `SECCOMP_RET_USER_NOTIF` for every `execve` and `execveat`, so the caller
//! waits in the kernel while the supervisor, holding the listener, decides. Nothing is
//! traced between execs: a fork costs what it costs without the gate.
//!
//! - **Decide.** The path and argv are read from the caller's memory, the file it names
//!   is looked at (a `#!` interpreter is decided with its script), and the exec is
//!   settled with the server's policy or put to the server (see `decide`). A denial
//!   answers the call with EACCES (after a `whalebox: denied …` line on the caller's
//!   stderr); a call that names no executable file is answered with the errno the kernel
//!   would give, so a shell's PATH search costs no more.
//! - **Verify.** A notification alone cannot stop another thread, or another process
//!   writing this one's memory, from changing the path between the read and the
//!   kernel's own. So before an allowed call goes on, the supervisor attaches to the
//!   caller (`PTRACE_SEIZE` with `PTRACE_O_TRACEEXEC`: the supervisor is the task's
//!   ancestor and subreaper), answers CONTINUE, and asks for a stop (`PTRACE_INTERRUPT`).
//!   If the exec succeeds, its exec event comes first: the image is loaded and has not
//!   run, the other threads are gone, and `/proc/PID/exe` and `/proc/PID/cmdline` are
//!   compared with what was allowed; a difference is decided afresh as it is, and a
//!   denial kills the process before it runs. If the exec fails (or is restarted), the
//!   interrupt stops it on its way back instead. Either way the supervisor detaches at
//!   that stop. Seizing can fail (another tracer, a non-dumpable process without the
//!   capability): the exec is then denied, fail closed; but where the profile lets the
//!   task's programs trace each other (`[shell] debuggers = true`) and the caller's
//!   tracer is one of them (`strace ./prog`, `gdb ./prog`), it goes on decided on what
//!   was read, unverified: that is the trade (a tracer, or any writer of the caller's
//!   memory, can change the program between the decision and the exec).
//! - **Chains.** Without fork events, a process's chain of programs comes from its
//!   parent's: the nearest ancestor (by `/proc/PID/stat`) whose exec the gate saw. A
//!   process orphaned before it exec'd (its parent gone, the supervisor its parent) is
//!   below the task's first program, and its chain says so.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::time::Duration;

use nix::errno::Errno;
use nix::libc;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::ptrace::{self, Event, Options as PtraceOptions};
use nix::sys::signal::{self, Signal};
use nix::sys::signalfd::SignalFd;
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use super::decide::{self, Answer, Decider, Expect};
use super::identity::Identities;
use super::start;
use super::tracee::{self, FileId};
use super::tracer::{End, Options, hung_up_by, signal_fd};

/// Why the notification method did not run the task.
pub enum Refusal {
    /// User notification is missing here: the ptrace method may still work.
    NoNotify(String),
    /// The gate cannot be installed (nothing of the task ran).
    Failed(String),
}

/// A caller held in its exec call until the server answers.
enum Held {
    Call {
        notif: u64,
        tid: Pid,
        tgid: Pid,
        after: Known,
        expect: Expect,
        shown: String,
    },
    /// A process stopped at its exec event with an image nobody decided.
    Loaded {
        pid: Pid,
        after: Known,
        shown: String,
    },
}

/// An exec allowed and let go on: the caller is attached until its exec event (or the
/// stop that says the exec did not happen).
struct Verify {
    expect: Expect,
    /// The process as it will be known once the exec happened.
    after: Known,
}

/// A process whose exec the gate saw: its chain, and its last refusal.
#[derive(Debug, Clone)]
struct Known {
    /// Its start time (`/proc/PID/stat`), which tells a reused pid from it.
    start: u64,
    ancestors: Vec<String>,
    program: String,
    /// Whether `program` is its own (it exec'd), not its parent's (forked, and only
    /// known for a refusal).
    execd: bool,
    /// The exec the server last refused it (file, argv) and why: a shell's PATH search
    /// retries the same file through another directory, which must not ask again.
    refused: Option<(FileId, Vec<Vec<u8>>, String)>,
}

impl Known {
    fn chain(&self) -> Vec<String> {
        let mut c = self.ancestors.clone();
        if !self.program.is_empty() {
            c.push(self.program.clone());
        }
        c
    }
}

/// `/proc/PID/stat`'s parent, thread count and start time.
struct Stat {
    ppid: i32,
    threads: i64,
    start: u64,
}

fn stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // After the name: state(3) ppid(4) … num_threads(20) … starttime(22).
    Some(Stat {
        ppid: fields.get(1)?.parse().ok()?,
        threads: fields.get(17)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

fn tgid_of(tid: Pid) -> Option<Pid> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
        .map(Pid::from_raw)
}

/// The chains of the processes whose execs the gate saw.
struct Lineage {
    root: Pid,
    supervisor: i32,
    known: HashMap<Pid, Known>,
}

/// Who makes an exec: its process, and what it will be known as if the exec happens.
struct Caller {
    tgid: Pid,
    chain: Vec<String>,
    after: Known,
    refused: Option<(FileId, Vec<Vec<u8>>, String)>,
}

impl Lineage {
    fn valid(&self, pid: Pid, start: u64) -> Option<&Known> {
        self.known.get(&pid).filter(|k| k.start == start)
    }

    /// The process `tid` belongs to and its chain, about to exec `label`.
    fn caller(&self, tid: Pid, label: &str) -> Option<Caller> {
        let first = stat(tid.as_raw())?;
        let (tgid, me) = if first.threads > 1 {
            let tgid = tgid_of(tid)?;
            (tgid, stat(tgid.as_raw())?)
        } else {
            (tid, first)
        };
        let after = |ancestors: Vec<String>| Known {
            start: me.start,
            ancestors,
            program: label.to_string(),
            execd: true,
            refused: None,
        };
        if let Some(known) = self.valid(tgid, me.start) {
            // An exec'd program's next exec takes its place in the chain; a forked
            // child's first goes below its parent's.
            let ancestors = if known.execd {
                known.ancestors.clone()
            } else {
                known.chain()
            };
            return Some(Caller {
                tgid,
                chain: known.chain(),
                after: after(ancestors),
                refused: known.refused.clone(),
            });
        }
        // A forked child: its parent's chain, from the nearest ancestor the gate saw.
        let mut parent = me.ppid;
        let mut chain = Vec::new();
        for _ in 0..64 {
            if parent == self.supervisor || parent <= 1 {
                // Orphaned before its exec: still below the task's first program.
                if tgid != self.root {
                    chain = self
                        .known
                        .get(&self.root)
                        .map(Known::chain)
                        .unwrap_or_default();
                }
                break;
            }
            let Some(p) = stat(parent) else { break };
            if let Some(known) = self.valid(Pid::from_raw(parent), p.start) {
                chain = known.chain();
                break;
            }
            parent = p.ppid;
        }
        Some(Caller {
            tgid,
            after: after(chain.clone()),
            chain,
            refused: None,
        })
    }

    fn insert(&mut self, pid: Pid, known: Known) {
        if self.known.len() >= 4096 {
            // Forget the processes that are gone (or whose pid was reused).
            self.known
                .retain(|p, k| stat(p.as_raw()).is_some_and(|s| s.start == k.start));
        }
        self.known.insert(pid, known);
    }
}

struct Gate {
    root: Pid,
    root_started: bool,
    listener: OwnedFd,
    listening: bool,
    lineage: Lineage,
    /// Callers let go on with an allow, attached until their exec event, by thread id.
    attached: HashMap<Pid, Verify>,
    decider: Decider<Held>,
    /// Why the task's first exec could not be verified (ptrace refused here).
    refused_start: Option<String>,
    /// The task's programs may trace each other: an exec by one traced by another goes
    /// on unverified.
    debuggers: bool,
}

/// Start `program args` as the root of a task under the notification method and serve
/// its execs until it ends.
pub fn run(
    program: &OsStr,
    args: &[OsString],
    options: &Options,
    hung_up: &dyn Fn() -> bool,
) -> Result<End, Refusal> {
    let signals = signal_fd().map_err(Refusal::Failed)?;
    let root = start::start_notified(program, args, &options.setup, options.debuggers)?;
    let mut gate = Gate {
        root: root.pid,
        root_started: false,
        listener: root.listener,
        listening: true,
        lineage: Lineage {
            root: root.pid,
            supervisor: std::process::id() as i32,
            known: HashMap::new(),
        },
        attached: HashMap::new(),
        decider: Decider::new(
            options.server.clone(),
            options.server_pid,
            options.timeout,
            Identities::new(options.known.clone()),
        )
        .connected_ahead(options.ahead.as_ref().and_then(|s| s.try_clone().ok())),
        refused_start: None,
        debuggers: options.debuggers,
    };
    let end = gate.serve(&signals, hung_up);
    gate.decider.flush(Duration::from_secs(2));
    if let Some(why) = gate.refused_start {
        return Err(Refusal::Failed(why));
    }
    end.map_err(Refusal::Failed)
}

/// `struct seccomp_notif_resp` for one notification.
fn respond(listener: &OwnedFd, id: u64, error: i32, flags: u32) -> Result<(), Errno> {
    let mut resp = libc::seccomp_notif_resp {
        id,
        val: 0,
        error: -error,
        flags,
    };
    // SAFETY: an ioctl on our listener with a response that outlives the call.
    let r = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SEND as _,
            &mut resp as *mut libc::seccomp_notif_resp,
        )
    };
    if r < 0 { Err(Errno::last()) } else { Ok(()) }
}

/// Whether notification `id` is still waiting (its caller has not gone, nor its pid
/// been reused): checked after reading the caller's memory.
fn still_waiting(listener: &OwnedFd, id: u64) -> bool {
    let mut id = id;
    // SAFETY: an ioctl on our listener with a u64 that outlives the call.
    unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID as _,
            &mut id as *mut u64,
        ) == 0
    }
}

impl Gate {
    fn serve(&mut self, signals: &SignalFd, hung_up: &dyn Fn() -> bool) -> Result<End, String> {
        loop {
            if hung_up() {
                return Ok(End::Hangup);
            }
            if let Some(end) = self.reap() {
                return Ok(end);
            }
            if self.refused_start.is_some() {
                let _ = signal::kill(self.root, Signal::SIGKILL);
            }
            for answer in self.decider.tick() {
                self.answered(answer);
            }
            let (signalled, notified, answered) = {
                let mut fds = vec![PollFd::new(signals.as_fd(), PollFlags::POLLIN)];
                if self.listening {
                    fds.push(PollFd::new(self.listener.as_fd(), PollFlags::POLLIN));
                }
                let server = self.decider.server_fd();
                if let Some(fd) = server {
                    fds.push(PollFd::new(fd, PollFlags::POLLIN));
                }
                match poll(&mut fds, PollTimeout::from(self.decider.poll_timeout())) {
                    Ok(_) | Err(Errno::EINTR) => {}
                    Err(e) => return Err(format!("poll: {e}")),
                }
                let events = |f: &PollFd| f.revents().unwrap_or(PollFlags::empty());
                let listener = self.listening.then(|| events(&fds[1]));
                let server_at = if self.listening { 2 } else { 1 };
                (
                    !events(&fds[0]).is_empty(),
                    listener,
                    fds.get(server_at).is_some_and(|f| !events(f).is_empty()),
                )
            };
            if signalled && hung_up_by(signals) {
                return Ok(End::Hangup);
            }
            if let Some(ev) = notified {
                if ev.contains(PollFlags::POLLIN) {
                    self.notification();
                } else if ev.intersects(PollFlags::POLLHUP | PollFlags::POLLERR) {
                    // No process is left under the filter.
                    self.listening = false;
                }
            }
            if answered {
                for answer in self.decider.answers() {
                    self.answered(answer);
                }
            }
        }
    }

    /// Read one notification and answer it, or hold it for the server.
    fn notification(&mut self) {
        // SAFETY: a zeroed plain C struct, as SECCOMP_IOCTL_NOTIF_RECV requires.
        let mut notif: libc::seccomp_notif = unsafe { std::mem::zeroed() };
        // SAFETY: an ioctl on our listener with a struct that outlives the call.
        let r = unsafe {
            libc::ioctl(
                self.listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_RECV as _,
                &mut notif as *mut libc::seccomp_notif,
            )
        };
        if r < 0 {
            // ENOENT: its caller was interrupted or killed before we read it.
            return;
        }
        let id = notif.id;
        let tid = Pid::from_raw(notif.pid as i32);
        if notif.pid == 0 {
            // A caller outside our pid namespace: nothing about it can be read.
            let _ = respond(&self.listener, id, libc::EACCES, 0);
            return;
        }
        let call = tracee::exec_call_of(tid, notif.data.nr as i64, &notif.data.args);
        if !still_waiting(&self.listener, id) {
            return;
        }
        let call = match call {
            Ok(c) => c,
            Err(e) => {
                let why = format!("an exec whalebox cannot read ({e})");
                self.refuse(id, tid, &why, "(unreadable)");
                return;
            }
        };
        let plan = match decide::plan(tid, &call, self.decider.known()) {
            Ok(p) => p,
            // Missing or not executable: the answer the kernel would give (a PATH
            // search goes on to the next directory).
            Err(errno) => {
                let _ = respond(&self.listener, id, errno, 0);
                return;
            }
        };
        let Some(caller) = self.lineage.caller(tid, &plan.expect.label) else {
            // Gone already.
            let _ = respond(&self.listener, id, libc::ESRCH, 0);
            return;
        };
        // Asked again for a call already before the server (a signal restarted it
        // where the kernel cannot wait killably): the new notification takes its place.
        for held in self.decider.held_mut() {
            if let Held::Call {
                notif,
                tid: t,
                expect,
                ..
            } = held
                && *t == tid
                && *expect == plan.expect
            {
                *notif = id;
                return;
            }
        }
        let again = caller.refused.as_ref().and_then(|(file, argv, reason)| {
            (*file == plan.expect.file && *argv == plan.expect.argv).then(|| reason.clone())
        });
        if let Some(reason) = again {
            self.refuse(id, tid, &reason, &plan.shown);
            return;
        }
        if caller.tgid == self.root && !self.root_started {
            // The task's own program, chosen (and for `run`, decided) by whalebox.
            self.allow(id, tid, plan.expect, caller.after);
            return;
        }
        let request = plan.request(tid, caller.chain);
        let held = Held::Call {
            notif: id,
            tid,
            tgid: caller.tgid,
            after: caller.after.clone(),
            expect: plan.expect.clone(),
            shown: plan.shown.clone(),
        };
        match self.decider.decide(request, held) {
            Ok(true) => self.allow(id, tid, plan.expect, caller.after),
            Ok(false) => {}
            Err(why) => self.refuse(id, tid, &why, &plan.shown),
        }
    }

    /// Let an allowed exec go on, attached to verify what it loads.
    fn allow(&mut self, id: u64, tid: Pid, expect: Expect, after: Known) {
        let options = PtraceOptions::PTRACE_O_TRACEEXEC | PtraceOptions::PTRACE_O_EXITKILL;
        match ptrace::seize(tid, options) {
            Ok(()) => {}
            // Attached already: its last exec failed and it made another before the
            // stop that would have let it go came.
            Err(Errno::EPERM) if self.attached.contains_key(&tid) => {}
            Err(Errno::ESRCH) => return,
            // Under a debugger of the task's own, which the profile allowed: decided on
            // what was read, and not verified (the trade `[shell] debuggers` names).
            Err(Errno::EPERM) if self.debuggers && self.traced_within(tid) => {
                let _ = respond(
                    &self.listener,
                    id,
                    0,
                    libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
                );
                return;
            }
            Err(e) => {
                let why = format!(
                    "whalebox cannot verify this exec: ptrace is refused ({e}): another \
                     tracer, a container's seccomp profile or Yama's ptrace_scope = 3"
                );
                if tid == self.root && !self.root_started {
                    self.refused_start = Some(format!(
                        "ptrace is refused here ({e}): a container's seccomp profile or \
                         Yama's ptrace_scope = 3 forbids it"
                    ));
                    let _ = signal::kill(tid, Signal::SIGKILL);
                    return;
                }
                self.refuse(id, tid, &why, &expect.label);
                return;
            }
        }
        self.attached.insert(tid, Verify { expect, after });
        let _ = respond(
            &self.listener,
            id,
            0,
            libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
        );
        // A stop on its way back, should the exec not happen (no exec event then).
        let _ = ptrace::interrupt(tid);
    }

    /// Whether `tid`'s tracer is one of the task's processes (below the supervisor).
    fn traced_within(&self, tid: Pid) -> bool {
        let Ok(status) = std::fs::read_to_string(format!("/proc/{tid}/status")) else {
            return false;
        };
        let tracer: i32 = status
            .lines()
            .find_map(|l| l.strip_prefix("TracerPid:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        let supervisor = self.lineage.supervisor;
        let mut pid = tracer;
        for _ in 0..256 {
            if pid <= 1 {
                return false;
            }
            match stat(pid) {
                Some(s) if s.ppid == supervisor => return true,
                Some(s) => pid = s.ppid,
                None => return false,
            }
        }
        false
    }

    /// Fail the exec call with EACCES and say why on the caller's stderr.
    fn refuse(&mut self, id: u64, tid: Pid, reason: &str, shown: &str) {
        tracee::tell(tid, &format!("whalebox: denied {shown}: {reason}"));
        let _ = respond(&self.listener, id, libc::EACCES, 0);
    }

    /// Handle every stop and exit there is; Some when the root ended.
    fn reap(&mut self) -> Option<End> {
        loop {
            let status = match waitpid(None, Some(WaitPidFlag::WNOHANG | WaitPidFlag::__WALL)) {
                Ok(WaitStatus::StillAlive) | Err(_) => return None,
                Ok(s) => s,
            };
            match status {
                WaitStatus::PtraceEvent(pid, _, ev) if ev == Event::PTRACE_EVENT_EXEC as i32 => {
                    self.exec_loaded(pid)
                }
                // The stop asked for: the exec failed or was restarted (or a group-stop
                // came first). Detaching leaves a group-stop in place.
                WaitStatus::PtraceEvent(pid, _, _) => self.let_go(pid, None),
                // A signal on its way: the exec did not happen; it goes with the detach.
                WaitStatus::Stopped(pid, sig) => self.let_go(pid, Some(sig)),
                WaitStatus::Exited(pid, code) => {
                    self.attached.remove(&pid);
                    if pid == self.root {
                        return Some(End::Exited(code));
                    }
                }
                WaitStatus::Signaled(pid, sig, _) => {
                    self.attached.remove(&pid);
                    if pid == self.root {
                        return Some(End::Signaled(sig));
                    }
                }
                _ => {}
            }
        }
    }

    fn let_go(&mut self, pid: Pid, sig: Option<Signal>) {
        self.attached.remove(&pid);
        let _ = ptrace::detach(pid, sig);
    }

    /// An exec event: the new image is loaded and has not run.
    fn exec_loaded(&mut self, pid: Pid) {
        // A thread other than the leader that execs takes over the leader's pid.
        let former = ptrace::getevent(pid)
            .map(|t| Pid::from_raw(t as i32))
            .unwrap_or(pid);
        let verify = self.attached.remove(&former);
        if former != pid {
            // The leader, if it was attached for an exec of its own, lost the race.
            self.attached.remove(&pid);
        }
        let Some(Verify { expect, after }) = verify else {
            let _ = ptrace::detach(pid, None);
            return;
        };
        let loaded = tracee::loaded(pid);
        if expect.matches(&loaded) {
            if pid == self.root {
                self.root_started = true;
            }
            self.lineage.insert(pid, after);
            let _ = ptrace::detach(pid, None);
            return;
        }
        // Not what was decided (another thread or process changed the path or argv
        // after the check): decide the image as it is.
        let shown = tracee::exe(pid);
        let after = Known {
            program: decide::basename(&shown),
            ..after
        };
        let request = decide::request(pid, &shown, &loaded.argv, "loaded", after.ancestors.clone());
        let held = Held::Loaded {
            pid,
            after: after.clone(),
            shown: shown.clone(),
        };
        match self.decider.decide(request, held) {
            Ok(true) => self.run_loaded(pid, after),
            Ok(false) => {}
            Err(why) => kill_loaded(pid, &shown, &why),
        }
    }

    fn run_loaded(&mut self, pid: Pid, after: Known) {
        self.lineage.insert(pid, after);
        let _ = ptrace::detach(pid, None);
    }

    fn answered(&mut self, answer: Answer<Held>) {
        let Answer {
            waiting,
            allowed,
            reason,
        } = answer;
        match waiting {
            Held::Call {
                notif,
                tid,
                expect,
                after,
                ..
            } if allowed => self.allow(notif, tid, expect, after),
            Held::Call {
                notif,
                tid,
                tgid,
                mut after,
                expect,
                shown,
            } => {
                // Remembered on the process as it is (its program unchanged).
                let refused = Some((expect.file, expect.argv, reason.clone()));
                match self.lineage.known.get_mut(&tgid) {
                    Some(known) if known.start == after.start => known.refused = refused,
                    _ => {
                        // A forked child: known from now on as running its parent's
                        // program, for this refusal.
                        after.program = after.ancestors.pop().unwrap_or_default();
                        after.execd = false;
                        after.refused = refused;
                        self.lineage.insert(tgid, after);
                    }
                }
                self.refuse(notif, tid, &reason, &shown)
            }
            Held::Loaded { pid, after, .. } if allowed => self.run_loaded(pid, after),
            Held::Loaded { pid, shown, .. } => kill_loaded(pid, &shown, &reason),
        }
    }
}

/// Kill a process stopped at its exec event before its image runs.
fn kill_loaded(pid: Pid, shown: &str, reason: &str) {
    tracee::kill_before_run(pid, shown, reason);
    let _ = ptrace::detach(pid, None);
}
