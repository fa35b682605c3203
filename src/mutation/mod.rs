//! Writing files without ever losing someone else's bytes:
//!
//! - [`Ledger`]: what this session last read or wrote of each file (sha256 and a
//!   metadata [`Fingerprint`]), so a write over bytes the model never saw is refused,
//!   and an edit can say the file changed under it.
//! - [`Stripes`]: 64 mutexes picked by a hash of the path; a read-modify-write holds the
//!   stripes of its paths (in sorted order), so calls on one file serialize and calls on
//!   unrelated files do not wait for each other.
//! - [`commit`]: optimistic concurrency and atomicity. Under an `flock` on the parent
//!   directory (which serializes whalebox processes), the new bytes go to a temporary
//!   file in the same directory with the old file's mode and are fsynced, while a second
//!   thread re-reads the file and compares it with the bytes the change was computed
//!   from; if they differ, or the file's size, times or inode changed meanwhile, nothing
//!   is written. Otherwise the temporary file is renamed over the target and the
//!   directory fsynced. A crash at any moment leaves the old file or the new one.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::{File, Permissions};
use std::hash::{Hash, Hasher};
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use nix::fcntl::{Flock, FlockArg, OFlag};
use sha2::{Digest, Sha256};
use whalebox_sandbox::beneath::Dir;

pub type Sha = [u8; 32];

pub fn sha256(bytes: &[u8]) -> Sha {
    Sha256::digest(bytes).into()
}

/// What identifies one version of a file on disk without reading it: any write changes
/// its size or its modification/change times (or, for an atomic replace, its inode).
/// Two writes within one timestamp tick of each other with the same size are the blind
/// spot, which is why a differing fingerprint is only ever a shortcut to "look closer",
/// and the content hash has the last word where a wrong answer would lose bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Fingerprint {
    pub fn of(m: &std::fs::Metadata) -> Fingerprint {
        Fingerprint {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        }
    }
}

/// A hash that may still be being computed on a background thread.
#[derive(Debug, Default)]
struct ShaSlot {
    value: Mutex<Option<Sha>>,
    ready: Condvar,
}

impl ShaSlot {
    fn ready(sha: Sha) -> Arc<ShaSlot> {
        Arc::new(ShaSlot {
            value: Mutex::new(Some(sha)),
            ready: Condvar::new(),
        })
    }

    fn set(&self, sha: Sha) {
        if let Ok(mut v) = self.value.lock() {
            *v = Some(sha);
        }
        self.ready.notify_all();
    }

    fn wait(&self) -> Option<Sha> {
        let mut v = self.value.lock().ok()?;
        while v.is_none() {
            v = self.ready.wait(v).ok()?;
        }
        *v
    }
}

#[derive(Debug, Clone)]
struct Seen {
    sha: Arc<ShaSlot>,
    fingerprint: Option<Fingerprint>,
}

/// How the file on disk relates to what this session last saw of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// This session never read or wrote it.
    Unseen,
    /// It holds exactly what the session last saw.
    Same,
    /// Someone changed it since.
    Changed,
}

/// Per-session memory of what each file held when this session last read or wrote it:
/// its sha256 and its [`Fingerprint`], by resolved path.
#[derive(Debug, Default)]
pub struct Ledger {
    seen: Mutex<HashMap<PathBuf, Seen>>,
}

impl Ledger {
    /// The session has read `path`, whose bytes hash to `sha`. `fingerprint` is the
    /// file's, when it was the same before and after the read.
    pub fn record_read(&self, path: &Path, sha: Sha, fingerprint: Option<Fingerprint>) {
        self.insert(
            path,
            Seen {
                sha: ShaSlot::ready(sha),
                fingerprint,
            },
        );
    }

    /// The session has written `bytes` to `path`. Their hash is computed on a background
    /// thread so the call can answer now; a later check waits for it if it must.
    pub fn record_written(&self, path: &Path, bytes: Vec<u8>, fingerprint: Option<Fingerprint>) {
        let slot = Arc::new(ShaSlot::default());
        let filler = Arc::clone(&slot);
        let spawned = std::thread::Builder::new()
            .name("whalebox-hash".into())
            .spawn(move || filler.set(sha256(&bytes)));
        if let Err(e) = spawned {
            tracing::warn!("cannot start the hashing thread ({e}); the file counts as unseen");
            return;
        }
        self.insert(
            path,
            Seen {
                sha: slot,
                fingerprint,
            },
        );
    }

    fn insert(&self, path: &Path, seen: Seen) {
        if let Ok(mut map) = self.seen.lock() {
            map.insert(path.to_path_buf(), seen);
        }
    }

    /// Compare the file as it is now (`now`: its fingerprint, when stable while it was
    /// read; `bytes`: what was read) with what this session last saw. The hash is only
    /// computed when the fingerprint does not already prove the file unchanged.
    pub fn freshness(&self, path: &Path, now: Option<Fingerprint>, bytes: &[u8]) -> Freshness {
        let Some(seen) = self.seen.lock().ok().and_then(|m| m.get(path).cloned()) else {
            return Freshness::Unseen;
        };
        if now.is_some() && now == seen.fingerprint {
            return Freshness::Same;
        }
        match seen.sha.wait() {
            Some(sha) if sha == sha256(bytes) => Freshness::Same,
            Some(_) => Freshness::Changed,
            None => Freshness::Unseen,
        }
    }

    pub fn has_seen(&self, path: &Path) -> bool {
        self.seen
            .lock()
            .map(|m| m.contains_key(path))
            .unwrap_or(false)
    }
}

const STRIPES: usize = 64;

#[derive(Debug)]
pub struct Stripes {
    locks: Vec<Mutex<()>>,
}

impl Default for Stripes {
    fn default() -> Self {
        Stripes {
            locks: (0..STRIPES).map(|_| Mutex::new(())).collect(),
        }
    }
}

/// The locks held for a set of paths; released on drop.
pub struct StripeGuard<'a> {
    _guards: Vec<MutexGuard<'a, ()>>,
}

impl Stripes {
    fn index(path: &Path) -> usize {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        path.hash(&mut hasher);
        (hasher.finish() as usize) % STRIPES
    }

    /// Lock every stripe `paths` fall in, in ascending order (so two callers locking
    /// overlapping sets cannot deadlock).
    pub fn lock(&self, paths: &[&Path]) -> StripeGuard<'_> {
        let mut indices: Vec<usize> = paths.iter().map(|p| Self::index(p)).collect();
        indices.sort_unstable();
        indices.dedup();
        let guards = indices
            .into_iter()
            // A poisoned stripe only means another call panicked while holding it; the
            // file itself is protected by commit's compare, so carry on.
            .map(|i| self.locks[i].lock().unwrap_or_else(|p| p.into_inner()))
            .collect();
        StripeGuard { _guards: guards }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    /// The file is not what the change was computed from (or exists when it should not).
    #[error("the file changed on disk while the change was being prepared")]
    Conflict,
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The new content is in place, but the directory's flush to disk failed: the
    /// file holds the new bytes now, yet the rename may not survive a crash.
    #[error("written, but the disk did not confirm it: {0}")]
    Unconfirmed(io::Error),
}

/// Write `bytes` as `path`, a private file (0600) of whalebox's own (a store's blob, a
/// CA bundle): to a temporary name unique to this process and call in the same
/// directory, flushed to disk, then renamed over `path`; a crash leaves the old file or
/// the new one, never half of it.
pub fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.{}-{n}.tmp", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|_| f.sync_all()))
        .and_then(|_| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// What the file must be for the commit to go ahead.
pub enum Expect<'a> {
    /// Exactly these bytes.
    Bytes(&'a [u8]),
    /// Not there at all (a create).
    Absent,
}

/// Replace `name` in `dir` with `new`, if it still is what `expect` says. Everything is
/// done by name in the held directory: a directory on the way swapped for a link after
/// the path was checked cannot redirect the write, and a link put where the file was is
/// a conflict, never followed.
pub fn commit(dir: &Dir, name: &OsStr, expect: Expect<'_>, new: &[u8]) -> Result<(), CommitError> {
    // Serializes the compare-and-rename of every whalebox process writing in this dir.
    let dir_lock = Flock::lock(
        File::from(OwnedFd::from(dir.try_clone()?)),
        FlockArg::LockExclusive,
    )
    .map_err(|(_, errno)| io::Error::from(errno))?;

    let current = open_current(dir, name)?;
    let current_meta = current.as_ref().map(|f| f.metadata()).transpose()?;
    let expected = match (&expect, &current_meta) {
        (Expect::Absent, Some(_)) | (Expect::Bytes(_), None) => return Err(CommitError::Conflict),
        (Expect::Bytes(expected), Some(meta)) => {
            if !meta.is_file() || meta.len() != expected.len() as u64 {
                return Err(CommitError::Conflict);
            }
            Some(*expected)
        }
        (Expect::Absent, None) => None,
    };
    let mode = match &current_meta {
        Some(meta) => meta.mode() & 0o7777,
        None => 0o666 & !umask(),
    };
    // Re-read and compare on a second thread while the new bytes are written and
    // synced; the rename waits for the verdict.
    let (same, temp) = std::thread::scope(|scope| {
        let check = expected
            .zip(current.as_ref())
            .map(|(bytes, file)| scope.spawn(move || same_bytes(file, bytes)));
        let temp = write_temp(dir, name, new, mode, current_meta.as_ref());
        let same = match check {
            Some(handle) => handle
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the compare thread panicked"))),
            None => Ok(true),
        };
        (same, temp)
    });
    let temp = temp?;
    let placed = (|| {
        if !same? {
            return Err(CommitError::Conflict);
        }
        // And nothing touched the file between the first look and now (a write changes
        // its size, times or inode).
        if let Some(before) = &current_meta {
            let now = open_current(dir, name)?.map(|f| f.metadata()).transpose()?;
            if now.is_none_or(|now| Fingerprint::of(before) != Fingerprint::of(&now)) {
                return Err(CommitError::Conflict);
            }
        }
        match expect {
            Expect::Absent => dir.rename_noreplace(&temp, dir, name).map_err(|e| {
                if e.kind() == io::ErrorKind::AlreadyExists {
                    CommitError::Conflict
                } else {
                    CommitError::Io(e)
                }
            }),
            Expect::Bytes(_) => dir.rename(&temp, dir, name).map_err(CommitError::Io),
        }
    })();
    if placed.is_err() {
        let _ = dir.remove_file(&temp);
    }
    placed?;
    // The rename is durable once the directory is.
    let synced = dir_lock.sync_all();
    remove_leftovers(dir, name);
    drop(dir_lock);
    synced.map_err(CommitError::Unconfirmed)
}

/// [`commit`] for a file whalebox's profile names (the todo file), not one a model's
/// path reached: its directory is opened by path.
pub fn commit_path(path: &Path, expect: Expect<'_>, new: &[u8]) -> Result<(), CommitError> {
    let (dir, name) = match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => (dir, name),
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a file path needs a parent and a name",
            )
            .into());
        }
    };
    let dir = Dir::open(if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    })?;
    commit(&dir, name, expect, new)
}

/// The file `name` in `dir` as it is now, opened without following a link (`None`: no
/// such file). A link there (where the guard saw a file) is someone else's doing: a
/// conflict. Non-blocking, so a FIFO put there does not hang the call.
fn open_current(dir: &Dir, name: &OsStr) -> Result<Option<File>, CommitError> {
    match dir.open_file(Path::new(name), OFlag::O_RDONLY | OFlag::O_NONBLOCK) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.raw_os_error() == Some(nix::libc::ENOENT) => Ok(None),
        Err(e) if e.raw_os_error() == Some(nix::libc::ELOOP) => Err(CommitError::Conflict),
        Err(e) => Err(e.into()),
    }
}

const TEMP_SUFFIX: &str = ".whalebox-tmp";

/// Remove temporary files a killed writer of `name` left behind. Safe while the
/// directory lock is held: every live writer creates and renames its temporary file
/// under that lock, so any temporary file visible now belongs to no one.
fn remove_leftovers(dir: &Dir, name: &OsStr) {
    let prefix = format!(".{}.", name.to_string_lossy());
    let Ok(entries) = dir.entries() else {
        return;
    };
    for entry in entries {
        let file_name = entry.to_string_lossy();
        if file_name.starts_with(&prefix) && file_name.ends_with(TEMP_SUFFIX) {
            let _ = dir.remove_file(&entry);
        }
    }
}

/// The new content in a synced temporary file next to the target, with the target's
/// mode (and owner, when allowed); returns its name.
fn write_temp(
    dir: &Dir,
    name: &OsStr,
    new: &[u8],
    mode: u32,
    current: Option<&std::fs::Metadata>,
) -> io::Result<OsString> {
    use std::hash::BuildHasher;
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let salt = std::collections::hash_map::RandomState::new()
        .hash_one((std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
    let temp = OsString::from(format!(
        ".{}.{salt:016x}{TEMP_SUFFIX}",
        name.to_string_lossy()
    ));
    let mut file = dir.create_new(&temp, 0o600)?;
    let written = (|| {
        file.write_all(new)?;
        file.set_permissions(Permissions::from_mode(mode))?;
        if let Some(meta) = current {
            // Keep the owner when we may (as root, or when it is already ours).
            let _ = std::os::unix::fs::fchown(&file, Some(meta.uid()), Some(meta.gid()));
        }
        file.sync_all()
    })();
    if let Err(e) = written {
        let _ = dir.remove_file(&temp);
        return Err(e);
    }
    Ok(temp)
}

/// Does `file` (read from its start) hold exactly `expected`? Reads in chunks, stops
/// at the first difference.
fn same_bytes(mut file: &File, expected: &[u8]) -> io::Result<bool> {
    let mut buf = vec![0u8; 1 << 20];
    let mut offset = 0usize;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => return Ok(offset == expected.len()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let end = offset + n;
        if end > expected.len() || buf[..n] != expected[offset..end] {
            return Ok(false);
        }
        offset = end;
    }
}

/// The process umask, read without changing it (Linux ≥ 4.7 reports it in
/// /proc/self/status); 022 when unknown.
fn umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_replaces_when_unchanged_and_keeps_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.sh");
        std::fs::write(&path, b"old").unwrap();
        std::fs::set_permissions(&path, Permissions::from_mode(0o751)).unwrap();
        commit_path(&path, Expect::Bytes(b"old"), b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        let mode = std::fs::metadata(&path).unwrap().mode() & 0o7777;
        assert_eq!(mode, 0o751);
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file left behind");
    }

    #[test]
    fn leftovers_of_a_killed_writer_are_removed_by_the_next_commit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"a").unwrap();
        std::fs::write(dir.path().join(".f.abc123.whalebox-tmp"), b"half").unwrap();
        std::fs::write(dir.path().join(".other.x.whalebox-tmp"), b"not ours").unwrap();
        commit_path(&path, Expect::Bytes(b"a"), b"b").unwrap();
        assert!(!dir.path().join(".f.abc123.whalebox-tmp").exists());
        assert!(dir.path().join(".other.x.whalebox-tmp").exists());
    }

    #[test]
    fn commit_refuses_when_the_file_changed_or_appeared() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"someone else's").unwrap();
        assert!(matches!(
            commit_path(&path, Expect::Bytes(b"what we read"), b"ours"),
            Err(CommitError::Conflict)
        ));
        assert!(matches!(
            commit_path(&path, Expect::Absent, b"ours"),
            Err(CommitError::Conflict)
        ));
        assert_eq!(std::fs::read(&path).unwrap(), b"someone else's");
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(
            commit_path(&path, Expect::Bytes(b"x"), b"ours"),
            Err(CommitError::Conflict)
        ));
        commit_path(&path, Expect::Absent, b"created").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"created");
    }

    #[test]
    fn stripes_lock_sorted_and_deduplicated() {
        let stripes = Stripes::default();
        let a = Path::new("/a");
        let guard = stripes.lock(&[a, a, Path::new("/b")]);
        drop(guard);
        let _again = stripes.lock(&[Path::new("/b"), a]);
    }

    #[test]
    fn ledger_compares_by_fingerprint_then_by_hash() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"one").unwrap();
        let fp = |p: &Path| Some(Fingerprint::of(&std::fs::metadata(p).unwrap()));
        let ledger = Ledger::default();
        assert_eq!(ledger.freshness(&p, fp(&p), b"one"), Freshness::Unseen);
        ledger.record_read(&p, sha256(b"one"), fp(&p));
        assert_eq!(ledger.freshness(&p, fp(&p), b"one"), Freshness::Same);
        // Rewritten with the same bytes: the fingerprint moved, the hash says same.
        std::fs::remove_file(&p).unwrap();
        std::fs::write(&p, b"one").unwrap();
        assert_eq!(ledger.freshness(&p, fp(&p), b"one"), Freshness::Same);
        std::fs::write(&p, b"two!").unwrap();
        assert_eq!(ledger.freshness(&p, fp(&p), b"two!"), Freshness::Changed);
        // What the session writes is hashed in the background and counts as seen.
        ledger.record_written(&p, b"two!".to_vec(), None);
        assert_eq!(ledger.freshness(&p, None, b"two!"), Freshness::Same);
        assert_eq!(ledger.freshness(&p, None, b"other"), Freshness::Changed);
    }
}
