use super::*;
use std::collections::BTreeSet;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    if args.first() == Some(&"init") {
        // A git without its templates (a Nix build's) makes no hooks directory.
        let repo = match args.last() {
            Some(a) if !a.starts_with('-') && args.len() > 1 => dir.join(a),
            _ => dir.to_path_buf(),
        };
        let _ = std::fs::create_dir_all(repo.join(".git/hooks"));
    }
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn config(dir: &Path, key: &str) -> Option<String> {
    let out = Command::new("git")
        .args(["config", "--file", ".git/config", "--get-all", key])
        .current_dir(dir)
        .output()
        .expect("git runs");
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

struct Fixture {
    _tmp: tempfile::TempDir,
    ws: PathBuf,
    quarantine: PathBuf,
    scratch: PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let ws = root.join("ws");
    std::fs::create_dir(&ws).unwrap();
    Fixture {
        ws,
        quarantine: root.join("state/quarantine"),
        scratch: root.join("private/gitguard"),
        _tmp: tmp,
    }
}

impl Fixture {
    fn guard(&self, allow: &[&str]) -> GitGuard {
        GitGuard::start(Settings {
            workspace: self.ws.clone(),
            linked: None,
            allow: allow.iter().map(|s| s.to_string()).collect(),
            git: find_git(),
            scratch: self.scratch.clone(),
            quarantine: self.quarantine.clone(),
            audit_log: None,
        })
    }
}

#[test]
fn a_planted_fsmonitor_is_unset_and_ordinary_config_is_kept() {
    let f = fixture();
    git(&f.ws, &["init", "-q"]);
    git(&f.ws, &["config", "core.pager", "less"]);
    let g = f.guard(&[]);
    git(
        &f.ws,
        &["config", "core.fsmonitor", "sh -c 'touch /tmp/pwned'"],
    );
    git(&f.ws, &["config", "user.email", "x@example.invalid"]);
    git(&f.ws, &["config", "core.pager", "sh -c evil"]);
    git(&f.ws, &["config", "alias.st", "!sh -c evil"]);
    git(&f.ws, &["config", "alias.co", "checkout"]);
    git(&f.ws, &["config", "diff.Foo.textconv", "evil"]);
    g.check();
    let r = g.take();
    let keys: Vec<&str> = r.config.iter().map(|u| u.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "alias.st",
            "core.fsmonitor",
            "core.pager",
            "diff.Foo.textconv"
        ],
        "{r:?}"
    );
    assert!(r.failed.is_empty(), "{r:?}");
    assert_eq!(config(&f.ws, "core.fsmonitor"), None);
    assert_eq!(config(&f.ws, "alias.st"), None);
    assert_eq!(config(&f.ws, "diff.Foo.textconv"), None);
    assert_eq!(
        config(&f.ws, "core.pager").as_deref(),
        Some("less"),
        "the start's value is put back"
    );
    assert_eq!(
        config(&f.ws, "user.email").as_deref(),
        Some("x@example.invalid")
    );
    assert_eq!(config(&f.ws, "alias.co").as_deref(), Some("checkout"));
    assert!(r.line().contains("core.fsmonitor"), "{}", r.line());
    // Nothing new: nothing to say, and the next check is the fast path.
    g.check();
    assert!(g.take().is_empty());
}

#[test]
fn a_planted_hook_is_moved_to_the_quarantine() {
    let f = fixture();
    git(&f.ws, &["init", "-q"]);
    let hooks = f.ws.join(".git/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::write(hooks.join("post-merge"), "#!/bin/sh\necho theirs\n").unwrap();
    let g = f.guard(&[]);
    std::fs::write(hooks.join("pre-commit"), "#!/bin/sh\ntouch /tmp/pwned\n").unwrap();
    std::fs::write(hooks.join("pre-push.sample"), "#!/bin/sh\n").unwrap();
    g.check();
    let r = g.take();
    assert_eq!(r.hooks.len(), 1, "{r:?}");
    assert_eq!(r.hooks[0].hook, hooks.join("pre-commit"));
    assert!(!hooks.join("pre-commit").exists());
    assert!(r.hooks[0].moved_to.starts_with(&f.quarantine));
    assert_eq!(
        std::fs::read_to_string(&r.hooks[0].moved_to).unwrap(),
        "#!/bin/sh\ntouch /tmp/pwned\n"
    );
    assert!(
        hooks.join("post-merge").exists(),
        "the person's own hook stays"
    );
    assert!(hooks.join("pre-push.sample").exists(), "samples never run");
    // A change to the person's hook is a new hook.
    std::fs::write(hooks.join("post-merge"), "#!/bin/sh\ntouch /tmp/pwned\n").unwrap();
    g.check();
    assert_eq!(g.take().hooks.len(), 1);
    assert!(!hooks.join("post-merge").exists());
}

#[test]
fn allowed_keys_and_hooks_are_kept() {
    let f = fixture();
    git(&f.ws, &["init", "-q"]);
    let g = f.guard(&["core.pager", "diff.*.textconv", "hooks/pre-commit"]);
    git(&f.ws, &["config", "core.pager", "less"]);
    git(&f.ws, &["config", "diff.pdf.textconv", "pdftotext"]);
    git(&f.ws, &["config", "core.editor", "vim"]);
    std::fs::write(f.ws.join(".git/hooks/pre-commit"), "#!/bin/sh\n").unwrap();
    g.check();
    let r = g.take();
    let keys: Vec<&str> = r.config.iter().map(|u| u.key.as_str()).collect();
    assert_eq!(keys, ["core.editor"]);
    assert!(r.hooks.is_empty());
    assert_eq!(config(&f.ws, "core.pager").as_deref(), Some("less"));
}

#[test]
fn a_repository_made_later_or_one_level_down_is_checked() {
    let f = fixture();
    let g = f.guard(&[]);
    let sub = f.ws.join("sub");
    std::fs::create_dir(&sub).unwrap();
    git(&sub, &["init", "-q"]);
    git(&sub, &["config", "core.hooksPath", "myhooks"]);
    git(&sub, &["config", "user.name", "x"]);
    git(&f.ws, &["init", "-q"]);
    git(&f.ws, &["config", "core.sshCommand", "evil"]);
    g.check();
    let r = g.take();
    let keys: BTreeSet<&str> = r.config.iter().map(|u| u.key.as_str()).collect();
    assert_eq!(
        keys,
        BTreeSet::from(["core.hookspath", "core.sshcommand"]),
        "{r:?}"
    );
    assert_eq!(config(&sub, "core.hookspath"), None);
    assert_eq!(config(&sub, "user.name").as_deref(), Some("x"));
}

#[test]
fn links_are_never_followed_to_write() {
    let f = fixture();
    git(&f.ws, &["init", "-q"]);
    let g = f.guard(&[]);
    // The person's own configuration outside, with a key the baseline lacks.
    let outside = f.ws.parent().unwrap().join("outside.gitconfig");
    std::fs::write(&outside, "[core]\n\tpager = less\n").unwrap();
    std::fs::rename(f.ws.join(".git/config"), f.ws.join("real-config")).unwrap();
    std::os::unix::fs::symlink(&outside, f.ws.join(".git/config")).unwrap();
    g.check();
    let r = g.take();
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "[core]\n\tpager = less\n",
        "written through a link"
    );
    assert!(
        f.ws.join(".git/config").symlink_metadata().is_err(),
        "the link git would follow is moved out: {r:?}"
    );
    // A `.git` link to a directory inside the workspace is looked into, beneath it.
    std::fs::rename(f.ws.join(".git"), f.ws.join("g2")).unwrap();
    std::fs::rename(f.ws.join("real-config"), f.ws.join("g2/config")).unwrap();
    std::os::unix::fs::symlink("g2", f.ws.join(".git")).unwrap();
    git(&f.ws, &["config", "core.fsmonitor", "evil"]);
    g.check();
    let r = g.take();
    assert_eq!(r.config.len(), 1, "{r:?}");
    assert_eq!(
        config(
            &f.ws.join("g2").parent().unwrap().join("g2/.."),
            "core.fsmonitor"
        ),
        None
    );
    assert!(
        std::fs::read_to_string(f.ws.join("g2/config"))
            .unwrap()
            .find("fsmonitor")
            .is_none()
    );
}

/// The cost of a check: the fast path (nothing changed) and the slow one (a config
/// changed, git run), printed (`cargo test gitguard -- --nocapture`).
#[test]
fn a_check_with_nothing_changed_is_cheap() {
    let f = fixture();
    git(&f.ws, &["init", "-q"]);
    for i in 0..30 {
        std::fs::create_dir(f.ws.join(format!("d{i}"))).unwrap();
    }
    let g = f.guard(&[]);
    let n = 200;
    let t = std::time::Instant::now();
    for _ in 0..n {
        g.check();
    }
    let fast = t.elapsed() / n;
    let mut slow = std::time::Duration::ZERO;
    for i in 0..10 {
        git(&f.ws, &["config", "user.name", &format!("u{i}")]);
        let t = std::time::Instant::now();
        g.check();
        slow += t.elapsed();
    }
    let slow = slow / 10;
    eprintln!(
        "git guard check: {fast:?} when nothing changed; {slow:?} when a config changed (git parses it)"
    );
    assert!(g.take().is_empty());
}

#[test]
fn a_linked_worktree_is_guarded_in_its_own_and_the_shared_git_directory() {
    let f = fixture();
    let main = f.ws.parent().unwrap().join("main");
    std::fs::create_dir(&main).unwrap();
    git(&main, &["init", "-q"]);
    std::fs::write(main.join("a.txt"), "a\n").unwrap();
    git(&main, &["add", "a.txt"]);
    git(&main, &["commit", "-qm", "a"]);
    git(&main, &["config", "extensions.worktreeConfig", "true"]);
    std::fs::remove_dir(&f.ws).unwrap();
    git(&main, &["worktree", "add", "-q", f.ws.to_str().unwrap()]);
    let linked = crate::guard::git::linked_worktree(&f.ws)
        .unwrap()
        .expect("linked");
    let g = GitGuard::start(Settings {
        workspace: f.ws.clone(),
        linked: Some(linked.clone()),
        allow: Vec::new(),
        git: find_git(),
        scratch: f.scratch.clone(),
        quarantine: f.quarantine.clone(),
        audit_log: None,
    });
    git(&f.ws, &["config", "--worktree", "core.fsmonitor", "evil"]);
    git(&f.ws, &["config", "core.pager", "evil"]);
    std::fs::write(linked.common_dir.join("hooks/pre-commit"), "#!/bin/sh\n").unwrap();
    g.check();
    let r = g.take();
    let undone: BTreeSet<(String, PathBuf)> = r
        .config
        .iter()
        .map(|u| (u.key.clone(), u.file.clone()))
        .collect();
    assert_eq!(
        undone,
        BTreeSet::from([
            (
                "core.fsmonitor".into(),
                linked.own_git_dir.join("config.worktree")
            ),
            ("core.pager".into(), linked.common_dir.join("config")),
        ]),
        "{r:?}"
    );
    assert_eq!(r.hooks.len(), 1, "{r:?}");
    assert!(!linked.common_dir.join("hooks/pre-commit").exists());
    assert_eq!(
        git(&f.ws, &["config", "extensions.worktreeConfig"]).trim(),
        "true",
        "the rest of the configuration is kept"
    );
}

#[test]
fn the_hooks_path_of_the_start_is_watched() {
    let f = fixture();
    git(&f.ws, &["init", "-q"]);
    std::fs::create_dir(f.ws.join(".githooks")).unwrap();
    std::fs::write(f.ws.join(".githooks/pre-push"), "#!/bin/sh\n").unwrap();
    git(&f.ws, &["config", "core.hooksPath", ".githooks"]);
    let g = f.guard(&[]);
    std::fs::write(f.ws.join(".githooks/pre-commit"), "#!/bin/sh\ntouch x\n").unwrap();
    g.check();
    let r = g.take();
    assert_eq!(r.hooks.len(), 1, "{r:?}");
    assert_eq!(r.hooks[0].hook, f.ws.join(".githooks/pre-commit"));
    assert!(r.config.is_empty(), "the start's hooksPath is kept: {r:?}");
    assert!(f.ws.join(".githooks/pre-push").exists());

    // The same, named by an absolute path inside the workspace.
    let abs = f.ws.join(".githooks");
    git(&f.ws, &["config", "core.hooksPath", abs.to_str().unwrap()]);
    let g = f.guard(&[]);
    std::fs::write(f.ws.join(".githooks/post-commit"), "#!/bin/sh\n").unwrap();
    g.check();
    assert_eq!(g.take().hooks.len(), 1);
}

#[test]
fn what_was_there_at_start_is_left_alone_even_a_link() {
    let f = fixture();
    git(&f.ws, &["init", "-q"]);
    // The person keeps the repository's config elsewhere, with a pager: theirs.
    let theirs = f.ws.parent().unwrap().join("theirs.gitconfig");
    std::fs::copy(f.ws.join(".git/config"), &theirs).unwrap();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&theirs)
        .and_then(|mut c| std::io::Write::write_all(&mut c, b"[core]\n\tpager = less\n"))
        .unwrap();
    std::fs::remove_file(f.ws.join(".git/config")).unwrap();
    std::os::unix::fs::symlink(&theirs, f.ws.join(".git/config")).unwrap();
    let g = f.guard(&[]);
    std::fs::write(f.ws.join(".git/hooks/pre-commit"), "#!/bin/sh\n").unwrap();
    g.check();
    let r = g.take();
    assert_eq!(r.hooks.len(), 1, "{r:?}");
    assert!(r.config.is_empty() && r.failed.is_empty(), "{r:?}");
    assert!(
        f.ws.join(".git/config")
            .symlink_metadata()
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn a_fifo_where_git_reads_never_hangs_the_guard() {
    let f = fixture();
    git(&f.ws, &["init", "-q"]);
    let g = f.guard(&[]);
    std::fs::remove_file(f.ws.join(".git/config")).unwrap();
    nix::unistd::mkfifo(
        &f.ws.join(".git/config"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    nix::unistd::mkfifo(
        &f.ws.join(".git/hooks/pre-commit"),
        nix::sys::stat::Mode::from_bits_truncate(0o700),
    )
    .unwrap();
    g.check();
    let r = g.take();
    assert!(r.config.is_empty() && r.hooks.is_empty(), "{r:?}");
    assert_eq!(r.failed.len(), 1, "said, not hung: {r:?}");
}

#[test]
fn clone_submodule_and_worktree_leave_nothing_to_undo() {
    let f = fixture();
    let other = f.ws.parent().unwrap().join("other");
    std::fs::create_dir(&other).unwrap();
    git(&other, &["init", "-q"]);
    std::fs::write(other.join("o.txt"), "o\n").unwrap();
    git(&other, &["add", "o.txt"]);
    git(&other, &["commit", "-qm", "o"]);
    let g = f.guard(&[]);
    git(&f.ws, &["init", "-q"]);
    git(&f.ws, &["config", "user.name", "me"]);
    git(
        &f.ws,
        &["remote", "add", "origin", "https://example.invalid/x.git"],
    );
    let src = other.to_str().unwrap();
    git(
        &f.ws,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            src,
            "sub",
        ],
    );
    git(&f.ws, &["commit", "-qm", "with a submodule"]);
    git(&f.ws, &["worktree", "add", "-q", "wt"]);
    git(&f.ws, &["clone", "-q", src, "cloned"]);
    g.check();
    let r = g.take();
    assert!(r.is_empty(), "{r:?}");
}

/// A file the repository's configuration included at start (`include.path`, relative
/// to the including file) is configuration too: git runs an fsmonitor a task writes
/// there, so the guard undoes it as in `.git/config` itself.
#[test]
fn an_included_config_file_is_guarded_like_the_config() {
    let f = fixture();
    git(&f.ws, &["init", "-q"]);
    git(&f.ws, &["config", "include.path", "../project.gitconfig"]);
    git(
        &f.ws,
        &["config", "includeIf.onbranch:*.path", "../later.gitconfig"],
    );
    std::fs::write(f.ws.join("project.gitconfig"), "[user]\n\tname = t\n").unwrap();
    let g = f.guard(&[]);
    let plant = |file: &str| {
        let out = Command::new("git")
            .args(["config", "--file", file, "core.fsmonitor", "sh -c evil"])
            .current_dir(&f.ws)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    plant("project.gitconfig");
    // Not there at start: the include still names it.
    plant("later.gitconfig");
    // Without the guard git would run it: the include is followed.
    let seen = git(&f.ws, &["config", "--get-all", "core.fsmonitor"]);
    assert!(seen.contains("sh -c evil"), "{seen}");
    g.check();
    let r = g.take();
    assert!(r.failed.is_empty(), "{r:?}");
    let files: BTreeSet<String> = r
        .config
        .iter()
        .map(|u| {
            format!(
                "{} {}",
                u.file.file_name().unwrap().to_string_lossy(),
                u.key
            )
        })
        .collect();
    assert_eq!(
        files,
        BTreeSet::from([
            "later.gitconfig core.fsmonitor".to_string(),
            "project.gitconfig core.fsmonitor".to_string()
        ]),
        "{r:?}"
    );
    let out = Command::new("git")
        .args(["config", "--get-all", "core.fsmonitor"])
        .current_dir(&f.ws)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(!out.status.success(), "still set: {out:?}");
    assert!(
        std::fs::read_to_string(f.ws.join("project.gitconfig"))
            .unwrap()
            .contains("name = t"),
        "the rest of the file is kept"
    );
}

/// A repository deeper than one directory that was there at start (the person's clone
/// in `vendor/lib`) is guarded; the walk that finds it follows no link.
#[test]
fn a_deeper_repository_of_the_start_is_guarded() {
    let f = fixture();
    std::fs::create_dir_all(f.ws.join("vendor/lib")).unwrap();
    git(&f.ws.join("vendor/lib"), &["init", "-q"]);
    let outside = f.ws.parent().unwrap().join("outside");
    std::fs::create_dir_all(outside.join("repo")).unwrap();
    git(&outside.join("repo"), &["init", "-q"]);
    std::os::unix::fs::symlink(&outside, f.ws.join("vendor/link")).unwrap();
    let g = f.guard(&[]);
    let deep = f.ws.join("vendor/lib");
    git(&deep, &["config", "core.fsmonitor", "sh -c evil"]);
    git(
        &outside.join("repo"),
        &["config", "core.fsmonitor", "sh -c theirs"],
    );
    g.check();
    let r = g.take();
    assert!(r.failed.is_empty(), "{r:?}");
    let files: Vec<&Path> = r.config.iter().map(|u| u.file.as_path()).collect();
    assert_eq!(files, [deep.join(".git/config").as_path()], "{r:?}");
    assert_eq!(config(&deep, "core.fsmonitor"), None);
    assert_eq!(
        config(&outside.join("repo"), "core.fsmonitor").as_deref(),
        Some("sh -c theirs"),
        "a repository behind a link is not the workspace's"
    );
}
