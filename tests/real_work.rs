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
