//! What a task's resource limits did: the limits it runs under, what keeps each (its
//! cgroup, an rlimit, nothing), and, when it hit one, a diagnosis that names the limit,
//! for `data.limits` and the result's text.

use serde_json::{Value, json};

use super::diagnose::Diagnosis;
use super::task::AppliedLimits;
use crate::guard::limits::cgroup::Events;
use crate::guard::limits::human_bytes;

/// How shells and runtimes say a fork failed with EAGAIN (lowercased): bash, zsh, dash,
/// Python.
const FORK_FAILED: &[&str] = &[
    "fork: resource temporarily unavailable",
    "fork: retry",
    "fork failed: resource temporarily unavailable",
    "cannot fork",
    "can't fork",
    "blockingioerror: [errno 11]",
];

/// SIGXCPU: a process used up its CPU time (RLIMIT_CPU's soft limit).
const SIGXCPU: i32 = 24;

/// How the task ended, and the end of its output, as far as the limits care.
pub struct Ending<'a> {
    pub task_id: &'a str,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// The last output (lossily decoded).
    pub tail: &'a str,
}

/// `data.limits` and the diagnoses of a task that hit a limit.
pub fn report(
    applied: &AppliedLimits,
    events: Option<Events>,
    end: &Ending<'_>,
) -> (Value, Vec<Diagnosis>) {
    let l = &applied.limits;
    let mut hit = Vec::new();
    let mut diagnoses = Vec::new();
    let cancel = format!(
        "shell_cancel {{\"task_id\": \"{}\"}} stops it if it still runs",
        end.task_id
    );
    let e = events.unwrap_or_default();
    if let Some(n) = l.processes {
        let tail = end.tail.to_lowercase();
        let fork_failed = FORK_FAILED.iter().any(|s| tail.contains(s));
        let at = if applied.pids_by_cgroup() {
            format!("{n} processes and threads (its cgroup's pids.max")
        } else {
            format!(
                "{n} processes and threads more than the user ran when it started (RLIMIT_NPROC"
            )
        };
        if e.forks_refused > 0 || (!applied.pids_by_cgroup() && fork_failed) {
            hit.push("processes");
            let refused = if e.forks_refused > 0 {
                format!("{} fork(s) were refused", e.forks_refused)
            } else {
                "a fork failed".to_string()
            };
            diagnoses.push(Diagnosis {
                kind: "limit",
                message: format!(
                    "the task reached its process limit: {refused} at {at}, [shell.limits] processes)"
                ),
                next_step: format!(
                    "a command that starts processes without end (a fork bomb, a runaway loop) stops there: fix it; if the work really needs more, ask the user to raise [shell.limits] processes; {cancel}"
                ),
            });
        }
    }
    if e.oom_kills > 0 {
        hit.push("memory");
        let limit = l.memory.map(human_bytes).unwrap_or_else(|| "?".into());
        diagnoses.push(Diagnosis {
            kind: "limit",
            message: format!(
                "the kernel killed {} process(es) of the task at its memory limit ({limit}, [shell.limits] memory)",
                e.oom_kills
            ),
            next_step: format!(
                "use less memory at once (fewer parallel jobs: cargo build -j2, make -j2; smaller inputs), or ask the user to raise [shell.limits] memory; {cancel}"
            ),
        });
    }
    if let Some(n) = l.cpu_seconds
        && (end.signal == Some(SIGXCPU) || end.exit_code == Some(128 + SIGXCPU))
    {
        hit.push("cpu_seconds");
        diagnoses.push(Diagnosis {
            kind: "limit",
            message: format!(
                "a process used up its CPU time ({n} s, [shell.limits] cpu_seconds) and was stopped with SIGXCPU"
            ),
            next_step: "look for a loop that never ends; if the work really needs more CPU time, ask the user to raise [shell.limits] cpu_seconds".into(),
        });
    }
    if let Some(n) = l.open_files
        && end.tail.contains("Too many open files")
    {
        hit.push("open_files");
        diagnoses.push(Diagnosis {
            kind: "limit",
            message: format!(
                "a process ran out of file descriptors at its limit ({n}, [shell.limits] open_files)"
            ),
            next_step: format!(
                "close what is not needed (a descriptor leak?); if the work really needs more, ask the user to raise [shell.limits] open_files; {cancel}"
            ),
        });
    }
    if let Some(n) = l.address_space
        && [
            "MemoryError",
            "Cannot allocate memory",
            "out of memory",
            "memory allocation of",
        ]
        .iter()
        .any(|s| end.tail.contains(s))
    {
        hit.push("address_space");
        diagnoses.push(Diagnosis {
            kind: "limit",
            message: format!(
                "a process could not allocate memory at its address-space limit ({}, [shell.limits] address_space)",
                human_bytes(n)
            ),
            next_step: "use less memory at once (fewer parallel jobs, smaller inputs), or ask the user to raise [shell.limits] address_space (runtimes such as Go, the JVM and V8 reserve more than they use)".into(),
        });
    }
    let data = json!({
        "processes": l.processes,
        "memory": l.memory,
        "address_space": l.address_space,
        "open_files": l.open_files,
        "cpu_seconds": l.cpu_seconds,
        "processes_by": match (l.processes, applied.pids_by_cgroup()) {
            (None, _) => Value::Null,
            (Some(_), true) => json!("cgroup"),
            (Some(_), false) => json!("rlimit"),
        },
        "memory_by": match (l.memory, applied.memory_by_cgroup()) {
            (None, _) => Value::Null,
            (Some(_), true) => json!("cgroup"),
            (Some(_), false) => json!("none"),
        },
        "no_cgroup": applied.no_cgroup,
        "forks_refused": events.map(|e| e.forks_refused),
        "oom_kills": events.map(|e| e.oom_kills),
        "memory_peak": events.and_then(|e| e.memory_peak),
        "hit": hit,
    });
    (data, diagnoses)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::limits::Limits;

    fn rlimits_alone() -> AppliedLimits {
        AppliedLimits {
            limits: Limits {
                processes: Some(64),
                open_files: Some(256),
                ..Limits::default()
            },
            cgroup: None,
            no_cgroup: Some("no cgroup here".into()),
        }
    }

    fn ending(tail: &str) -> Ending<'_> {
        Ending {
            task_id: "t1",
            exit_code: Some(1),
            signal: None,
            tail,
        }
    }

    /// Regression: zsh says "fork failed: resource temporarily unavailable", which the
    /// first patterns (bash's) missed, so a fork bomb held by RLIMIT_NPROC alone was not
    /// named.
    #[test]
    fn a_failed_fork_is_named_whichever_shell_said_it() {
        for tail in [
            "bomb:1: fork failed: resource temporarily unavailable\n",
            "bash: fork: retry: Resource temporarily unavailable\n",
            "bash: fork: Resource temporarily unavailable\n",
            "sh: 1: Cannot fork\n",
            "BlockingIOError: [Errno 11] Resource temporarily unavailable\n",
        ] {
            let (data, found) = report(&rlimits_alone(), None, &ending(tail));
            assert_eq!(data["hit"], serde_json::json!(["processes"]), "{tail}");
            assert!(found[0].message.contains("RLIMIT_NPROC"), "{tail}");
        }
        let (data, found) = report(&rlimits_alone(), None, &ending("all good\n"));
        assert_eq!(data["hit"], serde_json::json!([]));
        assert!(found.is_empty());
    }

    #[test]
    fn the_cgroup_counters_name_the_limit_without_any_output() {
        let events = Events {
            forks_refused: 3,
            oom_kills: 1,
            memory_peak: Some(1 << 20),
        };
        let (data, found) = report(&rlimits_alone(), Some(events), &ending(""));
        assert_eq!(data["hit"], serde_json::json!(["processes", "memory"]));
        assert_eq!(data["forks_refused"], 3);
        assert!(found[0].message.contains("3 fork(s) were refused"));
        assert!(found[1].message.contains("killed 1 process(es)"));
    }
}
