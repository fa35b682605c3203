//! Fences around what a tool may touch. [`paths`] is the userspace path guard every
//! file tool consults before any I/O; a later layer (Landlock) enforces the same sets in
//! the kernel, so a bug here is not an escape.

pub mod paths;

pub use paths::{Access, Allowed, GuardError, PathGuard, RootKind, resolve_physical};
