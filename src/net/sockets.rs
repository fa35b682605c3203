//! The fallback fence where a task cannot have its own network namespace: Landlock
//! limits TCP connects to the proxy's port (see `guard::landlock`), and this seccomp
//! filter refuses every other kind of internet socket, which Landlock does not see.
//!
//! Refused (EACCES): `AF_INET`/`AF_INET6` sockets that are not plain TCP (UDP, so DNS
//! too; raw; SCTP and other protocols on a stream socket; SEQPACKET), `AF_PACKET`, and
//! `io_uring_setup` (io_uring can make sockets without the `socket` call). `socket`'s
//! arguments are plain integers, so the filter decides on them without a race. Calls of
//! another architecture (32-bit `int 0x80` on x86_64) kill the process, as the exec
//! gate's filter does: the numbers checked here are not theirs.

use std::collections::BTreeMap;

use nix::libc;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition,
    SeccompFilter, SeccompRule,
};

/// The filter as a BPF program.
pub fn filter() -> Result<BpfProgram, String> {
    let arch = crate::boundary::kernel::filter::target_arch()?;
    let cond = |arg: u8, op: Op, value: i32| {
        SeccompCondition::new(arg, Len::Dword, op, value as u64)
            .map_err(|e| format!("seccomp condition: {e}"))
    };
    let rule = |conds: Vec<SeccompCondition>| {
        SeccompRule::new(conds).map_err(|e| format!("seccomp rule: {e}"))
    };
    let mut socket_rules = Vec::new();
    for family in [libc::AF_INET, libc::AF_INET6] {
        // Every type but SOCK_STREAM (1), whatever flags (NONBLOCK, CLOEXEC) ride above
        // the low four bits.
        for kind in (0..16).filter(|k| *k != libc::SOCK_STREAM) {
            socket_rules.push(rule(vec![
                cond(0, Op::Eq, family)?,
                cond(1, Op::MaskedEq(0xf), kind)?,
            ])?);
        }
        // A stream socket of another protocol than TCP (SCTP, MPTCP): Landlock's TCP
        // rules would not see its connects.
        socket_rules.push(rule(vec![
            cond(0, Op::Eq, family)?,
            cond(2, Op::Ne, 0)?,
            cond(2, Op::Ne, libc::IPPROTO_TCP)?,
        ])?);
    }
    socket_rules.push(rule(vec![cond(0, Op::Eq, libc::AF_PACKET)?])?);
    let mut rules = BTreeMap::new();
    rules.insert(libc::SYS_socket, socket_rules);
    // An empty rule list matches the call whatever its arguments.
    rules.insert(libc::SYS_io_uring_setup, vec![]);
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .map_err(|e| format!("cannot build the socket filter: {e}"))?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| format!("cannot compile the socket filter: {e}"))
}

/// Install it on the calling process (and so on everything it starts): no new
/// privileges first, as an unprivileged filter requires.
pub fn install() -> Result<(), String> {
    let program = filter()?;
    crate::boundary::kernel::filter::install(&program)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In a forked child: install, then try each socket; the exit code says which
    /// behaved.
    #[test]
    fn udp_raw_and_packet_sockets_are_refused_tcp_and_unix_are_not() {
        if crate::boundary::kernel::filter::target_arch().is_err() {
            eprintln!("SKIPPED: the socket filter is built for x86_64 only");
            return;
        }
        let program = filter().unwrap();
        // SAFETY: the child only makes system calls, then _exits.
        match unsafe { nix::unistd::fork() }.unwrap() {
            nix::unistd::ForkResult::Child => {
                let code = (|| {
                    crate::boundary::kernel::filter::install(&program).ok()?;
                    let try_socket = |d, t, p| {
                        // SAFETY: socket with integer arguments; a descriptor is closed.
                        let fd = unsafe { libc::socket(d, t, p) };
                        if fd >= 0 {
                            unsafe { libc::close(fd) };
                            Ok(())
                        } else {
                            Err(std::io::Error::last_os_error().raw_os_error())
                        }
                    };
                    let refused = Err(Some(libc::EACCES));
                    let checks = [
                        try_socket(libc::AF_INET, libc::SOCK_DGRAM, 0) == refused,
                        try_socket(libc::AF_INET6, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0)
                            == refused,
                        try_socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_ICMP) == refused,
                        try_socket(libc::AF_PACKET, libc::SOCK_RAW, 0) == refused,
                        try_socket(libc::AF_INET, libc::SOCK_STREAM, 132) == refused,
                        try_socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_NONBLOCK, 0)
                            .is_ok(),
                        try_socket(libc::AF_INET6, libc::SOCK_STREAM, libc::IPPROTO_TCP).is_ok(),
                        try_socket(libc::AF_UNIX, libc::SOCK_DGRAM, 0).is_ok(),
                    ];
                    checks
                        .iter()
                        .position(|ok| !ok)
                        .map(|i| i as i32 + 10)
                        .or(Some(0))
                })()
                .unwrap_or(99);
                // SAFETY: leaving the forked child at once.
                unsafe { libc::_exit(code) };
            }
            nix::unistd::ForkResult::Parent { child } => {
                let status = nix::sys::wait::waitpid(child, None).unwrap();
                assert_eq!(
                    status,
                    nix::sys::wait::WaitStatus::Exited(child, 0),
                    "exit 10+i: check i failed; 99: the filter did not install"
                );
            }
        }
    }
}
