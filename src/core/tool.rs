//! The [`Tool`] trait a tool author implements, the frozen [`ToolSpec`] the registry
//! computes from it once, and the per-call [`CallContext`] (cancellation and progress).

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::ask::Asking;
use super::envelope::Code;
use super::output::{BoxFuture, ToolError, ToolResult};

/// One tool. Only [`Tool::name`] and [`Tool::run`] are required; the rest describe the
/// tool to clients and have conservative defaults. The registry reads these once at
/// registration, so a tool's face cannot change within a session.
pub trait Tool: Send + Sync + 'static {
    fn name(&self) -> &str;

    /// Human-readable title (MCP `title`).
    fn title(&self) -> Option<String> {
        None
    }

    fn description(&self) -> String {
        String::new()
    }

    /// JSON Schema of the arguments. The default accepts an empty object only.
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    }

    /// Does not modify its environment.
    fn read_only(&self) -> bool {
        false
    }

    /// May overwrite or delete (only meaningful when not read-only).
    fn destructive(&self) -> bool {
        !self.read_only()
    }

    /// Calling twice with the same arguments has no further effect.
    fn idempotent(&self) -> bool {
        self.read_only()
    }

    /// Talks to the world beyond the machine (web, remote services).
    fn open_world(&self) -> bool {
        false
    }

    /// When this call may change the workspace: a one-line summary of it for its
    /// checkpoint (`src/lib.rs: 2 edits`, `cargo fmt`). None: it cannot.
    fn changes_workspace(&self, _input: &Value) -> Option<String> {
        None
    }

    /// Carry out one call. `input` has been repaired and validated against
    /// [`Tool::parameters`].
    fn run(self: Arc<Self>, input: Value, ctx: CallContext) -> BoxFuture<'static, ToolResult>;
}

/// What the registry does around every call that may change the workspace (see
/// [`Tool::changes_workspace`]): the checkpoints.
pub trait ChangeHook: Send + Sync {
    /// Before the call (blocking): the checkpoint's id, or why there is none (the call
    /// runs anyway).
    fn before(&self, tool: &str, summary: &str) -> Result<String, String>;
    /// After the call returned `data` (blocking).
    fn after(&self, id: &str, data: &Value);
}

/// Tools listed beside the registry's own but run through one of them: the mcp group's
/// upstream tools of `defer = false` servers, listed under their qualified names and
/// called through `call_tool`. Lets the transport list them without knowing upstreams.
pub trait Forwarded: Send + Sync {
    /// The tools (the transport lists them once per session).
    fn list(&self) -> BoxFuture<'_, Vec<ForwardedTool>>;
}

/// One forwarded tool as a client sees it; `annotations` are the upstream's own, passed
/// through as they came.
#[derive(Debug, Clone)]
pub struct ForwardedTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub annotations: Value,
}

/// MCP-style behaviour hints, frozen with the spec.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Annotations {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

/// What a tool looks like from outside, computed once at registration.
#[derive(Debug, Clone, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub group: String,
    pub title: Option<String>,
    pub description: String,
    pub input_schema: Value,
    pub annotations: Annotations,
}

impl ToolSpec {
    pub(crate) fn of(tool: &dyn Tool, group: &str) -> Self {
        let read_only = tool.read_only();
        ToolSpec {
            name: tool.name().to_string(),
            group: group.to_string(),
            title: tool.title(),
            description: tool.description(),
            input_schema: tool.parameters(),
            annotations: Annotations {
                read_only,
                destructive: !read_only && tool.destructive(),
                idempotent: tool.idempotent(),
                open_world: tool.open_world(),
            },
        }
    }
}

/// One progress report from a running tool.
#[derive(Debug, Clone, Serialize)]
pub struct ProgressUpdate {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// Where a tool sends progress. The MCP adapter forwards it as `notifications/progress`
/// when the client asked for it; elsewhere it goes nowhere.
#[derive(Clone, Default)]
pub struct Progress {
    sink: Option<Arc<dyn Fn(ProgressUpdate) + Send + Sync>>,
}

impl Progress {
    pub fn new(sink: impl Fn(ProgressUpdate) + Send + Sync + 'static) -> Self {
        Progress {
            sink: Some(Arc::new(sink)),
        }
    }

    pub fn report(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        if let Some(sink) = &self.sink {
            sink(ProgressUpdate {
                progress,
                total,
                message,
            });
        }
    }

    pub fn is_connected(&self) -> bool {
        self.sink.is_some()
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress")
            .field("connected", &self.is_connected())
            .finish()
    }
}

/// Per-call plumbing handed to [`Tool::run`].
#[derive(Clone, Debug, Default)]
pub struct CallContext {
    /// Cancelled when the client cancels the request or goes away. Long-running tools
    /// check it; the registry also stops waiting on the tool when it fires.
    pub cancel: CancellationToken,
    pub progress: Progress,
    /// How this call can reach a person (request_user_input, approvals).
    pub ask: Asking,
}

/// Run blocking file-system work on tokio's blocking pool. Most tools are a thin
/// `run_blocking(move || ...)` around synchronous code.
pub fn run_blocking<F>(work: F) -> BoxFuture<'static, ToolResult>
where
    F: FnOnce() -> ToolResult + Send + 'static,
{
    Box::pin(async move {
        match tokio::task::spawn_blocking(work).await {
            Ok(result) => result,
            Err(join) if join.is_panic() => Err(ToolError::internal(format!(
                "the tool panicked: {}",
                panic_message(join.into_panic())
            ))),
            Err(_) => Err(ToolError::new(
                Code::Cancelled,
                "the call was cancelled",
                "call the tool again if the result is still needed",
            )),
        }
    })
}

pub(crate) fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}
