//! The workspace as a tree of content-addressed directories, as git keeps it: a tree is
//! one directory's entries (name, mode, kind), stored as a blob whose hash names it, so
//! two checkpoints share every directory that did not change, a checkpoint writes only
//! the directories on the way to what changed, and two trees compare by skipping every
//! subtree whose hash is equal.

use serde::{Deserialize, Serialize};

use super::store::Store;

/// One name in a directory.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TreeEntry {
    pub name: String,
    /// The permission bits (`0o755`).
    pub mode: u32,
    #[serde(flatten)]
    pub kind: Kind,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Kind {
    File {
        size: u64,
        hash: String,
    },
    Symlink {
        target: String,
    },
    Dir {
        tree: String,
    },
    /// There, but not kept (over `max_file_bytes`, unreadable, a socket): a restore
    /// leaves such a path as it finds it.
    Skipped {
        why: String,
    },
}

impl Kind {
    pub fn is_dir(&self) -> bool {
        matches!(self, Kind::Dir { .. })
    }
}

/// Keep one directory's entries (sorted by name here); returns the tree's hash.
pub fn put_tree(store: &Store, entries: &mut [TreeEntry]) -> std::io::Result<String> {
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    let bytes = serde_json::to_vec(&entries).map_err(std::io::Error::other)?;
    store.put_blob(&bytes)
}

/// The entries of the tree `hash`, checked against it.
pub fn read_tree(store: &Store, hash: &str) -> std::io::Result<Vec<TreeEntry>> {
    let bytes = store.blob(hash)?;
    let bad = |why: String| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("the checkpoint store's tree {hash} cannot be read: {why}"),
        )
    };
    let entries: Vec<TreeEntry> = serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
    // A tree is only ever written by a scan, from names a directory listed; anything
    // else (`..`, a slash) would lead a restore out of the workspace.
    if let Some(e) = entries
        .iter()
        .find(|e| e.name.is_empty() || e.name == "." || e.name == ".." || e.name.contains('/'))
    {
        return Err(bad(format!("it names `{}`", e.name)));
    }
    Ok(entries)
}

/// One path of a flattened tree (`/`-separated, relative to the workspace).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathEntry {
    pub path: String,
    pub mode: u32,
    pub kind: Kind,
}

/// Every path under the tree `hash`, parents before their children, or only those
/// under `prefix` (a path, or `""` for all).
pub fn flatten(store: &Store, hash: &str, prefix: &str) -> std::io::Result<Vec<PathEntry>> {
    let mut out = Vec::new();
    flatten_into(store, hash, "", prefix, &mut out)?;
    Ok(out)
}

fn flatten_into(
    store: &Store,
    hash: &str,
    dir: &str,
    prefix: &str,
    out: &mut Vec<PathEntry>,
) -> std::io::Result<()> {
    for e in read_tree(store, hash)? {
        let path = join(dir, &e.name);
        if !related(&path, prefix) {
            continue;
        }
        let sub = match &e.kind {
            Kind::Dir { tree } => Some(tree.clone()),
            _ => None,
        };
        if under(&path, prefix) {
            out.push(PathEntry {
                path: path.clone(),
                mode: e.mode,
                kind: e.kind,
            });
        }
        if let Some(tree) = sub {
            flatten_into(store, &tree, &path, prefix, out)?;
        }
    }
    Ok(())
}

/// How a path differs from one tree to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Added,
    Removed,
    Modified,
}

/// One difference between two trees: the path with its entry before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    pub path: String,
    pub before: Option<PathEntry>,
    pub after: Option<PathEntry>,
}

impl Difference {
    pub fn change(&self) -> Change {
        match (&self.before, &self.after) {
            (None, _) => Change::Added,
            (_, None) => Change::Removed,
            _ => Change::Modified,
        }
    }
}

/// The paths that differ from tree `a` to tree `b` (content, kind or mode), limited to
/// `prefix` (`""`: all), in path order; a directory added or removed is listed with
/// everything under it. Equal subtrees are skipped unread.
pub fn diff(store: &Store, a: &str, b: &str, prefix: &str) -> std::io::Result<Vec<Difference>> {
    let mut out = Vec::new();
    diff_into(store, Some(a), Some(b), "", prefix, &mut out)?;
    Ok(out)
}

fn diff_into(
    store: &Store,
    a: Option<&str>,
    b: Option<&str>,
    dir: &str,
    prefix: &str,
    out: &mut Vec<Difference>,
) -> std::io::Result<()> {
    if a == b {
        return Ok(());
    }
    let left = match a {
        Some(h) => read_tree(store, h)?,
        None => Vec::new(),
    };
    let right = match b {
        Some(h) => read_tree(store, h)?,
        None => Vec::new(),
    };
    let (mut i, mut j) = (0, 0);
    while i < left.len() || j < right.len() {
        let order = match (left.get(i), right.get(j)) {
            (Some(l), Some(r)) => l.name.cmp(&r.name),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        let (l, r) = match order {
            std::cmp::Ordering::Less => {
                i += 1;
                (left.get(i - 1), None)
            }
            std::cmp::Ordering::Greater => {
                j += 1;
                (None, right.get(j - 1))
            }
            std::cmp::Ordering::Equal => {
                i += 1;
                j += 1;
                (left.get(i - 1), right.get(j - 1))
            }
        };
        let name = &l.or(r).expect("one side").name;
        let path = join(dir, name);
        if !related(&path, prefix) || l == r {
            continue;
        }
        let entry = |e: &TreeEntry| PathEntry {
            path: path.clone(),
            mode: e.mode,
            kind: e.kind.clone(),
        };
        let l_tree = l.and_then(|e| tree_of(&e.kind));
        let r_tree = r.and_then(|e| tree_of(&e.kind));
        // A directory on both sides whose mode is the same is not itself a change.
        let both_dirs_same_mode =
            l_tree.is_some() && r_tree.is_some() && l.map(|e| e.mode) == r.map(|e| e.mode);
        if under(&path, prefix) && !both_dirs_same_mode {
            out.push(Difference {
                path: path.clone(),
                before: l.map(entry),
                after: r.map(entry),
            });
        }
        if l_tree.is_some() || r_tree.is_some() {
            diff_into(store, l_tree, r_tree, &path, prefix, out)?;
        }
    }
    Ok(())
}

fn tree_of(kind: &Kind) -> Option<&str> {
    match kind {
        Kind::Dir { tree } => Some(tree),
        _ => None,
    }
}

pub fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// `path` is `prefix` or under it (every path is under `""`).
pub fn under(path: &str, prefix: &str) -> bool {
    prefix.is_empty()
        || path == prefix
        || (path.starts_with(prefix) && path.as_bytes().get(prefix.len()) == Some(&b'/'))
}

/// `path` is under `prefix`, or on the way to it.
fn related(path: &str, prefix: &str) -> bool {
    under(path, prefix) || under(prefix, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, body: &[u8], store: &Store) -> TreeEntry {
        TreeEntry {
            name: name.into(),
            mode: 0o644,
            kind: Kind::File {
                size: body.len() as u64,
                hash: store.put_blob(body).unwrap(),
            },
        }
    }

    #[test]
    fn trees_diff_by_path_and_skip_equal_subtrees() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let sub = put_tree(&store, &mut [file("x", b"1", &store)]).unwrap();
        let sub2 = put_tree(&store, &mut [file("x", b"2", &store)]).unwrap();
        let dir_entry = |tree: &str| TreeEntry {
            name: "d".into(),
            mode: 0o755,
            kind: Kind::Dir { tree: tree.into() },
        };
        let a = put_tree(&store, &mut [file("a", b"a", &store), dir_entry(&sub)]).unwrap();
        let b = put_tree(&store, &mut [dir_entry(&sub2), file("c", b"c", &store)]).unwrap();
        let d = diff(&store, &a, &b, "").unwrap();
        let seen: Vec<(&str, Change)> = d.iter().map(|x| (x.path.as_str(), x.change())).collect();
        assert_eq!(
            seen,
            [
                ("a", Change::Removed),
                ("c", Change::Added),
                ("d/x", Change::Modified)
            ]
        );
        assert!(diff(&store, &a, &a, "").unwrap().is_empty());
        let only_d = diff(&store, &a, &b, "d").unwrap();
        assert_eq!(only_d.len(), 1);
        let all = flatten(&store, &b, "").unwrap();
        let paths: Vec<&str> = all.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["c", "d", "d/x"]);
        assert_eq!(flatten(&store, &b, "d/x").unwrap().len(), 1);
    }

    #[test]
    fn prefixes_match_whole_components() {
        assert!(under("src/a", "src"));
        assert!(!under("srcx/a", "src"));
        assert!(under("anything", ""));
        assert!(related("src", "src/a/b"));
    }
}
