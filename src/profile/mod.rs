//! The TOML profile: which tools are on, where the agent works and may read, and the
//! limits results obey. One struct per `[section]`, each `deny_unknown_fields`, so a typo
//! is an error with file, line:column and the list of valid keys. Adding a section is one
//! struct plus one field on [`Profile`].
//!
//! Paths: relative entries resolve against the profile file's directory (for the embedded
//! default: against the workspace); `~` and `~/…` expand to the home directory.

use std::path::{Component, Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::guard::presets::{self, Excluded, Kind, Preset, PresetChoice, PresetPath};

pub mod checkpoints;
pub mod network;
pub use network::NetworkSection;

/// The embedded default profile, used when no `--profile` is given.
pub const EMBEDDED_DEFAULT: &str = include_str!("default.toml");

/// Tool groups enabled when a profile does not say.
const DEFAULT_GROUPS: &[&str] = &[
    "files",
    "search",
    "edit",
    "shell",
    "plan",
    "todo",
    "input",
    "checkpoints",
];
/// No call waits longer than this before answering: clients time out at 60 s.
pub const YIELD_CEILING_MS: u64 = 50_000;
/// Skill directories used when a profile does not say (relative ones: in the workspace).
const DEFAULT_SKILL_DIRS: &[&str] = &[".agents/skills", "~/.agents/skills"];
const MIN_MAX_CHARS: usize = 200;

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("{file}: cannot read the profile: {source}")]
    Read {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}:{line}:{col}: {message}")]
    Parse {
        file: String,
        line: usize,
        col: usize,
        message: String,
    },
    #[error("{file}: {message}")]
    Invalid { file: String, message: String },
}

/// The file as written: every key optional, unknown keys rejected. (The doc comments
/// here are the descriptions editors show: `whalebox profile schema`.)
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "whalebox profile")]
struct ProfileFile {
    /// The directory the agent works in (read and write). Relative: against the profile
    /// file's directory (or, for a profile baked into a Nix wrapper, the working directory).
    workspace: Option<String>,
    /// Enabled tool groups: files, search, edit, shell, plan, todo, input, web.
    tools: Option<Vec<String>>,
    /// Approved read-only roots outside the workspace (absolute, `~/…` or relative).
    #[serde(default)]
    read_roots: Vec<String>,
    /// The exec policy file (TOML, `whalebox policy schema`); default: the embedded policy.
    policy: Option<String>,
    #[serde(default)]
    skills: SkillsFile,
    #[serde(default)]
    output: OutputSection,
    #[serde(default)]
    edit: EditSection,
    #[serde(default)]
    shell: ShellSection,
    #[serde(default)]
    landlock: LandlockFile,
    #[serde(default)]
    todo: TodoFile,
    #[serde(default)]
    input: InputSection,
    #[serde(default)]
    web: WebSection,
    #[serde(default)]
    network: NetworkSection,
    /// Upstream MCP servers whalebox starts (fenced) and fronts: the `mcp` group.
    #[serde(default)]
    mcp_servers: std::collections::BTreeMap<String, McpServerSection>,
    #[serde(default)]
    git: GitFile,
    #[serde(default)]
    checkpoints: checkpoints::CheckpointsFile,
}

/// `[git]`: what a workspace in a git repository needs beyond itself.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GitFile {
    /// When the workspace is a linked worktree (`git worktree add`): "read" (default)
    /// makes the main worktree a read-only root and lets git write what a commit writes
    /// in the shared `.git` (objects, refs, logs, this worktree's own directory); "off"
    /// leaves it all closed (git then fails in the workspace).
    #[serde(default)]
    main_worktree: MainWorktree,
}

/// `[git] main_worktree`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MainWorktree {
    #[default]
    Read,
    Off,
}

/// The effective `[git]`: the setting, and the linked worktree it applied to.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GitSection {
    pub main_worktree: MainWorktree,
    /// Set when the workspace is a linked worktree (whatever the setting).
    pub linked: Option<crate::guard::git::LinkedWorktree>,
}

/// `[mcp_servers.NAME]`: one upstream MCP server (stdio), in the keys Codex uses.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServerSection {
    /// The program (a path or a name in PATH), started by whalebox inside its fences.
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra variables for the server.
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    /// whalebox's own variables passed by name; nothing else of its environment is.
    #[serde(default)]
    pub pass_env: Vec<String>,
    /// true: reachable through tool_search and call_tool; false: listed directly.
    #[serde(default = "yes")]
    pub defer: bool,
    #[serde(default = "startup_timeout")]
    pub startup_timeout_ms: u64,
    #[serde(default = "tool_timeout")]
    pub tool_timeout_ms: u64,
    /// If non-empty, only these tools.
    #[serde(default)]
    pub enabled_tools: Vec<String>,
    #[serde(default)]
    pub disabled_tools: Vec<String>,
}

fn yes() -> bool {
    true
}

fn startup_timeout() -> u64 {
    10_000
}

fn tool_timeout() -> u64 {
    60_000
}

/// `[web]`: the fences of web_fetch, fetch and web_search.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct WebSection {
    /// If non-empty, only these hosts (exact, or "*.example.com" for it and its subdomains).
    pub allow_hosts: Vec<String>,
    /// Hosts never fetched (same patterns).
    pub deny_hosts: Vec<String>,
    /// Addresses (IPs or CIDR blocks) reachable although loopback, private or link-local.
    pub allow_private: Vec<String>,
    /// Ports a URL may use.
    pub ports: Vec<u16>,
    /// The whole request, redirects and body included, at most this long.
    pub timeout_ms: u64,
    /// Body bytes read (after decompression); the rest is cut, and the result says so.
    pub max_bytes: u64,
    pub max_redirects: u32,
    /// How long a fetched page stays in the session's cache (paging reads it from there).
    pub cache_ttl_s: u64,
    /// The User-Agent header (default: whalebox/VERSION and the repository URL).
    pub user_agent: Option<String>,
    /// The first request to a host: allow, ask (the person, as exec approvals), or deny.
    pub on_new_host: OnNewHost,
    pub search: WebSearchSection,
}

impl Default for WebSection {
    fn default() -> Self {
        WebSection {
            allow_hosts: Vec::new(),
            deny_hosts: Vec::new(),
            allow_private: Vec::new(),
            ports: vec![80, 443],
            timeout_ms: 15_000,
            max_bytes: 10 * 1024 * 1024,
            max_redirects: 5,
            cache_ttl_s: 900,
            user_agent: None,
            on_new_host: OnNewHost::Allow,
            search: WebSearchSection::default(),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum OnNewHost {
    #[default]
    Allow,
    Ask,
    Deny,
}

/// `[web.search]`: the search backend (none by default: web_search says how to set one).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct WebSearchSection {
    /// searxng | brave | tavily | duckduckgo
    pub backend: Option<SearchBackend>,
    /// The backend's base URL (default: the public endpoint of brave, tavily and
    /// duckduckgo; required for searxng). Exempt from allow_private: the operator chose it.
    pub url: Option<String>,
    /// The name of the variable holding the API key (never the key itself).
    pub api_key_env: Option<String>,
    /// Backends tried in order when this one is rate-limited, blocked or down: a name
    /// (its public endpoint), or `{ backend, url, api_key_env }`.
    pub fallback: Vec<Fallback>,
}

/// One fallback search backend.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(untagged)]
pub enum Fallback {
    Named(SearchBackend),
    Endpoint {
        backend: SearchBackend,
        url: Option<String>,
        api_key_env: Option<String>,
    },
}

/// A search backend and where it answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub backend: SearchBackend,
    pub url: Option<String>,
    pub api_key_env: Option<String>,
}

impl WebSearchSection {
    /// The configured backend, then the fallbacks, in order.
    pub fn endpoints(&self) -> Vec<Endpoint> {
        let mut out = Vec::new();
        if let Some(backend) = self.backend {
            out.push(Endpoint {
                backend,
                url: self.url.clone(),
                api_key_env: self.api_key_env.clone(),
            });
        }
        for f in &self.fallback {
            out.push(match f {
                Fallback::Named(backend) => Endpoint {
                    backend: *backend,
                    url: None,
                    api_key_env: self.api_key_env.clone(),
                },
                Fallback::Endpoint {
                    backend,
                    url,
                    api_key_env,
                } => Endpoint {
                    backend: *backend,
                    url: url.clone(),
                    api_key_env: api_key_env.clone().or_else(|| self.api_key_env.clone()),
                },
            });
        }
        out
    }
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchBackend {
    Searxng,
    Brave,
    Tavily,
    Duckduckgo,
}

/// `[todo]` as written.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
struct TodoFile {
    /// Keep the todo list in this JSON file (relative: against the profile's directory),
    /// loaded at start and rewritten atomically on every change, so it outlives a client
    /// restart. Unset: the list lives as long as the session.
    file: Option<String>,
}

/// `[todo]`, resolved.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct TodoSection {
    pub file: Option<PathBuf>,
}

/// `[input]`: how request_user_input waits for a person.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct InputSection {
    /// How long a question waits for an answer before the call answers `timeout`.
    pub timeout_ms: u64,
}

impl Default for InputSection {
    fn default() -> Self {
        InputSection {
            timeout_ms: 300_000,
        }
    }
}

/// `[landlock]` as written (paths still unexpanded): kernel fences for the server and
/// every command it runs.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
struct LandlockFile {
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
    ignore_missing: bool,
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

/// `[skills]`: where SKILL.md skills are discovered.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SkillsFile {
    /// Skill directories (relative ones: in the workspace); default
    /// [".agents/skills", "~/.agents/skills"].
    dirs: Option<Vec<String>>,
}

/// `[output]`: what one result shows the model, and how it is fitted to the client.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct OutputSection {
    /// Characters of `text` one result may show; head and tail are kept around a marker.
    pub max_chars: usize,
    /// Also declare an `outputSchema` and send the envelope as `structuredContent`.
    /// Off by default: Claude Code and Codex then hand the model that JSON instead of the
    /// text. The envelope is always in the result's `_meta` (`whalebox/envelope`).
    pub structured: bool,
    /// Fit the limits to the client that connects (known by its MCP `clientInfo` name):
    /// a result cap the client will not cut or spill to a file, a longest wait under its
    /// tool timeout, the tool hints it honours. Off: the profile as written for everyone.
    pub fit_to_client: bool,
    /// Limits for clients by `clientInfo` name; they replace the built-in fit for that
    /// client (and apply even with `fit_to_client = false`).
    pub clients: std::collections::BTreeMap<String, ClientLimits>,
}

impl Default for OutputSection {
    fn default() -> Self {
        OutputSection {
            max_chars: 30_000,
            structured: false,
            fit_to_client: true,
            clients: std::collections::BTreeMap::new(),
        }
    }
}

/// `[output.clients."NAME"]`: one client's limits; what is left out comes from the profile.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ClientLimits {
    /// Characters of `text` one result may show this client.
    pub max_chars: Option<usize>,
    /// The longest wait a call from this client may ask for (at most 50000).
    pub max_yield_ms: Option<u64>,
}

/// `[edit]`: how the edit group guards files.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct EditSection {
    /// `write` over an existing file needs the file to have been read (or written) in
    /// this session, unchanged since. Off: overwrite whatever is there (the CLI, where
    /// every call is its own session, may want this).
    pub write_requires_read: bool,
    /// Largest file edit/multi_edit/write will load or produce.
    pub max_file_bytes: u64,
}

impl Default for EditSection {
    fn default() -> Self {
        EditSection {
            write_requires_read: true,
            max_file_bytes: 1024 * 1024 * 1024,
        }
    }
}

/// `[shell]`: how shell_run starts commands and how many it keeps.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ShellSection {
    /// The shell (a path, or a name looked up in PATH); default: zsh, else bash, else sh.
    pub program: Option<String>,
    /// Let the shell read the user's rc files (off: hermetic `zsh -f` / `bash --norc`).
    pub rc_files: bool,
    /// Extra variables for every command.
    pub env: std::collections::BTreeMap<String, String>,
    /// Server variables passed through by name (nothing else is, so secrets stay out).
    pub pass_env: Vec<String>,
    /// Live tasks at once.
    pub max_tasks: usize,
    /// How long shell_run waits by default before answering with a task id.
    pub default_yield_ms: u64,
    /// The longest wait a call may ask for (at most 50000).
    pub max_yield_ms: u64,
    /// Output kept per task (head and tail).
    pub buffer_bytes: usize,
    /// PTY rows.
    pub pty_rows: u16,
    /// PTY columns.
    pub pty_cols: u16,
    /// The gated zsh (default: $WHALEBOX_ZSH, next to whalebox, or target/zsh/bin/zsh).
    pub zsh: Option<String>,
    /// required: no gated zsh → shell tools refuse; best-effort: run ungated and say so;
    /// off: use the plain shell.
    pub exec_boundary: ExecBoundary,
    /// Who settles an `ask` when no person can answer.
    pub on_ask: crate::boundary::OnAsk,
    /// JSONL audit log of every exec decision.
    pub audit_log: Option<PathBuf>,
    /// Where "allow for this session" answers are appended as policy rules.
    pub approvals_file: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ExecBoundary {
    /// No gated zsh: the shell tools refuse.
    Required,
    /// No gated zsh: run ungated and say so in every result.
    #[default]
    BestEffort,
    /// The plain shell, no exec policy.
    Off,
}

impl Default for ShellSection {
    fn default() -> Self {
        ShellSection {
            program: None,
            rc_files: false,
            env: Default::default(),
            pass_env: Vec::new(),
            max_tasks: 16,
            default_yield_ms: 15_000,
            max_yield_ms: YIELD_CEILING_MS,
            buffer_bytes: 1024 * 1024,
            pty_rows: 24,
            pty_cols: 80,
            zsh: None,
            exec_boundary: ExecBoundary::default(),
            on_ask: Default::default(),
            audit_log: None,
            approvals_file: None,
        }
    }
}

impl ShellSection {
    fn check(&mut self, warnings: &mut Vec<String>) -> Result<(), String> {
        for name in self.env.keys().chain(&self.pass_env) {
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                return Err(format!(
                    "shell: {name:?} is not a valid environment variable name"
                ));
            }
        }
        if self.env.values().any(|v| v.contains('\0')) {
            return Err("shell.env: a value contains a NUL byte".into());
        }
        if self.max_tasks == 0 {
            return Err("shell.max_tasks = 0 would refuse every command; use at least 1".into());
        }
        if self.max_yield_ms > YIELD_CEILING_MS {
            warnings.push(format!(
                "shell.max_yield_ms = {} is above {YIELD_CEILING_MS} (clients time out at 60 s); using {YIELD_CEILING_MS}",
                self.max_yield_ms
            ));
            self.max_yield_ms = YIELD_CEILING_MS;
        }
        if self.default_yield_ms > self.max_yield_ms {
            warnings.push(format!(
                "shell.default_yield_ms = {} is above max_yield_ms; using {}",
                self.default_yield_ms, self.max_yield_ms
            ));
            self.default_yield_ms = self.max_yield_ms;
        }
        if self.buffer_bytes < 4096 {
            return Err(format!(
                "shell.buffer_bytes = {} is too small; use at least 4096",
                self.buffer_bytes
            ));
        }
        if self.pty_rows == 0 || self.pty_cols == 0 {
            return Err("shell.pty_rows and pty_cols must be at least 1".into());
        }
        Ok(())
    }
}

/// `[skills]`: where `SKILL.md` skills are discovered (resolved, possibly missing).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SkillsSection {
    pub dirs: Vec<PathBuf>,
}

/// The effective profile: every path absolute, every default filled in.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Profile {
    /// The profile file, or `None` for the embedded default.
    pub source: Option<PathBuf>,
    pub workspace: PathBuf,
    pub tools: Vec<String>,
    pub read_roots: Vec<PathBuf>,
    pub policy: Option<PathBuf>,
    pub skills: SkillsSection,
    pub output: OutputSection,
    pub edit: EditSection,
    pub shell: ShellSection,
    pub landlock: LandlockSection,
    pub todo: TodoSection,
    pub input: InputSection,
    pub web: WebSection,
    /// Effective: `allow_domains` includes the presets' registry hosts.
    pub network: NetworkSection,
    pub mcp_servers: std::collections::BTreeMap<String, McpServerSection>,
    pub git: GitSection,
    pub checkpoints: checkpoints::CheckpointsSection,
    /// Things that are not errors but deserve a look (a missing read root …).
    pub warnings: Vec<String>,
}

/// How to find the profile: the CLI's `--profile`, `--workspace`, `--policy` and
/// `--relative-to`.
#[derive(Debug, Default, Clone)]
pub struct LoadOptions {
    pub profile: Option<PathBuf>,
    pub workspace: Option<PathBuf>,
    /// A policy file that replaces the profile's `policy`.
    pub policy: Option<PathBuf>,
    pub relative_to: RelativeTo,
    /// Extra read-only paths for commands (`whalebox run --ro`), added to `[landlock] ro`.
    pub extra_ro: Vec<PathBuf>,
}

/// What relative paths in a profile file mean.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RelativeTo {
    /// The profile file's directory: a profile kept in the repository it configures.
    #[default]
    Profile,
    /// The workspace (a relative `workspace` itself: the working directory), as for the
    /// embedded default. For a profile copied away from its repository, such as into
    /// the Nix store by `lib.mkSandbox`.
    Workspace,
}

impl Profile {
    /// Load the profile named by `opts`, or the embedded default.
    pub fn load(opts: &LoadOptions) -> Result<Profile, ProfileError> {
        let cwd = std::env::current_dir().map_err(|source| ProfileError::Read {
            file: ".".into(),
            source,
        })?;
        match &opts.profile {
            Some(file) => {
                let file = absolute(&cwd, file);
                let text = std::fs::read_to_string(&file).map_err(|source| ProfileError::Read {
                    file: file.display().to_string(),
                    source,
                })?;
                Self::parse_relative(
                    &text,
                    Some(&file),
                    &cwd,
                    opts.workspace.as_deref(),
                    opts.relative_to,
                )
            }
            None => Self::parse(EMBEDDED_DEFAULT, None, &cwd, opts.workspace.as_deref()),
        }
        .and_then(|mut profile| {
            if let Some(policy) = &opts.policy {
                let policy = absolute(&cwd, policy);
                if !policy.is_file() {
                    return Err(ProfileError::Invalid {
                        file: profile.source_name(),
                        message: format!(
                            "--policy {}: no such file; give an exec policy file (TOML)",
                            policy.display()
                        ),
                    });
                }
                profile.warnings.retain(|w| !w.starts_with("policy file "));
                profile.policy = Some(policy);
            }
            for path in &opts.extra_ro {
                let path = absolute(&cwd, path);
                if !path.exists() {
                    return Err(ProfileError::Invalid {
                        file: profile.source_name(),
                        message: format!("--ro {}: no such file or directory", path.display()),
                    });
                }
                profile.landlock.ro.push(path);
            }
            Ok(profile)
        })
    }

    /// Parse profile `text`. `file` is where it came from (`None`: embedded); `cwd`
    /// resolves `--workspace` and the embedded default's `"."`.
    pub fn parse(
        text: &str,
        file: Option<&Path>,
        cwd: &Path,
        workspace_override: Option<&Path>,
    ) -> Result<Profile, ProfileError> {
        Self::parse_relative(text, file, cwd, workspace_override, RelativeTo::Profile)
    }

    /// [`Profile::parse`], with relative paths meaning what `relative_to` says.
    pub fn parse_relative(
        text: &str,
        file: Option<&Path>,
        cwd: &Path,
        workspace_override: Option<&Path>,
        relative_to: RelativeTo,
    ) -> Result<Profile, ProfileError> {
        let name = file
            .map(|f| f.display().to_string())
            .unwrap_or_else(|| "<embedded default profile>".into());
        let raw: ProfileFile = toml::from_str(text).map_err(|e| {
            let (line, col) = e.span().map(|s| line_col(text, s.start)).unwrap_or((1, 1));
            ProfileError::Parse {
                file: name.clone(),
                line,
                col,
                message: {
                    let m = e.message().trim();
                    // serde says "expected one of" for both misspelt keys and values.
                    let valid = if m.starts_with("unknown variant") {
                        "valid values:"
                    } else {
                        "valid keys:"
                    };
                    m.replace("expected one of", valid)
                },
            }
        })?;
        let invalid = |message: String| ProfileError::Invalid {
            file: name.clone(),
            message,
        };
        let home = std::env::home_dir();
        let profile_dir = match relative_to {
            RelativeTo::Profile => file.and_then(Path::parent).map(Path::to_path_buf),
            RelativeTo::Workspace => None,
        };

        // The workspace first: the embedded default resolves against it.
        let workspace = match (workspace_override, &raw.workspace, &profile_dir) {
            (Some(w), _, _) => absolute(cwd, w),
            (None, Some(w), Some(dir)) => expand(w, dir, home.as_deref()).map_err(&invalid)?,
            (None, Some(w), None) => expand(w, cwd, home.as_deref()).map_err(&invalid)?,
            (None, None, _) => cwd.to_path_buf(),
        };
        let workspace = normalize(&workspace);
        match std::fs::metadata(&workspace) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(invalid(format!(
                    "workspace {} is not a directory",
                    workspace.display()
                )));
            }
            Err(e) => {
                return Err(invalid(format!(
                    "workspace {} is not usable: {e}",
                    workspace.display()
                )));
            }
        }
        let base = profile_dir.clone().unwrap_or_else(|| workspace.clone());
        let resolve = |p: &str| expand(p, &base, home.as_deref()).map_err(&invalid);

        let mut warnings = Vec::new();
        let mut read_roots = Vec::new();
        let ignore_missing = raw.landlock.ignore_missing;
        for root in &raw.read_roots {
            let path = resolve(root)?;
            if !path.exists() {
                if !ignore_missing {
                    return Err(invalid(format!(
                        "read root {} does not exist; create it, remove it from read_roots, \
                         or set [landlock] ignore_missing = true to skip missing roots",
                        path.display()
                    )));
                }
                warnings.push(format!(
                    "read root {} does not exist; skipped",
                    path.display()
                ));
                continue;
            }
            let real = normalize(&path);
            if real.starts_with(&workspace) || workspace.starts_with(&real) {
                return Err(invalid(format!(
                    "read root {} overlaps the workspace {}; the workspace is already readable \
                     (and writable), so list only directories outside it",
                    path.display(),
                    workspace.display()
                )));
            }
            read_roots.push(path);
        }
        let landlock = {
            let l = &raw.landlock;
            let mut sets: [Vec<PathBuf>; 3] = Default::default();
            for (set, (key, list)) in
                sets.iter_mut()
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
                home: home.as_deref(),
                cwd,
                var: &env_var,
            };
            let mut enabled: Vec<Preset> = Vec::new();
            let mut preset_paths = Vec::new();
            let (chosen, presets_auto) = match &l.presets {
                PresetChoice::List(list) => (list.clone(), None),
                PresetChoice::Auto => {
                    let found = presets::detect(&workspace);
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
            LandlockSection {
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
            }
        };
        let policy = raw.policy.as_deref().map(resolve).transpose()?;
        if let Some(p) = &policy
            && !p.exists()
        {
            warnings.push(format!("policy file {} does not exist", p.display()));
        }
        let skill_dirs = match &raw.skills.dirs {
            Some(dirs) => dirs.iter().map(|d| resolve(d)).collect::<Result<_, _>>()?,
            None => DEFAULT_SKILL_DIRS
                .iter()
                .map(|d| expand(d, &workspace, home.as_deref()).map_err(&invalid))
                .collect::<Result<_, _>>()?,
        };
        let tools = raw
            .tools
            .unwrap_or_else(|| DEFAULT_GROUPS.iter().map(|g| g.to_string()).collect());
        if tools.is_empty() {
            warnings.push("no tool groups are enabled: the server offers no tools".into());
        }
        if raw.output.max_chars < MIN_MAX_CHARS {
            return Err(invalid(format!(
                "output.max_chars = {} is too small to show anything useful; use at least {MIN_MAX_CHARS}",
                raw.output.max_chars
            )));
        }
        for (client, limits) in &raw.output.clients {
            if let Some(chars) = limits.max_chars
                && chars < MIN_MAX_CHARS
            {
                return Err(invalid(format!(
                    "output.clients.\"{client}\".max_chars = {chars} is too small to show anything useful; use at least {MIN_MAX_CHARS}"
                )));
            }
            if let Some(ms) = limits.max_yield_ms
                && ms > YIELD_CEILING_MS
            {
                return Err(invalid(format!(
                    "output.clients.\"{client}\".max_yield_ms = {ms} is above {YIELD_CEILING_MS}; use at most {YIELD_CEILING_MS}"
                )));
            }
        }
        let mut shell = raw.shell;
        shell.check(&mut warnings).map_err(&invalid)?;
        if let Some(z) = shell.zsh.take() {
            shell.zsh = Some(resolve(&z)?.display().to_string());
        }
        if let Some(log) = shell.audit_log.take() {
            shell.audit_log = Some(resolve(&log.display().to_string())?);
        }
        if let Some(file) = shell.approvals_file.take() {
            shell.approvals_file = Some(resolve(&file.display().to_string())?);
        }
        let todo = TodoSection {
            file: raw.todo.file.as_deref().map(resolve).transpose()?,
        };
        if raw.input.timeout_ms == 0 {
            return Err(invalid(
                "input.timeout_ms must be at least 1 (how long a question waits)".into(),
            ));
        }
        check_web(&raw.web).map_err(&invalid)?;
        check_mcp_servers(&raw.mcp_servers).map_err(&invalid)?;
        network::check(&raw.network).map_err(&invalid)?;
        let mut net = raw.network;
        net.ca_files = net
            .ca_files
            .iter()
            .map(|f| resolve(f).map(|p| p.display().to_string()))
            .collect::<Result<_, _>>()?;
        if net.preset_domains {
            for p in &landlock.presets {
                for host in network::preset_hosts(*p) {
                    if !net.allow_domains.iter().any(|d| d == host) {
                        net.allow_domains.push(host.to_string());
                    }
                }
            }
        }
        let checkpoints = raw.checkpoints.resolve(resolve)?.map_err(&invalid)?;
        let git = GitSection {
            main_worktree: raw.git.main_worktree,
            linked: crate::guard::git::linked_worktree(&workspace),
        };
        let mut landlock = landlock;
        if let (MainWorktree::Read, Some(linked)) = (git.main_worktree, &git.linked) {
            // A root that holds the workspace is fine: the workspace is checked first.
            read_roots.push(linked.read_root().to_path_buf());
            landlock.rw.extend(linked.commit_paths());
        }
        Ok(Profile {
            source: file.map(Path::to_path_buf),
            workspace,
            tools,
            read_roots,
            policy,
            skills: SkillsSection { dirs: skill_dirs },
            output: raw.output,
            edit: raw.edit,
            shell,
            landlock,
            todo,
            input: raw.input,
            web: raw.web,
            network: net,
            mcp_servers: raw.mcp_servers,
            git,
            checkpoints,
            warnings,
        })
    }

    /// Where the profile came from, for messages.
    pub fn source_name(&self) -> String {
        self.source
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "<embedded default profile>".into())
    }
}

/// `[mcp_servers]` entries that cannot work.
fn check_mcp_servers(
    servers: &std::collections::BTreeMap<String, McpServerSection>,
) -> Result<(), String> {
    for (name, s) in servers {
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            || name.contains("__")
        {
            return Err(format!(
                "[mcp_servers.{name}]: a server's name is letters, digits, `_` and `-` (no `__`): it becomes part of tool names (mcp__NAME__TOOL)"
            ));
        }
        if s.command.trim().is_empty() {
            return Err(format!("[mcp_servers.{name}] command is empty"));
        }
        if s.startup_timeout_ms == 0 || s.tool_timeout_ms == 0 {
            return Err(format!(
                "[mcp_servers.{name}] startup_timeout_ms and tool_timeout_ms must be at least 1"
            ));
        }
    }
    Ok(())
}

/// `[web]` values that cannot work.
fn check_web(w: &WebSection) -> Result<(), String> {
    crate::web::address::AllowList::parse(&w.allow_private)?;
    if w.ports.is_empty() {
        return Err("[web] ports is empty: no URL could be fetched; use [80, 443]".into());
    }
    if w.timeout_ms == 0 || w.max_bytes == 0 {
        return Err("[web] timeout_ms and max_bytes must be at least 1".into());
    }
    for pattern in w.allow_hosts.iter().chain(&w.deny_hosts) {
        let bare = pattern.strip_prefix("*.").unwrap_or(pattern);
        if bare.is_empty() || bare.contains(['*', '/', ':', ' ']) {
            return Err(format!(
                "[web] host pattern `{pattern}`: use a host name (`docs.rs`) or `*.` and a domain (`*.rust-lang.org`)"
            ));
        }
    }
    if w.search.backend == Some(SearchBackend::Searxng) && w.search.url.is_none() {
        return Err(
            "[web.search] backend = \"searxng\" needs `url`, your instance's base URL".into(),
        );
    }
    if let Some(var) = &w.search.api_key_env
        && (var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
    {
        return Err(format!(
            "[web.search] api_key_env = \"{var}\" is not a variable name; it names the variable that holds the key, not the key"
        ));
    }
    Ok(())
}

/// The JSON Schema of a profile file, for editors (`whalebox profile schema`).
pub fn json_schema() -> serde_json::Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(ProfileFile)).unwrap_or_default();
    schema["description"] = serde_json::Value::String(
        "A whalebox profile: the tool groups, the workspace and read roots, the exec policy, \
         the shell and the Landlock fences. Every key is optional."
            .into(),
    );
    schema
}

/// 1-based line and column of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rfind('\n')
        .map(|nl| before[nl + 1..].chars().count())
        .unwrap_or_else(|| before.chars().count())
        + 1;
    (line, col)
}

fn absolute(base: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

/// Expand `~`/`~/…`, make absolute against `base`, and drop `.`/`..` lexically (symlinks
/// are the path guard's business, at use time).
fn expand(raw: &str, base: &Path, home: Option<&Path>) -> Result<PathBuf, String> {
    if raw.contains('\0') {
        return Err(format!("path {raw:?} contains a NUL byte"));
    }
    let path = if raw == "~" || raw.starts_with("~/") {
        let home = home.ok_or_else(|| format!("cannot expand {raw:?}: no home directory"))?;
        home.join(raw.trim_start_matches('~').trim_start_matches('/'))
    } else if raw.starts_with('~') {
        return Err(format!(
            "cannot expand {raw:?}: only `~` and `~/…` (the current user's home) are supported"
        ));
    } else {
        absolute(base, Path::new(raw))
    };
    Ok(normalize(&path))
}

/// Drop `.` and `..` lexically (symlinks are resolved at use time, not here).
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, dir: &Path) -> Result<Profile, ProfileError> {
        let file = dir.join("whalebox.toml");
        Profile::parse(text, Some(&file), dir, None)
    }

    #[test]
    fn embedded_default_matches_the_built_in_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let embedded = Profile::parse(EMBEDDED_DEFAULT, None, dir.path(), None).unwrap();
        let empty = Profile::parse("", None, dir.path(), None).unwrap();
        assert_eq!(embedded, empty);
        assert_eq!(embedded.workspace, dir.path());
        assert_eq!(embedded.output.max_chars, 30_000);
        assert_eq!(embedded.skills.dirs[0], dir.path().join(".agents/skills"));
    }

    #[test]
    fn unknown_key_names_line_column_and_valid_keys() {
        let dir = tempfile::tempdir().unwrap();
        let err = parse("workspace = \".\"\n\n[output]\nmax_char = 10\n", dir.path()).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("whalebox.toml:4:1:"), "{msg}");
        assert!(msg.contains("unknown field `max_char`"), "{msg}");
        assert!(msg.contains("max_chars"), "{msg}");
    }

    #[test]
    fn unknown_top_level_key_lists_every_valid_key() {
        let dir = tempfile::tempdir().unwrap();
        let msg = parse("tool = [\"files\"]\n", dir.path())
            .unwrap_err()
            .to_string();
        assert!(msg.contains(":1:1:"), "{msg}");
        for key in [
            "workspace",
            "tools",
            "read_roots",
            "policy",
            "skills",
            "output",
        ] {
            assert!(msg.contains(key), "{key} missing from {msg}");
        }
    }

    #[test]
    fn relative_paths_resolve_against_the_profile_directory_and_tilde_expands() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("p");
        std::fs::create_dir_all(sub.join("ws")).unwrap();
        std::fs::create_dir(dir.path().join("y")).unwrap();
        let p = parse(
            "workspace = \"ws\"\nread_roots = [\"~\", \"../y\", \"~/whalebox-missing-root\"]\npolicy = \"policies/p.toml\"\n[skills]\ndirs = [\"sk\"]\n",
            &sub,
        )
        .unwrap();
        assert_eq!(p.workspace, sub.join("ws"));
        let home = std::env::home_dir().unwrap();
        assert_eq!(p.read_roots, vec![home.clone(), dir.path().join("y")]);
        assert_eq!(p.policy.unwrap(), sub.join("policies/p.toml"));
        assert_eq!(p.skills.dirs, vec![sub.join("sk")]);
        assert!(
            p.warnings
                .iter()
                .any(|w| w.contains("whalebox-missing-root") && w.contains("skipped"))
        );
    }

    #[test]
    fn bad_roots_are_errors_before_anything_runs() {
        let dir = tempfile::tempdir().unwrap();
        let err = |text: &str| parse(text, dir.path()).unwrap_err().to_string();
        let msg = err("read_roots = [\"missing\"]\n[landlock]\nignore_missing = false\n");
        assert!(
            msg.contains("does not exist") && msg.contains("ignore_missing"),
            "{msg}"
        );
        std::fs::create_dir(dir.path().join("inside")).unwrap();
        let msg = err("read_roots = [\"inside\"]\n");
        assert!(msg.contains("overlaps the workspace"), "{msg}");
        let msg = err("[landlock]\nrw = [\"build\"]\n");
        assert!(msg.contains("relative"), "{msg}");
        let msg = err("[landlock]\nmode = \"strict\"\n");
        assert!(msg.contains("valid values: `enforce`"), "{msg}");
        let msg = err("[landlock]\nmod = \"enforce\"\n");
        assert!(msg.contains("valid keys: `mode`"), "{msg}");
    }

    #[test]
    fn an_unknown_preset_names_file_line_and_the_known_presets() {
        let dir = tempfile::tempdir().unwrap();
        let msg = parse("[landlock]\npresets = [\"rust\", \"rsut\"]\n", dir.path())
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("whalebox.toml:2:")
                && msg.contains(
                    "[landlock] presets: unknown preset \"rsut\"; known presets: rust, node, python, go, nix"
                ),
            "{msg}"
        );
        // Known ones resolve; a repeat is dropped.
        let p = parse(
            "[landlock]\npresets = [\"go\", \"nix\", \"go\"]\n",
            dir.path(),
        )
        .unwrap();
        assert_eq!(p.landlock.presets, [Preset::Go, Preset::Nix]);
        assert!(
            p.landlock
                .preset_paths
                .iter()
                .any(|p| p.kind == Kind::Cache && p.path.ends_with("go-build"))
        );
    }

    #[test]
    fn presets_auto_follow_the_workspace_marker_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = parse("", dir.path()).unwrap();
        assert_eq!(p.landlock.presets_auto, Some(vec![]));
        assert!(p.landlock.presets.is_empty());
        std::fs::write(dir.path().join("Cargo.toml"), "").unwrap();
        std::fs::write(dir.path().join("requirements-test.txt"), "").unwrap();
        std::fs::create_dir(dir.path().join("go.mod")).unwrap(); // a directory: no marker
        let p = parse("[landlock]\npresets = \"auto\"\n", dir.path()).unwrap();
        assert_eq!(p.landlock.presets, [Preset::Rust, Preset::Python]);
        assert_eq!(
            p.landlock.presets_auto.unwrap()[1],
            (Preset::Python, "requirements-test.txt".to_string())
        );
        let p = parse("[landlock]\npresets = []\n", dir.path()).unwrap();
        assert!(p.landlock.presets.is_empty() && p.landlock.presets_auto.is_none());
        let msg = parse("[landlock]\npresets = \"all\"\n", dir.path())
            .unwrap_err()
            .to_string();
        assert!(msg.contains("neither \"auto\" nor a list"), "{msg}");
    }

    #[test]
    fn client_limits_parse_and_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let p = parse(
            "[output]\nstructured = true\nfit_to_client = false\n[output.clients.\"codex-mcp-client\"]\nmax_yield_ms = 55000\n",
            dir.path(),
        );
        let msg = p.unwrap_err().to_string();
        assert!(msg.contains("max_yield_ms = 55000 is above 50000"), "{msg}");
        let p = parse(
            "[output]\nstructured = true\n[output.clients.\"my-agent\"]\nmax_chars = 8000\n",
            dir.path(),
        )
        .unwrap();
        assert!(p.output.structured && p.output.fit_to_client);
        assert_eq!(p.output.clients["my-agent"].max_chars, Some(8000));
        let msg = parse("[output.clients.x]\nmax_chars = 10\n", dir.path())
            .unwrap_err()
            .to_string();
        assert!(msg.contains("too small"), "{msg}");
        let msg = parse("[output.clients.x]\nmax_char = 1000\n", dir.path())
            .unwrap_err()
            .to_string();
        assert!(msg.contains("max_char"), "{msg}");
    }

    #[test]
    fn missing_workspace_and_wrong_types_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let msg = parse("workspace = \"nope\"\n", dir.path())
            .unwrap_err()
            .to_string();
        assert!(msg.contains("not usable"), "{msg}");
        let msg = parse("tools = \"files\"\n", dir.path())
            .unwrap_err()
            .to_string();
        assert!(msg.contains(":1:9:"), "{msg}");
        let msg = parse("[output]\nmax_chars = 5\n", dir.path())
            .unwrap_err()
            .to_string();
        assert!(msg.contains("too small"), "{msg}");
        let msg = parse("read_roots = [\"~bob/x\"]\n", dir.path())
            .unwrap_err()
            .to_string();
        assert!(msg.contains("only `~`"), "{msg}");
    }
}
