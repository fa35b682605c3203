//! The kernel exec gate against attempts to get around it and against a decision server
//! that misbehaves: a task's own seccomp filter, ptrace from inside a task, x32 calls,
//! the supervisor's memory, a machine that refuses ptrace (fail closed), a server that
//! never answers or hangs up, exec and fork storms; under both methods (seccomp user
//! notification, the default, and the ptrace fallback) where it matters. Real programs,
//! the real kernel; C helpers are compiled from tests/exec/.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Fixture, text};
use serde_json::json;

fn fixture(mode: &str) -> Fixture {
    fixture_with(mode, "auto")
}

/// The touch-denying policy, `exec_boundary = mode`, `exec_gate = method`.
fn fixture_with(mode: &str, method: &str) -> Fixture {
    let f = Fixture::new();
    std::fs::write(
        f.root.join("policy.toml"),
        "version = 1\ndefault = \"allow\"\n\n[[rule]]\npattern = [\"touch\"]\ndecision = \"deny\"\njustification = \"tests deny touch\"\n",
    )
    .unwrap();
    f.with_profile(&format!(
        "policy = \"policy.toml\"\n[shell]\nexec_boundary = \"{mode}\"\nexec_gate = \"{method}\"\nzsh = \"{}\"\naudit_log = \"audit.jsonl\"\n",
        common::gated_zsh().display()
    ))
}

/// Compile tests/exec/NAME.c into DIR, or None (with the reason printed) without cc.
fn compile(name: &str, dir: &Path) -> Option<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/exec/{name}.c"));
    let out = dir.join(name);
    match Command::new("cc")
        .args(["-O2", "-pthread", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
    {
        Ok(s) if s.success() => Some(out),
        other => {
            eprintln!(
                "SKIPPED: cannot compile {name}.c with cc ({other:?}); this test needs a C compiler"
            );
            None
        }
    }
}

fn made(f: &Fixture) -> Vec<String> {
    std::fs::read_dir(&f.ws)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("made"))
        .collect()
}

/// A filter of the task's own returning SECCOMP_RET_USER_NOTIF for execve would outrank
/// the gate's (and, under the notification method, take its question): asking for a
/// listener is refused, under both methods.
#[test]
fn a_tasks_own_seccomp_filter_cannot_skip_the_gate() {
    if common::skip_without_kernel_gate("a_tasks_own_seccomp_filter_cannot_skip_the_gate") {
        return;
    }
    for method in ["notify", "ptrace"] {
        let f = fixture_with("required", method);
        let Some(escape) = compile("notify_escape", &f.ws) else {
            return;
        };
        let touch = common::system_program("touch");
        let (_, env) = f.call(
            "shell_run",
            &json!({"command": format!("{} {} made-escape; echo rc=$?", escape.display(), touch.display())})
                .to_string(),
        );
        let t = text(&env);
        assert_eq!(env["data"]["exec_boundary"]["method"], method, "{t}");
        assert!(made(&f).is_empty(), "{method}: the escape ran touch:\n{t}");
        assert!(
            t.contains("no user notification here: Operation not permitted") && t.contains("rc=3"),
            "{method}: the listener is refused:\n{t}"
        );
    }
}

/// x32 calls share x86_64's architecture token with other numbers: the filter kills the
/// process rather than let an x32 execve past a check of 59 and 322.
#[test]
fn an_exec_through_the_x32_call_table_is_killed() {
    if common::skip_without_kernel_gate("an_exec_through_the_x32_call_table_is_killed") {
        return;
    }
    let f = fixture("required");
    let Some(x32) = compile("x32_exec", &f.ws) else {
        return;
    };
    let touch = common::system_program("touch");
    let env = f.ok(
        "shell_run",
        &json!({"command": format!("{} {} made-x32; echo rc=$?", x32.display(), touch.display())})
            .to_string(),
    );
    let t = text(&env);
    assert!(made(&f).is_empty(), "the x32 exec ran touch:\n{t}");
    assert!(
        t.contains("syscall(-1) returned -1: Function not implemented"),
        "no call is ENOSYS, not a kill:\n{t}"
    );
    // 128 + SIGSYS (31).
    assert!(t.contains("rc=159"), "killed by the filter:\n{t}");
}

/// No process of a task can reach into its supervisor (which holds the listener):
/// not write its memory, not take its descriptors, root or not.
#[test]
fn the_supervisor_is_out_of_a_tasks_reach() {
    if common::skip_without_kernel_gate("the_supervisor_is_out_of_a_tasks_reach") {
        return;
    }
    let f = fixture("required");
    let script = "import os, ctypes\n\
                  sup = os.getppid()\n\
                  for what in ['mem', 'fd/0']:\n\
                  \x20   try:\n\
                  \x20       open('/proc/%d/%s' % (sup, what), 'rb').read(1)\n\
                  \x20       print(what, 'open')\n\
                  \x20   except OSError as e:\n\
                  \x20       print(what, 'refused', e.errno)\n\
                  libc = ctypes.CDLL(None, use_errno=True)\n\
                  pidfd = libc.syscall(434, sup, 0)\n\
                  print('getfd', libc.syscall(438, pidfd, 0, 0), ctypes.get_errno())\n";
    std::fs::write(f.ws.join("reach.py"), script).unwrap();
    // exec: the shell's parent is the supervisor.
    let env = f.ok(
        "shell_run",
        &json!({"command": "exec python3 reach.py"}).to_string(),
    );
    let t = text(&env);
    for what in ["mem", "fd/0"] {
        assert!(t.contains(&format!("{what} refused")), "{what}:\n{t}");
    }
    assert!(
        t.contains("getfd -1 "),
        "pidfd_getfd on the supervisor:\n{t}"
    );
}

#[test]
fn ptrace_inside_a_task_is_refused_and_the_task_goes_on() {
    if common::skip_without_kernel_gate("ptrace_inside_a_task_is_refused_and_the_task_goes_on") {
        return;
    }
    let f = fixture("required");
    let script = "import ctypes\n\
                  libc = ctypes.CDLL(None, use_errno=True)\n\
                  print('traceme', libc.ptrace(0, 0, 0, 0), ctypes.get_errno())\n";
    std::fs::write(f.ws.join("traceme.py"), script).unwrap();
    let env = f.ok(
        "shell_run",
        &json!({"command": "python3 traceme.py; echo after"}).to_string(),
    );
    let t = text(&env);
    assert!(
        t.contains("traceme -1 1\n"),
        "PTRACE_TRACEME is EPERM:\n{t}"
    );
    assert!(t.contains("after"), "{t}");
}

#[test]
fn detached_and_double_forked_processes_stay_gated() {
    if common::skip_without_kernel_gate("detached_and_double_forked_processes_stay_gated") {
        return;
    }
    let f = fixture("required");
    let (_, env) = f.call(
        "shell_run",
        &json!({"command": "sh -c '(setsid sh -c \"touch made-double\" &) ; sleep 0.5'; \
                            nohup sh -c 'touch made-nohup' >/dev/null 2>&1 & sleep 0.5; echo end"})
        .to_string(),
    );
    let t = text(&env);
    assert!(made(&f).is_empty(), "{:?}\n{t}", made(&f));
    // dash tries each PATH directory in turn, so one command can be refused more than once.
    let denied: Vec<String> = env["data"]["denials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["chain"].as_array().unwrap().last().unwrap().to_string())
        .collect();
    assert!(
        denied.iter().any(|c| c.contains("made-double")),
        "{denied:?}"
    );
    assert!(
        denied.iter().any(|c| c.contains("made-nohup")),
        "{denied:?}"
    );
}

#[test]
fn exec_and_fork_storms_finish_with_every_exec_decided() {
    if common::skip_without_kernel_gate("exec_and_fork_storms_finish_with_every_exec_decided") {
        return;
    }
    let f = fixture("required");
    // `true` by its path on PATH (no /bin/true in a Nix build sandbox or on NixOS).
    let truth = common::system_program("true");
    let truth = truth.display();
    let env = f.ok(
        "shell_run",
        &json!({"command": format!("seq 200 | xargs -P4 -n1 {truth} && \
                            for i in {{1..200}}; do {truth} & done; wait; echo storm-done"),
                "yield_time_ms": 50000})
        .to_string(),
    );
    assert!(text(&env).contains("storm-done"), "{}", text(&env));
    let audit = std::fs::read_to_string(f.root.join("audit.jsonl")).unwrap();
    let program = format!("\"program\":{}", json!(truth.to_string()));
    let trues = audit.lines().filter(|l| l.contains(&program)).count();
    assert_eq!(trues, 400, "every exec of true is in the audit log once");
}

/// `whalebox __supervise` run directly, gating `sh -c COMMAND` against `socket`.
fn supervise(
    f: &Fixture,
    socket: &Path,
    command: &str,
    timeout_ms: u64,
) -> (std::process::Output, Duration) {
    let sh = common::system_program("sh");
    let start = Instant::now();
    let out = Command::new(common::bin())
        .args([
            "__supervise",
            &std::process::id().to_string(),
            "--exec-gate",
        ])
        .arg(socket)
        .arg("--")
        .arg(&sh)
        .args(["-c", command])
        .current_dir(&f.ws)
        .env("TMPDIR", &f.root)
        .env("WHALEBOX_GATE_TIMEOUT_MS", timeout_ms.to_string())
        .output()
        .unwrap();
    (out, start.elapsed())
}

#[test]
fn a_decision_server_that_never_answers_is_a_denial_not_a_hang() {
    if common::skip_without_kernel_gate(
        "a_decision_server_that_never_answers_is_a_denial_not_a_hang",
    ) {
        return;
    }
    let f = Fixture::new();
    let socket = f.root.join("silent.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    // Accept and keep every connection open without a word.
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        for conn in listener.incoming() {
            kept.push(conn);
        }
    });
    let (out, took) = supervise(&f, &socket, "touch made-silent; echo rc=$?", 500);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(made(&f).is_empty());
    assert!(
        stdout.contains("rc=126") || stdout.contains("rc=1"),
        "{stdout}\n{stderr}"
    );
    assert!(
        stderr.contains("no answer from the decision server"),
        "{stderr}"
    );
    assert!(took < Duration::from_secs(20), "it took {took:?}");
}

#[test]
fn a_decision_server_that_hangs_up_denies_every_exec() {
    if common::skip_without_kernel_gate("a_decision_server_that_hangs_up_denies_every_exec") {
        return;
    }
    let f = Fixture::new();
    let socket = f.root.join("rude.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            drop(conn);
        }
    });
    let truth = common::system_program("true");
    let (out, _) = supervise(
        &f,
        &socket,
        &format!(
            "touch made-rude; {} && echo ran-true; echo end",
            truth.display()
        ),
        5000,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(made(&f).is_empty());
    assert!(!stdout.contains("ran-true"), "{stdout}");
    assert!(stdout.contains("end"), "the shell itself goes on: {stdout}");
    assert!(stderr.contains("whalebox: denied"), "{stderr}");
}

#[test]
fn without_ptrace_required_refuses_and_best_effort_says_what_is_not_covered() {
    let f = fixture("required");
    let Some(no_ptrace) = compile("no_ptrace", &f.root) else {
        return;
    };
    let run = |f: &Fixture, args: &[&str]| {
        let mut argv: Vec<String> = vec![common::bin().into()];
        argv.extend(args.iter().map(|a| a.to_string()));
        Command::new(&no_ptrace)
            .args(&argv)
            .current_dir(&f.ws)
            .env("HOME", &f.home)
            .env_remove("WHALEBOX_PROFILE")
            .env_remove("WHALEBOX_POLICY")
            .output()
            .unwrap()
    };
    let profile = f.profile.clone().unwrap();
    let p = profile.to_str().unwrap();
    let args = json!({"command": "bash -c 'touch made-np'"}).to_string();
    let out = run(&f, &["call", "shell_run", "--profile", p, "--args", &args]);
    let env = common::envelope(&out);
    assert_eq!(env["code"], "unsupported", "{env}");
    assert!(text(&env).contains("ptrace is refused"), "{}", text(&env));
    assert!(made(&f).is_empty());

    let out = run(&f, &["doctor", "--profile", p]);
    let doctor = String::from_utf8_lossy(&out.stdout);
    assert!(
        doctor.contains("the kernel gate cannot run here"),
        "{doctor}"
    );

    let best = f.root.join("best.toml");
    std::fs::write(
        &best,
        std::fs::read_to_string(&profile)
            .unwrap()
            .replace("required", "best-effort"),
    )
    .unwrap();
    let out = run(
        &f,
        &[
            "call",
            "shell_run",
            "--profile",
            best.to_str().unwrap(),
            "--args",
            &args,
        ],
    );
    let env = common::envelope(&out);
    assert_eq!(env["data"]["exec_boundary"]["kernel"], false, "{env}");
    assert!(
        env["data"]["exec_boundary"]["not_covered"]
            .as_str()
            .unwrap()
            .contains("sh -c"),
        "{env}"
    );
    assert!(
        text(&env).contains("only the gated zsh's own execs are decided"),
        "{}",
        text(&env)
    );
}
