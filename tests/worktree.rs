//! A workspace that is a linked git worktree (`git worktree add`), fenced by Landlock:
//! git status, log, diff and commit work inside it, the main worktree is readable and
//! not writable, and `[git] main_worktree = "off"` closes it. Skips, loudly, only when
//! the kernel has no Landlock.

mod common;

use std::path::Path;
use std::process::Command;

use common::{Fixture, text};
use serde_json::json;

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// A repository `main` with one commit, and a linked worktree `wt` beside it used as
/// the workspace, fenced with `extra` in the profile.
fn linked(extra: &str) -> (Fixture, std::path::PathBuf) {
    let mut f = Fixture::new();
    let main = f.root.join("main");
    std::fs::create_dir(&main).unwrap();
    git(&main, &["init", "-q", "-b", "trunk"]);
    std::fs::write(main.join("notes.txt"), "from the main worktree\n").unwrap();
    git(&main, &["add", "notes.txt"]);
    git(&main, &["commit", "-qm", "first"]);
    let wt = f.root.join("wt");
    git(
        &main,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "feature",
            wt.to_str().unwrap(),
        ],
    );
    std::fs::write(
        f.home.join(".gitconfig"),
        "[user]\n\tname = Sandboxed\n\temail = s@example.invalid\n",
    )
    .unwrap();
    f.ws = wt;
    let f = f.with_profile(&format!(
        "[shell]\nexec_boundary = \"off\"\n[landlock]\nmode = \"enforce\"\n{extra}"
    ));
    (f, main)
}

fn run(f: &Fixture, command: &str) -> String {
    let (_, env) = f.call("shell_run", &json!({"command": command}).to_string());
    text(&env).to_string()
}

#[test]
fn git_works_in_a_fenced_linked_worktree_and_the_main_one_is_read_only() {
    if common::landlock_abi() < 1 {
        eprintln!("SKIPPED linked worktree: the kernel has no Landlock");
        return;
    }
    let (f, main) = linked("");
    std::fs::write(f.ws.join("notes.txt"), "changed in the worktree\n").unwrap();
    let t = run(
        &f,
        "git status --short && git log --oneline && git diff --stat && \
         git commit -qam 'from the sandbox' && git log --oneline -1 && echo rc=$?",
    );
    assert!(t.contains(" M notes.txt") && t.contains("first"), "{t}");
    assert!(t.contains("from the sandbox") && t.contains("rc=0"), "{t}");
    // The commit is in the shared repository, on the worktree's branch.
    let log = Command::new("git")
        .args(["log", "--oneline", "-1", "feature"])
        .current_dir(&main)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&log.stdout).contains("from the sandbox"));

    // The main worktree: readable by commands and tools, never writable.
    let main_notes = main.join("notes.txt");
    let t = run(
        &f,
        &format!("cat {0}; echo x >> {0}; echo rc=$?", main_notes.display()),
    );
    assert!(t.starts_with("from the main worktree\n"), "{t}");
    assert!(t.to_lowercase().contains("permission denied"), "{t}");
    assert_eq!(
        std::fs::read_to_string(&main_notes).unwrap(),
        "from the main worktree\n"
    );
    let read = f.ok(
        "read_file",
        &json!({"file_path": main_notes.to_str().unwrap()}).to_string(),
    );
    assert!(text(&read).contains("from the main worktree"));
    f.err(
        "write",
        &json!({"file_path": main_notes.to_str().unwrap(), "content": "no\n"}).to_string(),
        "path_denied",
    );
    // Nor its hooks or config, which decide what git runs next.
    let t = run(
        &f,
        &format!(
            "echo evil > {0}/.git/hooks/pre-commit; echo rc=$?; git config core.pager evil; echo rc=$?",
            main.display()
        ),
    );
    assert!(!t.contains("rc=0"), "{t}");
    assert!(!main.join(".git/hooks/pre-commit").exists());

    let out = f
        .command(&[
            "doctor",
            "--workspace",
            f.ws.to_str().unwrap(),
            "--profile",
            f.profile.as_ref().unwrap().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let doctor = String::from_utf8_lossy(&out.stdout);
    assert!(
        doctor.contains(&format!(
            "git:        a linked worktree of {}",
            main.display()
        )),
        "{doctor}"
    );
}

#[test]
fn main_worktree_off_closes_it() {
    if common::landlock_abi() < 1 {
        eprintln!("SKIPPED linked worktree off: the kernel has no Landlock");
        return;
    }
    let (f, main) = linked("[git]\nmain_worktree = \"off\"\n");
    let t = run(
        &f,
        &format!("cat {}/notes.txt; git status; echo rc=$?", main.display()),
    );
    assert!(t.to_lowercase().contains("permission denied"), "{t}");
    assert!(!t.contains("rc=0"), "{t}");
}
