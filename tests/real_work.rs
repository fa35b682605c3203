//! Real work under every fence at once (issue 40's reports, as regression tests): what a
//! build, a test runner or a person's shell does every day must run under the embedded
//! default profile's fences (gated zsh, kernel exec gate, Landlock, network fence), on
//! both exec gate methods. The workloads suite (tests/workloads) runs whole projects;
//! these are the single operations that once failed.

mod common;

use common::{Fixture, text};
use serde_json::json;

/// The default fences with the gated zsh and `method` as the kernel gate.
fn fenced(method: &str) -> Fixture {
    Fixture::new().with_profile(&format!(
        "[shell]\nexec_boundary = \"required\"\nexec_gate = \"{method}\"\nzsh = \"{}\"\n",
        common::gated_zsh().display()
    ))
}

fn methods(test: &str) -> &'static [&'static str] {
    if common::skip_without_kernel_gate(test) {
        &[]
    } else {
        &["notify", "ptrace"]
    }
}

/// Every ruleset handles REFER since Landlock ABI 2, even when it does not list it: the
/// kernel gate's own domain once granted it nowhere, so every rename or hard link across
/// directories (cargo's `.rmeta` moves, `os.replace`, `ln a/b/f a/h`) failed with EXDEV.
#[test]
fn renames_and_links_across_directories_work_under_the_gate() {
    for method in methods("renames_and_links_across_directories_work_under_the_gate") {
        let f = fenced(method);
        let command = "set -e; mkdir -p a/b c; echo x > a/b/f; \
            python3 -c 'import os, shutil; os.rename(\"a/b/f\", \"a/g\"); os.replace(\"a/g\", \"c/g\"); shutil.move(\"c/g\", \"a/b/f\")'; \
            ln a/b/f a/h; mv a/h c/h; mkdir -p \"$TMPDIR/t\"; mv c/h \"$TMPDIR/t/h\"; mv \"$TMPDIR/t/h\" a/b/h2; \
            mv a/b c/b; ls c/b";
        let (_, env) = f.call("shell_run", &json!({ "command": command }).to_string());
        assert_eq!(env["data"]["exit_code"], 0, "{method}: {}", text(&env));
        assert_eq!(
            env["data"]["exec_boundary"]["method"],
            *method,
            "{}",
            text(&env)
        );
        let mut names: Vec<String> = std::fs::read_dir(f.ws.join("c/b"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["f", "h2"], "{method}");
    }
}

/// A policy file outside the workspace with the exec boundary off: the network fence
/// reads its `[[network]]` rules, once read lazily inside the server's fences (which leave
/// that file out), so every command answered "cannot read the policy". They are read at
/// start-up now, and a file that does not load stops start-up as the exec policy does.
#[test]
fn a_policy_outside_the_workspace_serves_the_network_fence_with_the_boundary_off() {
    let f = Fixture::new();
    let policy = f.outside.join("policy.toml");
    std::fs::write(
        &policy,
        "version = 1\ndefault = \"allow\"\n\n[[network]]\nhosts = [\"blocked.example\"]\ndecision = \"deny\"\njustification = \"tests\"\nmatch = [\"blocked.example\"]\n",
    )
    .unwrap();
    let f = f.with_profile(&format!(
        "policy = {}\n[shell]\nexec_boundary = \"off\"\n",
        common::json_path(&policy)
    ));
    let env = f.ok("shell_run", r#"{"command": "echo ran"}"#);
    assert_eq!(env["data"]["exit_code"], 0, "{}", text(&env));
    assert!(text(&env).contains("ran"), "{}", text(&env));

    std::fs::write(&policy, "version = 1\n[[rule]]\npattern = 3\n").unwrap();
    let out = f
        .command(&[
            "call",
            "shell_run",
            "--args",
            r#"{"command": "echo ran"}"#,
            "--profile",
            f.profile.as_ref().unwrap().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        common::code(&out),
        2,
        "stdout: {}\nstderr: {said}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(said.contains("policy.toml"), "{said}");
}

/// Debuggers are the profile's choice (`[shell] debuggers`): off, ptrace fails inside a
/// task and the result says which line opens it; on (the notification method), strace
/// and gdb work on a program the task built, while every exec is still decided (a denied
/// program stays denied under strace) and nothing outside the task can be traced.
#[test]
fn debuggers_are_refused_with_the_line_that_opens_them_and_work_when_opened() {
    if common::skip_without_kernel_gate("debuggers_are_refused_with_the_line_that_opens_them") {
        return;
    }
    let (Some(strace), Some(gdb), Some(_)) = (
        common::find_system_program("strace"),
        common::find_system_program("gdb"),
        common::find_system_program("cc"),
    ) else {
        eprintln!("SKIPPED: needs strace, gdb and cc (.ci/run installs them)");
        return;
    };
    let program = "#include <stdio.h>\n#include <stdlib.h>\nint main(void) { puts(\"hello\"); return system(\"true\"); }\n";
    let profile = |debuggers: bool| {
        format!(
            "policy = \"policy.toml\"\n[shell]\nexec_boundary = \"required\"\nzsh = \"{}\"\ndebuggers = {debuggers}\n",
            common::gated_zsh().display()
        )
    };
    let policy = "version = 1\ndefault = \"allow\"\n\n[[rule]]\npattern = [\"touch\"]\ndecision = \"deny\"\njustification = \"tests deny touch\"\n";

    let off = Fixture::new().with_profile(&profile(false));
    std::fs::write(off.root.join("policy.toml"), policy).unwrap();
    off.write("prog.c", program);
    let (_, env) = off.call(
        "shell_run",
        &json!({"command": format!("cc -g -o prog prog.c && {} -o /dev/null ./prog", strace.display())}).to_string(),
    );
    let t = text(&env);
    assert_ne!(env["data"]["exit_code"], 0, "{t}");
    assert!(t.contains("debuggers = true"), "{t}");

    let on = Fixture::new().with_profile(&profile(true));
    std::fs::write(on.root.join("policy.toml"), policy).unwrap();
    on.write("prog.c", program);
    let command = format!(
        "cc -g -o prog prog.c && {strace} -f -o trace.txt ./prog && grep -c execve trace.txt; \
         {gdb} -batch -ex 'break main' -ex run -ex bt -ex continue ./prog 2>&1 | grep -E '^#0|exited normally'; \
         {strace} -f -o /dev/null touch made; \
         {strace} -o /dev/null -p $PPID; echo attach=$?",
        strace = strace.display(),
        gdb = gdb.display()
    );
    let (_, env) = on.call("shell_run", &json!({ "command": command }).to_string());
    let t = text(&env);
    assert_eq!(env["data"]["exec_boundary"]["method"], "notify", "{t}");
    assert!(t.contains("hello"), "{t}");
    assert!(
        t.contains("#0  main () at prog.c"),
        "gdb stops at its breakpoint: {t}"
    );
    assert!(t.contains("exited normally"), "{t}");
    // Decided all the same: touch is denied under strace too.
    assert!(
        t.contains("whalebox: denied") && !on.ws.join("made").exists(),
        "{t}"
    );
    // The supervisor (the shell's parent) is out of reach: its own Landlock domain.
    assert!(t.contains("attach=1"), "{t}");
}

/// Debuggers and the ptrace method exclude each other (a process has one tracer): the
/// profile is refused when it loads, naming both lines.
#[test]
fn debuggers_with_the_ptrace_method_are_refused_at_load() {
    let f = Fixture::new().with_profile("[shell]\nexec_gate = \"ptrace\"\ndebuggers = true\n");
    let out = f
        .command(&[
            "call",
            "shell_run",
            "--args",
            r#"{"command": "true"}"#,
            "--profile",
            f.profile.as_ref().unwrap().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(common::code(&out), 2, "{said}");
    assert!(
        said.contains("debuggers") && said.contains("exec_gate"),
        "{said}"
    );
}

/// Under the landlock fence (no namespace) a task's servers are on this machine's
/// loopback, which the proxy never reaches: the refusal names the line that opens a port
/// (`host_ports`), not the next hurdle (the ports list, then allow_domains, …).
#[test]
fn loopback_through_the_proxy_is_refused_naming_host_ports() {
    let f = Fixture::new().with_profile("[network]\nkernel = \"landlock\"\n");
    let (_, env) = f.call(
        "shell_run",
        &json!({"command": "curl -sS -m 5 http://127.0.0.1:47999/; curl -sS -m 5 http://localhost:47999/"})
            .to_string(),
    );
    let t = text(&env);
    if env["data"]["network"]["enforcement"] != "landlock" {
        eprintln!("SKIPPED: the landlock fence cannot run here: {t}");
        return;
    }
    assert!(t.contains("loopback") && t.contains("host_ports"), "{t}");
    assert!(!t.contains("allowed ports"), "{t}");
}

/// `whalebox run -- cargo build` (the CI sandbox of the flake's devShell) failed the same
/// way as shell_run: its command renames across directories too, and gets the /dev/shm
/// of its session.
#[test]
fn whalebox_run_renames_across_directories_and_has_dev_shm() {
    if common::skip_without_kernel_gate("whalebox_run_renames_across_directories") {
        return;
    }
    let f = fenced("auto");
    let profile = f.profile.as_ref().unwrap().to_str().unwrap().to_string();
    let out = f
        .command(&[
            "run",
            "--profile",
            &profile,
            "--",
            "python3",
            "-c",
            "import os, multiprocessing as m; os.makedirs('a/b'); open('a/b/f', 'w').close(); \
             os.rename('a/b/f', 'a/g'); print(sum(m.Pool(2).map(abs, [-1, -2])))",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "3", "{said}");
    assert!(f.ws.join("a/g").exists());
}

/// A task that kills its own supervisor would leave its daemons running past the task
/// and its session, out of every reach (they held the next session's /dev/shm): the
/// gate's domain of the task scopes signals, so it cannot (Landlock ABI 6).
#[test]
fn a_task_cannot_kill_its_supervisor() {
    if common::skip_without_kernel_gate("a_task_cannot_kill_its_supervisor") {
        return;
    }
    if common::landlock_abi() < 6 {
        eprintln!(
            "SKIPPED: needs Landlock ABI 6 (signal scopes); this kernel has {}",
            common::landlock_abi()
        );
        return;
    }
    for method in ["notify", "ptrace"] {
        let f = fenced(method);
        let (_, env) = f.call(
            "shell_run",
            r#"{"command": "kill -9 $PPID; echo rc=$?; sleep 0.2; test -d /proc/$PPID && echo alive"}"#,
        );
        let t = text(&env);
        assert!(t.contains("rc=1") && t.contains("alive"), "{method}: {t}");
    }
}

/// `publish` hands this machine's port to one session: an HTTP server holding many would
/// give it to whichever took it first (another caller's OAuth callback), so it is refused
/// at start unless the server holds one session.
#[test]
fn publish_is_refused_for_a_server_of_many_sessions() {
    let f = Fixture::new().with_profile("[network]\npublish = [47998]\n");
    let profile = f.profile.as_ref().unwrap().to_str().unwrap().to_string();
    let mut child = f
        .command(&["serve", "--http", "127.0.0.1:0", "--profile", &profile])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("serve --http with publish and max_sessions > 1 kept serving");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut said = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut said)
        .unwrap();
    assert_eq!(status.code(), Some(2), "{said}");
    assert!(
        said.contains("max_sessions = 1") && said.contains("publish"),
        "{said}"
    );
}

/// `whalebox doctor` never enters a sandbox, so it starts no namespace factory: it asks
/// the probe whether a session could have its network namespace, and says so.
#[test]
fn doctor_says_the_namespace_fence_where_the_probe_makes_one() {
    let probe = std::process::Command::new(common::bin())
        .arg("__netns-probe")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&probe.stdout).trim().to_string();
    if said != "net" && said != "user" {
        eprintln!("SKIPPED: no network namespaces here: {said}");
        return;
    }
    let f = Fixture::new();
    let out = f.command(&["doctor", "--json"]).output().unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["network"]["enforcement"]["kind"], "namespace",
        "{report:#}"
    );
}
