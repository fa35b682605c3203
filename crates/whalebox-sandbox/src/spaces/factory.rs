//! The factory: one small process per server (`whalebox __spaces SERVER_PID`), started
//! before the server enters its Landlock fences, that forks a holder for each session
//! that asks. It runs nothing but this loop: a request names what to make, the answer
//! carries the holder's pid and the server's end of a socket pair to it.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use nix::libc;
use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};

use super::holder::{self, Spaces};
use super::{Wanted, wire};

/// The hidden subcommand that runs [`main`].
pub const SUBCOMMAND: &str = "__spaces";

/// The server's end of the factory.
pub struct Factory {
    socket: Mutex<OwnedFd>,
    child: Mutex<std::process::Child>,
}

impl std::fmt::Debug for Factory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Factory")
    }
}

impl Drop for Factory {
    fn drop(&mut self) {
        if let Ok(child) = self.child.get_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Factory {
    /// Start the factory from `exe` (this binary). Call before entering Landlock: what
    /// it forks may mount.
    pub fn start(exe: &Path) -> std::io::Result<Factory> {
        let (ours, theirs) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )?;
        let child = std::process::Command::new(exe)
            .arg(SUBCOMMAND)
            .arg(std::process::id().to_string())
            .env_clear()
            .current_dir("/")
            .stdin(std::process::Stdio::from(theirs))
            .stdout(std::process::Stdio::null())
            .spawn()?;
        wire::set_timeout(&ours, 10);
        Ok(Factory {
            socket: Mutex::new(ours),
            child: Mutex::new(child),
        })
    }

    /// Make a session's namespaces. Err: the factory or the holder failed outright
    /// (what could not be made is in [`Spaces::why_not`] instead).
    pub fn make(&self, wanted: &Wanted) -> Result<Spaces, String> {
        use std::os::unix::ffi::OsStrExt;
        // 'M', a byte of flags, then the /dev/shm directory (empty: none) and the
        // sockets to hide, each after a NUL (paths hold none).
        let flags =
            u8::from(wanted.network) | u8::from(wanted.pid) << 1 | u8::from(wanted.terminals) << 2;
        let mut request = vec![b'M', flags];
        if let Some(shm) = &wanted.shm {
            request.extend_from_slice(shm.as_os_str().as_bytes());
        }
        if request.len() > wire::MAX_MESSAGE {
            return Err("the session's /dev/shm directory has too long a path".into());
        }
        for socket in &wanted.hide {
            let bytes = socket.as_os_str().as_bytes();
            if request.len() + 1 + bytes.len() > wire::MAX_MESSAGE {
                tracing_free_warning(socket);
                break;
            }
            request.push(0);
            request.extend_from_slice(bytes);
        }
        let socket = self
            .socket
            .lock()
            .map_err(|_| "the namespace factory's lock is poisoned".to_string())?;
        wire::send(&*socket, &request, &[])
            .map_err(|e| format!("the namespace factory is gone: {e}"))?;
        let (answer, mut fds) = wire::receive(&*socket, 1)
            .map_err(|e| format!("no answer from the namespace factory: {e}"))?;
        drop(socket);
        match (answer.split_first(), fds.pop()) {
            (Some((b'+', pid)), Some(fd)) => {
                let pid = std::str::from_utf8(pid)
                    .ok()
                    .and_then(|p| p.parse().ok())
                    .unwrap_or(0);
                holder::greet(fd, pid)
            }
            (Some((b'-', why)), _) => Err(String::from_utf8_lossy(why).into_owned()),
            _ => Err("the namespace factory answered nothing".into()),
        }
    }
}

/// Sockets past what one request carries stay visible (hundreds of listening sockets).
fn tracing_free_warning(socket: &std::path::Path) {
    eprintln!(
        "whalebox: too many listening unix sockets to hide in the session; {} and those after it stay reachable",
        socket.display()
    );
}

/// Run as the factory: `args` are what follows the subcommand (the server's pid). Its
/// stdin is the socket to the server.
pub fn main(args: Vec<std::ffi::OsString>) -> ! {
    let server: Option<i32> = args.first().and_then(|s| s.to_str()?.parse().ok());
    let _ = nix::sys::prctl::set_pdeathsig(Some(nix::sys::signal::Signal::SIGKILL));
    if server != Some(nix::unistd::getppid().as_raw()) {
        std::process::exit(2);
    }
    let _ = nix::sys::prctl::set_dumpable(false);
    // Holders end unwaited-for: let the kernel reap them.
    // SAFETY: ignoring SIGCHLD; no handler runs.
    unsafe { libc::signal(libc::SIGCHLD, libc::SIG_IGN) };
    // SAFETY: fd 0 is the socket the server gave us.
    let server_socket = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(0) };
    loop {
        let (request, _) = match wire::receive(&server_socket, 0) {
            Ok((r, _)) if r.is_empty() => std::process::exit(0),
            Ok(r) => r,
            Err(_) => std::process::exit(0),
        };
        let answer = match request.split_first() {
            Some((b'M', rest)) if !rest.is_empty() => {
                use std::os::unix::ffi::OsStrExt;
                let mut parts = rest[1..].split(|b| *b == 0);
                let path = |p: &[u8]| PathBuf::from(std::ffi::OsStr::from_bytes(p));
                let wanted = Wanted {
                    network: rest[0] & 1 != 0,
                    pid: rest[0] & 2 != 0,
                    terminals: rest[0] & 4 != 0,
                    ipc: rest[0] & 8 != 0,
                    shm: parts.next().filter(|p| !p.is_empty()).map(path),
                    hide: parts.filter(|p| !p.is_empty()).map(path).collect(),
                };
                fork_holder(&server_socket, &wanted)
            }
            _ => Err("a request the factory does not know".to_string()),
        };
        let sent = match answer {
            Ok((pid, fd)) => {
                wire::send(&server_socket, format!("+{pid}").as_bytes(), &[fd.as_fd()])
            }
            Err(why) => wire::send(&server_socket, format!("-{why}").as_bytes(), &[]),
        };
        if sent.is_err() {
            std::process::exit(0);
        }
    }
}

/// Fork a holder for `wanted`: its pid and the server's end of the pair.
fn fork_holder(server_socket: &OwnedFd, wanted: &Wanted) -> Result<(i32, OwnedFd), String> {
    let (ours, theirs) = socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .map_err(|e| format!("socketpair: {e}"))?;
    // SAFETY: the factory is single-threaded; the child runs the holder and exits.
    match unsafe { nix::unistd::fork() } {
        Err(e) => Err(format!("fork: {e}")),
        Ok(nix::unistd::ForkResult::Child) => {
            // SAFETY: the child's copies of the server's socket and our end.
            unsafe {
                libc::close(server_socket.as_raw_fd());
                libc::close(ours.as_raw_fd());
            }
            std::mem::forget(ours);
            holder::main(theirs, wanted)
        }
        Ok(nix::unistd::ForkResult::Parent { child }) => {
            drop(theirs);
            Ok((child.as_raw(), ours))
        }
    }
}
