//! Where a preset's base directories are on this machine: the home directory and the
//! ecosystems' variables (CARGO_HOME, XDG_CACHE_HOME, GOPATH …), read once per lookup.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::table::Base::{self, *};

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

    pub(super) fn join(&self, base: Base, rel: &str) -> Option<PathBuf> {
        let base = self.base(base)?;
        let path = if rel.is_empty() { base } else { base.join(rel) };
        Some(crate::normalize(&path))
    }
}

impl Base {
    /// The variables that move this base (what [`Context::base`] reads).
    pub(super) fn vars(self) -> &'static [&'static str] {
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
