//! Toolchain presets with the real tools and the real kernel: for each of rust, node,
//! python, go and nix, the tool fails (or runs without its cache) inside the sandbox
//! without the preset, with a hint naming the preset, and works with it, writing its
//! real caches. Every test has a private HOME and serves its registry on 127.0.0.1:
//! nothing leaves this machine and nothing touches the real caches.
//!
//! A missing tool fails the test with what to install (`.ci/run` installs them);
//! `WHALEBOX_SKIP_TOOLCHAIN_TESTS=1` skips every toolchain test, saying so (for the
//! Nix build sandbox: no registry toolchains among its inputs). Without Landlock
//! in the kernel they skip, loudly. Sandboxed commands get the PATH the tests were
//! started with.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::Fixture;
use serde_json::{Value, json};

fn landlock(test: &str) -> bool {
    let abi = common::landlock_abi();
    if abi == 0 {
        eprintln!("SKIPPED {test}: this kernel has no Landlock (nothing to fence)");
    }
    abi > 0
}

/// The PATH these tests were started with: the sandboxed commands find programs the
/// same way (on Debian /usr/bin; in a Nix build, the store paths of its inputs).
fn test_path() -> String {
    std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into())
}

/// Whether `program ARGS` runs; if not, fail saying what installs it. With
/// WHALEBOX_SKIP_TOOLCHAIN_TESTS=1 every toolchain test skips, saying so.
fn have(test: &str, program: &str, args: &[&str], package: &str) -> bool {
    if std::env::var_os("WHALEBOX_SKIP_TOOLCHAIN_TESTS").is_some_and(|v| v == "1") {
        eprintln!(
            "SKIPPED {test}: WHALEBOX_SKIP_TOOLCHAIN_TESTS=1 (the Nix build sandbox has no \
             registry toolchains among its inputs)"
        );
        return false;
    }
    // A throwaway HOME: even `--version` may leave logs or caches there.
    let home = tempfile::tempdir().expect("tempdir");
    let found = Command::new(program)
        .args(args)
        .env("HOME", home.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if found {
        return true;
    }
    panic!(
        "{test}: `{program}` is not installed; .ci/run installs it (apt-get install {package}); \
         set WHALEBOX_SKIP_TOOLCHAIN_TESTS=1 to skip the toolchain tests"
    );
}

/// A static file server on 127.0.0.1: `GET /a/b` serves `root/a/b`, `GET /a/` serves
/// `root/a/index.html`, with Cache-Control and ETag headers so clients cache what they
/// fetch.
/// One thread per connection; it lives as long as the test process.
fn serve(root: PathBuf) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let root = root.clone();
            std::thread::spawn(move || answer(stream, &root));
        }
    });
    port
}

fn answer(stream: TcpStream, root: &Path) {
    let mut reader = BufReader::new(&stream);
    let mut request = String::new();
    if reader.read_line(&mut request).is_err() {
        return;
    }
    loop {
        let mut header = String::new();
        match reader.read_line(&mut header) {
            Ok(0) | Err(_) => break,
            Ok(_) if header == "\r\n" || header == "\n" => break,
            Ok(_) => {}
        }
    }
    let target = request.split_whitespace().nth(1).unwrap_or("/");
    let target = target.split('?').next().unwrap_or("/");
    let mut path = root.join(target.trim_start_matches('/'));
    if target.ends_with('/') {
        path.push("index.html");
    }
    let safe = !target.split('/').any(|c| c == "..");
    let mut out = &stream;
    match std::fs::read(&path) {
        Ok(body) if safe && path.is_file() => {
            let _ = write!(
                out,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nContent-Type: {}\r\n\
                 Cache-Control: max-age=600\r\nETag: \"{}\"\r\nConnection: close\r\n\r\n",
                body.len(),
                if body.starts_with(b"{") {
                    "application/json"
                } else if path.extension().is_some_and(|e| e == "html") {
                    "text/html"
                } else {
                    "application/octet-stream"
                },
                // pip's cache keeps a response only with a Date or an ETag.
                body.iter()
                    .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(*b)))
            );
            let _ = out.write_all(&body);
        }
        _ => {
            let _ = write!(
                out,
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
    }
}

/// `whalebox run --profile P -- ARGV` in the workspace, with only the environment
/// given (plus HOME and a system PATH): nothing from the test's own environment
/// (CARGO_HOME, PIP_*, npm_config_*, GO*) leaks in.
fn run(f: &Fixture, profile: &Path, env: &[(&str, &str)], argv: &[&str]) -> Output {
    let mut cmd = Command::new(common::bin());
    cmd.arg("run")
        .arg("--profile")
        .arg(profile)
        .arg("--")
        .args(argv)
        .current_dir(&f.ws)
        .env_clear()
        .env("HOME", &f.home)
        .env("PATH", test_path())
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run whalebox")
}

/// A profile file in the fixture's root: the workspace, Landlock enforced (when the
/// kernel has it: the tests that need it skip before), the exec boundary off (the
/// policy is not what these tests are about), plus `landlock` lines. The registries are
/// reached as `registry.test` through the network fence's proxy (the profile's host map
/// names it 127.0.0.1), as a task reaches crates.io, npm or PyPI.
fn profile(f: &Fixture, name: &str, landlock: &str) -> PathBuf {
    let path = f.root.join(name);
    let mode = if common::landlock_abi() > 0 {
        "enforce"
    } else {
        "best-effort"
    };
    std::fs::write(
        &path,
        format!(
            "workspace = \"ws\"\n[shell]\nexec_boundary = \"off\"\n[landlock]\nmode = \"{mode}\"\n{landlock}\n{REGISTRY_NETWORK}"
        ),
    )
    .unwrap();
    path
}

/// The `[network]` section every profile here has: the loopback registry by name.
const REGISTRY_NETWORK: &str = "[network]\nallow_domains = [\"registry.test\"]\nallow_private = [\"127.0.0.1\"]\nports = []\n[network.hosts]\n\"registry.test\" = \"127.0.0.1\"\n";

fn show(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The `whalebox: the sandbox refused …` lines of a run.
fn report(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("whalebox: the sandbox refused "))
        .map(str::to_string)
        .collect()
}

fn assert_hint(out: &Output, under: &Path, preset: &str, profile: &Path) {
    let lines = report(out);
    let want_preset = format!("it is in preset \"{preset}\"");
    let want_fix = format!(
        "add presets = [\"{preset}\"] to [landlock] in {}",
        profile.display()
    );
    assert!(
        lines.iter().any(|l| {
            l.starts_with(&format!(
                "whalebox: the sandbox refused {}",
                under.display()
            )) && l.contains(&want_preset)
                && l.contains(&want_fix)
        }),
        "no report naming preset {preset} for a path under {}:\n{}",
        under.display(),
        show(out)
    );
}

/// The system's python3 (with venv and ensurepip): the first on PATH under the system
/// roots, so not a pyenv shim in the home directory, which the sandbox cannot run.
fn python3() -> String {
    common::find_system_program("python3")
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "python3".into())
}

fn python(f: &Fixture, script: &str) {
    let out = Command::new(python3())
        .arg("-c")
        .arg(script)
        .current_dir(&f.root)
        .output()
        .expect("python3");
    assert!(out.status.success(), "{}", show(&out));
}

fn files_under(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| {
            if e.path().is_dir() {
                files_under(&e.path())
            } else {
                1
            }
        })
        .sum()
}

/// cargo: a fresh crate with a dependency from a sparse registry on 127.0.0.1, so
/// cargo writes its real caches ($CARGO_HOME/registry/{index,cache,src}, in the private
/// home's ~/.cargo). The toolchain is the one running this test, read-only.
#[test]
fn rust_preset_lets_cargo_build_a_crate_with_a_registry_dependency() {
    if !landlock("rust preset")
        || !have("rust preset", "cargo", &["--version"], "cargo (or rustup)")
    {
        return;
    }
    let f = Fixture::new();
    // The cargo (and rustc beside it) that runs these tests: through rustup, RUSTUP_HOME
    // says where its toolchains are, which the preset grants read and execute.
    let cargo = PathBuf::from(std::env::var("CARGO").unwrap_or_else(|_| env!("CARGO").into()));
    let cargo = cargo.canonicalize().unwrap_or(cargo);
    let bin = cargo.parent().unwrap().to_path_buf();
    // The toolchain's root: rustc loads its libraries from ../lib.
    let toolchain = bin.parent().unwrap().to_path_buf();
    let rustup_home = std::env::var("RUSTUP_HOME").ok();
    let under_rustup = rustup_home
        .as_deref()
        .is_some_and(|h| toolchain.starts_with(h));

    // The dependency, packaged by cargo itself, and a sparse index for it.
    let reg = f.root.join("registry");
    let dep = f.root.join("wbdep");
    std::fs::create_dir_all(dep.join("src")).unwrap();
    std::fs::write(
        dep.join("Cargo.toml"),
        "[package]\nname = \"wbdep\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
         description = \"a test dependency\"\nlicense = \"MIT\"\n",
    )
    .unwrap();
    std::fs::write(dep.join("src/lib.rs"), "pub fn answer() -> u32 { 42 }\n").unwrap();
    let packaged = Command::new(&cargo)
        .args(["package", "--no-verify", "--allow-dirty", "--offline"])
        .current_dir(&dep)
        .env("CARGO_HOME", f.root.join("packaging-cargo-home"))
        .env("CARGO_TARGET_DIR", f.root.join("packaging-target"))
        .output()
        .unwrap();
    assert!(packaged.status.success(), "{}", show(&packaged));
    let krate = f.root.join("packaging-target/package/wbdep-0.1.0.crate");
    std::fs::create_dir_all(reg.join("dl")).unwrap();
    std::fs::copy(&krate, reg.join("dl/wbdep-0.1.0.crate")).unwrap();
    let port = serve(reg.clone());
    std::fs::create_dir_all(reg.join("index/wb/de")).unwrap();
    std::fs::write(
        reg.join("index/config.json"),
        json!({"dl": format!("http://registry.test:{port}/dl/{{crate}}-{{version}}.crate")})
            .to_string(),
    )
    .unwrap();
    python(
        &f,
        "import hashlib, json\n\
         c = hashlib.sha256(open('registry/dl/wbdep-0.1.0.crate', 'rb').read()).hexdigest()\n\
         open('registry/index/wb/de/wbdep', 'w').write(json.dumps({'name': 'wbdep', 'vers': '0.1.0', \
         'deps': [], 'cksum': c, 'features': {}, 'yanked': False}) + '\\n')\n",
    );

    // The crate: crates.io replaced by the loopback registry (a project config, so the
    // home's cargo config is the user's own).
    f.write(
        "Cargo.toml",
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nwbdep = \"0.1\"\n",
    );
    f.write(
        "src/main.rs",
        "fn main() { println!(\"answer {}\", wbdep::answer()); }\n",
    );
    f.write(
        ".cargo/config.toml",
        format!(
            "[source.crates-io]\nreplace-with = \"loopback\"\n[source.loopback]\nregistry = \"sparse+http://registry.test:{port}/index/\"\n"
        ),
    );
    let path = format!("{}:{}", bin.display(), test_path());
    let mut env: Vec<(&str, &str)> = vec![("PATH", &path), ("CARGO_TERM_COLOR", "never")];
    if let Some(h) = rustup_home.as_deref() {
        env.push(("RUSTUP_HOME", h));
    }
    // The toolchain itself, when it is not under RUSTUP_HOME (or a system root).
    let rox = if under_rustup {
        String::new()
    } else {
        format!("rox = [\"{}\"]\n", toolchain.display())
    };
    let cargo_home = f.home.join(".cargo");

    // Without the preset: the registry cache is refused, and run says which preset.
    let without = profile(
        &f,
        "without.toml",
        &format!("presets = []\nrox = [\"{}\"]\n", toolchain.display()),
    );
    let out = run(&f, &without, &env, &["cargo", "build"]);
    assert_eq!(out.status.code(), Some(101), "{}", show(&out));
    assert_hint(&out, &cargo_home.join("registry"), "rust", &without);

    // With it: cargo reads the home's config, writes its caches and lock files, and the
    // credentials next to them stay unreadable.
    std::fs::create_dir_all(&cargo_home).unwrap();
    std::fs::write(cargo_home.join("config.toml"), "[net]\nretry = 1\n").unwrap();
    std::fs::write(
        cargo_home.join("credentials.toml"),
        "[registry]\ntoken = \"never-readable\"\n",
    )
    .unwrap();
    // With it, chosen by `presets = "auto"` (the default) from the workspace's Cargo.toml.
    let with = profile(&f, "with.toml", &rox);
    let out = run(&f, &with, &env, &["cargo", "run", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "answer 42\n");
    assert!(report(&out).is_empty(), "{}", show(&out));
    for cache in ["registry/index", "registry/cache", "registry/src"] {
        assert!(
            files_under(&cargo_home.join(cache)) > 0,
            "cargo wrote nothing under {cache}"
        );
    }
    for lock in [".package-cache", ".package-cache-mutate", ".global-cache"] {
        assert!(cargo_home.join(lock).is_file(), "{lock} was not created");
    }
    let out = run(
        &f,
        &with,
        &env,
        &["cat", cargo_home.join("credentials.toml").to_str().unwrap()],
    );
    assert_ne!(out.status.code(), Some(0), "{}", show(&out));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("never-readable"));
    let lines = report(&out);
    assert!(
        lines.iter().any(|l| l.contains("registry tokens")
            && l.contains("left out of preset \"rust\" on purpose")
            && !l.contains("add presets")),
        "{}",
        show(&out)
    );
}

/// npm ci: a package-lock resolving one dependency from a registry on 127.0.0.1 (the
/// packument and an `npm pack`ed tarball), so npm fills its cache (~/.npm/_cacache).
#[test]
fn node_preset_lets_npm_ci_fill_its_cache() {
    if !landlock("node preset") || !have("node preset", "npm", &["--version"], "nodejs npm") {
        return;
    }
    let f = Fixture::new();
    let reg = f.root.join("registry");
    let pkg = f.root.join("wbdep");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("package.json"),
        r#"{"name": "wbdep", "version": "1.0.0", "main": "index.js"}"#,
    )
    .unwrap();
    std::fs::write(pkg.join("index.js"), "module.exports = () => 42;\n").unwrap();
    let packed = Command::new("npm")
        .args(["pack", "--json", "--pack-destination"])
        .arg(&f.root)
        .current_dir(&pkg)
        .env("npm_config_cache", f.root.join("packing-cache"))
        .env("npm_config_update_notifier", "false")
        .output()
        .unwrap();
    assert!(packed.status.success(), "{}", show(&packed));
    let info: Value = serde_json::from_slice(&packed.stdout).expect("npm pack --json");
    let integrity = info[0]["integrity"].as_str().unwrap().to_string();
    let shasum = info[0]["shasum"].as_str().unwrap().to_string();
    std::fs::create_dir_all(reg.join("wbdep/-")).unwrap();
    std::fs::rename(
        f.root.join("wbdep-1.0.0.tgz"),
        reg.join("wbdep/-/wbdep-1.0.0.tgz"),
    )
    .unwrap();
    let port = serve(reg.clone());
    let tarball = format!("http://registry.test:{port}/wbdep/-/wbdep-1.0.0.tgz");
    // The packument, index.html so that /wbdep/ and /wbdep both answer.
    let packument = json!({
        "name": "wbdep",
        "dist-tags": {"latest": "1.0.0"},
        "versions": {"1.0.0": {"name": "wbdep", "version": "1.0.0",
            "dist": {"tarball": tarball, "integrity": integrity, "shasum": shasum}}}
    });
    std::fs::write(reg.join("wbdep/index.html"), packument.to_string()).unwrap();
    std::fs::copy(reg.join("wbdep/index.html"), reg.join("wbdep.json")).unwrap();
    f.write(
        "package.json",
        r#"{"name": "app", "version": "1.0.0", "dependencies": {"wbdep": "1.0.0"}}"#,
    );
    f.write(
        "package-lock.json",
        json!({
            "name": "app", "version": "1.0.0", "lockfileVersion": 3, "requires": true,
            "packages": {
                "": {"name": "app", "version": "1.0.0", "dependencies": {"wbdep": "1.0.0"}},
                "node_modules/wbdep": {"version": "1.0.0", "resolved": tarball, "integrity": integrity}
            }
        })
        .to_string(),
    );
    let registry = format!("http://registry.test:{port}/");
    let env = [
        ("npm_config_registry", registry.as_str()),
        ("npm_config_update_notifier", "false"),
    ];
    let npm_ci = ["npm", "ci", "--no-audit", "--no-fund"];

    let without = profile(&f, "without.toml", "presets = []\n");
    let out = run(&f, &without, &env, &npm_ci);
    assert_ne!(out.status.code(), Some(0), "{}", show(&out));
    assert_hint(&out, &f.home.join(".npm"), "node", &without);

    let with = profile(&f, "with.toml", "presets = [\"node\"]\n");
    let out = run(&f, &with, &env, &npm_ci);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        files_under(&f.home.join(".npm/_cacache")) > 0,
        "npm cached nothing"
    );
    let out = run(
        &f,
        &with,
        &[],
        &["node", "-e", "console.log(require('wbdep')())"],
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "42\n",
        "{}",
        show(&out)
    );
}

/// pip in a venv in the workspace, from a simple index on 127.0.0.1 serving a wheel
/// built here; pip writes its HTTP cache (~/.cache/pip/http*) only with the preset.
/// Without it pip carries on with its cache disabled, so the hint is checked in a
/// shell_run result (the diagnosis comes whatever the exit status).
#[test]
fn python_preset_gives_pip_in_a_workspace_venv_its_cache() {
    if !landlock("python preset")
        || !have(
            "python preset",
            &python3(),
            &["-c", "import ensurepip, venv"],
            "python3 python3-venv",
        )
    {
        return;
    }
    let f = Fixture::new();
    python(
        &f,
        "import zipfile, hashlib, base64, os\n\
         os.makedirs('registry/simple/wbpkg')\n\
         files = {'wbpkg/__init__.py': 'ANSWER = 42\\n',\n\
           'wbpkg-1.0.dist-info/METADATA': 'Metadata-Version: 2.1\\nName: wbpkg\\nVersion: 1.0\\n',\n\
           'wbpkg-1.0.dist-info/WHEEL': 'Wheel-Version: 1.0\\nGenerator: whalebox-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n'}\n\
         record = [n + ',sha256=' + base64.urlsafe_b64encode(hashlib.sha256(c.encode()).digest()).rstrip(b'=').decode() + ',' + str(len(c)) for n, c in files.items()]\n\
         files['wbpkg-1.0.dist-info/RECORD'] = '\\n'.join(record + ['wbpkg-1.0.dist-info/RECORD,,']) + '\\n'\n\
         with zipfile.ZipFile('registry/simple/wbpkg/wbpkg-1.0-py3-none-any.whl', 'w') as z:\n\
         \x20   [z.writestr(n, c) for n, c in files.items()]\n\
         open('registry/simple/wbpkg/index.html', 'w').write('<a href=\"wbpkg-1.0-py3-none-any.whl\">wbpkg-1.0-py3-none-any.whl</a>')\n",
    );
    let port = serve(f.root.join("registry"));
    // --trusted-host: pip caches plain-HTTP downloads only from trusted hosts.
    let install = format!(
        "{} -m venv .venv && .venv/bin/pip install --disable-pip-version-check \
         --no-input --trusted-host registry.test --index-url http://registry.test:{port}/simple/ wbpkg \
         && .venv/bin/python -c 'import wbpkg; print(\"answer\", wbpkg.ANSWER)'",
        python3()
    );
    let pip_cache = f.home.join(".cache/pip");

    // Without the preset, through shell_run (the MCP tool): pip works without a cache,
    // and the result's sandbox diagnosis names the preset. (Commands get a rebuilt
    // environment; [shell] env keeps pip off the machine's own configuration.)
    let without = profile(
        &f,
        "without.toml",
        "presets = []\n[shell.env]\nPIP_CONFIG_FILE = \"/dev/null\"\n",
    );
    let out = Command::new(common::bin())
        .args(["call", "shell_run", "--args"])
        .arg(json!({"command": install, "yield_time_ms": 50000}).to_string())
        .arg("--profile")
        .arg(&without)
        .current_dir(&f.ws)
        .env_clear()
        .env("HOME", &f.home)
        .env("PATH", test_path())
        .output()
        .unwrap();
    let envelope = common::envelope(&out);
    let text = common::text(&envelope);
    assert!(text.contains("answer 42"), "{envelope:#}");
    assert!(text.contains("cache has been disabled"), "{envelope:#}");
    let diagnosis = envelope["data"]["diagnoses"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|d| d["kind"] == "sandbox")
        .unwrap_or_else(|| panic!("no sandbox diagnosis: {envelope:#}"));
    let message = diagnosis["message"].as_str().unwrap();
    assert!(
        message.starts_with(&pip_cache.display().to_string())
            && message.contains("is in preset \"python\"")
            && message.contains("add presets = [\"python\"]"),
        "{message}"
    );
    assert_eq!(files_under(&pip_cache), 0, "pip cached without the preset");

    std::fs::remove_dir_all(f.ws.join(".venv")).unwrap();
    let with = profile(&f, "with.toml", "presets = [\"python\"]\n");
    let out = run(
        &f,
        &with,
        &[("PIP_CONFIG_FILE", "/dev/null")],
        &["sh", "-c", &install],
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("answer 42"),
        "{}",
        show(&out)
    );
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("cache has been disabled"),
        "{}",
        show(&out)
    );
    assert!(files_under(&pip_cache) > 0, "pip cached nothing");
}

/// go test on a module with one dependency from a file:// module proxy in the
/// workspace: Go fills its module cache (~/go/pkg/mod) and build cache
/// (~/.cache/go-build).
#[test]
fn go_preset_lets_go_test_fill_its_build_and_module_caches() {
    if !landlock("go preset") || !have("go preset", "go", &["version"], "golang-go") {
        return;
    }
    let f = Fixture::new();
    let proxy = f.ws.join("goproxy");
    python(
        &f,
        &format!(
            "import zipfile, os\n\
             p = '{}/example.com/wbdep/@v'\n\
             os.makedirs(p)\n\
             mod = 'module example.com/wbdep\\n\\ngo 1.19\\n'\n\
             open(p + '/list', 'w').write('v1.0.0\\n')\n\
             open(p + '/v1.0.0.info', 'w').write('{{\"Version\":\"v1.0.0\",\"Time\":\"2024-01-01T00:00:00Z\"}}\\n')\n\
             open(p + '/v1.0.0.mod', 'w').write(mod)\n\
             with zipfile.ZipFile(p + '/v1.0.0.zip', 'w') as z:\n\
             \x20   z.writestr('example.com/wbdep@v1.0.0/go.mod', mod)\n\
             \x20   z.writestr('example.com/wbdep@v1.0.0/wbdep.go', 'package wbdep\\n\\nfunc Answer() int {{ return 42 }}\\n')\n",
            proxy.display()
        ),
    );
    f.write(
        "go.mod",
        "module example.com/app\n\ngo 1.19\n\nrequire example.com/wbdep v1.0.0\n",
    );
    f.write(
        "app_test.go",
        "package app\n\nimport (\n\t\"testing\"\n\n\t\"example.com/wbdep\"\n)\n\n\
         func TestAnswer(t *testing.T) {\n\tif wbdep.Answer() != 42 {\n\t\tt.Fatal(\"wrong answer\")\n\t}\n}\n",
    );
    let goproxy = format!("file://{}", proxy.display());
    let env = [
        ("GOPROXY", goproxy.as_str()),
        ("GOFLAGS", "-mod=mod"),
        ("GOSUMDB", "off"),
        ("GOTOOLCHAIN", "local"),
    ];

    let without = profile(&f, "without.toml", "presets = []\n");
    let out = run(&f, &without, &env, &["go", "test", "./..."]);
    assert_ne!(out.status.code(), Some(0), "{}", show(&out));
    // Go stops at the first cache it cannot make: the module cache (~/go on the way to
    // ~/go/pkg/mod) or the build cache, depending on the version.
    assert_hint(&out, &f.home, "go", &without);

    let with = profile(&f, "with.toml", "presets = [\"go\"]\n");
    let out = run(&f, &with, &env, &["go", "test", "./..."]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("ok  \texample.com/app"),
        "{}",
        show(&out)
    );
    assert!(files_under(&f.home.join(".cache/go-build")) > 0);
    assert!(
        f.home
            .join("go/pkg/mod/example.com/wbdep@v1.0.0/wbdep.go")
            .is_file()
    );
}

/// nix: the preset grants the profiles (read and execute) and makes ~/.cache/nix;
/// `nix-instantiate --eval` works under it through the daemon protocol
/// (NIX_REMOTE=daemon, as a multi-user install's clients run). A single-user store
/// stays read-only, and the refusal says so.
#[test]
fn nix_preset_grants_profiles_and_eval_works() {
    if !landlock("nix preset") || !have("nix preset", "nix-instantiate", &["--version"], "nix-bin")
    {
        return;
    }
    let f = Fixture::new();
    let profiles = Path::new("/nix/var/nix/profiles");
    let without = profile(&f, "without.toml", "presets = []\n");
    let with = profile(&f, "with.toml", "presets = [\"nix\"]\n");
    if profiles.is_dir() {
        let out = run(&f, &without, &[], &["ls", "/nix/var/nix/profiles"]);
        assert_ne!(out.status.code(), Some(0), "{}", show(&out));
        assert_hint(&out, profiles, "nix", &without);
        let out = run(&f, &with, &[], &["ls", "/nix/var/nix/profiles"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    }
    let eval = ["nix-instantiate", "--eval", "-E", "1 + 1"];
    let out = run(&f, &with, &[("NIX_REMOTE", "daemon")], &eval);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "2\n",
        "{}",
        show(&out)
    );
    assert!(f.home.join(".cache/nix").is_dir(), "~/.cache/nix not made");
    // As root with a single-user store, Nix opens the store's database for writing;
    // the preset does not make it writable, and the report says what to do instead.
    let db = Path::new("/nix/var/nix/db");
    // SAFETY: getuid cannot fail and touches no memory.
    if unsafe { nix::libc::getuid() } == 0 && db.is_dir() {
        let out = run(&f, &with, &[], &eval);
        assert_ne!(out.status.code(), Some(0), "{}", show(&out));
        assert!(
            report(&out).iter().any(|l| l.contains("/nix/var/nix/db")
                && l.contains("left out of preset \"nix\" on purpose")
                && l.contains("NIX_REMOTE=daemon")),
            "{}",
            show(&out)
        );
    }
}

/// The report comes only after a failure, only for what the sandbox refused, and
/// names the key when no preset applies.
#[test]
fn run_reports_refused_paths_only_after_a_failure() {
    if !landlock("run report") {
        return;
    }
    let f = Fixture::new();
    let p = profile(&f, "p.toml", "");
    let outside = f.outside.join("made");
    let touch = format!("touch {}", outside.display());
    // Refused, but the command succeeds: no report.
    let out = run(&f, &p, &[], &["sh", "-c", &format!("{touch}; exit 0")]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(report(&out).is_empty(), "{}", show(&out));
    // Refused and failing: the path, and the profile keys that would allow it.
    let out = run(&f, &p, &[], &["sh", "-c", &touch]);
    assert_ne!(out.status.code(), Some(0));
    let lines = report(&out);
    assert_eq!(lines.len(), 1, "{}", show(&out));
    assert!(
        lines[0].starts_with(&format!(
            "whalebox: the sandbox refused {}: ",
            outside.display()
        )) && lines[0].contains("read_roots")
            && lines[0].contains(&format!("[landlock] ro / rox / rw in {}", p.display())),
        "{}",
        lines[0]
    );
    // The command's own stderr still came through, before the report.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.find("Permission denied").unwrap() < stderr.find("whalebox: the sandbox").unwrap(),
        "{stderr}"
    );
    // A permission error the sandbox did not cause (the workspace is writable): none.
    let out = run(
        &f,
        &p,
        &[],
        &[
            "sh",
            "-c",
            "echo \"x: $PWD/locked: Permission denied\" >&2; exit 3",
        ],
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(report(&out).is_empty(), "{}", show(&out));
}

#[test]
fn an_unknown_preset_is_a_profile_error_listing_the_known_ones() {
    let f = Fixture::new();
    let p = profile(&f, "typo.toml", "presets = [\"rust\", \"rsut\"]\n");
    let out = f
        .command(&["profile", "check", p.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{}:6:", p.display()))
            && stderr.contains(
                "[landlock] presets: unknown preset \"rsut\"; known presets: rust, node, python, go, nix"
            ),
        "{stderr}"
    );
}

/// Missing toolchain directories are skipped with a warning; doctor and profile check
/// show the preset paths and create nothing; entering the sandbox creates the caches.
#[test]
fn presets_are_shown_without_writing_and_made_on_entering() {
    let f = Fixture::new();
    let p = profile(
        &f,
        "all.toml",
        "presets = [\"rust\", \"node\", \"python\", \"go\", \"nix\"]\n",
    );
    let p = p.to_str().unwrap();
    // Only HOME: the test's own CARGO_HOME / RUSTUP_HOME must not move the presets.
    let clean = |args: &[&str]| {
        Command::new(common::bin())
            .args(args)
            .current_dir(&f.ws)
            .env_clear()
            .env("HOME", &f.home)
            .env("PATH", test_path())
            .output()
            .unwrap()
    };
    let check = clean(&["profile", "check", p]);
    assert_eq!(check.status.code(), Some(0), "{}", show(&check));
    let report: Value = serde_json::from_slice(&check.stdout).unwrap();
    let warnings = report["warnings"].to_string();
    for missing in [".nvm", ".volta", ".rustup", "go/bin"] {
        assert!(
            warnings.contains(&f.home.join(missing).display().to_string()),
            "{missing} not warned about: {warnings}"
        );
    }
    assert!(
        String::from_utf8_lossy(&check.stderr).contains("toolchain directories"),
        "{}",
        show(&check)
    );
    let paths = report["landlock"]["preset_paths"].as_array().unwrap();
    let npm = paths
        .iter()
        .find(|p| p["path"] == json!(f.home.join(".npm")))
        .expect("the npm cache is listed");
    assert_eq!(npm["preset"], "node");
    assert_eq!(npm["access"], "read-write");
    assert_eq!(npm["exists"], false);
    let doctor = clean(&["doctor", "--profile", p]);
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        text.contains("presets:    rust, node, python, go, nix")
            && text.contains("created when the sandbox is entered"),
        "{text}"
    );
    let made: Vec<_> = std::fs::read_dir(&f.home).unwrap().flatten().collect();
    assert!(made.is_empty(), "doctor / profile check wrote {made:?}");

    if !landlock("presets made on entering") {
        return;
    }
    let out = clean(&["run", "--profile", p, "--", "true"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    for cache in [
        ".cargo/registry",
        ".npm",
        ".cache/pip",
        ".cache/go-build",
        "go/pkg/mod",
    ] {
        assert!(f.home.join(cache).is_dir(), "{cache} was not created");
    }
    assert!(f.home.join(".cargo/.package-cache").is_file());
    // Never the credentials, nor CARGO_HOME as a whole.
    assert!(!f.home.join(".cargo/credentials.toml").exists());
}

/// shell_run commands get a rebuilt environment; the variables the presets on read
/// (CARGO_HOME …) come through, so tools use the directories the sandbox granted.
#[test]
fn shell_commands_see_the_variables_their_presets_read() {
    let f = Fixture::new();
    let cargo_home = f.root.join("ci-cargo");
    let call = |profile: &Path| {
        let out = Command::new(common::bin())
            .args(["call", "shell_run", "--args"])
            .arg(json!({"command": "echo \"cargo=$CARGO_HOME go=$GOCACHE\""}).to_string())
            .arg("--profile")
            .arg(profile)
            .current_dir(&f.ws)
            .env_clear()
            .env("HOME", &f.home)
            .env("PATH", test_path())
            .env("CARGO_HOME", &cargo_home)
            .env("GOCACHE", f.root.join("gocache"))
            .output()
            .unwrap();
        common::text(&common::envelope(&out)).to_string()
    };
    let text = call(&profile(&f, "rust.toml", "presets = [\"rust\"]\n"));
    assert!(
        text.starts_with(&format!("cargo={} go=\n", cargo_home.display())),
        "{text}"
    );
    let text = call(&profile(&f, "none.toml", ""));
    assert!(text.starts_with("cargo= go=\n"), "{text}");
}

/// The gated zsh names only the bare program when it may not execute it ("zsh:1:
/// permission denied: hello"); run finds it in PATH and reports that path.
#[test]
fn run_names_the_program_the_shell_could_not_execute() {
    if !landlock("run report for a program") {
        return;
    }
    let f = Fixture::new();
    let bin = f.outside.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let hello = bin.join("hello");
    std::fs::write(&hello, "#!/bin/sh\necho hello\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hello, std::fs::Permissions::from_mode(0o755)).unwrap();
    let p = f.root.join("gated.toml");
    std::fs::write(
        &p,
        format!(
            "workspace = \"ws\"\n[shell]\nexec_boundary = \"{}\"\nzsh = \"{}\"\n[landlock]\nmode = \"enforce\"\n",
            common::exec_boundary_mode(),
            common::gated_zsh().display()
        ),
    )
    .unwrap();
    let path = format!("{}:{}", bin.display(), test_path());
    let out = run(&f, &p, &[("PATH", &path)], &["hello"]);
    assert_eq!(out.status.code(), Some(126), "{}", show(&out));
    let lines = report(&out);
    assert!(
        lines.iter().any(|l| l.starts_with(&format!(
            "whalebox: the sandbox refused {}: it is outside every sandbox root",
            hello.display()
        )) && l.contains("rox")),
        "{}",
        show(&out)
    );
}
