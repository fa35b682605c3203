//! The supervisor: a small process between whalebox and each task's shell
//! (`whalebox __supervise SERVER_PID -- SHELL ARGS…`). It leads the task's process
//! group (and, for PTYs, its session), so that:
//!
//! - it dies with the server: a parent-death signal (SIGHUP) reaches it even when the
//!   server is SIGKILLed, and it then kills every process of the task;
//! - nothing escapes: as a child subreaper it inherits the task's orphans, even ones
//!   that left the process group with `setsid`, and when the shell exits it kills what
//!   is left, so a finished task has no processes behind it;
//! - it reports the shell's status as its own (exit code, or the same signal).
//!
//! SIGINT, SIGQUIT, SIGTSTP and SIGTERM sent to the group are for the shell: the
//! supervisor catches them with handlers that do nothing (handlers, unlike ignored
//! dispositions, are reset by exec, so the shell gets the defaults).

use std::ffi::OsString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{self, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, getpid, getppid};

/// The hidden subcommand that runs [`main`].
pub const SUBCOMMAND: &str = "__supervise";
/// `--sandbox JSON`: the task's Landlock layer, applied before the shell starts.
pub const SANDBOX_FLAG: &str = "--sandbox";
/// `--exec-gate SOCKET`: run the task under the kernel exec gate, asking the decision
/// server on SOCKET (see `boundary::kernel`). If the gate cannot be installed the task
/// does not run (exit 126): the server only asks for it where it found it works.
pub const EXEC_GATE_FLAG: &str = "--exec-gate";

/// `--exec-gate-method notify|ptrace`: how the kernel exec gate takes each exec; absent:
/// notification where the kernel has it, else ptrace.
pub const EXEC_GATE_METHOD_FLAG: &str = "--exec-gate-method";

/// `--exec-gate-known JSON`: the programs the policy names, by content (see
/// `boundary::kernel::identity`), so a renamed copy of one is decided as it.
pub const EXEC_GATE_KNOWN_FLAG: &str = "--exec-gate-known";

/// `--debuggers 1`: the task's programs may trace each other (`[shell] debuggers`).
pub const DEBUGGERS_FLAG: &str = "--debuggers";

/// `--user-namespaces 1`: the task may make and enter user namespaces (`[shell]
/// user_namespaces = "allow"`); absent, its deny list refuses them (`guard::machine`).
pub const USER_NAMESPACES_FLAG: &str = "--user-namespaces";

/// The kernel exec gate for one task, as the supervisor's options.
#[derive(Debug, Clone)]
pub struct KernelGate {
    /// The decision server's socket.
    pub socket: std::path::PathBuf,
    pub method: Option<crate::boundary::kernel::Method>,
    /// `[shell] debuggers`: ptrace is let through, and execs under a tracer of the
    /// task's own go unverified.
    pub debuggers: bool,
    /// The programs the policy names, by content.
    pub known: std::sync::Arc<Vec<crate::boundary::kernel::identity::Known>>,
}

impl KernelGate {
    /// The supervisor's options for it.
    pub fn args(&self) -> Vec<OsString> {
        let mut args = vec![EXEC_GATE_FLAG.into(), self.socket.clone().into()];
        if let Some(method) = self.method {
            args.push(EXEC_GATE_METHOD_FLAG.into());
            args.push(method.name().into());
        }
        if self.debuggers {
            args.push(DEBUGGERS_FLAG.into());
            args.push("1".into());
        }
        if !self.known.is_empty() {
            args.push(EXEC_GATE_KNOWN_FLAG.into());
            args.push(
                serde_json::to_string(&*self.known)
                    .unwrap_or_default()
                    .into(),
            );
        }
        args
    }
}

/// `--join JSON` ([`Join`]): join the session's namespaces (its network namespace, its
/// mount namespace with the session's `/dev/shm`, and the user namespace they live in),
/// whose descriptors the server hands over on a socket (see `guard::spaces`). If that
/// fails the task does not run (exit 126).
pub const JOIN_FLAG: &str = "--join";

/// What a supervisor needs to join its session's namespaces, and to trust what it gets:
/// the socket lives where tasks could replace it, so the answer must come from the
/// server itself (its pid, by `SO_PEERCRED`) and be exactly these namespaces.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Join {
    pub socket: std::path::PathBuf,
    pub token: String,
    pub expect: Vec<crate::guard::spaces::Identity>,
}
/// `--socket-filter 1`: refuse UDP, raw and non-TCP internet sockets (`net::sockets`),
/// the fallback network fence beside Landlock's TCP port rule.
pub const SOCKET_FILTER_FLAG: &str = "--socket-filter";

/// `--limits JSON`: the task's resource limits and cgroup (`guard::limits::TaskSetup`),
/// applied by its first process before it runs anything. If they cannot be the task
/// does not run (exit 126).
pub const LIMITS_FLAG: &str = "--limits";

static HANGUP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_hangup(_: libc_int) {
    HANGUP.store(true, Ordering::SeqCst);
}

extern "C" fn on_ignored(_: libc_int) {}

#[allow(non_camel_case_types)]
type libc_int = std::ffi::c_int;

fn handle(sig: Signal, handler: extern "C" fn(libc_int)) {
    let action = SigAction::new(
        SigHandler::Handler(handler),
        SaFlags::empty(),
        SigSet::empty(),
    );
    // SAFETY: the handlers only store to an atomic, which is async-signal-safe.
    let _ = unsafe { signal::sigaction(sig, &action) };
}

/// Run as the supervisor: `args` are what follows the subcommand.
pub fn main(args: Vec<OsString>) -> ! {
    let mut it = args.into_iter();
    let server: Option<i32> = it.next().and_then(|s| s.to_str()?.parse().ok());
    let options: Vec<OsString> = it.by_ref().take_while(|a| a != "--").collect();
    let rest: Vec<OsString> = it.collect();
    let option = |name: &str| {
        options
            .iter()
            .position(|a| a == name)
            .and_then(|i| options.get(i + 1))
    };
    let sandbox = option(SANDBOX_FLAG);
    let exec_gate = option(EXEC_GATE_FLAG);
    let method = match option(EXEC_GATE_METHOD_FLAG).and_then(|m| m.to_str()) {
        None => None,
        Some("notify") => Some(crate::boundary::kernel::Method::Notify),
        Some("ptrace") => Some(crate::boundary::kernel::Method::Ptrace),
        Some(other) => {
            eprintln!("whalebox {SUBCOMMAND}: {EXEC_GATE_METHOD_FLAG} {other:?}: notify or ptrace");
            std::process::exit(2);
        }
    };
    let join = option(JOIN_FLAG);
    let debuggers = option(DEBUGGERS_FLAG).is_some();
    let known =
        match option(EXEC_GATE_KNOWN_FLAG).map(|k| serde_json::from_str(&k.to_string_lossy())) {
            None => Vec::new(),
            Some(Ok(known)) => known,
            Some(Err(e)) => {
                eprintln!("whalebox {SUBCOMMAND}: {EXEC_GATE_KNOWN_FLAG}: {e}");
                std::process::exit(2);
            }
        };
    let socket_filter = option(SOCKET_FILTER_FLAG).is_some();
    let limits = option(LIMITS_FLAG);
    let machine = crate::guard::machine::Options {
        user_namespaces: option(USER_NAMESPACES_FLAG).is_some(),
    };
    let (Some(server), Some((shell, shell_args))) = (server, rest.split_first()) else {
        eprintln!("whalebox {SUBCOMMAND}: usage: SERVER_PID -- SHELL ARGS…");
        std::process::exit(2);
    };
    handle(Signal::SIGHUP, on_hangup);
    for sig in [
        Signal::SIGINT,
        Signal::SIGQUIT,
        Signal::SIGTSTP,
        Signal::SIGTERM,
    ] {
        handle(sig, on_ignored);
    }
    let _ = nix::sys::prctl::set_pdeathsig(Some(Signal::SIGHUP));
    let _ = nix::sys::prctl::set_child_subreaper(true);
    if getppid().as_raw() != server {
        // The server died before the parent-death signal was armed.
        std::process::exit(129);
    }
    // Opened before the task's Landlock layer, which leaves the cgroup tree read-only.
    let setup = match limits {
        Some(spec) => prepare_limits(spec),
        None => crate::guard::limits::ChildSetup::none(),
    };
    // A decision-server connection made ahead, where the server can still be named.
    let mut ahead = None;
    if let Some(spec) = join
        && join_session(spec, server)
    {
        if let Some(socket) = exec_gate {
            match crate::boundary::kernel::connect_ahead(std::path::Path::new(socket), server) {
                Ok(stream) => ahead = Some(stream),
                Err(why) => {
                    eprintln!(
                        "whalebox: the exec boundary could not be installed: {why}; not running the command"
                    );
                    std::process::exit(126);
                }
            }
        }
        enter_pid_namespace();
    }
    if let Some(spec) = sandbox {
        enter_sandbox(spec);
    }
    if socket_filter && let Err(e) = crate::net::sockets::install() {
        eprintln!(
            "whalebox: the network fence could not be installed: {e}; not running the command"
        );
        std::process::exit(126);
    }
    // Last, with every namespace joined (`setns`, which the deny list may refuse from
    // here on) and every layer entered: from here on nothing this process or the task
    // does can act beyond the fences (see `guard::machine`).
    if let Err(e) = crate::guard::machine::confine(machine) {
        eprintln!(
            "whalebox: the task's capabilities and system calls could not be limited ({e}); \
             not running the command"
        );
        std::process::exit(126);
    }
    let status = match exec_gate {
        Some(socket) => gated(
            shell,
            shell_args,
            method,
            crate::boundary::kernel::tracer::Options {
                server: Some(socket.into()),
                server_pid: Some(server),
                timeout: gate_timeout(),
                setup,
                debuggers,
                known,
                ahead,
            },
        ),
        None => plain(shell, shell_args, setup),
    };
    kill_everything();
    end_as(status)
}

/// Exit as the task's shell did: its exit code, or the same signal.
fn end_as(status: Status) -> ! {
    match status {
        Some(Ok(code)) => std::process::exit(code),
        Some(Err(sig)) => {
            let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
            // SAFETY: restoring the default disposition.
            let _ = unsafe { signal::sigaction(sig, &default) };
            let _ = signal::sigprocmask(
                signal::SigmaskHow::SIG_UNBLOCK,
                Some(&SigSet::from(sig)),
                None,
            );
            let _ = signal::raise(sig);
            std::process::exit(128 + sig as i32);
        }
        None => std::process::exit(126),
    }
}

/// Fork into the session's PID namespace (joined: only our children are born in it).
/// The child goes on as the supervisor, inside, where the task's pids, its `/proc` and
/// the exec gate agree, and where it inherits the task's orphans (a subreaper outside
/// the namespace does not: they would go to its first process). The parent stays
/// outside as the process the server knows: it relays the kill-everything request
/// (SIGHUP, its own death included) to the child and ends as the child does. Group
/// signals (SIGINT, SIGTERM) reach the child and the task directly: they stay in our
/// process group.
fn enter_pid_namespace() {
    use std::os::fd::AsFd;
    // Its write end closes when the parent dies: how the child tells, after arming its
    // parent-death signal, that the parent is already gone (getppid() is 0 inside).
    let (alive_r, alive_w) = match nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("whalebox: pipe: {e}; not running the command");
            std::process::exit(126);
        }
    };
    // SAFETY: single-threaded (the supervisor starts no thread before this).
    match unsafe { nix::unistd::fork() } {
        Ok(nix::unistd::ForkResult::Child) => {
            drop(alive_w);
            let _ = nix::sys::prctl::set_pdeathsig(Some(Signal::SIGHUP));
            let _ = nix::sys::prctl::set_child_subreaper(true);
            let mut poll = [nix::poll::PollFd::new(
                alive_r.as_fd(),
                nix::poll::PollFlags::POLLIN,
            )];
            if nix::poll::poll(&mut poll, nix::poll::PollTimeout::ZERO).is_ok_and(|n| n > 0) {
                // The parent is gone: so is the task's reason to run.
                std::process::exit(129);
            }
        }
        Ok(nix::unistd::ForkResult::Parent { child }) => {
            drop(alive_r);
            std::mem::forget(alive_w);
            relay(child)
        }
        Err(e) => {
            eprintln!(
                "whalebox: cannot start the task in its session ({e}); not running the command"
            );
            std::process::exit(126);
        }
    }
}

/// Outside the PID namespace: wait for the supervisor inside, pass it the
/// kill-everything request, and end as it did.
fn relay(inside: Pid) -> ! {
    let mut told = false;
    loop {
        if HANGUP.load(Ordering::SeqCst) && !told {
            let _ = signal::kill(inside, Signal::SIGHUP);
            told = true;
        }
        match waitpid(inside, None) {
            Ok(WaitStatus::Exited(_, code)) => std::process::exit(code),
            Ok(WaitStatus::Signaled(_, sig, _)) => end_as(Some(Err(sig))),
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => std::process::exit(126),
        }
    }
}

/// How the task's shell ended: an exit code, a signal, or None when it is unknown.
type Status = Option<Result<i32, Signal>>;

/// Start the shell as a plain child and wait for it.
fn plain(
    shell: &OsString,
    shell_args: &[OsString],
    setup: crate::guard::limits::ChildSetup,
) -> Status {
    use std::os::unix::process::CommandExt;
    let mut command = std::process::Command::new(shell);
    command.args(shell_args);
    // SAFETY: the closure makes system calls only (ChildSetup::enter, write, _exit).
    unsafe {
        command.pre_exec(move || {
            if let Err(why) = setup.enter() {
                for part in [
                    b"whalebox: ",
                    why.as_bytes(),
                    b"; not running the command\n",
                ] {
                    let _ = nix::unistd::write(std::io::stderr(), part);
                }
                nix::libc::_exit(126);
            }
            Ok(())
        })
    };
    let shell_pid = match command.spawn() {
        Ok(child) => Pid::from_raw(child.id() as i32),
        Err(e) => {
            eprintln!(
                "whalebox: cannot start the shell {}: {e}",
                shell.to_string_lossy()
            );
            std::process::exit(127);
        }
    };
    let mut status = None;
    loop {
        if HANGUP.load(Ordering::SeqCst) {
            kill_everything();
            std::process::exit(129);
        }
        match waitpid(None, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == shell_pid => {
                status = Some(Ok(code));
                break;
            }
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid == shell_pid => {
                status = Some(Err(sig));
                break;
            }
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => break,
        }
    }
    status
}

/// Start the shell under the kernel exec gate and serve its execs until it ends.
fn gated(
    shell: &OsString,
    shell_args: &[OsString],
    method: Option<crate::boundary::kernel::Method>,
    options: crate::boundary::kernel::tracer::Options,
) -> Status {
    use crate::boundary::kernel::tracer::End;
    // Not dumpable: no other user's process (a task's, should it run as another user)
    // may read or write the supervisor's memory or take its descriptors (the listener).
    // Root's are kept out by the task's own Landlock domain (see kernel::start).
    let _ = nix::sys::prctl::set_dumpable(false);
    match crate::boundary::kernel::run(shell, shell_args, method, &options, &|| {
        HANGUP.load(Ordering::SeqCst)
    }) {
        Ok(End::Exited(code)) => Some(Ok(code)),
        Ok(End::Signaled(sig)) => Some(Err(sig)),
        Ok(End::Hangup) => {
            kill_everything();
            std::process::exit(129);
        }
        Err(why) => {
            eprintln!(
                "whalebox: the exec boundary could not be installed: {why}; not running the command"
            );
            kill_everything();
            std::process::exit(126);
        }
    }
}

/// How long an exec may wait for its answer (`WHALEBOX_GATE_TIMEOUT_MS`; 2 minutes: an
/// `ask` waits for a person).
fn gate_timeout() -> Duration {
    let ms = std::env::var("WHALEBOX_GATE_TIMEOUT_MS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(120_000);
    Duration::from_millis(ms)
}

/// SIGKILL every process of the task, reaping them, until none is left. Our direct
/// children are enough to find them all: as a subreaper we inherit every orphan, so
/// killing a child turns its own children into ours for the next round.
fn kill_everything() {
    let me = getpid();
    let _ = signal::sigprocmask(signal::SigmaskHow::SIG_BLOCK, Some(&SigSet::all()), None);
    for _ in 0..200 {
        let victims = children_of(me);
        if victims.is_empty() {
            break;
        }
        for pid in &victims {
            let _ = signal::kill(*pid, Signal::SIGKILL);
        }
        while let Ok(st) = waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            if st == WaitStatus::StillAlive {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    while let Ok(st) = waitpid(None, Some(WaitPidFlag::WNOHANG)) {
        if st == WaitStatus::StillAlive {
            break;
        }
    }
}

fn children_of(pid: Pid) -> Vec<Pid> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for task in tasks.flatten() {
        if let Ok(list) = std::fs::read_to_string(task.path().join("children")) {
            out.extend(
                list.split_whitespace()
                    .filter_map(|p| p.parse().ok())
                    .map(Pid::from_raw),
            );
        }
    }
    out
}

/// The task's limits, ready for its first process; a bad value or a cgroup that
/// cannot be joined stops the task (exit 126).
fn prepare_limits(spec: &OsString) -> crate::guard::limits::ChildSetup {
    let parsed: Result<crate::guard::limits::TaskSetup, String> = spec
        .to_str()
        .ok_or_else(|| "not UTF-8".to_string())
        .and_then(|s| serde_json::from_str(s).map_err(|e| e.to_string()));
    match parsed.and_then(|setup| setup.prepare()) {
        Ok(setup) => setup,
        Err(e) => {
            eprintln!(
                "whalebox: the task's resource limits cannot be set ({e}); not running the command"
            );
            std::process::exit(126);
        }
    }
}

/// The session's namespaces, before the task's Landlock layer (which is then built
/// inside them: its `/dev/shm` is the session's). True: a PID namespace was joined.
fn join_session(spec: &OsString, server: i32) -> bool {
    match join_namespaces(spec, server) {
        Ok(pid) => pid,
        Err(why) => {
            eprintln!(
                "whalebox: the session's namespaces could not be joined: {why}; not running the command"
            );
            std::process::exit(126);
        }
    }
}

/// Join the namespaces of the session whose `--join` value is `spec`, asked of the
/// server (pid `server`) on the session's socket. Call it single-threaded: a mount
/// namespace cannot be joined by a thread that shares its file system view. Ok(true):
/// a PID namespace was joined (it holds the caller's children from then on).
pub(crate) fn join_namespaces(spec: &OsString, server: i32) -> Result<bool, String> {
    let join: Join = spec
        .to_str()
        .ok_or_else(|| "not UTF-8".to_string())
        .and_then(|s| serde_json::from_str(s).map_err(|e| e.to_string()))
        .map_err(|e| format!("a bad {JOIN_FLAG} value ({e})"))?;
    let namespaces = std::os::unix::net::UnixStream::connect(&join.socket)
        .map_err(|e| {
            format!(
                "cannot reach the session's socket {}: {e}",
                join.socket.display()
            )
        })
        .and_then(|mut conn| {
            use std::io::Write;
            // Whoever listens there must be the server (a task may have replaced the file).
            let peer =
                nix::sys::socket::getsockopt(&conn, nix::sys::socket::sockopt::PeerCredentials)
                    .map_err(|e| format!("who answers on the session's socket: {e}"))?;
            if peer.pid() != server {
                return Err(format!(
                    "the session's socket is answered by process {}, not the server ({server})",
                    peer.pid()
                ));
            }
            let _ = conn.set_read_timeout(Some(std::time::Duration::from_secs(10)));
            conn.write_all(format!("{}\n", join.token).as_bytes())
                .map_err(|e| format!("asking for the namespaces: {e}"))?;
            crate::guard::spaces::receive_namespaces(&conn)
        })
        .and_then(|n| crate::guard::spaces::verify(&n, &join.expect).map(|()| n));
    namespaces.and_then(|n| crate::guard::spaces::join(&n))
}

/// The task's own Landlock layer, on top of whatever the server has: the same paths,
/// plus network and scopes. In enforce mode a layer that cannot be applied stops the
/// task (exit 126); in best-effort mode the command runs (the status says why).
fn enter_sandbox(spec: &OsString) {
    use crate::guard::landlock::{Layer, Sandbox};
    let parsed: Result<Sandbox, String> = spec
        .to_str()
        .ok_or_else(|| "not UTF-8".to_string())
        .and_then(|s| serde_json::from_str(s).map_err(|e| e.to_string()));
    let sandbox = match parsed {
        Ok(s) => s,
        Err(e) => {
            eprintln!("whalebox: a bad sandbox for this task ({e}); not running it");
            std::process::exit(126);
        }
    };
    // Best-effort refusals come back as a status, already reported by the server.
    if let Err(e) = sandbox.apply(Layer::Task) {
        eprintln!("whalebox: {e}; not running the command");
        std::process::exit(126);
    }
}
