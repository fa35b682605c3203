//! Opening a file beneath a trusted directory descriptor without following links: what
//! whalebox opens or writes on a model's behalf (the file tools, the checkpoint scanner
//! and restore) goes through here, so a task that swaps a directory for a symlink to
//! `/proc/self` (or `/root`) between a check and a use gets a refusal, never the
//! server's own files or a write outside the workspace.
//!
//! `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS` does
//! it in one call (and `RESOLVE_NO_XDEV` where no mount may be crossed). A kernel
//! without it (before 5.6: `ENOSYS`) gets a walk of one `openat(O_NOFOLLOW)` per
//! component, never a path open. [`Dir`] holds a directory open and does the rest of a
//! write (create, rename, remove, chmod) by name in it.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, OpenHow, RenameFlags, ResolveFlag, openat, openat2};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, fstatat, mkdirat};
use nix::unistd::{UnlinkatFlags, symlinkat, unlinkat};

/// Open `rel` (relative, no `..`) beneath `dir` with `flags`, following no symlink at
/// any component and crossing no mount. A link on the way is `ELOOP`, a mount `EXDEV`.
pub fn open_beneath(dir: impl AsFd, rel: &Path, flags: OFlag) -> io::Result<OwnedFd> {
    open_resolving(dir.as_fd(), rel, flags, false)
}

/// As [`open_beneath`], but mounts on the way are crossed: a workspace may hold a mount
/// (a tmpfs for `node_modules`, a bind-mounted cache) that the model's own reads and
/// writes reach, and a task cannot mount anything the server sees.
pub fn open_within(dir: impl AsFd, rel: &Path, flags: OFlag) -> io::Result<OwnedFd> {
    open_resolving(dir.as_fd(), rel, flags, true)
}

fn open_resolving(
    dir: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlag,
    cross_mounts: bool,
) -> io::Result<OwnedFd> {
    let flags = flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let mut resolve = ResolveFlag::RESOLVE_BENEATH
        | ResolveFlag::RESOLVE_NO_SYMLINKS
        | ResolveFlag::RESOLVE_NO_MAGICLINKS;
    if !cross_mounts {
        resolve |= ResolveFlag::RESOLVE_NO_XDEV;
    }
    let how = OpenHow::new().flags(flags).resolve(resolve);
    match openat2(dir, rel, how) {
        Err(Errno::ENOSYS) => walk(dir, rel, flags, cross_mounts),
        other => other.map_err(io::Error::from),
    }
}

/// The fallback: component by component, each opened with `O_NOFOLLOW` relative to the
/// last, each on the starting directory's device unless mounts may be crossed.
fn walk(dir: impl AsFd, rel: &Path, flags: OFlag, cross_mounts: bool) -> io::Result<OwnedFd> {
    let dev = fstat(dir.as_fd())?.st_dev;
    let parts: Vec<_> = rel.components().collect();
    let mut cur: Option<OwnedFd> = None;
    for (i, part) in parts.iter().enumerate() {
        let name = match part {
            Component::Normal(n) => *n,
            Component::CurDir => ".".as_ref(),
            _ => return Err(Errno::EXDEV.into()),
        };
        let last = i + 1 == parts.len();
        let f = if last {
            flags
        } else {
            OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_RDONLY
        };
        let at = match &cur {
            Some(fd) => openat(fd.as_fd(), name, f, Mode::empty()),
            None => openat(dir.as_fd(), name, f, Mode::empty()),
        }?;
        if !cross_mounts && fstat(at.as_fd())?.st_dev != dev {
            return Err(Errno::EXDEV.into());
        }
        cur = Some(at);
    }
    match cur {
        Some(fd) => Ok(fd),
        None => Err(Errno::ENOENT.into()),
    }
}

/// A directory held open by descriptor. Every operation names what it touches relative
/// to it, walked without following a link, so what was checked is what is used: a
/// component swapped for a link meanwhile is refused (`ELOOP`), never followed.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
}

impl Dir {
    /// Open the directory at `path`, a physical path (no link in it; the final component
    /// is not followed).
    pub fn open(path: &Path) -> io::Result<Dir> {
        let fd = nix::fcntl::open(
            path,
            OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Dir { fd })
    }

    /// The directory `rel` beneath this one (crossing mounts, following no link).
    pub fn sub(&self, rel: &Path) -> io::Result<Dir> {
        let fd = open_within(&self.fd, rel, OFlag::O_DIRECTORY | OFlag::O_RDONLY)?;
        Ok(Dir { fd })
    }

    /// The directory `rel` beneath this one, made (with `mode`, less the umask) where
    /// missing. A link or a file on the way is an error naming how far the walk got,
    /// so nothing is ever made or written through a link.
    pub fn make_dirs(&self, rel: &Path, mode: u32) -> io::Result<Dir> {
        let mut cur: Option<Dir> = None;
        let mut done = PathBuf::new();
        for part in rel.components() {
            let name = match part {
                Component::Normal(n) => n,
                Component::CurDir => continue,
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("{} leaves the directory", rel.display()),
                    ));
                }
            };
            done.push(name);
            let at = cur.as_ref().unwrap_or(self);
            let flags = OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_NOFOLLOW;
            let opened = match openat(&at.fd, name, flags | OFlag::O_CLOEXEC, Mode::empty()) {
                Err(Errno::ENOENT) => {
                    match mkdirat(&at.fd, name, Mode::from_bits_truncate(mode)) {
                        Ok(()) | Err(Errno::EEXIST) => {}
                        Err(e) => return Err(e.into()),
                    }
                    openat(&at.fd, name, flags | OFlag::O_CLOEXEC, Mode::empty())
                }
                other => other,
            };
            let fd = opened.map_err(|e| match e {
                Errno::ELOOP | Errno::ENOTDIR => io::Error::new(
                    io::ErrorKind::NotADirectory,
                    format!(
                        "{} is not a directory (a link or a file), so nothing is written under it",
                        done.display()
                    ),
                ),
                e => e.into(),
            })?;
            cur = Some(Dir { fd });
        }
        match cur {
            Some(dir) => Ok(dir),
            None => self.try_clone(),
        }
    }

    pub fn try_clone(&self) -> io::Result<Dir> {
        Ok(Dir {
            fd: self.fd.try_clone()?,
        })
    }

    /// Open the file `rel` beneath this directory with `flags` (no link followed).
    pub fn open_file(&self, rel: &Path, flags: OFlag) -> io::Result<File> {
        Ok(File::from(open_within(&self.fd, rel, flags)?))
    }

    /// Create `name` here, which must not exist (not even as a link), for writing.
    pub fn create_new(&self, name: &OsStr, mode: u32) -> io::Result<File> {
        let fd = openat(
            &self.fd,
            name,
            OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_WRONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(mode),
        )?;
        Ok(File::from(fd))
    }

    /// What `name` here is, not following a link; `None` when there is nothing.
    pub fn stat(&self, name: &OsStr) -> io::Result<Option<FileStat>> {
        match fstatat(&self.fd, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(st)),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Rename `from` here to `to` in `to_dir`, replacing what is there.
    pub fn rename(&self, from: &OsStr, to_dir: &Dir, to: &OsStr) -> io::Result<()> {
        nix::fcntl::renameat(&self.fd, from, &to_dir.fd, to).map_err(io::Error::from)
    }

    /// Rename `from` here to `to` in `to_dir` only if nothing is there (`EEXIST`). A
    /// file system without `RENAME_NOREPLACE` (NFS, FUSE without rename2: `EINVAL`) gets
    /// a hard link, which fails on an existing name just the same, then an unlink of
    /// `from`: once linked the file is in place, so an unlink that fails leaves `from`
    /// behind (a caller's leftover to sweep), not a failed rename.
    pub fn rename_noreplace(&self, from: &OsStr, to_dir: &Dir, to: &OsStr) -> io::Result<()> {
        let flags = RenameFlags::RENAME_NOREPLACE;
        match nix::fcntl::renameat2(&self.fd, from, &to_dir.fd, to, flags) {
            Err(Errno::EINVAL | Errno::ENOSYS) => {
                nix::unistd::linkat(&self.fd, from, &to_dir.fd, to, AtFlags::empty())?;
                let _ = self.remove_file(from);
                Ok(())
            }
            other => other.map_err(io::Error::from),
        }
    }

    pub fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        unlinkat(&self.fd, name, UnlinkatFlags::NoRemoveDir).map_err(io::Error::from)
    }

    pub fn remove_dir(&self, name: &OsStr) -> io::Result<()> {
        unlinkat(&self.fd, name, UnlinkatFlags::RemoveDir).map_err(io::Error::from)
    }

    /// Remove `name` here and everything under it, following no link.
    pub fn remove_tree(&self, name: &OsStr) -> io::Result<()> {
        match self.stat(name)? {
            None => Ok(()),
            Some(st) if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFDIR => {
                let sub = self.sub(Path::new(name))?;
                for entry in sub.entries()? {
                    sub.remove_tree(&entry)?;
                }
                self.remove_dir(name)
            }
            Some(_) => self.remove_file(name),
        }
    }

    pub fn symlink(&self, target: &Path, name: &OsStr) -> io::Result<()> {
        symlinkat(target, &self.fd, name).map_err(io::Error::from)
    }

    /// Set the mode of `name` here, refusing a link (chmod would follow it).
    pub fn chmod(&self, name: &OsStr, mode: u32) -> io::Result<()> {
        let fd = openat(
            &self.fd,
            name,
            OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        if SFlag::from_bits_truncate(fstat(&fd)?.st_mode) & SFlag::S_IFMT == SFlag::S_IFLNK {
            return Err(Errno::ELOOP.into());
        }
        // An O_PATH descriptor takes no fchmod; its /proc entry names that inode.
        let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode))
    }

    /// The names in this directory (without `.` and `..`).
    pub fn entries(&self) -> io::Result<Vec<OsString>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))? {
            names.push(entry?.file_name());
        }
        Ok(names)
    }

    /// The entries of this directory (without `.` and `..`) with what each is, as the
    /// directory listing says, not following a link: a walk descends only into a
    /// [`Kind::Dir`], and through [`Dir::sub`], so an entry swapped for a link after this
    /// listing is refused there, never followed.
    pub fn list(&self) -> io::Result<Vec<Entry>> {
        // Read on this descriptor from its start (a second listing reads it all again):
        // getdents64 directly, since opendir(3) would open, stat and fcntl the directory
        // again for every one a walk lists.
        nix::unistd::lseek(&self.fd, 0, nix::unistd::Whence::SeekSet)?;
        let mut buf = vec![0u8; 32 * 1024];
        let mut entries = Vec::new();
        loop {
            // SAFETY: the kernel writes at most `buf.len()` bytes of dirent64 records.
            let n = unsafe {
                nix::libc::syscall(
                    nix::libc::SYS_getdents64,
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr(),
                    buf.len(),
                )
            };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            if n == 0 {
                return Ok(entries);
            }
            let mut at = 0usize;
            while at + 19 < n as usize {
                // struct linux_dirent64: u64 ino, i64 off, u16 reclen, u8 type, name\0.
                let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
                let d_type = buf[at + 18];
                let record = &buf[at + 19..at + reclen];
                at += reclen;
                let name = &record[..record.iter().position(|&b| b == 0).unwrap_or(record.len())];
                if name == b"." || name == b".." {
                    continue;
                }
                let name = OsStr::from_bytes(name);
                // The listing's type, or an lstat relative to this directory where the
                // file system gives none: never a followed link.
                let kind = match d_type {
                    nix::libc::DT_LNK => Kind::Symlink,
                    nix::libc::DT_DIR => Kind::Dir,
                    nix::libc::DT_REG => Kind::File,
                    nix::libc::DT_UNKNOWN => {
                        match fstatat(&self.fd, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
                            Ok(st) => {
                                match SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) {
                                    SFlag::S_IFLNK => Kind::Symlink,
                                    SFlag::S_IFDIR => Kind::Dir,
                                    SFlag::S_IFREG => Kind::File,
                                    _ => Kind::Other,
                                }
                            }
                            // Gone since the listing: nothing to show.
                            Err(_) => continue,
                        }
                    }
                    _ => Kind::Other,
                };
                entries.push(Entry {
                    name: name.to_os_string(),
                    kind,
                });
            }
        }
    }

    /// The target of the link `name` here.
    pub fn read_link(&self, name: &OsStr) -> io::Result<PathBuf> {
        nix::fcntl::readlinkat(&self.fd, name)
            .map(PathBuf::from)
            .map_err(io::Error::from)
    }

    /// Flush the directory (a rename in it) to disk.
    pub fn sync(&self) -> io::Result<()> {
        nix::unistd::fsync(&self.fd).map_err(io::Error::from)
    }
}

/// One entry of [`Dir::list`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: OsString,
    pub kind: Kind,
}

/// What a directory entry is, the entry itself (a link is a [`Kind::Symlink`], whatever
/// it points to).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
    Symlink,
    Other,
}

impl From<Dir> for OwnedFd {
    fn from(dir: Dir) -> OwnedFd {
        dir.fd
    }
}

impl AsFd for Dir {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Split a relative path into its parent (possibly empty) and final name.
pub fn split(rel: &Path) -> io::Result<(&Path, &OsStr)> {
    let name = rel.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} names no file", rel.display()),
        )
    })?;
    Ok((rel.parent().unwrap_or(Path::new("")), name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_a_link_on_the_way_and_opens_what_is_beneath() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir(root.join("d")).unwrap();
        std::fs::write(root.join("d/f"), "x").unwrap();
        std::os::unix::fs::symlink("/proc/self", root.join("l")).unwrap();
        std::os::unix::fs::symlink("d", root.join("inner")).unwrap();
        let dir = std::fs::File::open(root).unwrap();
        for how in [0, 1] {
            let open = |rel: &str, flags| {
                if how == 0 {
                    open_beneath(&dir, Path::new(rel), flags)
                } else {
                    walk(&dir, Path::new(rel), flags | OFlag::O_NOFOLLOW, false)
                }
            };
            assert!(open("d/f", OFlag::O_RDONLY).is_ok());
            assert!(open("l/status", OFlag::O_RDONLY).is_err(), "magic link");
            assert!(open("l", OFlag::O_RDONLY).is_err(), "final link");
            assert!(open("inner/f", OFlag::O_RDONLY).is_err(), "any link");
            assert!(open("../x", OFlag::O_RDONLY).is_err(), "outside");
        }
    }

    #[test]
    fn a_dir_walks_and_writes_without_following_a_link() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join("ws/real")).unwrap();
        std::fs::create_dir(root.join("out")).unwrap();
        std::fs::write(root.join("out/keep"), "outside").unwrap();
        std::os::unix::fs::symlink(root.join("out"), root.join("ws/link")).unwrap();
        std::os::unix::fs::symlink(root.join("out/keep"), root.join("ws/file_link")).unwrap();
        let ws = Dir::open(&root.join("ws")).unwrap();

        let made = ws.make_dirs(Path::new("real/a/b"), 0o755).unwrap();
        made.create_new(OsStr::new("f"), 0o644).unwrap();
        assert!(root.join("ws/real/a/b/f").is_file());
        let refused = ws.make_dirs(Path::new("link/x"), 0o755).unwrap_err();
        assert!(
            refused.to_string().contains("link is not a directory"),
            "{refused}"
        );
        assert!(!root.join("out/x").exists());
        assert!(ws.sub(Path::new("link")).is_err());
        assert!(ws.create_new(OsStr::new("file_link"), 0o644).is_err());
        assert!(ws.chmod(OsStr::new("file_link"), 0o777).is_err());
        assert!(
            ws.open_file(Path::new("link/keep"), OFlag::O_RDONLY)
                .is_err()
        );

        // A listing names a link as a link, whatever it points to, and reads it.
        let mut listed = ws.list().unwrap();
        listed.sort_by(|a, b| a.name.cmp(&b.name));
        let kinds: Vec<_> = listed
            .iter()
            .map(|e| (e.name.to_str().unwrap(), e.kind))
            .collect();
        assert_eq!(
            kinds,
            [
                ("file_link", Kind::Symlink),
                ("link", Kind::Symlink),
                ("real", Kind::Dir),
            ]
        );
        assert_eq!(ws.read_link(OsStr::new("link")).unwrap(), root.join("out"));

        // A tree holding a link is removed without following it.
        std::os::unix::fs::symlink(root.join("out"), root.join("ws/real/a/l")).unwrap();
        ws.remove_tree(OsStr::new("real")).unwrap();
        assert!(!root.join("ws/real").exists());
        assert_eq!(
            std::fs::read_to_string(root.join("out/keep")).unwrap(),
            "outside"
        );
    }
}
