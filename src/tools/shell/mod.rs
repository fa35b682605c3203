//! The `shell` group: shell_run, shell_wait, write_stdin and shell_cancel. Commands run
//! in tasks (see `crate::shell`); a call waits a bounded time and then answers, with
//! the task id when the command is still running.
//!
//! This module owns what the tools share: finding a task by id, the bounded wait and
//! the retry that brings an approval's answer. Each tool has its submodule; `report`
//! turns a task's state into the result they all give.

mod cancel;
mod report;
mod run;
mod stdin;
mod wait;

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::boundary::{approval_form, approval_of};
use crate::core::{Asking, CallContext, Code, Registry, RegistryError, ToolError, input_required};
use crate::shell::Task;

use super::Env;
use cancel::ShellCancel;
use run::ShellRun;
use stdin::WriteStdin;
use wait::ShellWait;

pub(crate) fn register(env: &Arc<Env>, registry: &mut Registry) -> Result<(), RegistryError> {
    registry.register("shell", Arc::new(ShellRun { env: env.clone() }))?;
    registry.register("shell", Arc::new(ShellWait { env: env.clone() }))?;
    registry.register("shell", Arc::new(WriteStdin { env: env.clone() }))?;
    registry.register("shell", Arc::new(ShellCancel { env: env.clone() }))?;
    Ok(())
}

fn find_task(env: &Env, id: &str) -> Result<Arc<Task>, ToolError> {
    env.tasks.get(id).ok_or_else(|| {
        let known = env.tasks.ids();
        let list = if known.is_empty() {
            "this session has no tasks".to_string()
        } else {
            format!("known tasks: {}", known.join(", "))
        };
        ToolError::new(
            Code::TaskNotFound,
            format!("no task `{id}` in this session ({list})"),
            "use a task_id that shell_run returned in this session; ended tasks are pruned after 30 minutes",
        )
        .with_data(json!({"tasks": known}))
    })
}

/// Wait for `task` at most `limit`. On the 2026-07-28 lifecycle an approval the task is
/// waiting for ends the wait: the call answers `input_required` carrying the question,
/// and its retry brings the answer ([`resumed_approval`]).
async fn wait_for(
    env: &Env,
    task: &Task,
    limit: Duration,
    ctx: &CallContext,
) -> Result<(), ToolError> {
    let carries = matches!(ctx.ask, Asking::Retry(_));
    tokio::select! {
        _ = task.wait(limit) => Ok(()),
        _ = ctx.cancel.cancelled() => Ok(()),
        (id, req) = env.approvals.next_for(&task.id), if carries => Err(input_required(
            approval_form(&req),
            json!({"task": task.id, "approval": id}),
        )),
    }
}

/// The task a retry resumes, and a note for its result.
type Resumption = (Arc<Task>, Option<String>);

/// A retry that carries a person's answer to an approval: hand the answer over and
/// return the task that asked (with a note when the question had expired meanwhile).
fn resumed_approval(env: &Env, ctx: &CallContext) -> Option<Result<Resumption, ToolError>> {
    let Asking::Retry(Some(r)) = &ctx.ask else {
        return None;
    };
    let id = r.state["approval"].as_u64()?;
    let task_id = r.state["task"].as_str()?;
    let delivered = env.approvals.answer(id, approval_of(&r.answer));
    let note = (!delivered).then(|| {
        "the approval question expired before the answer came; the profile's [shell] on_ask decided it".to_string()
    });
    Some(find_task(env, task_id).map(|t| (t, note)))
}
