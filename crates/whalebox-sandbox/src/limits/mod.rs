//! Resource limits of one task: how many processes, how much memory, how many open
//! files and how much CPU time the processes of one command may take, so that a runaway
//! command (a fork bomb, an allocation loop, a descriptor leak) stops at its own limit
//! instead of taking the machine, and the server that started it keeps serving.
//!
//! Two mechanisms, the first where it can be had:
//!
//! - a cgroup per task ([`cgroup`]): `pids.max` and the memory limit count every
//!   process and thread of the task together, and their event counters say afterwards
//!   which limit the task hit;
//! - rlimits, set in the task's first process before it runs anything (inherited by
//!   all it starts): `RLIMIT_NOFILE` and `RLIMIT_CPU` always (they are per process
//!   anyway), `RLIMIT_AS` when asked for, and `RLIMIT_NPROC` where no cgroup counts the
//!   processes (the kernel counts all of a user's processes against it, and not root's).
//!
//! [`LimitsSection`] is the profile's `[shell.limits]`; [`Limits`] its values resolved
//! to numbers; [`TaskSetup`] what the server hands a task's supervisor; [`ChildSetup`]
//! what the task's first process does with it between fork and exec.

pub mod cgroup;

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;

use nix::libc;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A limit as the profile writes it: a number, or a string (`"off"`, a size such as
/// `"512M"` or `"8G"`, a share of the machine's memory such as `"75%"`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(untagged)]
pub enum Amount {
    Number(u64),
    Text(String),
}

impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Amount, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Amount;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a whole number, or a string: \"off\", a size such as \"512M\" or \"8G\", a share such as \"75%\"",
                )
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Amount, E> {
                Ok(Amount::Number(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Amount, E> {
                u64::try_from(v)
                    .map(Amount::Number)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &self))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Amount, E> {
                Ok(Amount::Text(v.to_string()))
            }
        }
        d.deserialize_any(Visitor)
    }
}

impl Amount {
    fn off() -> Amount {
        Amount::Text("off".into())
    }
}

/// Whether a task gets a cgroup of its own.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CgroupMode {
    /// A cgroup per task where whalebox may create one (v2 with the controllers, else
    /// v1 under its own); else rlimits alone (`whalebox doctor` says which).
    #[default]
    Auto,
    /// rlimits alone.
    Off,
}

/// `[shell.limits]`: what one task (a command and every process it starts) may take.
///
/// The defaults never bother normal development work (compilers, `cargo`, `npm`, `go
/// build`, test suites) and stop what no such work does:
///
/// - `processes = 8192`: processes and threads at once. A `cargo build` on 64 cores runs
///   64 rustc processes of some 20 threads each (about 1300); `make -j` and test runners
///   stay below that too. A fork bomb stops within a second at 8192, a quarter of the
///   smallest `pid_max` (32768), so the machine keeps pids for everyone else.
/// - `memory = "75%"` of the machine's memory (or of the server's own cgroup limit, when
///   lower): one task can never take the last quarter the server and the rest need; a
///   big link step still fits. Enforced by a cgroup only: `RLIMIT_AS` counts reserved
///   address space, which Go, the JVM, V8 and sanitizers reserve by the terabyte, so
///   `address_space` is a separate opt-in.
/// - `open_files = 65536`: the hard cap on descriptors per process (a soft limit below
///   it is kept, never raised): far above what build tools and test servers open (1024
///   is the classic default), low enough that a leak stops long before the kernel's
///   memory for open files matters.
/// - `cpu_seconds = "off"`: a build legitimately uses hours of CPU time; a command that
///   spins is seen in its output and cancelled with `shell_cancel`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsSection {
    /// Processes and threads of one task at once: its cgroup's `pids.max`; where no
    /// cgroup can be made, `RLIMIT_NPROC` (counted over all of the user's processes,
    /// above those running when the task starts; not enforced for root). A number or
    /// "off".
    pub processes: Amount,
    /// Memory of one task (all its processes): its cgroup's memory limit, where one can
    /// be made. Bytes, a size ("512M", "8G"), a share of the machine's memory ("75%"),
    /// or "off".
    pub memory: Amount,
    /// Address space of each process (`RLIMIT_AS`): off by default (runtimes that
    /// reserve large address ranges fail under it). A size, or "off".
    pub address_space: Amount,
    /// Open files of each process (`RLIMIT_NOFILE`, soft and hard, never raised). A
    /// number or "off".
    pub open_files: Amount,
    /// CPU time of each process in seconds (`RLIMIT_CPU`: SIGXCPU at the limit, SIGKILL
    /// 10 s later). A number or "off".
    pub cpu_seconds: Amount,
    /// auto: a cgroup per task where whalebox may create one; off: rlimits alone.
    pub cgroup: CgroupMode,
}

impl Default for LimitsSection {
    fn default() -> Self {
        LimitsSection {
            processes: Amount::Number(8192),
            memory: Amount::Text("75%".into()),
            address_space: Amount::off(),
            open_files: Amount::Number(65536),
            cpu_seconds: Amount::off(),
            cgroup: CgroupMode::Auto,
        }
    }
}

/// The limits of one task as numbers (None: no limit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    pub processes: Option<u64>,
    /// Bytes.
    pub memory: Option<u64>,
    /// Bytes.
    pub address_space: Option<u64>,
    pub open_files: Option<u64>,
    pub cpu_seconds: Option<u64>,
}

/// The smallest values accepted: below them a shell cannot start its first command.
const MIN_PROCESSES: u64 = 8;
const MIN_OPEN_FILES: u64 = 32;
const MIN_MEMORY: u64 = 32 << 20;

impl LimitsSection {
    /// The values as numbers, or why one is not a valid limit (said as
    /// `shell.limits.KEY = VALUE: why`). Shares of memory are taken of `memory_total`.
    pub fn resolve(&self, memory_total: u64) -> Result<Limits, String> {
        let count = |key: &str, a: &Amount, min: u64| -> Result<Option<u64>, String> {
            match a {
                Amount::Number(n) if *n < min => Err(format!(
                    "shell.limits.{key} = {n} is too low for a shell to start a command; use at least {min}, or \"off\""
                )),
                Amount::Number(n) => Ok(Some(*n)),
                Amount::Text(t) if t.trim() == "off" => Ok(None),
                Amount::Text(t) => match t.trim().parse::<u64>() {
                    Ok(n) => count_of(key, n, min),
                    Err(_) => Err(format!(
                        "shell.limits.{key} = {t:?}: give a whole number, or \"off\""
                    )),
                },
            }
        };
        fn count_of(key: &str, n: u64, min: u64) -> Result<Option<u64>, String> {
            if n < min {
                return Err(format!(
                    "shell.limits.{key} = {n} is too low for a shell to start a command; use at least {min}, or \"off\""
                ));
            }
            Ok(Some(n))
        }
        let size = |key: &str, a: &Amount, share: bool| -> Result<Option<u64>, String> {
            let bytes = match a {
                Amount::Number(n) => *n,
                Amount::Text(t) if t.trim() == "off" => return Ok(None),
                Amount::Text(t) => parse_size(t, share.then_some(memory_total))
                    .map_err(|why| format!("shell.limits.{key} = {t:?}: {why}"))?,
            };
            if bytes < MIN_MEMORY {
                return Err(format!(
                    "shell.limits.{key} = {bytes} bytes is too little for a shell to start a command; use at least \"32M\", or \"off\""
                ));
            }
            Ok(Some(bytes))
        };
        Ok(Limits {
            processes: count("processes", &self.processes, MIN_PROCESSES)?,
            memory: size("memory", &self.memory, true)?,
            address_space: size("address_space", &self.address_space, false)?,
            open_files: count("open_files", &self.open_files, MIN_OPEN_FILES)?,
            cpu_seconds: count("cpu_seconds", &self.cpu_seconds, 1)?,
        })
    }
}

/// `"512M"`, `"8G"`, `"1048576"`, `"75%"` (of `total`, when shares are allowed) as bytes.
fn parse_size(text: &str, total: Option<u64>) -> Result<u64, String> {
    let t = text.trim();
    if let Some(p) = t.strip_suffix('%') {
        let Some(total) = total else {
            return Err(
                "a share of memory is not accepted here; give a size such as \"8G\"".into(),
            );
        };
        return match p.trim().parse::<f64>() {
            Ok(p) if p > 0.0 && p <= 100.0 => Ok((total as f64 * p / 100.0) as u64),
            _ => Err("a share is more than 0% and at most 100%".into()),
        };
    }
    let (digits, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: u64 = digits
        .parse()
        .map_err(|_| "give bytes, a size such as \"512M\" or \"8G\", or \"off\"".to_string())?;
    let shift = match unit.trim().trim_end_matches(['b', 'B', 'i']) {
        "" => 0,
        "K" | "k" => 10,
        "M" | "m" => 20,
        "G" | "g" => 30,
        "T" | "t" => 40,
        other => return Err(format!("unknown unit {other:?}: use K, M, G or T")),
    };
    n.checked_mul(1 << shift)
        .ok_or_else(|| "too large".to_string())
}

/// The machine's memory: MemTotal, or the limit of the cgroup this process is in, when
/// that is lower (a container's).
pub fn memory_total() -> u64 {
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(u64::MAX);
    mem.min(cgroup::own_memory_limit().unwrap_or(u64::MAX))
}

/// Bytes as people read them: "1.5 GiB".
pub fn human_bytes(n: u64) -> String {
    let units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{n} bytes")
    } else if v.fract() < 0.05 {
        format!("{v:.0} {}", units[i])
    } else {
        format!("{v:.1} {}", units[i])
    }
}

/// What the server hands a task's supervisor (as JSON): the limits, the task's cgroup
/// directories to put its first process in, and the `RLIMIT_NPROC` to set (None where a
/// cgroup counts the processes).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskSetup {
    pub limits: Limits,
    pub cgroups: Vec<PathBuf>,
    pub nproc: Option<u64>,
}

impl TaskSetup {
    /// `RLIMIT_NPROC` for a task where no cgroup counts its processes: the threads
    /// running on the machine now (the kernel counts the user's, which are fewer) plus
    /// the task's share, so the task can always start `processes` of its own.
    pub fn nproc_for(processes: u64) -> u64 {
        let running = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|l| {
                l.split_whitespace()
                    .nth(3)?
                    .split_once('/')?
                    .1
                    .parse::<u64>()
                    .ok()
            })
            .unwrap_or(0);
        running + processes
    }

    /// In the supervisor, before it enters the task's Landlock layer (which leaves the
    /// cgroup tree read-only): open what the first process will need, work out the
    /// rlimits from those the supervisor has.
    pub fn prepare(&self) -> Result<ChildSetup, String> {
        let mut procs = Vec::new();
        for dir in &self.cgroups {
            let path = dir.join("cgroup.procs");
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
            procs.push(OwnedFd::from(file));
        }
        let mut rlimits = Vec::new();
        let mut add = |resource, soft: u64, hard: u64| {
            rlimits.push((resource, soft, hard));
        };
        let l = &self.limits;
        if let Some(n) = l.open_files {
            let (soft, hard) = current(libc::RLIMIT_NOFILE);
            add(libc::RLIMIT_NOFILE, soft.min(n), hard.min(n));
        }
        if let Some(n) = l.cpu_seconds {
            let (_, hard) = current(libc::RLIMIT_CPU);
            add(
                libc::RLIMIT_CPU,
                n.min(hard),
                n.saturating_add(CPU_GRACE_SECONDS).min(hard),
            );
        }
        if let Some(n) = l.address_space {
            let (_, hard) = current(libc::RLIMIT_AS);
            add(libc::RLIMIT_AS, n.min(hard), n.min(hard));
        }
        if let Some(n) = self.nproc {
            let (_, hard) = current(libc::RLIMIT_NPROC);
            add(libc::RLIMIT_NPROC, n.min(hard), n.min(hard));
        }
        Ok(ChildSetup { procs, rlimits })
    }
}

/// Seconds between SIGXCPU (the soft CPU limit) and SIGKILL (the hard one).
pub const CPU_GRACE_SECONDS: u64 = 10;

fn current(resource: libc::__rlimit_resource_t) -> (u64, u64) {
    let mut r = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: getrlimit writes the struct it is given.
    unsafe { libc::getrlimit(resource, &mut r) };
    (r.rlim_cur, r.rlim_max)
}

/// What a task's first process does between fork and exec: join its cgroups, set its
/// rlimits. Prepared in the supervisor ([`TaskSetup::prepare`]); [`ChildSetup::enter`]
/// makes system calls only.
#[derive(Debug, Default)]
pub struct ChildSetup {
    procs: Vec<OwnedFd>,
    rlimits: Vec<(libc::__rlimit_resource_t, u64, u64)>,
}

impl ChildSetup {
    /// Nothing to do.
    pub fn none() -> ChildSetup {
        ChildSetup::default()
    }

    /// In the forked child, before exec: join the cgroups, set the rlimits. Err: the
    /// step that failed (the task must not run unlimited: its caller exits 126).
    pub fn enter(&self) -> Result<(), &'static str> {
        let mut digits = [0u8; 20];
        // SAFETY: getpid cannot fail.
        let pid = unsafe { libc::getpid() } as u64;
        let text = format_u64(pid, &mut digits);
        for fd in &self.procs {
            // SAFETY: a write of a buffer we own to a descriptor we own.
            let n = unsafe { libc::write(fd.as_raw_fd(), text.as_ptr().cast(), text.len()) };
            if n < 0 {
                return Err("cannot join the task's cgroup");
            }
        }
        for &(resource, soft, hard) in &self.rlimits {
            let r = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            // SAFETY: setrlimit reads the struct it is given.
            if unsafe { libc::setrlimit(resource, &r) } != 0 {
                return Err("cannot set the task's resource limits");
            }
        }
        Ok(())
    }
}

/// `n` in decimal, without allocating (the caller is a forked child).
fn format_u64(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[i..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_shares_resolve() {
        assert_eq!(parse_size("512M", None), Ok(512 << 20));
        assert_eq!(parse_size("8G", None), Ok(8 << 30));
        assert_eq!(parse_size("8GiB", None), Ok(8 << 30));
        assert_eq!(parse_size("4096", None), Ok(4096));
        assert_eq!(parse_size("50%", Some(1000)), Ok(500));
        assert!(parse_size("50%", None).is_err());
        assert!(parse_size("0%", Some(1000)).is_err());
        assert!(parse_size("12X", None).is_err());
    }

    #[test]
    fn the_defaults_resolve_and_bad_values_say_which_key() {
        let l = LimitsSection::default().resolve(16 << 30).unwrap();
        assert_eq!(l.processes, Some(8192));
        assert_eq!(l.memory, Some(12 << 30));
        assert_eq!(l.address_space, None);
        assert_eq!(l.open_files, Some(65536));
        assert_eq!(l.cpu_seconds, None);
        let bad = LimitsSection {
            processes: Amount::Number(2),
            ..Default::default()
        };
        assert!(
            bad.resolve(1 << 30)
                .unwrap_err()
                .contains("shell.limits.processes")
        );
        let bad = LimitsSection {
            memory: Amount::Text("lots".into()),
            ..Default::default()
        };
        assert!(
            bad.resolve(1 << 30)
                .unwrap_err()
                .contains("shell.limits.memory")
        );
        let bad = LimitsSection {
            address_space: Amount::Text("50%".into()),
            ..Default::default()
        };
        assert!(bad.resolve(1 << 30).is_err());
    }

    #[test]
    fn numbers_are_written_without_allocating() {
        let mut buf = [0u8; 20];
        assert_eq!(format_u64(0, &mut buf), b"0");
        assert_eq!(format_u64(4194304, &mut buf), b"4194304");
        assert_eq!(format_u64(u64::MAX, &mut buf), b"18446744073709551615");
    }
}
