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

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

mod context;
mod table;

pub use context::Context;
pub use table::Entry;
use table::{EXCLUDED, GO, NIX, NODE, PYTHON, RUST};

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
mod tests;
