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
//! link that resolves inside the workspace, or the verified linked worktree's), those
//! one directory down (`git init sub`, `git clone URL sub`) and deeper ones there at
//! start (one walk); for each, `config`, `config.worktree`, the common directory's
//! (`commondir`) config and hooks, the `core.hooksPath` directory it had at start, the
//! files its start-time includes name inside the workspace, and its submodules'
//! (`modules/*`).

mod copy;
pub mod files;
pub mod keys;
mod places;
mod report;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::guard::git::LinkedWorktree;
use copy::Copy;
pub use copy::find_git;
use files::{Id, Loc};
use nix::sys::stat::SFlag;
use places::{Named, Places, normal_rel, repo_of};
pub use report::{Quarantined, Report, Undone};

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
    /// Where the start's configuration and workspace say to look besides the usual.
    named: Named,
}

/// How many included files the guard follows (git itself stops at 10 levels).
const MAX_INCLUDES: usize = 64;

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

impl GitGuard {
    /// Record the workspace's repositories as they are now (the baseline).
    pub fn start(settings: Settings) -> GitGuard {
        let guard = GitGuard {
            settings,
            state: Mutex::new(State::default()),
        };
        let mut base = Baseline::default();
        base.named.deep_repos = guard.deep_repos();
        let places = guard.places(&base.named);
        let mut clean = BTreeMap::new();
        // The repositories' config files, then each file they include (and those include).
        let mut configs = places.configs;
        let mut next = 0;
        while let Some(loc) = configs.get(next).cloned() {
            next += 1;
            let loc = &loc;
            // A file as it was at start is never undone (nor parsed) while it stays so.
            if let Ok(Some(id)) = loc.stat() {
                clean.insert(loc.shown.clone(), id);
            }
            let Ok(Some((bytes, _))) = loc.read() else {
                continue;
            };
            // Only a file that may name a hooks directory or include another is parsed now.
            let lower = bytes.to_ascii_lowercase();
            let names = |word: &[u8]| lower.windows(word.len()).any(|w| w == word);
            if (names(b"hookspath") || names(b"include"))
                && let Ok(entries) = guard.exec_entries(&bytes)
            {
                for (k, v) in &entries {
                    if (keys::matches("include.path", k) || keys::matches("includeif.*.path", k))
                        && base.named.includes.len() < MAX_INCLUDES
                        && let Some(rel) = guard.included(&loc.shown, v)
                        && base.named.includes.insert(rel.clone())
                        && let Some(file) = guard.workspace_loc().map(|ws| ws.join(&rel))
                        && !configs.iter().any(|c| c.shown == file.shown)
                    {
                        configs.push(file);
                    }
                    if keys::normal(k) == "core.hookspath" {
                        // Relative to the worktree: the repository's directory in the workspace.
                        let repo = repo_of(&loc.rel);
                        let named = Path::new(v);
                        let dir = match named.strip_prefix(&guard.settings.workspace) {
                            Ok(inside) => normal_rel(inside),
                            Err(_) => normal_rel(&repo.join(named)),
                        };
                        if let Some(dir) = dir {
                            base.named.hooks_paths.insert(repo, dir);
                        }
                    }
                }
                base.parsed.insert(loc.shown.clone(), entries);
            }
            base.configs.insert(loc.shown.clone(), bytes);
        }
        let places = guard.places(&base.named);
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
        let places = self.places(&st.base.named);
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
        st.print = Some(self.fingerprint(&self.places(&st.base.named)));
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

    /// Undo what differs from `base`.
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

/// The guard needs a directory of the server's it can open without a task reaching it.
pub fn scratch_dir(private_root: &Path) -> PathBuf {
    private_root.join("gitguard")
}

#[cfg(test)]
mod tests;
