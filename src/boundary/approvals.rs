//! Who settles an `ask`: the profile's `on_ask` when nobody can be asked, else the
//! session's approver (a person through MCP elicitation or a terminal); and "for the
//! session" answers kept as policy rules in the approvals file, for a person to review
//! and include.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::Deserialize;

use crate::policy::Decision;

/// Who settles an `ask` when nobody can be asked.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum OnAsk {
    /// Refuse the exec (the result says `approval_needed`).
    #[default]
    Deny,
    /// Run it (CI jobs that trust their policy's `ask` rules).
    Allow,
}

/// A person's answer to an `ask`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    Once,
    /// Allow this program (and first argument) for the rest of the session.
    Session,
    Deny,
}

/// What a person is asked about.
#[derive(Debug, Clone)]
pub struct ApprovalRequest {
    pub command: String,
    pub reason: String,
    pub task_id: Option<String>,
}

/// Asks a person (MCP elicitation, a terminal); `None`: nobody can answer here.
pub type Approver = Arc<dyn Fn(&ApprovalRequest) -> Option<(Approval, &'static str)> + Send + Sync>;

/// Where the session's approver is installed once a client that can answer connects.
#[derive(Clone, Default)]
pub struct ApproverSlot(Arc<Mutex<Option<Approver>>>);

impl ApproverSlot {
    pub fn set(&self, approver: Approver) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(approver);
        }
    }

    pub fn get(&self) -> Option<Approver> {
        self.0.lock().ok().and_then(|a| a.clone())
    }

    pub fn is_set(&self) -> bool {
        self.0.lock().map(|a| a.is_some()).unwrap_or(false)
    }
}

impl std::fmt::Debug for ApproverSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApproverSlot(set: {})", self.is_set())
    }
}

/// Append "allow KEY" to the approvals file as a policy rule (the file is created as a
/// policy of its own, `version = 1`, so it can be checked and included as it is).
pub(super) fn remember(
    file: &Path,
    key: &[String],
    verdict: &crate::policy::Verdict,
    who: &str,
    argv: &[String],
) -> std::io::Result<()> {
    let quote = |s: &str| toml::Value::String(s.to_string()).to_string();
    // The example must split back into the same words (crate::policy::words).
    let example: Vec<String> = key
        .iter()
        .map(|w| {
            if w.chars()
                .any(|c| c.is_whitespace() || c == '\'' || c == '"')
            {
                if w.contains('\'') {
                    format!("\"{w}\"")
                } else {
                    format!("'{w}'")
                }
            } else {
                w.clone()
            }
        })
        .collect();
    let checkable = key.iter().all(|w| !(w.contains('\'') && w.contains('"')));
    let day = crate::boundary::today();
    let mut block = format!(
        "\n# Allowed for a session by {who} on {day}, when it ran: {}\n",
        argv.join(" ").replace('\n', " ")
    );
    for m in verdict
        .matched
        .iter()
        .filter(|m| m.decision != Decision::Allow)
    {
        block.push_str(&format!(
            "# Note: {} also says {} here, and the strictest rule wins; change that rule for this one to matter.\n",
            m.source,
            m.decision.as_str()
        ));
    }
    block.push_str("[[rule]]\n");
    block.push_str(&format!(
        "pattern = [{}]\n",
        key.iter().map(|w| quote(w)).collect::<Vec<_>>().join(", ")
    ));
    block.push_str("decision = \"allow\"\n");
    block.push_str(&format!(
        "justification = {}\n",
        quote(&format!("approved for a session by {who} on {day}"))
    ));
    if checkable {
        block.push_str(&format!("match = [{}]\n", quote(&example.join(" "))));
    }
    append_approval(file, &block)
}

/// Append a block of policy rules to the approvals file, which starts as a policy of its
/// own (`version = 1`) when it is empty; in one write, so blocks never interleave.
pub(crate) fn append_approval(file: &Path, block: &str) -> std::io::Result<()> {
    // Empty, not missing: the server creates the file at start when Landlock needs it.
    let fresh = std::fs::metadata(file)
        .map(|m| m.len() == 0)
        .unwrap_or(true);
    let mut text = String::new();
    if fresh {
        text.push_str(
            "# Approvals remembered by whalebox ([shell] approvals_file). Review them, then\n\
             # commit this file and `include` it from your policy, or copy the rules over.\n\
             version = 1\n",
        );
    }
    text.push_str(block);
    let mut opts = std::fs::OpenOptions::new();
    opts.create(true).append(true);
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o644);
    opts.open(file)?.write_all(text.as_bytes())
}

/// Today's date (UTC) as YYYY-MM-DD, for remembered approvals.
pub(crate) fn today() -> String {
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() / 86_400)
        .unwrap_or(0) as i64;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}
