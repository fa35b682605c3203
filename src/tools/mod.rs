//! The tool catalog: which groups exist, which tools each group registers, and the
//! shared [`Env`] (profile, path guard, skills) the tools of one session work in.
//!
//! Groups: `files` (read_file, list_dir, load_skill), `search` (grep, search_files),
//! `edit` (edit, multi_edit, write) and `shell` (shell_run, shell_wait, write_stdin,
//! shell_cancel).
//! Each group lives in its own module; adding one is a module plus a row in [`GROUPS`].

mod common;
mod edit;
mod files;
mod search;
mod shell;
mod skills;
mod walk;

use std::sync::Arc;

use crate::boundary::{ApproverSlot, DecisionServer, GatedShell};
use crate::core::{Registry, RegistryError};
use crate::guard::PathGuard;
use crate::mutation::{Ledger, Stripes};
use crate::policy::Policy;
use crate::profile::ExecBoundary;
use crate::profile::Profile;
use crate::shell::TaskTable;
use crate::shell::task::Limits;

pub use skills::{Skill, SkillIndex};

/// Everything the tools of one session share, built once from the profile.
#[derive(Debug)]
pub struct Env {
    pub profile: Profile,
    pub guard: PathGuard,
    pub skills: SkillIndex,
    /// What this session last read or wrote of each file.
    pub ledger: Ledger,
    /// Serializes read-modify-write calls on the same file.
    pub stripes: Stripes,
    /// The shell tasks this session started.
    pub tasks: Arc<TaskTable>,
    pub session: Session,
    /// The exec policy (loaded at start when the shell group is on and the boundary
    /// is not off; a policy that does not load stops startup).
    pub policy: Option<Arc<Policy>>,
    /// The gated zsh and this session's decision server, started on first use.
    gate: std::sync::OnceLock<Result<Arc<Gate>, String>>,
    /// Who answers the policy's `ask` (installed by the MCP server when its client can).
    pub approver: ApproverSlot,
}

/// The exec boundary of one session.
pub struct Gate {
    pub shell: GatedShell,
    pub server: DecisionServer,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate").field("shell", &self.shell).finish()
    }
}

/// What kind of session the tools serve: a server (tasks outlive calls) or one CLI
/// call (whatever is still running when the call returns is stopped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Session {
    Server,
    OneShot,
}

impl Env {
    pub fn new(profile: Profile, session: Session) -> Result<Env, CatalogError> {
        let guard = PathGuard::new(
            &profile.workspace,
            &profile.read_roots,
            &profile.skills.dirs,
        )
        .map_err(|e| CatalogError::Workspace {
            path: profile.workspace.display().to_string(),
            source: e,
        })?;
        let skills = SkillIndex::discover(&guard);
        let policy = if profile.tools.iter().any(|g| g == "shell")
            && profile.shell.exec_boundary != ExecBoundary::Off
        {
            Some(Arc::new(match &profile.policy {
                Some(p) => Policy::load(p).map_err(|e| CatalogError::Policy(e.0))?,
                None => Policy::embedded(),
            }))
        } else {
            None
        };
        let tasks = Arc::new(TaskTable::new(Limits {
            max_live: profile.shell.max_tasks,
            max_kept: 64,
            keep_ended: std::time::Duration::from_secs(30 * 60),
            buffer_bytes: profile.shell.buffer_bytes,
        }));
        Ok(Env {
            profile,
            guard,
            skills,
            ledger: Ledger::default(),
            stripes: Stripes::default(),
            tasks,
            session,
            policy,
            gate: std::sync::OnceLock::new(),
            approver: ApproverSlot::default(),
        })
    }

    /// The exec boundary if a shell call has started it (never starts it).
    pub fn started_gate(&self) -> Option<Arc<Gate>> {
        self.gate.get().and_then(|g| g.as_ref().ok().cloned())
    }

    /// The exec boundary: the gated zsh and a decision server for this session, or why
    /// there is none.
    pub fn gate(&self) -> Result<Arc<Gate>, String> {
        self.gate
            .get_or_init(|| {
                let policy = self
                    .policy
                    .clone()
                    .ok_or("the exec boundary is off in this profile")?;
                let shell = crate::boundary::find_gated_shell(self.profile.shell.zsh.as_deref())?;
                let tasks = self.tasks.clone();
                let server = DecisionServer::start(
                    policy,
                    crate::boundary::Settings {
                        on_ask: self.profile.shell.on_ask,
                        audit_log: self.profile.shell.audit_log.clone(),
                        approvals_file: self.profile.shell.approvals_file.clone(),
                    },
                    Arc::new(move |pid| tasks.task_of_pid(pid)),
                    self.approver.clone(),
                )
                .map_err(|e| format!("cannot start the decision server: {e}"))?;
                Ok(Arc::new(Gate { shell, server }))
            })
            .clone()
    }
}

/// One tool group: a name the profile's `tools` list can enable.
pub struct Group {
    pub name: &'static str,
    pub summary: &'static str,
    register: fn(&Arc<Env>, &mut Registry) -> Result<(), RegistryError>,
}

/// Every group whalebox has, in listing order.
pub const GROUPS: &[Group] = &[
    Group {
        name: "files",
        summary: "read_file, list_dir, load_skill",
        register: files::register,
    },
    Group {
        name: "search",
        summary: "grep, search_files",
        register: search::register,
    },
    Group {
        name: "edit",
        summary: "edit, multi_edit, write",
        register: edit::register,
    },
    Group {
        name: "shell",
        summary: "shell_run, shell_wait, write_stdin, shell_cancel",
        register: shell::register,
    },
];

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("{profile}: unknown tool group `{group}` in `tools`; known groups: {known}")]
    UnknownGroup {
        profile: String,
        group: String,
        known: String,
    },
    #[error("workspace {path}: {source}")]
    Workspace {
        path: String,
        source: std::io::Error,
    },
    #[error("policy: {0}")]
    Policy(String),
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

/// Build the registry of every tool the profile enables, for a server session.
pub fn build(profile: Profile) -> Result<(Registry, Arc<Env>), CatalogError> {
    build_session(profile, Session::Server)
}

/// Build the registry of every tool the profile enables.
pub fn build_session(
    profile: Profile,
    session: Session,
) -> Result<(Registry, Arc<Env>), CatalogError> {
    for group in &profile.tools {
        if !GROUPS.iter().any(|g| g.name == group) {
            return Err(CatalogError::UnknownGroup {
                profile: profile.source_name(),
                group: group.clone(),
                known: GROUPS.iter().map(|g| g.name).collect::<Vec<_>>().join(", "),
            });
        }
    }
    let mut registry = Registry::new(profile.output.max_chars);
    let env = Arc::new(Env::new(profile, session)?);
    for group in GROUPS {
        if env.profile.tools.iter().any(|g| g == group.name) {
            (group.register)(&env, &mut registry)?;
        }
    }
    Ok((registry, env))
}
