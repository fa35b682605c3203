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
