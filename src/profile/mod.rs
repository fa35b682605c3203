//! The TOML profile: which tools are on, where the agent works and may read, and the
//! limits results obey. One struct per `[section]`, each `deny_unknown_fields`, so a typo
//! is an error with file, line:column and the list of valid keys. Adding a section is one
//! struct plus one field on [`Profile`].
//!
//! Paths: relative entries resolve against the profile file's directory (for the embedded
//! default: against the workspace); `~` and `~/…` expand to the home directory.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub mod checkpoints;
mod git;
mod landlock;
mod mcp_servers;
pub mod network;
mod output;
mod shell;

pub(crate) use crate::guard::normalize;
// The sections whose settings belong to the fences and the web client that use them.
pub use crate::guard::landlock::{LandlockMode, LandlockSection, NetworkMode};
pub use crate::web::settings::{
    Endpoint, Fallback, OnNewHost, SearchBackend, WebSearchSection, WebSection,
};
pub use git::{AllowExecConfig, GitSection, MainWorktree};
pub use mcp_servers::McpServerSection;
pub use network::NetworkSection;
pub use output::{ClientLimits, EditSection, OutputSection};
pub use shell::{ExecBoundary, ExecGate, ShellSection, UserNamespaces};

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
    landlock: landlock::LandlockFile,
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
    git: git::GitFile,
    #[serde(default)]
    checkpoints: checkpoints::CheckpointsFile,
    /// `whalebox serve --http`: where it listens and whom it lets in.
    #[serde(default)]
    http: whalebox_http::HttpFile,
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

/// `[skills]`: where SKILL.md skills are discovered.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SkillsFile {
    /// Skill directories (relative ones: in the workspace); default
    /// [".agents/skills", "~/.agents/skills"].
    dirs: Option<Vec<String>>,
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
    pub http: whalebox_http::HttpSettings,
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
        let landlock = landlock::resolve(
            &raw.landlock,
            &workspace,
            cwd,
            home.as_deref(),
            &resolve,
            &invalid,
            &mut warnings,
        )?;
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
        raw.web.check().map_err(&invalid)?;
        mcp_servers::check(&raw.mcp_servers).map_err(&invalid)?;
        network::check(&raw.network).map_err(&invalid)?;
        if raw.network.mode == network::FenceMode::Enforce
            && raw.network.kernel == network::KernelFence::Landlock
            && landlock.mode == LandlockMode::Off
        {
            return Err(invalid(
                "[network] mode = \"enforce\" with kernel = \"landlock\" needs Landlock, but [landlock] mode = \"off\": \
                 set [landlock] mode = \"best-effort\", or [network] kernel = \"auto\""
                    .into(),
            ));
        }
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
        let http = raw
            .http
            .resolve(|p| resolve(p).map_err(|e| e.to_string()))
            .map_err(&invalid)?;
        for secret in http.secret_files() {
            let readable = std::iter::once(&workspace)
                .chain(&read_roots)
                .chain(&landlock.ro)
                .any(|root| secret.starts_with(root));
            if readable {
                warnings.push(format!(
                    "[http]: {} is in the workspace or a read root: commands can read it; keep \
                     secrets outside them (the server alone reads them there)",
                    secret.display()
                ));
            }
        }
        let (linked, refused) = match crate::guard::git::linked_worktree(&workspace) {
            Ok(linked) => (linked, None),
            Err(why) => {
                warnings.push(format!(
                    "[git]: no root derived from the workspace's `.git` file: {why}; \
                     add the main repository to read_roots yourself if you trust it"
                ));
                (None, Some(why))
            }
        };
        for key in raw.git.allow_exec_config.keys() {
            let hook = key.starts_with("hooks/") && key.len() > "hooks/".len();
            if !hook && !crate::gitguard::keys::carries_exec(key, "!x") {
                warnings.push(format!(
                    "[git] allow_exec_config: {key:?} is not a git key that runs a program \
                     (nor `hooks/NAME`): it keeps nothing; see `whalebox profile schema`"
                ));
            }
        }
        let git = GitSection {
            main_worktree: raw.git.main_worktree,
            allow_exec_config: raw.git.allow_exec_config,
            linked,
            refused,
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
            http,
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

#[cfg(test)]
mod tests;
