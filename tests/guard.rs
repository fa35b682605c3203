//! The path guard against a battery of escapes, through real tool calls on a real tree.
//! (Write access, which no tool of this group uses yet, is covered on the same kind of
//! tree by the unit tests in `src/guard/paths.rs`.)

mod common;

use std::os::unix::fs::symlink;

use common::{Fixture, json_path, text};

fn tree() -> Fixture {
    let f = Fixture::new();
    f.write("inside.txt", "inside\n");
    std::fs::write(f.outside.join("secret.txt"), "secret\n").unwrap();
    std::fs::write(f.home.join(".bashrc"), "alias x=y\n").unwrap();
    symlink(&f.outside, f.ws.join("out_dir")).unwrap();
    symlink(f.outside.join("secret.txt"), f.ws.join("out_file")).unwrap();
    symlink(f.outside.join("missing.txt"), f.ws.join("dangling")).unwrap();
    symlink("..", f.ws.join("up")).unwrap();
    symlink("inside.txt", f.ws.join("in_link")).unwrap();
    f
}

fn read(f: &Fixture, path: &str) -> (i32, serde_json::Value) {
    f.call(
        "read_file",
        &serde_json::json!({"file_path": path}).to_string(),
    )
}

fn assert_denied(f: &Fixture, path: &str) {
    let (code, env) = read(f, path);
    assert_eq!(env["code"], "path_denied", "{path}: {env:#}");
    assert_eq!(code, 1);
    let t = text(&env);
    assert!(t.contains("reads are allowed inside the workspace"), "{t}");
    assert!(
        t.contains("read_roots"),
        "names the way to widen the fence: {t}"
    );
    assert!(
        !t.contains("secret\n") && !t.contains("alias x=y"),
        "nothing leaked: {t}"
    );
}

#[test]
fn dot_dot_escapes_are_denied() {
    let f = tree();
    assert_denied(&f, "../outside/secret.txt");
    assert_denied(&f, "./sub/../../outside/secret.txt");
    assert_denied(&f, "no/such/../../../outside/secret.txt");
}

#[test]
fn absolute_paths_outside_are_denied_inside_allowed() {
    let f = tree();
    assert_denied(&f, "/etc/passwd");
    assert_denied(&f, f.outside.join("secret.txt").to_str().unwrap());
    let (code, _) = read(&f, f.ws.join("inside.txt").to_str().unwrap());
    assert_eq!(code, 0);
}

#[test]
fn symlinked_dir_file_and_dangling_link_are_judged_by_their_targets() {
    let f = tree();
    assert_denied(&f, "out_dir/secret.txt");
    assert_denied(&f, "out_file");
    assert_denied(&f, "dangling");
    let (code, env) = read(&f, "in_link");
    assert_eq!(code, 0, "{env:#}");
    assert_eq!(text(&env), "     1\tinside\n");
}

#[test]
fn link_to_a_parent_cannot_be_used_to_climb_out() {
    let f = tree();
    assert_denied(&f, "up/outside/secret.txt");
    // Through the link and back into the workspace is still the workspace.
    let (code, _) = read(&f, "up/ws/inside.txt");
    assert_eq!(code, 0);
}

#[test]
fn tilde_means_home_and_home_is_outside() {
    let f = tree();
    assert_denied(&f, "~/.bashrc");
}

#[test]
fn denial_names_the_resolved_target() {
    let f = tree();
    let (_, env) = read(&f, "out_file");
    let t = text(&env);
    assert!(
        t.contains("resolves to") && t.contains("outside/secret.txt"),
        "{t}"
    );
}

#[test]
fn nul_bytes_are_invalid_input_not_a_decision() {
    let f = tree();
    let (code, env) = f.call("read_file", r#"{"file_path": "inside.txt\u0000../x"}"#);
    assert_eq!(env["code"], "invalid_input", "{env:#}");
    assert_eq!(code, 1);
}

#[test]
fn read_roots_open_only_themselves() {
    let f = tree();
    let lib = f.root.join("registry/lib");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(lib.join("mod.rs"), "pub mod x;\n").unwrap();
    let profile = format!("read_roots = [{}]\n", json_path(&f.root.join("registry")));
    let f = f.with_profile(&profile);
    let (code, env) = read(&f, lib.join("mod.rs").to_str().unwrap());
    assert_eq!(code, 0, "{env:#}");
    assert_denied(&f, f.outside.join("secret.txt").to_str().unwrap());
    // grep and list_dir honour the same fences.
    let env = f.ok(
        "grep",
        &serde_json::json!({"pattern": "mod", "path": lib}).to_string(),
    );
    assert!(text(&env).contains("mod.rs:1:pub mod x;"), "{}", text(&env));
    f.err(
        "list_dir",
        &serde_json::json!({"path": f.outside}).to_string(),
        "path_denied",
    );
}
