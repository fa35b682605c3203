//! The path guard: may this call touch this path? Reads are allowed inside the
//! workspace, an approved read root or a skill directory; writes only inside the
//! workspace. Decisions are made on the physically resolved path: every symlink in the
//! existing prefix is followed (also dangling ones, whose target is resolved the same
//! way), `..` is applied after resolution so it cannot climb out through a link, and the
//! parent chain of a file that does not exist yet is resolved.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::path::{Component, Path, PathBuf};

use nix::fcntl::OFlag;

use crate::beneath::{Dir, split};

/// How many symlinks one resolution may follow (Linux's own limit is 40).
const MAX_LINKS: usize = 40;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// Which fence admitted a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RootKind {
    Workspace,
    ReadRoot,
    SkillDir,
}

/// A path the guard allowed: `abs` is the resolved path (for messages, ledgers and
/// locks), `shown` is how to name it to the model (relative to the workspace when inside
/// it). I/O goes through [`Allowed::open`] and [`Allowed::parent`], which walk `rel` from
/// the root that admitted it (`base`) without following a link: a component a task swaps
/// for a link after the check is refused, not followed out of the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowed {
    pub abs: PathBuf,
    pub shown: String,
    pub root: RootKind,
    /// The root directory that admitted the path, and the path relative to it.
    pub base: PathBuf,
    pub rel: PathBuf,
}

impl Allowed {
    /// The admitting root, held open.
    pub fn base_dir(&self) -> io::Result<Dir> {
        Dir::open(&self.base)
    }

    /// The path itself as a directory, held open, following no link on the way (nor
    /// at its end): what a walk starts from.
    pub fn dir(&self) -> io::Result<Dir> {
        self.base_dir()?.sub(&self.rel)
    }

    /// Open the path itself with `flags`, following no link on the way.
    pub fn open(&self, flags: OFlag) -> io::Result<File> {
        self.base_dir()?.open_file(&self.rel, flags)
    }

    /// The directory the path is in, held open, and its final name. `create`: make the
    /// missing directories on the way (never through a link).
    pub fn parent(&self, create: bool) -> io::Result<(Dir, &OsStr)> {
        let (parent, name) = split(&self.rel)?;
        let base = self.base_dir()?;
        let dir = if create {
            base.make_dirs(parent, 0o777)?
        } else {
            base.sub(parent)?
        };
        Ok((dir, name))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    #[error("the path is empty")]
    Empty,
    #[error("the path contains a NUL byte")]
    Nul,
    #[error("{shown} is outside the allowed roots")]
    Denied {
        shown: String,
        resolved: PathBuf,
        access: Access,
    },
    #[error("cannot resolve {shown}: {source}")]
    Resolve { shown: String, source: io::Error },
}

#[derive(Debug, Clone)]
pub struct PathGuard {
    workspace: PathBuf,
    read_roots: Vec<PathBuf>,
    skill_dirs: Vec<PathBuf>,
    home: Option<PathBuf>,
}

impl PathGuard {
    /// A guard for `workspace` (must exist) with extra read-only roots. Roots that do not
    /// exist are dropped: they grant nothing.
    pub fn new(
        workspace: &Path,
        read_roots: &[PathBuf],
        skill_dirs: &[PathBuf],
    ) -> io::Result<PathGuard> {
        let workspace = resolve_physical(workspace)?;
        let existing = |roots: &[PathBuf]| -> Vec<PathBuf> {
            roots
                .iter()
                .filter(|r| r.exists())
                .filter_map(|r| resolve_physical(r).ok())
                .collect()
        };
        Ok(PathGuard {
            read_roots: existing(read_roots),
            skill_dirs: existing(skill_dirs),
            workspace,
            home: std::env::home_dir(),
        })
    }

    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    pub fn read_roots(&self) -> &[PathBuf] {
        &self.read_roots
    }

    pub fn skill_dirs(&self) -> &[PathBuf] {
        &self.skill_dirs
    }

    /// Decide whether `raw` (as the model wrote it) may be accessed.
    pub fn check(&self, raw: &str, access: Access) -> Result<Allowed, GuardError> {
        if raw.contains('\0') {
            return Err(GuardError::Nul);
        }
        if raw.trim().is_empty() {
            return Err(GuardError::Empty);
        }
        let expanded = self.expand(raw);
        let resolved = resolve_physical(&expanded).map_err(|source| GuardError::Resolve {
            shown: raw.to_string(),
            source,
        })?;
        let (root, base) = self
            .root_of(&resolved, access)
            .ok_or_else(|| GuardError::Denied {
                shown: raw.to_string(),
                resolved: resolved.clone(),
                access,
            })?;
        let base = base.to_path_buf();
        let rel = resolved
            .strip_prefix(&base)
            .unwrap_or(&resolved)
            .to_path_buf();
        Ok(Allowed {
            shown: self.show(&resolved),
            abs: resolved,
            root,
            base,
            rel,
        })
    }

    /// How a resolved path is named to the model.
    pub fn show(&self, abs: &Path) -> String {
        match abs.strip_prefix(&self.workspace) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => abs.display().to_string(),
        }
    }

    /// A sentence naming the roots that apply to `access`, for denials.
    pub fn describe_roots(&self, access: Access) -> String {
        let ws = self.workspace.display();
        match access {
            Access::Write => format!("writes are allowed only inside the workspace {ws}"),
            Access::Read => {
                let mut parts = vec![format!("the workspace {ws}")];
                for r in &self.read_roots {
                    parts.push(format!("read root {}", r.display()));
                }
                for s in &self.skill_dirs {
                    parts.push(format!("skill dir {}", s.display()));
                }
                format!("reads are allowed inside {}", parts.join(", "))
            }
        }
    }

    fn expand(&self, raw: &str) -> PathBuf {
        let path = match (&self.home, raw) {
            (Some(home), "~") => home.clone(),
            (Some(home), r) if r.starts_with("~/") => home.join(&r[2..]),
            _ => PathBuf::from(raw),
        };
        if path.is_absolute() {
            path
        } else {
            self.workspace.join(path)
        }
    }

    /// Which root admits `resolved` for `access`, and that root's directory.
    fn root_of(&self, resolved: &Path, access: Access) -> Option<(RootKind, &Path)> {
        if resolved.starts_with(&self.workspace) {
            return Some((RootKind::Workspace, &self.workspace));
        }
        if guard_disabled_for_tests() {
            return Some((RootKind::Workspace, Path::new("/")));
        }
        if access == Access::Write {
            return None;
        }
        if let Some(r) = self.read_roots.iter().find(|r| resolved.starts_with(r)) {
            return Some((RootKind::ReadRoot, r));
        }
        if let Some(r) = self.skill_dirs.iter().find(|r| resolved.starts_with(r)) {
            return Some((RootKind::SkillDir, r));
        }
        None
    }
}

/// Debug builds only: `WHALEBOX_TEST_DISABLE_PATH_GUARD=1` lets every path through, so
/// tests can show that Landlock alone still holds the fence. Release builds have no hook.
#[cfg(debug_assertions)]
fn guard_disabled_for_tests() -> bool {
    static DISABLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *DISABLED.get_or_init(|| {
        std::env::var_os("WHALEBOX_TEST_DISABLE_PATH_GUARD").is_some_and(|v| v == "1")
    })
}

#[cfg(not(debug_assertions))]
fn guard_disabled_for_tests() -> bool {
    false
}

/// Resolve `path` (absolute) the way the kernel would walk it, following every symlink
/// in the part that exists, including a dangling final link (its target is resolved in
/// turn), and applying the part that does not exist lexically. The result is absolute,
/// has no `.`/`..`, and names what an open or create of `path` would touch.
pub fn resolve_physical(path: &Path) -> io::Result<PathBuf> {
    if !path.is_absolute() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "path must be absolute",
        ));
    }
    let mut out = PathBuf::from("/");
    let mut pending: VecDeque<OsString> = VecDeque::new();
    push_front_components(&mut pending, path);
    let mut links = 0usize;
    // Once a component is missing, nothing below it exists; stop asking the disk.
    let mut missing = false;
    while let Some(part) = pending.pop_front() {
        if part == ".." {
            out.pop();
            // Back above the missing component, the disk may know the path again.
            missing = missing && out.symlink_metadata().is_err();
            continue;
        }
        let candidate = out.join(&part);
        if missing {
            out = candidate;
            continue;
        }
        match std::fs::symlink_metadata(&candidate) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!(
                            "too many levels of symbolic links at {}",
                            candidate.display()
                        ),
                    ));
                }
                let target = std::fs::read_link(&candidate)?;
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                push_front_components(&mut pending, &target);
            }
            Ok(_) => out = candidate,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                missing = true;
                out = candidate;
            }
            // ENOTDIR (a file used as a directory), EACCES …: the rest cannot exist
            // as a path to anything; resolve it lexically and let the open fail.
            Err(_) => {
                missing = true;
                out = candidate;
            }
        }
    }
    Ok(out)
}

/// Put the components of `path` at the front of `pending`, in order, as plain names and
/// `..` (roots and `.` are dropped: the caller handles absolute targets).
fn push_front_components(pending: &mut VecDeque<OsString>, path: &Path) {
    let parts: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect();
    for part in parts.into_iter().rev() {
        pending.push_front(part);
    }
}

/// Drop `.` and `..` lexically (symlinks are resolved at use time, not here).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A real directory tree: workspace `ws`, an outside dir `out` with a secret, a
    /// read root `ro`, and symlinks of every kind inside the workspace.
    struct Tree {
        _tmp: tempfile::TempDir,
        root: PathBuf,
        guard: PathGuard,
    }

    fn tree() -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let ws = root.join("ws");
        for d in ["ws/src", "out", "ro/lib"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("ws/src/main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(root.join("out/secret"), "secret\n").unwrap();
        std::fs::write(root.join("ro/lib/x.rs"), "x\n").unwrap();
        symlink(root.join("out"), ws.join("link_dir")).unwrap();
        symlink(root.join("out/secret"), ws.join("link_file")).unwrap();
        symlink(root.join("out/not_yet"), ws.join("dangling")).unwrap();
        symlink("..", ws.join("parent_link")).unwrap();
        symlink("src", ws.join("inner_link")).unwrap();
        symlink("loop_b", ws.join("loop_a")).unwrap();
        symlink("loop_a", ws.join("loop_b")).unwrap();
        let guard = PathGuard::new(&ws, &[root.join("ro"), root.join("missing")], &[]).unwrap();
        Tree {
            _tmp: tmp,
            root,
            guard,
        }
    }

    fn denied(t: &Tree, raw: &str, access: Access) -> bool {
        matches!(t.guard.check(raw, access), Err(GuardError::Denied { .. }))
    }

    #[test]
    fn relative_paths_inside_the_workspace_are_allowed_for_read_and_write() {
        let t = tree();
        let a = t.guard.check("src/main.rs", Access::Read).unwrap();
        assert_eq!(a.abs, t.root.join("ws/src/main.rs"));
        assert_eq!(a.shown, "src/main.rs");
        assert_eq!(a.root, RootKind::Workspace);
        let w = t.guard.check("src/new/dir/file.rs", Access::Write).unwrap();
        assert_eq!(w.abs, t.root.join("ws/src/new/dir/file.rs"));
    }

    #[test]
    fn dot_dot_cannot_climb_out() {
        let t = tree();
        assert!(denied(&t, "../out/secret", Access::Read));
        assert!(denied(&t, "src/../../out/secret", Access::Write));
        assert!(denied(&t, "nonexistent/../../out/secret", Access::Read));
        // … but staying inside after `..` is fine.
        assert!(t.guard.check("src/../src/main.rs", Access::Read).is_ok());
    }

    #[test]
    fn absolute_paths_outside_are_denied() {
        let t = tree();
        assert!(denied(&t, "/etc/passwd", Access::Read));
        let secret = t.root.join("out/secret");
        assert!(denied(&t, secret.to_str().unwrap(), Access::Write));
        let inside = t.root.join("ws/src/main.rs");
        assert!(
            t.guard
                .check(inside.to_str().unwrap(), Access::Write)
                .is_ok()
        );
    }

    #[test]
    fn symlinked_dir_and_file_pointing_outside_are_outside() {
        let t = tree();
        assert!(denied(&t, "link_dir/secret", Access::Read));
        assert!(denied(&t, "link_dir/new_file", Access::Write));
        assert!(denied(&t, "link_file", Access::Read));
        assert!(denied(&t, "link_file", Access::Write));
    }

    #[test]
    fn dangling_link_is_judged_by_its_target() {
        let t = tree();
        // Writing through it would create out/not_yet: denied.
        assert!(denied(&t, "dangling", Access::Write));
        assert!(denied(&t, "dangling", Access::Read));
    }

    #[test]
    fn link_to_a_parent_is_followed_physically() {
        let t = tree();
        // ws/parent_link -> ..  == root; root/out/secret is outside.
        assert!(denied(&t, "parent_link/out/secret", Access::Read));
        // root/ws/src/main.rs through the link is inside again.
        assert!(
            t.guard
                .check("parent_link/ws/src/main.rs", Access::Read)
                .is_ok()
        );
        assert!(denied(&t, "inner_link/../../out/secret", Access::Read));
    }

    #[test]
    fn links_inside_the_workspace_are_fine() {
        let t = tree();
        let a = t.guard.check("inner_link/main.rs", Access::Write).unwrap();
        assert_eq!(a.abs, t.root.join("ws/src/main.rs"));
    }

    #[test]
    fn tilde_is_the_home_directory_and_outside() {
        let t = tree();
        assert!(denied(&t, "~/.bashrc", Access::Read));
        assert!(denied(&t, "~", Access::Write));
    }

    #[test]
    fn read_roots_are_readable_but_not_writable() {
        let t = tree();
        let p = t.root.join("ro/lib/x.rs");
        let a = t.guard.check(p.to_str().unwrap(), Access::Read).unwrap();
        assert_eq!(a.root, RootKind::ReadRoot);
        assert!(denied(&t, p.to_str().unwrap(), Access::Write));
        assert_eq!(t.guard.read_roots().len(), 1, "missing roots grant nothing");
    }

    #[test]
    fn nul_empty_and_loops_are_errors_not_decisions() {
        let t = tree();
        assert!(matches!(
            t.guard.check("a\0b", Access::Read),
            Err(GuardError::Nul)
        ));
        assert!(matches!(
            t.guard.check("  ", Access::Read),
            Err(GuardError::Empty)
        ));
        assert!(matches!(
            t.guard.check("loop_a", Access::Read),
            Err(GuardError::Resolve { .. })
        ));
    }

    #[test]
    fn a_prefix_that_only_looks_like_the_workspace_is_outside() {
        let t = tree();
        std::fs::create_dir(t.root.join("ws2")).unwrap();
        let p = t.root.join("ws2/file");
        assert!(denied(&t, p.to_str().unwrap(), Access::Write));
    }

    #[test]
    fn a_directory_swapped_for_a_link_after_the_check_is_refused_not_followed() {
        let t = tree();
        let ws = t.guard.workspace().to_path_buf();
        std::fs::create_dir(ws.join("d")).unwrap();
        std::fs::write(ws.join("d/status"), "plain").unwrap();
        let read = t.guard.check("d/status", Access::Read).unwrap();
        let write = t.guard.check("d/new.txt", Access::Write).unwrap();
        // The task's swap, between the guard's check and the use.
        std::fs::rename(ws.join("d"), ws.join("d.real")).unwrap();
        symlink("/proc/self", ws.join("d")).unwrap();
        // The control: opening the checked path again follows the swap to /proc.
        let through = std::fs::read_to_string(&read.abs).unwrap();
        assert!(
            through.contains("TracerPid"),
            "the swap should reach /proc: {through}"
        );
        assert!(read.open(OFlag::O_RDONLY).is_err());

        std::fs::remove_file(ws.join("d")).unwrap();
        symlink(t.root.join("out"), ws.join("d")).unwrap();
        assert!(write.parent(true).is_err());
        assert!(write.parent(false).is_err());
        assert!(!t.root.join("out/new.txt").exists());
        std::fs::write(&write.abs, "x").unwrap();
        assert!(
            t.root.join("out/new.txt").exists(),
            "the control: a path write follows the swap"
        );
    }
}
