//! Where the git guard looks: the repositories of the workspace (its own and those one
//! directory down), each one's config files and hooks directories, found afresh at each
//! check (a task may have made, moved or replaced any of them) and opened only beneath
//! the workspace's descriptor or a verified linked worktree's directories.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;

use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{SFlag, fstatat};

use super::GitGuard;
use super::files::{Id, Loc, open_dir};
use crate::guard::beneath::open_beneath;

/// How many directories the start's walk for deeper repositories lists at most.
const MAX_WALKED_DIRS: usize = 20_000;

/// Directories of generated trees the walk does not enter: the person runs no git in a
/// package cache or a build's output, and they hold most directories of a big workspace
/// (the walk then costs a few milliseconds per session, not a few hundred).
const GENERATED: &[&str] = &[
    "node_modules",
    "target",
    ".venv",
    "venv",
    "__pycache__",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
    ".gradle",
    ".cache",
    ".direnv",
    ".next",
];

/// What the start named besides the usual places (kept in the baseline).
#[derive(Debug, Default)]
pub(super) struct Named {
    /// Repository (worktree directory, relative to the workspace) → the `core.hooksPath`
    /// directory (relative to the workspace) it had at start.
    pub(super) hooks_paths: BTreeMap<PathBuf, PathBuf>,
    /// Files inside the workspace (relative to it) that start-time `include.path` or
    /// `includeIf.*.path` entries name: git reads them as part of the configuration, so
    /// they are guarded like config files (a task may write them, existing or not).
    pub(super) includes: BTreeSet<PathBuf>,
    /// Repositories deeper than one directory found at start (the person's own clones
    /// in `vendor/lib`, `packages/x/y`), relative to the workspace.
    pub(super) deep_repos: BTreeSet<PathBuf>,
}

/// Where to look in one repository.
#[derive(Debug, Default)]
pub(super) struct Places {
    pub(super) configs: Vec<Loc>,
    pub(super) hook_dirs: Vec<Loc>,
}

impl GitGuard {
    /// The repositories' config files and hooks directories, found now.
    pub(super) fn places(&self, named: &Named) -> Places {
        let mut places = Places::default();
        let Some(root) = self.workspace_loc() else {
            return places;
        };
        let mut repos = vec![PathBuf::new()];
        if let Ok(entries) = root.list() {
            repos.extend(
                entries
                    .into_iter()
                    .filter(|(n, id)| id.kind() == SFlag::S_IFDIR && n != ".git")
                    .map(|(n, _)| PathBuf::from(n)),
            );
        }
        repos.extend(named.deep_repos.iter().cloned());
        let mut seen = BTreeSet::new();
        for repo in repos {
            for git_dir in self.git_dirs(&root, &repo) {
                self.repository(&root, &git_dir, &mut places, &mut seen);
            }
            if let Some(dir) = named.hooks_paths.get(&repo) {
                places.hook_dirs.push(root.join(dir));
            }
        }
        for rel in &named.includes {
            let file = root.join(rel);
            if !places.configs.iter().any(|c| c.shown == file.shown) {
                places.configs.push(file);
            }
        }
        places
    }

    /// Repositories deeper than one directory (`a/b` with an `a/b/.git`), found by a
    /// breadth-first walk of the workspace that follows no link and enters no `.git` nor
    /// [`GENERATED`] tree, listing at most [`MAX_WALKED_DIRS`] directories (the
    /// shallowest first).
    pub(super) fn deep_repos(&self) -> BTreeSet<PathBuf> {
        use nix::dir::Type;
        let mut found = BTreeSet::new();
        let Ok(ws) = open_dir(&self.settings.workspace) else {
            return found;
        };
        let mut queue = std::collections::VecDeque::from([PathBuf::new()]);
        let mut listed = 0;
        while let Some(dir) = queue.pop_front() {
            if listed == MAX_WALKED_DIRS {
                tracing::info!(
                    "git guard: stopped looking for repositories after {MAX_WALKED_DIRS} directories"
                );
                break;
            }
            listed += 1;
            let Ok(fd) = open_beneath(&*ws, &dir, OFlag::O_DIRECTORY | OFlag::O_RDONLY) else {
                continue;
            };
            let Ok(mut entries) = nix::dir::Dir::from_fd(fd) else {
                continue;
            };
            let raw = entries.as_raw_fd();
            for entry in entries.iter().flatten() {
                let name = entry.file_name().to_bytes();
                if name == b"." || name == b".." {
                    continue;
                }
                if name == b".git" {
                    if dir.components().count() >= 2 {
                        found.insert(dir.clone());
                    }
                    continue;
                }
                // The kernel's type, or a stat that follows no link where it gave none.
                let is_dir = match entry.file_type() {
                    Some(kind) => kind == Type::Directory,
                    None => {
                        // SAFETY: `raw` stays open while `entries` lives (this loop).
                        let parent = unsafe { BorrowedFd::borrow_raw(raw) };
                        fstatat(parent, entry.file_name(), AtFlags::AT_SYMLINK_NOFOLLOW).is_ok_and(
                            |st| {
                                SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits())
                                    == SFlag::S_IFDIR
                            },
                        )
                    }
                };
                if is_dir && !GENERATED.iter().any(|g| g.as_bytes() == name) {
                    queue.push_back(dir.join(std::ffi::OsStr::from_bytes(name)));
                }
            }
        }
        found
    }

    /// The workspace, held open.
    pub(super) fn workspace_loc(&self) -> Option<Loc> {
        open_dir(&self.settings.workspace).ok().map(|ws| Loc {
            base: ws,
            rel: PathBuf::new(),
            shown: self.settings.workspace.clone(),
        })
    }

    /// The file an include entry of `config` names, relative to the workspace, when it
    /// lies inside (git reads `~/` from HOME and a relative path from the including
    /// file's directory).
    pub(super) fn included(&self, config: &Path, value: &str) -> Option<PathBuf> {
        let named = match value.strip_prefix("~/") {
            Some(rest) => PathBuf::from(std::env::var_os("HOME")?).join(rest),
            None => config.parent()?.join(value),
        };
        let abs = crate::guard::normalize(&named);
        normal_rel(abs.strip_prefix(&self.settings.workspace).ok()?)
    }

    /// The git directory a repository's `.git` names, when whalebox can open it safely:
    /// a directory, a file or link that resolves inside the workspace, or the verified
    /// linked worktree. Outside the workspace a task cannot write (Landlock).
    pub(super) fn git_dirs(&self, root: &Loc, repo: &Path) -> Vec<Loc> {
        let dot = root.join(repo.join(".git"));
        let Ok(Some(id)) = dot.stat() else {
            return Vec::new();
        };
        let kind = id.kind();
        if kind == SFlag::S_IFDIR {
            return vec![dot];
        }
        let named = if kind == SFlag::S_IFREG {
            dot.read_small().and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("gitdir:"))
                    .map(|g| PathBuf::from(g.trim()))
            })
        } else if kind == SFlag::S_IFLNK {
            dot.link_target()
        } else {
            None
        };
        let Some(named) = named else {
            return Vec::new();
        };
        if repo.as_os_str().is_empty()
            && let Some(linked) = &self.settings.linked
            // (compared after resolving: only the verified path is opened)
            && self.settings.workspace.join(&named).canonicalize().ok().as_ref()
                == Some(&linked.own_git_dir)
        {
            return open_dir(&linked.own_git_dir)
                .map(|base| Loc {
                    base,
                    rel: PathBuf::new(),
                    shown: linked.own_git_dir.clone(),
                })
                .into_iter()
                .collect();
        }
        self.inside(root, &root.shown.join(repo), &named)
            .into_iter()
            .collect()
    }

    /// `named` (relative to `from`) as a place beneath the workspace, if it is inside.
    pub(super) fn inside(&self, root: &Loc, from: &Path, named: &Path) -> Option<Loc> {
        let abs = crate::guard::normalize(&from.join(named));
        let rel = abs.strip_prefix(&self.settings.workspace).ok()?;
        Some(root.join(rel))
    }

    /// A git directory's config files and hooks, its common directory's, its modules'.
    pub(super) fn repository(
        &self,
        root: &Loc,
        git_dir: &Loc,
        places: &mut Places,
        seen: &mut BTreeSet<PathBuf>,
    ) {
        if !seen.insert(git_dir.shown.clone()) {
            return;
        }
        places.configs.push(git_dir.join("config.worktree"));
        let common = match git_dir.join("commondir").read_small() {
            Some(text) => {
                let named = PathBuf::from(text.trim());
                let linked = self.settings.linked.as_ref().filter(|l| {
                    git_dir.shown.join(&named).canonicalize().ok().as_ref() == Some(&l.common_dir)
                });
                match linked {
                    Some(l) => open_dir(&l.common_dir).ok().map(|base| Loc {
                        base,
                        rel: PathBuf::new(),
                        shown: l.common_dir.clone(),
                    }),
                    None => self.inside(root, &git_dir.shown, &named),
                }
            }
            None => Some(git_dir.clone()),
        };
        let Some(common) = common else {
            return;
        };
        if common.shown != git_dir.shown && !seen.insert(common.shown.clone()) {
            return;
        }
        places.configs.push(common.join("config"));
        places.hook_dirs.push(common.join("hooks"));
        let modules = common.join("modules");
        if let Ok(entries) = modules.list() {
            for (name, id) in entries.into_iter().take(64) {
                if id.kind() == SFlag::S_IFDIR {
                    let m = modules.join(&name);
                    places.configs.push(m.join("config"));
                    places.hook_dirs.push(m.join("hooks"));
                }
            }
        }
    }

    /// The hooks in `dir` (not `*.sample`); a hooks directory that is a link is one
    /// hook itself (git follows it).
    pub(super) fn hooks(&self, dir: &Loc) -> Vec<(Loc, Id)> {
        match dir.stat() {
            Ok(Some(id)) if id.kind() == SFlag::S_IFLNK => return vec![(dir.clone(), id)],
            Ok(Some(_)) => {}
            _ => return Vec::new(),
        }
        dir.list()
            .unwrap_or_default()
            .into_iter()
            .filter(|(name, id)| {
                !name.ends_with(".sample")
                    && (id.kind() == SFlag::S_IFREG || id.kind() == SFlag::S_IFLNK)
            })
            .map(|(name, id)| (dir.join(name), id))
            .collect()
    }

    /// The state of everything looked at.
    pub(super) fn fingerprint(&self, places: &Places) -> Vec<(PathBuf, Option<Id>)> {
        let mut print = Vec::new();
        for c in &places.configs {
            print.push((c.shown.clone(), c.stat().ok().flatten()));
        }
        for d in &places.hook_dirs {
            print.push((d.shown.clone(), d.stat().ok().flatten()));
            for (hook, id) in self.hooks(d) {
                print.push((hook.shown, Some(id)));
            }
        }
        print
    }
}

/// The repository (worktree directory, relative to the workspace) a config file under
/// `rel` (`sub/.git/config`) belongs to.
pub(super) fn repo_of(rel: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in rel.components() {
        if c.as_os_str() == ".git" {
            break;
        }
        out.push(c);
    }
    out
}

/// `rel` without `.` and `..`, if it stays inside (relative, not above its start).
pub(super) fn normal_rel(rel: &Path) -> Option<PathBuf> {
    if rel.is_absolute() {
        return None;
    }
    let mut out = PathBuf::new();
    for c in rel.components() {
        match c {
            std::path::Component::Normal(n) => out.push(n),
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            _ => return None,
        }
    }
    Some(out)
}
