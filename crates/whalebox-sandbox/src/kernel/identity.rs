//! Programs known by their content, so a copy under another name is still the program:
//! `cp /usr/bin/touch t && ./t` runs touch, whatever a rule on `touch` says about `t`.
//!
//! The server lists the programs its policy does not simply allow (the names of its
//! `deny` and `ask` rules, found on PATH and in the system's bin directories) by size
//! and SHA-256 ([`known`]), and hands the list to each task's supervisor. At an exec the
//! supervisor compares the size of the file it opened (no extra open, no walk of the
//! path) and hashes it only when a size matches, once per file (device, inode, mtime,
//! size). A match names the program in the question, which the policy then decides as
//! that program too.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// One program's content: what a copy of it would be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Known {
    /// The name its rules use.
    pub name: String,
    pub size: u64,
    /// SHA-256, hex.
    pub sha256: String,
    /// The file itself (device, inode): known without being read again.
    #[serde(default)]
    pub file: (u64, u64),
}

/// The directories searched besides `$PATH` for a rule's program.
const SYSTEM_BIN: &[&str] = &[
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
];

/// The content of each file `names` (program names or absolute paths) stands for on
/// `path` (a `$PATH` value) and in the system's bin directories; each file once.
pub fn known<'a>(names: impl IntoIterator<Item = &'a str>, path: Option<&str>) -> Vec<Known> {
    let mut dirs: Vec<PathBuf> = path
        .unwrap_or_default()
        .split(':')
        .filter(|d| d.starts_with('/'))
        .map(PathBuf::from)
        .collect();
    dirs.extend(SYSTEM_BIN.iter().map(PathBuf::from));
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for name in names {
        let candidates: Vec<PathBuf> = if name.starts_with('/') {
            vec![PathBuf::from(name)]
        } else if name.contains('/') || name.is_empty() {
            continue;
        } else {
            dirs.iter().map(|d| d.join(name)).collect()
        };
        let base = name.rsplit('/').next().unwrap_or(name).to_string();
        for file in candidates {
            let Ok(meta) = std::fs::metadata(&file) else {
                continue;
            };
            if !meta.is_file() || meta.mode() & 0o111 == 0 || !seen.insert((meta.dev(), meta.ino()))
            {
                continue;
            }
            if let Ok(sha) = File::open(&file).and_then(|f| sha256_of(&f)) {
                out.push(Known {
                    name: base.clone(),
                    size: meta.len(),
                    sha256: sha,
                    file: (meta.dev(), meta.ino()),
                });
            }
        }
    }
    out
}

fn sha256_of(mut file: &File) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

type FileKey = (u64, u64, i64, i64, u64);

/// The known programs, looked up by a file's content.
#[derive(Debug, Default)]
pub struct Identities {
    by_size: HashMap<u64, Vec<Known>>,
    seen: RefCell<HashMap<FileKey, Option<String>>>,
}

impl Identities {
    pub fn new(known: Vec<Known>) -> Identities {
        let mut by_size: HashMap<u64, Vec<Known>> = HashMap::new();
        for k in known {
            by_size.entry(k.size).or_default().push(k);
        }
        Identities {
            by_size,
            seen: RefCell::default(),
        }
    }

    /// The known program `file` (opened, read from its start) is a copy of, if any.
    pub fn of(&self, file: &File) -> Option<String> {
        let meta = file.metadata().ok()?;
        let candidates = self.by_size.get(&meta.len())?;
        let key = (
            meta.dev(),
            meta.ino(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.len(),
        );
        if let Some(hit) = self.seen.borrow().get(&key) {
            return hit.clone();
        }
        // The program itself (git running as git): no need to read it.
        if let Some(k) = candidates
            .iter()
            .find(|k| k.file == (meta.dev(), meta.ino()))
        {
            return Some(k.name.clone());
        }
        // Read through a second descriptor of the same open file would share its
        // offset: reopen it by its /proc entry, which names this very file.
        let own = std::os::fd::AsRawFd::as_raw_fd(file);
        let sha = File::open(Path::new(&format!("/proc/self/fd/{own}")))
            .and_then(|f| sha256_of(&f))
            .ok()?;
        let hit = candidates
            .iter()
            .find(|k| k.sha256 == sha)
            .map(|k| k.name.clone());
        self.seen.borrow_mut().insert(key, hit.clone());
        hit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_is_known_by_content_and_another_file_is_not() {
        use std::os::unix::fs::PermissionsExt;
        // Programs of the test's own (a Nix build has no /usr/bin).
        let tmp = tempfile::tempdir().unwrap();
        let bin = tmp.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let program = |name: &str, content: &[u8]| {
            let path = bin.join(name);
            std::fs::write(&path, content).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            path
        };
        let denied = program("denied", b"\x7fELF the denied program");
        program("same-size", b"\x7fELF another program!!!");
        let known = known(["denied", "/no/such", "a/b"], bin.to_str());
        assert_eq!(known.len(), 1, "{known:?}");
        let ids = Identities::new(known);
        let copy = tmp.path().join("mytool");
        std::fs::copy(&denied, &copy).unwrap();
        assert_eq!(
            ids.of(&File::open(&copy).unwrap()).as_deref(),
            Some("denied")
        );
        // Cached, and still right.
        assert_eq!(
            ids.of(&File::open(&copy).unwrap()).as_deref(),
            Some("denied")
        );
        // Same size, other content: hashed, not known.
        let other = bin.join("same-size");
        assert_eq!(ids.of(&File::open(&other).unwrap()), None);
        // The program itself, by inode.
        assert_eq!(
            ids.of(&File::open(&denied).unwrap()).as_deref(),
            Some("denied")
        );
    }
}
