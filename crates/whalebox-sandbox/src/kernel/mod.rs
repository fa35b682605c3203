//! The kernel exec gate: every `execve` and `execveat` made by any process of a task,
//! whatever program makes it, is put to the decision server, not only the execs of the
//! gated zsh. A seccomp filter stops exactly those two calls for the task's supervisor,
//! which follows the whole process tree with ptrace ([`tracer`]); what makes it immune
//! to a thread that rewrites the path after it was checked is the second look at the
//! exec event, when the image is loaded but has not run (see `tracer.rs`).
//!
//! Consequences a user can see: a denied exec fails with EACCES in the calling program,
//! plus a `whalebox: denied …` line on its stderr; an image that only turned out to be
//! denied once loaded is killed, and the task's result says so. Since the supervisor
//! is every process's tracer, nothing inside a task can be traced by anything else:
//! `strace`, `gdb` and `ptrace(PTRACE_TRACEME)` fail with EPERM there.

pub mod filter;
mod link;
mod start;
pub mod tracee;
pub mod tracer;

/// Why the kernel gate cannot work on this build (None: it can be tried; whether the
/// kernel allows it is found out by starting it, see whalebox's `session::Env::kernel_gate`).
pub fn unsupported() -> Option<String> {
    filter::target_arch().err()
}

/// Whether an exec is made by a program other than the task's shell (the policy's
/// `default_nested` applies to it): the kernel gate saw it, and a program below the
/// task's first one makes it. zsh's own gate only ever asks about zsh's commands.
pub fn nested(via: Option<&str>, chain_len: usize) -> bool {
    via == Some("kernel") && chain_len > 1
}
