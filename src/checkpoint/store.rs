//! The store: blobs (file contents and trees) by sha256, checkpoint records by number,
//! a lock, and the journal of an unfinished restore, in one private (0700) directory.
//!
//! Every write goes to a temporary file in the same directory and is renamed into place,
//! so a killed process leaves either the old state or the new one. What happens to a
//! record afterwards (one more call on it, the tree its call left) is appended to its log
//! (`records/N.log`, one JSON line each, a torn last line ignored): a call that changed
//! nothing costs two short appends, not two files. Blobs are not synced
//! one by one (a hundred changed files would cost a hundred disk flushes per call); a
//! blob a power loss truncated is caught by its hash when read, and reported.

use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A store in one directory.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

/// What led to a checkpoint: the call about to run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Cause {
    pub tool: String,
    /// One line: `src/lib.rs: 2 edits`, `cargo fmt`.
    pub summary: String,
    /// The shell task the call started or wrote to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    pub time: f64,
}

/// One checkpoint: the workspace's tree before its call, and after it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Record {
    pub id: String,
    /// Seconds since the epoch.
    pub time: f64,
    /// The session (server or CLI process) that took it.
    pub session: String,
    /// The workspace before the call.
    pub tree: String,
    /// The workspace when the call returned (None: not yet, or the session ended first).
    #[serde(default)]
    pub after: Option<String>,
    /// The calls since this checkpoint (several when calls changed nothing).
    pub causes: Vec<Cause>,
    /// Calls left out of `causes` (past its cap).
    #[serde(default)]
    pub more_causes: usize,
    /// Shell tasks still running when the last call returned ("3: npm run watch"):
    /// what changes after `after` may be theirs.
    #[serde(default)]
    pub running: Vec<String>,
    /// Other calls (of this session or another) were running when its calls returned:
    /// what changes after `after` may be theirs, not from outside.
    #[serde(default)]
    pub overlapped: bool,
    /// When its last call returned (seconds since the epoch).
    #[serde(default)]
    pub after_time: Option<f64>,
}

/// What happened to a record after it was written.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    /// One more call on the record (its calls changed nothing so far).
    Call(Cause),
    /// The record's last call returned.
    Returned {
        tree: String,
        time: f64,
        #[serde(default)]
        task: Option<String>,
        #[serde(default)]
        running: Vec<String>,
        #[serde(default)]
        overlapped: bool,
    },
}

/// Calls kept in one record's `causes` (the rest are counted).
pub const MAX_CAUSES: usize = 20;

impl Record {
    fn apply(&mut self, event: Event) {
        match event {
            Event::Call(cause) => {
                if self.causes.len() < MAX_CAUSES {
                    self.causes.push(cause);
                } else {
                    self.more_causes += 1;
                }
                self.after = None;
                self.after_time = None;
            }
            Event::Returned {
                tree,
                time,
                task,
                running,
                overlapped,
            } => {
                self.after = Some(tree);
                self.after_time = Some(time);
                self.running = running;
                self.overlapped = overlapped;
                if let (Some(task), Some(last)) = (task, self.causes.last_mut()) {
                    last.task = Some(task);
                }
            }
        }
    }
}

/// A restore under way: replayed to the end on the store's next use after a crash.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Journal {
    /// The tree being restored.
    pub target: String,
    /// The paths restored (empty: all).
    pub paths: Vec<String>,
    /// The checkpoint restored, and the one taken just before the restore.
    pub checkpoint: String,
    pub before: String,
}

/// The store's exclusive lock, held while a checkpoint is taken, a restore runs or the
/// store is pruned (several sessions may share one workspace's store).
pub struct Lock(#[allow(dead_code)] nix::fcntl::Flock<std::fs::File>);

/// This process's mark in the store while it has calls under way: a file locked for as
/// long as a call runs (a lock dies with its process, so a crash leaves no false mark).
pub struct InFlight {
    file: Option<std::fs::File>,
    held: Option<nix::fcntl::Flock<std::fs::File>>,
}

impl Store {
    /// The store in `dir`, made (0700) if missing.
    pub fn open(dir: &Path) -> std::io::Result<Store> {
        for sub in ["objects", "records"] {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir.join(sub))?;
        }
        Ok(Store {
            dir: dir.to_path_buf(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Wait for the store's lock.
    pub fn lock(&self) -> std::io::Result<Lock> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(self.dir.join("lock"))?;
        nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
            .map(Lock)
            .map_err(|(_, e)| std::io::Error::from(e))
    }

    fn blob_path(&self, hash: &str) -> PathBuf {
        let (a, b) = hash.split_at(2.min(hash.len()));
        self.dir.join("objects").join(a).join(b)
    }

    pub fn has_blob(&self, hash: &str) -> bool {
        self.blob_path(hash).is_file()
    }

    /// Keep `bytes`; returns their hash (nothing is written when the blob is there).
    pub fn put_blob(&self, bytes: &[u8]) -> std::io::Result<String> {
        let hash = hex(&Sha256::digest(bytes));
        let path = self.blob_path(&hash);
        if !path.is_file() {
            let parent = path.parent().unwrap_or(&self.dir);
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)?;
            write_whole(&path, bytes)?;
        }
        Ok(hash)
    }

    /// The bytes of `hash`, checked against it.
    pub fn blob(&self, hash: &str) -> std::io::Result<Vec<u8>> {
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(corrupt(format!("`{hash}` is not a blob's hash")));
        }
        let bytes = std::fs::read(self.blob_path(hash)).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                corrupt(format!(
                    "the checkpoint store has lost blob {hash} (deleted behind its back?)"
                ))
            } else {
                e
            }
        })?;
        let found = hex(&Sha256::digest(&bytes));
        if found != hash {
            return Err(corrupt(format!(
                "the checkpoint store's blob {hash} is corrupted (its content hashes to {found})"
            )));
        }
        Ok(bytes)
    }

    /// The size of a blob on disk (0 when missing).
    pub fn blob_size(&self, hash: &str) -> u64 {
        std::fs::metadata(self.blob_path(hash))
            .map(|m| m.len())
            .unwrap_or(0)
    }

    /// Every blob's hash in the store.
    pub fn blob_hashes(&self) -> std::io::Result<Vec<String>> {
        let mut out = Vec::new();
        for fan in std::fs::read_dir(self.dir.join("objects"))?.flatten() {
            let prefix = fan.file_name().to_string_lossy().into_owned();
            if prefix.len() != 2 {
                continue;
            }
            for blob in std::fs::read_dir(fan.path())?.flatten() {
                let rest = blob.file_name().to_string_lossy().into_owned();
                if rest.len() == 62 {
                    out.push(format!("{prefix}{rest}"));
                }
            }
        }
        Ok(out)
    }

    pub fn remove_blob(&self, hash: &str) -> std::io::Result<()> {
        std::fs::remove_file(self.blob_path(hash))
    }

    /// Write a record whole (its log, if any, is dropped: the record holds it all).
    pub fn put_record(&self, record: &Record) -> std::io::Result<()> {
        let text = serde_json::to_vec_pretty(record).map_err(std::io::Error::other)?;
        let path = self.record_path(&record.id)?;
        write_whole(&path, &text)?;
        match std::fs::remove_file(path.with_extension("log")) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Append `event` to the record's log, in one write.
    pub fn append(&self, id: &str, event: &Event) -> std::io::Result<()> {
        use std::io::Write;
        let mut line = serde_json::to_vec(event).map_err(std::io::Error::other)?;
        line.push(b'\n');
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(self.record_path(id)?.with_extension("log"))?
            .write_all(&line)
    }

    pub fn record(&self, id: &str) -> std::io::Result<Record> {
        let mut record = self.record_base(id)?;
        if let Ok(log) = std::fs::read(self.record_path(id)?.with_extension("log")) {
            // Only whole lines: a process killed while appending leaves a torn last one.
            for line in log.split(|b| *b == b'\n') {
                if let Ok(event) = serde_json::from_slice::<Event>(line) {
                    record.apply(event);
                }
            }
        }
        Ok(record)
    }

    fn record_base(&self, id: &str) -> std::io::Result<Record> {
        let text = std::fs::read(self.record_path(id)?).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                std::io::Error::new(std::io::ErrorKind::NotFound, format!("no checkpoint {id}"))
            } else {
                e
            }
        })?;
        serde_json::from_slice(&text)
            .map_err(|e| corrupt(format!("checkpoint {id} cannot be read: {e}")))
    }

    pub fn remove_record(&self, id: &str) -> std::io::Result<()> {
        let path = self.record_path(id)?;
        let _ = std::fs::remove_file(path.with_extension("log"));
        std::fs::remove_file(path)
    }

    /// The ids of the checkpoints kept, oldest first.
    pub fn record_ids(&self) -> std::io::Result<Vec<String>> {
        let mut ids: Vec<u64> = std::fs::read_dir(self.dir.join("records"))?
            .flatten()
            .filter_map(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_suffix(".json"))
                    .and_then(|n| n.parse().ok())
            })
            .collect();
        ids.sort_unstable();
        Ok(ids.into_iter().map(|n| n.to_string()).collect())
    }

    /// The id the next checkpoint gets (call with the lock held).
    pub fn next_id(&self) -> std::io::Result<String> {
        let last = self
            .record_ids()?
            .last()
            .and_then(|i| i.parse::<u64>().ok())
            .unwrap_or(0);
        Ok((last + 1).to_string())
    }

    fn record_path(&self, id: &str) -> std::io::Result<PathBuf> {
        let n: u64 = id.trim().parse().map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "`{id}` is not a checkpoint id (ids are numbers, as checkpoint_list shows them)"
                ),
            )
        })?;
        Ok(self.dir.join("records").join(format!("{n:010}.json")))
    }

    pub fn journal(&self) -> std::io::Result<Option<Journal>> {
        match std::fs::read(self.dir.join("journal.json")) {
            Ok(text) => serde_json::from_slice(&text)
                .map(Some)
                .map_err(|e| corrupt(format!("the restore journal cannot be read: {e}"))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Write the journal, synced: it must be on disk before the workspace changes.
    pub fn put_journal(&self, journal: &Journal) -> std::io::Result<()> {
        let text = serde_json::to_vec(journal).map_err(std::io::Error::other)?;
        crate::mutation::write_private(&self.dir.join("journal.json"), &text)
    }

    pub fn clear_journal(&self) -> std::io::Result<()> {
        match std::fs::remove_file(self.dir.join("journal.json")) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// This process's in-flight mark (`inflight/PID`), made now; marks that dead
    /// processes left are removed.
    pub fn in_flight_mark(&self) -> InFlight {
        let dir = self.dir.join("inflight");
        let _ = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir);
        if let Ok(list) = std::fs::read_dir(&dir) {
            for e in list.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.parse::<u32>().is_ok() && !Path::new("/proc").join(&name).exists() {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(dir.join(std::process::id().to_string()))
            .ok();
        InFlight { file, held: None }
    }

    /// Whether another process has calls under way (its mark is locked).
    pub fn others_in_flight(&self) -> bool {
        let me = std::process::id().to_string();
        let Ok(list) = std::fs::read_dir(self.dir.join("inflight")) else {
            return false;
        };
        list.flatten().any(|e| {
            if e.file_name().to_string_lossy() == me.as_str() {
                return false;
            }
            let Ok(file) = std::fs::File::open(e.path()) else {
                return false;
            };
            nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockSharedNonblock).is_err()
        })
    }

    /// A number bumped by every prune: a scanner that saw another one trusts none of
    /// the hashes it remembers until it checked their blobs are still there.
    pub fn generation(&self) -> u64 {
        std::fs::read_to_string(self.dir.join("generation"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    }

    pub fn bump_generation(&self) -> std::io::Result<u64> {
        let next = self.generation() + 1;
        write_whole(&self.dir.join("generation"), next.to_string().as_bytes())?;
        Ok(next)
    }
}

impl InFlight {
    /// Mark (`true`) or unmark this process as having calls under way.
    pub fn set(&mut self, busy: bool) {
        if busy && self.held.is_none() {
            if let Some(file) = self.file.take() {
                match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
                    Ok(held) => self.held = Some(held),
                    Err((file, _)) => self.file = Some(file),
                }
            }
        } else if !busy && let Some(held) = self.held.take() {
            match held.unlock() {
                Ok(file) => self.file = Some(file),
                Err((held, _)) => self.held = Some(held),
            }
        }
    }
}

fn corrupt(message: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, message)
}

/// Write `bytes` to `path` whole (a temporary file renamed into place), 0600, unsynced.
fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".tmp-{}-{n}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes))
        .and_then(|_| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_are_kept_once_read_back_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("store")).unwrap();
        let h = store.put_blob(b"hello\n").unwrap();
        assert_eq!(
            h,
            "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
        );
        assert_eq!(store.put_blob(b"hello\n").unwrap(), h);
        assert_eq!(store.blob(&h).unwrap(), b"hello\n");
        assert_eq!(store.blob_hashes().unwrap(), vec![h.clone()]);
        // A blob changed behind the store's back is refused, not handed out.
        std::fs::write(store.blob_path(&h), b"HELLO\n").unwrap();
        let err = store.blob(&h).unwrap_err();
        assert!(err.to_string().contains("corrupted"), "{err}");
        std::fs::remove_file(store.blob_path(&h)).unwrap();
        let err = store.blob(&h).unwrap_err();
        assert!(err.to_string().contains("lost blob"), "{err}");
        assert!(store.blob("../../etc/passwd").is_err());
    }

    #[test]
    fn a_record_s_log_is_applied_in_order_and_a_torn_last_line_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let cause = |s: &str| Cause {
            tool: "shell_run".into(),
            summary: s.into(),
            task: None,
            time: 1.0,
        };
        let rec = Record {
            id: "1".into(),
            time: 1.0,
            session: "s".into(),
            tree: "t".into(),
            after: None,
            causes: vec![cause("first")],
            more_causes: 0,
            running: vec![],
            overlapped: false,
            after_time: None,
        };
        store.put_record(&rec).unwrap();
        let returned = |tree: &str| Event::Returned {
            tree: tree.into(),
            time: 2.0,
            task: Some("t9".into()),
            running: vec![],
            overlapped: false,
        };
        store.append("1", &returned("t")).unwrap();
        store.append("1", &Event::Call(cause("second"))).unwrap();
        assert_eq!(store.record("1").unwrap().after, None, "a call under way");
        store.append("1", &returned("u")).unwrap();
        // A process killed while appending leaves half a line.
        let log = dir.path().join("records/0000000001.log");
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        std::io::Write::write_all(&mut f, b"{\"call\":{\"tool\":").unwrap();
        let got = store.record("1").unwrap();
        assert_eq!(got.causes.len(), 2);
        assert_eq!(got.after.as_deref(), Some("u"));
        assert_eq!(got.causes[1].task.as_deref(), Some("t9"));
        // Written whole again, the record holds it all and the log goes.
        store.put_record(&got).unwrap();
        assert!(!log.exists());
        assert_eq!(store.record("1").unwrap(), got);
    }

    #[test]
    fn records_round_trip_in_number_order_and_bad_ids_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let _lock = store.lock().unwrap();
        for _ in 0..11 {
            let rec = Record {
                id: store.next_id().unwrap(),
                time: 1.5,
                session: "s".into(),
                tree: "t".into(),
                after: None,
                causes: vec![],
                more_causes: 0,
                running: vec![],
                overlapped: false,
                after_time: None,
            };
            store.put_record(&rec).unwrap();
            assert_eq!(store.record(&rec.id).unwrap(), rec);
        }
        let ids = store.record_ids().unwrap();
        assert_eq!(ids.first().unwrap(), "1");
        assert_eq!(ids.last().unwrap(), "11");
        assert!(store.record("../etc/passwd").is_err());
        let err = store.record("99").unwrap_err();
        assert!(err.to_string().contains("no checkpoint 99"), "{err}");
    }
}
