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
    /// Git configuration keys that run programs (`core.pager`, `core.fsmonitor`,
    /// `diff.*.textconv`, `alias.*` starting with `!` …) which commands may set in the
    /// workspace's repositories and keep. Any other such key a command sets is unset
    /// after the command, and a hook it writes is moved out (`hooks/NAME` keeps one):
    /// the person's next `git status` would run them outside the sandbox. `true` keeps
    /// them all (no guard); default: none.
    #[serde(default)]
    pub(super) allow_exec_config: AllowExecConfig,
}

/// `[git] allow_exec_config`: `true` (all), `false` (none) or a list of keys.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum AllowExecConfig {
    All(bool),
    Keys(Vec<String>),
}

impl Default for AllowExecConfig {
    fn default() -> Self {
        AllowExecConfig::All(false)
    }
}

impl AllowExecConfig {
    /// Whether every key and hook is kept (the guard is off).
    pub fn all(&self) -> bool {
        matches!(self, AllowExecConfig::All(true))
    }

    /// The keys (and `hooks/NAME`) kept.
    pub fn keys(&self) -> &[String] {
        match self {
            AllowExecConfig::Keys(k) => k,
            AllowExecConfig::All(_) => &[],
        }
    }
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
    /// What the git guard keeps (see [`crate::gitguard`]).
    pub allow_exec_config: AllowExecConfig,
    /// Set when the workspace is a linked worktree (whatever the setting).
    pub linked: Option<crate::guard::git::LinkedWorktree>,
    /// Set when a `.git` file named a worktree whalebox could not verify: why no root
    /// was derived from it.
    pub refused: Option<String>,
}
