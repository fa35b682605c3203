//! The seccomp half of the kernel gate: a filter that stops every `execve` and
//! `execveat` for the tracer (`SECCOMP_RET_TRACE`) and lets every other system call
//! through untouched, so a task pays for the gate on its execs only.
//!
//! Without a tracer attached the kernel fails a traced call with ENOSYS, so a process
//! that somehow left the tracer could not exec at all: the filter fails closed. Calls of
//! another architecture (32-bit `int 0x80` on x86_64) kill the process, because their
//! numbers are not the ones checked here.

use std::collections::BTreeMap;

use nix::libc;
use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, TargetArch};

/// The architecture the gate supports, or why it does not run here.
pub fn target_arch() -> Result<TargetArch, String> {
    if cfg!(target_arch = "x86_64") {
        Ok(TargetArch::x86_64)
    } else {
        // Reading the call is portable (PTRACE_GET_SYSCALL_INFO); refusing it with an
        // errno needs per-architecture register code that only x86_64 has so far.
        Err(format!(
            "the kernel exec gate is not built for {} yet (x86_64 only)",
            std::env::consts::ARCH
        ))
    }
}

/// The filter as a BPF program, built before `fork` so the child only installs it.
pub fn exec_filter() -> Result<BpfProgram, String> {
    let arch = target_arch()?;
    let mut rules = BTreeMap::new();
    // An empty rule list matches the call whatever its arguments.
    rules.insert(libc::SYS_execve, vec![]);
    rules.insert(libc::SYS_execveat, vec![]);
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Trace(0), arch)
        .map_err(|e| format!("cannot build the seccomp filter: {e}"))?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| format!("cannot compile the seccomp filter: {e}"))
}

/// In the child, after `fork` and before its first exec: no new privileges (the kernel
/// requires it of an unprivileged filter, and it keeps setuid programs from changing
/// who the gate is guarding), then the filter.
pub fn install(program: &BpfProgram) -> Result<(), String> {
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(format!(
            "prctl(PR_SET_NO_NEW_PRIVS): {}",
            std::io::Error::last_os_error()
        ));
    }
    seccompiler::apply_filter(program).map_err(|e| format!("seccomp: {e}"))
}
