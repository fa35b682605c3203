//! `[landlock]`'s settings as the sandbox uses them: the mode, TCP for commands, and the
//! resolved path sets and presets (the profile resolves them from what was written).

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::presets::{Excluded, Preset, PresetPath};

/// `[landlock] mode`.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum LandlockMode {
    /// Every fence the profile asks for, or nothing runs.
    Enforce,
    /// What the kernel can do; what it cannot is reported as dropped.
    #[default]
    BestEffort,
    Off,
}

/// `[landlock] network` for shell commands.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkMode {
    #[default]
    Allow,
    /// No TCP connect or bind but the listed ports.
    Deny,
}

/// `[landlock]`, resolved: absolute paths that exist.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LandlockSection {
    pub mode: LandlockMode,
    pub min_abi: u8,
    pub network: NetworkMode,
    pub connect: Vec<u16>,
    pub bind: Vec<u16>,
    pub ro: Vec<PathBuf>,
    pub rox: Vec<PathBuf>,
    pub rw: Vec<PathBuf>,
    pub ignore_missing: bool,
    /// The presets turned on, in the order given (repeats dropped).
    pub presets: Vec<Preset>,
    /// With `presets = "auto"`: the marker file that turned each one on (empty: none
    /// found); None when the profile lists its presets.
    pub presets_auto: Option<Vec<(Preset, String)>>,
    /// What they grant: caches, lock files and usage databases (created when the
    /// sandbox is entered if missing) and the toolchains, configs and sockets that exist.
    pub preset_paths: Vec<PresetPath>,
    /// Every preset's paths, on or off, and the paths none grants: to explain a refusal.
    #[serde(skip)]
    pub preset_catalog: Vec<PresetPath>,
    /// The variables the presets on read (CARGO_HOME …): shell commands get them from
    /// the server's environment too, so tools use the directories that were granted.
    pub preset_env: Vec<&'static str>,
    #[serde(skip)]
    pub preset_excluded: Vec<Excluded>,
}
