//! The content-addressed store: blobs by sha256, snapshots by id, in one private
//! directory. Every write goes to a temporary file in the same directory and is renamed
//! into place, so a crash leaves either the old state or the new one; a blob is checked
//! against its name when read, so a corrupted store is detected, not restored from.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::scan::Entry;

/// A store in `dir` (made 0700 if missing).
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

/// The workspace as it was at one moment.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Snapshot {
    pub id: String,
    /// Seconds since the epoch.
    pub time: f64,
    /// What was about to change it (`edit src/lib.rs`, `shell_run: cargo fmt`).
    pub cause: String,
    pub entries: Vec<Entry>,
    /// Paths not kept (too large, unreadable), with why.
    pub skipped: Vec<(String, String)>,
}

impl Store {
    pub fn open(dir: &Path) -> std::io::Result<Store> {
        for sub in ["objects", "snapshots"] {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir.join(sub))?;
        }
        Ok(Store {
            dir: dir.to_path_buf(),
        })
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
            crate::mutation::write_private(&path, bytes)?;
        }
        Ok(hash)
    }

    /// The bytes of `hash`, checked against it.
    pub fn blob(&self, hash: &str) -> std::io::Result<Vec<u8>> {
        let bytes = std::fs::read(self.blob_path(hash))?;
        let found = hex(&Sha256::digest(&bytes));
        if found != hash {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "the checkpoint store's blob {hash} is corrupted (its content hashes to {found})"
                ),
            ));
        }
        Ok(bytes)
    }

    pub fn put_snapshot(&self, snapshot: &Snapshot) -> std::io::Result<()> {
        let text = serde_json::to_vec(snapshot).map_err(std::io::Error::other)?;
        crate::mutation::write_private(&self.snapshot_path(&snapshot.id)?, &text)
    }

    pub fn snapshot(&self, id: &str) -> std::io::Result<Snapshot> {
        let text = std::fs::read(self.snapshot_path(id)?)?;
        serde_json::from_slice(&text).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("checkpoint {id} cannot be read: {e}"),
            )
        })
    }

    /// Ids of the snapshots kept, oldest first (ids sort by time).
    pub fn snapshot_ids(&self) -> std::io::Result<Vec<String>> {
        let mut ids: Vec<String> = std::fs::read_dir(self.dir.join("snapshots"))?
            .flatten()
            .filter_map(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_suffix(".json"))
                    .map(str::to_string)
            })
            .collect();
        ids.sort();
        Ok(ids)
    }

    fn snapshot_path(&self, id: &str) -> std::io::Result<PathBuf> {
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("`{id}` is not a checkpoint id"),
            ));
        }
        Ok(self.dir.join("snapshots").join(format!("{id}.json")))
    }
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
        // A blob changed behind the store's back is refused, not handed out.
        std::fs::write(store.blob_path(&h), b"HELLO\n").unwrap();
        let err = store.blob(&h).unwrap_err();
        assert!(err.to_string().contains("corrupted"), "{err}");
    }

    #[test]
    fn snapshots_round_trip_and_bad_ids_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let snap = Snapshot {
            id: "0000001733300000-1".into(),
            time: 1.5,
            cause: "edit a.txt".into(),
            entries: vec![],
            skipped: vec![],
        };
        store.put_snapshot(&snap).unwrap();
        assert_eq!(store.snapshot(&snap.id).unwrap(), snap);
        assert_eq!(store.snapshot_ids().unwrap(), vec![snap.id.clone()]);
        assert!(store.snapshot("../etc/passwd").is_err());
        assert!(store.snapshot("nope").is_err());
    }
}
