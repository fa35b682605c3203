//! One pass over the workspace: what is there, with file contents kept in the store.
//! A file whose size, mtime, inode and mode are what the cache saw last time is not read
//! again (git's index does the same); one changed within the last second is read anyway
//! next time, since a write in the same clock tick would leave its mtime unchanged.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::store::Store;

/// One path of the workspace (relative, `/`-separated).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Entry {
    pub path: String,
    pub kind: Kind,
    /// The permission bits (`0o755`).
    pub mode: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Kind {
    File { size: u64, hash: String },
    Symlink { target: String },
    Dir,
}

/// What a scan saw of a file, to skip reading it next time.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    size: u64,
    mtime_ns: i128,
    ino: u64,
    mode: u32,
    hash: String,
}

/// Stamps by path, kept between scans of one workspace.
#[derive(Debug, Default, Clone)]
pub struct ScanCache(HashMap<String, Stamp>);

/// A scan's result.
#[derive(Debug, Default)]
pub struct Scanned {
    /// Sorted by path.
    pub entries: Vec<Entry>,
    /// Paths not kept, with why (too large, unreadable, not UTF-8).
    pub skipped: Vec<(String, String)>,
    /// Files read (and hashed) by this scan; the rest came from the cache.
    pub read: usize,
}

/// Scan `root`. `exclude`: a name without `/` is a directory not entered at any depth
/// (`.git`, `node_modules`); with `/`, a path from the root (`build/cache`).
pub fn scan(
    root: &Path,
    store: &Store,
    cache: &mut ScanCache,
    exclude: &[String],
    max_file_bytes: u64,
) -> std::io::Result<Scanned> {
    let started_ns = now_ns();
    let mut out = Scanned::default();
    let mut seen = HashMap::new();
    walk(
        root,
        "",
        store,
        cache,
        exclude,
        max_file_bytes,
        started_ns,
        &mut out,
        &mut seen,
    )?;
    // Forget what is gone, so the cache does not grow with deleted paths.
    cache.0.retain(|path, _| seen.contains_key(path));
    out.entries.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn walk(
    root: &Path,
    rel: &str,
    store: &Store,
    cache: &mut ScanCache,
    exclude: &[String],
    max_file_bytes: u64,
    started_ns: i128,
    out: &mut Scanned,
    seen: &mut HashMap<String, ()>,
) -> std::io::Result<()> {
    let dir = if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(rel)
    };
    let listing = match std::fs::read_dir(&dir) {
        Ok(l) => l,
        Err(e) if !rel.is_empty() => {
            out.skipped
                .push((rel.to_string(), format!("cannot list: {e}")));
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    for item in listing.flatten() {
        let name = item.file_name();
        let Some(name) = name.to_str() else {
            out.skipped.push((
                format!("{rel}/{}", name.to_string_lossy()),
                "the name is not UTF-8".into(),
            ));
            continue;
        };
        let path = if rel.is_empty() {
            name.to_string()
        } else {
            format!("{rel}/{name}")
        };
        let meta = match item.path().symlink_metadata() {
            Ok(m) => m,
            Err(e) => {
                out.skipped.push((path, format!("cannot stat: {e}")));
                continue;
            }
        };
        let mode = meta.mode() & 0o7777;
        let kind = meta.file_type();
        if kind.is_dir() {
            let excluded = exclude.iter().any(|x| {
                if x.contains('/') {
                    *x == path
                } else {
                    x == name
                }
            });
            if excluded {
                continue;
            }
            out.entries.push(Entry {
                path: path.clone(),
                kind: Kind::Dir,
                mode,
            });
            walk(
                root,
                &path,
                store,
                cache,
                exclude,
                max_file_bytes,
                started_ns,
                out,
                seen,
            )?;
        } else if kind.is_symlink() {
            match std::fs::read_link(item.path()) {
                Ok(target) => match target.to_str() {
                    Some(t) => out.entries.push(Entry {
                        path,
                        kind: Kind::Symlink {
                            target: t.to_string(),
                        },
                        mode,
                    }),
                    None => out
                        .skipped
                        .push((path, "the link's target is not UTF-8".into())),
                },
                Err(e) => out
                    .skipped
                    .push((path, format!("cannot read the link: {e}"))),
            }
        } else if kind.is_file() {
            if meta.len() > max_file_bytes {
                out.skipped.push((
                    path,
                    format!(
                        "{} bytes, over max_file_bytes ({max_file_bytes})",
                        meta.len()
                    ),
                ));
                continue;
            }
            seen.insert(path.clone(), ());
            let stamp_now = |hash: String| Stamp {
                size: meta.len(),
                mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
                ino: meta.ino(),
                mode,
                hash,
            };
            let cached = cache.0.get(&path).filter(|s| {
                let now = stamp_now(s.hash.clone());
                **s == now && s.mtime_ns < started_ns - 1_000_000_000 && store.has_blob(&s.hash)
            });
            let hash = match cached {
                Some(s) => s.hash.clone(),
                None => match std::fs::read(item.path()) {
                    Ok(bytes) => {
                        out.read += 1;
                        store.put_blob(&bytes)?
                    }
                    Err(e) => {
                        out.skipped.push((path, format!("cannot read: {e}")));
                        continue;
                    }
                },
            };
            cache.0.insert(path.clone(), stamp_now(hash.clone()));
            out.entries.push(Entry {
                path,
                kind: Kind::File {
                    size: meta.len(),
                    hash,
                },
                mode,
            });
        } else {
            out.skipped.push((
                path,
                "not a file, directory or link (a socket, a fifo, a device)".into(),
            ));
        }
    }
    Ok(())
}

fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn tree() -> (tempfile::TempDir, std::path::PathBuf, Store) {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::create_dir_all(ws.join(".git/objects")).unwrap();
        std::fs::create_dir_all(ws.join("node_modules/x")).unwrap();
        std::fs::write(ws.join("src/lib.rs"), "fn main() {}\n").unwrap();
        std::fs::write(ws.join("run.sh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(ws.join("run.sh"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::fs::write(ws.join(".git/objects/o"), "x").unwrap();
        std::fs::write(ws.join("node_modules/x/i.js"), "x").unwrap();
        std::fs::write(ws.join("big.bin"), vec![0u8; 2048]).unwrap();
        std::os::unix::fs::symlink("src/lib.rs", ws.join("link")).unwrap();
        let store = Store::open(&dir.path().join("store")).unwrap();
        (dir, ws, store)
    }

    #[test]
    fn a_scan_keeps_files_links_dirs_and_modes_and_skips_what_it_must() {
        let (_d, ws, store) = tree();
        let mut cache = ScanCache::default();
        let exclude = vec![".git".to_string(), "node_modules".to_string()];
        let s = scan(&ws, &store, &mut cache, &exclude, 1024).unwrap();
        let paths: Vec<&str> = s.entries.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["link", "run.sh", "src", "src/lib.rs"]);
        let run = &s.entries[1];
        assert_eq!(run.mode, 0o755);
        let Kind::File { hash, .. } = &run.kind else {
            panic!("{run:?}")
        };
        assert_eq!(store.blob(hash).unwrap(), b"#!/bin/sh\n");
        assert_eq!(
            s.entries[0].kind,
            Kind::Symlink {
                target: "src/lib.rs".into()
            }
        );
        assert_eq!(s.skipped.len(), 1, "{:?}", s.skipped);
        assert!(s.skipped[0].0 == "big.bin" && s.skipped[0].1.contains("max_file_bytes"));
        assert_eq!(s.read, 2);
    }

    #[test]
    fn an_unchanged_file_is_not_read_again_and_a_changed_one_is() {
        let (_d, ws, store) = tree();
        let mut cache = ScanCache::default();
        let exclude = vec![".git".to_string(), "node_modules".to_string()];
        // Files older than the scan's racy second are trusted from the cache.
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(10);
        for f in ["run.sh", "src/lib.rs"] {
            std::fs::File::options()
                .write(true)
                .open(ws.join(f))
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        scan(&ws, &store, &mut cache, &exclude, 1024).unwrap();
        let again = scan(&ws, &store, &mut cache, &exclude, 1024).unwrap();
        assert_eq!(again.read, 0);
        std::fs::write(ws.join("src/lib.rs"), "fn main() { changed() }\n").unwrap();
        let third = scan(&ws, &store, &mut cache, &exclude, 1024).unwrap();
        assert_eq!(third.read, 1);
        let lib = third
            .entries
            .iter()
            .find(|e| e.path == "src/lib.rs")
            .unwrap();
        let Kind::File { hash, .. } = &lib.kind else {
            panic!()
        };
        assert_eq!(store.blob(hash).unwrap(), b"fn main() { changed() }\n");
    }
}
