use std::ffi::OsString;

use super::Kind::*;
use super::*;
use std::collections::HashMap;

fn with_env<T>(vars: &[(&str, &str)], f: impl FnOnce(&Context) -> T) -> T {
    let map: HashMap<String, OsString> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), OsString::from(v)))
        .collect();
    let var = move |name: &str| map.get(name).cloned();
    f(&Context {
        home: Some(Path::new("/home/me")),
        cwd: Path::new("/work"),
        var: &var,
    })
}

fn paths(preset: Preset, vars: &[(&str, &str)]) -> Vec<(String, Kind)> {
    with_env(vars, |ctx| {
        preset
            .resolve(ctx)
            .into_iter()
            .map(|p| (p.path.display().to_string(), p.kind))
            .collect()
    })
}

fn has(list: &[(String, Kind)], path: &str, kind: Kind) -> bool {
    list.iter().any(|(p, k)| p == path && *k == kind)
}

#[test]
fn defaults_live_in_the_home_directory() {
    let rust = paths(Preset::Rust, &[]);
    assert!(has(&rust, "/home/me/.cargo/registry", Cache), "{rust:?}");
    assert!(has(&rust, "/home/me/.cargo/git", Cache));
    assert!(has(&rust, "/home/me/.cargo/.package-cache", LockFile));
    assert!(has(&rust, "/home/me/.cargo/.global-cache", UsageDb));
    assert!(has(&rust, "/home/me/.rustup", Toolchain));
    assert!(has(&rust, "/home/me/.cargo/config.toml", Config));
    // CARGO_HOME itself is never granted: it holds credentials.toml.
    assert!(!rust.iter().any(|(p, _)| p == "/home/me/.cargo"));
    assert!(!rust.iter().any(|(p, _)| p.contains("credentials")));
    let go = paths(Preset::Go, &[]);
    assert!(has(&go, "/home/me/.cache/go-build", Cache), "{go:?}");
    assert!(has(&go, "/home/me/go/pkg/mod", Cache));
    let python = paths(Preset::Python, &[]);
    assert!(has(&python, "/home/me/.cache/pip", Cache), "{python:?}");
    assert!(has(&python, "/home/me/.cache/uv", Cache));
    assert!(!python.iter().any(|(p, _)| p.contains("pypirc")));
    let node = paths(Preset::Node, &[]);
    assert!(has(&node, "/home/me/.npm", Cache), "{node:?}");
    let nix = paths(Preset::Nix, &[]);
    assert!(has(&nix, "/nix/var/nix/daemon-socket/socket", Socket));
    assert!(has(&nix, "/home/me/.cache/nix", Cache));
    assert!(!nix.iter().any(|(p, _)| p.starts_with("/nix/var/nix/db")));
}

#[test]
fn the_ecosystems_variables_move_their_directories() {
    let rust = paths(
        Preset::Rust,
        &[("CARGO_HOME", "/ci/cargo"), ("RUSTUP_HOME", "rel/rustup")],
    );
    assert!(has(&rust, "/ci/cargo/registry", Cache), "{rust:?}");
    assert!(has(&rust, "/work/rel/rustup", Toolchain), "{rust:?}");
    let go = paths(Preset::Go, &[("GOPATH", "/gp:/other"), ("GOCACHE", "/gc")]);
    assert!(has(&go, "/gc", Cache), "{go:?}");
    assert!(has(&go, "/gp/pkg/mod", Cache), "{go:?}");
    assert!(has(&go, "/gp/bin", Toolchain), "{go:?}");
    let go = paths(
        Preset::Go,
        &[("GOMODCACHE", "/mods"), ("XDG_CACHE_HOME", "/x")],
    );
    assert!(has(&go, "/mods", Cache) && has(&go, "/x/go-build", Cache));
    let python = paths(
        Preset::Python,
        &[("XDG_CACHE_HOME", "/x"), ("UV_CACHE_DIR", "/uv")],
    );
    assert!(has(&python, "/x/pip", Cache) && has(&python, "/uv", Cache));
    let python = paths(Preset::Python, &[("PIP_CACHE_DIR", "/p/../pip")]);
    assert!(has(&python, "/pip", Cache), "{python:?}");
    let node = paths(Preset::Node, &[("NPM_CONFIG_CACHE", "/n")]);
    assert!(has(&node, "/n", Cache), "{node:?}");
    // An empty variable is unset.
    let node = paths(Preset::Node, &[("npm_config_cache", "")]);
    assert!(has(&node, "/home/me/.npm", Cache), "{node:?}");
}

#[test]
fn names_round_trip_and_unknown_names_list_the_known_ones() {
    for p in Preset::ALL {
        assert_eq!(Preset::from_name(p.name()), Some(*p));
    }
    #[derive(Deserialize)]
    struct T {
        #[allow(dead_code)]
        presets: Vec<Preset>,
    }
    let err = toml::from_str::<T>("presets = [\"rust\", \"rsut\"]")
        .err()
        .unwrap()
        .to_string();
    assert!(
            err.contains(
                "[landlock] presets: unknown preset \"rsut\"; known presets: rust, node, python, go, nix"
            ),
            "{err}"
        );
}

#[test]
fn every_variable_a_preset_reads_is_documented_and_passed_on() {
    let mut all: Vec<&str> = Preset::ALL.iter().flat_map(|p| p.env_vars()).collect();
    all.sort();
    all.dedup();
    let mut documented: Vec<&str> = ENV_VARS.to_vec();
    documented.sort();
    assert_eq!(all, documented);
    assert_eq!(Preset::Rust.env_vars(), ["CARGO_HOME", "RUSTUP_HOME"]);
}

#[test]
fn no_home_leaves_out_what_lives_there() {
    let var = |_: &str| None;
    let ctx = Context {
        home: None,
        cwd: Path::new("/"),
        var: &var,
    };
    let nix = Preset::Nix.resolve(&ctx);
    assert!(nix.iter().all(|p| p.path.starts_with("/nix")), "{nix:?}");
    assert!(Preset::Rust.resolve(&ctx).is_empty());
}
