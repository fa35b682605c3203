//! One pass over the workspace, kept as trees in the store. The scanner remembers what it
//! saw between passes:
//!
//! - each file's (size, mtime, inode, mode) and hash, so an unchanged file is not read
//!   again (git's index does the same); one changed within the second before a pass is
//!   read again next time, since a write in the same clock tick leaves its mtime alone;
//! - each directory's entries and tree hash, so a directory the kernel says did not
//!   change ([`Watch`]) is not even listed, and one whose entries came out the same is
//!   not stored again.

use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use super::store::Store;
use super::tree::{Kind, TreeEntry, join, put_tree, under};
use super::watch::{Dirty, Watch};

/// Names a scan never enters or keeps, whatever the profile says: a restore's staging
/// directory.
pub const STAGING_PREFIX: &str = ".whalebox-restore-";

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Stamp {
    size: u64,
    mtime_ns: i128,
    ino: u64,
    mode: u32,
    hash: String,
}

#[derive(Debug, Clone)]
struct DirState {
    entries: Vec<TreeEntry>,
    hash: String,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Index {
    generation: u64,
    saved_ns: i128,
    files: HashMap<String, Stamp>,
}

/// What to scan and what to leave out.
#[derive(Debug, Clone)]
pub struct ScanRules {
    /// A name without `/`: a directory not entered at any depth (`.git`,
    /// `node_modules`); with `/`: a path from the root (`build/cache`, `/target`).
    pub exclude: Vec<String>,
    pub max_file_bytes: u64,
    /// The most one pass may read: a workspace with more new content than the store
    /// may hold (`max_total_bytes`) gets no checkpoint rather than a store it overflows.
    pub max_pass_bytes: u64,
}

impl ScanRules {
    fn excluded(&self, path: &str, name: &str) -> bool {
        name.starts_with(STAGING_PREFIX)
            || is_write_in_progress(name)
            || self.exclude.iter().any(|x| {
                let x = x.trim_end_matches('/');
                match x.strip_prefix('/') {
                    // `/target`: that path from the top only.
                    Some(top) => top == path,
                    None if x.contains('/') => x == path,
                    None => x == name,
                }
            })
    }
}

/// A pass's result.
#[derive(Debug, Default)]
pub struct Scanned {
    /// The root tree.
    pub tree: String,
    /// Files read (and hashed) by this pass; the rest came from the cache.
    pub read: usize,
    /// Directories listed by this pass.
    pub listed: usize,
    /// Bytes of the files read.
    pub bytes: u64,
    /// Whether every directory was listed (no help from the kernel).
    pub full: bool,
}

/// The scanner of one workspace, kept between passes.
#[derive(Debug)]
pub struct Scanner {
    root: PathBuf,
    rules: ScanRules,
    files: HashMap<String, Stamp>,
    dirs: HashMap<String, DirState>,
    watch: Result<Watch, String>,
    /// The next pass must list everything (first pass, or a pass that failed midway).
    stale: bool,
}

impl Scanner {
    /// A scanner of `root`; `watch`: ask the kernel which directories change (inotify).
    pub fn new(root: &Path, rules: ScanRules, watch: bool) -> Scanner {
        Scanner {
            root: root.to_path_buf(),
            rules,
            files: HashMap::new(),
            dirs: HashMap::new(),
            watch: if watch {
                Watch::new()
            } else {
                Err("off".into())
            },
            stale: true,
        }
    }

    /// The file stamps, kept in `path` so the next process (a `whalebox call`, the CLI, a
    /// restarted server) need not read every file again, as git's index does.
    /// The directory `rel` of the workspace, opened beneath it without following links.
    fn open_dir(&self, rel: &str) -> std::io::Result<OwnedFd> {
        use nix::fcntl::OFlag;
        let root = std::fs::File::open(&self.root)?;
        crate::guard::beneath::open_beneath(
            &root,
            Path::new(rel),
            OFlag::O_RDONLY | OFlag::O_DIRECTORY,
        )
    }

    /// A file's bytes, opened by name in its directory without following a link, and
    /// read only when what was opened is a regular file on the workspace's device (a
    /// swap between the stat and the open reads nothing), at most max_file_bytes.
    fn read_file(&self, dir: &OwnedFd, name: &str, dev: u64) -> std::io::Result<Vec<u8>> {
        use nix::fcntl::OFlag;
        use std::io::Read;
        let fd = crate::guard::beneath::open_beneath(
            dir,
            Path::new(name),
            OFlag::O_RDONLY | OFlag::O_NONBLOCK,
        )?;
        let file = std::fs::File::from(fd);
        let meta = file.metadata()?;
        if !meta.is_file() || meta.dev() != dev {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                "changed into something other than a file of the workspace while scanned",
            ));
        }
        let mut bytes = Vec::new();
        file.take(self.rules.max_file_bytes)
            .read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    pub fn save_index(&self, path: &Path, generation: u64) -> std::io::Result<()> {
        let index = Index {
            generation,
            saved_ns: now_ns(),
            files: self.files.clone(),
        };
        let bytes = serde_json::to_vec(&index).map_err(std::io::Error::other)?;
        let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
        {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)?
                .write_all(&bytes)?;
        }
        std::fs::rename(&tmp, path)
    }

    /// Take the stamps `save_index` kept, when they are of this store's generation;
    /// those written within the second before saving are left out (racily clean).
    pub fn load_index(&mut self, path: &Path, generation: u64) {
        let Ok(bytes) = std::fs::read(path) else {
            return;
        };
        let Ok(index) = serde_json::from_slice::<Index>(&bytes) else {
            return;
        };
        if index.generation != generation {
            return;
        }
        self.files = index
            .files
            .into_iter()
            .filter(|(_, s)| s.mtime_ns < index.saved_ns - 1_000_000_000)
            .collect();
    }

    /// Forget the hashes whose blobs the store no longer has (after a prune), and list
    /// everything next time.
    pub fn revalidate(&mut self, store: &Store) {
        self.files.retain(|_, s| store.has_blob(&s.hash));
        self.dirs.retain(|_, d| store.has_blob(&d.hash));
        self.stale = true;
    }

    /// Scan; `full`: list every directory whatever the kernel says (before a restore).
    pub fn scan(&mut self, store: &Store, full: bool) -> std::io::Result<Scanned> {
        let mut dirty = match &mut self.watch {
            Ok(w) => w.drain(),
            Err(_) => Dirty::All,
        };
        if full || self.stale || !self.dirs.contains_key("") {
            dirty = Dirty::All;
        }
        let mut out = Scanned {
            full: dirty == Dirty::All,
            ..Scanned::default()
        };
        // Until this pass completes, the next one trusts nothing.
        self.stale = true;
        let started_ns = now_ns();
        let tree = self.visit(store, "", &dirty, started_ns, &mut out)?;
        self.stale = false;
        out.tree = tree;
        Ok(out)
    }

    fn visit(
        &mut self,
        store: &Store,
        rel: &str,
        dirty: &Dirty,
        started_ns: i128,
        out: &mut Scanned,
    ) -> std::io::Result<String> {
        if !dirty.visit(rel)
            && let Some(state) = self.dirs.get(rel)
        {
            return Ok(state.hash.clone());
        }
        let abs = if rel.is_empty() {
            self.root.clone()
        } else {
            self.root.join(rel)
        };
        if let Ok(w) = &mut self.watch {
            w.add(&abs, rel);
        }
        out.listed += 1;
        // Beneath the workspace's descriptor, no link followed at any component, no
        // mount crossed: a directory a task swapped for a link to `/proc/self` is not
        // listed (issue 41), it is kept as unreadable instead.
        let dirfd = match self.open_dir(rel) {
            Ok(fd) => fd,
            Err(e) if !rel.is_empty() && swapped(&e) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    format!("{rel} became a link or another file system while it was scanned"),
                ));
            }
            Err(e) => return Err(e),
        };
        let root_dev = std::fs::File::from(dirfd.try_clone()?).metadata()?.dev();
        // The listing of that very directory (its descriptor, not its path); each
        // entry is then stat'ed relative to it.
        let listing = std::fs::read_dir(format!("/proc/self/fd/{}", dirfd.as_raw_fd()))?;
        let mut entries = Vec::new();
        for item in listing {
            let item = match item {
                Ok(i) => i,
                Err(e) if !rel.is_empty() => {
                    return Err(std::io::Error::new(
                        e.kind(),
                        format!("cannot list {rel}: {e}"),
                    ));
                }
                Err(e) => return Err(e),
            };
            let name = item.file_name();
            let Some(name) = name.to_str().map(str::to_string) else {
                // A name that is not UTF-8 cannot be named in a tree (JSON); it is left
                // alone, and a restore never touches it either.
                continue;
            };
            let path = join(rel, &name);
            let skipped = |why: String, mode: u32| TreeEntry {
                name: name.clone(),
                mode,
                kind: Kind::Skipped { why },
            };
            // Relative to the directory (fstatat), not a lookup of the whole path.
            let meta = match item.metadata() {
                Ok(m) => m,
                // Gone between the listing and the stat: not there.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    entries.push(skipped(format!("cannot stat: {e}"), 0));
                    continue;
                }
            };
            let mode = meta.mode() & 0o7777;
            let kind = meta.file_type();
            if kind.is_dir() {
                if self.rules.excluded(&path, &name) {
                    continue;
                }
                let tree = match self.visit(store, &path, dirty, started_ns, out) {
                    Ok(t) => t,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                        entries.push(skipped(format!("cannot list: {e}"), mode));
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                entries.push(TreeEntry {
                    name,
                    mode,
                    kind: Kind::Dir { tree },
                });
            } else if kind.is_symlink() {
                match std::fs::read_link(item.path()) {
                    Ok(target) => match target.to_str() {
                        Some(t) => entries.push(TreeEntry {
                            name,
                            mode,
                            kind: Kind::Symlink {
                                target: t.to_string(),
                            },
                        }),
                        None => {
                            entries.push(skipped("the link's target is not UTF-8".into(), mode))
                        }
                    },
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => entries.push(skipped(format!("cannot read the link: {e}"), mode)),
                }
            } else if kind.is_file() {
                if self.rules.excluded(&path, &name) {
                    continue;
                }
                if meta.len() > self.rules.max_file_bytes {
                    entries.push(skipped(
                        format!(
                            "{} bytes, over max_file_bytes ({})",
                            meta.len(),
                            self.rules.max_file_bytes
                        ),
                        mode,
                    ));
                    continue;
                }
                let mtime_ns =
                    i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
                // Compared field by field: this runs for every file of every pass.
                let cached = self.files.get(&path).filter(|s| {
                    s.size == meta.len()
                        && s.mtime_ns == mtime_ns
                        && s.ino == meta.ino()
                        && s.mode == mode
                        && s.mtime_ns < started_ns - 1_000_000_000
                });
                if let Some(s) = cached {
                    entries.push(TreeEntry {
                        name,
                        mode,
                        kind: Kind::File {
                            size: meta.len(),
                            hash: s.hash.clone(),
                        },
                    });
                    continue;
                }
                let hash = match self.read_file(&dirfd, &name, root_dev) {
                    Ok(bytes) => {
                        out.read += 1;
                        out.bytes += bytes.len() as u64;
                        if out.bytes > self.rules.max_pass_bytes {
                            return Err(std::io::Error::new(
                                std::io::ErrorKind::FileTooLarge,
                                format!(
                                    "the workspace has more than {} bytes to keep \
                                         ([checkpoints] max_total_bytes); exclude its large \
                                         directories in [checkpoints] exclude",
                                    self.rules.max_pass_bytes
                                ),
                            ));
                        }
                        store.put_blob(&bytes)?
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => {
                        entries.push(skipped(format!("cannot read: {e}"), mode));
                        continue;
                    }
                };
                self.files.insert(
                    path,
                    Stamp {
                        size: meta.len(),
                        mtime_ns,
                        ino: meta.ino(),
                        mode,
                        hash: hash.clone(),
                    },
                );
                entries.push(TreeEntry {
                    name,
                    mode,
                    kind: Kind::File {
                        size: meta.len(),
                        hash,
                    },
                });
            } else {
                entries.push(skipped(
                    "not a file, directory or link (a socket, a fifo, a device)".into(),
                    mode,
                ));
            }
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        let previous = self.dirs.remove(rel);
        if let Some(prev) = &previous {
            self.forget_gone(rel, &prev.entries, &entries);
        }
        let hash = match previous {
            Some(prev) if prev.entries == entries => prev.hash,
            _ => put_tree(store, &mut entries)?,
        };
        self.dirs.insert(
            rel.to_string(),
            DirState {
                entries,
                hash: hash.clone(),
            },
        );
        Ok(hash)
    }

    /// Drop what the caches hold of names that left the directory `rel`.
    fn forget_gone(&mut self, rel: &str, before: &[TreeEntry], now: &[TreeEntry]) {
        for old in before {
            let still = now
                .binary_search_by(|e| e.name.as_str().cmp(&old.name))
                .ok()
                .map(|i| &now[i].kind);
            let path = join(rel, &old.name);
            match (&old.kind, still) {
                (Kind::Dir { .. }, Some(Kind::Dir { .. })) => {}
                (Kind::Dir { .. }, _) => {
                    self.dirs.retain(|d, _| !under(d, &path));
                    self.files.retain(|f, _| !under(f, &path));
                    if let Ok(w) = &mut self.watch {
                        w.forget(&path);
                    }
                }
                (Kind::File { .. }, Some(Kind::File { .. })) => {}
                (Kind::File { .. }, _) => {
                    self.files.remove(&path);
                }
                _ => {}
            }
        }
    }
}

/// A file whalebox is writing this moment (`.NAME.PID-N.tmp`, renamed into place when
/// whole): another call's checkpoint must not keep it.
fn is_write_in_progress(name: &str) -> bool {
    let Some(stem) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp")) else {
        return false;
    };
    let Some((_, tail)) = stem.rsplit_once('.') else {
        return false;
    };
    let Some((pid, n)) = tail.split_once('-') else {
        return false;
    };
    !pid.is_empty()
        && !n.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        && n.bytes().all(|b| b.is_ascii_digit())
}

fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0)
}

/// Whether an open failed because a component is now a link, not a directory, or on
/// another file system: what a task's swap looks like.
fn swapped(e: &std::io::Error) -> bool {
    use nix::errno::Errno;
    matches!(
        e.raw_os_error().map(Errno::from_raw),
        Some(Errno::ELOOP | Errno::ENOTDIR | Errno::EXDEV)
    )
}

#[cfg(test)]
mod tests {
    use super::super::tree::flatten;
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn tree() -> (tempfile::TempDir, PathBuf, Store) {
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

    fn rules() -> ScanRules {
        ScanRules {
            exclude: vec![".git".into(), "node_modules/".into()],
            max_file_bytes: 1024,
            max_pass_bytes: 1 << 20,
        }
    }

    fn age(ws: &Path, files: &[&str]) {
        let old = SystemTime::now() - std::time::Duration::from_secs(10);
        for f in files {
            std::fs::File::options()
                .write(true)
                .open(ws.join(f))
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
    }

    #[test]
    fn a_scan_keeps_files_links_dirs_and_modes_and_marks_what_it_skips() {
        let (_d, ws, store) = tree();
        let mut s = Scanner::new(&ws, rules(), false);
        let got = s.scan(&store, false).unwrap();
        let all = flatten(&store, &got.tree, "").unwrap();
        let paths: Vec<&str> = all.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["big.bin", "link", "run.sh", "src", "src/lib.rs"]);
        assert!(matches!(&all[0].kind, Kind::Skipped { why } if why.contains("max_file_bytes")));
        assert_eq!(all[2].mode, 0o755);
        let Kind::File { hash, .. } = &all[2].kind else {
            panic!("{:?}", all[2])
        };
        assert_eq!(store.blob(hash).unwrap(), b"#!/bin/sh\n");
        assert_eq!(
            all[1].kind,
            Kind::Symlink {
                target: "src/lib.rs".into()
            }
        );
        assert_eq!(got.read, 2);
    }

    #[test]
    fn a_slash_anchors_an_exclusion_at_the_top() {
        let (_d, ws, store) = tree();
        std::fs::create_dir_all(ws.join("target/debug")).unwrap();
        std::fs::create_dir_all(ws.join("drivers/target")).unwrap();
        std::fs::write(ws.join("drivers/target/core.c"), "int x;\n").unwrap();
        std::fs::write(ws.join(".a.txt.123-4.tmp"), "half").unwrap();
        let rules = ScanRules {
            exclude: vec!["/target".into(), ".git".into(), "node_modules".into()],
            ..rules()
        };
        let got = Scanner::new(&ws, rules, false).scan(&store, false).unwrap();
        let paths: Vec<String> = flatten(&store, &got.tree, "")
            .unwrap()
            .into_iter()
            .map(|e| e.path)
            .collect();
        assert!(
            paths.contains(&"drivers/target/core.c".to_string()),
            "{paths:?}"
        );
        assert!(!paths.iter().any(|p| p.starts_with("target")), "{paths:?}");
        assert!(
            !paths.iter().any(|p| p.ends_with(".tmp")),
            "a write in progress: {paths:?}"
        );
    }

    #[test]
    fn a_swapped_link_is_never_listed_or_read() {
        // What a task's flip leaves at the moment of the open: the name checked as a
        // file or a directory is a link to /proc by then (issue 41).
        let (_d, ws, _store) = tree();
        std::os::unix::fs::symlink("/proc/self/environ", ws.join("e")).unwrap();
        std::os::unix::fs::symlink("/proc/self", ws.join("d")).unwrap();
        let s = Scanner::new(&ws, rules(), false);
        let root = s.open_dir("").unwrap();
        let dev = std::fs::File::from(root.try_clone().unwrap())
            .metadata()
            .unwrap()
            .dev();
        assert!(s.read_file(&root, "run.sh", dev).is_ok());
        assert!(s.read_file(&root, "e", dev).is_err(), "read through a link");
        let e = s.open_dir("d").unwrap_err();
        assert!(swapped(&e), "{e}");
        assert!(s.open_dir("d/task").is_err());
    }

    #[test]
    fn unchanged_files_are_not_read_again_and_changes_are_seen_with_or_without_inotify() {
        for watch in [false, true] {
            let (_d, ws, store) = tree();
            age(&ws, &["run.sh", "src/lib.rs"]);
            let mut s = Scanner::new(&ws, rules(), watch);
            let first = s.scan(&store, false).unwrap();
            let again = s.scan(&store, false).unwrap();
            assert_eq!(again.read, 0);
            assert_eq!(again.tree, first.tree);
            if watch {
                assert_eq!(again.listed, 0, "inotify: nothing to list");
            }
            std::fs::write(ws.join("src/lib.rs"), "fn main() { changed() }\n").unwrap();
            std::fs::create_dir_all(ws.join("src/new/deep")).unwrap();
            std::fs::write(ws.join("src/new/deep/f"), "f").unwrap();
            let third = s.scan(&store, false).unwrap();
            assert_eq!(third.read, 2, "watch={watch}");
            let all = flatten(&store, &third.tree, "src").unwrap();
            let paths: Vec<&str> = all.iter().map(|e| e.path.as_str()).collect();
            assert_eq!(
                paths,
                [
                    "src",
                    "src/lib.rs",
                    "src/new",
                    "src/new/deep",
                    "src/new/deep/f"
                ]
            );
            // A directory renamed, then written in under its new name.
            std::fs::rename(ws.join("src/new"), ws.join("moved")).unwrap();
            s.scan(&store, false).unwrap();
            std::fs::write(ws.join("moved/deep/g"), "g").unwrap();
            let fourth = s.scan(&store, false).unwrap();
            let full = Scanner::new(&ws, rules(), false)
                .scan(&store, false)
                .unwrap();
            assert_eq!(fourth.tree, full.tree, "watch={watch}");
            std::fs::remove_dir_all(ws.join("moved")).unwrap();
            let fifth = s.scan(&store, false).unwrap();
            let full = Scanner::new(&ws, rules(), false)
                .scan(&store, false)
                .unwrap();
            assert_eq!(fifth.tree, full.tree, "watch={watch}");
        }
    }
}
