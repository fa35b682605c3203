//! The tool contract every tool shares: the [`Tool`] trait, its frozen [`ToolSpec`], the
//! [`Registry`] that repairs, validates, runs and normalizes each call, and the
//! [`Envelope`] every call answers with.
//!
//! A tool author implements [`Tool::run`] only; lookup, input repair, JSON-schema
//! validation with recovery hints, cancellation, panic isolation and output capping are
//! the registry's job, identical for every tool.

mod ask;
mod envelope;
mod hints;
mod limits;
mod output;
mod registry;
mod repair;
mod tool;
mod validate;

pub use ask::{Answer, Asker, Asking, Form, Resumed, input_required};
pub use envelope::{Code, Envelope, cap_text};
pub use hints::nearest as nearest_names;
pub use limits::SessionLimits;
pub use output::{BoxFuture, MachineFault, ToolError, ToolOutput, ToolResult};
pub use registry::{Registry, RegistryError};
pub use repair::{Repair, RepairKind, repair as repair_arguments};
pub use tool::{
    Annotations, CallContext, ChangeHook, Forwarded, ForwardedTool, Progress, ProgressUpdate, Tool,
    ToolSpec, run_blocking,
};
