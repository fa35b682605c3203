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

use crate::core::{Registry, RegistryError};
use crate::guard::PathGuard;
use crate::mutation::{Ledger, Stripes};
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
    pub tasks: TaskTable,
    pub session: Session,
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
        let tasks = TaskTable::new(Limits {
            max_live: profile.shell.max_tasks,
            max_kept: 64,
            keep_ended: std::time::Duration::from_secs(30 * 60),
            buffer_bytes: profile.shell.buffer_bytes,
        });
        Ok(Env {
            profile,
            guard,
            skills,
            ledger: Ledger::default(),
            stripes: Stripes::default(),
            tasks,
            session,
        })
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
