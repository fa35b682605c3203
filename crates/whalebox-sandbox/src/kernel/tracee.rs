//! Reading and steering one stopped tracee: the exec call it is making (from its
//! registers and memory), what it has just loaded (from /proc), refusing the call with
//! an errno, and a line on its own stderr. Every function expects the tracee to be in a
//! ptrace stop of ours.

use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::identity::Identities;

use nix::libc;
use nix::sys::ptrace;
use nix::unistd::Pid;

/// Longest path an exec can name (PATH_MAX).
const MAX_PATH: usize = 4096;
/// The most argv bytes read for a decision; the kernel's own limit is a quarter of the
/// stack limit (2 MiB by default), so a real exec stays well below.
const MAX_ARGV_BYTES: usize = 8 << 20;
const CHUNK: usize = 4096;

/// An `execve` or `execveat` as the tracee is making it.
#[derive(Debug, Clone)]
pub struct ExecCall {
    /// `execveat`'s directory descriptor (None: `execve`, or `AT_FDCWD`).
    pub dirfd: Option<i32>,
    /// The path argument, as bytes.
    pub path: Vec<u8>,
    /// `execveat` with `AT_EMPTY_PATH` and an empty path: the descriptor itself (fexecve).
    pub fd_itself: bool,
    /// argv; an empty argv is given as `[""]`, as the kernel runs it.
    pub argv: Vec<Vec<u8>>,
}

/// A file's identity, to tell whether the loaded image is the file that was decided.
pub type FileId = (u64, u64);

fn io(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The exec call of a tracee in a seccomp stop (the ptrace method).
pub fn exec_call(pid: Pid) -> Result<ExecCall, String> {
    let info = ptrace::syscall_info(pid).map_err(io)?;
    if info.op != libc::PTRACE_SYSCALL_INFO_SECCOMP {
        return Err("not in a seccomp stop".into());
    }
    // SAFETY: `op` says which member of the union the kernel filled.
    let call = unsafe { info.u.seccomp };
    exec_call_of(pid, call.nr as i64, &call.args)
}

/// The exec call `pid` makes, from the call's number and arguments (as a user
/// notification gives them) and the caller's memory.
pub fn exec_call_of(pid: Pid, nr: i64, args: &[u64; 6]) -> Result<ExecCall, String> {
    let (dirfd, path_at, argv_at, flags) = if nr == libc::SYS_execve {
        (None, args[0], args[1], 0)
    } else if nr == libc::SYS_execveat {
        let fd = args[0] as i32;
        (
            (fd != libc::AT_FDCWD).then_some(fd),
            args[1],
            args[2],
            args[4] as i32,
        )
    } else {
        return Err(format!("system call {nr} is not an exec"));
    };
    let mut mem = Mem::open(pid)?;
    let path = mem.read_cstr(path_at, MAX_PATH)?;
    let mut argv = mem.read_argv(argv_at)?;
    if argv.is_empty() {
        argv.push(Vec::new());
    }
    let fd_itself = path.is_empty() && flags & libc::AT_EMPTY_PATH != 0 && dirfd.is_some();
    Ok(ExecCall {
        dirfd,
        path,
        fd_itself,
        argv,
    })
}

/// A tracee's memory, read through `/proc/PID/mem` a page at a time, each page once:
/// unlike `process_vm_readv`, which pins the pages it reads and so makes the kernel copy
/// a page a fork still shares, a read of `mem` only looks at them; and argv's strings,
/// which usually sit side by side, come from one or two reads, not one each.
struct Mem {
    file: std::fs::File,
    pages: HashMap<u64, Box<[u8; CHUNK]>>,
}

impl Mem {
    fn open(pid: Pid) -> Result<Mem, String> {
        std::fs::File::open(proc_path(pid, "mem"))
            .map(|file| Mem {
                file,
                pages: HashMap::new(),
            })
            .map_err(|e| format!("cannot open the tracee's memory: {e}"))
    }

    /// The page holding `at`, and where `at` is in it.
    fn page(&mut self, at: u64) -> Result<(&[u8; CHUNK], usize), String> {
        use std::os::unix::fs::FileExt;
        let base = at - at % CHUNK as u64;
        if !self.pages.contains_key(&base) {
            if self.pages.len() * CHUNK > MAX_ARGV_BYTES + 2 * MAX_PATH {
                return Err(format!("argv longer than {MAX_ARGV_BYTES} bytes"));
            }
            let mut page = Box::new([0u8; CHUNK]);
            let n = self
                .file
                .read_at(&mut page[..], base)
                .map_err(|e| format!("cannot read the tracee's memory at {at:#x}: {e}"))?;
            if n != CHUNK {
                return Err(format!("a short read of the tracee's memory at {at:#x}"));
            }
            self.pages.insert(base, page);
        }
        Ok((&self.pages[&base], (at - base) as usize))
    }

    /// A NUL-terminated string, which may end just before an unmapped page.
    fn read_cstr(&mut self, mut at: u64, max: usize) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        loop {
            let (page, from) = self.page(at)?;
            let piece = &page[from..];
            if let Some(end) = memchr::memchr(0, piece) {
                out.extend_from_slice(&piece[..end]);
                return Ok(out);
            }
            out.extend_from_slice(piece);
            if out.len() > max {
                return Err(format!("a string longer than {max} bytes"));
            }
            at += piece.len() as u64;
        }
    }

    fn read_argv(&mut self, mut at: u64) -> Result<Vec<Vec<u8>>, String> {
        let mut argv = Vec::new();
        if at == 0 {
            return Ok(argv);
        }
        let mut total = 0usize;
        loop {
            // A pointer may straddle two pages: read it whole.
            let mut word = [0u8; 8];
            for (i, b) in word.iter_mut().enumerate() {
                let (page, from) = self.page(at + i as u64)?;
                *b = page[from];
            }
            let ptr = u64::from_ne_bytes(word);
            if ptr == 0 {
                return Ok(argv);
            }
            let s = self.read_cstr(ptr, MAX_ARGV_BYTES)?;
            total += s.len() + 1;
            if total > MAX_ARGV_BYTES {
                return Err(format!("argv longer than {MAX_ARGV_BYTES} bytes"));
            }
            argv.push(s);
            at += 8;
        }
    }
}

fn proc_path(pid: Pid, rest: &str) -> PathBuf {
    PathBuf::from(format!("/proc/{pid}/{rest}"))
}

fn link(path: &Path) -> String {
    std::fs::read_link(path)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn join(base: &str, rel: &[u8]) -> String {
    let rel = String::from_utf8_lossy(rel);
    let rel = rel.trim_start_matches("./");
    if base.ends_with('/') {
        format!("{base}{rel}")
    } else {
        format!("{base}/{rel}")
    }
}

impl ExecCall {
    /// Where the tracer can reach the file the call names, from the tracee's own root,
    /// working directory or descriptor.
    pub fn reachable(&self, pid: Pid) -> PathBuf {
        if self.fd_itself {
            let fd = self.dirfd.unwrap_or(-1);
            return proc_path(pid, &format!("fd/{fd}"));
        }
        let rel = std::ffi::OsStr::from_bytes(&self.path);
        // `/proc/self/…` is the caller's, not the gate's own (`/proc/self/fd/N` is how a
        // memfd or a deleted file is run by path).
        for own in [&b"/proc/self/"[..], b"/proc/thread-self/"] {
            if let Some(rest) = self.path.strip_prefix(own) {
                return proc_path(pid, &String::from_utf8_lossy(rest));
            }
        }
        if self.path.starts_with(b"/") {
            let mut p = proc_path(pid, "root").into_os_string();
            p.push(rel);
            return p.into();
        }
        match self.dirfd {
            Some(fd) => proc_path(pid, &format!("fd/{fd}")).join(rel),
            None => proc_path(pid, "cwd").join(rel),
        }
    }

    /// The program as the decision names it: an absolute path, spelled as the caller
    /// spelled it (symlinks kept, so `python3` stays `python3`).
    pub fn shown(&self, pid: Pid) -> String {
        if self.fd_itself {
            return link(&proc_path(pid, &format!("fd/{}", self.dirfd.unwrap_or(-1))));
        }
        if self.path.starts_with(b"/") {
            return String::from_utf8_lossy(&self.path).into_owned();
        }
        let base = match self.dirfd {
            Some(fd) => link(&proc_path(pid, &format!("fd/{fd}"))),
            None => link(&proc_path(pid, "cwd")),
        };
        join(&base, &self.path)
    }

    /// The path string the kernel hands a script's interpreter (binfmt_script puts the
    /// name the exec was given, or /dev/fd/N for a descriptor).
    pub fn script_name(&self) -> Vec<u8> {
        match (self.fd_itself, self.dirfd) {
            (true, Some(fd)) => format!("/dev/fd/{fd}").into_bytes(),
            (false, Some(fd)) if !self.path.starts_with(b"/") => {
                let mut p = format!("/dev/fd/{fd}/").into_bytes();
                p.extend_from_slice(&self.path);
                p
            }
            _ => self.path.clone(),
        }
    }
}

/// What an exec would load: its identity, and for a `#!` script the interpreter line.
#[derive(Debug, Clone)]
pub struct Target {
    pub id: FileId,
    /// `#!INTERPRETER [ARG]`, as the kernel splits it.
    pub shebang: Option<(Vec<u8>, Option<Vec<u8>>)>,
    /// The file's own path, symlinks resolved, as the kernel names the open file
    /// (`/memfd:x (deleted)` for a file with no name): decided as well as the name the
    /// exec was called by, so a link or a descriptor does not rename the program.
    pub real: Option<String>,
    /// The known program whose content the file has (a renamed copy): decided too.
    pub copy_of: Option<String>,
}

/// The file an exec names, if it is one the kernel could run (a regular file with an
/// execute bit); Err is the errno the call fails with on its own (ENOENT, EACCES…).
/// What is judged is the file opened here (its id, head, name and content), not a
/// second walk of the path, which the task may change meanwhile.
pub fn target(reachable: &Path, known: &Identities) -> Result<Target, i32> {
    let runnable = |meta: &std::fs::Metadata| meta.is_file() && meta.mode() & 0o111 != 0;
    // Looked at before it is opened: opening a FIFO or a device has effects of its own.
    let named =
        std::fs::metadata(reachable).map_err(|e| e.raw_os_error().unwrap_or(libc::ENOENT))?;
    if !runnable(&named) {
        return Err(libc::EACCES);
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(reachable);
    let meta = match file.as_ref().map(std::fs::File::metadata) {
        Ok(Ok(meta)) if runnable(&meta) => meta,
        Ok(_) => return Err(libc::EACCES),
        // An execute-only file (no read bit) runs without being readable.
        Err(_) => named,
    };
    let mut head = [0u8; 256];
    let n = file.as_ref().map_or(0, |mut f| {
        std::io::Read::read(&mut f, &mut head).unwrap_or(0)
    });
    let real = file.as_ref().ok().and_then(|f| {
        use std::os::fd::AsRawFd;
        std::fs::read_link(format!("/proc/self/fd/{}", f.as_raw_fd()))
            .ok()
            .map(|p| p.to_string_lossy().into_owned())
    });
    let copy_of = file.as_ref().ok().and_then(|f| known.of(f));
    Ok(Target {
        id: (meta.dev(), meta.ino()),
        shebang: shebang(&head[..n]),
        real,
        copy_of,
    })
}

/// The interpreter and optional argument of a `#!` line, split as binfmt_script does:
/// blanks after `#!`, the interpreter up to a blank, the rest (trimmed) as one argument.
fn shebang(head: &[u8]) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
    let line = head.strip_prefix(b"#!")?;
    let line = &line[..memchr::memchr(b'\n', line).unwrap_or(line.len())];
    let blank = |c: &u8| *c == b' ' || *c == b'\t';
    let start = line.iter().position(|c| !blank(c))?;
    let line = &line[start..];
    let end = line.iter().position(blank).unwrap_or(line.len());
    let interp = line[..end].to_vec();
    let rest = &line[end..];
    let rest_start = rest.iter().position(|c| !blank(c));
    let arg = rest_start.map(|s| {
        let r = &rest[s..];
        let e = r.iter().rposition(|c| !blank(c)).map_or(0, |e| e + 1);
        r[..e].to_vec()
    });
    Some((interp, arg.filter(|a| !a.is_empty())))
}

/// What a tracee has just loaded, read at its exec event (argv and the image can no
/// longer change: the old threads are gone and the new image has not run).
#[derive(Debug, Clone)]
pub struct Loaded {
    pub id: Option<FileId>,
    pub argv: Vec<Vec<u8>>,
}

pub fn loaded(pid: Pid) -> Loaded {
    let id = std::fs::metadata(proc_path(pid, "exe"))
        .ok()
        .map(|m| (m.dev(), m.ino()));
    let raw = std::fs::read(proc_path(pid, "cmdline")).unwrap_or_default();
    let mut argv: Vec<Vec<u8>> = raw.split(|b| *b == 0).map(<[u8]>::to_vec).collect();
    // The area ends with a NUL, which leaves one empty piece after it.
    if raw.last() == Some(&0) {
        argv.pop();
    }
    if argv.is_empty() {
        argv.push(Vec::new());
    }
    Loaded { id, argv }
}

/// The file a tracee runs, as a path (for a question about an image nobody decided).
pub fn exe(pid: Pid) -> String {
    link(&proc_path(pid, "exe"))
}

/// The identity of the image a tracee is running now.
pub fn running(pid: Pid) -> Option<FileId> {
    std::fs::metadata(proc_path(pid, "exe"))
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

pub fn cwd(pid: Pid) -> String {
    link(&proc_path(pid, "cwd"))
}

/// Refuse the exec call a tracee is stopped in: the call is skipped and returns
/// `-errno` to the caller.
#[cfg(target_arch = "x86_64")]
pub fn fail_call(pid: Pid, errno: i32) -> nix::Result<()> {
    let mut regs = ptrace::getregs(pid)?;
    regs.orig_rax = u64::MAX;
    regs.rax = (-(errno as i64)) as u64;
    ptrace::setregs(pid, regs)
}

#[cfg(not(target_arch = "x86_64"))]
pub fn fail_call(_pid: Pid, _errno: i32) -> nix::Result<()> {
    // Unreachable: the gate refuses to start on other architectures (filter.rs).
    Err(nix::errno::Errno::ENOSYS)
}

fn thread_group(pid: Pid) -> Option<i32> {
    let status = std::fs::read_to_string(proc_path(pid, "status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Write `line` on the tracee's own stderr (its descriptor 2, duplicated with
/// pidfd_getfd, so it lands where the program's own messages go). Skipped when the
/// descriptor is not ready to take it: the gate never blocks on a full pipe.
pub fn tell(pid: Pid, line: &str) {
    let Some(tgid) = thread_group(pid) else {
        return;
    };
    // SAFETY: plain system calls; the descriptors returned are owned below.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, tgid, 0) };
    if pidfd < 0 {
        return;
    }
    // SAFETY: pidfd_open returned a new descriptor.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as i32) };
    let fd = unsafe {
        libc::syscall(
            libc::SYS_pidfd_getfd,
            std::os::fd::AsRawFd::as_raw_fd(&pidfd),
            2,
            0,
        )
    };
    if fd < 0 {
        return;
    }
    // SAFETY: pidfd_getfd returned a new descriptor.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    let mut pfd = [nix::poll::PollFd::new(
        std::os::fd::AsFd::as_fd(&fd),
        nix::poll::PollFlags::POLLOUT,
    )];
    if !matches!(
        nix::poll::poll(&mut pfd, nix::poll::PollTimeout::ZERO),
        Ok(1)
    ) {
        return;
    }
    let mut text: String = line.chars().take(1000).collect();
    text.push('\n');
    let _ = nix::unistd::write(&fd, text.as_bytes());
}

/// Kill a tracee stopped at its exec event before its image runs, saying why on its
/// stderr (the caller then lets the stop go, by its method).
pub fn kill_before_run(pid: Pid, shown: &str, reason: &str) {
    tell(
        pid,
        &format!("whalebox: killed {shown} before it ran: {reason}"),
    );
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
}

/// argv for the decision server: lossy UTF-8, as zsh's gate sends it.
pub fn strings(argv: &[Vec<u8>]) -> Vec<String> {
    argv.iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

/// A C string of `bytes`, for the root's exec.
pub fn cstring(bytes: &[u8]) -> Result<CString, String> {
    CString::new(bytes).map_err(|_| "an argument contains a NUL byte".to_string())
}

#[cfg(test)]
mod tests {
    use super::shebang;

    #[test]
    fn shebang_lines_split_like_the_kernel() {
        let s = |h: &str| {
            shebang(h.as_bytes()).map(|(i, a)| {
                (
                    String::from_utf8(i).unwrap(),
                    a.map(|a| String::from_utf8(a).unwrap()),
                )
            })
        };
        assert_eq!(s("#!/bin/sh\necho"), Some(("/bin/sh".into(), None)));
        assert_eq!(
            s("#! /usr/bin/env  python3 -u \n"),
            Some(("/usr/bin/env".into(), Some("python3 -u".into())))
        );
        assert_eq!(
            s("#!\t/usr/bin/touch"),
            Some(("/usr/bin/touch".into(), None))
        );
        assert_eq!(s("echo hi"), None);
        assert_eq!(s("#!   \n"), None);
    }
}
