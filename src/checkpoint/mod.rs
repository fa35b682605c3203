//! Checkpoints of the workspace (issue 25), first slice: the store and the scan. Not
//! wired into any tool yet.
//!
//! - [`store`]: a content-addressed store of file contents (sha256, one file per blob
//!   under `objects/ab/cdef…`, written to a temporary name and renamed, checked against
//!   its hash when read) and of snapshots (`snapshots/ID.json`: every path of the
//!   workspace with its kind, mode, size and blob), in a private (0700) directory.
//! - [`scan`]: a walk of the workspace that records what is there (files, symlinks as
//!   links, directories, with modes), reusing the hash of a file whose (size, mtime,
//!   inode, mode) did not change since the last scan, as git's index does, so an
//!   unchanged tree costs a stat per path; files over `max_file_bytes` and unreadable
//!   ones are listed as skipped, never fail the scan; excluded directories (`.git`,
//!   the presets' caches) are not entered.
//!
//! # Next (see issue 25)
//!
//! 1. `[checkpoints]` in the profile (`dir`, `exclude`, `max_file_bytes`,
//!    `max_total_bytes`, `keep`), the store under `$XDG_STATE_HOME/whalebox/` keyed by
//!    the workspace, reachable by the server's Landlock layer and never by a task.
//! 2. A checkpoint before every call that can change the workspace (`edit`,
//!    `multi_edit`, `write`, `shell_run`, `write_stdin`, `call_tool`), with its cause;
//!    a background task's changes attributed at its next report.
//! 3. Restore (a journal, so a crash leaves the workspace as it was or fully restored),
//!    itself checkpointed first; the `checkpoints` tool group, the CLI, the resource.
//! 4. A lock file for several sessions; pruning by `keep` and `max_total_bytes`
//!    (blobs no snapshot names); `bench/checkpoints.sh` against git.

pub mod scan;
pub mod store;

pub use scan::{Entry, Kind, ScanCache, Scanned, scan};
pub use store::{Snapshot, Store};

/// How a path differs between two snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Added,
    Removed,
    Modified,
}

/// The paths that differ from `before` to `after` (content, kind or mode), sorted.
pub fn changes(before: &[Entry], after: &[Entry]) -> Vec<(String, Change)> {
    use std::collections::BTreeMap;
    let old: BTreeMap<&str, &Entry> = before.iter().map(|e| (e.path.as_str(), e)).collect();
    let new: BTreeMap<&str, &Entry> = after.iter().map(|e| (e.path.as_str(), e)).collect();
    let mut out = Vec::new();
    for (path, e) in &new {
        match old.get(path) {
            None => out.push((path.to_string(), Change::Added)),
            Some(o) if o != e => out.push((path.to_string(), Change::Modified)),
            Some(_) => {}
        }
    }
    for path in old.keys().filter(|p| !new.contains_key(*p)) {
        out.push((path.to_string(), Change::Removed));
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, hash: &str, mode: u32) -> Entry {
        Entry {
            path: path.into(),
            kind: Kind::File {
                size: 1,
                hash: hash.into(),
            },
            mode,
        }
    }

    #[test]
    fn changes_name_added_removed_and_modified_paths() {
        let before = [
            file("a", "1", 0o644),
            file("b", "2", 0o644),
            file("c", "3", 0o644),
        ];
        let after = [
            file("a", "1", 0o755),
            file("c", "3", 0o644),
            file("d", "4", 0o644),
        ];
        assert_eq!(
            changes(&before, &after),
            vec![
                ("a".to_string(), Change::Modified),
                ("b".to_string(), Change::Removed),
                ("d".to_string(), Change::Added),
            ]
        );
        assert!(changes(&after, &after).is_empty());
    }
}
