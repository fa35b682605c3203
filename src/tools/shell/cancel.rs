//! shell_cancel: stop a task's whole process group and report its end.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::core::{BoxFuture, CallContext, Tool, ToolResult};

use super::find_task;
use super::report::report_with_network;
use crate::tools::Env;
use crate::tools::common::args;

pub(crate) struct ShellCancel {
    pub(super) env: Arc<Env>,
}

#[derive(Deserialize)]
struct CancelArgs {
    task_id: String,
}

impl Tool for ShellCancel {
    fn name(&self) -> &str {
        "shell_cancel"
    }

    fn title(&self) -> Option<String> {
        Some("Stop shell task".into())
    }

    fn description(&self) -> String {
        "Stop a task: SIGINT, then SIGTERM, then SIGKILL to its whole process group, with \
         short grace periods. Returns the final status and the last output."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"task_id": {"type": "string", "description": "The task id shell_run gave."}},
            "required": ["task_id"],
            "additionalProperties": false
        })
    }

    fn run(self: Arc<Self>, input: Value, _ctx: CallContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let a: CancelArgs = args(input)?;
            let task = find_task(&self.env, &a.task_id)?;
            let note = if task.is_running() {
                let sent = task.cancel().await;
                format!("sent {}", sent.join(", then "))
            } else {
                "the task had already ended".to_string()
            };
            report_with_network(&self.env, &task, std::slice::from_ref(&note))
                .await
                .map(|mut out| {
                    if let Some(obj) = out.data.as_object_mut() {
                        obj.insert("cancel".into(), json!(note));
                    }
                    out
                })
        })
    }
}
