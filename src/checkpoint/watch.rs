//! Which directories changed since the last scan, from the kernel (inotify), so a
//! checkpoint of a tree that did not change costs a read of an empty event queue, and
//! one after a change re-lists only the directories it touched.
//!
//! Every directory the scanner enters is watched before it is listed (nothing between
//! the listing and the watch is missed). An event names the directory it happened in;
//! a queue overflow, or a directory the kernel would not watch (the
//! `max_user_watches` limit), makes the next scan a full stat pass. What inotify does
//! not see (a write through a shared mapping, a write through a hard link from outside
//! the workspace) is caught by the full pass a restore always makes.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use nix::errno::Errno;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};

/// What the next scan must look at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dirty {
    /// Everything (the first scan, an overflow, no watches).
    All,
    /// These directories (relative, `""` the root) and every directory above them.
    Dirs(HashSet<String>),
}

impl Dirty {
    /// Whether the directory `rel` must be listed again.
    pub fn visit(&self, rel: &str) -> bool {
        match self {
            Dirty::All => true,
            Dirty::Dirs(set) => set.contains(rel),
        }
    }
}

pub struct Watch {
    fd: Inotify,
    dirs: HashMap<WatchDescriptor, String>,
    /// Set when an event was lost or a directory could not be watched.
    overflowed: bool,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("dirs", &self.dirs.len())
            .finish()
    }
}

fn mask() -> AddWatchFlags {
    AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_MODIFY
        | AddWatchFlags::IN_ATTRIB
        | AddWatchFlags::IN_CLOSE_WRITE
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_MOVE_SELF
        | AddWatchFlags::IN_ONLYDIR
        | AddWatchFlags::IN_DONT_FOLLOW
}

impl Watch {
    /// A watcher, or why the kernel gives none.
    pub fn new() -> Result<Watch, String> {
        let fd = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)
            .map_err(|e| format!("inotify: {e}"))?;
        Ok(Watch {
            fd,
            dirs: HashMap::new(),
            overflowed: false,
        })
    }

    /// Watch the directory `abs`, known as `rel`. A directory seen under a new name (a
    /// rename) keeps its watch, now under the new name.
    pub fn add(&mut self, abs: &Path, rel: &str) {
        match self.fd.add_watch(abs, mask()) {
            Ok(wd) => {
                self.dirs.insert(wd, rel.to_string());
            }
            // Gone already: its parent's listing says so.
            Err(Errno::ENOENT) | Err(Errno::ENOTDIR) => {}
            Err(e) => {
                tracing::debug!("checkpoints: cannot watch {}: {e}", abs.display());
                self.overflowed = true;
            }
        }
    }

    /// How many directories are watched.
    pub fn len(&self) -> usize {
        self.dirs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty()
    }

    /// Read every event queued since the last call.
    pub fn drain(&mut self) -> Dirty {
        let mut dirty = HashSet::new();
        loop {
            let events = match self.fd.read_events() {
                Ok(e) if e.is_empty() => break,
                Ok(e) => e,
                Err(Errno::EAGAIN) => break,
                Err(Errno::EINTR) => continue,
                Err(e) => {
                    tracing::debug!("checkpoints: inotify read: {e}");
                    self.overflowed = true;
                    break;
                }
            };
            for ev in events {
                if ev.mask.contains(AddWatchFlags::IN_Q_OVERFLOW) {
                    self.overflowed = true;
                    continue;
                }
                if ev.mask.contains(AddWatchFlags::IN_IGNORED) {
                    if let Some(rel) = self.dirs.remove(&ev.wd) {
                        mark(&mut dirty, parent(&rel));
                    }
                    continue;
                }
                let Some(rel) = self.dirs.get(&ev.wd) else {
                    continue;
                };
                if ev
                    .mask
                    .intersects(AddWatchFlags::IN_DELETE_SELF | AddWatchFlags::IN_MOVE_SELF)
                {
                    let up = parent(rel).to_string();
                    mark(&mut dirty, &up);
                } else {
                    let rel = rel.clone();
                    mark(&mut dirty, &rel);
                }
            }
        }
        if std::mem::take(&mut self.overflowed) {
            Dirty::All
        } else {
            Dirty::Dirs(dirty)
        }
    }

    /// Forget the watches of `rel` and everything under it (the directory is gone).
    pub fn forget(&mut self, rel: &str) {
        self.dirs.retain(|_, d| !super::tree::under(d, rel));
    }
}

/// Mark `rel` and every directory above it.
fn mark(set: &mut HashSet<String>, rel: &str) {
    let mut at = rel;
    loop {
        if !set.insert(at.to_string()) {
            return;
        }
        if at.is_empty() {
            return;
        }
        at = parent(at);
    }
}

fn parent(rel: &str) -> &str {
    rel.rfind('/').map(|i| &rel[..i]).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_mark_their_directory_and_those_above() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::create_dir_all(dir.path().join("c")).unwrap();
        let mut w = Watch::new().unwrap();
        for rel in ["", "a", "a/b", "c"] {
            w.add(&dir.path().join(rel), rel);
        }
        assert_eq!(w.drain(), Dirty::Dirs(HashSet::new()));
        std::fs::write(dir.path().join("a/b/f"), "x").unwrap();
        let Dirty::Dirs(d) = w.drain() else { panic!() };
        let mut d: Vec<_> = d.into_iter().collect();
        d.sort();
        assert_eq!(d, ["", "a", "a/b"]);
        assert_eq!(w.drain(), Dirty::Dirs(HashSet::new()));
    }
}
