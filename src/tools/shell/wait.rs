//! shell_wait: wait for a running task and report what it did meanwhile.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::core::{BoxFuture, CallContext, Tool, ToolResult};

use super::report::report_with_network;
use super::{find_task, resumed_approval, wait_for};
use crate::tools::Env;
use crate::tools::common::args;

pub(crate) struct ShellWait {
    pub(super) env: Arc<Env>,
}

#[derive(Deserialize)]
struct WaitArgs {
    task_id: String,
    timeout_ms: Option<u64>,
}

impl Tool for ShellWait {
    fn name(&self) -> &str {
        "shell_wait"
    }

    fn title(&self) -> Option<String> {
        Some("Wait for shell task".into())
    }

    fn description(&self) -> String {
        format!(
            "Wait for a task shell_run started, until it exits or `timeout_ms` passes (default \
             and maximum {} ms). Returns the output produced since the last read, the status, \
             and the exit code once it ended.",
            self.env.limits.max_yield_ms()
        )
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "task_id": {"type": "string", "description": "The task id shell_run gave."},
                "timeout_ms": {"type": "integer", "minimum": 0, "description": "How long to wait at most."}
            },
            "required": ["task_id"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn run(self: Arc<Self>, input: Value, ctx: CallContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let a: WaitArgs = args(input)?;
            let task = find_task(&self.env, &a.task_id)?;
            let cap = self.env.limits.max_yield_ms();
            let requested = a.timeout_ms.unwrap_or(cap);
            let mut notes = Vec::new();
            if requested > cap {
                notes.push(format!("timeout_ms {requested} was clamped to {cap}"));
            }
            if let Some(resumed) = resumed_approval(&self.env, &ctx) {
                notes.extend(resumed?.1);
            }
            wait_for(
                &self.env,
                &task,
                Duration::from_millis(requested.min(cap)),
                &ctx,
            )
            .await?;
            report_with_network(&self.env, &task, &notes).await
        })
    }
}
