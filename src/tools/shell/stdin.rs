//! write_stdin: text and named keys typed into a running task.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::core::{BoxFuture, CallContext, Code, Tool, ToolError, ToolResult};
use crate::shell::Mode;

use super::find_task;
use super::report::report_with_network;
use crate::tools::Env;
use crate::tools::common::args;

const DEFAULT_STDIN_WAIT_MS: u64 = 250;
const MAX_STDIN_WAIT_MS: u64 = 10_000;

/// Named keys and what they send to a terminal.
const KEYS: &[(&str, &[u8])] = &[
    ("enter", b"\r"),
    ("tab", b"\t"),
    ("esc", b"\x1b"),
    ("backspace", b"\x7f"),
    ("up", b"\x1b[A"),
    ("down", b"\x1b[B"),
    ("right", b"\x1b[C"),
    ("left", b"\x1b[D"),
    ("ctrl-c", b"\x03"),
    ("ctrl-d", b"\x04"),
    ("ctrl-z", b"\x1a"),
    ("ctrl-l", b"\x0c"),
];

pub(crate) struct WriteStdin {
    pub(super) env: Arc<Env>,
}

#[derive(Deserialize)]
struct StdinArgs {
    task_id: String,
    input: Option<String>,
    #[serde(default)]
    keys: Vec<String>,
    wait_ms: Option<u64>,
}

impl Tool for WriteStdin {
    fn name(&self) -> &str {
        "write_stdin"
    }

    fn title(&self) -> Option<String> {
        Some("Type into shell task".into())
    }

    fn description(&self) -> String {
        "Send text and named keys to a running task, then wait briefly (default 250 ms) and \
         return the new output. Keys: enter, tab, esc, backspace, up, down, left, right, \
         ctrl-c, ctrl-d, ctrl-z, ctrl-l (all for PTY tasks). A pipe task takes text (end lines \
         with \\n), ctrl-d (closes stdin) and ctrl-c (SIGINT)."
            .into()
    }

    fn parameters(&self) -> Value {
        let names: Vec<&str> = KEYS.iter().map(|(n, _)| *n).collect();
        json!({
            "type": "object",
            "properties": {
                "task_id": {"type": "string", "description": "The task id shell_run gave."},
                "input": {"type": "string", "description": "Text to type (include \\n to end a line on a pipe)."},
                "keys": {"type": "array", "items": {"type": "string", "enum": names}, "description": "Keys to press after the text."},
                "wait_ms": {"type": "integer", "minimum": 0, "maximum": MAX_STDIN_WAIT_MS, "description": "How long to wait for output afterwards (default 250)."}
            },
            "required": ["task_id"],
            "additionalProperties": false
        })
    }

    fn changes_workspace(&self, input: &Value) -> Option<String> {
        let task = input["task_id"].as_str()?;
        Some(format!("to task {task}"))
    }

    fn run(self: Arc<Self>, input: Value, _ctx: CallContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let a: StdinArgs = args(input)?;
            let task = find_task(&self.env, &a.task_id)?;
            if a.input.is_none() && a.keys.is_empty() {
                return Err(ToolError::invalid_input(
                    "nothing to send: give `input`, `keys` or both",
                    "e.g. {\"task_id\": \"…\", \"input\": \"yes\", \"keys\": [\"enter\"]}",
                ));
            }
            if !task.is_running() {
                return Err(ToolError::new(
                    Code::Unsupported,
                    format!("task {} has ended; it takes no more input", task.id),
                    "read its output with shell_wait, or start a new command with shell_run",
                ));
            }
            let pipe = task.mode == Mode::Pipe;
            if pipe
                && let Some(k) = a
                    .keys
                    .iter()
                    .find(|k| !matches!(k.as_str(), "ctrl-c" | "ctrl-d"))
            {
                return Err(ToolError::new(
                    Code::Unsupported,
                    format!(
                        "key `{k}` needs a terminal, and task {} runs on pipes",
                        task.id
                    ),
                    "send text (with \\n for enter), ctrl-c or ctrl-d; for keys, run the command with mode \"pty\"",
                ));
            }
            let fail = |e: std::io::Error| {
                ToolError::new(
                    Code::Unsupported,
                    format!("cannot write to task {}: {e}", task.id),
                    "the command may have closed its input; check it with shell_wait",
                )
            };
            if let Some(text) = &a.input {
                task.write(text.as_bytes()).map_err(fail)?;
            }
            for key in &a.keys {
                match (pipe, key.as_str()) {
                    (true, "ctrl-c") => task.signal_group(nix::sys::signal::Signal::SIGINT),
                    (true, "ctrl-d") => task.close_stdin(),
                    _ => {
                        let bytes = KEYS.iter().find(|(n, _)| n == key).map(|(_, b)| *b);
                        if let Some(b) = bytes {
                            task.write(b).map_err(fail)?;
                        }
                    }
                }
            }
            let wait = a
                .wait_ms
                .unwrap_or(DEFAULT_STDIN_WAIT_MS)
                .min(MAX_STDIN_WAIT_MS);
            task.wait(Duration::from_millis(wait)).await;
            report_with_network(&self.env, &task, &[]).await
        })
    }
}
