//! Every combination of fence settings a profile can name either runs commands or is
//! refused when the profile loads, naming the setting: `[landlock] mode` × `network` ×
//! `[network] mode` × `kernel` × `exec_boundary` × `exec_gate` × a policy inside or
//! outside the workspace, as root and as an unprivileged user. A command that runs must
//! do real work: write and rename across directories in the workspace, use /dev/shm
//! where the session has its own, and be kept from writing outside the workspace where
//! Landlock is on. (Found this way: `network = "deny"` broke every command, twice.)

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use serde_json::{Value, json};

/// One combination, as profile lines, and a name for reports.
#[derive(Debug, Clone)]
struct Combination {
    name: String,
    profile: String,
    landlock: bool,
    policy_outside: bool,
}

fn combinations(zsh: &Path) -> Vec<Combination> {
    let mut out = Vec::new();
    let landlocks: &[(&str, &str)] = &[
        ("off", "allow"),
        ("best-effort", "allow"),
        ("best-effort", "deny"),
        ("enforce", "allow"),
        ("enforce", "deny"),
    ];
    let networks: &[(&str, &str)] = &[
        ("off", "auto"),
        ("best-effort", "auto"),
        ("best-effort", "namespace"),
        ("best-effort", "landlock"),
        ("enforce", "auto"),
        ("enforce", "namespace"),
        ("enforce", "landlock"),
    ];
    let boundaries: &[(&str, &str)] = &[
        ("off", "auto"),
        ("best-effort", "auto"),
        ("best-effort", "notify"),
        ("best-effort", "ptrace"),
        ("required", "auto"),
        ("required", "notify"),
        ("required", "ptrace"),
    ];
    for (ll, llnet) in landlocks {
        for (net, kernel) in networks {
            for (boundary, gate) in boundaries {
                for outside in [false, true] {
                    // Relative to the profile file, beside the workspace.
                    let policy = if outside {
                        "outside/policy.toml"
                    } else {
                        "ws/policy.toml"
                    };
                    let connect = if *llnet == "deny" {
                        "connect = [5432]\nbind = [8000]\n"
                    } else {
                        ""
                    };
                    out.push(Combination {
                        name: format!(
                            "landlock {ll}/{llnet}, network {net}/{kernel}, exec_boundary {boundary}/{gate}, policy {}",
                            if outside { "outside" } else { "inside" }
                        ),
                        profile: format!(
                            "policy = \"{policy}\"\n[landlock]\nmode = \"{ll}\"\nnetwork = \"{llnet}\"\n{connect}\
                             [network]\nmode = \"{net}\"\nkernel = \"{kernel}\"\n\
                             [shell]\nexec_boundary = \"{boundary}\"\nexec_gate = \"{gate}\"\nzsh = \"{}\"\n",
                            zsh.display()
                        ),
                        landlock: *ll != "off",
                        policy_outside: outside,
                    });
                }
            }
        }
    }
    out
}

/// What one combination did, or None when it behaved.
fn check(c: &Combination, bin: &Path, root: &Path, user: Option<&str>) -> Option<String> {
    let profile = root.join("profile.toml");
    std::fs::write(&profile, &c.profile).unwrap();
    let ws = root.join("ws");
    let command = "set -e; mkdir -p a/b c; echo x > a/b/f; mv a/b/f c/g; ln c/g a/h; \
        if [ -w /dev/shm ]; then echo s > /dev/shm/m && cat /dev/shm/m >/dev/null; fi; \
        if touch ../outside/escaped 2>/dev/null; then echo WROTE-OUTSIDE; fi; echo ran";
    let args = json!({ "command": command }).to_string();
    let mut cmd = match user {
        Some(uid) => {
            let mut c = Command::new("setpriv");
            c.args(["--reuid", uid, "--regid", uid, "--clear-groups"])
                .arg(bin);
            c
        }
        None => Command::new(bin),
    };
    cmd.args(["call", "shell_run", "--args", &args, "--profile"])
        .arg(&profile)
        .arg("--workspace")
        .arg(&ws)
        .current_dir(&ws);
    common::isolate(&mut cmd, &root.join("home"));
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let _ = std::fs::remove_file(root.join("outside/escaped"));
    for d in ["a", "c"] {
        let _ = std::fs::remove_dir_all(ws.join(d));
    }
    match out.status.code() {
        // Refused when the profile loads: it must say which setting, and how to change it.
        Some(2) => {
            let names = [
                "[landlock]",
                "[network]",
                "exec_boundary",
                "exec_gate",
                "mode = ",
            ];
            if names.iter().any(|n| stderr.contains(n)) && stderr.contains("profile") {
                None
            } else {
                Some(format!(
                    "refused at load without naming the setting: {stderr}"
                ))
            }
        }
        Some(0) | Some(1) => {
            let env: Value = match serde_json::from_slice(&out.stdout) {
                Ok(v) => v,
                Err(_) => return Some(format!("no envelope; stderr: {stderr}")),
            };
            let text = env["text"].as_str().unwrap_or_default();
            if env["ok"] != true || env["data"]["exit_code"] != 0 || !text.contains("ran") {
                return Some(format!("the command did not run: {text}"));
            }
            if c.landlock && text.contains("WROTE-OUTSIDE") {
                return Some(format!(
                    "Landlock on, yet a write outside the workspace landed: {text}"
                ));
            }
            None
        }
        other => Some(format!("exit {other:?}; stderr: {stderr}")),
    }
}

/// A scratch root for `user` (None: the test's own): workspace, outside (with a copy of
/// the policy), home, and the binary and the gated zsh where that user can run them.
fn scratch(user: Option<&str>) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::Builder::new()
        .prefix("whalebox-matrix-")
        .tempdir_in("/tmp")
        .unwrap();
    let root = tmp.path().to_path_buf();
    for d in ["ws", "outside", "home", "bin"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    let policy = "version = 1\ndefault = \"allow\"\n";
    std::fs::write(root.join("ws/policy.toml"), policy).unwrap();
    std::fs::write(root.join("outside/policy.toml"), policy).unwrap();
    let bin = root.join("bin/whalebox");
    std::fs::copy(common::bin(), &bin).unwrap();
    // The gated zsh's gate program lives next to whalebox.
    let gate = Path::new(common::bin()).with_file_name("whalebox-gate");
    std::fs::copy(&gate, root.join("bin/whalebox-gate")).unwrap();
    // The gated zsh with its modules (its prefix), as the profile names it.
    let prefix = common::gated_zsh()
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .to_path_buf();
    let zsh_root = root.join("zsh");
    let copied = Command::new("cp")
        .arg("-a")
        .arg(&prefix)
        .arg(&zsh_root)
        .status()
        .unwrap();
    assert!(copied.success());
    // A zsh compiled for target/zsh finds its modules there; the copy is only run, and a
    // failure to load a module would show as a command that did not run.
    let zsh = if user.is_some() {
        zsh_root.join("bin/zsh")
    } else {
        common::gated_zsh()
    };
    if let Some(uid) = user {
        let status = Command::new("chown")
            .args(["-R", &format!("{uid}:{uid}")])
            .arg(&root)
            .status()
            .unwrap();
        assert!(status.success());
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(root.join("ws"))
        .status()
        .unwrap();
    assert!(git.success());
    if let Some(uid) = user {
        let _ = Command::new("chown")
            .args(["-R", &format!("{uid}:{uid}")])
            .arg(root.join("ws"))
            .status();
    }
    (tmp, bin, zsh)
}

fn walk(user: Option<&str>) {
    let (tmp, bin, zsh) = scratch(user);
    let all = combinations(&zsh);
    let total = all.len();
    let queue = Mutex::new(all);
    let failures = Mutex::new(Vec::new());
    // Two workers, each with its own scratch root (one profile file, one workspace).
    std::thread::scope(|s| {
        for worker in 0..2 {
            let (queue, failures, bin) = (&queue, &failures, &bin);
            let base = tmp.path().to_path_buf();
            s.spawn(move || {
                let root = base.join(format!("w{worker}"));
                for d in ["ws", "outside", "home"] {
                    std::fs::create_dir_all(root.join(d)).unwrap();
                }
                std::fs::copy(base.join("ws/policy.toml"), root.join("ws/policy.toml")).unwrap();
                std::fs::copy(
                    base.join("outside/policy.toml"),
                    root.join("outside/policy.toml"),
                )
                .unwrap();
                let _ = Command::new("git")
                    .args(["init", "-q"])
                    .current_dir(root.join("ws"))
                    .status();
                if let Some(uid) = user {
                    let _ = Command::new("chown")
                        .args(["-R", &format!("{uid}:{uid}")])
                        .arg(&root)
                        .status();
                }
                loop {
                    let Some(c) = queue.lock().unwrap().pop() else {
                        break;
                    };
                    if let Some(why) = check(&c, bin, &root, user) {
                        failures.lock().unwrap().push(format!("{}: {why}", c.name));
                    }
                    let _ = c.policy_outside;
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {total} combinations neither ran nor were refused at load:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("{total} combinations, each ran or was refused at load");
}

#[test]
fn every_fence_combination_runs_or_is_refused_at_load() {
    walk(None);
}

#[test]
fn every_fence_combination_runs_or_is_refused_at_load_unprivileged() {
    // SAFETY: geteuid cannot fail.
    if unsafe { nix::libc::geteuid() } != 0 || common::find_system_program("setpriv").is_none() {
        eprintln!("SKIPPED: needs root (to become nobody) and setpriv");
        return;
    }
    walk(Some("65534"));
}
