//! `[shell.limits]` through `whalebox call`: the limits reach the task's first process
//! on every way a task starts (pipes from the zygote, a PTY from an exec'd supervisor;
//! without a gate, under the notification gate and under the ptrace gate), the task's
//! cgroup is made and removed, a task that hits a limit says which, bad values stop
//! startup naming the key, and `whalebox doctor` says what keeps each limit. The
//! exhaustion scenarios with a long-lived server and two sessions are in
//! tests/mcp/test_limits.py.

mod common;

use common::{Fixture, text};
use serde_json::{Value, json};

const LIMITS: &str = "[shell.limits]\nprocesses = 64\nmemory = \"256M\"\nopen_files = 256\n";

/// How `processes` is kept here (`whalebox doctor --json`): "cgroup v1 pids.max",
/// "cgroup v2 pids.max", or "RLIMIT_NPROC".
fn processes_kept_by(f: &Fixture) -> String {
    let out = f
        .command(&[
            "doctor",
            "--json",
            "--profile",
            f.profile.as_ref().unwrap().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).expect("doctor --json prints JSON");
    report["limits"]["processes"]["enforced_by"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// This process's hard limit on open files.
fn own_hard_nofile() -> u64 {
    std::fs::read_to_string("/proc/self/limits")
        .unwrap()
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(4)?.parse().ok())
        .unwrap_or(u64::MAX)
}

/// The task's cgroup directories, from what it printed of /proc/self/cgroup.
fn task_cgroup_dirs(output: &str) -> Vec<String> {
    output
        .lines()
        .filter_map(|l| {
            let (_, path) = l
                .split_once(":pids:")
                .or_else(|| l.split_once(":memory:"))?;
            path.contains("/whalebox-").then(|| path.to_string())
        })
        .collect()
}

#[test]
fn the_limits_reach_the_first_process_on_every_start_path() {
    let zsh = common::gated_zsh();
    let gate = common::kernel_gate_missing();
    let mut boundaries = vec![("off", "auto")];
    match &gate {
        None => boundaries.extend([("required", "notify"), ("required", "ptrace")]),
        Some(why) => eprintln!("NOTE: the gated start paths are not covered here: {why}"),
    }
    for (boundary, method) in boundaries {
        let f = Fixture::new().with_profile(&format!(
            "[shell]\nexec_boundary = \"{boundary}\"\nexec_gate = \"{method}\"\nzsh = \"{}\"\n{LIMITS}",
            zsh.display()
        ));
        let cgroup = processes_kept_by(&f).starts_with("cgroup");
        for mode in ["pipe", "pty"] {
            let env = f.ok(
                "shell_run",
                &json!({"command": "ulimit -n; ulimit -Hn; cat /proc/self/cgroup", "mode": mode})
                    .to_string(),
            );
            let t = text(&env).replace('\r', "");
            let case = format!("{boundary}/{method}/{mode}");
            let mut lines = t.lines();
            let soft: u64 = lines.next().unwrap().trim().parse().expect(&case);
            let hard: u64 = lines.next().unwrap().trim().parse().expect(&case);
            // Lowered to 256, never raised (where the test itself has less, that stays).
            assert!(
                soft <= hard && hard == own_hard_nofile().min(256),
                "{case}: {t}"
            );
            let dirs = task_cgroup_dirs(&t);
            if cgroup {
                assert!(!dirs.is_empty(), "{case}: the task is in its cgroup: {t}");
                assert_eq!(env["data"]["limits"]["processes_by"], "cgroup", "{case}");
            } else {
                assert!(dirs.is_empty(), "{case}: {t}");
                assert_eq!(env["data"]["limits"]["processes_by"], "rlimit", "{case}");
            }
            assert_eq!(env["data"]["limits"]["open_files"], 256, "{case}");
            assert_eq!(env["data"]["limits"]["hit"], json!([]), "{case}");
        }
    }
}

/// Regression: the cgroups were looked for only while the Landlock layer was built, so
/// with `[landlock] mode = "off"` no task got one.
#[test]
fn a_task_gets_its_cgroup_with_landlock_off_too() {
    let f = Fixture::new().with_profile(&format!("{LIMITS}[landlock]\nmode = \"off\"\n"));
    if !processes_kept_by(&f).starts_with("cgroup") {
        eprintln!(
            "SKIPPED a_task_gets_its_cgroup_with_landlock_off_too: no cgroup can be made here"
        );
        return;
    }
    let env = f.ok(
        "shell_run",
        &json!({"command": "cat /proc/self/cgroup"}).to_string(),
    );
    assert!(!task_cgroup_dirs(text(&env)).is_empty(), "{}", text(&env));
    assert_eq!(env["data"]["limits"]["processes_by"], "cgroup");
}

#[test]
fn a_tasks_cgroup_goes_with_it_and_the_servers_with_the_server() {
    let f = Fixture::new().with_profile(LIMITS);
    if !processes_kept_by(&f).starts_with("cgroup") {
        eprintln!(
            "SKIPPED a_tasks_cgroup_goes_with_it_and_the_servers_with_the_server: no cgroup can be made here ({})",
            processes_kept_by(&f)
        );
        return;
    }
    let env = f.ok(
        "shell_run",
        &json!({"command": "cat /proc/self/cgroup; sleep 1000 & sleep 1000 & echo started"})
            .to_string(),
    );
    let dirs = task_cgroup_dirs(text(&env));
    assert!(!dirs.is_empty(), "{}", text(&env));
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    for line in text(&env).lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if !path.contains("/whalebox-") {
            continue;
        }
        // The hierarchy's mount point: cgroup2, or the v1 mount with these controllers.
        let mount = mounts
            .lines()
            .find_map(|m| {
                let f: Vec<&str> = m.split_whitespace().collect();
                let dash = f.iter().position(|x| *x == "-")?;
                let ok = if controllers.is_empty() {
                    f[dash + 1] == "cgroup2"
                } else {
                    f[dash + 1] == "cgroup"
                        && controllers
                            .split(',')
                            .all(|c| f[dash + 3].split(',').any(|o| o == c))
                };
                (ok && f[3] == "/").then(|| f[4].to_string())
            })
            .expect("the hierarchy is mounted");
        let task = std::path::PathBuf::from(format!("{mount}{path}"));
        let server = task.parent().unwrap();
        assert!(
            server.parent().unwrap().is_dir(),
            "{}: the server's own cgroup is there",
            server.display()
        );
        assert!(
            !task.exists(),
            "the task's cgroup {} is gone",
            task.display()
        );
        assert!(
            !server.exists(),
            "the server's {} went with it",
            server.display()
        );
    }
}

#[test]
fn a_task_that_hits_a_limit_says_which() {
    let f = Fixture::new().with_profile(
        "[shell.limits]\nprocesses = 64\nmemory = \"256M\"\nopen_files = 64\ncpu_seconds = 1\n",
    );
    let python = common::system_program("python3");
    // Descriptors: every one this process may open.
    let env = f.ok(
        "shell_run",
        &json!({"command": format!(
            "{} -c \"import os\nfs = []\nwhile True: fs.append(os.open('/dev/null', os.O_RDONLY))\"",
            python.display()
        )})
        .to_string(),
    );
    let t = text(&env);
    assert!(t.contains("Too many open files"), "{t}");
    assert!(
        t.contains("ran out of file descriptors at its limit (64, [shell.limits] open_files)"),
        "{t}"
    );
    assert_eq!(env["data"]["limits"]["hit"], json!(["open_files"]));
    // CPU time: a loop that never ends is stopped at its second.
    let env = f.ok(
        "shell_run",
        &json!({"command": "while :; do :; done", "yield_time_ms": 30000}).to_string(),
    );
    let t = text(&env);
    assert!(
        t.contains("used up its CPU time (1 s, [shell.limits] cpu_seconds)"),
        "{t}"
    );
    assert_eq!(env["data"]["limits"]["hit"], json!(["cpu_seconds"]));
}

#[test]
fn without_a_cgroup_the_process_limit_is_an_rlimit_above_what_runs() {
    let f = Fixture::new().with_profile("[shell.limits]\nprocesses = 64\ncgroup = \"off\"\n");
    let env = f.ok(
        "shell_run",
        &json!({"command": "ulimit -u; cat /proc/self/cgroup"}).to_string(),
    );
    let t = text(&env);
    assert!(task_cgroup_dirs(t).is_empty(), "{t}");
    let nproc: u64 = t.lines().next().unwrap().trim().parse().expect(t);
    let running: u64 = std::fs::read_to_string("/proc/loadavg")
        .unwrap()
        .split_whitespace()
        .nth(3)
        .and_then(|f| f.split_once('/')?.1.parse().ok())
        .unwrap();
    // The threads running then, plus the task's 64 (the count moves a little meanwhile).
    assert!(
        nproc >= 64 && nproc <= running + 64 + 2000,
        "RLIMIT_NPROC {nproc}, {running} running"
    );
    assert_eq!(env["data"]["limits"]["processes_by"], "rlimit");
    assert_eq!(env["data"]["limits"]["memory_by"], "none");
}

#[test]
fn a_value_that_is_not_a_limit_stops_startup_naming_the_key() {
    let f = Fixture::new();
    for (body, expected) in [
        ("processes = 2", "shell.limits.processes = 2 is too low"),
        ("open_files = 0", "shell.limits.open_files = 0 is too low"),
        ("memory = \"lots\"", "shell.limits.memory = \"lots\""),
        (
            "memory = \"150%\"",
            "a share is more than 0% and at most 100%",
        ),
        ("address_space = \"50%\"", "shell.limits.address_space"),
        ("cpu_seconds = -1", "expected a whole number"),
        ("nproc = 5", "unknown field `nproc`"),
    ] {
        let profile = f.root.join("bad.toml");
        std::fs::write(&profile, format!("[shell.limits]\n{body}\n")).unwrap();
        let out = f
            .command(&["profile", "check", profile.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(common::code(&out), 2, "{body}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expected), "{body}: {err}");
    }
    let profile = f.root.join("good.toml");
    std::fs::write(
        &profile,
        "[shell.limits]\nprocesses = \"off\"\nmemory = \"8G\"\naddress_space = 17179869184\nopen_files = \"4096\"\ncpu_seconds = 3600\ncgroup = \"off\"\n",
    )
    .unwrap();
    let out = f
        .command(&["profile", "check", profile.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        common::code(&out),
        0,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_doctor_says_what_keeps_each_limit() {
    let f = Fixture::new().with_profile(LIMITS);
    let out = f
        .command(&[
            "doctor",
            "--json",
            "--profile",
            f.profile.as_ref().unwrap().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let limits = &report["limits"];
    assert_eq!(limits["open_files"]["enforced_by"], "RLIMIT_NOFILE");
    assert_eq!(limits["cpu_seconds"]["value"], Value::Null);
    let processes = limits["processes"]["enforced_by"].as_str().unwrap();
    let memory = limits["memory"]["enforced_by"].as_str().unwrap();
    if processes.starts_with("cgroup") {
        assert!(memory.starts_with("cgroup"), "{limits:#}");
        // The server's directories went with the doctor.
        for dir in limits["cgroup_dirs"].as_array().unwrap() {
            assert!(!std::path::Path::new(dir.as_str().unwrap()).exists());
        }
    } else {
        assert_eq!(processes, "RLIMIT_NPROC", "{limits:#}");
        assert!(
            limits["processes"]["note"]
                .as_str()
                .unwrap()
                .contains("no cgroup"),
            "{limits:#}"
        );
    }
    let out = f
        .command(&[
            "doctor",
            "--profile",
            f.profile.as_ref().unwrap().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("limits:     per task: processes 64 ("),
        "{shown}"
    );
}

/// A task whose first process cannot join its cgroup does not run, on every start path
/// (here: a cgroup.procs that refuses every write, /dev/full).
#[test]
fn a_task_that_cannot_join_its_cgroup_does_not_run() {
    let f = Fixture::new();
    let cgroup = f.root.join("cgroup");
    std::fs::create_dir_all(&cgroup).unwrap();
    std::os::unix::fs::symlink("/dev/full", cgroup.join("cgroup.procs")).unwrap();
    let setup = json!({
        "limits": {"processes": 64, "memory": null, "address_space": null, "open_files": 256, "cpu_seconds": null},
        "cgroups": [cgroup],
        "nproc": null,
    })
    .to_string();
    let sh = common::system_program("sh");
    let mut gates: Vec<Vec<&str>> = vec![vec![]];
    match common::kernel_gate_missing() {
        None => {
            for method in ["notify", "ptrace"] {
                gates.push(vec![
                    "--exec-gate",
                    "/nonexistent/whalebox-test.sock",
                    "--exec-gate-method",
                    method,
                ]);
            }
        }
        Some(why) => eprintln!("NOTE: the gated start paths are not covered here: {why}"),
    }
    for gate in gates {
        let me = std::process::id().to_string();
        let mut args = vec!["__supervise", me.as_str()];
        args.extend(&gate);
        args.extend([
            "--limits",
            setup.as_str(),
            "--",
            sh.to_str().unwrap(),
            "-c",
            "echo ran",
        ]);
        let out = f.command(&args).output().unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(126), "{gate:?}: {stdout} {stderr}");
        assert!(!stdout.contains("ran"), "{gate:?}: {stdout}");
        assert!(
            stderr.contains("cannot join the task's cgroup"),
            "{gate:?}: {stderr}"
        );
    }
}

/// Runs `whalebox ARGS` with `ulimit -n` at `limit` (soft and hard).
fn with_open_files(f: &Fixture, limit: u64, args: &[&str]) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = f.command(args);
    unsafe {
        cmd.pre_exec(move || {
            let rlim = nix::libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if nix::libc::setrlimit(nix::libc::RLIMIT_NOFILE, &rlim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.output().unwrap()
}

/// Under a `ulimit -n` too small to start with, whalebox says so and how to fix it (it
/// panicked in the async runtime's signal set-up).
#[test]
fn too_few_descriptors_to_start_is_a_usage_error_that_names_the_limit() {
    let f = Fixture::new();
    for args in [&["serve"][..], &["tools"][..]] {
        let out = with_open_files(&f, 8, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("8 open files allowed (ulimit -n)")
                && stderr.contains("ulimit -n 1024")
                && !stderr.contains("panicked"),
            "{args:?}: {stderr}"
        );
    }
}

/// whalebox itself out of file descriptors (its own `ulimit -n` used up): starting a
/// command is `out_of_resources` with a next step, not `internal` (issue 28; it was
/// "this is a whalebox bug").
#[test]
fn whalebox_out_of_descriptors_answers_out_of_resources() {
    let f = Fixture::new();
    let ws = f.ws.to_str().unwrap().to_string();
    let mut answered = None;
    // The fewest descriptors whalebox starts with varies with what the profile turns on:
    // find a limit under which it serves the call but cannot start the command.
    for limit in 10..40u64 {
        let args = [
            "call",
            "shell_run",
            "--workspace",
            &ws,
            "--args",
            r#"{"command": "echo hi"}"#,
        ];
        let out = with_open_files(&f, limit, &args);
        let Ok(envelope) = serde_json::from_slice::<Value>(&out.stdout) else {
            continue;
        };
        if envelope["ok"] == json!(true) {
            break;
        }
        answered = Some(envelope);
    }
    let envelope = answered.expect("no descriptor limit made starting a command fail");
    assert_eq!(envelope["code"], "out_of_resources", "{envelope}");
    assert!(
        text(&envelope).contains("Next step: stop tasks"),
        "{envelope}"
    );
}
