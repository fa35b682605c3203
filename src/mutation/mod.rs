//! Writing files without ever losing someone else's bytes:
//!
//! - [`Ledger`]: what this session last read or wrote of each file (sha256), so a
//!   write over bytes the model never saw is refused, and an edit can say the file
//!   changed under it.
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
use std::fs::{File, Permissions};
use std::hash::{Hash, Hasher};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use nix::fcntl::{Flock, FlockArg};
use sha2::{Digest, Sha256};

pub type Sha = [u8; 32];

pub fn sha256(bytes: &[u8]) -> Sha {
    Sha256::digest(bytes).into()
}

/// Per-session memory of file contents, by resolved path.
#[derive(Debug, Default)]
pub struct Ledger {
    seen: Mutex<HashMap<PathBuf, Sha>>,
}

impl Ledger {
    pub fn record(&self, path: &Path, sha: Sha) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.insert(path.to_path_buf(), sha);
        }
    }

    pub fn get(&self, path: &Path) -> Option<Sha> {
        self.seen
            .lock()
            .ok()
            .and_then(|seen| seen.get(path).copied())
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
}

/// What the file must be for the commit to go ahead.
pub enum Expect<'a> {
    /// Exactly these bytes.
    Bytes(&'a [u8]),
    /// Not there at all (a create).
    Absent,
}

/// Replace `path` with `new`, if it still is what `expect` says.
pub fn commit(path: &Path, expect: Expect<'_>, new: &[u8]) -> Result<(), CommitError> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a file path needs a parent"))?;
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a file path needs a name"))?;
    let dir_file = File::open(dir)?;
    // Serializes the compare-and-rename of every whalebox process writing in this dir.
    let dir_lock = Flock::lock(dir_file, FlockArg::LockExclusive)
        .map_err(|(_, errno)| io::Error::from(errno))?;

    let current_meta = match std::fs::metadata(path) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e.into()),
    };
    let expected = match (&expect, &current_meta) {
        (Expect::Absent, Some(_)) | (Expect::Bytes(_), None) => return Err(CommitError::Conflict),
        (Expect::Bytes(expected), Some(meta)) => {
            if meta.len() != expected.len() as u64 {
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
        let check = expected.map(|bytes| scope.spawn(move || same_bytes(path, bytes)));
        let temp = write_temp(dir, &name.to_string_lossy(), new, mode, current_meta.as_ref());
        let same = match check {
            Some(handle) => handle
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the compare thread panicked"))),
            None => Ok(true),
        };
        (same, temp)
    });
    let temp = temp?;
    if !same? {
        return Err(CommitError::Conflict);
    }
    // And nothing touched the file between the first look and now (a write changes
    // its size, times or inode).
    if let Some(before) = &current_meta {
        let now = std::fs::metadata(path)?;
        if fingerprint(before) != fingerprint(&now) {
            return Err(CommitError::Conflict);
        }
    }
    match expect {
        Expect::Absent => temp.persist_noclobber(path).map_err(|e| {
            if e.error.kind() == io::ErrorKind::AlreadyExists {
                CommitError::Conflict
            } else {
                CommitError::Io(e.error)
            }
        })?,
        Expect::Bytes(_) => temp.persist(path).map_err(|e| CommitError::Io(e.error))?,
    };
    // The rename is durable once the directory is.
    dir_lock.sync_all()?;
    remove_leftovers(dir, &name.to_string_lossy());
    drop(dir_lock);
    Ok(())
}

const TEMP_SUFFIX: &str = ".whalebox-tmp";

/// Remove temporary files a killed writer of `name` left behind. Safe while the
/// directory lock is held: every live writer creates and renames its temporary file
/// under that lock, so any temporary file visible now belongs to no one.
fn remove_leftovers(dir: &Path, name: &str) {
    let prefix = format!(".{name}.");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let file_name = file_name.to_string_lossy();
        if file_name.starts_with(&prefix) && file_name.ends_with(TEMP_SUFFIX) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn fingerprint(m: &std::fs::Metadata) -> (u64, u64, u64, i64, i64, i64, i64) {
    (
        m.dev(),
        m.ino(),
        m.len(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
    )
}

/// The new content in a synced temporary file next to the target, with the target's
/// mode (and owner, when allowed).
fn write_temp(
    dir: &Path,
    name: &str,
    new: &[u8],
    mode: u32,
    current: Option<&std::fs::Metadata>,
) -> io::Result<tempfile::NamedTempFile> {
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(TEMP_SUFFIX)
        .tempfile_in(dir)?;
    temp.write_all(new)?;
    temp.as_file().set_permissions(Permissions::from_mode(mode))?;
    if let Some(meta) = current {
        // Keep the owner when we may (as root, or when it is already ours).
        let _ = std::os::unix::fs::fchown(temp.as_file(), Some(meta.uid()), Some(meta.gid()));
    }
    temp.as_file().sync_all()?;
    Ok(temp)
}

/// Does the file at `path` hold exactly `expected`? Reads in chunks, stops at the
/// first difference.
fn same_bytes(path: &Path, expected: &[u8]) -> io::Result<bool> {
    let mut file = File::open(path)?;
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
        commit(&path, Expect::Bytes(b"old"), b"new").unwrap();
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
        commit(&path, Expect::Bytes(b"a"), b"b").unwrap();
        assert!(!dir.path().join(".f.abc123.whalebox-tmp").exists());
        assert!(dir.path().join(".other.x.whalebox-tmp").exists());
    }

    #[test]
    fn commit_refuses_when_the_file_changed_or_appeared() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"someone else's").unwrap();
        assert!(matches!(
            commit(&path, Expect::Bytes(b"what we read"), b"ours"),
            Err(CommitError::Conflict)
        ));
        assert!(matches!(
            commit(&path, Expect::Absent, b"ours"),
            Err(CommitError::Conflict)
        ));
        assert_eq!(std::fs::read(&path).unwrap(), b"someone else's");
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(
            commit(&path, Expect::Bytes(b"x"), b"ours"),
            Err(CommitError::Conflict)
        ));
        commit(&path, Expect::Absent, b"created").unwrap();
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
    fn ledger_remembers_the_last_hash() {
        let ledger = Ledger::default();
        let p = Path::new("/x");
        assert_eq!(ledger.get(p), None);
        ledger.record(p, sha256(b"1"));
        ledger.record(p, sha256(b"2"));
        assert_eq!(ledger.get(p), Some(sha256(b"2")));
    }
}
