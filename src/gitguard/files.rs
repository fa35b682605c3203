//! The git guard's file operations, all relative to a trusted directory descriptor and
//! following no link ([`crate::guard::beneath`]): a task may have swapped any file or
//! directory of a repository for a symlink to whalebox's own state or the person's
//! global configuration, and the guard writes what it reads.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nix::errno::Errno;
use nix::fcntl::{OFlag, openat, readlinkat, renameat};
use nix::sys::stat::{FileStat, Mode, SFlag, fchmod, fstat, fstatat};
use nix::unistd::{UnlinkatFlags, unlinkat};

use crate::guard::beneath::open_beneath;

/// The largest file the guard reads (a config or a hook); a larger one is refused.
pub const MAX_BYTES: u64 = 4 << 20;

/// A place the guard looks: `rel` beneath the directory `base` (opened once, trusted),
/// shown as `shown`.
#[derive(Clone, Debug)]
pub struct Loc {
    pub base: Arc<File>,
    pub rel: PathBuf,
    pub shown: PathBuf,
}

/// What identifies a file's state: a change of content, mode or identity changes it
/// (ctime moves with every write and chmod, and no task can set it back).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Id {
    dev: u64,
    ino: u64,
    size: i64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    mode: u32,
}

impl Id {
    pub fn of(st: &FileStat) -> Id {
        Id {
            dev: st.st_dev,
            ino: st.st_ino,
            size: st.st_size,
            mtime: (st.st_mtime, st.st_mtime_nsec),
            ctime: (st.st_ctime, st.st_ctime_nsec),
            mode: st.st_mode,
        }
    }

    pub fn kind(&self) -> SFlag {
        SFlag::from_bits_truncate(self.mode & SFlag::S_IFMT.bits())
    }
}

impl Loc {
    pub fn join(&self, name: impl AsRef<Path>) -> Loc {
        Loc {
            base: Arc::clone(&self.base),
            rel: self.rel.join(name.as_ref()),
            shown: self.shown.join(name.as_ref()),
        }
    }

    /// The directory holding this place, opened beneath the base, and the name in it.
    fn parent(&self) -> io::Result<(OwnedFd, PathBuf)> {
        let name = self
            .rel
            .file_name()
            .map(PathBuf::from)
            .ok_or_else(|| io::Error::from(Errno::EINVAL))?;
        let dir = self.rel.parent().unwrap_or(Path::new(""));
        let fd = open_beneath(&*self.base, dir, OFlag::O_DIRECTORY | OFlag::O_RDONLY)?;
        Ok((fd, name))
    }

    /// The state of this place itself (a symlink's own), None when absent.
    pub fn stat(&self) -> io::Result<Option<Id>> {
        let got = if self.rel.as_os_str().is_empty() {
            fstat(self.base.as_fd())
        } else {
            match self.parent() {
                Ok((dir, name)) => fstatat(&dir, &name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW),
                Err(e) if gone(&e) => return Ok(None),
                Err(e) => return Err(e),
            }
        };
        match got {
            Ok(st) => Ok(Some(Id::of(&st))),
            Err(Errno::ENOENT | Errno::ENOTDIR) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// A regular file's bytes and state (None: absent). A link or anything else is an error.
    pub fn read(&self) -> io::Result<Option<(Vec<u8>, Id)>> {
        // Non-blocking: a fifo swapped in after the stat must not hang the server.
        let fd = match open_beneath(&*self.base, &self.rel, OFlag::O_RDONLY | OFlag::O_NONBLOCK) {
            Ok(fd) => fd,
            Err(e) if gone(&e) => return Ok(None),
            Err(e) => return Err(e),
        };
        let st = fstat(fd.as_fd())?;
        if SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) != SFlag::S_IFREG {
            return Err(io::Error::other("not a regular file"));
        }
        let mut bytes = Vec::new();
        File::from(fd).take(MAX_BYTES + 1).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > MAX_BYTES {
            return Err(io::Error::other(format!("larger than {MAX_BYTES} bytes")));
        }
        Ok(Some((bytes, Id::of(&st))))
    }

    /// A small text file git wrote (`.git` as a file, `commondir`): None when absent or
    /// not a regular file.
    pub fn read_small(&self) -> Option<String> {
        let (bytes, _) = self.read().ok()??;
        (bytes.len() < 64 * 1024).then(|| String::from_utf8_lossy(&bytes).into_owned())
    }

    /// A symlink's target (None: not a symlink or absent).
    pub fn link_target(&self) -> Option<PathBuf> {
        let (dir, name) = self.parent().ok()?;
        readlinkat(&dir, &name).ok().map(PathBuf::from)
    }

    /// The entries of this directory: name and state (not following links).
    pub fn list(&self) -> io::Result<Vec<(String, Id)>> {
        let fd = open_beneath(&*self.base, &self.rel, OFlag::O_DIRECTORY | OFlag::O_RDONLY)?;
        let mut dir = nix::dir::Dir::from_fd(fd)?;
        let raw = dir.as_fd().try_clone_to_owned()?;
        let mut out = Vec::new();
        for entry in dir.iter().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == "." || name == ".." {
                continue;
            }
            if let Ok(st) = fstatat(
                &raw,
                name.as_str(),
                nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
            ) {
                out.push((name, Id::of(&st)));
            }
            if out.len() >= 4096 {
                break;
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Replace this regular file with `bytes` (temporary file, fsync, rename in the same
    /// directory, the mode and owner kept), unless it changed since it was read as `was`.
    pub fn replace(&self, bytes: &[u8], was: &Id) -> io::Result<()> {
        let (dir, name) = self.parent()?;
        let now = fstatat(&dir, &name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)?;
        if Id::of(&now) != *was {
            return Err(io::Error::other("changed while whalebox read it"));
        }
        let tmp = PathBuf::from(format!(
            ".{}.whalebox-{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        let fd = openat(
            &dir,
            &tmp,
            OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_WRONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(0o600),
        )?;
        let written = (|| -> io::Result<()> {
            let _ = std::os::unix::fs::fchown(&fd, Some(now.st_uid), Some(now.st_gid));
            fchmod(fd.as_fd(), Mode::from_bits_truncate(now.st_mode & 0o7777))?;
            let mut f = File::from(fd);
            f.write_all(bytes)?;
            f.sync_all()?;
            renameat(&dir, &tmp, &dir, &name)?;
            Ok(())
        })();
        if written.is_err() {
            let _ = unlinkat(&dir, &tmp, UnlinkatFlags::NoRemoveDir);
        }
        written
    }

    /// Move this file (or symlink) out into `into` as `as_name`: its bytes (or, for a
    /// link, its target) are copied there, then it is removed. Returns where it went.
    pub fn quarantine(&self, into: &Path, as_name: &str) -> io::Result<PathBuf> {
        let (dir, name) = self.parent()?;
        let st = fstatat(&dir, &name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)?;
        let kind = Id::of(&st).kind();
        let (bytes, dest) = if kind == SFlag::S_IFLNK {
            let target = readlinkat(&dir, &name)?;
            (
                target.as_encoded_bytes().to_vec(),
                into.join(format!("{as_name}.symlink")),
            )
        } else if kind == SFlag::S_IFREG {
            match self.read()? {
                Some((bytes, _)) => (bytes, into.join(as_name)),
                None => return Err(Errno::ENOENT.into()),
            }
        } else {
            return Err(io::Error::other("not a file or a symlink"));
        };
        crate::gitguard::files::private_dir(into)?;
        let mut opts = std::fs::OpenOptions::new();
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        opts.write(true).create_new(true);
        let mut f = opts.open(&dest)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        unlinkat(&dir, &name, UnlinkatFlags::NoRemoveDir)?;
        Ok(dest)
    }
}

fn gone(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error().map(Errno::from_raw),
        Some(Errno::ENOENT | Errno::ENOTDIR)
    )
}

/// Open a directory named by a path whalebox trusts (the workspace, a verified linked
/// worktree's directories), not following a final link.
pub fn open_dir(path: &Path) -> io::Result<Arc<File>> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW).bits())
        .open(path)?;
    Ok(Arc::new(f))
}

/// Make `dir` (and its parents) readable by its owner only, as the checkpoint store is.
pub fn private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}
