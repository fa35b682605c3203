//! Which program of a task opened a connection to its proxy door: among the task's
//! processes, the one holding a socket whose local address is the connection's client
//! address (each socket descriptor is copied over with `pidfd_getfd` and asked with
//! `getsockname`: microseconds, where reading `/proc/PID/net/tcp` walks the kernel's
//! whole connection table, milliseconds), and the programs from the task's first one
//! down to it (`zsh → make → curl`), for the audit record and the result. Looked up
//! while the connection is served, so the program is still there. Best effort: a
//! process that exited, or one the kernel will not let us look into, is not named.

use std::net::SocketAddr;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use nix::libc;

/// The chain of program names, first (the shell) to last (the one connecting), of the
/// task whose supervisor is `supervisor`, for the connection whose client end is `peer`.
pub fn chain(supervisor: i32, peer: SocketAddr, _door: SocketAddr) -> Option<Vec<String>> {
    let holder = descendants(supervisor)
        .into_iter()
        .find(|pid| holds(*pid, peer))?;
    let mut names = Vec::new();
    let mut pid = holder;
    for _ in 0..64 {
        if pid == supervisor || pid <= 1 {
            break;
        }
        names.push(comm(pid)?);
        pid = parent(pid)?;
    }
    names.reverse();
    Some(names)
}

/// Whether one of `pid`'s socket descriptors is bound to `addr`.
fn holds(pid: i32, addr: SocketAddr) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    // SAFETY: pidfd_open with a pid and no flags; the result is checked.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as RawFd;
    if pidfd < 0 {
        return false;
    }
    // SAFETY: a descriptor the kernel just gave us, closed when dropped.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
    use std::os::fd::AsRawFd;
    fds.flatten().any(|fd| {
        let is_socket = std::fs::read_link(fd.path())
            .map(|l| l.to_string_lossy().starts_with("socket:"))
            .unwrap_or(false);
        let Some(n) = fd.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            return false;
        };
        if !is_socket {
            return false;
        }
        // SAFETY: pidfd_getfd with valid descriptors and no flags; the result is checked.
        let copy = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), n, 0) };
        if copy < 0 {
            return false;
        }
        // SAFETY: a descriptor the kernel just gave us, closed when dropped.
        let copy = unsafe { OwnedFd::from_raw_fd(copy as RawFd) };
        local_addr(copy) == Some(addr)
    })
}

/// The socket's own address (getsockname, through std; dropping it closes our copy).
fn local_addr(fd: OwnedFd) -> Option<SocketAddr> {
    std::net::TcpStream::from(fd).local_addr().ok()
}

/// The processes under `pid` (its children, theirs, …), breadth first.
fn descendants(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let mut queue = vec![pid];
    while let Some(p) = queue.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            if let Ok(list) = std::fs::read_to_string(t.path().join("children")) {
                for c in list.split_whitespace().filter_map(|c| c.parse().ok()) {
                    if out.len() < 4096 && !out.contains(&c) {
                        out.push(c);
                        queue.push(c);
                    }
                }
            }
        }
    }
    out
}

fn comm(pid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|c| c.trim_end().to_string())
}

/// The parent from `/proc/PID/stat` (the field after the command's closing paren).
fn parent(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_holding_a_connection_is_found_with_its_chain() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let door = listener.local_addr().unwrap();
        // sh (our child) runs python, which connects and waits.
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "python3 -c 'import socket, time; s = socket.create_connection((\"127.0.0.1\", {})); time.sleep(5)'; true",
                door.port()
            ))
            .spawn()
            .unwrap();
        let (_conn, peer) = listener.accept().unwrap();
        let me = std::process::id() as i32;
        let found = chain(me, peer, door);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(found, Some(vec!["sh".to_string(), "python3".to_string()]));
    }
}
