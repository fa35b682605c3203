//! The tool catalog: which groups exist, which tools each group registers, and the
//! shared [`Env`] (profile, path guard, skills) the tools of one session work in.
//!
//! Groups: `files` (read_file, list_dir, load_skill), `search` (grep, search_files) and
//! `edit` (edit, multi_edit, write).
//! Each group lives in its own module; adding one is a module plus a row in [`GROUPS`].

mod common;
mod edit;
mod files;
mod search;
mod skills;
mod walk;

use std::sync::Arc;

use crate::core::{Registry, RegistryError};
use crate::guard::PathGuard;
use crate::mutation::{Ledger, Stripes};
use crate::profile::Profile;

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
}

impl Env {
    pub fn new(profile: Profile) -> Result<Env, CatalogError> {
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
        Ok(Env {
            profile,
            guard,
            skills,
            ledger: Ledger::default(),
            stripes: Stripes::default(),
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

/// Build the registry of every tool the profile enables.
pub fn build(profile: Profile) -> Result<(Registry, Arc<Env>), CatalogError> {
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
    let env = Arc::new(Env::new(profile)?);
    for group in GROUPS {
        if env.profile.tools.iter().any(|g| g == group.name) {
            (group.register)(&env, &mut registry)?;
        }
    }
    Ok((registry, env))
}
