//! What a task may do to the machine and to processes outside it, beyond what Landlock
//! fences: the capabilities a task started as root keeps, and a seccomp deny list of the
//! system calls no development work needs and Landlock cannot see. Modelled on Docker's
//! default: a task's root is a container's root, not the machine's.
//!
//! - Capabilities ([`KEPT`]): the bounding, effective, permitted and inheritable sets
//!   are cut down to Docker's default set and the ambient set is cleared, so no later
//!   exec (a setuid program, a file with capabilities) gets more back. Root keeps owning
//!   its files (CHOWN, DAC_OVERRIDE, FOWNER, …) but loses SYS_PTRACE (reading another
//!   process's environment and memory), SYS_ADMIN, SYS_RESOURCE and SYS_NICE (another
//!   process's limits and priority), MKNOD, SYS_BOOT, SYSLOG, BPF, PERFMON, NET_ADMIN,
//!   NET_RAW, LINUX_IMMUTABLE, DAC_READ_SEARCH and the rest. An unprivileged task has
//!   none to drop.
//! - The deny list ([`deny_filter`], EPERM): device nodes (`mknod` of a character or
//!   block device), `bpf`, `perf_event_open`, `acct`, `reboot`, `sethostname`,
//!   `setdomainname`, the kernel keyring, kernel modules, `kexec`, swap, the clock,
//!   `syslog`, io_uring (its operations bypass every per-call filter), `open_by_handle_at`,
//!   `userfaultfd`, keystroke injection (`ioctl` TIOCSTI, TIOCLINUX), socket families a
//!   task has no use for (all but unix, IPv4, IPv6 and the routing and socket-diagnostic
//!   netlink families), and aiming `prlimit`, `setpriority`, `ioprio_set`,
//!   `sched_setscheduler`/`sched_setattr`/`sched_setparam`, `sched_setaffinity`,
//!   `migrate_pages` or `move_pages` at another process than the caller (a pid other
//!   than 0, or a whole user): a task shares its user with the server and other
//!   sessions, and the kernel lets a user change its own processes' limits, priorities
//!   and CPUs without the ptrace check Landlock scopes. The filter sees numbers only, so
//!   the caller's own pid or thread id written out is "another process" too
//!   (`taskset -p`, `pthread_setaffinity_np`): only 0 names the caller.
//! - User namespaces ([`Options::user_namespaces`], off by default as in Docker):
//!   `unshare` and `clone` with CLONE_NEWUSER, and `setns`, fail with EPERM; `clone3`
//!   fails with ENOSYS, since its flags live in a struct seccomp cannot read, and glibc,
//!   Go and Rust then fall back to `clone`. A user namespace hands its maker every
//!   capability over the namespaces it then makes (CAP_NET_ADMIN, CAP_SYS_ADMIN): the
//!   way into most kernel exploits of recent years (nf_tables, …), while a sandboxed
//!   task gains little from it (Landlock forbids it any mount). Rootless podman, bwrap
//!   and Chromium's sandbox need it: `[shell] user_namespaces = "allow"`.
//!
//! Calls that reach another process only past a ptrace-mode check (`process_vm_readv`,
//! `process_vm_writev`, `process_madvise`, `kcmp`, `pidfd_getfd`, `get_robust_list`,
//! `setns` by pidfd, `/proc/PID/ns`, `/proc/PID/mem`) are not listed: Landlock scopes
//! ptrace to the task's own domain, and a root task has no CAP_SYS_PTRACE. `migrate_pages`
//! and `move_pages` are such calls too and are refused anyway, like `prlimit`. Signals are
//! Landlock's signal scope; `/proc/PID` files a user may write (`oom_score_adj`,
//! `clear_refs`) are read-only in every task's Landlock layer.
//!
//! Both are applied by the task's supervisor to itself, after it joined its session's
//! namespaces (a `setns`, the user namespace of an unprivileged session included) and
//! entered its Landlock layer and before it starts the task, so every start path (shell
//! tasks, `whalebox run`, upstream MCP servers) gets them and the supervisor itself holds
//! nothing a task could borrow.

use std::collections::BTreeMap;

use nix::libc;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition,
    SeccompFilter, SeccompRule,
};

/// The capabilities a task keeps (Docker's default set), by number and name.
pub const KEPT: &[(u32, &str)] = &[
    (0, "CHOWN"),
    (1, "DAC_OVERRIDE"),
    (3, "FOWNER"),
    (4, "FSETID"),
    (5, "KILL"),
    (6, "SETGID"),
    (7, "SETUID"),
    (8, "SETPCAP"),
    (10, "NET_BIND_SERVICE"),
    (18, "SYS_CHROOT"),
    (29, "AUDIT_WRITE"),
    (31, "SETFCAP"),
];

/// The system calls the deny list refuses whatever their arguments.
pub const DENIED: &[(i64, &str)] = &[
    (libc::SYS_bpf, "bpf"),
    (libc::SYS_perf_event_open, "perf_event_open"),
    (libc::SYS_acct, "acct"),
    (libc::SYS_reboot, "reboot"),
    (libc::SYS_sethostname, "sethostname"),
    (libc::SYS_setdomainname, "setdomainname"),
    (libc::SYS_keyctl, "keyctl"),
    (libc::SYS_add_key, "add_key"),
    (libc::SYS_request_key, "request_key"),
    (libc::SYS_init_module, "init_module"),
    (libc::SYS_finit_module, "finit_module"),
    (libc::SYS_delete_module, "delete_module"),
    (libc::SYS_kexec_load, "kexec_load"),
    (libc::SYS_kexec_file_load, "kexec_file_load"),
    (libc::SYS_swapon, "swapon"),
    (libc::SYS_swapoff, "swapoff"),
    (libc::SYS_syslog, "syslog"),
    (libc::SYS_settimeofday, "settimeofday"),
    (libc::SYS_clock_settime, "clock_settime"),
    (libc::SYS_io_uring_setup, "io_uring_setup"),
    (libc::SYS_io_uring_enter, "io_uring_enter"),
    (libc::SYS_io_uring_register, "io_uring_register"),
    (libc::SYS_open_by_handle_at, "open_by_handle_at"),
    (libc::SYS_userfaultfd, "userfaultfd"),
    (libc::SYS_lookup_dcookie, "lookup_dcookie"),
    (libc::SYS_quotactl, "quotactl"),
    (libc::SYS_iopl, "iopl"),
    (libc::SYS_ioperm, "ioperm"),
    (libc::SYS_vhangup, "vhangup"),
    (libc::SYS_fanotify_init, "fanotify_init"),
];

/// What the deny list refuses depending on the arguments, as people read it.
pub const DENIED_WITH_ARGUMENTS: &[&str] = &[
    "mknod/mknodat of a character or block device",
    "ioctl TIOCSTI, TIOCLINUX",
    "socket of a family other than unix, inet, inet6, netlink route and sock_diag",
    "prlimit64 setting another process's limits",
    "setpriority, ioprio_set of another process, group or user",
    "sched_setscheduler, sched_setparam, sched_setattr, sched_setaffinity of another process",
    "migrate_pages of another process, move_pages moving another process's pages",
];

/// What the deny list refuses when user namespaces are (the default), as people read it.
pub const DENIED_USER_NAMESPACES: &[&str] = &[
    "unshare, clone with CLONE_NEWUSER",
    "setns",
    "clone3 (ENOSYS: its flags are out of the filter's sight; C libraries fall back to clone)",
];

/// What a task's deny list is built for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// The task may make and enter user namespaces (`[shell] user_namespaces = "allow"`).
    pub user_namespaces: bool,
}

const PRIO_USER: i32 = 2;
const IOPRIO_WHO_USER: i32 = 3;
const NETLINK_ROUTE: i32 = 0;
const NETLINK_SOCK_DIAG: i32 = 4;
const TIOCLINUX: i32 = 0x541c;

/// The deny list as a BPF program (built before the supervisor starts the task).
pub fn deny_filter(options: Options) -> Result<BpfProgram, String> {
    let arch = crate::kernel::filter::target_arch()?;
    let cond = |arg: u8, len: Len, op: Op, value: u64| {
        SeccompCondition::new(arg, len, op, value).map_err(|e| format!("seccomp condition: {e}"))
    };
    // Integer arguments (modes, flags, families, commands) are compared on their low half,
    // as the kernel reads them; pids and limits pointers on the whole register.
    let int = |arg: u8, op: Op, value: i32| cond(arg, Len::Dword, op, value as u32 as u64);
    let rule = |conds: Vec<SeccompCondition>| {
        SeccompRule::new(conds).map_err(|e| format!("seccomp rule: {e}"))
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for (nr, _) in DENIED {
        // An empty rule list matches the call whatever its arguments.
        rules.insert(*nr, vec![]);
    }
    let devices = |mode_arg: u8| -> Result<Vec<SeccompRule>, String> {
        Ok(vec![
            rule(vec![int(
                mode_arg,
                Op::MaskedEq(libc::S_IFMT as u64),
                libc::S_IFCHR as i32,
            )?])?,
            rule(vec![int(
                mode_arg,
                Op::MaskedEq(libc::S_IFMT as u64),
                libc::S_IFBLK as i32,
            )?])?,
        ])
    };
    rules.insert(libc::SYS_mknod, devices(1)?);
    rules.insert(libc::SYS_mknodat, devices(2)?);
    rules.insert(
        libc::SYS_ioctl,
        vec![
            rule(vec![int(1, Op::Eq, libc::TIOCSTI as i32)?])?,
            rule(vec![int(1, Op::Eq, TIOCLINUX)?])?,
        ],
    );
    rules.insert(
        libc::SYS_socket,
        vec![
            rule(vec![
                int(0, Op::Ne, libc::AF_UNIX)?,
                int(0, Op::Ne, libc::AF_INET)?,
                int(0, Op::Ne, libc::AF_INET6)?,
                int(0, Op::Ne, libc::AF_NETLINK)?,
            ])?,
            rule(vec![
                int(0, Op::Eq, libc::AF_NETLINK)?,
                int(2, Op::Ne, NETLINK_ROUTE)?,
                int(2, Op::Ne, NETLINK_SOCK_DIAG)?,
            ])?,
        ],
    );
    // Another process's limits: a pid other than 0 (the caller) with a new limit.
    rules.insert(
        libc::SYS_prlimit64,
        vec![rule(vec![
            cond(0, Len::Dword, Op::Ne, 0)?,
            cond(2, Len::Qword, Op::Ne, 0)?,
        ])?],
    );
    let others = |which_arg: u8, who_arg: u8, user: i32| -> Result<Vec<SeccompRule>, String> {
        Ok(vec![
            rule(vec![int(which_arg, Op::Eq, user)?])?,
            rule(vec![int(who_arg, Op::Ne, 0)?])?,
        ])
    };
    // PRIO_PROCESS (0) and PRIO_PGRP (1) with who 0 are the caller and its own group.
    rules.insert(libc::SYS_setpriority, others(0, 1, PRIO_USER)?);
    rules.insert(libc::SYS_ioprio_set, others(0, 1, IOPRIO_WHO_USER)?);
    // Another process's scheduling, CPUs and memory nodes: a pid other than 0. The
    // getters (sched_getaffinity, …) are other calls and stay allowed.
    for nr in [
        libc::SYS_sched_setscheduler,
        libc::SYS_sched_setparam,
        libc::SYS_sched_setattr,
        libc::SYS_sched_setaffinity,
        libc::SYS_migrate_pages,
    ] {
        rules.insert(nr, vec![rule(vec![int(0, Op::Ne, 0)?])?]);
    }
    // move_pages with no target nodes only asks where the pages are.
    rules.insert(
        libc::SYS_move_pages,
        vec![rule(vec![
            int(0, Op::Ne, 0)?,
            cond(3, Len::Qword, Op::Ne, 0)?,
        ])?],
    );
    if !options.user_namespaces {
        let newuser = libc::CLONE_NEWUSER;
        // unshare(flags), and clone(flags, …) as x86_64 orders its arguments.
        for nr in [libc::SYS_unshare, libc::SYS_clone] {
            rules.insert(
                nr,
                vec![rule(vec![int(0, Op::MaskedEq(newuser as u64), newuser)?])?],
            );
        }
        // Entering one made by another process of the user (found by a descriptor
        // passed over a socket or a bind-mounted nsfs file) gives the same capabilities.
        // A task has no capability to enter any other kind.
        rules.insert(libc::SYS_setns, vec![]);
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| format!("cannot build the deny list: {e}"))?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| format!("cannot compile the deny list: {e}"))
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Default, Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

fn kept_mask() -> u64 {
    KEPT.iter().fold(0u64, |m, (n, _)| m | (1u64 << n))
}

/// Cut the calling process's capabilities down to [`KEPT`]: the bounding set (where the
/// process may, CAP_SETPCAP), the ambient set, then effective, permitted and inheritable.
/// An unprivileged process has nothing to cut and succeeds.
pub fn drop_capabilities() -> Result<(), String> {
    let kept = kept_mask();
    // SAFETY: prctl with integer arguments.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    };
    for cap in 0..64u32 {
        if kept & (1u64 << cap) != 0 {
            continue;
        }
        // SAFETY: prctl with integer arguments.
        let held = unsafe { libc::prctl(libc::PR_CAPBSET_READ, cap as libc::c_ulong, 0, 0, 0) };
        if held != 1 {
            // 0: not in the set; -1 (EINVAL): past the kernel's last capability.
            continue;
        }
        // SAFETY: prctl with integer arguments.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) } != 0 {
            let e = std::io::Error::last_os_error();
            // Without CAP_SETPCAP the bounding set stays; with no_new_privs (set before
            // any task runs) no exec can raise the permitted set from it.
            if e.raw_os_error() != Some(libc::EPERM) {
                return Err(format!(
                    "cannot drop capability {cap} from the bounding set: {e}"
                ));
            }
        }
    }
    let mut header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget with a v3 header and two data structs, as the kernel expects.
    if unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) } != 0 {
        return Err(format!("capget: {}", std::io::Error::last_os_error()));
    }
    for (i, d) in data.iter_mut().enumerate() {
        let mask = (kept >> (32 * i)) as u32;
        d.effective &= mask;
        d.permitted &= mask;
        d.inheritable &= mask;
    }
    // SAFETY: capset with the same header and data, only ever lowering the sets.
    if unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) } != 0 {
        return Err(format!("capset: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// `clone3` refused with ENOSYS, as if the kernel had none, when user namespaces are
/// (seccomp cannot read the flags in its struct): glibc's threads and `posix_spawn`, Go
/// and Rust then use `clone`, whose flags the deny list reads. Docker does the same.
/// A filter of its own, as seccompiler gives one action to every rule of a filter.
pub fn nosys_filter() -> Result<BpfProgram, String> {
    let arch = crate::kernel::filter::target_arch()?;
    let rules = BTreeMap::from([(libc::SYS_clone3, vec![])]);
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(|e| format!("cannot build the clone3 filter: {e}"))?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| format!("cannot compile the clone3 filter: {e}"))
}

/// Drop the capabilities and install the deny list on the calling process (and so on
/// everything it starts). No new privileges first, as an unprivileged filter requires.
pub fn confine(options: Options) -> Result<(), String> {
    drop_capabilities()?;
    let program = deny_filter(options)?;
    crate::kernel::filter::install(&program)?;
    if !options.user_namespaces {
        crate::kernel::filter::install(&nosys_filter()?)?;
    }
    Ok(())
}

/// The calling process's effective capabilities, as the mask `/proc/self/status` shows
/// (`CapEff`): for `doctor` and tests.
pub fn effective() -> u64 {
    let mut header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget with a v3 header and two data structs.
    if unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) } != 0 {
        return 0;
    }
    (data[0].effective as u64) | ((data[1].effective as u64) << 32)
}

#[cfg(test)]
mod tests;
