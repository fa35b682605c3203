//! The tool catalog: which groups exist and which tools each group registers, in the
//! session's shared [`Env`] (see [`crate::session`]).
//!
//! Groups: `files` (read_file, list_dir, load_skill), `search` (grep, search_files),
//! `edit` (edit, multi_edit, write), `shell` (shell_run, shell_wait, write_stdin,
//! shell_cancel), `plan` (update_plan), `todo` (todo_*), `input` (request_user_input),
//! `checkpoints` (checkpoint_*; its hook checkpoints every call that may change the
//! workspace), `mcp` and `web`.
//! Each group lives in its own module; adding one is a module plus a row in [`GROUPS`].

mod checkpoints;
mod common;
mod edit;
mod files;
mod input;
mod mcp;
mod plan;
mod search;
mod shell;
mod skills;
mod todo;
mod walk;
pub(crate) mod web;

use std::sync::Arc;

use crate::core::{Registry, RegistryError};
use crate::profile::Profile;

// The session's types, where the tools have always found them.
pub use crate::session::board;
pub use crate::session::{Env, Gate, Session, ShellBoundary, Skill, SkillIndex};

pub use plan::render as plan_text;
pub use todo::render as todos_text;

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
    Group {
        name: "plan",
        summary: "update_plan",
        register: plan::register,
    },
    Group {
        name: "todo",
        summary: "todo_add, todo_list, todo_update, todo_remove, todo_clear_completed",
        register: todo::register,
    },
    Group {
        name: "input",
        summary: "request_user_input",
        register: input::register,
    },
    Group {
        name: "mcp",
        summary: "tool_search, call_tool (listed when [mcp_servers] has a server)",
        register: mcp::register,
    },
    Group {
        name: "checkpoints",
        summary: "checkpoint_list, checkpoint_diff, checkpoint_restore",
        register: checkpoints::register,
    },
    Group {
        name: "web",
        summary: "web_fetch, fetch, web_search (opt-in)",
        register: web::register,
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
    #[error(transparent)]
    Setup(#[from] crate::session::SetupError),
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
    let env = Arc::new(Env::new(profile, session)?);
    Ok((registry_for(&env)?, env))
}

/// Another session of a server built by [`build_session`] (an HTTP client's): its own
/// [`Env`] from [`Env::new_session`], and its own registry over it.
pub fn build_another_session(
    base: &Env,
    name: &str,
    caller: &str,
) -> Result<(Registry, Arc<Env>), CatalogError> {
    let env = Arc::new(base.new_session(name, caller)?);
    Ok((registry_for(&env)?, env))
}

/// The tools of the profile's groups, working in `env`.
fn registry_for(env: &Arc<Env>) -> Result<Registry, CatalogError> {
    let mut registry = Registry::new(Arc::clone(&env.limits));
    if let Some(c) = &env.checkpoints {
        registry.set_change_hook(Arc::new(checkpoints::Hook {
            checkpoints: c.clone(),
            tasks: Arc::clone(&env.tasks),
            announce: env.board.announcer(),
            git_guard: env.git_guard.clone(),
        }));
    }
    for group in GROUPS {
        if env.profile.tools.iter().any(|g| g == group.name) {
            (group.register)(env, &mut registry)?;
        }
    }
    Ok(registry)
}
