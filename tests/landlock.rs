//! Landlock with the real kernel: the fences the profile declares hold for shell
//! commands, for `whalebox run`, and for the server's own file tools even with the path
//! guard switched off. Every test skips, loudly, only when the kernel has no Landlock.

mod common;

use std::net::TcpListener;

use common::{Fixture, text};
use serde_json::json;

/// Whether the kernel's Landlock ABI is at least `min`; if not, say loudly what is skipped.
fn landlock_at_least(test: &str, min: i64) -> bool {
    let abi = common::landlock_abi();
    if abi < min {
        eprintln!("SKIPPED {test}: needs Landlock ABI {min}, this kernel has {abi}");
    }
    abi >= min
}

fn fenced(f: Fixture, extra: &str) -> Fixture {
    let roots = f.root.join("roots");
    std::fs::create_dir_all(roots.join("readable")).unwrap();
    std::fs::write(roots.join("readable/notes.txt"), "from a read root\n").unwrap();
    let body = format!(
        "read_roots = [\"{}\"]\n[shell]\nexec_boundary = \"off\"\n[landlock]\nmode = \"enforce\"\n{extra}",
        roots.join("readable").display()
    );
    f.with_profile(&body)
}

fn run(f: &Fixture, command: &str) -> serde_json::Value {
    let (_, env) = f.call("shell_run", &json!({"command": command}).to_string());
    env
}

#[test]
fn shell_commands_are_fenced_to_the_workspace_read_roots_and_tmpdir() {
    if !landlock_at_least("shell fences", 1) {
        return;
    }
    let f = fenced(Fixture::new(), "");
    let outside = f.outside.display().to_string();
    let readable = f.root.join("roots/readable");
    std::os::unix::fs::symlink(&f.outside, f.ws.join("escape")).unwrap();
    std::fs::write(f.outside.join("secret.txt"), "never readable\n").unwrap();

    let env = run(
        &f,
        &format!("echo in > inside.txt; cat inside.txt; echo x > {outside}/made"),
    );
    let t = text(&env);
    assert!(
        t.starts_with("in\n") && t.to_lowercase().contains("permission denied"),
        "{t}"
    );
    assert!(!f.outside.join("made").exists());
    assert_eq!(env["data"]["landlock"]["mode"], "enforce");

    let env = run(&f, &format!("ls {outside}; cat {outside}/secret.txt"));
    assert!(text(&env).contains("Permission denied"), "{}", text(&env));
    assert!(!text(&env).contains("never readable"));

    let env = run(
        &f,
        &format!(
            "cat {r}/notes.txt; echo x > {r}/new.txt; echo rc=$?",
            r = readable.display()
        ),
    );
    let t = text(&env);
    assert!(t.starts_with("from a read root\n"), "{t}");
    assert!(
        t.contains("rc=1") && !readable.join("new.txt").exists(),
        "{t}"
    );

    let env = run(&f, "echo x > escape/through-link; echo rc=$?");
    assert!(text(&env).contains("rc=1"), "{}", text(&env));
    assert!(!f.outside.join("through-link").exists());

    let env = run(
        &f,
        "echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"; touch /tmp/whalebox-landlock-probe; echo rc=$?",
    );
    let t = text(&env);
    assert!(t.starts_with("t\n") && t.contains("rc=1"), "{t}");
    assert!(!std::path::Path::new("/tmp/whalebox-landlock-probe").exists());
}

#[test]
fn denials_say_which_sets_apply() {
    if !landlock_at_least("denial diagnostics", 1) {
        return;
    }
    let f = fenced(Fixture::new(), "");
    let env = run(&f, &format!("touch {}/x", f.outside.display()));
    let t = text(&env);
    assert!(
        t.contains("writes are allowed only under") && t.contains(f.ws.to_str().unwrap()),
        "{t}"
    );
    let env = run(&f, &format!("ls {}", f.outside.display()));
    assert!(text(&env).contains("read_roots"), "{}", text(&env));
}

#[test]
fn tcp_is_denied_except_the_listed_ports() {
    if !landlock_at_least("network", 4) {
        return;
    }
    let open = TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let (open_port, closed_port) = (
        open.local_addr().unwrap().port(),
        closed.local_addr().unwrap().port(),
    );
    // Landlock alone: the network fence would give the command a namespace of its own.
    let f = fenced(
        Fixture::new(),
        &format!("network = \"deny\"\nconnect = [{open_port}]\n[network]\nmode = \"off\"\n"),
    );
    let script = format!(
        "import socket\nfor port in ({open_port}, {closed_port}):\n    try:\n        socket.create_connection(('127.0.0.1', port), timeout=5).close(); print(port, 'connected')\n    except OSError as e:\n        print(port, 'refused', e.errno)\ntry:\n    socket.socket().bind(('127.0.0.1', 0)); print('bind ok')\nexcept OSError as e:\n    print('bind refused', e.errno)\n"
    );
    std::fs::write(f.ws.join("net.py"), script).unwrap();
    let python = common::system_program("python3");
    let env = run(&f, &format!("{} net.py", python.display()));
    let t = text(&env);
    assert!(t.contains(&format!("{open_port} connected")), "{t}");
    assert!(t.contains(&format!("{closed_port} refused 13")), "{t}");
    assert!(t.contains("bind refused 13"), "{t}");
}

#[test]
fn a_command_cannot_signal_a_process_outside_its_sandbox() {
    if !landlock_at_least("signal scope", 6) {
        return;
    }
    let mut outsider = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let f = fenced(Fixture::new(), "");
    let env = run(
        &f,
        &format!(
            "kill -TERM {}; echo rc=$?; sleep 1 & kill $!; echo own=$?",
            outsider.id()
        ),
    );
    let t = text(&env);
    assert!(t.contains("rc=1") && t.contains("own=0"), "{t}");
    assert!(
        outsider.try_wait().unwrap().is_none(),
        "the outsider was killed"
    );
    outsider.kill().unwrap();
    let _ = outsider.wait();
}

#[test]
fn a_command_cannot_reach_an_abstract_unix_socket_outside_its_sandbox() {
    use std::os::linux::net::SocketAddrExt;
    if !landlock_at_least("abstract unix socket scope", 6) {
        return;
    }
    let name = format!("whalebox-test-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let _outside = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    // Landlock's scope alone: a network namespace of its own would hide the socket too.
    let f = fenced(Fixture::new(), "[network]\nmode = \"off\"\n");
    std::fs::write(
        f.ws.join("abstract.py"),
        format!(
            "import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect('\\0{name}'); print('connected')\nexcept OSError as e:\n    print('refused', e.errno)\n"
        ),
    )
    .unwrap();
    // Reachable from outside the sandbox (so the test can fail) …
    let python = common::system_program("python3");
    let out = std::process::Command::new(&python)
        .arg(f.ws.join("abstract.py"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "connected\n");
    // … and not from inside it.
    let env = run(&f, &format!("{} abstract.py", python.display()));
    assert!(text(&env).starts_with("refused 1\n"), "{}", text(&env));
}

#[test]
fn the_server_file_tools_are_fenced_even_without_the_path_guard() {
    if !landlock_at_least("server fence", 1) {
        return;
    }
    if !cfg!(debug_assertions) {
        // Release builds (the Nix package's check phase) have no way to switch the path
        // guard off, which is the point of this test's hook.
        eprintln!("SKIPPED: the path-guard switch exists only in debug builds");
        return;
    }
    let target = |f: &Fixture| f.outside.join("by-write-tool.txt");
    // A one-shot tool call with the path guard switched off (debug builds only).
    let unguarded = |f: &Fixture, tool: &str, args: serde_json::Value| {
        let out = f
            .command(&[
                "call",
                tool,
                "--args",
                &args.to_string(),
                "--profile",
                f.profile.as_ref().unwrap().to_str().unwrap(),
            ])
            .env("WHALEBOX_TEST_DISABLE_PATH_GUARD", "1")
            .output()
            .unwrap();
        common::envelope(&out)
    };
    let write = |f: &Fixture| {
        unguarded(
            f,
            "write",
            json!({"file_path": target(f), "content": "escaped\n"}),
        )
    };
    // The hook works: with Landlock off, the write escapes (so this test can fail).
    let open = Fixture::new().with_profile("[landlock]\nmode = \"off\"\n");
    let env = write(&open);
    assert_eq!(env["ok"], true, "{env:#}");
    assert!(target(&open).exists());
    // With Landlock on, the kernel refuses it and nothing is created.
    let f = fenced(Fixture::new(), "");
    let env = write(&f);
    assert_eq!(env["code"], "path_denied", "{env:#}");
    assert!(
        text(&env).contains("writes are allowed only under"),
        "{env:#}"
    );
    assert!(!target(&f).exists());
    // Reads outside every root are refused by the kernel too.
    let env = unguarded(
        &f,
        "read_file",
        json!({"file_path": f.root.join("profile.toml")}),
    );
    assert_eq!(env["code"], "path_denied", "{env:#}");
}

#[test]
fn enforce_beyond_the_kernel_stops_startup_with_what_to_do() {
    if !landlock_at_least("enforce beyond the kernel", 1) {
        return;
    }
    let abi = common::landlock_abi();
    let f = Fixture::new().with_profile(&format!(
        "[landlock]\nmode = \"enforce\"\nmin_abi = {}\n",
        abi + 1
    ));
    let out = f
        .command(&[
            "call",
            "read_file",
            "--args",
            "{\"file_path\": \"x\"}",
            "--profile",
            f.profile.as_ref().unwrap().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(common::code(&out), 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("needs Landlock ABI {}", abi + 1))
            && stderr.contains("best-effort"),
        "{stderr}"
    );
}

#[test]
fn git_keeps_working_with_a_user_config_in_home() {
    if !landlock_at_least("git config", 1) {
        return;
    }
    let f = fenced(Fixture::new(), "");
    std::fs::write(f.home.join(".gitconfig"), "[user]\n\tname = Sandboxed\n").unwrap();
    let env = run(&f, "git config user.name; git status --short; echo rc=$?");
    let t = text(&env);
    assert!(t.starts_with("Sandboxed\n") && t.contains("rc=0"), "{t}");
}

#[test]
fn a_configured_shell_outside_the_system_roots_still_runs() {
    if !landlock_at_least("configured shell", 1) {
        return;
    }
    let f = Fixture::new().with_profile(&format!(
        "[shell]\nexec_boundary = \"off\"\nprogram = \"{}\"\n[landlock]\nmode = \"enforce\"\n",
        common::gated_zsh().display()
    ));
    let env = run(
        &f,
        "echo zsh-$ZSH_VERSION; zmodload zsh/datetime && echo modules-ok",
    );
    assert_eq!(
        text(&env).lines().take(2).collect::<Vec<_>>(),
        ["zsh-5.9", "modules-ok"],
        "{}",
        text(&env)
    );
}

/// Run `cmd` under a seccomp filter that fails the Landlock syscalls from `first`
/// (444 create_ruleset, 445 add_rule, 446 restrict_self) with EPERM, as a container's
/// default seccomp profile does. The numbers are the same on every architecture.
fn without_landlock_syscalls(cmd: &mut std::process::Command, first: u32) {
    use nix::libc;
    use std::os::unix::process::CommandExt;
    let filter = [
        libc::sock_filter {
            code: 0x20,
            jt: 0,
            jf: 0,
            k: 0,
        }, // load the syscall number
        libc::sock_filter {
            code: 0x35,
            jt: 0,
            jf: 2,
            k: first,
        }, // < first: allow
        libc::sock_filter {
            code: 0x25,
            jt: 1,
            jf: 0,
            k: 446,
        }, // > 446: allow
        libc::sock_filter {
            code: 0x06,
            jt: 0,
            jf: 0,
            k: 0x0005_0000 | libc::EPERM as u32,
        },
        libc::sock_filter {
            code: 0x06,
            jt: 0,
            jf: 0,
            k: 0x7fff_0000,
        },
    ];
    // SAFETY: only prctl between fork and exec; the filter outlives the call.
    unsafe {
        cmd.pre_exec(move || {
            let prog = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr() as *mut libc::sock_filter,
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(libc::PR_SET_SECCOMP, 2, &prog as *const _ as libc::c_ulong) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[test]
fn a_container_that_blocks_landlock_gets_a_clear_answer() {
    let f = Fixture::new();
    // No Landlock at all (the version query fails too): doctor says so and what to do.
    let mut doctor = f.command(&["doctor"]);
    without_landlock_syscalls(&mut doctor, 444);
    let out = doctor.output().unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("not enforced") && report.contains("seccomp"),
        "{report}"
    );
    // enforce refuses to start; best-effort runs and says nothing is enforced.
    let strict = Fixture::new().with_profile("[landlock]\nmode = \"enforce\"\n");
    let mut call = strict.command(&[
        "call",
        "shell_run",
        "--args",
        "{\"command\": \"echo ran\"}",
        "--profile",
        strict.profile.as_ref().unwrap().to_str().unwrap(),
    ]);
    without_landlock_syscalls(&mut call, 444);
    let out = call.output().unwrap();
    assert_eq!(common::code(&out), 2, "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("container"),
        "{out:?}"
    );
    // The kernel has Landlock but refuses to apply it (only restrict_self blocked).
    for first in [444, 446] {
        let mut call = f.command(&[
            "call",
            "shell_run",
            "--args",
            "{\"command\": \"echo ran\"}",
            "--workspace",
            f.ws.to_str().unwrap(),
        ]);
        without_landlock_syscalls(&mut call, first);
        let out = call.output().unwrap();
        let env = common::envelope(&out);
        assert_eq!(env["ok"], true, "{env:#}");
        assert!(text(&env).starts_with("ran\n"), "{env:#}");
        assert!(
            env["data"]["landlock"]["unavailable"].is_string(),
            "{first}: {env:#}"
        );
        assert_eq!(
            env["data"]["landlock"]["enforced"],
            json!([]),
            "{first}: {env:#}"
        );
    }
}
