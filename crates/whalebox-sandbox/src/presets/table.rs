//! The presets' table: each ecosystem's paths (caches, lock files, toolchains, configs,
//! sockets), relative to the base directory its variables move, and the paths beside
//! them that no preset grants, with why.

use super::Kind::{self, *};
use super::Preset;

/// Where an entry's path starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Base {
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
    pub(super) base: Base,
    /// Relative to the base ("" for the base itself).
    pub(super) rel: &'static str,
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

pub(super) const RUST: &[Entry] = &[
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

pub(super) const NODE: &[Entry] = &[
    e(NpmCache, "", Cache, "npm's cache"),
    e(XdgCache, "node-gyp", Cache, "node-gyp's header cache"),
    e(Home, ".nvm", Toolchain, "nvm's Node versions"),
    e(Home, ".volta", Toolchain, "volta's toolchains"),
    e(Home, ".npmrc", Config, "npm's configuration"),
];

pub(super) const PYTHON: &[Entry] = &[
    e(PipCache, "", Cache, "pip's cache"),
    e(UvCache, "", Cache, "uv's cache"),
    e(PyenvRoot, "", Toolchain, "pyenv's Pythons"),
    e(XdgData, "uv", Toolchain, "uv's Pythons and tools"),
    e(XdgConfig, "pip", Config, "pip's configuration"),
    e(Home, ".pip/pip.conf", Config, "pip's configuration"),
    e(XdgConfig, "uv", Config, "uv's configuration"),
];

pub(super) const GO: &[Entry] = &[
    e(GoCache, "", Cache, "Go's build cache"),
    e(GoModCache, "", Cache, "Go's module cache"),
    e(GoPath, "bin", Toolchain, "go install's programs"),
    e(Home, "sdk", Toolchain, "Go SDKs (golang.org/dl)"),
    e(XdgConfig, "go/env", Config, "go env -w settings"),
];

pub(super) const NIX: &[Entry] = &[
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
pub(super) struct Exclusion {
    pub(super) preset: Preset,
    pub(super) base: Base,
    pub(super) rel: &'static str,
    /// What it is ("holds cargo's registry tokens").
    pub(super) why: &'static str,
    /// What to do instead.
    pub(super) instead: &'static str,
}

pub(super) const EXCLUDED: &[Exclusion] = &[
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
