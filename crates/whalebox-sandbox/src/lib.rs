//! whalebox-sandbox: the fences around an agent's tools and commands, in layers that do
//! not trust each other.
//!
//! - [`PathGuard`] ([`paths`]): the userspace check every file tool makes before any
//!   I/O. A path as the model wrote it (relative, `~/…`, through symlinks) is resolved
//!   the way the kernel would walk it and admitted only inside the workspace (read and
//!   write) or a read-only root; the answer names it as the model should see it.
//! - [`landlock::Sandbox`]: the same sets enforced by Linux Landlock, as a layer the
//!   server puts on itself and a second one each command's supervisor adds, with TCP
//!   ports and scopes; rights the running kernel lacks are dropped and reported
//!   ([`landlock::Status`]) or stop start-up, as the mode says. [`presets`] name what
//!   each language toolchain needs outside the workspace (caches, toolchains, configs,
//!   never credentials); [`git`] finds the main repository of a linked worktree.
//! - [`kernel`]: the kernel exec gate. A seccomp filter stops every `execve` and
//!   `execveat` of every process of a command for its supervisor, which follows the
//!   process tree with ptrace and puts each exec to the decision server (the policy of
//!   the `whalebox-policy` crate), checking the loaded image a second time.
//! - [`limits`]: what one command may take (processes, memory, open files, CPU time),
//!   kept by a cgroup per task where one can be made ([`limits::cgroup`]) and by rlimits.
//!
//! Nothing here reads a profile: a caller hands over the settings
//! ([`landlock::LandlockSection`], [`landlock::Extras`], [`limits::LimitsSection`]).
//!
//! ```
//! use whalebox_sandbox::{Access, GuardError, PathGuard};
//!
//! let top = tempfile::tempdir().unwrap();
//! let workspace = top.path().join("project");
//! std::fs::create_dir_all(workspace.join("src")).unwrap();
//! std::fs::write(workspace.join("src/main.rs"), "fn main() {}\n").unwrap();
//! let guard = PathGuard::new(&workspace, &[], &[]).unwrap();
//!
//! // Inside the workspace, however it is spelt: named relative to it.
//! let allowed = guard.check("src/../src/main.rs", Access::Write).unwrap();
//! assert_eq!(allowed.shown, "src/main.rs");
//!
//! // Outside every root (here, through `..`): refused, nothing was opened.
//! let refused = guard.check("../elsewhere.txt", Access::Read).unwrap_err();
//! assert!(matches!(refused, GuardError::Denied { .. }));
//! ```

pub mod beneath;
pub mod git;
pub mod kernel;
pub mod landlock;
pub mod limits;
pub mod machine;
pub mod paths;
pub mod presets;
pub mod runtime;
pub mod spaces;

pub use paths::{Access, Allowed, GuardError, PathGuard, RootKind, normalize, resolve_physical};
