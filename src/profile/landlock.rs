//! `[landlock]`: the kernel fences for the server and every command it runs, as written
//! (paths unexpanded, presets named) and resolved into the
//! [`LandlockSection`](crate::guard::landlock::LandlockSection) the sandbox is built from.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;

use crate::guard::landlock::{LandlockMode, LandlockSection, NetworkMode};
use crate::guard::presets::{self, Kind, Preset, PresetChoice};

use super::ProfileError;

/// `[landlock]` as written (paths still unexpanded): kernel fences for the server and
/// every command it runs.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub(super) struct LandlockFile {
    /// enforce: every fence or nothing runs; best-effort: what the kernel can do; off.
    mode: LandlockMode,
    /// With mode = "enforce": the lowest Landlock ABI accepted.
    min_abi: u8,
    /// TCP for commands: allow, or deny but the `connect` / `bind` ports.
    network: NetworkMode,
    /// TCP ports commands may connect to when network = "deny".
    connect: Vec<u16>,
    /// TCP ports commands may bind when network = "deny".
    bind: Vec<u16>,
    /// Extra read-only paths (absolute or `~/…`).
    ro: Vec<String>,
    /// Extra read-and-execute paths (absolute or `~/…`).
    rox: Vec<String>,
    /// Extra read-write paths (absolute or `~/…`).
    rw: Vec<String>,
    /// Toolchain presets: each grants its ecosystem's caches (read-write, created when
    /// the sandbox is entered), toolchain directories (read and execute; missing ones
    /// are skipped with a warning) and configuration (read-only), honouring the
    /// ecosystem's variables (CARGO_HOME, RUSTUP_HOME, npm_config_cache, PIP_CACHE_DIR,
    /// UV_CACHE_DIR, XDG_CACHE_HOME, GOPATH, GOCACHE, GOMODCACHE …) as whalebox starts.
    /// Never credentials (~/.cargo/credentials.toml, ~/.pypirc). "auto" (the default):
    /// the presets whose marker files (Cargo.toml, package.json, pyproject.toml,
    /// requirements*.txt, go.mod, flake.nix …) are at the top of the workspace.
    presets: PresetChoice,
    /// Skip a missing read root or extra path with a warning (false: an error).
    pub(super) ignore_missing: bool,
}

impl Default for LandlockFile {
    fn default() -> Self {
        LandlockFile {
            mode: LandlockMode::default(),
            min_abi: 1,
            network: NetworkMode::default(),
            connect: Vec::new(),
            bind: Vec::new(),
            ro: DEFAULT_READ_FILES.iter().map(|d| d.to_string()).collect(),
            rox: DEFAULT_TOOLCHAIN_DIRS
                .iter()
                .map(|d| d.to_string())
                .collect(),
            rw: Vec::new(),
            presets: PresetChoice::Auto,
            ignore_missing: true,
        }
    }
}

/// Where common toolchains live in a home directory: read and execute by default, so
/// `cargo`, `python3` or `node` installed there keep working inside the sandbox.
/// (Not `~/.cargo` as a whole: it holds `credentials.toml`.)
const DEFAULT_TOOLCHAIN_DIRS: &[&str] = &[
    "~/.cargo/bin",
    "~/.rustup",
    "~/.pyenv",
    "~/.nvm",
    "~/.local/bin",
    "~/.local/lib",
];

/// Configuration programs die without when it exists but cannot be read (git stops
/// with "unable to access ~/.gitconfig"): read-only by default.
const DEFAULT_READ_FILES: &[&str] = &["~/.gitconfig", "~/.config/git"];

/// Paths resolved (existing ones only, unless `ignore_missing` is off: then an error),
/// presets chosen ("auto": by the workspace's marker files) and resolved to what they
/// grant.
pub(super) fn resolve(
    l: &LandlockFile,
    workspace: &Path,
    cwd: &Path,
    home: Option<&Path>,
    resolve: &dyn Fn(&str) -> Result<PathBuf, ProfileError>,
    invalid: &dyn Fn(String) -> ProfileError,
    warnings: &mut Vec<String>,
) -> Result<LandlockSection, ProfileError> {
    let ignore_missing = l.ignore_missing;
    let mut sets: [Vec<PathBuf>; 3] = Default::default();
    for (set, (key, list)) in sets
        .iter_mut()
        .zip([("ro", &l.ro), ("rox", &l.rox), ("rw", &l.rw)])
    {
        for entry in list {
            if !(entry.starts_with('/') || entry.starts_with('~')) {
                return Err(invalid(format!(
                    "[landlock] {key}: `{entry}` is relative; write an absolute path (or one starting with ~)"
                )));
            }
            let path = resolve(entry)?;
            if !path.exists() {
                if !ignore_missing {
                    return Err(invalid(format!(
                        "[landlock] {key}: {} does not exist; create it, remove it, \
                             or set [landlock] ignore_missing = true",
                        path.display()
                    )));
                }
                continue;
            }
            set.push(path);
        }
    }
    let [ro, rox, rw] = sets;
    let env_var = |name: &str| std::env::var_os(name);
    let ctx = presets::Context {
        home,
        cwd,
        var: &env_var,
    };
    let mut enabled: Vec<Preset> = Vec::new();
    let mut preset_paths = Vec::new();
    let (chosen, presets_auto) = match &l.presets {
        PresetChoice::List(list) => (list.clone(), None),
        PresetChoice::Auto => {
            let found = presets::detect(workspace);
            (found.iter().map(|(p, _)| *p).collect(), Some(found))
        }
    };
    for preset in &chosen {
        if enabled.contains(preset) {
            continue;
        }
        enabled.push(*preset);
        let mut missing = Vec::new();
        for p in preset.resolve(&ctx) {
            match p.kind {
                _ if p.exists || p.kind.created() => preset_paths.push(p),
                Kind::Toolchain => missing.push(p.path.display().to_string()),
                _ => {}
            }
        }
        // A preset chosen by "auto" names every place its tools may live; most
        // machines have only some of them, which is no cause for a warning.
        if !missing.is_empty() && presets_auto.is_none() {
            warnings.push(format!(
                    "[landlock] presets: preset \"{preset}\": toolchain director{} {} not found; skipped",
                    if missing.len() == 1 { "y" } else { "ies" },
                    missing.join(", ")
                ));
        }
    }
    if l.min_abi == 0 {
        return Err(invalid(
            "[landlock] min_abi starts at 1 (use mode = \"off\" for no Landlock)".into(),
        ));
    }
    Ok(LandlockSection {
        mode: l.mode,
        min_abi: l.min_abi,
        network: l.network,
        connect: l.connect.clone(),
        bind: l.bind.clone(),
        ro,
        rox,
        rw,
        ignore_missing,
        preset_env: {
            let mut vars: Vec<&'static str> = Vec::new();
            for v in enabled.iter().flat_map(|p| p.env_vars()) {
                if !vars.contains(&v) {
                    vars.push(v);
                }
            }
            vars
        },
        presets: enabled,
        presets_auto,
        preset_paths,
        preset_catalog: presets::catalog(&ctx),
        preset_excluded: presets::excluded(&ctx),
    })
}
