//! Which program of a task opened a connection to its proxy door: the socket's inode
//! from the task's own `/proc/PID/net/tcp` (the table of the task's network namespace,
//! or the machine's), the process among the task's that holds it, and the programs from
//! the task's first one down to it (`zsh → make → curl`), for the audit record and the
//! result. Looked up when the connection is accepted, while the program still runs.
//! Best effort: a process that exited or hid its descriptors is simply not named.

use std::net::SocketAddr;

/// The chain of program names, first (the shell) to last (the one connecting), of the
/// task whose supervisor is `supervisor`, for the connection from `peer` to `door`.
pub fn chain(supervisor: i32, peer: SocketAddr, door: SocketAddr) -> Option<Vec<String>> {
    let inode = socket_inode(supervisor, peer, door)?;
    let holder = descendants(supervisor)
        .into_iter()
        .find(|pid| holds(*pid, inode))?;
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

/// `/proc/PID/net/tcp{,6}`'s line whose local end is `peer` and remote end `door`.
fn socket_inode(pid: i32, peer: SocketAddr, door: SocketAddr) -> Option<u64> {
    let table = if peer.is_ipv4() { "tcp" } else { "tcp6" };
    let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).ok()?;
    let (local, remote) = (hex_addr(peer), hex_addr(door));
    text.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        (fields.get(1)? == &local && fields.get(2)? == &remote)
            .then(|| fields.get(9)?.parse().ok())
            .flatten()
    })
}

/// An address as the kernel prints it there: the IP's bytes as native-endian 32-bit
/// words in hex, a colon, the port in hex.
fn hex_addr(a: SocketAddr) -> String {
    let ip = match a {
        SocketAddr::V4(v4) => format!("{:08X}", u32::from_ne_bytes(v4.ip().octets())),
        SocketAddr::V6(v6) => v6
            .ip()
            .octets()
            .chunks(4)
            .map(|w| format!("{:08X}", u32::from_ne_bytes([w[0], w[1], w[2], w[3]])))
            .collect(),
    };
    format!("{ip}:{:04X}", a.port())
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

fn holds(pid: i32, inode: u64) -> bool {
    let wanted = format!("socket:[{inode}]");
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.flatten().any(|fd| {
                std::fs::read_link(fd.path())
                    .map(|l| l.as_os_str() == wanted.as_str())
                    .unwrap_or(false)
            })
        })
        .unwrap_or(false)
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
    fn addresses_print_as_the_kernel_prints_them() {
        let a: SocketAddr = "127.0.0.1:3128".parse().unwrap();
        assert_eq!(hex_addr(a), "0100007F:0C38");
    }

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
