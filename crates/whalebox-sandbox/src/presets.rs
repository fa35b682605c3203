//! Toolchain presets: what a language ecosystem's tools need outside the workspace, as
//! data. `[landlock] presets = ["rust", "node", "python", "go", "nix"]` grants each
//! preset's entries; [`Sandbox::explain`](super::landlock::Sandbox::explain) uses the
//! same tables to name the preset that would allow a refused path.
//!
//! Each preset is a list of [`Entry`]s: a base directory (the home, or a tool's own
//! variable such as `CARGO_HOME`, read once when whalebox starts) plus a relative path,
//! and a [`Kind`] that says what the sandbox grants and what happens when it is missing:
//!
//! ```text
//! kind        grant              missing
//! cache       read-write         created (mkdir -p) when the sandbox is entered
//! lock-file   read-write file    created empty when the sandbox is entered
//! usage-db    read-only file     created empty when the sandbox is entered
//! toolchain   read + execute     skipped with a warning
//! config      read-only          skipped silently
//! socket      read-only          skipped silently
//! ```
//!
//! Some paths next to the granted ones are never granted, on purpose
//! ([`Excluded`]): registry credentials, and a single-user Nix store's database.
//!
//! ```
//! use std::path::Path;
//! use whalebox_sandbox::presets::{Context, Kind, Preset};
//!
//! let ctx = Context { home: Some(Path::new("/home/me")), cwd: Path::new("/"), var: &|_| None };
//! let rust = Preset::Rust.resolve(&ctx);
//! assert!(rust.iter().any(|p| p.path == Path::new("/home/me/.cargo/registry") && p.kind == Kind::Cache));
//! assert!(!rust.iter().any(|p| p.path.ends_with("credentials.toml")));
//! ```

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A toolchain preset, as named in `[landlock] presets`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename_all = "lowercase")]
pub enum Preset {
    /// cargo's registry and git caches (read-write), rustup and ~/.cargo/bin (read and
    /// execute), cargo's config (read-only); never credentials.toml.
    Rust,
    /// npm's cache and node-gyp's headers (read-write), nvm and volta (read and execute),
    /// ~/.npmrc (read-only).
    Node,
    /// pip's and uv's caches (read-write), pyenv and uv's Pythons (read and execute),
    /// pip's and uv's config (read-only); never ~/.pypirc.
    Python,
    /// Go's build cache and module cache (read-write), $GOPATH/bin and ~/sdk (read and
    /// execute), go env (read-only).
    Go,
    /// The Nix daemon's socket, profiles and ~/.nix-profile (read and execute),
    /// ~/.cache/nix (read-write), ~/.config/nix (read-only); the store is already
    /// readable. A single-user store is not made writable.
    Nix,
}

/// What a preset entry is, which decides its grant and what a missing one means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A cache the tool writes: read-write, created when the sandbox is entered (a
    /// directory that does not exist cannot be granted, and tools make them on first use).
    Cache,
    /// A lock file the tool creates in a directory that is not granted as a whole
    /// (cargo's `.package-cache` in `CARGO_HOME`, next to `credentials.toml`): read-write,
    /// created empty when the sandbox is entered.
    LockFile,
    /// A usage-tracking SQLite database in such a directory (cargo's `.global-cache`):
    /// created empty and granted read-only. Writable, SQLite would need to create and
    /// delete `NAME-journal` beside it, i.e. the whole directory; read-only, cargo skips
    /// its last-use tracking silently.
    UsageDb,
    /// An installed toolchain: read and execute; missing: skipped with a warning.
    Toolchain,
    /// Configuration: read-only; missing: skipped silently.
    Config,
    /// A daemon's unix socket: read-only (connecting needs no more before Landlock ABI
    /// 9); missing: skipped silently.
    Socket,
}

impl Kind {
    /// What the sandbox grants this kind, in words.
    pub fn access(self) -> &'static str {
        match self {
            Kind::Cache | Kind::LockFile => "read-write",
            Kind::Toolchain => "read and execute",
            Kind::UsageDb | Kind::Config | Kind::Socket => "read-only",
        }
    }

    /// Whether whalebox creates it when entering the sandbox.
    pub fn created(self) -> bool {
        matches!(self, Kind::Cache | Kind::LockFile | Kind::UsageDb)
    }
}

/// Where an entry's path starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Base {
    /// An absolute path.
    Root,
    Home,
    /// `$CARGO_HOME`, else `~/.cargo`.
    CargoHome,
    /// `$RUSTUP_HOME`, else `~/.rustup`.
    RustupHome,
    /// `$npm_config_cache` (npm reads its variables in any case), else `~/.npm`.
    NpmCache,
    /// `$XDG_CACHE_HOME`, else `~/.cache`.
    XdgCache,
    /// `$XDG_CONFIG_HOME`, else `~/.config`.
    XdgConfig,
    /// `$XDG_DATA_HOME`, else `~/.local/share`.
    XdgData,
    /// `$XDG_STATE_HOME`, else `~/.local/state`.
    XdgState,
    /// `$PIP_CACHE_DIR`, else the XDG cache's `pip`.
    PipCache,
    /// `$UV_CACHE_DIR`, else the XDG cache's `uv`.
    UvCache,
    /// `$PYENV_ROOT`, else `~/.pyenv`.
    PyenvRoot,
    /// The first entry of `$GOPATH`, else `~/go`.
    GoPath,
    /// `$GOCACHE`, else the XDG cache's `go-build`.
    GoCache,
    /// `$GOMODCACHE`, else `$GOPATH/pkg/mod`.
    GoModCache,
}

/// One path of a preset.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    base: Base,
    /// Relative to the base ("" for the base itself).
    rel: &'static str,
    pub kind: Kind,
    /// What it is, for messages ("cargo's registry cache").
    pub what: &'static str,
}

const fn e(base: Base, rel: &'static str, kind: Kind, what: &'static str) -> Entry {
    Entry {
        base,
        rel,
        kind,
        what,
    }
}

use Base::*;
use Kind::*;

const RUST: &[Entry] = &[
    e(CargoHome, "registry", Cache, "cargo's registry cache"),
    e(CargoHome, "git", Cache, "cargo's git cache"),
    e(
        CargoHome,
        ".package-cache",
        LockFile,
        "cargo's package cache lock",
    ),
    e(
        CargoHome,
        ".package-cache-mutate",
        LockFile,
        "cargo's package cache lock",
    ),
    e(
        CargoHome,
        ".global-cache",
        UsageDb,
        "cargo's cache usage database",
    ),
    e(RustupHome, "", Toolchain, "rustup's toolchains"),
    e(CargoHome, "bin", Toolchain, "cargo's installed programs"),
    e(CargoHome, "config.toml", Config, "cargo's configuration"),
    e(CargoHome, "config", Config, "cargo's configuration"),
];

const NODE: &[Entry] = &[
    e(NpmCache, "", Cache, "npm's cache"),
    e(XdgCache, "node-gyp", Cache, "node-gyp's header cache"),
    e(Home, ".nvm", Toolchain, "nvm's Node versions"),
    e(Home, ".volta", Toolchain, "volta's toolchains"),
    e(Home, ".npmrc", Config, "npm's configuration"),
];

const PYTHON: &[Entry] = &[
    e(PipCache, "", Cache, "pip's cache"),
    e(UvCache, "", Cache, "uv's cache"),
    e(PyenvRoot, "", Toolchain, "pyenv's Pythons"),
    e(XdgData, "uv", Toolchain, "uv's Pythons and tools"),
    e(XdgConfig, "pip", Config, "pip's configuration"),
    e(Home, ".pip/pip.conf", Config, "pip's configuration"),
    e(XdgConfig, "uv", Config, "uv's configuration"),
];

const GO: &[Entry] = &[
    e(GoCache, "", Cache, "Go's build cache"),
    e(GoModCache, "", Cache, "Go's module cache"),
    e(GoPath, "bin", Toolchain, "go install's programs"),
    e(Home, "sdk", Toolchain, "Go SDKs (golang.org/dl)"),
    e(XdgConfig, "go/env", Config, "go env -w settings"),
];

const NIX: &[Entry] = &[
    e(
        Root,
        "/nix/var/nix/daemon-socket/socket",
        Socket,
        "the Nix daemon's socket",
    ),
    e(Root, "/nix/var/nix/profiles", Toolchain, "Nix profiles"),
    e(Home, ".nix-profile", Toolchain, "your Nix profile"),
    e(XdgState, "nix/profiles", Toolchain, "your Nix profiles"),
    e(XdgCache, "nix", Cache, "Nix's cache (fetchers, eval cache)"),
    e(XdgConfig, "nix", Config, "Nix's user configuration"),
    e(
        Home,
        ".nix-defexpr",
        Config,
        "nix-env's expressions (channels)",
    ),
];

/// Paths next to a preset's that no preset grants, and why: a refusal there gets this
/// reason instead of "add the preset".
#[derive(Debug, Clone, Copy)]
struct Exclusion {
    preset: Preset,
    base: Base,
    rel: &'static str,
    /// What it is ("holds cargo's registry tokens").
    why: &'static str,
    /// What to do instead.
    instead: &'static str,
}

const EXCLUDED: &[Exclusion] = &[
    Exclusion {
        preset: Preset::Rust,
        base: CargoHome,
        rel: "credentials.toml",
        why: "holds cargo's registry tokens",
        instead: "give a command a token through the environment (CARGO_REGISTRY_TOKEN, \
                  [shell] pass_env) if it must publish",
    },
    Exclusion {
        preset: Preset::Rust,
        base: CargoHome,
        rel: "credentials",
        why: "holds cargo's registry tokens",
        instead: "give a command a token through the environment (CARGO_REGISTRY_TOKEN, \
                  [shell] pass_env) if it must publish",
    },
    Exclusion {
        preset: Preset::Python,
        base: Home,
        rel: ".pypirc",
        why: "holds package upload credentials",
        instead: "give a command a token through the environment (TWINE_PASSWORD, \
                  [shell] pass_env) if it must upload",
    },
    Exclusion {
        preset: Preset::Nix,
        base: Root,
        rel: "/nix/var/nix/db",
        why: "is a single-user Nix store's database, which a sandboxed command may not write",
        instead: "use a multi-user Nix through its daemon (NIX_REMOTE=daemon), or run this \
                  outside the sandbox",
    },
];

/// How to look up the environment a preset's base directories depend on.
pub struct Context<'a> {
    /// The home directory (`None`: entries under it are left out).
    pub home: Option<&'a Path>,
    /// What a relative variable value is relative to.
    pub cwd: &'a Path,
    /// A variable's value (the process environment, or a test's).
    pub var: &'a dyn Fn(&str) -> Option<OsString>,
}

impl Context<'_> {
    /// A variable's value as a path: unset or empty is `None`; relative is against `cwd`.
    fn path_var(&self, name: &str) -> Option<PathBuf> {
        let value = (self.var)(name).filter(|v| !v.is_empty())?;
        Some(self.cwd.join(value))
    }

    fn home_join(&self, rel: &str) -> Option<PathBuf> {
        self.home.map(|h| h.join(rel))
    }

    fn base(&self, base: Base) -> Option<PathBuf> {
        match base {
            Root => Some(PathBuf::from("/")),
            Home => self.home.map(Path::to_path_buf),
            CargoHome => self
                .path_var("CARGO_HOME")
                .or_else(|| self.home_join(".cargo")),
            RustupHome => self
                .path_var("RUSTUP_HOME")
                .or_else(|| self.home_join(".rustup")),
            NpmCache => self
                .path_var("npm_config_cache")
                .or_else(|| self.path_var("NPM_CONFIG_CACHE"))
                .or_else(|| self.home_join(".npm")),
            XdgCache => self
                .path_var("XDG_CACHE_HOME")
                .or_else(|| self.home_join(".cache")),
            XdgConfig => self
                .path_var("XDG_CONFIG_HOME")
                .or_else(|| self.home_join(".config")),
            XdgData => self
                .path_var("XDG_DATA_HOME")
                .or_else(|| self.home_join(".local/share")),
            XdgState => self
                .path_var("XDG_STATE_HOME")
                .or_else(|| self.home_join(".local/state")),
            PipCache => self
                .path_var("PIP_CACHE_DIR")
                .or_else(|| Some(self.base(XdgCache)?.join("pip"))),
            UvCache => self
                .path_var("UV_CACHE_DIR")
                .or_else(|| Some(self.base(XdgCache)?.join("uv"))),
            PyenvRoot => self
                .path_var("PYENV_ROOT")
                .or_else(|| self.home_join(".pyenv")),
            GoPath => (self.var)("GOPATH")
                .and_then(|v| {
                    // A list, like PATH: Go uses the first entry.
                    let first = std::env::split_paths(&v).next()?;
                    (!first.as_os_str().is_empty()).then(|| self.cwd.join(first))
                })
                .or_else(|| self.home_join("go")),
            GoCache => self
                .path_var("GOCACHE")
                .or_else(|| Some(self.base(XdgCache)?.join("go-build"))),
            GoModCache => self
                .path_var("GOMODCACHE")
                .or_else(|| Some(self.base(GoPath)?.join("pkg/mod"))),
        }
    }

    fn join(&self, base: Base, rel: &str) -> Option<PathBuf> {
        let base = self.base(base)?;
        let path = if rel.is_empty() { base } else { base.join(rel) };
        Some(super::normalize(&path))
    }
}

impl Base {
    /// The variables that move this base (what [`Context::base`] reads).
    fn vars(self) -> &'static [&'static str] {
        match self {
            Root | Home => &[],
            CargoHome => &["CARGO_HOME"],
            RustupHome => &["RUSTUP_HOME"],
            NpmCache => &["npm_config_cache", "NPM_CONFIG_CACHE"],
            XdgCache => &["XDG_CACHE_HOME"],
            XdgConfig => &["XDG_CONFIG_HOME"],
            XdgData => &["XDG_DATA_HOME"],
            XdgState => &["XDG_STATE_HOME"],
            PipCache => &["PIP_CACHE_DIR", "XDG_CACHE_HOME"],
            UvCache => &["UV_CACHE_DIR", "XDG_CACHE_HOME"],
            PyenvRoot => &["PYENV_ROOT"],
            GoPath => &["GOPATH"],
            GoCache => &["GOCACHE", "XDG_CACHE_HOME"],
            GoModCache => &["GOMODCACHE", "GOPATH"],
        }
    }
}

/// One preset path, resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PresetPath {
    pub preset: Preset,
    pub path: PathBuf,
    pub kind: Kind,
    /// What the sandbox grants it, in words.
    pub access: &'static str,
    pub what: &'static str,
    /// Whether it existed when the profile was read (a missing cache, lock file or
    /// usage database is created when the sandbox is entered).
    pub exists: bool,
}

/// A path no preset grants (see [`Excluded`]), resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Excluded {
    pub preset: Preset,
    pub path: PathBuf,
    pub why: &'static str,
    pub instead: &'static str,
}

/// The environment variables presets read when whalebox starts.
pub const ENV_VARS: &[&str] = &[
    "CARGO_HOME",
    "RUSTUP_HOME",
    "npm_config_cache",
    "NPM_CONFIG_CACHE",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "PIP_CACHE_DIR",
    "UV_CACHE_DIR",
    "PYENV_ROOT",
    "GOPATH",
    "GOCACHE",
    "GOMODCACHE",
];

impl Preset {
    /// Every preset, in the order the docs list them.
    pub const ALL: &'static [Preset] = &[
        Preset::Rust,
        Preset::Node,
        Preset::Python,
        Preset::Go,
        Preset::Nix,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Preset::Rust => "rust",
            Preset::Node => "node",
            Preset::Python => "python",
            Preset::Go => "go",
            Preset::Nix => "nix",
        }
    }

    pub fn from_name(name: &str) -> Option<Preset> {
        Self::ALL.iter().copied().find(|p| p.name() == name)
    }

    /// "rust, node, python, go, nix".
    pub fn known() -> String {
        Self::ALL
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub fn entries(self) -> &'static [Entry] {
        match self {
            Preset::Rust => RUST,
            Preset::Node => NODE,
            Preset::Python => PYTHON,
            Preset::Go => GO,
            Preset::Nix => NIX,
        }
    }

    /// The variables that move this preset's paths: shell commands get them from the
    /// server's environment (like `[shell] pass_env`), so a tool looks where the
    /// sandbox granted.
    pub fn env_vars(self) -> Vec<&'static str> {
        let mut vars: Vec<&'static str> = Vec::new();
        for entry in self.entries() {
            for v in entry.base.vars() {
                if !vars.contains(v) {
                    vars.push(v);
                }
            }
        }
        vars
    }

    /// This preset's paths in `ctx` (entries under an unknown home are left out).
    pub fn resolve(self, ctx: &Context) -> Vec<PresetPath> {
        self.entries()
            .iter()
            .filter_map(|entry| {
                let path = ctx.join(entry.base, entry.rel)?;
                Some(PresetPath {
                    preset: self,
                    exists: path.exists(),
                    path,
                    kind: entry.kind,
                    access: entry.kind.access(),
                    what: entry.what,
                })
            })
            .collect()
    }
}

impl Preset {
    /// Directories this toolchain makes inside a workspace, rebuilt from the sources by
    /// the tool itself: checkpoints leave them out by default (`/name`: at the top only,
    /// so the Linux tree's `drivers/target` is kept; a bare name: at any depth).
    pub fn workspace_caches(self) -> &'static [&'static str] {
        match self {
            Preset::Rust => &["/target"],
            Preset::Node => &["node_modules"],
            Preset::Python => &[
                "/.venv",
                "__pycache__",
                ".pytest_cache",
                ".mypy_cache",
                ".ruff_cache",
                "/.tox",
            ],
            Preset::Go => &[],
            Preset::Nix => &["/.direnv"],
        }
    }

    /// Files at the top of a workspace that say it uses this preset's toolchain.
    pub fn markers(self) -> &'static [&'static str] {
        match self {
            Preset::Rust => &["Cargo.toml"],
            Preset::Node => &["package.json"],
            Preset::Python => &[
                "pyproject.toml",
                "requirements.txt",
                "requirements-dev.txt",
                "setup.py",
                "Pipfile",
                "uv.lock",
            ],
            Preset::Go => &["go.mod"],
            Preset::Nix => &["flake.nix", "default.nix", "shell.nix"],
        }
    }
}

/// The presets `presets = "auto"` turns on for `workspace`, each with the marker file
/// that chose it: a marker at the top of the workspace (and `requirements*.txt` for
/// Python). Only the top: a directory deep in a tree says little about the build.
pub fn detect(workspace: &Path) -> Vec<(Preset, String)> {
    let mut found = Vec::new();
    for preset in Preset::ALL.iter().copied() {
        let marker = preset
            .markers()
            .iter()
            .map(|m| m.to_string())
            .find(|m| workspace.join(m).is_file())
            .or_else(|| {
                (preset == Preset::Python)
                    .then(|| requirements_file(workspace))
                    .flatten()
            });
        if let Some(marker) = marker {
            found.push((preset, marker));
        }
    }
    found
}

fn requirements_file(workspace: &Path) -> Option<String> {
    let mut names: Vec<String> = std::fs::read_dir(workspace)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("requirements") && n.ends_with(".txt"))
        .collect();
    names.sort();
    names.into_iter().next()
}

/// `[landlock] presets`: "auto" (from the workspace's marker files) or a list.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum PresetChoice {
    #[default]
    Auto,
    List(Vec<Preset>),
}

impl<'de> Deserialize<'de> for PresetChoice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Choice;
        impl<'de> serde::de::Visitor<'de> for Choice {
            type Value = PresetChoice;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("\"auto\" or a list of presets")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<PresetChoice, E> {
                if v == "auto" {
                    Ok(PresetChoice::Auto)
                } else {
                    Err(E::custom(format!(
                        "[landlock] presets: {v:?} is neither \"auto\" nor a list; write presets = \"auto\" or presets = [{}]",
                        Preset::ALL
                            .iter()
                            .map(|p| format!("{:?}", p.name()))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )))
                }
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<PresetChoice, A::Error> {
                let mut list = Vec::new();
                while let Some(p) = seq.next_element::<Preset>()? {
                    list.push(p);
                }
                Ok(PresetChoice::List(list))
            }
        }
        d.deserialize_any(Choice)
    }
}

impl JsonSchema for PresetChoice {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PresetChoice".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let preset = generator.subschema_for::<Preset>();
        schemars::json_schema!({
            "anyOf": [
                {"const": "auto", "description": "the presets whose marker files the workspace holds"},
                {"type": "array", "items": preset}
            ]
        })
    }
}

impl<'de> Deserialize<'de> for Preset {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Preset::from_name(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "[landlock] presets: unknown preset {name:?}; known presets: {}",
                Preset::known()
            ))
        })
    }
}

impl std::fmt::Display for Preset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Every preset's paths, for explaining refusals (enabled or not).
pub fn catalog(ctx: &Context) -> Vec<PresetPath> {
    Preset::ALL.iter().flat_map(|p| p.resolve(ctx)).collect()
}

/// The paths no preset grants, resolved.
pub fn excluded(ctx: &Context) -> Vec<Excluded> {
    EXCLUDED
        .iter()
        .filter_map(|x| {
            Some(Excluded {
                preset: x.preset,
                path: ctx.join(x.base, x.rel)?,
                why: x.why,
                instead: x.instead,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
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
}
