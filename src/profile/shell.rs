//! `[shell]`: how shell_run starts commands, how many it keeps, the exec boundary
//! around them, and what each may take (`[shell.limits]`, owned by `guard::limits`).

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::YIELD_CEILING_MS;
use crate::guard::limits::{Limits, LimitsSection};

/// `[shell]`: how shell_run starts commands and how many it keeps.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ShellSection {
    /// The shell (a path, or a name looked up in PATH); default: zsh, else bash, else sh.
    pub program: Option<String>,
    /// Let the shell read the user's rc files (off: hermetic `zsh -f` / `bash --norc`).
    pub rc_files: bool,
    /// Extra variables for every command.
    pub env: std::collections::BTreeMap<String, String>,
    /// Server variables passed through by name (nothing else is, so secrets stay out).
    pub pass_env: Vec<String>,
    /// Live tasks at once.
    pub max_tasks: usize,
    /// How long shell_run waits by default before answering with a task id.
    pub default_yield_ms: u64,
    /// The longest wait a call may ask for (at most 50000).
    pub max_yield_ms: u64,
    /// Output kept per task (head and tail).
    pub buffer_bytes: usize,
    /// PTY rows.
    pub pty_rows: u16,
    /// PTY columns.
    pub pty_cols: u16,
    /// The gated zsh (default: $WHALEBOX_ZSH, next to whalebox, or target/zsh/bin/zsh).
    pub zsh: Option<String>,
    /// required: no gated zsh → shell tools refuse; best-effort: run ungated and say so;
    /// off: use the plain shell.
    pub exec_boundary: ExecBoundary,
    /// How the kernel exec gate takes each exec: auto (seccomp user notification where
    /// the kernel has it, else ptrace), notify, or ptrace (every process traced).
    pub exec_gate: ExecGate,
    /// Let a task's programs trace each other (strace, gdb, ltrace: ptrace inside the
    /// task; the notification method only). The trade: an exec by a process another one
    /// traces is decided on the path and argv the gate read, and not verified after, so
    /// a program that traces another can change what it runs between the decision and
    /// the exec. Off: ptrace fails inside a task with EPERM, and every allowed exec is
    /// verified.
    pub debuggers: bool,
    /// Whether a task may make user namespaces (`unshare -U`, rootless podman, bwrap,
    /// Chromium's sandbox). deny (default, as Docker): `unshare` and `clone` with
    /// CLONE_NEWUSER and `setns` fail with EPERM, `clone3` with ENOSYS. A user namespace
    /// gives its maker CAP_NET_ADMIN and CAP_SYS_ADMIN over the namespaces it makes: the
    /// door to most kernel exploits of recent years.
    pub user_namespaces: UserNamespaces,
    /// Who settles an `ask` when no person can answer.
    pub on_ask: crate::boundary::OnAsk,
    /// JSONL audit log of every exec decision.
    pub audit_log: Option<PathBuf>,
    /// Where "allow for this session" answers are appended as policy rules.
    pub approvals_file: Option<PathBuf>,
    /// `[shell.limits]`: what one task (a command and all it starts) may take.
    pub limits: LimitsSection,
    /// The limits as numbers, worked out when the profile is checked.
    #[serde(skip)]
    #[schemars(skip)]
    pub task_limits: Limits,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ExecBoundary {
    /// No gated zsh: the shell tools refuse.
    Required,
    /// No gated zsh: run ungated and say so in every result.
    #[default]
    BestEffort,
    /// The plain shell, no exec policy.
    Off,
}

/// `[shell] user_namespaces`: whether a task may make and enter user namespaces (see
/// `guard::machine`).
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum UserNamespaces {
    /// Refused: `unshare`/`clone` with CLONE_NEWUSER and `setns` (EPERM), `clone3` (ENOSYS).
    #[default]
    Deny,
    /// Let through, for rootless containers and sandboxes a task starts.
    Allow,
}

impl UserNamespaces {
    pub fn allowed(self) -> bool {
        self == UserNamespaces::Allow
    }
}

/// How the kernel exec gate takes each exec (see `boundary::kernel`).
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ExecGate {
    /// Notification where the kernel has it (5.0+, not gVisor), else ptrace.
    #[default]
    Auto,
    /// Seccomp user notification: a process is traced only at its exec.
    Notify,
    /// ptrace: every process of a task is traced from its fork (slower on forks).
    Ptrace,
}

impl Default for ShellSection {
    fn default() -> Self {
        ShellSection {
            program: None,
            rc_files: false,
            env: Default::default(),
            pass_env: Vec::new(),
            max_tasks: 16,
            default_yield_ms: 15_000,
            max_yield_ms: YIELD_CEILING_MS,
            buffer_bytes: 1024 * 1024,
            pty_rows: 24,
            pty_cols: 80,
            zsh: None,
            exec_boundary: ExecBoundary::default(),
            exec_gate: ExecGate::default(),
            debuggers: false,
            user_namespaces: UserNamespaces::default(),
            on_ask: Default::default(),
            audit_log: None,
            approvals_file: None,
            limits: LimitsSection::default(),
            task_limits: Limits::default(),
        }
    }
}

impl ShellSection {
    pub(super) fn check(&mut self, warnings: &mut Vec<String>) -> Result<(), String> {
        for name in self.env.keys().chain(&self.pass_env) {
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                return Err(format!(
                    "shell: {name:?} is not a valid environment variable name"
                ));
            }
        }
        if self.env.values().any(|v| v.contains('\0')) {
            return Err("shell.env: a value contains a NUL byte".into());
        }
        if self.debuggers && self.exec_gate == ExecGate::Ptrace {
            return Err(
                "shell.debuggers = true needs the notification method: under exec_gate = \"ptrace\" the gate traces every process, and a process has one tracer; set exec_gate = \"auto\" (or \"notify\"), or debuggers = false"
                    .into(),
            );
        }
        if self.max_tasks == 0 {
            return Err("shell.max_tasks = 0 would refuse every command; use at least 1".into());
        }
        if self.max_yield_ms > YIELD_CEILING_MS {
            warnings.push(format!(
                "shell.max_yield_ms = {} is above {YIELD_CEILING_MS} (clients time out at 60 s); using {YIELD_CEILING_MS}",
                self.max_yield_ms
            ));
            self.max_yield_ms = YIELD_CEILING_MS;
        }
        if self.default_yield_ms > self.max_yield_ms {
            warnings.push(format!(
                "shell.default_yield_ms = {} is above max_yield_ms; using {}",
                self.default_yield_ms, self.max_yield_ms
            ));
            self.default_yield_ms = self.max_yield_ms;
        }
        if self.buffer_bytes < 4096 {
            return Err(format!(
                "shell.buffer_bytes = {} is too small; use at least 4096",
                self.buffer_bytes
            ));
        }
        if self.pty_rows == 0 || self.pty_cols == 0 {
            return Err("shell.pty_rows and pty_cols must be at least 1".into());
        }
        self.task_limits = self.limits.resolve(crate::guard::limits::memory_total())?;
        Ok(())
    }
}
