//! Fences around what a tool may touch: the `whalebox-sandbox` crate's path guard
//! ([`paths`]), Landlock layers ([`landlock`]), toolchain presets ([`presets`]) and
//! linked worktrees ([`git`]), where the rest of whalebox has always found them.

pub use whalebox_sandbox::{
    Access, Allowed, GuardError, PathGuard, RootKind, normalize, resolve_physical,
};
pub use whalebox_sandbox::{
    beneath, git, landlock, limits, machine, paths, presets, runtime, spaces,
};
