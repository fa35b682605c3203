//! The ptrace half of the kernel gate: the task's supervisor starts the task's first
//! program as a tracee and follows every process and thread it ever makes (fork, vfork
//! and clone events attach them before they run), answering two kinds of stop:
//!
//! - **the exec call** (seccomp stop, before the kernel reads anything): the path and
//!   argv are read from the caller's memory and put to the decision server. A denial
//!   skips the call with EACCES, so the caller prints its usual "permission denied",
//!   and a line from whalebox naming the rule goes to the caller's stderr. An allow
//!   only records what was allowed: the file's identity and the argv.
//! - **the exec event** (the new image is loaded and has not run a single instruction;
//!   the other threads of the process are gone): the loaded file and argv are read from
//!   /proc, where nothing can change them any more, and compared with what was allowed.
//!   If another thread changed the path or argv between the decision and the kernel's
//!   own read, they differ, and the image is decided afresh as it is; if that is a
//!   denial it is killed before it runs. This check, not the first one, is what the
//!   security rests on; the first is what makes a denial an ordinary error.
//!
//! One decision per exec: execs zsh's in-process gate already decided (asked through
//! [`Proxy`]) and the supervisor's own first exec are only verified. A `#!` script's
//! interpreter is decided with the script, in the same question.

use std::collections::{HashMap, HashSet};
use std::ffi::{CString, OsStr, OsString};
use std::os::fd::AsFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::libc;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::ptrace::{self, Event, Options as PtraceOptions};
use nix::sys::signal::{self, SigSet, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid, fork};
use serde_json::{Value, json};

use super::filter;
use super::link::{Proxy, Server};
use super::tracee::{self, ExecCall, FileId, Loaded};
use crate::policy::{Decision, Policy};

/// How often batched audit records go to the server.
const RECORDS_EVERY_MS: u16 = 20;

/// How the gate is run.
pub struct Options {
    /// The decision server's socket.
    pub server: Option<PathBuf>,
    /// How long an exec may wait for its answer (an `ask` waits for a person).
    pub timeout: Duration,
    /// Where the proxy socket's private directory goes (the task's TMPDIR).
    pub tmp: PathBuf,
}

/// How the task's first program ended.
pub enum End {
    Exited(i32),
    Signaled(Signal),
    /// The server went away (parent-death signal): kill everything.
    Hangup,
}

/// Who decided an exec that is now only verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Via {
    Kernel,
    Zsh,
    Supervisor,
}

/// What an exec was allowed as, to compare with what the kernel loaded.
#[derive(Debug, Clone)]
struct Expect {
    file: FileId,
    argv: Vec<Vec<u8>>,
    /// For a `#!` script: the interpreter's identity and the argv the kernel builds.
    script: Option<(Option<FileId>, Vec<Vec<u8>>)>,
    label: String,
    via: Via,
}

impl Expect {
    fn matches(&self, loaded: &Loaded) -> bool {
        match &self.script {
            None => loaded.id == Some(self.file) && loaded.argv == self.argv,
            Some((interp, argv)) => {
                interp.is_some() && loaded.id == *interp && loaded.argv == *argv
            }
        }
    }
}

/// A decision zsh's gate got for a process, not yet used by an exec.
#[derive(Debug, Clone)]
struct Decided {
    program: String,
    argv: Vec<String>,
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
    /// The last exec zsh decided for it: zsh runs a script without `#!` by exec'ing
    /// itself as `sh SCRIPT`, which is the same decision.
    zsh_last: Option<Decided>,
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
    }
}

enum Waiting {
    /// A tracee stopped in its exec call.
    Call {
        pid: Pid,
        expect: Expect,
        shown: String,
    },
    /// A tracee stopped with an image loaded that nobody decided.
    Loaded {
        pid: Pid,
        label: String,
        shown: String,
    },
    /// zsh's gate, asking through the proxy.
    Zsh {
        conn: u64,
        pid: i32,
        decided: Decided,
    },
}

fn basename(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_string()
}

struct Tracer {
    root: Pid,
    root_started: bool,
    procs: HashMap<Pid, Proc>,
    /// New tracees whose parent's fork event has not been seen yet.
    held: HashSet<Pid>,
    /// Decisions zsh's gate got, by the asking process.
    zsh: HashMap<i32, Vec<Decided>>,
    waiting: HashMap<u64, (Waiting, Instant)>,
    next_id: u64,
    server: Server,
    proxy: Option<Proxy>,
    timeout: Duration,
    /// The server's own policy, once it sent it: `allow` verdicts are settled here,
    /// without a round trip, and only recorded (everything else goes to the server,
    /// which asks people, remembers approvals and keeps the task's denials).
    policy: Option<Policy>,
    /// Records of execs allowed here, not sent yet: they go in batches (one wake-up of
    /// the server for many execs), and a sync before the task ends makes sure the
    /// audit log is complete when whalebox reports the task.
    records: Vec<u8>,
    records_since: Option<Instant>,
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
    let bpf = filter::exec_filter()?;
    let proxy = Proxy::bind(&options.tmp).ok();
    // The root's environment: zsh's gate asks the proxy, not the server.
    let env: Vec<CString> = std::env::vars_os()
        .map(|(k, v)| {
            let v = match (&proxy, k.as_bytes()) {
                (Some(p), b"WHALEBOX_GATE_SOCKET") => p.socket.clone().into_os_string(),
                _ => v,
            };
            let mut kv = k.into_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            CString::new(kv).unwrap_or_default()
        })
        .collect();
    let path = tracee::cstring(program.as_bytes())?;
    let argv: Vec<CString> = std::iter::once(program)
        .chain(args.iter().map(OsString::as_os_str))
        .map(|a| tracee::cstring(a.as_bytes()))
        .collect::<Result<_, _>>()?;
    let (report_r, report_w) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| format!("pipe: {e}"))?;
    let mut mask = SigSet::empty();
    mask.add(Signal::SIGCHLD);
    mask.add(Signal::SIGHUP);
    signal::sigprocmask(SigmaskHow::SIG_BLOCK, Some(&mask), None)
        .map_err(|e| format!("sigprocmask: {e}"))?;
    let signals = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
        .map_err(|e| format!("signalfd: {e}"))?;
    // SAFETY: the supervisor is single-threaded; the child only makes system calls and
    // writes before it execs or exits.
    let child = match unsafe { fork() } {
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
    let fail = |why: String| -> Result<End, String> {
        let _ = signal::kill(child, Signal::SIGKILL);
        let _ = waitpid(child, None);
        Err(why)
    };
    match waitpid(child, Some(WaitPidFlag::WUNTRACED)) {
        Ok(WaitStatus::Stopped(_, Signal::SIGSTOP)) => {}
        other => {
            return fail(format!(
                "the task's first process did not stop as expected: {other:?}"
            ));
        }
    }
    let opts = PtraceOptions::PTRACE_O_TRACESECCOMP
        | PtraceOptions::PTRACE_O_TRACEEXEC
        | PtraceOptions::PTRACE_O_TRACEFORK
        | PtraceOptions::PTRACE_O_TRACEVFORK
        | PtraceOptions::PTRACE_O_TRACECLONE
        | PtraceOptions::PTRACE_O_EXITKILL;
    if let Err(e) = ptrace::seize(child, opts) {
        return fail(format!(
            "ptrace is refused here ({e}): a container's seccomp profile or Yama's \
             ptrace_scope = 3 forbids it"
        ));
    }
    let _ = signal::kill(child, Signal::SIGCONT);
    let mut tracer = Tracer {
        root: child,
        root_started: false,
        procs: HashMap::from([(
            child,
            Proc {
                execd: true,
                ..Proc::default()
            },
        )]),
        held: HashSet::new(),
        zsh: HashMap::new(),
        waiting: HashMap::new(),
        next_id: 0,
        server: Server::connect(options.server.as_deref()),
        proxy,
        timeout: options.timeout,
        policy: None,
        records: Vec::new(),
        records_since: None,
    };
    let _ = tracer.server.send(&json!({"id": 0, "want": "policy"}));
    let end = tracer.serve(&signals, hung_up);
    tracer.flush(Duration::from_secs(2));
    if let Some(p) = &tracer.proxy {
        p.remove();
    }
    if !tracer.root_started
        && let Ok(End::Exited(126)) = end
    {
        let mut why = [0u8; 512];
        let n = nix::unistd::read(&report_r, &mut why).unwrap_or(0);
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
            self.expire();
            if self
                .records_since
                .is_some_and(|t| t.elapsed() >= Duration::from_millis(RECORDS_EVERY_MS.into()))
            {
                self.send_records();
            }
            // Which descriptor is which: 0 signals, 1 server, 2 listener, then conns.
            let (sig_ready, server_ready, listener_ready, conn_keys) = {
                let mut fds = vec![PollFd::new(signals.as_fd(), PollFlags::POLLIN)];
                let server_fd = self.server.fd();
                let has_server = server_fd.is_some();
                if let Some(fd) = server_fd {
                    fds.push(PollFd::new(fd, PollFlags::POLLIN));
                }
                let mut keys = Vec::new();
                if let Some(p) = &self.proxy {
                    fds.push(PollFd::new(p.listener_fd(), PollFlags::POLLIN));
                    for (k, fd) in p.conn_fds() {
                        keys.push(k);
                        fds.push(PollFd::new(fd, PollFlags::POLLIN));
                    }
                }
                let timeout = if !self.records.is_empty() {
                    RECORDS_EVERY_MS
                } else if self.waiting.is_empty() {
                    1000
                } else {
                    200
                };
                match poll(&mut fds, PollTimeout::from(timeout)) {
                    Ok(_) | Err(Errno::EINTR) => {}
                    Err(e) => return Err(format!("poll: {e}")),
                }
                let hit = |f: &PollFd| f.revents().is_some_and(|r| !r.is_empty());
                let sig = hit(&fds[0]);
                let mut i = 1;
                let server = has_server && hit(&fds[i]);
                if has_server {
                    i += 1;
                }
                let listener = self.proxy.is_some() && hit(&fds[i]);
                let conns: Vec<u64> = keys
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| hit(&fds[i + 1 + j]))
                    .map(|(_, k)| *k)
                    .collect();
                (sig, server, listener, conns)
            };
            if sig_ready {
                while let Ok(Some(info)) = signals.read_signal() {
                    if info.ssi_signo == Signal::SIGHUP as u32 {
                        return Ok(End::Hangup);
                    }
                }
            }
            if server_ready {
                for answer in self.server.answers() {
                    self.answered(&answer);
                }
            }
            if listener_ready && let Some(p) = &mut self.proxy {
                p.accept();
            }
            for key in conn_keys {
                let asked = self.proxy.as_mut().and_then(|p| p.read(key));
                if let Some(a) = asked {
                    self.forward(a.conn, a.pid, a.request);
                }
            }
            if self.server.gone.is_some() && !self.waiting.is_empty() {
                let why = self.server.gone.clone().unwrap_or_default();
                let ids: Vec<u64> = self.waiting.keys().copied().collect();
                for id in ids {
                    self.answered(&json!({"id": id, "decision": "deny", "reason": why}));
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
        self.zsh.remove(&pid.as_raw());
    }

    fn forked(&mut self, parent: Pid, thread_like: bool) {
        if let Ok(new) = ptrace::getevent(parent) {
            let child = Pid::from_raw(new as i32);
            let mut entry = self.procs.get(&parent).cloned().unwrap_or_default();
            entry.expect = None;
            entry.zsh_last = None;
            entry.execd = thread_like && entry.execd;
            self.procs.insert(child, entry);
            if self.held.remove(&child) {
                let _ = ptrace::cont(child, None);
            }
        }
        let _ = ptrace::cont(parent, None);
    }

    /// Whether the policy allows `request` outright (then it is only recorded).
    fn settles(&self, request: &Value) -> bool {
        let Some(policy) = &self.policy else {
            return false;
        };
        let nested = crate::boundary::nested(
            request["via"].as_str(),
            request["chain"].as_array().map_or(0, Vec::len),
        );
        let allows = |v: &Value| {
            let argv: Vec<String> = v["argv"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            let program = v["program"].as_str().unwrap_or_default();
            policy.evaluate_exec(program, &argv, nested).decision == Decision::Allow
        };
        allows(request) && (request["interpreter"].is_null() || allows(&request["interpreter"]))
    }

    /// Keep the record of an exec allowed here for the server's audit log.
    fn record(&mut self, mut request: Value) {
        request["record_only"] = json!(true);
        self.records
            .extend_from_slice(&super::link::frame(&request));
        self.records_since.get_or_insert_with(Instant::now);
        if self.records.len() > 64 * 1024 {
            self.send_records();
        }
    }

    fn send_records(&mut self) {
        if !self.records.is_empty() {
            let _ = self.server.send_frames(&self.records);
            self.records.clear();
        }
        self.records_since = None;
    }

    /// Send what is left and wait (a bounded time) until the server has written it.
    fn flush(&mut self, limit: Duration) {
        self.send_records();
        self.next_id += 1;
        let sync = self.next_id;
        if self
            .server
            .send(&json!({"id": sync, "want": "sync"}))
            .is_err()
        {
            return;
        }
        let start = Instant::now();
        while self.server.gone.is_none() && start.elapsed() < limit {
            if let Some(fd) = self.server.fd() {
                let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
                let _ = poll(&mut fds, PollTimeout::from(100u16));
            }
            if self.server.answers().iter().any(|a| a["id"] == sync) {
                return;
            }
        }
    }

    fn ask(&mut self, mut request: Value, waiting: Waiting) -> Result<(), String> {
        // Records first, so the audit log keeps the order execs were decided in.
        self.send_records();
        self.next_id += 1;
        let id = self.next_id;
        request["id"] = json!(id);
        self.server.send(&request)?;
        self.waiting.insert(id, (waiting, Instant::now()));
        Ok(())
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
        let Some(target) = tracee::target(&call.reachable(pid)) else {
            // Missing or not executable: the kernel fails it on its own (PATH search).
            if let Some(p) = self.procs.get_mut(&pid) {
                p.expect = None;
            }
            let _ = ptrace::cont(pid, None);
            return;
        };
        let shown = call.shown(pid);
        let script = target.shebang.as_ref().map(|(interp, arg)| {
            let mut argv = vec![interp.clone()];
            argv.extend(arg.iter().cloned());
            argv.push(call.script_name());
            argv.extend(call.argv.iter().skip(1).cloned());
            let reach = ExecCall {
                dirfd: None,
                path: interp.clone(),
                fd_itself: false,
                argv: Vec::new(),
            };
            let id = tracee::target(&reach.reachable(pid)).map(|t| t.id);
            (reach.shown(pid), id, argv)
        });
        let expect = |via: Via| Expect {
            file: target.id,
            argv: call.argv.clone(),
            script: script.as_ref().map(|(_, id, argv)| (*id, argv.clone())),
            label: basename(&shown),
            via,
        };
        if pid == self.root && !self.root_started {
            // The task's own program, chosen (and for `run`, decided) by whalebox.
            self.allow_call(pid, expect(Via::Supervisor));
            return;
        }
        if let Some(decided) = self.decided_by_zsh(pid, &call, target.id) {
            let mut e = expect(Via::Zsh);
            if let Some(p) = self.procs.get_mut(&pid) {
                p.zsh_last = Some(decided);
            }
            match &script {
                // zsh decided the script; its interpreter is a program of its own.
                Some((interp_shown, _, argv)) => {
                    e.via = Via::Kernel;
                    let request = self.request(pid, interp_shown, argv, "call");
                    let shown = interp_shown.clone();
                    if self.settles(&request) {
                        self.record(request);
                        self.allow_call(pid, e);
                        return;
                    }
                    if let Err(why) = self.ask(
                        request,
                        Waiting::Call {
                            pid,
                            expect: e,
                            shown: shown.clone(),
                        },
                    ) {
                        self.refuse(pid, &why, &shown);
                    }
                }
                None => self.allow_call(pid, e),
            }
            return;
        }
        let mut request = self.request(pid, &shown, &call.argv, "call");
        if let Some((interp_shown, _, argv)) = &script {
            request["interpreter"] = json!({
                "program": interp_shown,
                "argv": tracee::strings(argv),
            });
        }
        let e = expect(Via::Kernel);
        if let Err(why) = self.ask(
            request,
            Waiting::Call {
                pid,
                expect: e,
                shown: shown.clone(),
            },
        ) {
            self.refuse(pid, &why, &shown);
        }
    }

    fn request(&self, pid: Pid, program: &str, argv: &[Vec<u8>], stage: &str) -> Value {
        json!({
            "program": program,
            "argv": tracee::strings(argv),
            "cwd": tracee::cwd(pid),
            "pid": pid.as_raw(),
            "chain": self.procs.get(&pid).map(Proc::chain).unwrap_or_default(),
            "via": "kernel",
            "stage": stage,
        })
    }

    /// Whether zsh's gate already got this exec allowed for this process.
    fn decided_by_zsh(&mut self, pid: Pid, call: &ExecCall, file: FileId) -> Option<Decided> {
        let program = String::from_utf8_lossy(&call.path).into_owned();
        let argv = tracee::strings(&call.argv);
        if let Some(list) = self.zsh.get_mut(&pid.as_raw())
            && let Some(i) = list
                .iter()
                .position(|d| d.program == program && d.argv == argv)
        {
            return Some(list.remove(i));
        }
        // zsh running a script without `#!` as `sh SCRIPT ARGS`, by exec'ing itself.
        let last = self.procs.get(&pid)?.zsh_last.clone()?;
        let mut as_sh = vec!["sh".to_string(), last.program.clone()];
        as_sh.extend(last.argv.iter().skip(1).cloned());
        (tracee::running(pid) == Some(file) && argv == as_sh).then_some(last)
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
        let former = ptrace::getevent(pid)
            .map(|t| Pid::from_raw(t as i32))
            .unwrap_or(pid);
        let mut entry = self
            .procs
            .remove(&former)
            .or_else(|| self.procs.get(&pid).cloned())
            .unwrap_or_default();
        if former != pid {
            self.procs.remove(&pid);
        }
        let loaded = tracee::loaded(pid);
        let expect = entry.expect.take();
        if let Some(e) = expect.filter(|e| e.matches(&loaded)) {
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
        let shown = loaded.exe.clone();
        let request = self.request(pid, &shown, &loaded.argv, "loaded");
        let label = basename(&shown);
        if let Err(why) = self.ask(
            request,
            Waiting::Loaded {
                pid,
                label,
                shown: shown.clone(),
            },
        ) {
            self.kill_loaded(pid, &shown, &why);
        }
    }

    fn kill_loaded(&mut self, pid: Pid, shown: &str, reason: &str) {
        tracee::tell(
            pid,
            &format!("whalebox: killed {shown} before it ran: {reason}"),
        );
        let _ = signal::kill(pid, Signal::SIGKILL);
        let _ = ptrace::cont(pid, None);
    }

    /// zsh's gate asks through the proxy: forward it, as that process.
    fn forward(&mut self, conn: u64, pid: i32, asked: Value) {
        let program = asked["program"].as_str().unwrap_or_default().to_string();
        let argv: Vec<String> = asked["argv"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|v| v.as_str().unwrap_or_default().to_string())
                    .collect()
            })
            .unwrap_or_default();
        let chain = self
            .procs
            .get(&Pid::from_raw(pid))
            .map(Proc::chain)
            .unwrap_or_default();
        let request = json!({
            "program": program,
            "argv": argv,
            "cwd": asked["cwd"],
            "pid": pid,
            "chain": chain,
            "via": "zsh",
            "stage": "call",
        });
        let decided = Decided { program, argv };
        if self.settles(&request) {
            self.record(request);
            self.zsh.entry(pid).or_default().push(decided);
            if let Some(p) = &mut self.proxy {
                p.answer(
                    conn,
                    &json!({"decision": "allow", "reason": "allowed by the policy"}),
                );
            }
            return;
        }
        if let Err(why) = self.ask(request, Waiting::Zsh { conn, pid, decided })
            && let Some(p) = &mut self.proxy
        {
            p.answer(conn, &json!({"decision": "deny", "reason": why}));
        }
    }

    fn answered(&mut self, answer: &Value) {
        if answer["id"] == 0 && !answer["policy"].is_null() {
            self.policy = serde_json::from_value(answer["policy"].clone()).ok();
            return;
        }
        let Some((waiting, _)) = answer["id"]
            .as_u64()
            .and_then(|id| self.waiting.remove(&id))
        else {
            return;
        };
        let allowed = answer["decision"] == "allow";
        let reason = answer["reason"]
            .as_str()
            .unwrap_or("no reason given")
            .to_string();
        match waiting {
            Waiting::Call { pid, expect, shown } => {
                if allowed {
                    self.allow_call(pid, expect);
                } else {
                    self.refuse(pid, &reason, &shown);
                }
            }
            Waiting::Loaded { pid, label, shown } => {
                if allowed {
                    if let Some(p) = self.procs.get_mut(&pid) {
                        p.became(label);
                    }
                    let _ = ptrace::cont(pid, None);
                } else {
                    self.kill_loaded(pid, &shown, &reason);
                }
            }
            Waiting::Zsh { conn, pid, decided } => {
                if allowed {
                    self.zsh.entry(pid).or_default().push(decided);
                }
                if let Some(p) = &mut self.proxy {
                    p.answer(
                        conn,
                        &json!({"decision": answer["decision"], "reason": reason}),
                    );
                }
            }
        }
    }

    /// Questions past their time are denied: a slow or stuck server never hangs a task.
    fn expire(&mut self) {
        let late: Vec<u64> = self
            .waiting
            .iter()
            .filter(|(_, (_, since))| since.elapsed() > self.timeout)
            .map(|(id, _)| *id)
            .collect();
        for id in late {
            let why = format!(
                "no answer from the decision server in {} s",
                self.timeout.as_secs()
            );
            self.answered(&json!({"id": id, "decision": "deny", "reason": why}));
        }
    }
}
