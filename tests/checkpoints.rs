//! Checkpoints against the real file system: random sequences of changes restored to
//! any checkpoint byte for byte (modes, links, ignored and binary files), with and
//! without inotify; the real binary's calls and CLI; a killed restore and a killed
//! checkpoint; a full disk (a small tmpfs); a store someone damaged.

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use whalebox::checkpoint::scan::ScanRules;
use whalebox::checkpoint::{Checkpoints, RestoreError, Settings};

use common::Fixture;

/// What a tree holds, as a copy taken at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    File(Vec<u8>, u32),
    Link(String),
    Dir(u32),
}

fn copy_of(root: &Path) -> BTreeMap<String, Node> {
    let mut out = BTreeMap::new();
    fn walk(root: &Path, rel: &str, out: &mut BTreeMap<String, Node>) {
        let dir = if rel.is_empty() {
            root.to_path_buf()
        } else {
            root.join(rel)
        };
        for item in std::fs::read_dir(dir).unwrap().flatten() {
            let name = item.file_name().to_string_lossy().into_owned();
            if rel.is_empty() && name == ".git" {
                continue;
            }
            let path = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            let meta = item.path().symlink_metadata().unwrap();
            let mode = meta.mode() & 0o7777;
            if meta.file_type().is_symlink() {
                let t = std::fs::read_link(item.path()).unwrap();
                out.insert(path, Node::Link(t.to_string_lossy().into_owned()));
            } else if meta.is_dir() {
                out.insert(path.clone(), Node::Dir(mode));
                walk(root, &path, out);
            } else {
                out.insert(path, Node::File(std::fs::read(item.path()).unwrap(), mode));
            }
        }
    }
    walk(root, "", &mut out);
    out
}

fn settings(ws: &Path, store: &Path, watch: bool) -> Settings {
    Settings {
        workspace: ws.to_path_buf(),
        dir: store.to_path_buf(),
        rules: ScanRules {
            exclude: vec![".git".into()],
            max_file_bytes: 1 << 20,
            max_pass_bytes: 1 << 30,
        },
        keep: 1000,
        max_total_bytes: 1 << 30,
        watch,
    }
}

/// One change a call might make.
#[derive(Debug, Clone)]
enum Op {
    Write(usize, Vec<u8>),
    Remove(usize),
    Rename(usize, usize),
    Chmod(usize, u32),
    Symlink(usize, usize),
    Mkdir(usize),
}

/// Paths the operations pick from: nested, some the same place as a file and a
/// directory at different times, one in an ignored directory.
const PATHS: &[&str] = &[
    "a.txt",
    "b.bin",
    "src/lib.rs",
    "src/deep/x",
    "src",
    "src/deep",
    "ignored/out.log",
    "crlf.txt",
];

fn op() -> impl Strategy<Value = Op> {
    let i = 0..PATHS.len();
    prop_oneof![
        4 => (i.clone(), prop::collection::vec(any::<u8>(), 0..64)).prop_map(|(i, b)| Op::Write(i, b)),
        1 => (i.clone(), Just(b"x\r\ny\r\n".to_vec())).prop_map(|(i, b)| Op::Write(i, b)),
        2 => i.clone().prop_map(Op::Remove),
        1 => (i.clone(), i.clone()).prop_map(|(a, b)| Op::Rename(a, b)),
        1 => (i.clone(), prop_oneof![Just(0o600u32), Just(0o755), Just(0o644)]).prop_map(|(i, m)| Op::Chmod(i, m)),
        1 => (i.clone(), i.clone()).prop_map(|(a, b)| Op::Symlink(a, b)),
        1 => i.prop_map(Op::Mkdir),
    ]
}

/// Carry out `op` the way a command would (errors such as a missing parent are fine:
/// a command that fails changes nothing).
fn apply(ws: &Path, op: &Op) {
    let p = |i: usize| ws.join(PATHS[i]);
    let parent = |path: &PathBuf| {
        if let Some(d) = path.parent() {
            let _ = std::fs::create_dir_all(d);
        }
    };
    match op {
        Op::Write(i, bytes) => {
            let path = p(*i);
            parent(&path);
            if path.is_dir() && !path.is_symlink() {
                let _ = std::fs::remove_dir_all(&path);
            }
            let _ = std::fs::remove_file(&path);
            let _ = std::fs::write(&path, bytes);
        }
        Op::Remove(i) => {
            let path = p(*i);
            if path.is_dir() && !path.is_symlink() {
                let _ = std::fs::remove_dir_all(&path);
            } else {
                let _ = std::fs::remove_file(&path);
            }
        }
        Op::Rename(a, b) => {
            let (from, to) = (p(*a), p(*b));
            if to.starts_with(&from) {
                return;
            }
            parent(&to);
            let _ = std::fs::rename(from, to);
        }
        Op::Chmod(i, mode) => {
            let path = p(*i);
            if path.is_file() && !path.is_symlink() {
                let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(*mode));
            }
        }
        Op::Symlink(a, b) => {
            let path = p(*a);
            parent(&path);
            if !path.exists() && !path.is_symlink() {
                let _ = std::os::unix::fs::symlink(PATHS[*b], path);
            }
        }
        Op::Mkdir(i) => {
            let path = p(*i);
            if !path.exists() && !path.is_symlink() {
                parent(&path);
                let _ = std::fs::create_dir(path);
            }
        }
    }
}

fn run_sequence(ops: &[Op], targets: &[usize], watch: bool) -> Result<(), TestCaseError> {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::write(ws.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let cp = Checkpoints::open(settings(&ws, &tmp.path().join("store"), watch), "test").unwrap();
    let mut copies: Vec<(String, BTreeMap<String, Node>)> = Vec::new();
    for (n, op) in ops.iter().enumerate() {
        let id = cp.take("shell_run", &format!("op {n}")).unwrap();
        copies.push((id.clone(), copy_of(&ws)));
        apply(&ws, op);
        cp.finished(&id, None, Vec::new()).unwrap();
    }
    for t in targets {
        let (id, copy) = &copies[t % copies.len()];
        // Every change came from a checkpointed call: no force needed.
        let r = cp.restore(id, &[], false, false, &|_, _| {});
        prop_assert!(r.is_ok(), "restore {id}: {:?}", r.err());
        prop_assert_eq!(&copy_of(&ws), copy, "restored to {} (watch={})", id, watch);
        prop_assert_eq!(
            std::fs::read(ws.join(".git/HEAD")).unwrap(),
            b"ref: refs/heads/main\n".to_vec(),
            "excluded directories are left alone"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn restoring_any_checkpoint_gives_back_the_tree_as_it_was(
        ops in prop::collection::vec(op(), 1..14),
        targets in prop::collection::vec(any::<usize>(), 1..4),
        watch in any::<bool>(),
    ) {
        run_sequence(&ops, &targets, watch)?;
    }
}

#[test]
fn a_partial_restore_touches_only_its_paths_and_outside_changes_need_force() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/a"), "a1").unwrap();
    std::fs::write(ws.join("b"), "b1").unwrap();
    let cp = Checkpoints::open(settings(&ws, &tmp.path().join("store"), true), "t").unwrap();
    let first = cp.take("edit", "src/a").unwrap();
    std::fs::write(ws.join("src/a"), "a2").unwrap();
    std::fs::write(ws.join("b"), "b2").unwrap();
    cp.finished(&first, None, Vec::new()).unwrap();
    let r = cp
        .restore(&first, &["src".into()], false, false, &|_, _| {})
        .unwrap();
    assert_eq!(r.changes.len(), 1, "{r:?}");
    assert_eq!(std::fs::read(ws.join("src/a")).unwrap(), b"a1");
    assert_eq!(std::fs::read(ws.join("b")).unwrap(), b"b2");
    // The person edits a file; a restore that would overwrite it needs force.
    std::fs::write(ws.join("b"), "by hand").unwrap();
    match cp.restore(&first, &[], false, false, &|_, _| {}) {
        Err(RestoreError::Outside(paths, _)) => assert_eq!(paths, ["b"]),
        other => panic!("{other:?}"),
    }
    assert_eq!(std::fs::read(ws.join("b")).unwrap(), b"by hand");
    let dry = cp.restore(&first, &[], true, false, &|_, _| {}).unwrap();
    assert!(dry.dry_run && dry.outside == ["b"], "{dry:?}");
    cp.restore(&first, &[], false, true, &|_, _| {}).unwrap();
    assert_eq!(std::fs::read(ws.join("b")).unwrap(), b"b1");
}

#[test]
fn a_damaged_store_is_reported_and_the_workspace_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    let store = tmp.path().join("store");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("keep"), "original").unwrap();
    let cp = Checkpoints::open(settings(&ws, &store, false), "t").unwrap();
    let id = cp.take("write", "keep").unwrap();
    std::fs::write(ws.join("keep"), "changed").unwrap();
    std::fs::write(ws.join("other"), "new").unwrap();
    cp.finished(&id, None, Vec::new()).unwrap();
    // Someone empties the blob of "original".
    let hash = {
        use sha2::Digest;
        let d = sha2::Sha256::digest(b"original");
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    let blob = store.join("objects").join(&hash[..2]).join(&hash[2..]);
    std::fs::write(&blob, "tampered").unwrap();
    match cp.restore(&id, &[], false, false, &|_, _| {}) {
        Err(RestoreError::Untouched(why)) => {
            assert!(why.to_string().contains("corrupted"), "{why}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(std::fs::read(ws.join("keep")).unwrap(), b"changed");
    assert_eq!(std::fs::read(ws.join("other")).unwrap(), b"new");
    let left: Vec<_> = std::fs::read_dir(&ws).unwrap().flatten().collect();
    assert_eq!(left.len(), 2, "no staging directory is left behind");
    assert!(cp.restore("999", &[], false, false, &|_, _| {}).is_err());
    assert!(cp.restore("../x", &[], false, false, &|_, _| {}).is_err());
}

#[test]
fn pruning_keeps_the_newest_and_what_they_need() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let mut s = settings(&ws, &tmp.path().join("store"), true);
    s.keep = 3;
    let cp = Checkpoints::open(s, "t").unwrap();
    let mut ids = Vec::new();
    for i in 0..6 {
        let id = cp.take("write", "f").unwrap();
        std::fs::write(ws.join("f"), format!("version {i}")).unwrap();
        cp.finished(&id, None, Vec::new()).unwrap();
        ids.push(id);
    }
    let pruned = cp.prune().unwrap();
    assert_eq!(pruned.checkpoints, 3, "{pruned:?}");
    assert!(pruned.blobs > 0);
    let kept = cp.list(10, false).unwrap();
    assert_eq!(kept.len(), 3);
    // The oldest kept still restores, after the prune, with the scanner's memory checked.
    cp.restore(&ids[3], &[], false, false, &|_, _| {}).unwrap();
    assert_eq!(std::fs::read(ws.join("f")).unwrap(), b"version 2");
    assert!(cp.restore(&ids[0], &[], false, false, &|_, _| {}).is_err());
}

fn cli(f: &Fixture, args: &[&str]) -> std::process::Output {
    let ws = f.ws.to_str().unwrap().to_string();
    let mut argv = vec!["checkpoints"];
    argv.extend(args);
    argv.extend(["--workspace", &ws]);
    f.command(&argv).output().unwrap()
}

#[test]
fn calls_take_checkpoints_that_the_cli_lists_diffs_and_restores() {
    let f = Fixture::new();
    f.write("src/a.rs", "fn a() {}\n");
    f.write("run.sh", "#!/bin/sh\n");
    let w = f.ok("write", r#"{"file_path": "new.txt", "content": "new\n"}"#);
    let first = w["data"]["checkpoint"].as_str().unwrap().to_string();
    let e = f.ok(
        "edit",
        r#"{"file_path": "src/a.rs", "search": "fn a() {}", "replace": "fn b() {}"}"#,
    );
    assert!(e["data"]["checkpoint"].is_string(), "{e:#}");
    let s = f.ok(
        "shell_run",
        r#"{"command": "rm -rf src && ln -s run.sh link && chmod 755 run.sh"}"#,
    );
    assert!(s["data"]["checkpoint"].is_string(), "{s:#}");
    // A command that only reads takes none.
    let ls = f.ok("shell_run", r#"{"command": "ls"}"#);
    assert!(ls["data"].get("checkpoint").is_none(), "{ls:#}");

    let out = cli(&f, &["list"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("shell_run rm -rf src"), "{text}");
    assert!(text.contains("edit src/a.rs"), "{text}");

    let out = cli(&f, &["diff", &first, "src"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("-fn a() {}"), "{text}");

    let out = cli(&f, &["restore", &first]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(f.ws.join("src/a.rs")).unwrap(),
        "fn a() {}\n"
    );
    assert!(!f.ws.join("new.txt").exists() && !f.ws.join("link").is_symlink());
    let mode = std::fs::metadata(f.ws.join("run.sh")).unwrap().mode() & 0o777;
    assert_eq!(mode, 0o644);
    // The restore is itself undoable: the answer names the checkpoint to go back to.
    let undo = text
        .split("whalebox checkpoints restore ")
        .nth(1)
        .and_then(|t| t.split('`').next())
        .unwrap()
        .to_string();
    assert!(cli(&f, &["restore", &undo]).status.success());
    assert!(f.ws.join("link").is_symlink() && !f.ws.join("src").exists());

    // The model's tools see the same store.
    let list = f.ok("checkpoint_list", "{}");
    assert!(
        list["text"]
            .as_str()
            .unwrap()
            .contains("whalebox checkpoints restore")
            || list["text"]
                .as_str()
                .unwrap()
                .contains("checkpoint_restore")
    );
    let bad = f.err("checkpoint_restore", r#"{"id": "4242"}"#, "not_found");
    assert!(
        bad["text"].as_str().unwrap().contains("checkpoint_list"),
        "{bad:#}"
    );
    f.err(
        "checkpoint_diff",
        &format!(r#"{{"id": "{first}", "path": "{}"}}"#, f.outside.display()),
        "path_denied",
    );
}

#[test]
fn a_store_outside_reach_is_reported_and_the_call_still_runs() {
    let f = Fixture::new().with_profile("[checkpoints]\ndir = \"/proc/whalebox-no-store-here\"\n");
    let w = f.ok("write", r#"{"file_path": "x.txt", "content": "x\n"}"#);
    assert!(f.ws.join("x.txt").exists());
    assert!(w["data"].get("checkpoint").is_none(), "{w:#}");
    assert!(
        w["data"]["checkpoint_missing"]
            .as_str()
            .unwrap_or_default()
            .contains("whalebox-no-store-here"),
        "{w:#}"
    );
    let l = f.err("checkpoint_list", "{}", "unsupported");
    assert!(
        l["text"].as_str().unwrap().contains("not available"),
        "{l:#}"
    );
}

/// Poll `cond` for up to `secs`.
fn wait_for(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < until {
        if cond() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    false
}

fn store_of(f: &Fixture) -> PathBuf {
    let base = f.home.join(".local/state/whalebox/checkpoints");
    std::fs::read_dir(&base)
        .unwrap()
        .flatten()
        .next()
        .expect("a store")
        .path()
}

#[test]
fn a_restore_killed_midway_is_finished_on_next_use() {
    let f = Fixture::new();
    for i in 0..3000 {
        f.write(&format!("d{}/f{i}", i % 40), format!("old {i}\n"));
    }
    let save = cli(&f, &["save", "-m", "before"]);
    assert!(
        save.status.success(),
        "{}",
        String::from_utf8_lossy(&save.stderr)
    );
    let w = f.ok(
        "shell_run",
        r#"{"command": "for d in d*; do for x in $d/*; do echo new > $x; done; done; mkdir made"}"#,
    );
    assert!(w["data"]["checkpoint"].is_string(), "{w:#}");
    let expected = copy_of(&f.ws);
    let store = store_of(&f);
    let ws = f.ws.to_str().unwrap().to_string();
    let mut killed_midway = 0;
    for _ in 0..3 {
        let mut child = f
            .command(&["checkpoints", "restore", "1", "--workspace", &ws, "--force"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        if wait_for(20, || store.join("journal.json").exists()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            killed_midway += 1;
        }
        let _ = child.wait();
        // The next use finishes it: the workspace is fully restored, never half.
        let out = cli(&f, &["list"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!store.join("journal.json").exists());
        let now = copy_of(&f.ws);
        assert!(now.contains_key("d0/f0"));
        assert_eq!(
            std::fs::read_to_string(f.ws.join("d0/f0")).unwrap(),
            "old 0\n"
        );
        assert!(!f.ws.join("made").exists());
        let staging = std::fs::read_dir(&f.ws)
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(".whalebox-restore-")
            })
            .count();
        assert_eq!(staging, 0);
        // Back to the later state for the next round.
        let last = cli(&f, &["list", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&last.stdout).unwrap();
        let newest = v["checkpoints"][0]["id"].as_str().unwrap().to_string();
        let again = cli(&f, &["restore", &newest, "--force"]);
        assert!(
            again.status.success(),
            "{}",
            String::from_utf8_lossy(&again.stderr)
        );
        assert_eq!(copy_of(&f.ws), expected);
    }
    eprintln!("killed {killed_midway} of 3 restores while their journal was there");
}

#[test]
fn a_checkpoint_killed_midway_leaves_a_store_that_works() {
    let f = Fixture::new();
    for i in 0..4000 {
        f.write(&format!("d{}/f{i}", i % 50), format!("content {i}\n"));
    }
    let ws = f.ws.to_str().unwrap().to_string();
    let mut child = f
        .command(&["checkpoints", "save", "-m", "first", "--workspace", &ws])
        .spawn()
        .unwrap();
    // Kill it somewhere in its scan (once the store exists).
    let base = f.home.join(".local/state/whalebox/checkpoints");
    wait_for(20, || base.exists());
    std::thread::sleep(std::time::Duration::from_millis(20));
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    let _ = child.wait();
    let save = cli(&f, &["save", "-m", "second"]);
    assert!(
        save.status.success(),
        "{}",
        String::from_utf8_lossy(&save.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_slice(&cli(&f, &["list", "--json"]).stdout).unwrap();
    let id = v["checkpoints"][0]["id"].as_str().unwrap().to_string();
    std::fs::remove_dir_all(f.ws.join("d7")).unwrap();
    let r = cli(&f, &["restore", &id, "--force"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(
        std::fs::read_to_string(f.ws.join("d7/f7")).unwrap(),
        "content 7\n"
    );
}

/// A tmpfs of `size`, or why the test cannot have one (it is skipped, saying so).
fn small_tmpfs(at: &Path, size: &str) -> Result<(), String> {
    std::fs::create_dir_all(at).map_err(|e| e.to_string())?;
    let out = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(at)
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_restores_nothing_and_a_full_store_still_lets_the_call_run() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    if let Err(why) = small_tmpfs(&ws, "1m") {
        eprintln!("SKIPPED: a full disk needs a tmpfs mount, which failed here: {why}");
        return;
    }
    let _unmount = Unmount(ws.clone());
    // The workspace: a disk that fills up when the restore stages its files.
    std::fs::write(ws.join("big"), vec![b'a'; 600 * 1024]).unwrap();
    std::fs::write(ws.join("small"), "small").unwrap();
    let cp = Checkpoints::open(settings(&ws, &tmp.path().join("store"), true), "t").unwrap();
    let id = cp.take("shell_run", "rm big").unwrap();
    std::fs::remove_file(ws.join("big")).unwrap();
    std::fs::write(ws.join("small"), "changed").unwrap();
    std::fs::write(ws.join("filler"), vec![b'b'; 700 * 1024]).unwrap();
    cp.finished(&id, None, Vec::new()).unwrap();
    let before = copy_of(&ws);
    match cp.restore(&id, &[], false, false, &|_, _| {}) {
        Err(RestoreError::Untouched(why)) => {
            assert_eq!(why.kind(), std::io::ErrorKind::StorageFull, "{why}")
        }
        other => panic!("expected a refused restore, got {other:?}"),
    }
    assert_eq!(copy_of(&ws), before, "nothing half-restored");
    // With room again, the same restore works.
    std::fs::remove_file(ws.join("filler")).unwrap();
    cp.restore(&id, &[], false, true, &|_, _| {}).unwrap();
    assert_eq!(std::fs::read(ws.join("small")).unwrap(), b"small");
    assert_eq!(std::fs::metadata(ws.join("big")).unwrap().len(), 600 * 1024);

    // The store on a full disk: the call runs, its checkpoint is reported missing.
    let f = Fixture::new();
    let store = f.root.join("store");
    if let Err(why) = small_tmpfs(&store, "64k") {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let _unmount2 = Unmount(store.clone());
    let f = f.with_profile(&format!("[checkpoints]\ndir = \"{}\"\n", store.display()));
    f.write("blob", vec![b'z'; 200 * 1024]);
    let w = f.ok("write", r#"{"file_path": "x.txt", "content": "x\n"}"#);
    assert_eq!(std::fs::read_to_string(f.ws.join("x.txt")).unwrap(), "x\n");
    let missing = w["data"]["checkpoint_missing"].as_str().unwrap_or_default();
    assert!(missing.contains("space"), "{w:#}");
}
