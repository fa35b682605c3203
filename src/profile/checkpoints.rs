//! `[checkpoints]`: what is kept of the workspace before every call that may change it,
//! where, and for how long.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::guard::presets::Preset;

/// `[checkpoints]` as written.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub(super) struct CheckpointsFile {
    /// "on": a checkpoint before every call that may change the workspace (edit,
    /// multi_edit, write, shell_run, write_stdin, call_tool); "off": none.
    mode: Mode,
    /// The store (absolute, `~/…`, or relative to the profile); default:
    /// `$XDG_STATE_HOME/whalebox/checkpoints/<workspace name>-<hash of its path>`.
    dir: Option<String>,
    /// Directories never kept: a name (at any depth), or a path from the workspace's top
    /// (`build/cache`, `/target`). Default: `.git` and the toolchains' rebuildable
    /// directories (`/target`, `node_modules`, `/.venv`, `__pycache__` …).
    exclude: Option<Vec<String>>,
    /// Files larger than this are not kept (listed as skipped).
    max_file_bytes: u64,
    /// The store's size past which the oldest checkpoints are dropped.
    max_total_bytes: u64,
    /// Checkpoints kept (the oldest are dropped first).
    keep: usize,
    /// Ask the kernel (inotify) which directories changed, instead of a stat of every
    /// path before every call.
    inotify: bool,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "kebab-case")]
enum Mode {
    #[default]
    On,
    Off,
}

impl Default for CheckpointsFile {
    fn default() -> Self {
        CheckpointsFile {
            mode: Mode::On,
            dir: None,
            exclude: None,
            max_file_bytes: 16 << 20,
            max_total_bytes: 2 << 30,
            keep: 200,
            inotify: true,
        }
    }
}

/// `[checkpoints]`, resolved.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CheckpointsSection {
    pub on: bool,
    pub dir: Option<PathBuf>,
    pub exclude: Vec<String>,
    pub max_file_bytes: u64,
    pub max_total_bytes: u64,
    pub keep: usize,
    pub inotify: bool,
}

/// `.git` and every preset's rebuildable directories.
pub fn default_exclude() -> Vec<String> {
    let mut out = vec![".git".to_string()];
    for p in Preset::ALL {
        out.extend(p.workspace_caches().iter().map(|s| s.to_string()));
    }
    out
}

impl CheckpointsFile {
    /// Check and resolve (`resolve`: a path as the profile means it).
    pub(super) fn resolve(
        self,
        resolve: impl Fn(&str) -> Result<PathBuf, super::ProfileError>,
    ) -> Result<Result<CheckpointsSection, String>, super::ProfileError> {
        if self.keep == 0 {
            return Ok(Err(
                "checkpoints.keep must be at least 1 (or mode = \"off\")".into(),
            ));
        }
        if self.max_total_bytes < self.max_file_bytes {
            return Ok(Err(format!(
                "checkpoints.max_total_bytes ({}) is below max_file_bytes ({})",
                self.max_total_bytes, self.max_file_bytes
            )));
        }
        let exclude = self.exclude.unwrap_or_else(default_exclude);
        if let Some(bad) = exclude.iter().find(|x| {
            let x = x.strip_prefix('/').unwrap_or(x);
            x.is_empty() || x.starts_with('/') || x.split('/').any(|c| c == "..")
        }) {
            return Ok(Err(format!(
                "checkpoints.exclude: `{bad}` is not a name or a path inside the workspace"
            )));
        }
        Ok(Ok(CheckpointsSection {
            on: self.mode == Mode::On,
            dir: self.dir.as_deref().map(resolve).transpose()?,
            exclude,
            max_file_bytes: self.max_file_bytes,
            max_total_bytes: self.max_total_bytes,
            keep: self.keep,
            inotify: self.inotify,
        }))
    }
}
