use super::*;

/// Run `checks` in a forked child after [`confine`]; the exit code names the first that
/// failed (10 + its index), 99 when confining failed, 0 when all held.
fn in_confined_child(checks: fn() -> Vec<bool>) {
    if crate::kernel::filter::target_arch().is_err() {
        eprintln!("SKIPPED: the deny list is built for x86_64 only");
        return;
    }
    // SAFETY: the child only makes system calls (and small allocations), then _exits.
    match unsafe { nix::unistd::fork() }.unwrap() {
        nix::unistd::ForkResult::Child => {
            let code = match confine() {
                Err(_) => 99,
                Ok(()) => checks()
                    .iter()
                    .position(|ok| !ok)
                    .map(|i| i as i32 + 10)
                    .unwrap_or(0),
            };
            // SAFETY: leaving the forked child at once.
            unsafe { libc::_exit(code) };
        }
        nix::unistd::ForkResult::Parent { child } => {
            let status = nix::sys::wait::waitpid(child, None).unwrap();
            assert_eq!(
                status,
                nix::sys::wait::WaitStatus::Exited(child, 0),
                "exit 10+i: check i failed; 99: confine failed"
            );
        }
    }
}

fn errno(ret: i64) -> Option<i32> {
    if ret < 0 {
        std::io::Error::last_os_error().raw_os_error()
    } else {
        None
    }
}

fn socket(domain: i32, kind: i32, proto: i32) -> Option<i32> {
    // SAFETY: socket with integer arguments; a descriptor made is closed.
    let fd = unsafe { libc::socket(domain, kind, proto) };
    if fd >= 0 {
        unsafe { libc::close(fd) };
        None
    } else {
        std::io::Error::last_os_error().raw_os_error()
    }
}

#[test]
fn denied_calls_fail_with_eperm_and_everyday_ones_work() {
    in_confined_child(|| {
        let eperm = Some(libc::EPERM);
        let parent = nix::unistd::getppid().as_raw();
        let limit = libc::rlimit64 {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // The parent's own niceness: nothing changes should the filter let it through.
        // SAFETY: getpriority with integer arguments.
        let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, parent as u32) };
        let dir = std::env::temp_dir();
        let node = std::ffi::CString::new(
            dir.join(format!("wb-machine-{}", std::process::id()))
                .into_os_string()
                .into_encoded_bytes(),
        )
        .unwrap();
        // SAFETY: system calls with integer arguments or pointers that outlive them.
        unsafe {
            let fifo = errno(libc::mknod(node.as_ptr(), libc::S_IFIFO | 0o600, 0) as i64);
            libc::unlink(node.as_ptr());
            vec![
                errno(libc::sethostname(c"x".as_ptr(), 1) as i64) == eperm,
                errno(
                    libc::mknod(node.as_ptr(), libc::S_IFCHR | 0o600, libc::makedev(1, 11)) as i64,
                ) == eperm,
                fifo.is_none(),
                socket(libc::AF_VSOCK, libc::SOCK_STREAM, 0) == eperm,
                socket(libc::AF_PACKET, libc::SOCK_RAW, 0) == eperm,
                socket(libc::AF_NETLINK, libc::SOCK_RAW, 9) == eperm, // NETLINK_AUDIT
                socket(libc::AF_NETLINK, libc::SOCK_RAW, 0).is_none(), // ROUTE
                socket(libc::AF_INET, libc::SOCK_STREAM, 0).is_none(),
                socket(libc::AF_UNIX, libc::SOCK_STREAM, 0).is_none(),
                errno(libc::syscall(
                    libc::SYS_io_uring_setup,
                    1,
                    std::ptr::null_mut::<u8>(),
                )) == eperm,
                errno(libc::syscall(
                    libc::SYS_bpf,
                    0,
                    std::ptr::null_mut::<u8>(),
                    0,
                )) == eperm,
                errno(
                    libc::prlimit64(parent, libc::RLIMIT_CORE, &limit, std::ptr::null_mut()) as i64,
                ) == eperm,
                errno(libc::setpriority(libc::PRIO_PROCESS, parent as u32, nice) as i64) == eperm,
                // A user with no processes: ESRCH if it went through.
                errno(libc::setpriority(libc::PRIO_USER, 65533, 19) as i64) == eperm,
                errno(libc::setpriority(libc::PRIO_PROCESS, 0, 1) as i64).is_none(),
                errno(libc::ioctl(0, libc::TIOCSTI, c"x".as_ptr()) as i64) == eperm,
                effective() & !kept_mask() == 0,
            ]
        }
    });
}
