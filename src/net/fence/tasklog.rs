//! What each task reached and was refused, kept for its results (`data.network`) and
//! written to the audit log, with bounds so a scanner cannot grow memory.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::json;

use super::Inner;
use crate::net::proxy::Door;
use crate::net::record::{ConnectionRecord, Kind, Outcome};

/// What one task reached and was refused, for its results.
#[derive(Debug, Default, Clone)]
pub(super) struct TaskLog {
    pub(super) reached: BTreeMap<(String, u16), Reached>,
    pub(super) refused: BTreeMap<(String, u16), Refused>,
}

#[derive(Debug, Default, Clone, Serialize)]
pub(super) struct Reached {
    pub(super) connections: u64,
    pub(super) bytes_up: u64,
    pub(super) bytes_down: u64,
    /// The programs that connected (the last of each chain), a few.
    pub(super) by: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct Refused {
    pub(super) rule: String,
    pub(super) how_to_allow: String,
    pub(super) times: u64,
    pub(super) by: Vec<String>,
}

/// Program names kept per host.
const BY_KEPT: usize = 4;

fn add_by(by: &mut Vec<String>, chain: &Option<Vec<String>>) {
    if let Some(last) = chain.as_ref().and_then(|c| c.last())
        && by.len() < BY_KEPT
        && !by.contains(last)
    {
        by.push(last.clone());
    }
}

/// Entries kept: past this, the oldest of the ended tasks' are forgotten (the task
/// table itself keeps 64 ended tasks).
const ENTRIES_KEPT: usize = 256;

pub(super) fn forget_oldest_ended(entries: &mut HashMap<String, Entry>) {
    while entries.len() >= ENTRIES_KEPT {
        let oldest = entries
            .iter()
            .filter(|(_, e)| e.door.is_none() && e.task.is_some())
            .min_by_key(|(_, e)| e.serial)
            .map(|(k, _)| k.clone());
        match oldest {
            Some(k) => {
                entries.remove(&k);
            }
            None => break,
        }
    }
}

/// Hosts one task may keep in its log (a scanner must not grow memory without bound).
const LOG_HOSTS: usize = 200;

pub(super) struct Entry {
    /// Made in this order (the oldest ended entries are forgotten first).
    pub(super) serial: u64,
    pub(super) task: Option<String>,
    /// The task's supervisor, whose descendants' programs are named in the records.
    pub(super) pid: Option<i32>,
    pub(super) command: String,
    pub(super) door: Option<Door>,
    pub(super) log: TaskLog,
}

impl Inner {
    pub(super) fn record(&self, token: &str, r: ConnectionRecord) {
        let (task, command) = self.task_of(token);
        if let Some(audit) = &self.audit {
            let secs = |t: SystemTime| {
                t.duration_since(UNIX_EPOCH)
                    .map(|d| d.as_secs_f64())
                    .unwrap_or(0.0)
            };
            let (decision, rule, why) = match &r.outcome {
                Outcome::Allowed => ("allow", None, None),
                Outcome::Denied { rule, .. } => ("deny", Some(rule.clone()), None),
                Outcome::Failed { why } => ("failed", None, Some(why.clone())),
                Outcome::Rejected { why, .. } => ("rejected", None, Some(why.clone())),
            };
            let line = json!({
                "ts": secs(r.start),
                "kind": "network",
                "task": task,
                "command": command,
                "request": match r.kind { Kind::Connect => "connect", Kind::Forward => "http", Kind::Unknown => "unknown" },
                "host": r.host,
                "port": r.port,
                "address": r.address.map(|a| a.ip().to_string()),
                "decision": decision,
                "rule": rule,
                "why": why,
                "bytes_up": r.bytes_up,
                "bytes_down": r.bytes_down,
                "duration_ms": r.end.duration_since(r.start).map(|d| d.as_millis() as u64).unwrap_or(0),
                "note": r.note,
                "credential": r.credential,
                "programs": r.programs,
            });
            if let Ok(mut f) = audit.lock() {
                let _ = writeln!(f, "{line}");
            }
        }
        let Some(host) = r.host.clone() else { return };
        let key = (host, r.port.unwrap_or(0));
        if let Ok(mut entries) = self.entries.lock()
            && let Some(e) = entries.get_mut(token)
        {
            let log = &mut e.log;
            let full = log.reached.len() + log.refused.len() >= LOG_HOSTS;
            match r.outcome {
                Outcome::Denied { rule, how_to_allow } => {
                    if let Some(seen) = log.refused.get_mut(&key) {
                        seen.times += 1;
                        add_by(&mut seen.by, &r.programs);
                    } else if !full {
                        let mut by = Vec::new();
                        add_by(&mut by, &r.programs);
                        log.refused.insert(
                            key,
                            Refused {
                                rule,
                                how_to_allow,
                                times: 1,
                                by,
                            },
                        );
                    }
                }
                Outcome::Allowed => {
                    if full && !log.reached.contains_key(&key) {
                        return;
                    }
                    let seen = log.reached.entry(key).or_default();
                    seen.connections += 1;
                    seen.bytes_up += r.bytes_up;
                    seen.bytes_down += r.bytes_down;
                    add_by(&mut seen.by, &r.programs);
                }
                _ => {}
            }
        }
    }
}
