//! The shell group through `whalebox call`: real processes, real PTYs.

mod common;

use common::{Fixture, text};
use serde_json::{Value, json};

fn run(f: &Fixture, args: Value) -> Value {
    f.ok("shell_run", &args.to_string())
}

#[test]
fn a_finished_command_answers_with_its_code_and_output() {
    let f = Fixture::new();
    let env = run(&f, json!({"command": "echo out; echo err >&2; exit 3"}));
    assert_eq!(env["data"]["exit_code"], 3);
    assert_eq!(env["data"]["status"], "exited");
    let t = text(&env);
    assert!(t.starts_with("out\nerr\n[exit 3 "), "{t}");
}

#[test]
fn a_missing_program_is_diagnosed() {
    let f = Fixture::new();
    let env = run(&f, json!({"command": "definitely-not-a-program --x"}));
    assert_eq!(env["data"]["exit_code"], 127);
    assert!(
        text(&env).contains("the program `definitely-not-a-program` was not found"),
        "{}",
        text(&env)
    );
}

#[test]
fn the_environment_is_hygienic_and_extensible() {
    let f = Fixture::new()
        .with_profile("[shell]\npass_env = [\"WB_PASSED\"]\nenv = { FROM_PROFILE = \"p\" }\n");
    let out = f
        .command(&[
            "call",
            "shell_run",
            "--args",
            &json!({"command": "env | sort", "env": {"FROM_CALL": "c"}}).to_string(),
            "--profile",
            f.profile.as_ref().unwrap().to_str().unwrap(),
            "--workspace",
            f.ws.to_str().unwrap(),
        ])
        .env("WB_PASSED", "yes")
        .env("WB_SECRET_TOKEN", "hunter2")
        .output()
        .unwrap();
    let env = common::envelope(&out);
    let t = text(&env);
    for expected in [
        "PAGER=cat",
        "GIT_PAGER=cat",
        "NO_COLOR=1",
        "TERM=dumb",
        "WB_PASSED=yes",
        "FROM_PROFILE=p",
        "FROM_CALL=c",
    ] {
        assert!(t.contains(expected), "{expected} missing: {t}");
    }
    assert!(!t.contains("hunter2"), "secrets stay out: {t}");
}

#[test]
fn cwd_is_fenced_to_the_workspace() {
    let f = Fixture::new();
    std::fs::create_dir_all(f.ws.join("sub/dir")).unwrap();
    let env = run(&f, json!({"command": "pwd", "cwd": "sub/dir"}));
    let real = f.ws.canonicalize().unwrap();
    assert!(
        text(&env).contains(&format!("{}/sub/dir\n", real.display())),
        "{}",
        text(&env)
    );
    f.err(
        "shell_run",
        &json!({"command": "pwd", "cwd": "/etc"}).to_string(),
        "path_denied",
    );
    f.err(
        "shell_run",
        &json!({"command": "pwd", "cwd": "../outside"}).to_string(),
        "path_denied",
    );
}

#[test]
fn bad_input_gets_clear_errors() {
    let f = Fixture::new();
    let cases = [
        ("shell_run", json!({"command": "   "}), "invalid_input"),
        (
            "shell_run",
            json!({"command": "true", "env": {"A=B": "x"}}),
            "invalid_input",
        ),
        (
            "shell_run",
            json!({"command": "true", "mode": "tty"}),
            "invalid_input",
        ),
        ("shell_wait", json!({"task_id": "nope"}), "task_not_found"),
        ("shell_cancel", json!({"task_id": "nope"}), "task_not_found"),
        (
            "write_stdin",
            json!({"task_id": "nope", "input": "x"}),
            "task_not_found",
        ),
    ];
    for (tool, args, code) in cases {
        f.err(tool, &args.to_string(), code);
    }
}

#[test]
fn a_pty_gives_a_terminal_and_plain_text() {
    let f = Fixture::new();
    let env = run(
        &f,
        json!({"command": "tty; echo TERM=$TERM; printf '\\033[31mred\\033[0m plain\\n'", "mode": "pty"}),
    );
    let t = text(&env);
    assert!(t.contains("/dev/pts/"), "{t}");
    assert!(t.contains("TERM=xterm-256color"), "{t}");
    assert!(t.contains("red plain"), "{t}");
    assert!(
        !t.contains('\u{1b}'),
        "no escape sequences reach the model: {t:?}"
    );
    assert_eq!(env["data"]["mode"], "pty");
    let env = run(&f, json!({"command": "tty"}));
    assert!(
        text(&env).contains("not a tty"),
        "pipes have no terminal: {}",
        text(&env)
    );
}

#[test]
fn auto_mode_gives_interpreters_a_terminal() {
    let f = Fixture::new();
    let env = run(&f, json!({"command": "python3", "background": true}));
    assert_eq!(env["data"]["mode"], "pty");
    assert!(text(&env).contains("running in a PTY"), "{}", text(&env));
}

#[test]
fn a_flood_is_bounded_and_says_so() {
    let f = Fixture::new();
    let env = run(&f, json!({"command": "yes whalebox | head -c 30000000"}));
    let t = text(&env);
    assert!(
        t.len() < 40_000,
        "the model text stays bounded: {}",
        t.len()
    );
    assert!(
        t.contains("bytes not kept") || t.contains("truncated"),
        "{}",
        &t[..300]
    );
    assert_eq!(env["data"]["output_bytes"], 30_000_000);
    assert_eq!(env["data"]["output_lines"], 3_333_333);
    assert_eq!(env["data"]["output_truncated"], true);
}

#[test]
fn a_yield_above_the_cap_is_clamped_and_said() {
    let f = Fixture::new().with_profile("[shell]\nmax_yield_ms = 1000\n");
    let env = run(&f, json!({"command": "true", "yield_time_ms": 60000}));
    assert!(text(&env).contains("clamped to 1000"), "{}", text(&env));
}

#[test]
fn a_one_shot_call_leaves_no_process_behind() {
    let f = Fixture::new();
    let marker = format!("sleep 31{}", std::process::id() % 1000);
    let env = run(
        &f,
        json!({"command": format!("{marker} & setsid {marker} & {marker}"), "yield_time_ms": 300}),
    );
    assert!(
        text(&env).contains("is stopped when the call returns"),
        "{}",
        text(&env)
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    let left = common::processes_running(&marker);
    assert!(left.is_empty(), "{marker} survived: {left:?}");
}

/// A pipe task's supervisor is forked from the server's zygote, not exec'd (its command
/// line names the server's pid); the server itself is out of the task's sight (the
/// session's PID namespace: the supervisor's parent is outside it); the zygote goes with
/// the server.
#[test]
fn a_pipe_tasks_supervisor_comes_from_the_zygote_as_the_servers_child() {
    let f = Fixture::new();
    // The shell's parent is the supervisor.
    let env = run(
        &f,
        json!({"command": "sup=$PPID; echo parent=$(awk '/^PPid:/ {print $2}' /proc/$sup/status); \
                           echo supervisor=$(tr '\\0' ' ' < /proc/$sup/cmdline); \
                           server=$(tr '\\0' ' ' < /proc/$sup/cmdline | awk '{print $3}'); \
                           echo zygote-server=$server; test -e /proc/$server/cmdline && echo server-seen"}),
    );
    let t = text(&env);
    assert!(t.contains("supervisor=") && t.contains("__zygote "), "{t}");
    if common::pid_namespaces() {
        assert!(t.contains("parent=0"), "{t}");
        assert!(!t.contains("server-seen"), "{t}");
    }
    let server: String = t
        .lines()
        .find_map(|l| l.strip_prefix("zygote-server="))
        .unwrap()
        .trim()
        .to_string();
    assert!(server.parse::<u32>().is_ok(), "{t}");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let left = common::processes_running(&format!("{} __zygote {server}", common::bin()));
    assert!(left.is_empty(), "the zygote outlived its server: {left:?}");
}

#[test]
fn the_read_only_verdict_is_in_the_data() {
    let f = Fixture::new();
    let env = run(&f, json!({"command": "ls"}));
    assert_eq!(env["data"]["read_only"]["verdict"], "yes");
    let env = run(&f, json!({"command": "touch made-by-test"}));
    assert_eq!(env["data"]["read_only"]["verdict"], "cannot_tell");
    assert!(f.ws.join("made-by-test").exists());
}

#[test]
fn profile_shell_keys_are_checked() {
    let f = Fixture::new().with_profile("[shell]\nmax_tasks = 0\n");
    let out = f
        .command(&[
            "profile",
            "check",
            f.profile.as_ref().unwrap().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(common::code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("max_tasks"));
}
