//! Shared fixture for the integration tests: a real temporary workspace (a git
//! repository, so .gitignore applies as in real use), a directory outside it, a private
//! HOME, and a way to run the real `whalebox` binary against them.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub struct Fixture {
    _tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub ws: PathBuf,
    pub outside: PathBuf,
    pub home: PathBuf,
    pub profile: Option<PathBuf>,
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_whalebox")
}

impl Fixture {
    pub fn new() -> Fixture {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical tempdir");
        let ws = root.join("ws");
        let outside = root.join("outside");
        let home = root.join("home");
        for d in [&ws, &outside, &home] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        let status = Command::new("git")
            .args(["init", "-q"])
            .current_dir(&ws)
            .status()
            .expect("git must be installed for the tests");
        assert!(status.success(), "git init failed");
        Fixture {
            _tmp: tmp,
            root,
            ws,
            outside,
            home,
            profile: None,
        }
    }

    /// Write `content` to `rel` inside the workspace, creating parents.
    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.ws.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir parents");
        }
        std::fs::write(&path, content).expect("write fixture file");
        path
    }

    /// Use a profile with `body` (written next to the workspace).
    pub fn with_profile(mut self, body: &str) -> Fixture {
        let path = self.root.join("profile.toml");
        std::fs::write(&path, body).expect("write profile");
        self.profile = Some(path);
        self
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(bin());
        cmd.args(args).current_dir(&self.ws);
        isolate(&mut cmd, &self.home);
        cmd
    }

    /// `whalebox call TOOL --args JSON` in the workspace; the exit code and envelope.
    pub fn call(&self, tool: &str, args: &str) -> (i32, Value) {
        let mut argv = vec!["call", tool, "--args", args];
        let ws = self.ws.to_str().expect("utf-8 path").to_string();
        let profile;
        if let Some(p) = &self.profile {
            profile = p.to_str().expect("utf-8 path").to_string();
            argv.extend(["--profile", &profile]);
        }
        argv.extend(["--workspace", &ws]);
        let out = self.command(&argv).output().expect("run whalebox");
        (code(&out), envelope(&out))
    }

    /// Same as [`call`], asserting success; returns the envelope.
    pub fn ok(&self, tool: &str, args: &str) -> Value {
        let (code, env) = self.call(tool, args);
        assert_eq!(code, 0, "expected success, got {env:#}");
        assert_eq!(env["ok"], true);
        env
    }

    /// Same as [`call`], asserting the error code; returns the envelope.
    pub fn err(&self, tool: &str, args: &str, expected: &str) -> Value {
        let (code, env) = self.call(tool, args);
        assert_eq!(env["code"], expected, "wrong code: {env:#}");
        assert_eq!(env["ok"], false);
        assert_eq!(code, 1, "tool errors exit 1: {env:#}");
        let text = env["text"].as_str().expect("text");
        assert!(
            text.contains("\nNext step: "),
            "every error names a next step: {text}"
        );
        env
    }
}

pub fn code(out: &Output) -> i32 {
    out.status.code().expect("exit code")
}

pub fn envelope(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON envelope ({e}):\nstdout: {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

pub fn text(env: &Value) -> &str {
    env["text"].as_str().expect("text field")
}

pub fn json_path(p: &Path) -> String {
    serde_json::to_string(p.to_str().expect("utf-8 path")).expect("json string")
}

/// Pids of live (non-zombie) processes whose command line is exactly `cmdline`.
#[allow(dead_code)]
pub fn processes_running(cmdline: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let args: Vec<String> = raw
            .split(|&b| b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                s.rsplit_once(')')
                    .map(|(_, r)| r.trim_start().starts_with('Z'))
            })
            .unwrap_or(false);
        if args.join(" ") == cmdline && !zombie {
            found.push(pid);
        }
    }
    found
}

/// The gated zsh nix/zsh/build.sh puts in target/zsh (tests/run builds it first).
/// The gated zsh the tests run: `$WHALEBOX_ZSH` (the Nix package's check phase points
/// it at the zsh-gated store path), else the one nix/zsh/build.sh builds.
pub fn gated_zsh() -> PathBuf {
    let zsh = std::env::var_os("WHALEBOX_ZSH")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/zsh/bin/zsh"));
    assert!(
        zsh.is_file(),
        "the gated zsh is missing at {}: run nix/zsh/build.sh (tests/run does)",
        zsh.display()
    );
    zsh
}

/// Why the kernel exec gate cannot be installed here (`whalebox doctor`'s answer), or
/// `None` when it can. Tests that need it skip with [`skip_without_kernel_gate`].
pub fn kernel_gate_missing() -> Option<String> {
    static ANSWER: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    ANSWER
        .get_or_init(|| {
            let out = Command::new(bin())
                .args(["doctor", "--json"])
                .output()
                .expect("run whalebox doctor");
            let report: Value =
                serde_json::from_slice(&out.stdout).expect("doctor --json prints JSON");
            let gate = &report["kernel_exec_gate"];
            (gate["works"] != true).then(|| gate["why"].as_str().unwrap_or("unknown").to_string())
        })
        .clone()
}

/// True (after saying so on stderr) when the kernel exec gate cannot be installed on this
/// machine (ptrace or seccomp refused, not x86_64): the calling test then returns.
pub fn skip_without_kernel_gate(test: &str) -> bool {
    match kernel_gate_missing() {
        None => false,
        Some(why) => {
            eprintln!("SKIPPED {test}: the kernel exec gate cannot be installed here: {why}");
            true
        }
    }
}

/// The `exec_boundary` for tests of what zsh's own gate decides: `required` where the
/// kernel gate can be installed, else `best-effort` (zsh's gate alone), saying so.
pub fn exec_boundary_mode() -> &'static str {
    match kernel_gate_missing() {
        None => "required",
        Some(why) => {
            eprintln!(
                "NOTE: exec_boundary = best-effort, zsh's gate alone: the kernel exec gate cannot be installed here: {why}"
            );
            "best-effort"
        }
    }
}

/// The kernel's Landlock ABI, as `whalebox doctor` reports it (0: none).
pub fn landlock_abi() -> i64 {
    let out = Command::new(bin())
        .args(["doctor", "--json"])
        .output()
        .expect("run whalebox doctor");
    let report: Value = serde_json::from_slice(&out.stdout).expect("doctor --json prints JSON");
    report["landlock"]["kernel_abi"].as_i64().unwrap_or(0)
}

/// The first `name` on PATH that lives under the system roots every sandbox grants
/// (/usr, /bin, /opt, /nix/store): `/usr/bin/touch` on Debian, a store path in a Nix
/// build. Tests name programs through this instead of hard-coding FHS paths, so they
/// also run in the Nix build sandbox (which has no /usr).
pub fn system_program(name: &str) -> PathBuf {
    find_system_program(name)
        .unwrap_or_else(|| panic!("no {name} on PATH under /usr, /bin, /opt or /nix/store"))
}

/// [`system_program`], or `None` when the machine does not have it there (for tests that
/// skip a case, saying so, when an optional program such as node is not installed).
pub fn find_system_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| {
            p.is_file()
                && p.canonicalize().is_ok_and(|real| {
                    ["/usr/", "/bin/", "/opt/", "/nix/store/"]
                        .iter()
                        .any(|root| real.starts_with(root))
                })
        })
}

/// Read from the PTY until `needle` shows up (or fail after 20 s).
pub fn read_until(reader: &mut Box<dyn std::io::Read + Send>, seen: &mut String, needle: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut buf = [0u8; 4096];
    while !seen.contains(needle) {
        assert!(
            std::time::Instant::now() < deadline,
            "never saw {needle:?} in {seen:?}"
        );
        match reader.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => seen.push_str(&String::from_utf8_lossy(&buf[..n])),
        }
    }
}

/// Run the binary as the tests do: `home` as HOME (checkpoint stores go under it), no
/// baked-in profile (a Nix wrapper, a sandbox devShell must not leak in), and no proxy (no
/// request of a test may leave this machine through one).
pub fn isolate(cmd: &mut Command, home: &Path) {
    cmd.env("HOME", home)
        .env_remove("XDG_STATE_HOME")
        .env_remove("RUST_LOG")
        .env_remove("WHALEBOX_PROFILE")
        .env_remove("WHALEBOX_POLICY")
        .env_remove("WHALEBOX_RELATIVE_TO");
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        cmd.env_remove(var);
    }
}

/// Whether this machine lets whalebox give a session a PID namespace with its own
/// `/proc` (as root, or in a user namespace of the caller's).
#[allow(dead_code)]
pub fn pid_namespaces() -> bool {
    ["-pf", "-Upf"].iter().any(|flags| {
        std::process::Command::new("unshare")
            .args([*flags, "--mount-proc", "true"])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}
