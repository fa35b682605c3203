use super::*;
use crate::guard::presets::{Kind, Preset};

fn parse(text: &str, dir: &Path) -> Result<Profile, ProfileError> {
    let file = dir.join("whalebox.toml");
    Profile::parse(text, Some(&file), dir, None)
}

#[test]
fn embedded_default_matches_the_built_in_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let embedded = Profile::parse(EMBEDDED_DEFAULT, None, dir.path(), None).unwrap();
    let empty = Profile::parse("", None, dir.path(), None).unwrap();
    assert_eq!(embedded, empty);
    assert_eq!(embedded.workspace, dir.path());
    assert_eq!(embedded.output.max_chars, 30_000);
    assert_eq!(embedded.skills.dirs[0], dir.path().join(".agents/skills"));
}

#[test]
fn unknown_key_names_line_column_and_valid_keys() {
    let dir = tempfile::tempdir().unwrap();
    let err = parse("workspace = \".\"\n\n[output]\nmax_char = 10\n", dir.path()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("whalebox.toml:4:1:"), "{msg}");
    assert!(msg.contains("unknown field `max_char`"), "{msg}");
    assert!(msg.contains("max_chars"), "{msg}");
}

#[test]
fn unknown_top_level_key_lists_every_valid_key() {
    let dir = tempfile::tempdir().unwrap();
    let msg = parse("tool = [\"files\"]\n", dir.path())
        .unwrap_err()
        .to_string();
    assert!(msg.contains(":1:1:"), "{msg}");
    for key in [
        "workspace",
        "tools",
        "read_roots",
        "policy",
        "skills",
        "output",
    ] {
        assert!(msg.contains(key), "{key} missing from {msg}");
    }
}

#[test]
fn relative_paths_resolve_against_the_profile_directory_and_tilde_expands() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("p");
    std::fs::create_dir_all(sub.join("ws")).unwrap();
    std::fs::create_dir(dir.path().join("y")).unwrap();
    let p = parse(
            "workspace = \"ws\"\nread_roots = [\"~\", \"../y\", \"~/whalebox-missing-root\"]\npolicy = \"policies/p.toml\"\n[skills]\ndirs = [\"sk\"]\n",
            &sub,
        )
        .unwrap();
    assert_eq!(p.workspace, sub.join("ws"));
    let home = std::env::home_dir().unwrap();
    assert_eq!(p.read_roots, vec![home.clone(), dir.path().join("y")]);
    assert_eq!(p.policy.unwrap(), sub.join("policies/p.toml"));
    assert_eq!(p.skills.dirs, vec![sub.join("sk")]);
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains("whalebox-missing-root") && w.contains("skipped"))
    );
}

#[test]
fn bad_roots_are_errors_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let err = |text: &str| parse(text, dir.path()).unwrap_err().to_string();
    let msg = err("read_roots = [\"missing\"]\n[landlock]\nignore_missing = false\n");
    assert!(
        msg.contains("does not exist") && msg.contains("ignore_missing"),
        "{msg}"
    );
    std::fs::create_dir(dir.path().join("inside")).unwrap();
    let msg = err("read_roots = [\"inside\"]\n");
    assert!(msg.contains("overlaps the workspace"), "{msg}");
    let msg = err("[landlock]\nrw = [\"build\"]\n");
    assert!(msg.contains("relative"), "{msg}");
    let msg = err("[landlock]\nmode = \"strict\"\n");
    assert!(msg.contains("valid values: `enforce`"), "{msg}");
    let msg = err("[landlock]\nmod = \"enforce\"\n");
    assert!(msg.contains("valid keys: `mode`"), "{msg}");
}

#[test]
fn an_unknown_preset_names_file_line_and_the_known_presets() {
    let dir = tempfile::tempdir().unwrap();
    let msg = parse("[landlock]\npresets = [\"rust\", \"rsut\"]\n", dir.path())
        .unwrap_err()
        .to_string();
    assert!(
            msg.contains("whalebox.toml:2:")
                && msg.contains(
                    "[landlock] presets: unknown preset \"rsut\"; known presets: rust, node, python, go, nix"
                ),
            "{msg}"
        );
    // Known ones resolve; a repeat is dropped.
    let p = parse(
        "[landlock]\npresets = [\"go\", \"nix\", \"go\"]\n",
        dir.path(),
    )
    .unwrap();
    assert_eq!(p.landlock.presets, [Preset::Go, Preset::Nix]);
    assert!(
        p.landlock
            .preset_paths
            .iter()
            .any(|p| p.kind == Kind::Cache && p.path.ends_with("go-build"))
    );
}

#[test]
fn presets_auto_follow_the_workspace_marker_files() {
    let dir = tempfile::tempdir().unwrap();
    let p = parse("", dir.path()).unwrap();
    assert_eq!(p.landlock.presets_auto, Some(vec![]));
    assert!(p.landlock.presets.is_empty());
    std::fs::write(dir.path().join("Cargo.toml"), "").unwrap();
    std::fs::write(dir.path().join("requirements-test.txt"), "").unwrap();
    std::fs::create_dir(dir.path().join("go.mod")).unwrap(); // a directory: no marker
    let p = parse("[landlock]\npresets = \"auto\"\n", dir.path()).unwrap();
    assert_eq!(p.landlock.presets, [Preset::Rust, Preset::Python]);
    assert_eq!(
        p.landlock.presets_auto.unwrap()[1],
        (Preset::Python, "requirements-test.txt".to_string())
    );
    let p = parse("[landlock]\npresets = []\n", dir.path()).unwrap();
    assert!(p.landlock.presets.is_empty() && p.landlock.presets_auto.is_none());
    let msg = parse("[landlock]\npresets = \"all\"\n", dir.path())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("neither \"auto\" nor a list"), "{msg}");
}

#[test]
fn client_limits_parse_and_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let p = parse(
        "[output]\nstructured = true\nfit_to_client = false\n[output.clients.\"codex-mcp-client\"]\nmax_yield_ms = 55000\n",
        dir.path(),
    );
    let msg = p.unwrap_err().to_string();
    assert!(msg.contains("max_yield_ms = 55000 is above 50000"), "{msg}");
    let p = parse(
        "[output]\nstructured = true\n[output.clients.\"my-agent\"]\nmax_chars = 8000\n",
        dir.path(),
    )
    .unwrap();
    assert!(p.output.structured && p.output.fit_to_client);
    assert_eq!(p.output.clients["my-agent"].max_chars, Some(8000));
    let msg = parse("[output.clients.x]\nmax_chars = 10\n", dir.path())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("too small"), "{msg}");
    let msg = parse("[output.clients.x]\nmax_char = 1000\n", dir.path())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("max_char"), "{msg}");
}

#[test]
fn missing_workspace_and_wrong_types_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let msg = parse("workspace = \"nope\"\n", dir.path())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("not usable"), "{msg}");
    let msg = parse("tools = \"files\"\n", dir.path())
        .unwrap_err()
        .to_string();
    assert!(msg.contains(":1:9:"), "{msg}");
    let msg = parse("[output]\nmax_chars = 5\n", dir.path())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("too small"), "{msg}");
    let msg = parse("read_roots = [\"~bob/x\"]\n", dir.path())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("only `~`"), "{msg}");
}

#[test]
fn allow_exec_config_takes_true_or_keys_and_warns_of_a_key_that_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = parse("[git]\nallow_exec_config = true\n", dir.path()).unwrap();
    assert!(p.git.allow_exec_config.all());
    let p = parse(
        "[git]\nallow_exec_config = [\"core.pager\", \"diff.*.textconv\", \"hooks/pre-commit\", \"user.name\"]\n",
        dir.path(),
    )
    .unwrap();
    assert!(!p.git.allow_exec_config.all());
    assert_eq!(p.git.allow_exec_config.keys().len(), 4);
    let warned: Vec<&String> = p
        .warnings
        .iter()
        .filter(|w| w.contains("allow_exec_config"))
        .collect();
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(warned[0].contains("user.name"), "{warned:?}");
    let p = parse("", dir.path()).unwrap();
    assert!(!p.git.allow_exec_config.all() && p.git.allow_exec_config.keys().is_empty());
    assert!(parse("[git]\nallow_exec_config = \"core.pager\"\n", dir.path()).is_err());
}

#[test]
fn user_namespaces_are_denied_by_default_and_take_deny_or_allow() {
    let dir = tempfile::tempdir().unwrap();
    let p = parse("", dir.path()).unwrap();
    assert_eq!(p.shell.user_namespaces, UserNamespaces::Deny);
    let p = parse("[shell]\nuser_namespaces = \"allow\"\n", dir.path()).unwrap();
    assert!(p.shell.user_namespaces.allowed());
    let msg = parse("[shell]\nuser_namespaces = \"yes\"\n", dir.path())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("whalebox.toml:2:"), "{msg}");
    assert!(msg.contains("`deny`") && msg.contains("`allow`"), "{msg}");
    let msg = parse("[shell]\nuser_namespaces = true\n", dir.path())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("whalebox.toml:2:"), "{msg}");
}
