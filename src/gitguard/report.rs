//! What the git guard undid, as the model reads it (one line) and as data
//! (`data.git_undone`, the audit log's `git_undone` record).

use std::path::PathBuf;

use serde::Serialize;

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

    pub(super) fn extend(&mut self, other: Report) {
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
