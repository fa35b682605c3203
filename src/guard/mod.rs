//! Fences around what a tool may touch. [`paths`] is the userspace path guard every
//! file tool consults before any I/O; [`landlock`] enforces the same sets in the kernel,
//! for the server and every shell command, so a bug here is not an escape; [`presets`]
//! names what each language toolchain needs outside the workspace; [`git`] finds the
//! main repository of a linked worktree.

pub mod git;
pub mod landlock;
pub mod paths;
pub mod presets;

pub use paths::{Access, Allowed, GuardError, PathGuard, RootKind, normalize, resolve_physical};
