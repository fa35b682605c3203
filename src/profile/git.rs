//! `[git]`: what a workspace in a git repository needs beyond itself (a linked
//! worktree's shared `.git`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `[git]`: what a workspace in a git repository needs beyond itself.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct GitFile {
    /// When the workspace is a linked worktree (`git worktree add`): "read" (default)
    /// makes the main worktree a read-only root and lets git write what a commit writes
    /// in the shared `.git` (objects, refs, logs, this worktree's own directory); "off"
    /// leaves it all closed (git then fails in the workspace).
    #[serde(default)]
    pub(super) main_worktree: MainWorktree,
}

/// `[git] main_worktree`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MainWorktree {
    #[default]
    Read,
    Off,
}

/// The effective `[git]`: the setting, and the linked worktree it applied to.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GitSection {
    pub main_worktree: MainWorktree,
    /// Set when the workspace is a linked worktree (whatever the setting).
    pub linked: Option<crate::guard::git::LinkedWorktree>,
    /// Set when a `.git` file named a worktree whalebox could not verify: why no root
    /// was derived from it.
    pub refused: Option<String>,
}
