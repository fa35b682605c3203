//! The exec boundary with the real gated zsh (built by nix/zsh/build.sh, which tests/run
//! runs): a battery of ways to run a denied program, each of which must be denied with
//! the file never created, while allowed programs keep their output and exit codes.

mod common;

use std::path::Path;

use common::{Fixture, text};
use serde_json::json;

fn fixture() -> Fixture {
    let f = Fixture::new();
    std::fs::write(
        f.root.join("policy.toml"),
        r#"version = 1
default = "allow"

[[rule]]
pattern = ["touch"]
decision = "deny"
justification = "tests deny touch"
match = ["touch x", "/usr/bin/touch x"]
"#,
    )
    .unwrap();
    f.with_profile(&format!(
        "policy = \"policy.toml\"\n[shell]\nexec_boundary = \"{}\"\nzsh = \"{}\"\naudit_log = \"audit.jsonl\"\n",
        common::exec_boundary_mode(),
        common::gated_zsh().display()
    ))
}

#[test]
fn every_way_to_run_a_denied_program_is_denied() {
    let f = fixture();
    let zsh = common::gated_zsh();
    let zsh_dir = zsh.parent().unwrap().display().to_string();
    std::fs::write(f.ws.join("noshebang.sh"), "touch made-by-noshebang\n").unwrap();
    std::fs::write(
        f.ws.join("envzsh.sh"),
        format!(
            "#!{} zsh\ntouch made-by-envzsh\n",
            common::system_program("env").display()
        ),
    )
    .unwrap();
    for s in ["noshebang.sh", "envzsh.sh"] {
        let p = f.ws.join(s);
        let mut perm = std::fs::metadata(&p).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
        std::fs::set_permissions(&p, perm).unwrap();
    }
    let z = zsh.display();
    let touch = common::system_program("touch");
    let touch = touch.display();
    let battery: Vec<(&str, String)> = vec![
        ("direct", "touch made-direct".into()),
        ("absolute", format!("{touch} made-absolute")),
        ("copy", format!("cp {touch} ./touch && ./touch made-copy")),
        ("exec", "exec touch made-exec".into()),
        ("command", "command touch made-command".into()),
        ("builtin", "builtin command touch made-builtin".into()),
        ("substitution", "echo $(touch made-subst)".into()),
        ("backquotes", "echo `touch made-backq`".into()),
        ("process substitution", "cat <(touch made-procsubst)".into()),
        ("pipeline", "true | touch made-pipe | cat".into()),
        ("subshell", "( touch made-subshell )".into()),
        ("eval", "eval 'touch made-eval'".into()),
        ("function", "ls() { touch made-function }; ls".into()),
        ("alias", "alias ls='touch made-alias'; eval ls".into()),
        (
            "unset",
            "unset WHALEBOX_GATE WHALEBOX_GATE_SOCKET; touch made-unset".into(),
        ),
        (
            "export",
            "export WHALEBOX_GATE=/bin/true; touch made-export".into(),
        ),
        (
            "typeset",
            "typeset +x WHALEBOX_GATE_SOCKET; typeset WHALEBOX_GATE_SOCKET=/x; touch made-typeset"
                .into(),
        ),
        ("exec -c", "exec -c touch made-exec-c".into()),
        (
            "env -u",
            "env -u WHALEBOX_GATE_SOCKET touch made-env-u".into(),
        ),
        ("env -i", format!("env -i {touch} made-env-i")),
        ("env", "env touch made-env".into()),
        ("nested zsh", format!("{z} -fc 'touch made-nested'")),
        ("#!/usr/bin/env zsh", "./envzsh.sh".into()),
        ("no shebang", "./noshebang.sh".into()),
        ("xargs", "echo made-xargs | xargs touch".into()),
        ("nice", "nice touch made-nice".into()),
        ("timeout", "timeout 5 touch made-timeout".into()),
    ];
    let path = format!(
        "{zsh_dir}:{}",
        std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into())
    );
    for (name, command) in &battery {
        let (_, env) = f.call(
            "shell_run",
            &json!({"command": command, "env": {"PATH": path}}).to_string(),
        );
        let t = text(&env);
        // A refused exec makes the result `denied_by_policy`, naming the rule; a shell
        // that refuses to drop its variables runs nothing it should not, and says so.
        if env["code"] == "denied_by_policy" {
            assert!(
                (t.contains("policy.toml:") && t.contains("tests deny touch"))
                    || t.contains("built-in boundary rule"),
                "{name}: {t}"
            );
            assert_eq!(
                env["data"]["denials"][0]["rules"][0]["decision"], "deny",
                "{name}"
            );
        } else {
            assert_eq!(env["code"], "ok", "{name}: {t}");
        }
        assert_eq!(env["data"]["exec_boundary"]["gated"], true, "{name}: {t}");
        let made: Vec<String> = std::fs::read_dir(&f.ws)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("made"))
            .collect();
        assert!(
            made.is_empty(),
            "{name}: `{command}` created {made:?}:\n{t}"
        );
        assert!(
            t.contains("whalebox: denied") || t.contains("read-only variable"),
            "{name}: no denial reported:\n{t}"
        );
    }
    let audit = std::fs::read_to_string(f.root.join("audit.jsonl")).unwrap();
    assert!(audit.lines().count() >= battery.len());
    let first: serde_json::Value = serde_json::from_str(audit.lines().next().unwrap()).unwrap();
    assert_eq!(first["decision"], "deny");
    assert_eq!(first["program"], touch.to_string());
    assert!(
        first["task_id"]
            .as_str()
            .is_some_and(|t| t.starts_with('t')),
        "{first}"
    );
    assert_eq!(first["matched"][0]["justification"], "tests deny touch");
}

#[test]
fn refused_modules_and_readonly_variables() {
    let f = fixture();
    for (command, needle) in [
        (
            "zmodload zsh/system",
            "disabled by the whalebox exec boundary",
        ),
        (
            "zmodload zsh/files",
            "disabled by the whalebox exec boundary",
        ),
        (
            "zmodload zsh/net/tcp",
            "disabled by the whalebox exec boundary",
        ),
        (
            "zmodload zsh/zpty",
            "disabled by the whalebox exec boundary",
        ),
        ("unset WHALEBOX_GATE", "read-only variable"),
        // An alias for a refused module, and an autoloaded builtin of one.
        (
            "zmodload -A sysalias=zsh/system; zmodload sysalias",
            "zsh/system is disabled by the whalebox exec boundary",
        ),
        (
            "zmodload -a zsh/files mv; echo x > a; mv a b",
            "zsh/files is disabled by the whalebox exec boundary",
        ),
    ] {
        let env = f.ok("shell_run", &json!({"command": command}).to_string());
        assert!(text(&env).contains(needle), "{command}: {}", text(&env));
    }
}

#[test]
fn allowed_programs_keep_their_output_and_exit_codes() {
    let f = fixture();
    let echo = common::system_program("echo");
    let env = f.ok(
        "shell_run",
        &json!({"command": format!("echo hi; ls -d .; printf 'a\\nb\\n' | wc -l; false; echo rc=$?; {} ${{(l:100000::x:)}} ${{(l:100000::x:)}} ${{(l:100000::x:)}} | wc -c; sh -c 'exit 7'", echo.display())})
            .to_string(),
    );
    assert_eq!(env["data"]["exit_code"], 7);
    assert_eq!(env["data"]["denials_total"], 0);
    let t = text(&env);
    // A 300 kB argv is judged like any other (well within ARG_MAX).
    assert!(t.starts_with("hi\n.\n2\nrc=1\n300003\n"), "{t}");
}

#[test]
fn whalebox_gate_asks_the_same_server_for_execs_that_are_not_zsh() {
    let f = fixture();
    let (echo, touch) = (
        common::system_program("echo"),
        common::system_program("touch"),
    );
    let env = f.err(
        "shell_run",
        &json!({"command": format!("\"$WHALEBOX_GATE\" --whalebox-gate '' {} echo via-gate; \
            \"$WHALEBOX_GATE\" --whalebox-gate '' {} touch made-via-gate; echo gate=$?",
            echo.display(), touch.display())})
        .to_string(),
        "denied_by_policy",
    );
    let t = text(&env);
    assert!(t.starts_with("via-gate\n"), "{t}");
    assert!(
        t.contains(&format!("denied {}", touch.display())) && t.contains("gate=126"),
        "{t}"
    );
    assert_eq!(env["data"]["exit_code"], 0);
    assert_eq!(env["data"]["denials_total"], 1);
    assert_eq!(
        env["data"]["denials"][0]["argv"],
        json!(["touch", "made-via-gate"])
    );
    assert!(!f.ws.join("made-via-gate").exists());
}

#[test]
fn the_gate_without_a_server_denies_in_zsh_and_as_a_program() {
    let zsh = common::gated_zsh();
    let gate = Path::new(common::bin()).with_file_name("whalebox-gate");
    let echo = common::system_program("echo");
    let echo = echo.to_str().unwrap();
    let out = std::process::Command::new(&zsh)
        .args(["-fc", &format!("echo before; {echo} never; echo after $?")])
        .env("WHALEBOX_GATE", &gate)
        .env("WHALEBOX_GATE_SOCKET", "/nonexistent/gate.sock")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stdout, "before\nafter 126\n");
    assert!(
        stderr.contains(&format!("whalebox: denied {echo}: no decision server")),
        "{stderr}"
    );
    // The gate as a program, for exec points that are not zsh: the same fail-closed answer.
    let out = std::process::Command::new(&gate)
        .args(["--whalebox-gate", "", echo, "echo", "never"])
        .env("WHALEBOX_GATE_SOCKET", "/nonexistent/gate.sock")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(126));
    assert!(out.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains(&format!("denied {echo}: no decision server")),
        "{out:?}"
    );
    // Without the variables the patched zsh is a plain zsh.
    let out = std::process::Command::new(&zsh)
        .args(["-fc", &format!("{echo} plain")])
        .env_remove("WHALEBOX_GATE")
        .env_remove("WHALEBOX_GATE_SOCKET")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "plain\n");
}

#[test]
fn a_policy_whose_examples_fail_stops_startup() {
    let f = Fixture::new();
    std::fs::write(
        f.root.join("bad.toml"),
        "version = 1\n[[rule]]\npattern = [\"git\", \"status\"]\ndecision = \"allow\"\nmatch = [\"git log\"]\n",
    )
    .unwrap();
    let f = f.with_profile("policy = \"bad.toml\"\n");
    let out = f
        .command(&[
            "call",
            "shell_run",
            "--args",
            "{\"command\":\"true\"}",
            "--profile",
            f.profile.as_ref().unwrap().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let code = common::code(&out);
    assert_eq!(code, 2);
    let out = f
        .command(&[
            "serve",
            "--profile",
            f.profile.as_ref().unwrap().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(common::code(&out), 2);
    assert!(
        stderr.contains("bad.toml:3") && stderr.contains("git log"),
        "{stderr}"
    );
}

#[test]
fn required_without_a_gated_zsh_refuses_clearly() {
    let f = Fixture::new().with_profile(&format!(
        "[shell]\nexec_boundary = \"required\"\nzsh = \"{}\"\n",
        common::system_program("bash").display()
    ));
    let env = f.err(
        "shell_run",
        &json!({"command": "true"}).to_string(),
        "unsupported",
    );
    assert!(text(&env).contains("not the gated zsh"), "{}", text(&env));
}

#[test]
fn the_policy_cli_checks_files_and_explains_decisions() {
    let f = Fixture::new();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dev = repo.join("policies/dev.toml");
    // Every shipped policy loads and its examples hold.
    let mut shipped: Vec<String> = std::fs::read_dir(repo.join("policies"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| p.display().to_string())
        .collect();
    shipped.sort();
    assert!(shipped.len() >= 3, "{shipped:?}");
    let mut args = vec!["policy", "test"];
    args.extend(shipped.iter().map(String::as_str));
    let out = f.command(&args).output().unwrap();
    assert_eq!(
        common::code(&out),
        0,
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = f
        .command(&[
            "policy",
            "check",
            "--policy",
            dev.to_str().unwrap(),
            "--",
            "env",
            "sudo",
            "git",
            "status",
        ])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["decision"], "deny", "{report:#}");
    assert!(
        report["reason"].as_str().unwrap().contains("org.toml:6"),
        "{report:#}"
    );
    assert!(
        report["matched"].as_array().unwrap().len() >= 2,
        "every matching rule is reported"
    );
    let bad = f.root.join("bad.toml");
    std::fs::write(&bad, "version = 1\n[[rule]]\npattern = [\"ls\"]\ndecision = \"allow\"\nnot_match = [\"ls -l\"]\n").unwrap();
    let out = f
        .command(&["policy", "test", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(common::code(&out), 1);
    assert!(String::from_utf8_lossy(&out.stdout).contains("bad.toml:3"));
}
