//! The command line itself: exit codes, bad arguments, profiles, `tools`, `profile check`.

mod common;

use common::{Fixture, code, envelope, text};

#[test]
fn malformed_json_args_are_invalid_input_with_exit_2() {
    let f = Fixture::new();
    let (code, env) = f.call("read_file", "{\"file_path\": ");
    assert_eq!(code, 2);
    assert_eq!(env["code"], "invalid_input");
    let t = text(&env);
    assert!(t.contains("--args is not valid JSON"), "{t}");
    assert!(
        t.contains(r#"{"file_path":"…"}"#),
        "shows the shape to send: {t}"
    );
}

#[test]
fn unknown_tool_names_the_closest_and_exits_1() {
    let f = Fixture::new();
    let env = f.err("read_fiel", "{}", "unknown_tool");
    assert!(
        text(&env).contains("did you mean `read_file`?"),
        "{}",
        text(&env)
    );
    let env = f.err("Glob", "{}", "unknown_tool");
    assert_eq!(env["data"]["suggestions"][0], "search_files");
}

#[test]
fn wrong_types_and_unknown_fields_get_schema_hints() {
    let f = Fixture::new();
    f.write("a.txt", "a\n");
    let env = f.err(
        "read_file",
        r#"{"file_path": "a.txt", "limit": "ten"}"#,
        "invalid_input",
    );
    assert!(
        text(&env).contains("`limit` must be an integer, got a string"),
        "{}",
        text(&env)
    );
    let env = f.err("list_dir", r#"{"recursive": true}"#, "invalid_input");
    assert!(
        text(&env).contains("list_dir takes `depth`"),
        "{}",
        text(&env)
    );
    let env = f.err(
        "grep",
        r#"{"pattern": "a", "output_mode": "lines"}"#,
        "invalid_input",
    );
    assert!(text(&env).contains("must be one of"), "{}", text(&env));
    let env = f.err("grep", r#"{"patern": "a"}"#, "invalid_input");
    assert!(
        text(&env).contains("did you mean `pattern`?"),
        "{}",
        text(&env)
    );
}

#[test]
fn repairs_are_applied_and_reported_in_the_envelope() {
    let f = Fixture::new();
    f.write("README.md", "# whalebox\nline two\n");
    let env = f.ok(
        "read_file",
        r#"{"file_path": "[README.md](http://README.md)", "limit": "1", "offset": null, "description": "peek"}"#,
    );
    assert_eq!(
        text(&env),
        "     1\t# whalebox\n… limit reached: showed lines 1–1 (2 lines in all); continue with offset=2\n"
    );
    let kinds: Vec<&str> = env["repairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        vec![
            "markdown_autolink_path",
            "semantic_boolean_string",
            "null_optional_omitted"
        ]
    );
    let env = f.ok("grep", r#"{"pattern": "two", "case_insensitive": "true"}"#);
    assert_eq!(env["repairs"][0]["kind"], "semantic_boolean_string");
    let env = f.ok("read_file", r#""{\"file_path\": \"README.md\"}""#);
    assert_eq!(env["repairs"][0]["kind"], "stringified_arguments");
}

#[test]
fn args_file_and_stdin() {
    let f = Fixture::new();
    f.write("a.txt", "hello\n");
    let args = f.root.join("args.json");
    std::fs::write(&args, r#"{"file_path": "a.txt"}"#).unwrap();
    let ws = f.ws.to_str().unwrap();
    let out = f
        .command(&[
            "call",
            "read_file",
            "--args-file",
            args.to_str().unwrap(),
            "--workspace",
            ws,
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0);
    assert_eq!(text(&envelope(&out)), "     1\thello\n");

    use std::io::Write;
    let mut child = f
        .command(&["call", "read_file", "--args-file", "-", "--workspace", ws])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"file_path": "a.txt"}"#)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 0);
}

#[test]
fn profile_typo_is_exit_2_with_file_line_column_and_valid_keys() {
    let f = Fixture::new().with_profile("tools = [\"files\"]\n\n[output]\nmax_chrs = 100\n");
    let (code, _) = {
        let out = f
            .command(&[
                "call",
                "list_dir",
                "--profile",
                f.profile.as_ref().unwrap().to_str().unwrap(),
            ])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            stderr.contains("profile.toml:4:1: unknown field `max_chrs`"),
            "{stderr}"
        );
        assert!(stderr.contains("max_chars"), "{stderr}");
        (common::code(&out), stderr)
    };
    assert_eq!(code, 2);
}

#[test]
fn unknown_tool_group_is_a_profile_error() {
    let f = Fixture::new().with_profile("tools = [\"files\", \"serach\"]\n");
    let out = f
        .command(&[
            "tools",
            "--profile",
            f.profile.as_ref().unwrap().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown tool group `serach`"), "{stderr}");
    assert!(stderr.contains("known groups: files, search"), "{stderr}");
}

#[test]
fn profile_groups_decide_which_tools_exist() {
    let f = Fixture::new().with_profile("tools = [\"search\"]\n");
    f.err("read_file", r#"{"file_path": "x"}"#, "unknown_tool");
    f.ok("search_files", r#"{"pattern": "*"}"#);
}

#[test]
fn profile_check_prints_the_effective_profile() {
    let f = Fixture::new();
    std::fs::create_dir_all(f.root.join("policies")).unwrap();
    std::fs::write(
        f.root.join("policies/default.toml"),
        "version = 1\ndefault = \"ask\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(f.home.join(".cargo/registry")).unwrap();
    let profile = f.root.join("p.toml");
    std::fs::write(
        &profile,
        "workspace = \"ws\"\nread_roots = [\"~/.cargo/registry\", \"~/not-there\"]\npolicy = \"policies/default.toml\"\n[output]\nmax_chars = 5000\n",
    )
    .unwrap();
    let out = f
        .command(&["profile", "check", profile.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["workspace"], f.ws.to_str().unwrap());
    assert_eq!(
        report["read_roots"][0],
        f.home.join(".cargo/registry").to_str().unwrap()
    );
    assert_eq!(
        report["policy"],
        f.root.join("policies/default.toml").to_str().unwrap()
    );
    assert_eq!(report["output"]["max_chars"], 5000);
    assert_eq!(report["enabled_tools"].as_array().unwrap().len(), 12);
    assert_eq!(report["edit"]["write_requires_read"], true);
    assert_eq!(report["landlock"]["mode"], "best-effort");
    assert!(
        report["landlock_status"]["kernel_abi"].is_i64(),
        "{report:#}"
    );
    assert!(
        report["warnings"][0]
            .as_str()
            .unwrap()
            .contains("not-there"),
        "{report:#}"
    );

    let out = f.command(&["profile", "check"]).output().unwrap();
    assert_eq!(code(&out), 0);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["source"],
        serde_json::Value::Null,
        "embedded default"
    );
    assert_eq!(report["workspace"], f.ws.to_str().unwrap());
}

#[test]
fn tools_lists_enabled_tools_with_schemas() {
    let f = Fixture::new();
    let out = f.command(&["tools"]).output().unwrap();
    let listing = String::from_utf8_lossy(&out.stdout);
    for name in [
        "read_file",
        "list_dir",
        "load_skill",
        "grep",
        "search_files",
    ] {
        assert!(listing.contains(name), "{listing}");
    }
    let out = f.command(&["tools", "--json"]).output().unwrap();
    let specs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for spec in specs.as_array().unwrap() {
        assert_eq!(spec["input_schema"]["type"], "object");
        assert_eq!(spec["input_schema"]["additionalProperties"], false);
        let writes =
            spec["group"] == "edit" || (spec["group"] == "shell" && spec["name"] != "shell_wait");
        assert_eq!(spec["annotations"]["read_only"], !writes, "{spec:#}");
        assert_eq!(spec["annotations"]["destructive"], writes, "{spec:#}");
        assert!(!spec["description"].as_str().unwrap().is_empty());
    }
}

#[test]
fn help_is_useful_on_every_command() {
    let f = Fixture::new();
    for args in [
        vec!["--help"],
        vec!["serve", "--help"],
        vec!["call", "--help"],
        vec!["tools", "--help"],
        vec!["profile", "check", "--help"],
    ] {
        let out = f.command(&args).output().unwrap();
        assert_eq!(code(&out), 0, "{args:?}");
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(help.contains("Usage:"), "{args:?}: {help}");
    }
    let out = f.command(&["call", "--help"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("Exit status: 0 ok, 1"));
    let out = f.command(&["call"]).output().unwrap();
    assert_eq!(code(&out), 2, "missing tool name is a usage error");
}
