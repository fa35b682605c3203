//! Putting the workspace (or some paths of it) back as a tree has it, in two phases so
//! that a failure leaves nothing half-restored:
//!
//! 1. **Stage**: every file and link the restore writes is made in a staging directory
//!    at the top of the workspace (same file system, so phase 2 only renames), from
//!    blobs checked against their hashes. A full disk, a lost or corrupted blob: the
//!    staging directory is removed and the workspace was never touched.
//! 2. **Swap**: removals (deepest first), new directories (parents first), the staged
//!    files renamed into place, then modes. These need no new space; should one fail
//!    anyway, the journal the caller wrote makes the next use of the store finish the
//!    restore.

use std::collections::hash_map::RandomState;
use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use nix::errno::Errno;
use nix::sys::stat::{Mode, mkdirat};
use whalebox_sandbox::beneath::{self, Dir};

use super::scan::STAGING_PREFIX;
use super::store::Store;
use super::tree::{Change, Difference, Kind, PathEntry, diff, flatten};

/// What a restore does to one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Write the file (from its blob) or the link, replacing what is there.
    Put(PathEntry),
    MakeDir {
        path: String,
        mode: u32,
    },
    /// Remove a file or link (`dir` false) or an emptied directory.
    Remove {
        path: String,
        dir: bool,
    },
    Chmod {
        path: String,
        mode: u32,
    },
}

/// A restore worked out, before anything is done.
#[derive(Debug, Default)]
pub struct Plan {
    pub ops: Vec<Op>,
    /// What changes, by path, as the answer shows it.
    pub changes: Vec<(String, Change)>,
    /// Paths left as they are, with why (not kept at the checkpoint, unreadable now).
    pub left: Vec<(String, String)>,
}

/// The plan that turns the tree `now` into `target` under `paths` (empty: everywhere).
pub fn plan(store: &Store, now: &str, target: &str, paths: &[String]) -> std::io::Result<Plan> {
    let mut diffs: Vec<Difference> = Vec::new();
    if paths.is_empty() {
        diffs = diff(store, now, target, "")?;
    } else {
        for p in paths {
            // A directory on the way that is something else now (a link a command put
            // there, a file) comes back too, or the restore would write through it.
            let mut at = p.as_str();
            while let Some(i) = at.rfind('/') {
                at = &at[..i];
                let here = flatten(store, target, at)?;
                let now_here = flatten(store, now, at)?;
                let target_dir = here.first().filter(|e| e.path == at && e.kind.is_dir());
                let now_entry = now_here.first().filter(|e| e.path == at);
                if let Some(t) = target_dir
                    && !now_entry.is_some_and(|e| e.kind.is_dir())
                    && !diffs.iter().any(|x| x.path == at)
                {
                    diffs.push(Difference {
                        path: at.to_string(),
                        before: now_entry.cloned(),
                        after: Some(t.clone()),
                    });
                }
            }
            for d in diff(store, now, target, p)? {
                if !diffs.iter().any(|x| x.path == d.path) {
                    diffs.push(d);
                }
            }
        }
        diffs.sort_by(|a, b| a.path.cmp(&b.path));
    }
    let mut out = Plan::default();
    for d in diffs {
        let skipped = |e: &Option<PathEntry>| match e {
            Some(PathEntry {
                kind: Kind::Skipped { why },
                ..
            }) => Some(why.clone()),
            _ => None,
        };
        if let Some(why) = skipped(&d.after) {
            out.left
                .push((d.path.clone(), format!("not kept at the checkpoint: {why}")));
            continue;
        }
        if let Some(why) = skipped(&d.before) {
            out.left
                .push((d.path.clone(), format!("not readable now: {why}")));
            continue;
        }
        out.changes.push((
            d.path.clone(),
            match d.change() {
                // Restoring: what the checkpoint has and now lacks comes back.
                Change::Added => Change::Added,
                c => c,
            },
        ));
        let path = d.path.clone();
        match (d.before, d.after) {
            (Some(b), None) => out.ops.push(Op::Remove {
                path,
                dir: b.kind.is_dir(),
            }),
            (before, Some(a)) => {
                let before_dir = before.as_ref().is_some_and(|b| b.kind.is_dir());
                match &a.kind {
                    Kind::Dir { .. } => match &before {
                        Some(b) if b.kind.is_dir() => {
                            out.ops.push(Op::Chmod { path, mode: a.mode })
                        }
                        Some(_) => {
                            out.ops.push(Op::Remove {
                                path: path.clone(),
                                dir: false,
                            });
                            out.ops.push(Op::MakeDir { path, mode: a.mode });
                        }
                        None => out.ops.push(Op::MakeDir { path, mode: a.mode }),
                    },
                    Kind::File { hash, .. } => {
                        let same_bytes = matches!(
                            &before,
                            Some(PathEntry { kind: Kind::File { hash: h, .. }, .. }) if h == hash
                        );
                        if same_bytes {
                            out.ops.push(Op::Chmod { path, mode: a.mode });
                        } else {
                            if before_dir {
                                out.ops.push(Op::Remove {
                                    path: path.clone(),
                                    dir: true,
                                });
                            }
                            out.ops.push(Op::Put(a));
                        }
                    }
                    Kind::Symlink { .. } => {
                        if before_dir {
                            out.ops.push(Op::Remove {
                                path: path.clone(),
                                dir: true,
                            });
                        }
                        out.ops.push(Op::Put(a));
                    }
                    Kind::Skipped { .. } => unreachable!("handled above"),
                }
            }
            (None, None) => {}
        }
    }
    Ok(out)
}

/// How far a restore got, for progress reports.
pub type Progress<'a> = &'a dyn Fn(usize, usize);

/// Carry out `plan` in `root`; returns the directories it could not remove because
/// they hold what no checkpoint keeps (an excluded `node_modules`). `Err`: nothing was
/// changed (staging failed), or, from phase 2, the journal must finish it.
pub fn apply(
    store: &Store,
    root: &Path,
    plan: &Plan,
    progress: Progress,
) -> Result<Vec<(String, String)>, Failure> {
    // Everything below is done by name in directories held open and walked without
    // following a link: a task that swaps a directory for a link while the restore runs
    // (or the staging directory itself) gets a refusal, never a write outside the root.
    let root = Dir::open(root).map_err(Failure::Untouched)?;
    let staging = Staging::create(&root).map_err(Failure::Untouched)?;
    let total = plan.ops.len();
    let mut staged: Vec<(usize, OsString)> = Vec::new();
    for (i, op) in plan.ops.iter().enumerate() {
        if let Op::Put(entry) = op {
            let name = OsString::from(i.to_string());
            stage(store, entry, &staging.dir, &name).map_err(|e| {
                Failure::Untouched(std::io::Error::new(
                    e.kind(),
                    format!("{}: {e}", entry.path),
                ))
            })?;
            staged.push((i, name));
        }
        if i % 256 == 0 {
            progress(i / 2, total);
        }
    }
    // What was staged is on disk before the first rename, as an edit's commit fsyncs
    // before its rename: a power cut after the swap must not leave empty files. One
    // syncfs for the lot (an fsync per file cost 0.33 ms each here: 25 s for 78k files).
    if !staged.is_empty() {
        nix::unistd::syncfs(&staging.dir)
            .map_err(std::io::Error::from)
            .map_err(Failure::Untouched)?;
    }
    let mut left = Vec::new();
    let mut swap = || -> std::io::Result<()> {
        let mut removals: Vec<(&str, bool)> = plan
            .ops
            .iter()
            .filter_map(|op| match op {
                Op::Remove { path, dir } => Some((path.as_str(), *dir)),
                _ => None,
            })
            .collect();
        // Deepest first, so a directory is empty when its turn comes.
        removals.sort_by(|a, b| b.0.cmp(a.0));
        for (path, dir) in removals {
            let done = in_parent(&root, path, false).and_then(|(parent, name)| {
                if dir {
                    parent.remove_dir(name)
                } else {
                    parent.remove_file(name)
                }
            });
            match done {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) if dir && e.kind() == std::io::ErrorKind::DirectoryNotEmpty => {
                    left.push((
                        path.to_string(),
                        "kept: it holds what checkpoints leave out (an excluded directory)"
                            .to_string(),
                    ));
                }
                Err(e) => {
                    return Err(std::io::Error::new(
                        e.kind(),
                        format!("cannot remove {path}: {e}"),
                    ));
                }
                Ok(()) => {}
            }
        }
        for op in &plan.ops {
            if let Op::MakeDir { path, .. } = op {
                root.make_dirs(Path::new(path), 0o777).map_err(|e| {
                    std::io::Error::new(e.kind(), format!("cannot make {path}: {e}"))
                })?;
            }
        }
        for (n, (i, at)) in staged.iter().enumerate() {
            let Op::Put(entry) = &plan.ops[*i] else {
                continue;
            };
            let (parent, name) = in_parent(&root, &entry.path, true)?;
            staging.dir.rename(at, &parent, name).map_err(|e| {
                std::io::Error::new(e.kind(), format!("cannot put {} back: {e}", entry.path))
            })?;
            if n % 256 == 0 {
                progress(total / 2 + n / 2, total);
            }
        }
        // Modes last, deepest first: a directory made read-only would refuse the rest.
        let mut modes: Vec<(&str, u32)> = plan
            .ops
            .iter()
            .filter_map(|op| match op {
                Op::Chmod { path, mode } | Op::MakeDir { path, mode } => {
                    Some((path.as_str(), *mode))
                }
                _ => None,
            })
            .collect();
        modes.sort_by(|a, b| b.0.cmp(a.0));
        for (path, mode) in modes {
            in_parent(&root, path, false)
                .and_then(|(parent, name)| parent.chmod(name, mode))
                .map_err(|e| std::io::Error::new(e.kind(), format!("cannot chmod {path}: {e}")))?;
        }
        Ok(())
    };
    let result = swap();
    progress(total, total);
    result.map(|()| left).map_err(Failure::Midway)
}

/// The directory `rel` (a path in the tree, `/`-separated) is in, held open, and its
/// final name. Every directory on the way must be a real directory inside `root` (made
/// when missing if `create`), never a link: a restore writes nothing through a link.
fn in_parent<'a>(root: &Dir, rel: &'a str, create: bool) -> std::io::Result<(Dir, &'a OsStr)> {
    let (parent, name) = beneath::split(Path::new(rel))?;
    let dir = if create {
        root.make_dirs(parent, 0o777)?
    } else {
        root.sub(parent).map_err(|e| {
            if e.raw_os_error() == Some(nix::libc::ELOOP) {
                std::io::Error::new(
                    std::io::ErrorKind::NotADirectory,
                    format!(
                        "a directory on the way to {rel} is a link, so nothing is changed under it"
                    ),
                )
            } else {
                e
            }
        })?
    };
    Ok((dir, name))
}

/// Why a restore stopped.
#[derive(Debug)]
pub enum Failure {
    /// Before anything in the workspace changed.
    Untouched(std::io::Error),
    /// While swapping: the journal finishes it.
    Midway(std::io::Error),
}

fn stage(store: &Store, entry: &PathEntry, dir: &Dir, name: &OsStr) -> std::io::Result<()> {
    match &entry.kind {
        Kind::File { hash, .. } => {
            let bytes = store.blob(hash)?;
            let mut file = dir.create_new(name, 0o600)?;
            file.write_all(&bytes)?;
            file.set_permissions(std::fs::Permissions::from_mode(entry.mode))
        }
        Kind::Symlink { target } => dir.symlink(Path::new(target), name),
        _ => Ok(()),
    }
}

/// The staging directory (made by the restore, held open), removed with whatever is
/// left in it when dropped.
struct Staging {
    root: Dir,
    name: OsString,
    dir: Dir,
}

impl Staging {
    fn create(root: &Dir) -> std::io::Result<Staging> {
        use std::hash::BuildHasher;
        for _ in 0..16 {
            let salt = RandomState::new().hash_one(std::process::id());
            let name = OsString::from(format!("{STAGING_PREFIX}{salt:016x}"));
            match mkdirat(root, name.as_os_str(), Mode::from_bits_truncate(0o700)) {
                Ok(()) => {}
                Err(Errno::EEXIST) => continue,
                Err(e) => return Err(e.into()),
            }
            let dir = root.sub(Path::new(&name))?;
            return Ok(Staging {
                root: root.try_clone()?,
                name,
                dir,
            });
        }
        Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "no free name for a staging directory",
        ))
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = self.root.remove_tree(&self.name);
    }
}

/// Remove staging directories a killed restore left behind.
pub fn clean_staging(root: &Path) {
    if let Ok(list) = std::fs::read_dir(root) {
        for item in list.flatten() {
            if item
                .file_name()
                .to_string_lossy()
                .starts_with(STAGING_PREFIX)
            {
                let _ = std::fs::remove_dir_all(item.path());
            }
        }
    }
}
