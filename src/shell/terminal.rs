//! A PTY task's terminal, made in its session's own devpts instance.
//!
//! A session's mount namespace has a devpts instance of its own over `/dev/pts` (see
//! `whalebox_sandbox::spaces`), so the machine's other terminals, the person's included,
//! are out of a task's sight. A terminal the server opened on the machine's `/dev/ptmx`
//! would then have no name there (`tty` says "not a tty", `os.ttyname` fails), so a PTY
//! task's terminal is made inside the session: a short-lived helper
//! (`whalebox __terminal SERVER_PID JOIN`) joins the session's namespaces, which no thread
//! of the server can, opens `/dev/ptmx` there and hands the master back over a socket;
//! the server takes the other end with `TIOCGPTPEER` (never by name) and starts the
//! supervisor on it as its controlling terminal.

use std::ffi::OsString;
use std::io::{IoSlice, IoSliceMut, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;

use nix::libc;
use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags, recvmsg, sendmsg};

/// The hidden subcommand that runs [`main`].
pub const SUBCOMMAND: &str = "__terminal";

/// The helper: join the session (`args`: the server's pid, the supervisor's `--join`
/// value), open a terminal there and send its master on stdout (a unix socket). Errors
/// go to stderr, which the server reports.
pub fn main(args: Vec<OsString>) -> ! {
    let result = match args.as_slice() {
        [server, join] => server
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
            .ok_or_else(|| "a bad server pid".to_string())
            .and_then(|server| super::supervisor::join_namespaces(join, server))
            .and_then(|_| open_master())
            .and_then(|master| send_master(&master)),
        _ => Err(format!("usage: whalebox {SUBCOMMAND} SERVER_PID JOIN")),
    };
    match result {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1)
        }
    }
}

/// A new terminal's master, from `/dev/ptmx` as this process sees it, unlocked.
fn open_master() -> Result<OwnedFd, String> {
    let master = nix::fcntl::open(
        "/dev/ptmx",
        nix::fcntl::OFlag::O_RDWR | nix::fcntl::OFlag::O_NOCTTY | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(|e| format!("cannot open the session's /dev/ptmx: {e}"))?;
    let unlock: libc::c_int = 0;
    // SAFETY: TIOCSPTLCK reads one int from the pointer, valid for the call.
    if unsafe { libc::ioctl(master.as_raw_fd(), libc::TIOCSPTLCK, &unlock) } < 0 {
        return Err(format!(
            "cannot unlock the terminal: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(master)
}

fn send_master(master: &OwnedFd) -> Result<(), String> {
    let fds = [master.as_raw_fd()];
    sendmsg::<()>(
        1,
        &[IoSlice::new(b"m")],
        &[ControlMessage::ScmRights(&fds)],
        MsgFlags::empty(),
        None,
    )
    .map(drop)
    .map_err(|e| format!("cannot hand the terminal to the server: {e}"))
}

/// Both ends of a terminal made in a session.
pub struct Terminal {
    pub master: OwnedFd,
    pub slave: OwnedFd,
}

/// A terminal of `rows` × `cols` in the session whose `--join` value is `join`.
pub fn open_in_session(join: &str, rows: u16, cols: u16) -> std::io::Result<Terminal> {
    let (ours, theirs) = UnixStream::pair()?;
    let mut child = std::process::Command::new(std::env::current_exe()?)
        .arg(SUBCOMMAND)
        .arg(std::process::id().to_string())
        .arg(join)
        .env_clear()
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .stdout(OwnedFd::from(theirs))
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let mut why = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut why);
    }
    let status = child.wait()?;
    let master = if status.success() {
        receive_master(&ours)?
    } else {
        return Err(std::io::Error::other(format!(
            "cannot make the task's terminal in its session: {}",
            why.trim()
        )));
    };
    set_size(&master, rows, cols)?;
    // The other end by the master, not by a name a task could have replaced.
    // SAFETY: TIOCGPTPEER takes open flags by value and returns a new descriptor.
    let slave = unsafe {
        libc::ioctl(
            master.as_raw_fd(),
            libc::TIOCGPTPEER,
            libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC,
        )
    };
    if slave < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a descriptor the kernel just returned, owned by nobody else.
    let slave = unsafe { OwnedFd::from_raw_fd(slave) };
    Ok(Terminal { master, slave })
}

fn receive_master(socket: &UnixStream) -> std::io::Result<OwnedFd> {
    socket.set_nonblocking(true)?;
    let mut byte = [0u8; 1];
    let mut iov = [IoSliceMut::new(&mut byte)];
    let mut space = nix::cmsg_space!([RawFd; 1]);
    let msg = recvmsg::<()>(
        socket.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_CMSG_CLOEXEC,
    )
    .map_err(std::io::Error::from)?;
    for cmsg in msg.cmsgs().map_err(std::io::Error::from)? {
        if let ControlMessageOwned::ScmRights(fds) = cmsg {
            // SAFETY: descriptors received just now, owned by nobody else.
            let mut owned = fds
                .into_iter()
                .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) });
            if let Some(master) = owned.next() {
                return Ok(master);
            }
        }
    }
    Err(std::io::Error::other(
        "the terminal helper sent no terminal",
    ))
}

/// Set the terminal's window size.
pub fn set_size(master: &OwnedFd, rows: u16, cols: u16) -> std::io::Result<()> {
    let size = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads one winsize from the pointer, valid for the call.
    if unsafe { libc::ioctl(master.as_raw_fd(), libc::TIOCSWINSZ, &size) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Start `exe args` on `terminal`: its own session, the terminal its controlling one
/// and its three standard streams.
pub fn spawn_on(
    terminal: &Terminal,
    exe: &Path,
    args: &[OsString],
    env: &[(String, String)],
    cwd: &Path,
) -> std::io::Result<std::process::Child> {
    let mut cmd = std::process::Command::new(exe);
    cmd.args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd)
        .stdin(terminal.slave.try_clone()?)
        .stdout(terminal.slave.try_clone()?)
        .stderr(terminal.slave.try_clone()?);
    // SAFETY: only async-signal-safe calls (setsid, ioctl) between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn()
}
