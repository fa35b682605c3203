//! The seccomp half of the kernel gate: a filter that hands every `execve` and
//! `execveat` to the task's supervisor and lets every other system call through
//! untouched, so a task pays for the gate on its execs only. How the exec is handed over
//! is the [`Method`]: a user notification (the supervisor reads it from a listener
//! descriptor; the fast path) or a ptrace stop (`SECCOMP_RET_TRACE`, the fallback where
//! user notification is missing).
//!
//! Beside the execs, the filter refuses what could take the gate's place or read past
//! it, with EPERM:
//! - `seccomp()` asking for a listener (`SECCOMP_FILTER_FLAG_NEW_LISTENER`): a task's
//!   own filter returning `SECCOMP_RET_USER_NOTIF` would outrank ours (the newest
//!   filter's listener gets the notification) and could answer CONTINUE itself. The
//!   flags are a plain integer argument, so the filter decides on them without a race.
//! - `ptrace()`: a tracer inside the task could hold a process where the supervisor
//!   needs to attach to verify an exec; so `strace`, `gdb` and `PTRACE_TRACEME` fail
//!   inside a task, as they did when every process of a task was traced. Unless the
//!   profile trades that verification for debuggers (`[shell] debuggers = true`, the
//!   notification method only): then `ptrace()` goes through, and an exec by a process
//!   another one traces is decided on what was read but not verified after (see
//!   `notify`). The supervisor stays out of reach either way: the task's own Landlock
//!   domain keeps every process of it from tracing anything outside.
//!
//! Fail closed: with no listener left (the supervisor is gone) a notified call fails
//! with ENOSYS, and so does a traced call with no tracer. Calls of another architecture
//! (32-bit `int 0x80`) and x32 calls (numbers from 2^30 to 2^31) kill the process: their
//! numbers are not the ones checked here.
//!
//! seccompiler (which builds the socket filter, `install`) has neither a
//! user-notification action nor a range test on the call number, so this filter is
//! written out in BPF: seventeen instructions.

use std::os::fd::{FromRawFd, OwnedFd};

use nix::libc;
use seccompiler::{BpfProgram, TargetArch};

/// How the filter hands an exec to the supervisor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `SECCOMP_RET_USER_NOTIF`: the caller waits in the kernel while the supervisor
    /// decides; no process is traced but at its exec (see `notify`).
    Notify,
    /// `SECCOMP_RET_TRACE`: every process of the task is traced (see `tracer`).
    Ptrace,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Notify => "notify",
            Method::Ptrace => "ptrace",
        }
    }
}

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

/// `AUDIT_ARCH_X86_64`: EM_X86_64 (62), 64-bit, little-endian.
const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
/// x32 system calls are x86_64's with this bit set in their number.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;
/// Offsets into `struct seccomp_data`.
const NR: u32 = 0;
const ARCH: u32 = 4;
/// The low half of the second argument (`seccomp()`'s flags).
const ARG1_LOW: u32 = 16 + 8;
// x86_64 call numbers (the gate is built for x86_64 only, see `target_arch`).
const SYS_EXECVE: u32 = 59;
const SYS_EXECVEAT: u32 = 322;
const SYS_PTRACE: u32 = 101;
const SYS_SECCOMP: u32 = 317;

fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    }
}

/// The gate's filter as a BPF program, built before `fork` so the child only installs it.
/// `debuggers`: `ptrace()` is let through instead of refused.
pub fn gate_filter(method: Method, debuggers: bool) -> Result<Vec<libc::sock_filter>, String> {
    target_arch()?;
    use libc::{
        BPF_ABS, BPF_JEQ, BPF_JGE, BPF_JMP, BPF_JSET, BPF_K, BPF_LD, BPF_RET, BPF_W,
        SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO, SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_TRACE,
        SECCOMP_RET_USER_NOTIF,
    };
    let exec = match method {
        Method::Notify => SECCOMP_RET_USER_NOTIF,
        Method::Ptrace => SECCOMP_RET_TRACE,
    };
    let eperm = SECCOMP_RET_ERRNO | libc::EPERM as u32;
    let listener = libc::SECCOMP_FILTER_FLAG_NEW_LISTENER as u32;
    // Jump offsets count the instructions skipped; the returns are at the end.
    Ok(vec![
        /* 0 */ stmt(BPF_LD | BPF_W | BPF_ABS, ARCH),
        /* 1 */ jump(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        /* 2 */ stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        /* 3 */ stmt(BPF_LD | BPF_W | BPF_ABS, NR),
        // Numbers from 2^31 (-1, a "no call" some programs make) are no call: ENOSYS.
        /* 4 */
        jump(BPF_JMP | BPF_JGE | BPF_K, 0x8000_0000, 5, 0), // → 10 allow
        /* 5 */ jump(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, 8, 0), // → 14 kill
        /* 6 */ jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_EXECVE, 8, 0), // → 15 exec
        /* 7 */ jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_EXECVEAT, 7, 0), // → 15 exec
        /* 8 */
        jump(
            BPF_JMP | BPF_JEQ | BPF_K,
            SYS_PTRACE,
            if debuggers { 1 } else { 7 }, // → 10 allow, or 16 eperm
            0,
        ),
        /* 9 */ jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_SECCOMP, 1, 0), // → 11 flags
        /* 10 */ stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        /* 11 */ stmt(BPF_LD | BPF_W | BPF_ABS, ARG1_LOW),
        /* 12 */ jump(BPF_JMP | BPF_JSET | BPF_K, listener, 3, 0), // → 16 eperm
        /* 13 */ stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        /* 14 */ stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        /* 15 */ stmt(BPF_RET | BPF_K, exec),
        /* 16 */ stmt(BPF_RET | BPF_K, eperm),
    ])
}

/// Why the filter could not be installed, and whether user notification is what is
/// missing (then the ptrace method may still work).
#[derive(Debug)]
pub struct InstallError {
    pub why: String,
    pub no_notify: bool,
}

/// In the child, after `fork` and before its first exec: no new privileges (the kernel
/// requires it of an unprivileged filter, and it keeps setuid programs from changing
/// who the gate is guarding), then the gate's filter. For [`Method::Notify`] the
/// listener descriptor comes back (close-on-exec); the caller waits killably once its
/// notification is received, where the kernel can (5.19), so a signal to a program
/// whose exec is being decided does not withdraw and re-ask the question.
pub fn install_gate(
    program: &[libc::sock_filter],
    method: Method,
) -> Result<Option<OwnedFd>, InstallError> {
    no_new_privs().map_err(|why| InstallError {
        why,
        no_notify: false,
    })?;
    let prog = libc::sock_fprog {
        len: program.len() as u16,
        filter: program.as_ptr() as *mut libc::sock_filter,
    };
    let seccomp = |flags: libc::c_ulong| {
        // SAFETY: seccomp with a program that outlives the call.
        unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                flags,
                &prog as *const libc::sock_fprog,
            )
        }
    };
    let error = || std::io::Error::last_os_error();
    match method {
        Method::Ptrace => {
            if seccomp(0) != 0 {
                return Err(InstallError {
                    why: format!("seccomp: {}", error()),
                    no_notify: false,
                });
            }
            Ok(None)
        }
        Method::Notify => {
            let listener = libc::SECCOMP_FILTER_FLAG_NEW_LISTENER;
            let mut fd = seccomp(listener | libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV);
            if fd < 0 && error().raw_os_error() == Some(libc::EINVAL) {
                // Before 5.19: no killable wait; a signal re-asks (see notify.rs).
                fd = seccomp(listener);
            }
            if fd < 0 {
                let e = error();
                return Err(InstallError {
                    // EINVAL: no user notification (before 5.0, gVisor); EBUSY: another
                    // filter of this process has a listener; EPERM: a filter refuses it.
                    no_notify: matches!(
                        e.raw_os_error(),
                        Some(libc::EINVAL | libc::EBUSY | libc::EPERM | libc::ENOSYS)
                    ),
                    why: format!("seccomp user notification: {e}"),
                });
            }
            // SAFETY: seccomp returned a new descriptor.
            Ok(Some(unsafe { OwnedFd::from_raw_fd(fd as i32) }))
        }
    }
}

fn no_new_privs() -> Result<(), String> {
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(format!(
            "prctl(PR_SET_NO_NEW_PRIVS): {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Install a seccompiler program (the network fence's socket filter) on the calling
/// thread: no new privileges first, as an unprivileged filter requires.
pub fn install(program: &BpfProgram) -> Result<(), String> {
    no_new_privs()?;
    seccompiler::apply_filter(program).map_err(|e| format!("seccomp: {e}"))
}

/// Whether user notification works here: a thread of our own installs a filter with a
/// listener (a filter binds only the thread that installs it, and goes with it).
pub fn notify_available() -> Result<(), String> {
    target_arch()?;
    let program = gate_filter(Method::Notify, false)?;
    std::thread::spawn(move || install_gate(&program, Method::Notify).map(drop))
        .join()
        .map_err(|_| "the probe thread panicked".to_string())?
        .map_err(|e| e.why)
}
