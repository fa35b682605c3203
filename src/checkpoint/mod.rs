//! Checkpoints of the workspace: before every call that may change it (`edit`,
//! `multi_edit`, `write`, `shell_run`, `write_stdin`, `call_tool` on an upstream tool that
//! is not read-only), whalebox records the workspace's state, so that any change, a
//! command's included, can be undone by the model (`checkpoint_*` tools) or the person
//! (`whalebox checkpoints`).
//!
//! - [`store`]: blobs by sha256 and numbered records, in a private directory outside
//!   the workspace, with a lock for several sessions and a journal for restores.
//! - [`tree`]: the workspace as content-addressed directory trees (as git keeps it), so
//!   a checkpoint stores only the directories on the way to what changed.
//! - [`scan`]: the pass that builds the tree, reading only files whose (size, mtime,
//!   inode, mode) changed, and listing only directories [`watch`] (inotify) says changed.
//! - [`restore`]: staged, then swapped into place; [`prune`]: `keep`, `max_total_bytes`.
//! - [`service`]: [`Checkpoints`], what a session does with all of it.
//! - [`report`]: the answers the tools and the CLI give.

pub mod cli;
pub mod prune;
pub mod report;
pub mod restore;
pub mod scan;
pub mod service;
pub mod store;
pub mod tree;
pub mod watch;

use std::path::{Path, PathBuf};

pub use service::{Checkpoints, RestoreError, Settings, Summary};

use crate::profile::Profile;

/// The store's directory for `profile`'s workspace: `[checkpoints] dir`, else
/// `$XDG_STATE_HOME/whalebox/checkpoints/<name>-<hash of the path>` (`~/.local/state`).
pub fn store_dir(profile: &Profile) -> PathBuf {
    if let Some(dir) = &profile.checkpoints.dir {
        return dir.clone();
    }
    state_dir(profile, "checkpoints")
}

/// `$XDG_STATE_HOME/whalebox/KIND/<workspace key>` (`~/.local/state` by default): where
/// whalebox keeps a workspace's state of one kind, outside the workspace.
pub fn state_dir(profile: &Profile, kind: &str) -> PathBuf {
    let state = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    state
        .join("whalebox")
        .join(kind)
        .join(workspace_key(&profile.workspace))
}

/// `name-0123456789abcdef`: readable, and unique per workspace path.
fn workspace_key(workspace: &Path) -> String {
    use sha2::{Digest, Sha256};
    let hash = store::hex(&Sha256::digest(workspace.as_os_str().as_encoded_bytes()));
    let name: String = workspace
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".into())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    format!("{name}-{}", &hash[..16])
}

/// The settings `profile` gives (the store outside the workspace unless it says so).
pub fn settings(profile: &Profile) -> Settings {
    let c = &profile.checkpoints;
    let dir = store_dir(profile);
    let mut exclude = c.exclude.clone();
    // A store kept inside the workspace is never checkpointed itself.
    if let Ok(rel) = dir.strip_prefix(&profile.workspace)
        && !rel.as_os_str().is_empty()
    {
        exclude.push(format!("/{}", rel.display()));
    }
    Settings {
        workspace: profile.workspace.clone(),
        dir,
        rules: scan::ScanRules {
            exclude,
            max_file_bytes: c.max_file_bytes,
            max_pass_bytes: c.max_total_bytes,
        },
        keep: c.keep,
        max_total_bytes: c.max_total_bytes,
        watch: c.inotify,
    }
}

/// A session's checkpoints, opened (and the store made) on first use, or when the
/// server enters its sandbox: `whalebox doctor`, `tools` and `profile check` build the
/// same session and must write nothing.
pub struct Slot {
    settings: Settings,
    session: String,
    opened: std::sync::OnceLock<Result<std::sync::Arc<Checkpoints>, String>>,
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("dir", &self.settings.dir)
            .finish()
    }
}

impl Slot {
    /// `long_lived`: a server (see [`open`]).
    pub fn new(profile: &Profile, session: &str, long_lived: bool) -> Slot {
        let mut settings = settings(profile);
        settings.watch &= long_lived;
        Slot {
            settings,
            session: session.to_string(),
            opened: std::sync::OnceLock::new(),
        }
    }

    /// The store's directory (made when first opened).
    pub fn dir(&self) -> &Path {
        &self.settings.dir
    }

    /// The checkpoints, or why the store cannot be opened.
    pub fn get(&self) -> Result<std::sync::Arc<Checkpoints>, String> {
        self.opened
            .get_or_init(|| {
                Checkpoints::open(self.settings.clone(), &self.session)
                    .map(std::sync::Arc::new)
                    .map_err(|e| {
                        let why = format!("the store {}: {e}", self.settings.dir.display());
                        tracing::warn!("checkpoints are off: {why}");
                        why
                    })
            })
            .clone()
    }
}

/// How a server finds what changed before each call (for `whalebox doctor`).
pub fn server_method(profile: &Profile) -> String {
    if !profile.checkpoints.inotify {
        return "a stat pass of every path before and after each call ([checkpoints] inotify = false)".into();
    }
    match watch::Watch::new() {
        Ok(_) => "inotify in a server (a stat pass per `whalebox call` and CLI command, which live for one pass)".into(),
        Err(why) => format!("a stat pass of every path before and after each call (no inotify here: {why})"),
    }
}

/// Open the store of `profile`'s workspace for a session; `long_lived`: a server,
/// for which watching directories (inotify) pays off; a one-shot call or the CLI makes
/// one pass and gains nothing from watches.
pub fn open(profile: &Profile, session: &str, long_lived: bool) -> std::io::Result<Checkpoints> {
    let mut settings = settings(profile);
    settings.watch &= long_lived;
    Checkpoints::open(settings, session)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_keys_are_readable_and_unique() {
        let a = workspace_key(Path::new("/home/me/my project"));
        let b = workspace_key(Path::new("/srv/my project"));
        assert!(a.starts_with("my_project-"), "{a}");
        assert_ne!(a, b);
    }
}
