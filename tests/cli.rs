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
    assert_eq!(report["enabled_tools"].as_array().unwrap().len(), 22);
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
        let name = spec["name"].as_str().unwrap();
        // The agent's own state: changed but nothing of the user's destroyed, except
        // removing todos.
        let (read_only, destructive) = match name {
            "update_plan" | "todo_add" | "todo_update" => (false, false),
            "todo_remove" | "todo_clear_completed" => (false, true),
            "todo_list" | "request_user_input" => (true, false),
            "checkpoint_restore" => (false, true),
            _ => {
                let writes =
                    spec["group"] == "edit" || (spec["group"] == "shell" && name != "shell_wait");
                (!writes, writes)
            }
        };
        assert_eq!(spec["annotations"]["read_only"], read_only, "{spec:#}");
        assert_eq!(spec["annotations"]["destructive"], destructive, "{spec:#}");
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

#[test]
fn completions_and_man_pages_come_from_the_cli_definitions() {
    let f = Fixture::new();
    let stdout = |args: &[&str]| {
        let out = f.command(args).output().unwrap();
        assert_eq!(
            code(&out),
            0,
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let bash = stdout(&["completions", "bash"]);
    // Loaded into a real bash, the script completes `whalebox se<TAB>` and
    // `whalebox policy <TAB>`.
    let script = f.root.join("whalebox.bash");
    std::fs::write(&script, &bash).unwrap();
    let complete = |line: &str| {
        let words: Vec<&str> = line.split(' ').collect();
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!(
                "source {} && COMP_WORDS=({line}) COMP_CWORD={} COMP_LINE='{line}' COMP_POINT={} \
                 && _whalebox whalebox '{}' '{}' && printf '%s\\n' \"${{COMPREPLY[@]}}\"",
                script.display(),
                words.len() - 1,
                line.len(),
                words[words.len() - 1],
                words[words.len() - 2],
            ))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(complete("whalebox se").trim(), "serve");
    let policy = complete("whalebox policy ''");
    for sub in ["check", "test", "schema"] {
        assert!(policy.lines().any(|l| l == sub), "{policy}");
    }
    for sub in ["serve", "run", "shell", "policy", "profile", "completions"] {
        assert!(bash.contains(sub), "bash completion knows `{sub}`");
    }
    assert!(stdout(&["completions", "zsh"]).starts_with("#compdef whalebox"));
    assert!(stdout(&["completions", "fish"]).contains("complete -c whalebox"));
    let out = f.command(&["completions", "tcsh"]).output().unwrap();
    assert_eq!(code(&out), 2, "an unknown shell is a usage error");

    let page = stdout(&["man"]);
    assert!(page.contains(".TH whalebox 1"), "{page}");
    assert!(page.contains("serve"), "{page}");
    assert!(page.contains("WHALEBOX_PROFILE"), "{page}");
    let dir = f.root.join("man");
    stdout(&["man", "--dir", dir.to_str().unwrap()]);
    let serve = std::fs::read_to_string(dir.join("whalebox-serve.1")).unwrap();
    assert!(serve.contains("\\-\\-profile"), "{serve}");
    assert!(dir.join("whalebox-policy-test.1").exists());
}

/// TOML parsed as JSON, as an editor's schema validation sees it.
fn toml_as_json(text: &str) -> serde_json::Value {
    let value: toml::Value = toml::from_str(text).unwrap();
    serde_json::to_value(value).unwrap()
}

#[test]
fn schemas_accept_the_shipped_files_and_reject_typos() {
    let f = Fixture::new();
    let schema = |what: &str| -> jsonschema::Validator {
        let out = f.command(&[what, "schema"]).output().unwrap();
        assert_eq!(code(&out), 0);
        let schema: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        jsonschema::validator_for(&schema).unwrap()
    };
    let profile = schema("profile");
    let policy = schema("policy");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut profiles = vec![root.join("src/profile/default.toml")];
    let mut policies = vec![root.join("crates/whalebox-policy/src/default.toml")];
    for entry in std::fs::read_dir(root.join("policies")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            policies.push(path);
        }
    }
    for entry in std::fs::read_dir(root.join("policies/profiles")).unwrap() {
        profiles.push(entry.unwrap().path());
    }
    for (validator, files) in [(&profile, &profiles), (&policy, &policies)] {
        for file in files {
            let doc = toml_as_json(&std::fs::read_to_string(file).unwrap());
            let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{}: {errors:?}", file.display());
        }
    }
    for bad in [
        "landlok = {}",
        "[landlock]\nmode = \"strict\"\n",
        "[shell]\nmax_tasks = \"many\"\n",
    ] {
        assert!(!profile.is_valid(&toml_as_json(bad)), "accepted {bad:?}");
    }
    for bad in [
        "default = \"allow\"\n",
        "version = 1\n[[rule]]\npattern = [\"git\"]\ndecison = \"deny\"\n",
        "version = 1\n[[rule]]\npattern = [\"git\"]\ndecision = \"maybe\"\n",
    ] {
        assert!(!policy.is_valid(&toml_as_json(bad)), "accepted {bad:?}");
    }
}

#[test]
fn a_baked_in_profile_can_mean_the_working_directory() {
    // As lib.mkSandbox's wrapper runs it: the profile and policy live in the Nix store,
    // the workspace is wherever the command runs.
    let f = Fixture::new();
    let store = f.outside.join("store");
    std::fs::create_dir_all(&store).unwrap();
    std::fs::write(
        store.join("whalebox.toml"),
        "workspace = \".\"\nread_roots = [\"vendor-cache\"]\n[landlock]\nignore_missing = false\n",
    )
    .unwrap();
    std::fs::write(store.join("ci.toml"), "version = 1\ndefault = \"allow\"\n").unwrap();
    // read_roots = ["vendor-cache"] means <workspace>/vendor-cache, which is missing
    // here: relative to the workspace, not to the profile's directory.
    let check = |relative_to: &str| {
        f.command(&["profile", "check"])
            .env("WHALEBOX_PROFILE", store.join("whalebox.toml"))
            .env("WHALEBOX_POLICY", store.join("ci.toml"))
            .env("WHALEBOX_RELATIVE_TO", relative_to)
            .output()
            .unwrap()
    };
    let out = check("workspace");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{err}");
    assert!(
        err.contains(&f.ws.join("vendor-cache").display().to_string()),
        "{err}"
    );
    std::fs::write(
        store.join("whalebox.toml"),
        "workspace = \".\"\npolicy = \"policies/unused.toml\"\n",
    )
    .unwrap();
    let out = check("workspace");
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["workspace"], f.ws.to_str().unwrap());
    assert_eq!(report["policy"], store.join("ci.toml").to_str().unwrap());
    // By default relative paths follow the profile file, as before.
    let out = check("profile");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["workspace"], store.to_str().unwrap());
    // A --policy that does not exist is an error naming it.
    let out = f
        .command(&["profile", "check", "--policy", "nope.toml"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope.toml: no such file"));
}

#[test]
fn profile_check_files_only_does_not_hold_the_kernel_against_the_file() {
    // lib.mkSandbox's check runs on a build machine whose kernel says nothing about the
    // machines the profile is for.
    let f = Fixture::new().with_profile("[landlock]\nmode = \"enforce\"\nmin_abi = 200\n");
    let profile = f.profile.clone().unwrap();
    let check = |extra: &[&str]| {
        let mut args = vec!["profile", "check", profile.to_str().unwrap()];
        args.extend(extra);
        f.command(&args).output().unwrap()
    };
    let out = check(&[]);
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs Landlock ABI 200"));
    let out = check(&["--files-only"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        report["warnings"].to_string().contains("--files-only"),
        "{report:#}"
    );
    // Still a check of the file: a typo fails with its line.
    std::fs::write(
        &profile,
        "[landlock]\nmode = \"enforce\"\nmin_abi = 200\nmod = 1\n",
    )
    .unwrap();
    let out = check(&["--files-only"]);
    assert_eq!(code(&out), 2);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("profile.toml:4:1"),
        "{out:?}"
    );
}

#[test]
fn the_example_profiles_check() {
    let f = Fixture::new();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for entry in std::fs::read_dir(root.join("policies/profiles")).unwrap() {
        let path = entry.unwrap().path();
        let out = f
            // As the flake's check runs them: the files, not this kernel.
            .command(&["profile", "check", path.to_str().unwrap(), "--files-only"])
            .output()
            .unwrap();
        assert_eq!(
            code(&out),
            0,
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
