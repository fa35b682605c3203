use super::*;

/// Run `checks` in a forked child after [`confine`] with `options`, or bare (None: to show
/// first that what a check expects refused works without the filter). The exit code names
/// the first check that failed (10 + its index), 99 when confining failed, 0 when all held.
fn in_child(options: Option<Options>, checks: fn() -> Vec<bool>) -> i32 {
    // SAFETY: the child only makes system calls (and small allocations), then _exits.
    match unsafe { nix::unistd::fork() }.unwrap() {
        nix::unistd::ForkResult::Child => {
            let code = match options.map(confine).unwrap_or(Ok(())) {
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
            match nix::sys::wait::waitpid(child, None).unwrap() {
                nix::sys::wait::WaitStatus::Exited(_, code) => code,
                other => panic!("the child ended with {other:?}"),
            }
        }
    }
}

fn filter_here() -> bool {
    if crate::kernel::filter::target_arch().is_err() {
        eprintln!("SKIPPED: the deny list is built for x86_64 only");
        return false;
    }
    true
}

/// [`in_child`] under the default options (user namespaces refused), asserting all held.
fn in_confined_child(checks: fn() -> Vec<bool>) {
    if filter_here() {
        assert_eq!(
            in_child(Some(Options::default()), checks),
            0,
            "exit 10+i: check i failed; 99: confine failed"
        );
    }
}

/// Run `call` in a forked grandchild (so what it changes, a new user namespace, stays
/// there): None when it returned 0, else the errno it reported.
fn in_grandchild(call: fn() -> Option<i32>) -> Option<i32> {
    // SAFETY: the grandchild makes system calls only, then _exits.
    match unsafe { nix::unistd::fork() } {
        Err(e) => Some(e as i32),
        Ok(nix::unistd::ForkResult::Child) => {
            let code = call().unwrap_or(0);
            // SAFETY: leaving the forked grandchild at once.
            unsafe { libc::_exit(code) };
        }
        Ok(nix::unistd::ForkResult::Parent { child }) => {
            match nix::sys::wait::waitpid(child, None) {
                Ok(nix::sys::wait::WaitStatus::Exited(_, 0)) => None,
                Ok(nix::sys::wait::WaitStatus::Exited(_, code)) => Some(code),
                _ => Some(-1),
            }
        }
    }
}

fn unshare_user() -> Option<i32> {
    in_grandchild(|| {
        // SAFETY: unshare with integer flags, in a process of its own.
        errno(unsafe { libc::unshare(libc::CLONE_NEWUSER) } as i64)
    })
}

/// A raw `clone` with CLONE_NEWUSER (the child leaves at once): its errno, or None.
fn clone_user() -> Option<i32> {
    // SAFETY: a raw clone without a new stack behaves as fork; the child only _exits.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            (libc::CLONE_NEWUSER | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    reap(pid)
}

/// `struct clone_args` up to `tls` (CLONE_ARGS_SIZE_VER0).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
}

/// A plain `clone3` (a fork; the child leaves at once): its errno, or None.
fn clone3_fork() -> Option<i32> {
    let args = CloneArgs {
        exit_signal: libc::SIGCHLD as u64,
        ..Default::default()
    };
    // SAFETY: clone3 with no new stack behaves as fork; the child only _exits.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &args as *const CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    reap(pid)
}

/// After a raw fork-like call: in the child leave, in the parent wait for it.
fn reap(pid: i64) -> Option<i32> {
    if pid == 0 {
        // SAFETY: leaving the new child at once.
        unsafe { libc::_exit(0) };
    }
    if pid < 0 {
        return errno(pid);
    }
    let status = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid as i32), None);
    (status
        != Ok(nix::sys::wait::WaitStatus::Exited(
            nix::unistd::Pid::from_raw(pid as i32),
            0,
        )))
    .then_some(-1)
}

/// The kernel's own answer to making a user namespace here, bare: None when it can.
fn userns_refused_by_kernel() -> Option<String> {
    unshare_user().map(|e| {
        format!(
            "the kernel refuses user namespaces here without whalebox (errno {e}; \
             user.max_user_namespaces, kernel.unprivileged_userns_clone or an AppArmor \
             restriction)"
        )
    })
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

#[test]
fn user_namespaces_are_refused_by_default_and_allowed_when_asked() {
    if !filter_here() {
        return;
    }
    if let Some(why) = userns_refused_by_kernel() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    fn attacks() -> Vec<bool> {
        vec![unshare_user().is_none(), clone_user().is_none()]
    }
    assert_eq!(
        in_child(None, attacks),
        0,
        "bare: exit 10+i: attack i failed"
    );
    assert_eq!(
        in_child(
            Some(Options {
                user_namespaces: true
            }),
            attacks
        ),
        0,
        "allowed: exit 10+i: attack i failed; 99: confine failed"
    );
    in_confined_child(|| {
        let eperm = Some(libc::EPERM);
        vec![unshare_user() == eperm, clone_user() == eperm]
    });
}

#[test]
fn setns_is_refused_by_default() {
    if !filter_here() {
        return;
    }
    // Its own user namespace: EINVAL from the kernel, EPERM from the filter.
    fn own_user_namespace() -> Option<i32> {
        let ns = std::fs::File::open("/proc/self/ns/user").ok()?;
        use std::os::fd::AsRawFd;
        // SAFETY: setns on a descriptor we hold.
        errno(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWUSER) } as i64)
    }
    fn kernel() -> Vec<bool> {
        vec![own_user_namespace() == Some(libc::EINVAL)]
    }
    assert_eq!(
        in_child(None, kernel),
        0,
        "bare setns did not reach the kernel"
    );
    assert_eq!(
        in_child(
            Some(Options {
                user_namespaces: true
            }),
            kernel
        ),
        0,
        "allowed: setns did not reach the kernel"
    );
    in_confined_child(|| vec![own_user_namespace() == Some(libc::EPERM)]);
}

#[test]
fn clone3_is_enosys_and_threads_fork_and_posix_spawn_still_work() {
    if !filter_here() {
        return;
    }
    fn plain() -> Vec<bool> {
        vec![clone3_fork().is_none()]
    }
    if in_child(None, plain) != 0 {
        eprintln!("SKIPPED: clone3 does not work here without whalebox (before Linux 5.3?)");
        return;
    }
    assert_eq!(
        in_child(
            Some(Options {
                user_namespaces: true
            }),
            plain
        ),
        0,
        "allowed: clone3 should go through"
    );
    in_confined_child(|| {
        // A thread (glibc tries clone3, then clone), a fork, and posix_spawn (the same
        // fallback): the spawn reaches exec, whose ENOENT proves the child was made.
        let thread = std::thread::spawn(|| 7).join().ok() == Some(7);
        // SAFETY: the forked child only _exits.
        let forked = match unsafe { nix::unistd::fork() } {
            Ok(nix::unistd::ForkResult::Child) => unsafe { libc::_exit(3) },
            Ok(nix::unistd::ForkResult::Parent { child }) => {
                nix::sys::wait::waitpid(child, None)
                    == Ok(nix::sys::wait::WaitStatus::Exited(child, 3))
            }
            Err(_) => false,
        };
        let path = c"/nonexistent/whalebox-machine-test";
        let argv = [path.as_ptr() as *mut libc::c_char, std::ptr::null_mut()];
        let envp = [std::ptr::null_mut::<libc::c_char>()];
        let mut pid = 0;
        // SAFETY: posix_spawn with NUL-terminated argv and envp that outlive the call.
        let spawned = unsafe {
            libc::posix_spawn(
                &mut pid,
                path.as_ptr(),
                std::ptr::null(),
                std::ptr::null(),
                argv.as_ptr(),
                envp.as_ptr(),
            )
        };
        vec![
            clone3_fork() == Some(libc::ENOSYS),
            thread,
            forked,
            spawned == libc::ENOENT,
        ]
    });
}

fn affinity(pid: i32) -> Option<libc::cpu_set_t> {
    // SAFETY: an all-zero cpu_set_t is valid; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the set outlives the call.
    let ret = unsafe { libc::sched_getaffinity(pid, std::mem::size_of_val(&set), &mut set) };
    (ret == 0).then_some(set)
}

/// Set `pid`'s CPUs to what they are (nothing changes should the filter let it through).
fn set_affinity(pid: i32) -> Option<i32> {
    let Some(set) = affinity(pid) else {
        return Some(-1);
    };
    // SAFETY: the set outlives the call.
    errno(unsafe { libc::sched_setaffinity(pid, std::mem::size_of_val(&set), &set) } as i64)
}

/// migrate_pages of `pid` from its nodes to the same nodes: ENOSYS without NUMA.
fn migrate_pages(pid: i32) -> Option<i32> {
    let nodes: u64 = 1;
    // SAFETY: node masks of 64 bits that outlive the call.
    errno(unsafe {
        libc::syscall(
            libc::SYS_migrate_pages,
            pid as libc::c_long,
            64 as libc::c_ulong,
            &nodes as *const u64,
            &nodes as *const u64,
        )
    })
}

/// move_pages of one page of `pid` (an address of ours: it needs none mapped there),
/// to node 0 or (`to` false) only asking where it is.
fn move_pages(pid: i32, to: bool) -> Option<i32> {
    let page = &pid as *const i32 as *mut libc::c_void;
    let node: i32 = 0;
    let mut status: i32 = 0;
    // SAFETY: one-element arrays that outlive the call.
    errno(unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            pid as libc::c_long,
            1 as libc::c_ulong,
            &page as *const *mut libc::c_void,
            if to {
                &node as *const i32
            } else {
                std::ptr::null()
            },
            &mut status as *mut i32,
            0 as libc::c_int,
        )
    })
}

#[test]
fn another_process_cpus_and_memory_nodes_are_refused_and_its_own_are_not() {
    if !filter_here() {
        return;
    }
    fn bare() -> Vec<bool> {
        let parent = nix::unistd::getppid().as_raw();
        // Without NUMA in the kernel the page calls are ENOSYS: nothing to show.
        let numa = |r: Option<i32>| r != Some(libc::EPERM);
        vec![
            set_affinity(parent).is_none(),
            numa(migrate_pages(parent)),
            numa(move_pages(parent, true)),
        ]
    }
    assert_eq!(in_child(None, bare), 0, "bare: exit 10+i: attack i failed");
    in_confined_child(|| {
        let eperm = Some(libc::EPERM);
        let parent = nix::unistd::getppid().as_raw();
        let own = nix::unistd::getpid().as_raw();
        vec![
            set_affinity(0).is_none(),
            affinity(parent).is_some(),
            set_affinity(parent) == eperm,
            // Only 0 names the caller: the filter sees a number.
            set_affinity(own) == eperm,
            migrate_pages(parent) == eperm,
            move_pages(parent, true) == eperm,
            // Its own pages, and where they are (aimed at the parent that asks past
            // the kernel's ptrace check, which a root child without its capabilities
            // fails).
            move_pages(0, false) != eperm,
            move_pages(0, true) != eperm,
            migrate_pages(0) != eperm,
        ]
    });
}
