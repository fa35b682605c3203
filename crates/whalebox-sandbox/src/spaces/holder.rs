//! A session's holder: the process that makes the session's namespaces and lives in
//! them (so they outlast every task), and the server's handle on it, [`Spaces`].
//!
//! Its first message says what it made (`u`, `n`, `m`, `p`) and which roots the
//! server's layer must name (`R`, `D`, `X`: see [`Root`]), each with its descriptor,
//! then a newline and why anything wanted was not made. Then it answers requests, one
//! message each way: `L` + ports (u16, little-endian): a listener on the first of them
//! free on the namespace's 127.0.0.1 (port 0: any), answered `+` + the listener; `C` +
//! a port: a connection to the namespace's 127.0.0.1:PORT, answered `+` and the socket;
//! `H` + paths (NUL between): more unix sockets to hide, answered `+`; `K`: every
//! process of its PID namespace but itself killed and gone, answered `+`. A failure is
//! `-` and why. The end of the server's socket ends the holder (and, when it is the
//! first process of a PID namespace, everything in it).
//!
//! With a PID namespace the holder is that namespace's first process: the process the
//! factory forked makes the namespaces and forks it, then exits. As the first process
//! it inherits the orphans of the session (a `setsid` daemon whose supervisor is gone)
//! and lets the kernel reap them.

use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Mutex;

use nix::mount::{MsFlags, mount};
use nix::sched::CloneFlags;

use super::{Kind, Made, Root, Wanted, enter, loopback_up, wire};

/// A session's namespaces, as the server holds them.
pub struct Spaces {
    socket: Mutex<OwnedFd>,
    pid: i32,
    /// What is made, and the namespaces: a session slot's network namespace is new
    /// for each session ([`Spaces::new_network`]).
    current: Mutex<(Made, Vec<(Kind, OwnedFd)>)>,
    why_not: Vec<String>,
    roots: Vec<(Root, OwnedFd)>,
}

impl std::fmt::Debug for Spaces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spaces")
            .field("pid", &self.pid)
            .field("made", &self.made())
            .field("why_not", &self.why_not)
            .finish()
    }
}

impl Spaces {
    pub fn made(&self) -> Made {
        self.current.lock().map(|c| c.0).unwrap_or_default()
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
        self.namespaces()
            .iter()
            .filter_map(|(k, fd)| super::Identity::of(*k, fd).ok())
            .collect()
    }

    /// The namespaces a task joins (copies of the descriptors), for
    /// [`super::send_namespaces`].
    pub fn namespaces(&self) -> Vec<(Kind, OwnedFd)> {
        self.current
            .lock()
            .map(|c| {
                c.1.iter()
                    .filter_map(|(k, fd)| fd.try_clone().ok().map(|fd| (*k, fd)))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// New IPC and (with `network`) network namespaces for the next session of a slot:
    /// nothing of the last one's (its System V objects, its listeners, its connections'
    /// states) is left, and the loopback is up.
    pub fn new_session(&self, network: bool) -> Result<(), String> {
        let socket = self
            .socket
            .lock()
            .map_err(|_| "the namespace holder's lock is poisoned".to_string())?;
        wire::send(&*socket, &[b'N', u8::from(network)], &[])
            .map_err(|e| format!("the namespace holder: {e}"))?;
        let (answer, fds) =
            wire::receive(&*socket, 8).map_err(|e| format!("the namespace holder: {e}"))?;
        drop(socket);
        match answer.split_first() {
            Some((b'+', letters)) if letters.len() == fds.len() => {
                let (made, namespaces) = namespaces_named(letters, fds)?;
                if let Ok(mut current) = self.current.lock() {
                    *current = (made, namespaces);
                }
                Ok(())
            }
            Some((b'-', why)) => Err(String::from_utf8_lossy(why).into_owned()),
            _ => Err("the session's namespace holder is gone".into()),
        }
    }

    /// What the server's Landlock layer must name for the session's tasks to reach
    /// their `/proc` and terminals (O_PATH descriptors, opened inside).
    pub fn roots(&self) -> Vec<(Root, BorrowedFd<'_>)> {
        self.roots.iter().map(|(r, fd)| (*r, fd.as_fd())).collect()
    }

    /// Kill every process in the session's PID namespace but the holder, and wait
    /// until they are gone: what a session leaves when it ends, before its slot serves
    /// another.
    pub fn end_tasks(&self) -> std::io::Result<()> {
        self.ask(b"K").map(drop)
    }

    /// Hide more of the machine's listening unix sockets (those made since the holder
    /// was) in the session's mount namespace.
    pub fn hide(&self, sockets: &[std::path::PathBuf]) -> std::io::Result<()> {
        use std::os::unix::ffi::OsStrExt;
        let mut request = vec![b'H'];
        for socket in sockets {
            let bytes = socket.as_os_str().as_bytes();
            if request.len() + 1 + bytes.len() > wire::MAX_MESSAGE {
                break;
            }
            request.extend_from_slice(bytes);
            request.push(0);
        }
        self.ask(&request).map(drop)
    }

    /// A listener on the namespace's 127.0.0.1, on the first of `ports` that is free
    /// there (`[0]`: any port).
    pub fn listen(&self, ports: &[u16]) -> std::io::Result<TcpListener> {
        let mut request = vec![b'L'];
        for p in ports {
            request.extend_from_slice(&p.to_le_bytes());
        }
        let fd = self.ask(&request)?.ok_or_else(no_descriptor)?;
        Ok(TcpListener::from(fd))
    }

    /// A connection to the namespace's 127.0.0.1:`port` (a server a task runs there).
    pub fn connect(&self, port: u16) -> std::io::Result<TcpStream> {
        let mut request = vec![b'C'];
        request.extend_from_slice(&port.to_le_bytes());
        let fd = self.ask(&request)?.ok_or_else(no_descriptor)?;
        Ok(TcpStream::from(fd))
    }

    /// One request, its answer's descriptor (if any).
    fn ask(&self, request: &[u8]) -> std::io::Result<Option<OwnedFd>> {
        let socket = self
            .socket
            .lock()
            .map_err(|_| std::io::Error::other("the namespace holder's lock is poisoned"))?;
        wire::send(&*socket, request, &[])?;
        let (answer, mut fds) = wire::receive(&*socket, 1)?;
        match (answer.first(), fds.pop()) {
            (Some(b'+'), fd) => Ok(fd),
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

fn no_descriptor() -> std::io::Error {
    std::io::Error::other("the session's namespace holder answered without a descriptor")
}

/// On the server: read the holder's first message from `socket`.
pub(super) fn greet(socket: OwnedFd, pid: i32) -> Result<Spaces, String> {
    wire::set_timeout(&socket, 10);
    let (hello, fds) =
        wire::receive(&socket, 8).map_err(|e| format!("no word from the namespace holder: {e}"))?;
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
    let mut named = Vec::new();
    let mut roots = Vec::new();
    for (letter, fd) in letters.iter().zip(fds) {
        match Root::from_letter(*letter) {
            Some(root) => roots.push((root, fd)),
            None => named.push((*letter, fd)),
        }
    }
    let (letters, fds): (Vec<u8>, Vec<OwnedFd>) = named.into_iter().unzip();
    let (made, namespaces) = namespaces_named(&letters, fds)?;
    Ok(Spaces {
        socket: Mutex::new(socket),
        pid,
        current: Mutex::new((made, namespaces)),
        why_not: why
            .split('\n')
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect(),
        roots,
    })
}

/// The namespaces a holder named, one letter each, and what they make.
fn namespaces_named(
    letters: &[u8],
    fds: Vec<OwnedFd>,
) -> Result<(Made, Vec<(Kind, OwnedFd)>), String> {
    let mut made = Made::default();
    let mut namespaces = Vec::new();
    for (letter, fd) in letters.iter().zip(fds) {
        let kind =
            Kind::from_letter(*letter).ok_or("the namespace holder named an unknown namespace")?;
        match kind {
            Kind::User => made.user = true,
            Kind::Network => made.network = true,
            Kind::Mount => made.mount = true,
            Kind::Ipc => made.ipc = true,
            Kind::Pid => made.pid = true,
        }
        namespaces.push((kind, fd));
    }
    Ok((made, namespaces))
}

/// In the holder: its namespaces' letters and descriptors.
fn own_namespaces(made: Made) -> (Vec<u8>, Vec<OwnedFd>) {
    let mut letters = Vec::new();
    let mut fds = Vec::new();
    for (kind, on) in [
        (Kind::User, made.user),
        (Kind::Network, made.network),
        (Kind::Mount, made.mount),
        (Kind::Ipc, made.ipc),
        (Kind::Pid, made.pid),
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
    (letters, fds)
}

/// Run as a session's holder (forked from the factory): make `wanted`, say what was
/// made, serve until the server closes `socket`.
pub(super) fn main(socket: OwnedFd, wanted: &Wanted) -> ! {
    let _ = nix::sys::prctl::set_pdeathsig(Some(nix::sys::signal::Signal::SIGKILL));
    // Dumpable while it writes its user namespace's maps (a process that is not has its
    // /proc/self owned by root), then not: no process of its user may read its memory
    // or take its descriptors.
    let _ = nix::sys::prctl::set_dumpable(true);
    let (mut made, terminals, why_not) = make(wanted);
    let _ = nix::sys::prctl::set_dumpable(false);
    let (mut letters, mut fds) = own_namespaces(made);
    for (root, on) in [
        (Root::Proc, made.pid),
        (Root::Terminals, terminals),
        (Root::Ptmx, terminals),
    ] {
        if !on {
            continue;
        }
        match nix::fcntl::open(
            root.path(),
            nix::fcntl::OFlag::O_PATH | nix::fcntl::OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        ) {
            Ok(fd) => {
                letters.push(root.letter());
                fds.push(fd);
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
    let mut hidden: Vec<std::path::PathBuf> = wanted.hide.clone();
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
                listen(&ports).map(|l| Some(OwnedFd::from(l)))
            }
            Some((b'C', port)) if port.len() == 2 => {
                let port = u16::from_le_bytes([port[0], port[1]]);
                TcpStream::connect(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))
                    .map(|s| Some(OwnedFd::from(s)))
                    .map_err(|e| format!("127.0.0.1:{port} in the session: {e}"))
            }
            Some((b'H', paths)) if made.mount => {
                use std::os::unix::ffi::OsStrExt;
                let more: Vec<std::path::PathBuf> = paths
                    .split(|b| *b == 0)
                    .filter(|p| !p.is_empty())
                    .map(|p| std::ffi::OsStr::from_bytes(p).into())
                    .filter(|p| !hidden.contains(p))
                    .collect();
                let failed = hide_sockets(&more);
                hidden.extend(more);
                match failed.is_empty() {
                    true => Ok(None),
                    false => Err(failed.join("; ")),
                }
            }
            Some((b'K', [])) if made.pid => end_everything_else().map(|()| None),
            // A slot's (even one whose PID namespace or /proc the machine refused: its
            // sessions still get their own network and IPC namespaces).
            Some((b'N', [network])) if slot(wanted) => {
                let network = *network == 1;
                let mut flags = CloneFlags::CLONE_NEWIPC;
                if network {
                    flags |= CloneFlags::CLONE_NEWNET;
                }
                let renewed = nix::sched::unshare(flags)
                    .map_err(|e| format!("the session's IPC and network namespaces: {e}"))
                    .and_then(|()| if network { loopback_up() } else { Ok(()) });
                let answer = match renewed {
                    Ok(()) => {
                        made.network = network;
                        made.ipc = true;
                        let (mut letters, fds) = own_namespaces(made);
                        letters.insert(0, b'+');
                        let borrowed: Vec<BorrowedFd<'_>> = fds.iter().map(|f| f.as_fd()).collect();
                        wire::send(&socket, &letters, &borrowed)
                    }
                    Err(why) => wire::send(&socket, format!("-{why}").as_bytes(), &[]),
                };
                if answer.is_err() {
                    std::process::exit(0);
                }
                continue;
            }
            _ => Err("a request the holder does not know".to_string()),
        };
        let sent = match answer {
            Ok(None) => wire::send(&socket, b"+", &[]),
            Ok(Some(fd)) => wire::send(&socket, b"+", &[fd.as_fd()]),
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

/// Make what `wanted` asks, as far as this machine allows: what was made, whether the
/// session has terminals of its own and, for the rest, why not. With a PID namespace,
/// the process that returns is the namespace's first (the one that made it has exited).
fn make(wanted: &Wanted) -> (Made, bool, Vec<String>) {
    let mut why_not = Vec::new();
    let mut want = CloneFlags::empty();
    // A session slot (a PID namespace made ahead) gets a network namespace per session
    // instead (`N`): none of one session's network state is left for the next.
    if wanted.network && !slot(wanted) {
        want |= CloneFlags::CLONE_NEWNET;
    }
    if wanted.shm.is_some() {
        want |= CloneFlags::CLONE_NEWNS;
        if wanted.pid {
            want |= CloneFlags::CLONE_NEWPID;
        }
        if wanted.ipc {
            want |= CloneFlags::CLONE_NEWIPC;
        }
    }
    if want.is_empty() {
        return (Made::default(), false, why_not);
    }
    // All at once; else without the PID namespace; else each alone (a kernel or
    // container may allow one and not the other).
    let mut made = Made::default();
    let without_pid = want - CloneFlags::CLONE_NEWPID;
    let got = match enter(want) {
        Ok(user) => Some((want, user)),
        Err(all) => {
            why_not.push(all.why);
            if all.tainted {
                None
            } else if want.contains(CloneFlags::CLONE_NEWPID) {
                match enter(without_pid) {
                    Ok(user) => Some((without_pid, user)),
                    Err(e) => {
                        why_not.push(e.why);
                        None
                    }
                }
            } else if want.bits().count_ones() > 1 {
                [CloneFlags::CLONE_NEWNET, CloneFlags::CLONE_NEWNS]
                    .into_iter()
                    .find_map(|f| enter(f).ok().map(|user| (f, user)))
            } else {
                None
            }
        }
    };
    let Some((mut flags, user)) = got else {
        return (made, false, why_not);
    };
    made.user = user;
    made.ipc = flags.contains(CloneFlags::CLONE_NEWIPC);
    if flags.contains(CloneFlags::CLONE_NEWPID) {
        // The namespace's first process is our next child: it goes on, we leave.
        // SAFETY: single-threaded; the parent only exits.
        match unsafe { nix::unistd::fork() } {
            Ok(nix::unistd::ForkResult::Parent { .. }) => {
                // SAFETY: leaving without running anything of this process's.
                unsafe { nix::libc::_exit(0) }
            }
            Ok(nix::unistd::ForkResult::Child) => {
                // Orphans of the session come to us: the kernel reaps them.
                // SAFETY: ignoring SIGCHLD; no handler runs.
                unsafe { nix::libc::signal(nix::libc::SIGCHLD, nix::libc::SIG_IGN) };
            }
            Err(e) => {
                why_not.push(format!("PID namespace: fork: {e}"));
                flags -= CloneFlags::CLONE_NEWPID;
            }
        }
    } else if wanted.pid && wanted.shm.is_some() {
        why_not.push("no PID namespace (see above): tasks see the machine's processes".into());
    }
    if flags.contains(CloneFlags::CLONE_NEWNET) {
        match loopback_up() {
            Ok(()) => made.network = true,
            Err(e) => why_not.push(format!("network namespace: {e}")),
        }
    } else if wanted.network {
        why_not.push("no network namespace (see above)".into());
    }
    let mut terminals = false;
    if flags.contains(CloneFlags::CLONE_NEWNS)
        && let Some(shm) = &wanted.shm
    {
        match private_shm(shm) {
            Ok(()) => {
                made.mount = true;
                why_not.extend(hide_sockets(&wanted.hide));
                if wanted.terminals {
                    match private_terminals() {
                        Ok(()) => terminals = true,
                        Err(e) => why_not.push(format!("/dev/pts: {e}")),
                    }
                }
                if flags.contains(CloneFlags::CLONE_NEWPID) {
                    match private_proc() {
                        Ok(()) => made.pid = true,
                        Err(e) => why_not.push(format!("/proc: {e}")),
                    }
                }
            }
            Err(e) => why_not.push(format!("/dev/shm: {e}")),
        }
    } else if wanted.shm.is_some() {
        why_not.push("/dev/shm: no mount namespace (see above)".into());
    }
    (made, terminals, why_not)
}

/// Whether `wanted` is a session slot's, made ahead for one session after another: its
/// network and IPC namespaces are made for each session (`N`).
fn slot(wanted: &Wanted) -> bool {
    wanted.pid && wanted.shm.is_some()
}

/// In the new mount namespace, as the PID namespace's first process: a procfs of the
/// namespace over `/proc`, so a task lists, reads and names only the session's
/// processes. Without it the namespace is not handed out (a task in it would read the
/// machine's `/proc` with pids that name other processes).
pub(super) fn private_proc() -> Result<(), String> {
    mount(
        Some("proc"),
        "/proc",
        Some("proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&str>,
    )
    .map_err(|e| format!("mounting the session's own procfs: {e}"))
}

/// As a PID namespace's first process: SIGKILL every other process in it, and wait
/// (two seconds at most) until none is left but zombies their parents outside will reap.
fn end_everything_else() -> Result<(), String> {
    // kill(-1) from a namespace's first process reaches every process in the namespace
    // but itself; a fork racing it fails (its parent has SIGKILL pending).
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(-1),
        nix::sys::signal::Signal::SIGKILL,
    );
    for _ in 0..400 {
        if others_alive() == 0 {
            return Ok(());
        }
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(-1),
            nix::sys::signal::Signal::SIGKILL,
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    Err(format!(
        "{} processes of the session are still there",
        others_alive()
    ))
}

/// How many processes but this one, and but zombies, the namespace's `/proc` lists.
fn others_alive() -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != 1)
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                stat.rsplit_once(')')
                    .and_then(|(_, after)| after.split_whitespace().next())
                    .is_some_and(|state| state != "Z" && state != "X")
            })
        })
        .count()
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
