//! The namespaces a session's tasks share, so that real work behaves as it does bare
//! while staying apart from other sessions and from the machine:
//!
//! - **one network namespace per session**: its loopback is the session's, so a dev
//!   server one command starts answers the next command's client; nothing leaves it but
//!   through the listeners the server serves in it (the egress proxy's doors, the host
//!   ports a profile names), and connections come in only where the profile publishes a
//!   port;
//! - **one mount namespace per session** whose `/dev/shm` is the session's own
//!   directory (POSIX shared memory and semaphores: `multiprocessing`, test runners,
//!   browsers), emptied when the session ends, while the machine's `/dev/shm` and other
//!   sessions' stay out of sight;
//! - **one PID namespace per session** whose first process is the holder, with a procfs
//!   of its own over `/proc` (and a devpts of its own over `/dev/pts`): a task lists,
//!   signals and reads only the session's processes; the server, other sessions and the
//!   person's processes name nothing. A supervisor joins it and forks: only its child
//!   is inside, and goes on as the task's supervisor (see `shell::supervisor`);
//! - **one IPC namespace per session**: System V shared memory, semaphores and message
//!   queues, and POSIX message queues, are the session's, and go with it;
//! - without root, all inside a **user namespace** that maps only the caller's uid and
//!   gid (as root, none: a root task stays root, fenced by Landlock and the exec gate).
//!
//! Landlock skips a covered mount point when it walks up a path, so no rule on the
//! machine's `/proc` or `/dev/pts` reaches what is mounted over them: a server makes its
//! session slots' namespaces before it builds its own layer, which grants their roots by
//! descriptor ([`Spaces::roots`]).
//!
//! Who makes them: the [`Factory`] (`whalebox __spaces`), started before the server
//! enters its Landlock fences (a process in a Landlock domain may not mount), forks one
//! **holder** per session on request. The holder makes the namespaces, bind-mounts the
//! session's directory over `/dev/shm`, brings `lo` up and sends the namespaces'
//! descriptors back; then it serves the server's requests for listeners on the
//! namespace's loopback ([`Spaces::listen`]) and connections into it
//! ([`Spaces::connect`]): a socket keeps the namespace it was made in, so the server
//! relays without a forwarder inside. A task's supervisor joins with [`join`] (setns)
//! before its Landlock layer, so that layer is built inside.
//!
//! The holder runs only this module's code, takes requests only from the server's end of
//! a socket pair, is not dumpable (no other process of its user reads its memory or
//! descriptors), is outside every task's Landlock domain (no task may trace it), and dies
//! with the factory, which dies with the server. Nothing a task sends reaches it.
//!
//! Bind mounts, not a fresh tmpfs, because Landlock follows the mount tree: a file under
//! a tmpfs mounted on `/dev/shm` would be judged by the rules of `/dev` and `/`, which
//! no layer grants, while a bind-mounted directory is its own inode, granted by name.

mod factory;
mod holder;
mod wire;

use std::os::fd::{AsFd, OwnedFd};

use nix::sched::{CloneFlags, setns, unshare};
use serde::Serialize;

pub use factory::{Factory, SUBCOMMAND, main};
pub use holder::Spaces;

/// What a session asks for.
#[derive(Debug, Clone, Default)]
pub struct Wanted {
    /// A network namespace (the network fence's strongest form).
    pub network: bool,
    /// The directory to bind over `/dev/shm` in a mount namespace (None: no mount
    /// namespace).
    pub shm: Option<std::path::PathBuf>,
    /// Listening unix sockets of the machine to hide in the mount namespace (a
    /// `docker.sock`): each is covered by `/dev/null`, so a connect is refused.
    pub hide: Vec<std::path::PathBuf>,
    /// A PID namespace whose first process is the holder, with a procfs of its own over
    /// `/proc` (needs the mount namespace): the session's tasks see and reach only each
    /// other. Its roots come back in [`Spaces::roots`], for the server's Landlock layer.
    pub pid: bool,
    /// A devpts instance of the session's own over `/dev/pts` (needs the mount
    /// namespace). The server's layer must reach it: by [`Spaces::roots`] when the
    /// holder is made before that layer, else by a rule on `/dev`.
    pub terminals: bool,
    /// An IPC namespace (needs the mount namespace); a session slot's is new for each
    /// session ([`Spaces::new_session`]).
    pub ipc: bool,
}

/// The machine's listening pathname unix sockets, as `/proc/self/net/unix` lists them
/// (the caller's network namespace: call it before entering another).
pub fn listening_unix_sockets() -> Vec<std::path::PathBuf> {
    // Flags 0x10000: __SO_ACCEPTCON, a listening socket.
    const LISTENING: u32 = 0x10000;
    let Ok(table) = std::fs::read_to_string("/proc/self/net/unix") else {
        return Vec::new();
    };
    let mut out: Vec<std::path::PathBuf> = table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let flags = u32::from_str_radix(fields.get(3)?, 16).ok()?;
            let path = fields.get(7)?;
            (flags & LISTENING != 0 && path.starts_with('/'))
                .then(|| std::path::PathBuf::from(path))
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// What the holder made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Made {
    /// Inside a user namespace of its own (unprivileged).
    pub user: bool,
    pub network: bool,
    /// A mount namespace with the session's `/dev/shm`.
    pub mount: bool,
    /// A PID namespace with its own `/proc`.
    pub pid: bool,
    /// An IPC namespace (System V shared memory, semaphores and message queues, POSIX
    /// message queues): the session's objects, out of other sessions' and the machine's
    /// reach, and gone with it.
    pub ipc: bool,
}

/// One of a session's namespaces, as a descriptor of `/proc/PID/ns/*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    User,
    Network,
    Mount,
    Ipc,
    /// Joined last; it moves only the joiner's children (see [`join`]).
    Pid,
}

impl Kind {
    fn flag(self) -> CloneFlags {
        match self {
            Kind::User => CloneFlags::CLONE_NEWUSER,
            Kind::Network => CloneFlags::CLONE_NEWNET,
            Kind::Mount => CloneFlags::CLONE_NEWNS,
            Kind::Ipc => CloneFlags::CLONE_NEWIPC,
            Kind::Pid => CloneFlags::CLONE_NEWPID,
        }
    }

    /// The letter that names it in a hand-over.
    pub fn letter(self) -> u8 {
        match self {
            Kind::User => b'u',
            Kind::Network => b'n',
            Kind::Mount => b'm',
            Kind::Ipc => b'i',
            Kind::Pid => b'p',
        }
    }

    pub fn from_letter(b: u8) -> Option<Kind> {
        match b {
            b'u' => Some(Kind::User),
            b'n' => Some(Kind::Network),
            b'm' => Some(Kind::Mount),
            b'i' => Some(Kind::Ipc),
            b'p' => Some(Kind::Pid),
            _ => None,
        }
    }

    fn proc_name(self) -> &'static str {
        match self {
            Kind::User => "user",
            Kind::Network => "net",
            Kind::Mount => "mnt",
            Kind::Ipc => "ipc",
            Kind::Pid => "pid",
        }
    }
}

/// A namespace as the kernel names it: its kind and the (device, inode) of its nsfs file,
/// the same whichever descriptor or `/proc/PID/ns` link reaches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Identity {
    pub kind: char,
    pub dev: u64,
    pub ino: u64,
}

impl Identity {
    /// The identity of the namespace behind `fd`, if it is one of `kind` (an nsfs file
    /// whose type the kernel confirms: a pidfd or any other file is refused).
    pub fn of(kind: Kind, fd: &impl AsFd) -> Result<Identity, String> {
        use std::os::fd::AsRawFd;
        // NS_GET_NSTYPE: _IO(0xb7, 0x3).
        const NS_GET_NSTYPE: nix::libc::c_ulong = 0xb703;
        // SAFETY: an ioctl with no argument on a descriptor we hold.
        let t = unsafe { nix::libc::ioctl(fd.as_fd().as_raw_fd(), NS_GET_NSTYPE as _) };
        if t < 0 || t != kind.flag().bits() {
            return Err(format!(
                "the descriptor handed over as the session's {} namespace is not one",
                kind.proc_name()
            ));
        }
        let st = nix::sys::stat::fstat(fd.as_fd()).map_err(|e| format!("fstat: {e}"))?;
        Ok(Identity {
            kind: kind.letter() as char,
            dev: st.st_dev,
            ino: st.st_ino,
        })
    }
}

/// Check that `namespaces` are exactly the `expected` ones (no more, no fewer, the very
/// namespaces the server made): what a supervisor does before joining, so that whoever
/// answers on the join socket cannot put a task anywhere else.
pub fn verify(namespaces: &[(Kind, OwnedFd)], expected: &[Identity]) -> Result<(), String> {
    if namespaces.len() != expected.len() {
        return Err(format!(
            "{} namespaces handed over where the server made {}",
            namespaces.len(),
            expected.len()
        ));
    }
    for (kind, fd) in namespaces {
        let got = Identity::of(*kind, fd)?;
        if !expected.contains(&got) {
            return Err(format!(
                "the {} namespace handed over is not the session's",
                kind.proc_name()
            ));
        }
    }
    Ok(())
}

/// Join a session's namespaces (user first: it brings the rights to join the others),
/// staying in the same working directory. The calling process must be single-threaded
/// and share no file-system state with another (a fresh supervisor is both). Each
/// descriptor is checked to be the namespace it claims (`setns` refuses another kind).
///
/// A PID namespace is joined last and moves only the processes the caller forks from
/// then on (which alone see the session's `/proc` as their own); the caller itself may
/// start no more threads. Ok(true): one was joined.
pub fn join(namespaces: &[(Kind, OwnedFd)]) -> Result<bool, String> {
    let cwd = std::env::current_dir().map_err(|e| format!("the working directory: {e}"))?;
    for kind in [Kind::User, Kind::Ipc, Kind::Network, Kind::Mount, Kind::Pid] {
        for (k, fd) in namespaces {
            if *k == kind {
                setns(fd.as_fd(), kind.flag()).map_err(|e| {
                    format!(
                        "cannot join the session's {} namespace: {e}",
                        kind.proc_name()
                    )
                })?;
            }
        }
    }
    if namespaces.iter().any(|(k, _)| *k == Kind::Mount) {
        // Joining a mount namespace moves the working directory to its root.
        std::env::set_current_dir(&cwd)
            .map_err(|e| format!("cannot enter {} again: {e}", cwd.display()))?;
    }
    Ok(namespaces.iter().any(|(k, _)| *k == Kind::Pid))
}

/// What the server's own Landlock layer must name so that a session's tasks reach their
/// `/proc` and terminals: Landlock skips a covered mount point when it walks up a path,
/// so no rule on the machine's `/proc` or `/dev/pts` reaches what is mounted over them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Root {
    /// The session's procfs (read).
    Proc,
    /// The session's devpts instance (devices).
    Terminals,
    /// Its `ptmx`, bound over `/dev/ptmx` (a device file).
    Ptmx,
}

impl Root {
    fn letter(self) -> u8 {
        match self {
            Root::Proc => b'R',
            Root::Terminals => b'D',
            Root::Ptmx => b'X',
        }
    }

    fn from_letter(b: u8) -> Option<Root> {
        match b {
            b'R' => Some(Root::Proc),
            b'D' => Some(Root::Terminals),
            b'X' => Some(Root::Ptmx),
            _ => None,
        }
    }

    /// The machine's path it covers: the server's layer grants it what it grants that.
    pub fn stands_for(self) -> &'static str {
        match self {
            Root::Proc => "/proc",
            Root::Terminals => "/dev/pts",
            Root::Ptmx => "/dev/ptmx",
        }
    }

    /// Where the holder finds it, inside the session's mount namespace.
    fn path(self) -> &'static str {
        match self {
            Root::Proc => "/proc",
            Root::Terminals => "/dev/pts",
            Root::Ptmx => "/dev/pts/ptmx",
        }
    }
}

/// Why [`enter`] failed, and whether the process is still where it was (else it is
/// inside a user namespace it could not finish, and must try nothing more).
#[derive(Debug)]
pub struct EnterError {
    pub why: String,
    pub tainted: bool,
}

/// Move the calling (single-threaded, dumpable: `/proc/self` must be its own) process
/// into new namespaces: unshare `flags` as they are where the process may administer
/// namespaces (root), else inside a new user namespace mapping only its own uid and gid.
/// Ok(true): a user namespace was made.
pub fn enter(flags: CloneFlags) -> Result<bool, EnterError> {
    let first = match unshare(flags) {
        Ok(()) => return Ok(false),
        Err(e) => e,
    };
    // SAFETY: getuid and getgid cannot fail.
    let uid = unsafe { nix::libc::getuid() };
    let gid = unsafe { nix::libc::getgid() };
    unshare(CloneFlags::CLONE_NEWUSER | flags).map_err(|e| EnterError {
        why: format!(
            "cannot make the session's namespaces: unshare: {first}; with a user namespace: \
             {e} (unprivileged user namespaces are off here)"
        ),
        tainted: false,
    })?;
    // Without "deny", an unprivileged process may not write a gid map.
    let write = |file: &str, text: String| {
        use std::io::Write;
        std::fs::OpenOptions::new()
            .write(true)
            .open(format!("/proc/self/{file}"))
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .map_err(|e| EnterError {
                why: format!("writing /proc/self/{file}: {e}"),
                tainted: true,
            })
    };
    write("setgroups", "deny".into())?;
    write("uid_map", format!("{uid} {uid} 1"))?;
    write("gid_map", format!("{gid} {gid} 1"))?;
    Ok(true)
}

/// Whether a network namespace can be made here, tried in the calling (throwaway,
/// single-threaded) process: Ok(true) inside a user namespace, Ok(false) as it is.
pub fn probe_network() -> Result<bool, String> {
    let user = enter(CloneFlags::CLONE_NEWNET).map_err(|e| e.why)?;
    loopback_up()?;
    Ok(user)
}

/// Whether a PID namespace with a procfs of its own can be made here, as a session's
/// holder makes it, tried in the calling (throwaway, single-threaded) process.
pub fn probe_pid() -> Result<(), String> {
    enter(CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID).map_err(|e| e.why)?;
    // SAFETY: single-threaded; the child mounts and exits.
    match unsafe { nix::unistd::fork() } {
        Ok(nix::unistd::ForkResult::Child) => {
            let none: Option<&str> = None;
            let made = nix::mount::mount(
                none,
                "/",
                none,
                nix::mount::MsFlags::MS_REC | nix::mount::MsFlags::MS_SLAVE,
                none,
            )
            .map_err(|e| format!("making the mounts private: {e}"))
            .and_then(|()| holder::private_proc());
            // SAFETY: leaving the throwaway child.
            unsafe { nix::libc::_exit(i32::from(made.is_err())) }
        }
        Ok(nix::unistd::ForkResult::Parent { child }) => {
            match nix::sys::wait::waitpid(child, None) {
                Ok(nix::sys::wait::WaitStatus::Exited(_, 0)) => Ok(()),
                _ => Err("a PID namespace was made, but no procfs of its own mounted".into()),
            }
        }
        Err(e) => Err(format!("fork: {e}")),
    }
}

/// `ip link set lo up`, by the ioctl, in the caller's network namespace.
pub fn loopback_up() -> Result<(), String> {
    use nix::libc;
    use std::os::fd::{AsRawFd, FromRawFd};
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

/// Send a session's namespace descriptors over a connected unix socket (a supervisor's
/// request to join): one letter per descriptor, in order.
pub fn send_namespaces(
    socket: &impl AsFd,
    namespaces: &[(Kind, std::os::fd::BorrowedFd<'_>)],
) -> Result<(), String> {
    let letters: Vec<u8> = namespaces.iter().map(|(k, _)| k.letter()).collect();
    let fds: Vec<std::os::fd::BorrowedFd<'_>> = namespaces.iter().map(|(_, f)| *f).collect();
    // An empty message would read as the end of the stream: say "none" with a dot.
    let body = if letters.is_empty() {
        b".".to_vec()
    } else {
        letters
    };
    wire::send(socket, &body, &fds).map_err(|e| format!("sending the namespaces: {e}"))
}

/// Receive what [`send_namespaces`] sent.
pub fn receive_namespaces(socket: &impl AsFd) -> Result<Vec<(Kind, OwnedFd)>, String> {
    let (body, fds) = wire::receive(socket, 8).map_err(|e| format!("{e}"))?;
    if body.is_empty() {
        return Err("the server closed the connection instead of answering".into());
    }
    if body == b"." {
        return Ok(Vec::new());
    }
    if body.len() != fds.len() {
        return Err(format!(
            "{} namespaces named but {} descriptors sent",
            body.len(),
            fds.len()
        ));
    }
    body.iter()
        .zip(fds)
        .map(|(b, fd)| {
            Kind::from_letter(*b)
                .map(|k| (k, fd))
                .ok_or_else(|| format!("an unknown namespace letter {:?}", *b as char))
        })
        .collect()
}

#[cfg(test)]
mod tests;
