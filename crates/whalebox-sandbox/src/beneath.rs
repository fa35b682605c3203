//! Opening a file beneath a trusted directory descriptor without following links: what
//! whalebox opens on a model's behalf (the checkpoint scanner first) goes through here,
//! so a task that swaps a directory for a symlink to `/proc/self` between a check and an
//! open gets a refusal, never the server's own files.
//!
//! `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
//! RESOLVE_NO_XDEV` does it in one call. A kernel without it (before 5.6: `ENOSYS`) gets
//! a walk of one `openat(O_NOFOLLOW)` per component and a device check, never a path open.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path};

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat, openat2};
use nix::sys::stat::{Mode, fstat};

/// Open `rel` (relative, no `..`) beneath `dir` with `flags`, following no symlink at
/// any component and crossing no mount. A link on the way is `ELOOP`, a mount `EXDEV`.
pub fn open_beneath(dir: impl AsFd, rel: &Path, flags: OFlag) -> io::Result<OwnedFd> {
    let flags = flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let how = OpenHow::new().flags(flags).resolve(
        ResolveFlag::RESOLVE_BENEATH
            | ResolveFlag::RESOLVE_NO_SYMLINKS
            | ResolveFlag::RESOLVE_NO_MAGICLINKS
            | ResolveFlag::RESOLVE_NO_XDEV,
    );
    match openat2(dir.as_fd(), rel, how) {
        Err(Errno::ENOSYS) => walk(dir, rel, flags),
        other => other.map_err(io::Error::from),
    }
}

/// The fallback: component by component, each opened with `O_NOFOLLOW` relative to the
/// last, each on the starting directory's device.
fn walk(dir: impl AsFd, rel: &Path, flags: OFlag) -> io::Result<OwnedFd> {
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
        if fstat(at.as_fd())?.st_dev != dev {
            return Err(Errno::EXDEV.into());
        }
        cur = Some(at);
    }
    match cur {
        Some(fd) => Ok(fd),
        None => Err(Errno::ENOENT.into()),
    }
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
                    walk(&dir, Path::new(rel), flags | OFlag::O_NOFOLLOW)
                }
            };
            assert!(open("d/f", OFlag::O_RDONLY).is_ok());
            assert!(open("l/status", OFlag::O_RDONLY).is_err(), "magic link");
            assert!(open("l", OFlag::O_RDONLY).is_err(), "final link");
            assert!(open("inner/f", OFlag::O_RDONLY).is_err(), "any link");
            assert!(open("../x", OFlag::O_RDONLY).is_err(), "outside");
        }
    }
}
