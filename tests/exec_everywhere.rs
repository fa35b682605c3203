//! The kernel exec gate (seccomp user notification or ptrace, run by each task's supervisor): every execve
//! and execveat by any process of a task is decided by the same policy as the gated
//! zsh's own execs, whoever makes it: bash, sh, dash, python, perl, node, make, git
//! hooks, npm scripts, find -exec, xargs, setsid daemons, a `#!` interpreter. A denied
//! program never runs (the caller gets EACCES; an exec only caught once its image was
//! loaded is killed), the task's result names it with the chain of programs that led
//! there, allowed programs keep their output and exit codes, and each exec is decided
//! once.
//!
//! Programs other than the gated zsh are found on PATH under the system roots
//! (`common::system_program`); a case whose program this machine lacks (node, npm, perl,
//! dash, setsid, a C compiler) is skipped, saying so on stderr.

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Fixture, text};
use serde_json::{Value, json};

/// Allows everything but `touch`.
const DENY_TOUCH: &str = r#"version = 1
default = "allow"

[[rule]]
pattern = ["touch"]
decision = "deny"
justification = "tests deny touch"
match = ["touch x", "/usr/bin/touch x"]
"#;

fn profile(policy: &str) -> String {
    profile_with(policy, "auto")
}

/// The profile with the kernel gate's `method` (auto, notify or ptrace).
fn profile_with(policy: &str, method: &str) -> String {
    format!(
        "policy = \"{policy}\"\n[shell]\nexec_boundary = \"required\"\nexec_gate = \"{method}\"\nzsh = \"{}\"\naudit_log = \"audit.jsonl\"\n",
        common::gated_zsh().display()
    )
}

/// The touch-denying policy, the kernel gate required, an audit log.
fn fixture() -> Fixture {
    fixture_with("auto")
}

/// The same under the kernel gate's `method`.
fn fixture_with(method: &str) -> Fixture {
    let f = Fixture::new();
    std::fs::write(f.root.join("policy.toml"), DENY_TOUCH).unwrap();
    f.with_profile(&profile_with("policy.toml", method))
}

/// Both methods of the kernel gate: each must keep every promise.
const METHODS: [&str; 2] = ["notify", "ptrace"];

/// Extra variables for one command.
type Vars = Vec<(&'static str, String)>;

/// A case: its name, the programs it needs, the command line, extra variables.
type Case<'a> = (&'static str, Vec<&'static str>, String, &'a Vars);

fn test_path() -> String {
    std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into())
}

/// shell_run `command` in a pipe (stdout and stderr in one stream), with the tests' PATH
/// and `extra` variables; the envelope.
fn run(f: &Fixture, command: &str, extra: &[(&str, String)]) -> Value {
    let mut env = BTreeMap::new();
    env.insert("PATH".to_string(), test_path());
    for (k, v) in extra {
        env.insert(k.to_string(), v.clone());
    }
    let (_, envelope) = f.call(
        "shell_run",
        &json!({"command": command, "mode": "pipe", "yield_time_ms": 50000, "env": env})
            .to_string(),
    );
    envelope
}

/// The programs the tests name, by absolute path, from PATH under the system roots.
struct Programs(BTreeMap<&'static str, String>);

impl Programs {
    fn find(names: &[&'static str]) -> Programs {
        Programs(
            names
                .iter()
                .filter_map(|n| {
                    common::find_system_program(n).map(|p| (*n, p.display().to_string()))
                })
                .collect(),
        )
    }

    /// The path of `name`; a placeholder when it is missing (the case is then skipped
    /// before its command would run).
    fn get(&self, name: &str) -> String {
        self.0
            .get(name)
            .cloned()
            .unwrap_or_else(|| format!("/missing/{name}"))
    }

    /// The first of `needs` this machine lacks.
    fn missing(&self, needs: &[&str]) -> Option<String> {
        needs
            .iter()
            .find(|n| !self.0.contains_key(*n))
            .map(|n| n.to_string())
    }
}

/// Any program on PATH (for what the test itself runs, such as the C compiler).
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn write_executable(path: &Path, content: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, content).unwrap();
    let mut perm = std::fs::metadata(path).unwrap().permissions();
    perm.set_mode(0o755);
    std::fs::set_permissions(path, perm).unwrap();
}

/// Files whose name starts with `made`, anywhere under `dir` (hooks, `make -C` and npm
/// scripts run in subdirectories).
fn made_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                stack.push(path);
            } else if e.file_name().to_string_lossy().starts_with("made") {
                found.push(path);
            }
        }
    }
    found
}

fn audit(f: &Fixture) -> Vec<Value> {
    std::fs::read_to_string(f.root.join("audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("audit line {l}: {e}")))
        .collect()
}

fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

fn denials(env: &Value) -> Vec<Value> {
    env["data"]["denials"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The last element of a denial's chain (the refused command line), if it has a chain.
fn chain_end(d: &Value) -> Option<&str> {
    d["chain"].as_array()?.last()?.as_str()
}

/// What is wrong with the result of a command whose `touch` the kernel gate must refuse
/// (empty: nothing). Checks the result code, the denial record with its chain, the
/// `whalebox: denied` line and the caller's EACCES.
fn denied_touch_problems(env: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let t = env["text"].as_str().unwrap_or("");
    if env["code"] != "denied_by_policy" {
        problems.push(format!("code is {}, not denied_by_policy", env["code"]));
    }
    if env["ok"] != false {
        problems.push("ok is not false".into());
    }
    if env["data"]["exec_boundary"]["gated"] != true {
        problems.push("data.exec_boundary.gated is not true".into());
    }
    if env["data"]["exec_boundary"]["kernel"] != true {
        problems.push("data.exec_boundary.kernel is not true".into());
    }
    let all = denials(env);
    let touch = all
        .iter()
        .find(|d| chain_end(d).is_some_and(|c| c.starts_with("touch")));
    match touch {
        None => problems.push(format!(
            "no denial whose chain ends with `touch …`: {}",
            Value::Array(all.clone())
        )),
        Some(d) => {
            if !d["program"].as_str().is_some_and(|p| p.contains('/')) {
                problems.push(format!("denial program is not a path: {d}"));
            }
            if !d["argv"].is_array() {
                problems.push(format!("denial argv is not an array: {d}"));
            }
            if !d["reason"].is_string() {
                problems.push(format!("denial has no reason: {d}"));
            }
            if d["approval_needed"] != false {
                problems.push(format!("approval_needed is not false for a deny rule: {d}"));
            }
            // No thread races these execs: the gate refuses at the call (EACCES).
            if d["killed"] != false {
                problems.push(format!("killed is not false: {d}"));
            }
            let chain = d["chain"].as_array().unwrap();
            if !chain.iter().all(Value::is_string) {
                problems.push(format!("chain is not strings: {d}"));
            }
            if !d["rules"].as_array().is_some_and(|r| {
                r.iter()
                    .any(|m| m["decision"] == "deny" && m["justification"] == "tests deny touch")
            }) {
                problems.push(format!("the denial does not name the deny rule: {d}"));
            }
        }
    }
    if !t.lines().any(|l| {
        l.starts_with("whalebox: denied")
            && l.contains("touch")
            && (l.contains("tests deny touch") || l.contains("policy.toml"))
    }) {
        problems.push("no `whalebox: denied` line naming touch and the rule".into());
    }
    // The caller's own report of the failed exec (not the gate's line).
    if !t.lines().any(|l| {
        !l.starts_with("whalebox:")
            && (l.to_lowercase().contains("permission denied") || l.contains("EACCES"))
    }) {
        problems.push("the caller did not report EACCES (Permission denied)".into());
    }
    problems
}

#[test]
fn every_program_of_a_task_is_gated_not_only_zsh() {
    if common::skip_without_kernel_gate("every_program_of_a_task_is_gated_not_only_zsh") {
        return;
    }
    for method in METHODS {
        battery_denies_touch_every_way(method);
    }
}

fn battery_denies_touch_every_way(method: &str) {
    let f = fixture_with(method);
    let p = Programs::find(&[
        "sh", "bash", "dash", "python3", "perl", "node", "npm", "make", "git", "find", "xargs",
        "setsid", "touch",
    ]);
    let touch = p.get("touch");
    let py = p.get("python3");

    // A Makefile recipe, a git pre-commit hook, an npm script, two scripts.
    f.write("mk-touch/Makefile", "all:\n\ttouch made-make\n");
    if let Some(git) = p.0.get("git") {
        let repo = f.ws.join("hookrepo");
        std::fs::create_dir_all(&repo).unwrap();
        let st = Command::new(git)
            .args(["init", "-q"])
            .current_dir(&repo)
            .status()
            .unwrap();
        assert!(st.success());
        write_executable(
            &repo.join(".git/hooks/pre-commit"),
            &format!("#!{}\ntouch made-hook\n", p.get("sh")),
        );
    }
    f.write(
        "npmproj/package.json",
        r#"{"name": "x", "version": "1.0.0", "private": true, "scripts": {"x": "touch made-npm"}}"#,
    );
    std::fs::create_dir_all(f.ws.join("npmhome")).unwrap();
    // The interpreter itself is the denied program: running the script must not run it.
    write_executable(&f.ws.join("interp.sh"), &format!("#!{touch} made-interp\n"));
    // No #!: bash runs it itself after ENOEXEC.
    write_executable(&f.ws.join("noshebang.sh"), "touch made-noshebang\n");

    let npm_env: Vars = vec![
        ("HOME", f.ws.join("npmhome").display().to_string()),
        (
            "npm_config_cache",
            f.ws.join("npmproj/.npm-cache").display().to_string(),
        ),
        ("npm_config_update_notifier", "false".to_string()),
        ("npm_config_fund", "false".to_string()),
        ("npm_config_audit", "false".to_string()),
        ("npm_config_offline", "true".to_string()),
    ];
    let git_env: Vars = vec![("GIT_CONFIG_NOSYSTEM", "1".to_string())];
    let none: Vars = Vec::new();

    let battery: Vec<Case> = vec![
        (
            "sh -c",
            vec!["sh"],
            format!("{} -c 'touch made-sh'", p.get("sh")),
            &none,
        ),
        (
            "bash -c",
            vec!["bash"],
            format!("{} -c 'touch made-bash'", p.get("bash")),
            &none,
        ),
        (
            "dash -c",
            vec!["dash"],
            format!("{} -c 'touch made-dash'", p.get("dash")),
            &none,
        ),
        (
            "python os.system",
            vec!["python3", "sh"],
            format!(r#"{py} -c 'import os; os.system("touch made-py-system")'"#),
            &none,
        ),
        (
            "python subprocess.run",
            vec!["python3"],
            format!(
                r#"{py} -c 'import subprocess; subprocess.run(["touch", "made-py-subprocess"])'"#
            ),
            &none,
        ),
        (
            "python os.execv",
            vec!["python3"],
            format!(r#"{py} -c 'import os; os.execv("{touch}", ["touch", "made-py-execv"])'"#),
            &none,
        ),
        (
            // glibc's fexecve is execveat(fd, "", …, AT_EMPTY_PATH).
            "python os.fexecve (execveat)",
            vec!["python3"],
            format!(
                r#"{py} -c 'import os; fd = os.open("{touch}", os.O_RDONLY); os.execve(fd, ["touch", "made-py-fexecve"], dict(os.environ))'"#
            ),
            &none,
        ),
        (
            // glibc's posix_spawn is clone(CLONE_VM | CLONE_VFORK) + execve.
            "python os.posix_spawn (vfork)",
            vec!["python3"],
            format!(
                r#"{py} -c 'import os; os.waitpid(os.posix_spawn("{touch}", ["touch", "made-py-spawn"], dict(os.environ)), 0)'"#
            ),
            &none,
        ),
        (
            "perl system",
            vec!["perl"],
            format!(
                r#"{} -e 'system("touch made-perl") == -1 and die "perl system: $!\n"'"#,
                p.get("perl")
            ),
            &none,
        ),
        (
            "node child_process.execFileSync",
            vec!["node"],
            format!(
                r#"{} -e 'require("child_process").execFileSync("touch", ["made-node"], {{stdio: "inherit"}})'"#,
                p.get("node")
            ),
            &none,
        ),
        (
            "make recipe",
            vec!["make"],
            format!("{} -C mk-touch", p.get("make")),
            &none,
        ),
        (
            "git pre-commit hook",
            vec!["git", "sh"],
            format!(
                "cd hookrepo && {} -c user.name=whalebox -c user.email=whalebox@example.invalid commit -q --allow-empty -m x",
                p.get("git")
            ),
            &git_env,
        ),
        (
            "npm run script",
            vec!["npm", "node", "sh"],
            format!("cd npmproj && {} run x", p.get("npm")),
            &npm_env,
        ),
        (
            "find -exec",
            vec!["find"],
            format!("{} . -maxdepth 0 -exec touch made-find \\;", p.get("find")),
            &none,
        ),
        (
            "xargs sh -c",
            vec!["xargs", "sh"],
            format!("echo made-xargs | {} sh -c 'touch \"$0\"'", p.get("xargs")),
            &none,
        ),
        (
            // A daemon in a session of its own (the supervisor, a subreaper, still has
            // it); the sleep lets it try before the shell ends and the task is reaped.
            "setsid daemon",
            vec!["setsid", "sh"],
            format!("{} -f sh -c 'touch made-setsid'; sleep 2", p.get("setsid")),
            &none,
        ),
        (
            "#! interpreter, run by zsh",
            vec![],
            "./interp.sh".into(),
            &none,
        ),
        (
            "#! interpreter, run by bash",
            vec!["bash"],
            format!("{} -c './interp.sh; true'", p.get("bash")),
            &none,
        ),
        (
            "script without #!, run by bash",
            vec!["bash"],
            format!("{} -c './noshebang.sh; true'", p.get("bash")),
            &none,
        ),
    ];

    let mut failures = Vec::new();
    let mut ran = 0;
    for (name, needs, command, extra) in &battery {
        if let Some(missing) = p.missing(needs) {
            eprintln!(
                "SKIPPED exec_everywhere case `{name}`: no {missing} on PATH under the system roots"
            );
            continue;
        }
        ran += 1;
        let env = run(&f, command, extra);
        let mut problems = denied_touch_problems(&env);
        if env["data"]["exec_boundary"]["method"] != method {
            problems.push(format!(
                "it ran under {} instead",
                env["data"]["exec_boundary"]["method"]
            ));
        }
        let made = made_files(&f.ws);
        if !made.is_empty() {
            problems.push(format!("the denied program ran: it created {made:?}"));
            for m in &made {
                let _ = std::fs::remove_file(m);
            }
        }
        if !problems.is_empty() {
            failures.push(format!(
                "`{name}`: `{command}`:\n  - {}\n  text:\n{}\n  data.denials: {}",
                problems.join("\n  - "),
                text(&env),
                env["data"]["denials"]
            ));
        }
    }
    assert!(ran > 0, "no case could run");
    assert!(
        failures.is_empty(),
        "{method}: {} of {ran} ways to run a denied program were not refused as they should be:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn allowed_programs_started_by_other_programs_keep_their_output_and_exit_codes() {
    if common::skip_without_kernel_gate(
        "allowed_programs_started_by_other_programs_keep_their_output_and_exit_codes",
    ) {
        return;
    }
    let f = fixture();
    let p = Programs::find(&["sh", "bash", "python3", "make", "find", "true"]);
    f.write("mk-ok/Makefile", "all:\n\t@echo from-make\n");
    let cases: Vec<(&str, Vec<&str>, String, i64, &str)> = vec![
        (
            "bash -c",
            vec!["bash"],
            format!("{} -c 'echo hi; exit 3'", p.get("bash")),
            3,
            "hi\n",
        ),
        (
            "python subprocess",
            vec!["python3"],
            format!(
                r#"{} -c 'import subprocess, sys; r = subprocess.run(["echo", "from-python"]); sys.exit(r.returncode + 4)'"#,
                p.get("python3")
            ),
            4,
            "from-python\n",
        ),
        (
            "make recipe",
            vec!["make"],
            format!("{} -s -C mk-ok", p.get("make")),
            0,
            "from-make\n",
        ),
        (
            "sh -c, a program then a builtin",
            vec!["sh", "true"],
            format!(
                "{} -c '{} && echo sh-ok; exit 5'",
                p.get("sh"),
                p.get("true")
            ),
            5,
            "sh-ok\n",
        ),
        (
            "find -exec",
            vec!["find"],
            format!(
                "{} . -maxdepth 0 -exec echo found '{{}}' \\;",
                p.get("find")
            ),
            0,
            "found .\n",
        ),
    ];
    let mut ran = 0;
    for (name, needs, command, code, output) in &cases {
        if let Some(missing) = p.missing(needs) {
            eprintln!(
                "SKIPPED exec_everywhere allowed case `{name}`: no {missing} on PATH under the system roots"
            );
            continue;
        }
        ran += 1;
        let env = run(&f, command, &[]);
        let t = text(&env);
        assert_eq!(env["ok"], true, "{name}: `{command}`: {env:#}");
        assert_eq!(env["data"]["exit_code"], *code, "{name}: `{command}`: {t}");
        assert!(t.starts_with(output), "{name}: `{command}`: {t}");
        assert_eq!(env["data"]["denials_total"], 0, "{name}: {t}");
        assert_eq!(env["data"]["exec_boundary"]["gated"], true, "{name}");
        assert_eq!(
            env["data"]["exec_boundary"]["kernel"], true,
            "{name}: the kernel gate is not on: {:#}",
            env["data"]["exec_boundary"]
        );
    }
    assert!(ran > 0, "no case could run");
}

/// One tally line of tests/exec/racer.c: `racer: n=… ran=… …`.
fn parse_tally(line: &str) -> BTreeMap<String, u64> {
    line.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| {
            (
                k.to_string(),
                v.parse().unwrap_or_else(|_| panic!("tally {line}")),
            )
        })
        .collect()
}

#[test]
fn a_thread_rewriting_the_exec_path_never_gets_the_denied_program_run() {
    if common::skip_without_kernel_gate(
        "a_thread_rewriting_the_exec_path_never_gets_the_denied_program_run",
    ) {
        return;
    }
    let Some(cc) = on_path("cc") else {
        eprintln!("SKIPPED the exec racer: no cc on PATH to compile tests/exec/racer.c");
        return;
    };
    let total: u64 = std::env::var("WHALEBOX_RACER_N")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3000);
    // The fallback method too, with fewer rounds (it is slower on a multithreaded exec).
    for (method, total) in [("notify", total), ("ptrace", total.div_ceil(3))] {
        race(&cc, method, total);
    }
}

/// `total` execs raced under the kernel gate's `method`.
fn race(cc: &Path, method: &str, total: u64) {
    let f = fixture_with(method);
    let racer = f.ws.join("racer");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/exec/racer.c");
    let out = Command::new(cc)
        .args(["-O2", "-pthread", "-o"])
        .arg(&racer)
        .arg(&source)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cc {}: {}",
        source.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let (allowed, denied) = (
        common::system_program("true"),
        common::system_program("touch"),
    );
    let marker = f.ws.join("made-by-racer");
    // Rounds of at most 1000 forks, each a task of its own, so that one round stays well
    // within a call's 50 s even on a slow machine (a multithreaded exec costs ms there).
    const ROUND: u64 = 1000;
    let mut sum: BTreeMap<String, u64> = BTreeMap::new();
    let mut denials_total = 0;
    let (mut left, mut round) = (total, 0);
    while left > 0 {
        let n = left.min(ROUND);
        left -= n;
        round += 1;
        let tally = f.ws.join(format!("racer-tally-{round}.txt"));
        let command = format!(
            "./racer {n} '{}' '{}' '{}' '{}'",
            marker.display(),
            allowed.display(),
            denied.display(),
            tally.display()
        );
        let env = run(&f, &command, &[]);
        let t = text(&env);
        let line = std::fs::read_to_string(&tally).unwrap_or_else(|e| {
            panic!(
                "round {round}: the racer left no tally ({e}); did it finish within 50 s? {}\n{}",
                env["data"],
                &t[t.len().saturating_sub(4000)..]
            )
        });
        assert_eq!(env["data"]["exit_code"], 0, "round {round}: {line}{t}");
        assert_eq!(
            env["data"]["exec_boundary"]["kernel"], true,
            "round {round}"
        );
        let counts = parse_tally(&line);
        eprintln!("exec racer ({method}) round {round}: {}", line.trim());
        assert_eq!(counts["n"], n, "{line}");
        for (k, v) in counts {
            *sum.entry(k).or_default() += v;
        }
        denials_total += env["data"]["denials_total"].as_u64().unwrap_or(0);
        for d in denials(&env) {
            assert_eq!(
                basename(d["program"].as_str().unwrap_or("")),
                "touch",
                "only touch is denied: {d}"
            );
            assert!(d["killed"].is_boolean(), "{d}");
        }
    }
    let outcomes = [
        "ran",
        "eacces",
        "eperm",
        "enoent",
        "other_errno",
        "killed",
        "hung",
        "other",
    ];
    let summed: u64 = outcomes.iter().map(|k| sum[*k]).sum();
    // The audit log's `killed` is not in the contract (denials' is): counted when present.
    let records = audit(&f);
    let audit_has_killed = records.iter().any(|r| r.get("killed").is_some());
    let killed_records = records.iter().filter(|r| r["killed"] == true).count() as u64;
    let shown = format!(
        "{total} execs raced: {}; {denials_total} denials reported, {killed_records} audit records of a kill",
        outcomes
            .iter()
            .map(|k| format!("{k} {}", sum[*k]))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let shown = format!("{method}: {shown}");
    eprintln!("exec racer: {shown}");
    assert!(
        !marker.exists(),
        "the denied program ran (the marker exists): {shown}"
    );
    assert_eq!(sum["marker_seen"], 0, "{shown}");
    assert_eq!(summed, total, "every fork is counted once: {shown}");
    assert_eq!(sum["hung"], 0, "an exec never came back: {shown}");
    assert_eq!(sum["other"], 0, "unexpected child statuses: {shown}");
    // Both sides were exercised: the allowed program ran, the denied one was refused.
    assert!(sum["ran"] > 0, "{shown}");
    let refused = sum["eacces"] + sum["eperm"] + sum["killed"];
    assert!(refused > 0, "{shown}");
    // Every refusal is a denial of the task, and every kill was the gate's.
    assert_eq!(denials_total, refused, "{shown}");
    if audit_has_killed {
        assert_eq!(killed_records, sum["killed"], "{shown}");
    } else {
        eprintln!("exec racer: the audit log has no `killed` field; kills not cross-checked");
    }
}

/// The shipped policies/dev.toml (with org.toml) says `ask` for `git push`: started by
/// npm, make or python, with nobody to answer, it is refused before git runs.
#[test]
fn git_push_from_npm_make_and_python_needs_approval_under_the_dev_policy() {
    if common::skip_without_kernel_gate(
        "git_push_from_npm_make_and_python_needs_approval_under_the_dev_policy",
    ) {
        return;
    }
    let f = Fixture::new();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for name in ["dev.toml", "org.toml"] {
        std::fs::copy(repo.join("policies").join(name), f.root.join(name)).unwrap();
    }
    // dev.toml as it ships: its rules allow what the shell runs here (npm, make, python3)
    // and what those start (env, node, sh), or its default for nested execs does; git
    // push is `ask` wherever it comes from.
    let f = f.with_profile(&profile("dev.toml"));
    let p = Programs::find(&["npm", "node", "env", "make", "python3", "git", "sh"]);
    f.write(
        "npmproj/package.json",
        r#"{"name": "x", "version": "1.0.0", "private": true, "scripts": {"push": "git push"}}"#,
    );
    std::fs::create_dir_all(f.ws.join("npmhome")).unwrap();
    f.write("mk/Makefile", "push:\n\tgit push\n");
    let trace = f.ws.join("git-trace.log");
    let common_env: Vars = vec![
        // Were git ever started, it would say so here.
        ("GIT_TRACE", trace.display().to_string()),
        ("GIT_CONFIG_NOSYSTEM", "1".to_string()),
    ];
    let mut npm_env = common_env.clone();
    npm_env.extend([
        ("HOME", f.ws.join("npmhome").display().to_string()),
        (
            "npm_config_cache",
            f.ws.join("npmproj/.npm-cache").display().to_string(),
        ),
        ("npm_config_update_notifier", "false".to_string()),
        ("npm_config_fund", "false".to_string()),
        ("npm_config_audit", "false".to_string()),
        ("npm_config_offline", "true".to_string()),
    ]);
    let cases: Vec<Case> = vec![
        (
            "npm run",
            vec!["npm", "node", "env", "git", "sh"],
            format!("cd npmproj && {} run push", p.get("npm")),
            &npm_env,
        ),
        (
            "make",
            vec!["make", "git"],
            format!("{} -C mk push", p.get("make")),
            &common_env,
        ),
        (
            "python3 subprocess",
            vec!["python3", "git"],
            format!(
                r#"{} -c 'import subprocess; subprocess.run(["git", "push"])'"#,
                p.get("python3")
            ),
            &common_env,
        ),
    ];
    let mut ran = 0;
    for (name, needs, command, extra) in &cases {
        if let Some(missing) = p.missing(needs) {
            eprintln!(
                "SKIPPED exec_everywhere dev.toml case `{name}`: no {missing} on PATH under the system roots"
            );
            continue;
        }
        ran += 1;
        let env = run(&f, command, extra);
        let t = text(&env);
        assert_eq!(
            env["code"], "approval_needed",
            "{name}: {t}\n{}",
            env["data"]
        );
        let all = denials(&env);
        let push = all
            .iter()
            .find(|d| chain_end(d).is_some_and(|c| c.starts_with("git push")))
            .unwrap_or_else(|| {
                panic!(
                    "{name}: no denial with a chain ending in `git push…`: {}\n{t}",
                    Value::Array(all.clone())
                )
            });
        assert_eq!(push["approval_needed"], true, "{name}: {push}");
        assert_eq!(
            basename(push["program"].as_str().unwrap_or("")),
            "git",
            "{name}: {push}"
        );
        assert!(
            push["rules"].as_array().is_some_and(|r| r.iter().any(|m| {
                m["decision"] == "ask"
                    && m["source"]
                        .as_str()
                        .is_some_and(|s| s.contains("dev.toml:"))
            })),
            "{name}: the denial names dev.toml's ask rule: {push}"
        );
        assert!(
            push["chain"].as_array().is_some_and(|c| c.len() >= 2),
            "{name}: the chain shows who ran git: {push}"
        );
        assert_eq!(env["data"]["exec_boundary"]["kernel"], true, "{name}");
        // The gate stopped it before git ran: git never started, so it traced nothing.
        let traced = std::fs::read_to_string(&trace).unwrap_or_default();
        assert!(!traced.contains("push"), "{name}: git push ran:\n{traced}");
    }
    assert!(ran > 0, "no case could run");
}

/// Under the kernel gate zsh does not ask first (its in-process gate would be a second
/// question about the same execve): one record per exec, by the kernel gate.
#[test]
fn an_exec_by_zsh_is_decided_once() {
    if common::skip_without_kernel_gate("an_exec_by_zsh_is_decided_once") {
        return;
    }
    let f = fixture();
    let truep = common::system_program("true");
    let env = run(&f, &format!("{0}; {0}", truep.display()), &[]);
    assert_eq!(env["ok"], true, "{env:#}");
    assert_eq!(env["data"]["exec_boundary"]["kernel"], true);
    let records = audit(&f);
    assert_eq!(
        records.len(),
        2,
        "one record per exec: {}",
        Value::Array(records.clone())
    );
    for r in &records {
        assert_eq!(r["via"], "kernel", "{r}");
        assert_eq!(r["program"], truep.display().to_string(), "{r}");
        assert_eq!(r["decision"], "allow", "{r}");
        assert!(r["chain"].as_array().is_some_and(|c| !c.is_empty()), "{r}");
    }
}

/// An exec by another program is decided by the kernel gate, also once (not once when it
/// is called and again when its image is loaded).
#[test]
fn an_exec_by_another_program_is_decided_once_by_the_kernel_gate() {
    if common::skip_without_kernel_gate(
        "an_exec_by_another_program_is_decided_once_by_the_kernel_gate",
    ) {
        return;
    }
    let f = fixture();
    let (bash, truep) = (
        common::system_program("bash"),
        common::system_program("true"),
    );
    let env = run(
        &f,
        &format!("{} -c '{1}; {1}'", bash.display(), truep.display()),
        &[],
    );
    assert_eq!(env["ok"], true, "{env:#}");
    let records = audit(&f);
    let all = Value::Array(records.clone());
    assert!(records.iter().all(|r| r["via"] == "kernel"), "{all}");
    assert_eq!(
        records[0]["program"],
        bash.display().to_string(),
        "zsh ran bash: {all}"
    );
    let by_bash = &records[1..];
    assert_eq!(by_bash.len(), 2, "bash ran true twice: {all}");
    for r in by_bash {
        assert_eq!(r["program"], truep.display().to_string(), "{r}");
        assert_eq!(r["decision"], "allow", "{r}");
        let chain = r["chain"].as_array().expect("a chain");
        assert!(
            chain.len() >= 2 && chain.last() == Some(&json!("true")),
            "the chain ends with the command, after its caller: {r}"
        );
    }
    assert_eq!(records.len(), 3, "{all}");
}
