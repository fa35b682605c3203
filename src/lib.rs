//! whalebox: the hands of an LLM coding agent.
//!
//! A model can only emit text ("read this file", "find that symbol"); whalebox carries it
//! out on a real disk and answers with text the model can act on. One call flows:
//!
//! ```text
//! transport (mcp/, or `whalebox call`)
//!   └─ core::Registry::dispatch: find tool → repair → validate → run → envelope
//!        └─ tools::<group>: guard::paths, text:: decoding, edit:: matching,
//!           mutation:: atomic commits, ripgrep's engine …
//! ```
//!
//! Dependencies point one way: `tools → core, guard, text, edit, mutation, profile`; `core` knows no
//! concrete tool; only `mcp` and `main` know about transports and terminals. `text`,
//! `edit` and `policy` are crates of their own (`crates/`), usable without the rest; see
//! CONTRIBUTING.md for the layering rule.

pub mod boundary;
pub mod checkpoint;
pub mod core;
pub use whalebox_edit as edit;
pub mod gitguard;
pub mod guard;
pub mod mcp;
pub mod mutation;
pub mod net;
pub use whalebox_policy as policy;
pub mod profile;
pub mod runner;
pub mod session;
pub mod shell;
pub use whalebox_text as text;
pub mod tools;
pub mod upstream;
pub mod web;
