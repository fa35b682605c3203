//! The zygote: one small process per server (`whalebox __zygote SERVER_PID`), exec'd once
//! on the spawner thread, from which each pipe task's supervisor is forked instead of
//! exec'd. Exec'ing whalebox costs about 1.6 ms on the 2-core VM (the loader, glibc's
//! CPU probing, which traps to the hypervisor, and Rust's start), more than the whole
//! budget of `shell_run true`; forking the single-threaded zygote costs a tenth of that.
//!
//! The fork is a `clone` with `CLONE_PARENT`, so the supervisor is the server's own child,
//! exactly as an exec'd one: the task's waiter reaps it, its parent-death signal follows
//! the spawner thread, and `getppid()` is the server. The zygote passes on the request
//! and the task's three standard descriptors (SCM_RIGHTS), and answers with the pid.
//! Where the zygote cannot run or a request does not fit in one message, the caller
//! execs the supervisor as before (see `spawn`).

use std::ffi::OsString;
use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use nix::libc;
use nix::sys::socket::{
    AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags, SockFlag, SockType, recvmsg,
    sendmsg, socketpair,
};

/// The hidden subcommand that runs [`main`].
pub const SUBCOMMAND: &str = "__zygote";
/// The largest request (a command line, a sandbox and the environment); larger ones are
/// exec'd as before.
const MAX_REQUEST: usize = 128 * 1024;

/// What the zygote starts: the supervisor's arguments, environment and directory.
struct Request {
    cwd: Vec<u8>,
    args: Vec<Vec<u8>>,
    env: Vec<Vec<u8>>,
}

fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

impl Request {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put(&mut out, &self.cwd);
        out.extend_from_slice(&(self.args.len() as u32).to_le_bytes());
        for a in &self.args {
            put(&mut out, a);
        }
        out.extend_from_slice(&(self.env.len() as u32).to_le_bytes());
        for e in &self.env {
            put(&mut out, e);
        }
        out
    }

    fn decode(mut bytes: &[u8]) -> Option<Request> {
        let u32_of = |b: &mut &[u8]| -> Option<usize> {
            let (head, rest) = b.split_at_checked(4)?;
            *b = rest;
            Some(u32::from_le_bytes(head.try_into().ok()?) as usize)
        };
        let field = |b: &mut &[u8]| -> Option<Vec<u8>> {
            let n = u32_of(b)?;
            let (head, rest) = b.split_at_checked(n)?;
            *b = rest;
            Some(head.to_vec())
        };
        let cwd = field(&mut bytes)?;
        let n = u32_of(&mut bytes)?;
        let args = (0..n).map(|_| field(&mut bytes)).collect::<Option<_>>()?;
        let n = u32_of(&mut bytes)?;
        let env = (0..n).map(|_| field(&mut bytes)).collect::<Option<_>>()?;
        Some(Request { cwd, args, env })
    }
}

/// The server's end of the zygote.
struct Zygote {
    socket: OwnedFd,
    _child: std::process::Child,
}

fn zygote() -> &'static Mutex<Option<Zygote>> {
    static ZYGOTE: OnceLock<Mutex<Option<Zygote>>> = OnceLock::new();
    ZYGOTE.get_or_init(|| Mutex::new(None))
}

fn start() -> std::io::Result<Zygote> {
    let (ours, theirs) = socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )?;
    let child = std::process::Command::new(std::env::current_exe()?)
        .arg(SUBCOMMAND)
        .arg(std::process::id().to_string())
        .env_clear()
        .stdin(std::process::Stdio::from(theirs))
        .stdout(std::process::Stdio::null())
        .spawn()?;
    Ok(Zygote {
        socket: ours,
        _child: child,
    })
}

/// Start the supervisor `args` (what follows `whalebox`) through the zygote, with `fds`
/// as its stdin, stdout and stderr, in its own process group. Must run on the spawner
/// thread (the parent-death signal follows it). None: the zygote cannot do it (the
/// caller execs the supervisor instead).
pub fn spawn(
    args: &[OsString],
    env: &[(String, String)],
    cwd: &Path,
    fds: [BorrowedFd<'_>; 3],
) -> Option<i32> {
    let request = Request {
        cwd: cwd.as_os_str().as_bytes().to_vec(),
        args: args.iter().map(|a| a.as_bytes().to_vec()).collect(),
        env: env
            .iter()
            .map(|(k, v)| format!("{k}={v}").into_bytes())
            .collect(),
    }
    .encode();
    if request.len() > MAX_REQUEST {
        return None;
    }
    let mut slot = zygote().lock().ok()?;
    if slot.is_none() {
        *slot = start().ok();
    }
    let z = slot.as_ref()?;
    let raw: Vec<RawFd> = fds.iter().map(|f| f.as_raw_fd()).collect();
    let asked = sendmsg::<()>(
        z.socket.as_raw_fd(),
        &[IoSlice::new(&request)],
        &[ControlMessage::ScmRights(&raw)],
        MsgFlags::empty(),
        None,
    );
    let mut answer = [0u8; 4];
    let answered = asked.is_ok()
        && nix::sys::socket::recv(z.socket.as_raw_fd(), &mut answer, MsgFlags::empty())
            .is_ok_and(|n| n == 4);
    if !answered {
        // The zygote is gone: the next spawn starts another.
        *slot = None;
        return None;
    }
    let pid = i32::from_le_bytes(answer);
    (pid > 0).then_some(pid)
}

/// Run as the zygote: `args` are what follows the subcommand (the server's pid). Its
/// stdin is the socket to the server.
pub fn main(args: Vec<OsString>) -> ! {
    let server: Option<i32> = args.first().and_then(|s| s.to_str()?.parse().ok());
    let _ = nix::sys::prctl::set_pdeathsig(Some(nix::sys::signal::Signal::SIGKILL));
    if server != Some(nix::unistd::getppid().as_raw()) {
        std::process::exit(2);
    }
    let mut buf = vec![0u8; MAX_REQUEST];
    loop {
        let mut space = nix::cmsg_space!([RawFd; 3]);
        let (n, fds) = {
            let mut iov = [IoSliceMut::new(&mut buf)];
            match recvmsg::<()>(0, &mut iov, Some(&mut space), MsgFlags::MSG_CMSG_CLOEXEC) {
                Ok(msg) if msg.bytes > 0 => {
                    let mut fds = Vec::new();
                    if let Ok(cmsgs) = msg.cmsgs() {
                        for c in cmsgs {
                            if let ControlMessageOwned::ScmRights(f) = c {
                                fds.extend(f);
                            }
                        }
                    }
                    (msg.bytes, fds)
                }
                Ok(_) => std::process::exit(0),
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => std::process::exit(0),
            }
        };
        // SAFETY: SCM_RIGHTS gave us these descriptors.
        let fds: Vec<OwnedFd> = fds
            .into_iter()
            .map(|f| unsafe { OwnedFd::from_raw_fd(f) })
            .collect();
        let pid = match (Request::decode(&buf[..n]), fds.len()) {
            (Some(request), 3) => fork_supervisor(&request, &fds),
            _ => -libc::EINVAL,
        };
        drop(fds);
        let _ = nix::sys::socket::send(0, &pid.to_le_bytes(), MsgFlags::empty());
    }
}

/// Clone a supervisor for `request` as the server's child; its pid, or -errno.
fn fork_supervisor(request: &Request, fds: &[OwnedFd]) -> i32 {
    // SAFETY: a raw clone without a new stack behaves as fork; the zygote is
    // single-threaded. glibc's fork bookkeeping is skipped: nothing the supervisor
    // uses depends on it (raise() asks the kernel for its thread id, Rust's locks are
    // its own), and its own children are made with glibc's fork.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            (libc::CLONE_PARENT | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    if pid < 0 {
        return -nix::errno::Errno::last_raw();
    }
    if pid > 0 {
        return pid as i32;
    }
    // The child: the task's descriptors as 0, 1 and 2 (replacing the socket), its own
    // process group, directory and environment; then the supervisor.
    for (target, fd) in fds.iter().enumerate() {
        // SAFETY: dup2 onto the standard descriptors.
        if unsafe { libc::dup2(fd.as_raw_fd(), target as i32) } < 0 {
            // SAFETY: leaving the child.
            unsafe { libc::_exit(126) };
        }
    }
    for fd in fds {
        if fd.as_raw_fd() > 2 {
            // SAFETY: our copy; the OwnedFd is never dropped here (the child ends in
            // the supervisor's exit).
            unsafe { libc::close(fd.as_raw_fd()) };
        }
    }
    // SAFETY: setpgid and chdir with plain arguments.
    unsafe { libc::setpgid(0, 0) };
    let cwd = std::ffi::CString::new(request.cwd.clone()).unwrap_or_default();
    if unsafe { libc::chdir(cwd.as_ptr()) } != 0 {
        let _ = nix::unistd::write(
            std::io::stderr(),
            format!(
                "whalebox: cannot enter {}: {}\n",
                String::from_utf8_lossy(&request.cwd),
                std::io::Error::last_os_error()
            )
            .as_bytes(),
        );
        // SAFETY: leaving the child.
        unsafe { libc::_exit(126) };
    }
    for (key, _) in std::env::vars_os() {
        // SAFETY: this process has one thread.
        unsafe { std::env::remove_var(key) };
    }
    for kv in &request.env {
        if let Some(eq) = kv.iter().position(|b| *b == b'=') {
            let (k, v) = (&kv[..eq], &kv[eq + 1..]);
            // SAFETY: this process has one thread.
            unsafe {
                std::env::set_var(
                    std::ffi::OsStr::from_bytes(k),
                    std::ffi::OsStr::from_bytes(v),
                )
            };
        }
    }
    let args: Vec<OsString> = request
        .args
        .iter()
        .cloned()
        .map(OsString::from_vec)
        .collect();
    // args[0] is the supervisor's subcommand.
    super::supervisor::main(args.into_iter().skip(1).collect())
}
