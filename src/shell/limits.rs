//! What a task's resource limits did: the limits it runs under, what keeps each (its
//! cgroup, an rlimit, nothing), and, when it hit one, a diagnosis that names the limit,
//! for `data.limits` and the result's text.

use serde_json::{Value, json};

use super::diagnose::Diagnosis;
use super::task::AppliedLimits;
use crate::guard::limits::cgroup::Events;
use crate::guard::limits::human_bytes;

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
        let fork_failed = [
            "fork: Resource temporarily unavailable",
            "fork: retry",
            "Cannot fork",
            "can't fork",
            "BlockingIOError: [Errno 11]",
        ]
        .iter()
        .any(|s| end.tail.contains(s));
        let by = if applied.pids_by_cgroup() {
            "its cgroup's pids.max"
        } else {
            "RLIMIT_NPROC, counted over all of the user's processes"
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
                    "the task reached its process limit: {refused} at {n} processes and threads ({by}, [shell.limits] processes)"
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
