//! The git guard: git configuration and hooks a task leaves in the workspace's
//! repositories are undone (issue 41).
//!
//! A command may run `git config core.fsmonitor 'sh -c …'` or write
//! `.git/hooks/pre-commit`: nothing runs inside the fences, but the person's next
//! `git status` or `git commit` runs it outside all of them. The workspace is writable, so
//! the write cannot be stopped; it is noticed and undone. At session start the guard
//! records the exec-carrying keys ([`keys`]) of each repository's configuration files
//! and the state of each hook; after each shell call (and before each checkpoint, and at
//! session end) it compares: a new or changed exec-carrying key is unset (its earlier
//! values put back) by `git config --file` itself on a private copy that then replaces
//! the file, and a new or changed hook is moved to a quarantine directory outside the
//! workspace. Keys the profile lists in `[git] allow_exec_config` are kept.
//!
//! Cost: each check stats the repositories' config files, hooks directories and hooks
//! (relative to trusted directory descriptors, [`files`]) and compares with the last
//! check; git is run only when one of them changed.
//!
//! Repositories looked at: the workspace's own (its `.git` directory, a `.git` file or
//! link that resolves inside the workspace, or the verified linked worktree's), and those
//! one directory down (`git init sub`, `git clone URL sub`); for each, `config`,
//! `config.worktree`, the common directory's (`commondir`) config and hooks, the
//! `core.hooksPath` directory it had at start, and its submodules' (`modules/*`).

pub mod files;
pub mod keys;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use serde::Serialize;

use crate::guard::git::LinkedWorktree;
use files::{Id, Loc, open_dir};
use nix::sys::stat::SFlag;

/// A key that was unset.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Undone {
    pub file: PathBuf,
    pub key: String,
    /// What the task had set (each value).
    pub values: Vec<String>,
    /// The values it had at session start, put back.
    pub restored: Vec<String>,
}

/// A hook moved out of the repository.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Quarantined {
    pub hook: PathBuf,
    pub moved_to: PathBuf,
}

/// What one or more checks undid (`data.git_undone`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    pub config: Vec<Undone>,
    pub hooks: Vec<Quarantined>,
    /// What was found but could not be undone, and why.
    pub failed: Vec<String>,
}

impl Report {
    pub fn is_empty(&self) -> bool {
        self.config.is_empty() && self.hooks.is_empty() && self.failed.is_empty()
    }

    fn extend(&mut self, other: Report) {
        self.config.extend(other.config);
        self.hooks.extend(other.hooks);
        self.failed.extend(other.failed);
    }

    /// The one line the model reads.
    pub fn line(&self) -> String {
        let mut parts = Vec::new();
        if !self.config.is_empty() {
            let keys: Vec<String> = self
                .config
                .iter()
                .map(|u| format!("{} ({})", u.key, u.file.display()))
                .collect();
            parts.push(format!(
                "whalebox undid git configuration a command set that runs programs outside the sandbox: {}",
                keys.join(", ")
            ));
        }
        if !self.hooks.is_empty() {
            let hooks: Vec<String> = self
                .hooks
                .iter()
                .map(|q| format!("{} → {}", q.hook.display(), q.moved_to.display()))
                .collect();
            parts.push(format!("git hooks quarantined: {}", hooks.join(", ")));
        }
        if !self.failed.is_empty() {
            parts.push(format!(
                "NOT undone (tell the person): {}",
                self.failed.join("; ")
            ));
        }
        format!(
            "{}. The person's git would run them unfenced; if they are wanted, the person adds them to [git] allow_exec_config in the profile.",
            parts.join("; ")
        )
    }
}

/// What the guard is told at start.
#[derive(Debug, Clone)]
pub struct Settings {
    pub workspace: PathBuf,
    pub linked: Option<LinkedWorktree>,
    /// Key patterns kept (`core.pager`, `diff.*.textconv`), and `hooks/NAME` hooks kept.
    pub allow: Vec<String>,
    /// The git program the server runs (None: configuration is not checked).
    pub git: Option<PathBuf>,
    /// A private directory of the server's for git's copies and its empty HOME.
    pub scratch: PathBuf,
    /// Where hooks are moved (outside the workspace).
    pub quarantine: PathBuf,
    pub audit_log: Option<PathBuf>,
}

#[derive(Debug, Default)]
struct Baseline {
    /// Config file → its bytes at start (parsed only when the file changes: a start
    /// with many repositories runs no git).
    configs: BTreeMap<PathBuf, Vec<u8>>,
    /// Config file → its exec-carrying entries at start, once parsed.
    parsed: BTreeMap<PathBuf, Vec<(String, String)>>,
    /// Hook (or hooks directory that is a link) → its state at start.
    hooks: BTreeMap<PathBuf, Id>,
    /// Repository (worktree directory, relative to the workspace) → the `core.hooksPath`
    /// directory (relative to the workspace) it had at start.
    hooks_paths: BTreeMap<PathBuf, PathBuf>,
}

#[derive(Debug, Default)]
struct State {
    base: Baseline,
    /// The stat of everything looked at, after the last check.
    print: Option<Vec<(PathBuf, Option<Id>)>>,
    /// Undone since the model was last told.
    pending: Report,
    /// Config files found clean, by their state then: not parsed again while it holds.
    clean: BTreeMap<PathBuf, Id>,
}

/// The guard of one workspace (shared by the sessions of a server).
#[derive(Debug)]
pub struct GitGuard {
    settings: Settings,
    state: Mutex<State>,
}

/// Where to look in one repository.
#[derive(Debug, Default)]
struct Places {
    configs: Vec<Loc>,
    hook_dirs: Vec<Loc>,
}

impl GitGuard {
    /// Record the workspace's repositories as they are now (the baseline).
    pub fn start(settings: Settings) -> GitGuard {
        let guard = GitGuard {
            settings,
            state: Mutex::new(State::default()),
        };
        let places = guard.places(&BTreeMap::new());
        let mut base = Baseline::default();
        let mut clean = BTreeMap::new();
        for loc in &places.configs {
            // A file as it was at start is never undone (nor parsed) while it stays so.
            if let Ok(Some(id)) = loc.stat() {
                clean.insert(loc.shown.clone(), id);
            }
            let Ok(Some((bytes, _))) = loc.read() else {
                continue;
            };
            // Only a file that may name a hooks directory is parsed now.
            if bytes
                .to_ascii_lowercase()
                .windows(9)
                .any(|w| w == b"hookspath")
                && let Ok(entries) = guard.exec_entries(&bytes)
            {
                for (k, v) in &entries {
                    if keys::normal(k) == "core.hookspath" {
                        // Relative to the worktree: the repository's directory in the workspace.
                        let repo = repo_of(&loc.rel);
                        let named = Path::new(v);
                        let dir = match named.strip_prefix(&guard.settings.workspace) {
                            Ok(inside) => normal_rel(inside),
                            Err(_) => normal_rel(&repo.join(named)),
                        };
                        if let Some(dir) = dir {
                            base.hooks_paths.insert(repo, dir);
                        }
                    }
                }
                base.parsed.insert(loc.shown.clone(), entries);
            }
            base.configs.insert(loc.shown.clone(), bytes);
        }
        let places = guard.places(&base.hooks_paths);
        for dir in &places.hook_dirs {
            for (hook, id) in guard.hooks(dir) {
                base.hooks.insert(hook.shown, id);
            }
        }
        let print = guard.fingerprint(&places);
        if let Ok(mut st) = guard.state.lock() {
            st.base = base;
            st.print = Some(print);
            st.clean = clean;
        }
        guard
    }

    /// Compare with the baseline and undo what is new; what was undone is kept for
    /// [`GitGuard::take`] (and written to the log and the audit log now).
    pub fn check(&self) {
        let Ok(mut st) = self.state.lock() else {
            return;
        };
        let started = std::time::Instant::now();
        let places = self.places(&st.base.hooks_paths);
        let print = self.fingerprint(&places);
        if st.print.as_ref() == Some(&print) {
            tracing::debug!(
                elapsed_us = started.elapsed().as_micros() as u64,
                "git guard: nothing changed"
            );
            return;
        }
        let st = &mut *st;
        let report = self.undo(&mut st.base, &places, &mut st.clean);
        // What the undo left is the new normal for the fast path.
        st.print = Some(self.fingerprint(&self.places(&st.base.hooks_paths)));
        tracing::debug!(
            elapsed_us = started.elapsed().as_micros() as u64,
            "git guard: compared"
        );
        if report.is_empty() {
            return;
        }
        tracing::warn!("git guard: {}", report.line());
        self.audit(&report);
        st.pending.extend(report);
    }

    /// What was undone since the last call.
    pub fn take(&self) -> Report {
        self.state
            .lock()
            .map(|mut st| std::mem::take(&mut st.pending))
            .unwrap_or_default()
    }

    /// The exec-carrying entries of config file contents, as git reads them.
    fn exec_entries(&self, bytes: &[u8]) -> Result<Vec<(String, String)>, String> {
        let git = self.settings.git.as_deref().ok_or("no git program")?;
        let copy = Copy::new(&self.settings.scratch, git, bytes).map_err(|e| e.to_string())?;
        Ok(copy
            .entries()?
            .into_iter()
            .filter(|(k, v)| keys::carries_exec(k, v))
            .collect())
    }

    fn allowed(&self, key: &str) -> bool {
        self.settings.allow.iter().any(|p| keys::matches(p, key))
    }

    fn hook_allowed(&self, name: &str) -> bool {
        self.settings
            .allow
            .iter()
            .any(|p| p == "hooks/*" || p.strip_prefix("hooks/") == Some(name))
    }

    /// The repositories' config files and hooks directories, found now.
    fn places(&self, hooks_paths: &BTreeMap<PathBuf, PathBuf>) -> Places {
        let mut places = Places::default();
        let Ok(ws) = open_dir(&self.settings.workspace) else {
            return places;
        };
        let root = Loc {
            base: ws,
            rel: PathBuf::new(),
            shown: self.settings.workspace.clone(),
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
        let mut seen = BTreeSet::new();
        for repo in repos {
            for git_dir in self.git_dirs(&root, &repo) {
                self.repository(&root, &git_dir, &mut places, &mut seen);
            }
            if let Some(dir) = hooks_paths.get(&repo) {
                places.hook_dirs.push(root.join(dir));
            }
        }
        places
    }

    /// The git directory a repository's `.git` names, when whalebox can open it safely:
    /// a directory, a file or link that resolves inside the workspace, or the verified
    /// linked worktree. Outside the workspace a task cannot write (Landlock).
    fn git_dirs(&self, root: &Loc, repo: &Path) -> Vec<Loc> {
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
    fn inside(&self, root: &Loc, from: &Path, named: &Path) -> Option<Loc> {
        let abs = crate::guard::normalize(&from.join(named));
        let rel = abs.strip_prefix(&self.settings.workspace).ok()?;
        Some(root.join(rel))
    }

    /// A git directory's config files and hooks, its common directory's, its modules'.
    fn repository(
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
    fn hooks(&self, dir: &Loc) -> Vec<(Loc, Id)> {
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
    fn fingerprint(&self, places: &Places) -> Vec<(PathBuf, Option<Id>)> {
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

    /// Undo what differs from `base`.
    /// The exec-carrying entries `loc` had at start (none: it was not there, or git
    /// could not read it then).
    fn base_entries(&self, base: &mut Baseline, loc: &Loc) -> Vec<(String, String)> {
        if let Some(entries) = base.parsed.get(&loc.shown) {
            return entries.clone();
        }
        let entries = base
            .configs
            .get(&loc.shown)
            .and_then(|bytes| self.exec_entries(bytes).ok())
            .unwrap_or_default();
        base.parsed.insert(loc.shown.clone(), entries.clone());
        entries
    }

    fn undo(
        &self,
        base: &mut Baseline,
        places: &Places,
        clean: &mut BTreeMap<PathBuf, Id>,
    ) -> Report {
        let mut report = Report::default();
        for loc in &places.configs {
            let now = loc.stat().ok().flatten();
            if now.is_some() && clean.get(&loc.shown) == now.as_ref() {
                continue;
            }
            let before = report.config.len() + report.failed.len() + report.hooks.len();
            let entries = self.base_entries(base, loc);
            self.undo_config(loc, &entries, &mut report);
            match now {
                Some(id)
                    if report.config.len() + report.failed.len() + report.hooks.len() == before =>
                {
                    clean.insert(loc.shown.clone(), id);
                }
                _ => {
                    clean.remove(&loc.shown);
                }
            }
        }
        for dir in &places.hook_dirs {
            for (hook, id) in self.hooks(dir) {
                if base.hooks.get(&hook.shown) == Some(&id) {
                    continue;
                }
                let name = hook
                    .rel
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if self.hook_allowed(&name) {
                    continue;
                }
                let stamp = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_millis())
                    .unwrap_or(0);
                let label: String = hook
                    .rel
                    .to_string_lossy()
                    .chars()
                    .map(|c| if c == '/' { '_' } else { c })
                    .collect();
                match hook.quarantine(&self.settings.quarantine, &format!("{stamp}-{label}")) {
                    Ok(to) => report.hooks.push(Quarantined {
                        hook: hook.shown.clone(),
                        moved_to: to,
                    }),
                    Err(e) => report.failed.push(format!(
                        "hook {} could not be moved out: {e}",
                        hook.shown.display()
                    )),
                }
            }
        }
        report
    }

    fn undo_config(&self, loc: &Loc, base: &[(String, String)], report: &mut Report) {
        let read = match loc.read() {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err(e) => {
                // A link (or a fifo …) where git reads its configuration: git would
                // follow it; move it out like a hook.
                if let Ok(Some(id)) = loc.stat()
                    && id.kind() != SFlag::S_IFREG
                {
                    match loc.quarantine(&self.settings.quarantine, &quarantine_name(loc)) {
                        Ok(to) => report.hooks.push(Quarantined {
                            hook: loc.shown.clone(),
                            moved_to: to,
                        }),
                        Err(e) => report.failed.push(format!("{}: {e}", loc.shown.display())),
                    }
                    return;
                }
                report
                    .failed
                    .push(format!("{} could not be read: {e}", loc.shown.display()));
                return;
            }
        };
        let (bytes, id) = read;
        let Some(git) = &self.settings.git else {
            report.failed.push(format!(
                "{}: no git program to read it with",
                loc.shown.display()
            ));
            return;
        };
        let copy = match Copy::new(&self.settings.scratch, git, &bytes) {
            Ok(c) => c,
            Err(e) => {
                report.failed.push(format!("{}: {e}", loc.shown.display()));
                return;
            }
        };
        let entries = match copy.entries() {
            Ok(e) => e,
            Err(e) => {
                report.failed.push(format!("{}: {e}", loc.shown.display()));
                return;
            }
        };
        let mut new: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut left: Vec<&(String, String)> = base.iter().collect();
        for (k, v) in entries.iter().filter(|(k, v)| keys::carries_exec(k, v)) {
            if let Some(i) = left.iter().position(|b| b.0 == *k && b.1 == *v) {
                left.remove(i);
                continue;
            }
            if self.allowed(k) {
                continue;
            }
            new.entry(k.clone()).or_default().push(v.clone());
        }
        if new.is_empty() {
            return;
        }
        let mut undone = Vec::new();
        for (key, values) in new {
            let restored: Vec<String> = base
                .iter()
                .filter(|(k, _)| *k == key)
                .map(|(_, v)| v.clone())
                .collect();
            let mut ok = copy.git(&["--unset-all", &key]).is_ok();
            for v in &restored {
                ok &= copy.git(&["--add", &key, v]).is_ok();
            }
            if !ok {
                report.failed.push(format!(
                    "{}: git config could not unset {key}",
                    loc.shown.display()
                ));
                continue;
            }
            undone.push(Undone {
                file: loc.shown.clone(),
                key,
                values,
                restored,
            });
        }
        let written = std::fs::read(&copy.path).and_then(|b| loc.replace(&b, &id));
        match written {
            Ok(()) => report.config.extend(undone),
            Err(e) => report.failed.push(format!(
                "{}: could not be rewritten: {e}",
                loc.shown.display()
            )),
        }
    }

    /// A JSONL record in the audit log, when the profile keeps one.
    fn audit(&self, report: &Report) {
        let Some(log) = &self.settings.audit_log else {
            return;
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        let record = serde_json::json!({
            "time": now,
            "kind": "git_undone",
            "workspace": self.settings.workspace,
            "config": report.config,
            "hooks": report.hooks,
            "failed": report.failed,
        });
        let opened = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(log);
        if let Ok(mut f) = opened {
            use std::io::Write;
            let _ = writeln!(f, "{record}");
        }
    }
}

fn quarantine_name(loc: &Loc) -> String {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let label: String = loc
        .rel
        .to_string_lossy()
        .chars()
        .map(|c| if c == '/' { '_' } else { c })
        .collect();
    format!("{stamp}-{label}")
}

/// The repository (worktree directory, relative to the workspace) a config file under
/// `rel` (`sub/.git/config`) belongs to.
fn repo_of(rel: &Path) -> PathBuf {
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
fn normal_rel(rel: &Path) -> Option<PathBuf> {
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

/// A private copy of a config file, read and edited by git itself.
struct Copy<'a> {
    git: &'a Path,
    home: PathBuf,
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl<'a> Copy<'a> {
    fn new(scratch: &Path, git: &'a Path, bytes: &[u8]) -> std::io::Result<Copy<'a>> {
        std::fs::create_dir_all(scratch)?;
        let dir = tempfile::Builder::new()
            .prefix("gitcfg-")
            .tempdir_in(scratch)?;
        let home = dir.path().join("home");
        std::fs::create_dir(&home)?;
        let path = dir.path().join("config");
        std::fs::write(&path, bytes)?;
        Ok(Copy {
            git,
            home,
            path,
            _dir: dir,
        })
    }

    /// `git config --file COPY ARGS…`, with no system, global or user configuration.
    fn git(&self, args: &[&str]) -> Result<Vec<u8>, String> {
        let out = Command::new(self.git)
            .arg("config")
            .arg("--file")
            .arg(&self.path)
            .args(args)
            .env_clear()
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("LC_ALL", "C")
            .current_dir(&self.home)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.git.display()))?;
        if !out.status.success() {
            return Err(format!(
                "git config {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(out.stdout)
    }

    /// Every `key = value` of the file, as git reads it (includes not followed: an
    /// include is an exec-carrying key itself).
    fn entries(&self) -> Result<Vec<(String, String)>, String> {
        let out = self.git(&["--list", "--null", "--no-includes"])?;
        Ok(out
            .split(|&b| b == 0)
            .filter(|e| !e.is_empty())
            .map(|e| {
                let e = String::from_utf8_lossy(e);
                match e.split_once('\n') {
                    Some((k, v)) => (k.to_string(), v.to_string()),
                    None => (e.to_string(), String::new()),
                }
            })
            .collect())
    }
}

/// The git program the server runs: the first `git` on its PATH (resolved now, before
/// any task runs).
pub fn find_git() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("git"))
        .find(|p| p.is_file())
        .and_then(|p| p.canonicalize().ok())
}

/// The guard needs a directory of the server's it can open without a task reaching it.
pub fn scratch_dir(private_root: &Path) -> PathBuf {
    private_root.join("gitguard")
}

#[cfg(test)]
mod tests;
