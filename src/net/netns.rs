//! The strongest network fence: a task in its own network namespace, where the only
//! interface is its own loopback and the only way out is the proxy.
//!
//! The task's supervisor, before anything of the task runs, moves into a new network
//! namespace (as root a bare `CLONE_NEWNET`; otherwise inside a new user namespace that
//! maps only its own uid and gid), brings `lo` up, binds a TCP listener on the
//! namespace's 127.0.0.1:PORT and hands that listener to the server over a pathname unix
//! socket in the server's private directory (`SCM_RIGHTS`). The server accepts on it and
//! proxies: a socket keeps the namespace it was made in, so no forwarder runs in the
//! task and no byte is copied twice. The namespace has no route anywhere else: TCP to
//! any other address, UDP (DNS included) and raw sockets find no network.

use std::io::{IoSlice, IoSliceMut, Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use nix::libc;
use nix::sched::{CloneFlags, unshare};
use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags, recvmsg, sendmsg};

/// Longest token accepted in a hand-over.
const MAX_TOKEN: usize = 128;

/// How the namespace was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Made {
    /// `CLONE_NEWNET` alone (the process may administer namespaces: root).
    NetOnly,
    /// A user namespace mapping the caller's own uid and gid, and a network namespace
    /// in it (unprivileged).
    WithUser,
}

/// Move the calling (single-threaded) process into a new network namespace with `lo`
/// up.
pub fn enter() -> Result<Made, String> {
    let made = match unshare(CloneFlags::CLONE_NEWNET) {
        Ok(()) => Made::NetOnly,
        Err(first) => {
            // SAFETY: getuid and getgid cannot fail.
            let uid = unsafe { libc::getuid() };
            let gid = unsafe { libc::getgid() };
            unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET).map_err(|e| {
                format!(
                    "cannot make a network namespace: unshare(CLONE_NEWNET): {first}; \
                     with a user namespace: {e} (unprivileged user namespaces are off here)"
                )
            })?;
            // Without "deny", an unprivileged process may not write a gid map.
            // Opened for writing only (no O_TRUNC, which Landlock would check apart).
            let write = |file: &str, text: String| {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(format!("/proc/self/{file}"))
                    .and_then(|mut f| f.write_all(text.as_bytes()))
                    .map_err(|e| format!("writing /proc/self/{file}: {e}"))
            };
            write("setgroups", "deny".into())?;
            write("uid_map", format!("{uid} {uid} 1"))?;
            write("gid_map", format!("{gid} {gid} 1"))?;
            Made::WithUser
        }
    };
    loopback_up()?;
    Ok(made)
}

/// `ip link set lo up`, by the ioctl.
fn loopback_up() -> Result<(), String> {
    // SAFETY: plain socket and ioctl calls on a zeroed, NUL-terminated ifreq.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(format!(
                "socket for lo: {}",
                std::io::Error::last_os_error()
            ));
        }
        let fd = OwnedFd::from_raw_fd(fd);
        let mut req: libc::ifreq = std::mem::zeroed();
        for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
            *dst = *src as libc::c_char;
        }
        if libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) < 0 {
            return Err(format!(
                "reading lo's flags: {}",
                std::io::Error::last_os_error()
            ));
        }
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(fd.as_raw_fd(), libc::SIOCSIFFLAGS, &req) < 0 {
            return Err(format!(
                "bringing lo up: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// In the namespace: bind 127.0.0.1:`port`, send the listener with `token` to the
/// server at `socket`, and wait for its acknowledgement (so the door is served before
/// the task's first connection is refused for want of one).
pub fn hand_over(socket: &Path, token: &str, port: u16) -> Result<(), String> {
    let listener = TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))
        .map_err(|e| format!("binding the proxy's port {port} in the namespace: {e}"))?;
    let mut conn = UnixStream::connect(socket).map_err(|e| {
        format!(
            "cannot reach the network hand-over socket {}: {e}",
            socket.display()
        )
    })?;
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    let fds = [listener.as_raw_fd()];
    let iov = [IoSlice::new(token.as_bytes())];
    sendmsg::<()>(
        conn.as_raw_fd(),
        &iov,
        &[ControlMessage::ScmRights(&fds)],
        MsgFlags::empty(),
        None,
    )
    .map_err(|e| format!("handing the listener over: {e}"))?;
    let mut ack = [0u8; 1];
    match conn.read(&mut ack) {
        Ok(1) if ack[0] == b'+' => Ok(()),
        Ok(_) => Err("the server refused the network hand-over".into()),
        Err(e) => Err(format!("no answer to the network hand-over: {e}")),
    }
}

/// On the server: read one hand-over from `conn` (blocking, bounded by the socket's
/// read timeout): the token and the listener.
pub fn receive(conn: &mut UnixStream) -> Result<(String, TcpListener), String> {
    let mut buf = [0u8; MAX_TOKEN];
    let mut space = nix::cmsg_space!([RawFd; 1]);
    let (n, fd) = {
        let mut iov = [IoSliceMut::new(&mut buf)];
        let msg = recvmsg::<()>(
            conn.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        )
        .map_err(|e| format!("recvmsg: {e}"))?;
        let mut fd = None;
        for cmsg in msg.cmsgs().map_err(|e| format!("control message: {e}"))? {
            if let ControlMessageOwned::ScmRights(fds) = cmsg {
                for f in fds {
                    // SAFETY: the kernel just installed this descriptor for us.
                    let owned = unsafe { OwnedFd::from_raw_fd(f) };
                    if fd.is_none() {
                        fd = Some(owned);
                    }
                }
            }
        }
        (msg.bytes, fd)
    };
    let fd = fd.ok_or("a hand-over without a descriptor")?;
    let token = std::str::from_utf8(&buf[..n])
        .map_err(|_| "a token that is not UTF-8")?
        .to_string();
    // It must be a listening TCP socket, or accept() on it means nothing.
    let listener = TcpListener::from(fd);
    listener
        .local_addr()
        .map_err(|e| format!("the descriptor is not a TCP socket: {e}"))?;
    let mut accepting: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt into a c_int of the right size.
    let ok = unsafe {
        libc::getsockopt(
            listener.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ACCEPTCONN,
            (&mut accepting as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if ok != 0 || accepting == 0 {
        return Err("the descriptor is not a listening socket".into());
    }
    Ok((token, listener))
}

/// Answer a hand-over: `+` served, `-` refused.
pub fn acknowledge(conn: &mut UnixStream, served: bool) {
    let _ = conn.write_all(if served { b"+" } else { b"-" });
}

/// Whether a task could get its own network namespace here: a child process tries it
/// (and `lo`), and says. Err: why not.
pub fn probe() -> Result<Made, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find whalebox itself: {e}"))?;
    let out = std::process::Command::new(exe)
        .arg(PROBE_SUBCOMMAND)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run the probe: {e}"))?;
    let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
    match said.as_str() {
        "net" => Ok(Made::NetOnly),
        "user" => Ok(Made::WithUser),
        _ if said.is_empty() => Err(format!(
            "the probe ended without an answer ({})",
            out.status
        )),
        why => Err(why.to_string()),
    }
}

/// The hidden subcommand [`probe`] runs.
pub const PROBE_SUBCOMMAND: &str = "__netns-probe";

/// Body of the probe subcommand: try, print the answer, exit.
pub fn probe_main() -> ! {
    let answer = match enter() {
        Ok(Made::NetOnly) => "net".to_string(),
        Ok(Made::WithUser) => "user".to_string(),
        Err(e) => e,
    };
    println!("{answer}");
    std::process::exit(0)
}
