//! A session's holder: the process that makes the session's namespaces and lives in
//! them (so they outlast every task), and the server's handle on it, [`Spaces`].
//!
//! Its first message says what it made (`u`, `n`, `m`), why anything wanted was not
//! made, and carries the namespaces' descriptors. Then it answers requests, one message
//! each way: `L` + ports (u16, little-endian): a listener on the first of them free on
//! the namespace's 127.0.0.1 (port 0: any), answered `+` + the port and the listener;
//! `C` + a port: a connection to the namespace's 127.0.0.1:PORT, answered `+` and the
//! socket. A failure is `-` and why. The end of the server's socket ends the holder.

use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Mutex;

use nix::mount::{MsFlags, mount};
use nix::sched::CloneFlags;

use super::{Kind, Made, Wanted, enter, loopback_up, wire};

/// A session's namespaces, as the server holds them.
pub struct Spaces {
    socket: Mutex<OwnedFd>,
    pid: i32,
    made: Made,
    why_not: Vec<String>,
    namespaces: Vec<(Kind, OwnedFd)>,
}

impl std::fmt::Debug for Spaces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spaces")
            .field("pid", &self.pid)
            .field("made", &self.made)
            .field("why_not", &self.why_not)
            .finish()
    }
}

impl Spaces {
    pub fn made(&self) -> Made {
        self.made
    }

    /// What was wanted and could not be made, and why.
    pub fn why_not(&self) -> &[String] {
        &self.why_not
    }

    /// The holder's pid.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// What each namespace is, for the supervisors to check what they are handed.
    pub fn identities(&self) -> Vec<super::Identity> {
        self.namespaces
            .iter()
            .filter_map(|(k, fd)| super::Identity::of(*k, fd).ok())
            .collect()
    }

    /// The namespaces a task joins, for [`super::send_namespaces`].
    pub fn namespaces(&self) -> Vec<(Kind, BorrowedFd<'_>)> {
        self.namespaces
            .iter()
            .map(|(k, fd)| (*k, fd.as_fd()))
            .collect()
    }

    /// A listener on the namespace's 127.0.0.1, on the first of `ports` that is free
    /// there (`[0]`: any port).
    pub fn listen(&self, ports: &[u16]) -> std::io::Result<TcpListener> {
        let mut request = vec![b'L'];
        for p in ports {
            request.extend_from_slice(&p.to_le_bytes());
        }
        let fd = self.ask(&request)?;
        Ok(TcpListener::from(fd))
    }

    /// A connection to the namespace's 127.0.0.1:`port` (a server a task runs there).
    pub fn connect(&self, port: u16) -> std::io::Result<TcpStream> {
        let mut request = vec![b'C'];
        request.extend_from_slice(&port.to_le_bytes());
        let fd = self.ask(&request)?;
        Ok(TcpStream::from(fd))
    }

    fn ask(&self, request: &[u8]) -> std::io::Result<OwnedFd> {
        let socket = self
            .socket
            .lock()
            .map_err(|_| std::io::Error::other("the namespace holder's lock is poisoned"))?;
        wire::send(&*socket, request, &[])?;
        let (answer, mut fds) = wire::receive(&*socket, 1)?;
        match (answer.first(), fds.pop()) {
            (Some(b'+'), Some(fd)) => Ok(fd),
            (Some(b'-'), _) => {
                let why = String::from_utf8_lossy(&answer[1..]).into_owned();
                let kind = if why.contains("refused") {
                    ErrorKind::ConnectionRefused
                } else if why.contains("in use") {
                    ErrorKind::AddrInUse
                } else {
                    ErrorKind::Other
                };
                Err(std::io::Error::new(kind, why))
            }
            _ => Err(std::io::Error::other(
                "the session's namespace holder is gone",
            )),
        }
    }
}

/// On the server: read the holder's first message from `socket`.
pub(super) fn greet(socket: OwnedFd, pid: i32) -> Result<Spaces, String> {
    wire::set_timeout(&socket, 10);
    let (hello, fds) =
        wire::receive(&socket, 3).map_err(|e| format!("no word from the namespace holder: {e}"))?;
    let (letters, why) = match hello.iter().position(|b| *b == b'\n') {
        Some(i) => (
            &hello[..i],
            String::from_utf8_lossy(&hello[i + 1..]).into_owned(),
        ),
        None => return Err("the namespace holder ended before it said what it made".into()),
    };
    if letters.len() != fds.len() {
        return Err("the namespace holder sent a malformed greeting".into());
    }
    let mut made = Made::default();
    let mut namespaces = Vec::new();
    for (letter, fd) in letters.iter().zip(fds) {
        let kind =
            Kind::from_letter(*letter).ok_or("the namespace holder named an unknown namespace")?;
        match kind {
            Kind::User => made.user = true,
            Kind::Network => made.network = true,
            Kind::Mount => made.mount = true,
        }
        namespaces.push((kind, fd));
    }
    Ok(Spaces {
        socket: Mutex::new(socket),
        pid,
        made,
        why_not: why
            .split('\n')
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect(),
        namespaces,
    })
}

/// Run as a session's holder (forked from the factory): make `wanted`, say what was
/// made, serve until the server closes `socket`.
pub(super) fn main(socket: OwnedFd, wanted: &Wanted) -> ! {
    let _ = nix::sys::prctl::set_pdeathsig(Some(nix::sys::signal::Signal::SIGKILL));
    // Dumpable while it writes its user namespace's maps (a process that is not has its
    // /proc/self owned by root), then not: no process of its user may read its memory
    // or take its descriptors.
    let _ = nix::sys::prctl::set_dumpable(true);
    let (made, why_not) = make(wanted);
    let _ = nix::sys::prctl::set_dumpable(false);
    let mut letters = Vec::new();
    let mut fds = Vec::new();
    for (kind, on) in [
        (Kind::User, made.user),
        (Kind::Network, made.network),
        (Kind::Mount, made.mount),
    ] {
        if !on {
            continue;
        }
        match std::fs::File::open(format!("/proc/self/ns/{}", kind.proc_name())) {
            Ok(f) => {
                letters.push(kind.letter());
                fds.push(OwnedFd::from(f));
            }
            Err(_) => std::process::exit(1),
        }
    }
    let mut hello = letters;
    hello.push(b'\n');
    hello.extend_from_slice(why_not.join("\n").as_bytes());
    let borrowed: Vec<BorrowedFd<'_>> = fds.iter().map(|f| f.as_fd()).collect();
    if wire::send(&socket, &hello, &borrowed).is_err() {
        std::process::exit(0);
    }
    drop(borrowed);
    drop(fds);
    loop {
        let request = match wire::receive(&socket, 0) {
            Ok((r, _)) if !r.is_empty() => r,
            _ => std::process::exit(0),
        };
        let answer = match request.split_first() {
            Some((b'L', ports)) if ports.len() >= 2 && ports.len() % 2 == 0 => {
                let ports: Vec<u16> = ports
                    .chunks(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]))
                    .collect();
                listen(&ports).map(OwnedFd::from)
            }
            Some((b'C', port)) if port.len() == 2 => {
                let port = u16::from_le_bytes([port[0], port[1]]);
                TcpStream::connect(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))
                    .map(OwnedFd::from)
                    .map_err(|e| format!("127.0.0.1:{port} in the session: {e}"))
            }
            _ => Err("a request the holder does not know".to_string()),
        };
        let sent = match answer {
            Ok(fd) => wire::send(&socket, b"+", &[fd.as_fd()]),
            Err(why) => wire::send(&socket, format!("-{why}").as_bytes(), &[]),
        };
        if sent.is_err() {
            std::process::exit(0);
        }
    }
}

/// A listener on 127.0.0.1 on the first free port of `ports`.
fn listen(ports: &[u16]) -> Result<TcpListener, String> {
    let mut last = String::new();
    for port in ports {
        match TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, *port)) {
            Ok(l) => return Ok(l),
            Err(e) => last = format!("127.0.0.1:{port}: {e}"),
        }
    }
    Err(if ports.len() > 1 {
        format!(
            "no port free in {}–{} ({last})",
            ports[0],
            ports[ports.len() - 1]
        )
    } else {
        last
    })
}

/// Make what `wanted` asks, as far as this machine allows: what was made and, for the
/// rest, why not.
fn make(wanted: &Wanted) -> (Made, Vec<String>) {
    let mut why_not = Vec::new();
    let mut want = CloneFlags::empty();
    if wanted.network {
        want |= CloneFlags::CLONE_NEWNET;
    }
    if wanted.shm.is_some() {
        want |= CloneFlags::CLONE_NEWNS;
    }
    if want.is_empty() {
        return (Made::default(), why_not);
    }
    // All at once; else each alone (a kernel or container may allow one and not the
    // other).
    let mut made = Made::default();
    let got = match enter(want) {
        Ok(user) => Some((want, user)),
        Err(all) => {
            why_not.push(all.why);
            if !all.tainted && want.bits().count_ones() > 1 {
                [CloneFlags::CLONE_NEWNET, CloneFlags::CLONE_NEWNS]
                    .into_iter()
                    .find_map(|f| enter(f).ok().map(|user| (f, user)))
            } else {
                None
            }
        }
    };
    let Some((flags, user)) = got else {
        return (made, why_not);
    };
    made.user = user;
    if flags.contains(CloneFlags::CLONE_NEWNET) {
        match loopback_up() {
            Ok(()) => made.network = true,
            Err(e) => why_not.push(format!("network namespace: {e}")),
        }
    } else if wanted.network {
        why_not.push("no network namespace (see above)".into());
    }
    if flags.contains(CloneFlags::CLONE_NEWNS)
        && let Some(shm) = &wanted.shm
    {
        match private_shm(shm) {
            Ok(()) => {
                made.mount = true;
                why_not.extend(hide_sockets(&wanted.hide));
                if let Err(e) = private_terminals() {
                    why_not.push(format!("/dev/pts: {e}"));
                }
            }
            Err(e) => why_not.push(format!("/dev/shm: {e}")),
        }
    } else if wanted.shm.is_some() {
        why_not.push("/dev/shm: no mount namespace (see above)".into());
    }
    (made, why_not)
}

/// In the new mount namespace: a devpts instance of the session's own over `/dev/pts`,
/// and its `ptmx` over `/dev/ptmx`, so the machine's other terminals (the person's
/// included) are out of a task's sight and reach, while the terminals a task opens
/// (`script`, `expect`, a test's pty) work. A task's own terminal is the descriptor
/// its supervisor was given; `/dev/tty` reaches it through the kernel, not a name.
fn private_terminals() -> Result<(), String> {
    let none: Option<&str> = None;
    if !std::path::Path::new("/dev/pts").is_dir() {
        return Err("this machine has no /dev/pts directory to cover".into());
    }
    let devpts = |options: &str| {
        mount(
            Some("devpts"),
            "/dev/pts",
            Some("devpts"),
            MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
            Some(options),
        )
    };
    // Terminals in group tty, as on the machine; a user namespace that maps no tty
    // group (an unprivileged server's) makes them in the opener's group instead.
    devpts("newinstance,ptmxmode=0666,mode=0620,gid=5")
        .or_else(|_| devpts("newinstance,ptmxmode=0666,mode=0620"))
        .map_err(|e| format!("mounting a devpts instance of the session's own: {e}"))?;
    if std::path::Path::new("/dev/ptmx").exists() {
        mount(
            Some("/dev/pts/ptmx"),
            "/dev/ptmx",
            none,
            MsFlags::MS_BIND,
            none,
        )
        .map_err(|e| format!("binding the session's ptmx over /dev/ptmx: {e}"))?;
    }
    Ok(())
}

/// In the new mount namespace: `/dev/null` over each of the machine's listening unix
/// sockets the session is not granted, so a task's connect to it is refused
/// (`ECONNREFUSED`: not a socket). Says which it could not cover.
fn hide_sockets(sockets: &[std::path::PathBuf]) -> Vec<String> {
    let none: Option<&str> = None;
    sockets
        .iter()
        .filter_map(|socket| {
            mount(Some("/dev/null"), socket, none, MsFlags::MS_BIND, none)
                .err()
                .map(|e| format!("the unix socket {} stays reachable: {e}", socket.display()))
        })
        .collect()
}

/// In the new mount namespace: nothing done here reaches the machine's (slave
/// propagation), then the session's directory over `/dev/shm`, without devices or
/// set-uid programs.
fn private_shm(dir: &std::path::Path) -> Result<(), String> {
    let none: Option<&str> = None;
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_SLAVE, none)
        .map_err(|e| format!("making the mounts private: {e}"))?;
    if !std::path::Path::new("/dev/shm").is_dir() {
        return Err("this machine has no /dev/shm directory to cover".into());
    }
    mount(Some(dir), "/dev/shm", none, MsFlags::MS_BIND, none)
        .map_err(|e| format!("binding {} over /dev/shm: {e}", dir.display()))?;
    // Best effort: a locked mount (in a user namespace) may refuse new flags.
    let _ = mount(
        none,
        "/dev/shm",
        none,
        MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        none,
    );
    Ok(())
}
