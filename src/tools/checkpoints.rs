//! Group `checkpoints`: undo for the model. `checkpoint_list`, `checkpoint_diff` and
//! `checkpoint_restore` over the checkpoints taken before every call that may change the
//! workspace (see [`crate::checkpoint`]); and [`Hook`], which takes them.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::checkpoint::{Checkpoints, RestoreError, report};
use crate::core::{
    BoxFuture, CallContext, ChangeHook, Code, MachineFault, Registry, RegistryError, Tool,
    ToolError, ToolOutput, run_blocking,
};
use crate::guard::Access;
use crate::shell::TaskTable;

use super::Env;
use super::common::{args, guarded};

pub(crate) fn register(env: &Arc<Env>, registry: &mut Registry) -> Result<(), RegistryError> {
    registry.register("checkpoints", Arc::new(List(Arc::clone(env))))?;
    registry.register("checkpoints", Arc::new(Diff(Arc::clone(env))))?;
    registry.register("checkpoints", Arc::new(Restore(Arc::clone(env))))
}

/// Takes a checkpoint before each call that may change the workspace, and records how
/// the call left it.
pub struct Hook {
    /// The store (each changing call says why when there is none).
    pub checkpoints: Arc<crate::checkpoint::Slot>,
    pub tasks: Arc<TaskTable>,
    /// Where `whalebox://session/checkpoints` subscribers hear of a new checkpoint.
    pub announce: tokio::sync::broadcast::Sender<&'static str>,
    /// Checked before each checkpoint, so none records a planted git hook as the
    /// workspace's state.
    pub git_guard: Option<Arc<crate::gitguard::GitGuard>>,
}

impl ChangeHook for Hook {
    fn before(&self, tool: &str, summary: &str) -> Result<String, String> {
        if let Some(g) = &self.git_guard {
            g.check();
        }
        self.checkpoints
            .get()?
            .take(tool, summary)
            .map_err(|e| format!("no checkpoint was taken before this call: {e}"))
    }

    fn after(&self, id: &str, data: &Value) {
        // A call that wrote the workspace without a shell (an edit, an upstream tool) may
        // have written a hook: undone now, said in the next shell answer and the logs.
        if let Some(g) = &self.git_guard {
            g.check();
        }
        let Ok(cp) = self.checkpoints.get() else {
            return;
        };
        let task = data["task_id"].as_str().map(str::to_string);
        if let Err(e) = cp.finished(id, task, running(&self.tasks)) {
            tracing::warn!("checkpoint {id}: cannot record how the call left the workspace: {e}");
        }
        let _ = self.announce.send(super::board::CHECKPOINTS_URI);
    }
}

/// The tasks still running, as "ID: command".
fn running(tasks: &TaskTable) -> Vec<String> {
    tasks
        .ids()
        .into_iter()
        .filter_map(|id| tasks.get(&id))
        .filter(|t| t.is_running())
        .map(|t| format!("{}: {}", t.id, super::common::cut_line(&t.command, 60)))
        .collect()
}

fn store(env: &Env) -> Result<Arc<Checkpoints>, ToolError> {
    match env.checkpoints.as_ref().map(|s| s.get()) {
        Some(Ok(c)) => Ok(c),
        Some(Err(why)) => Err(ToolError::new(
            Code::Unsupported,
            format!("checkpoints are not available in this session: {why}"),
            "see `whalebox doctor`; the store's directory is [checkpoints] dir in the profile",
        )),
        None => Err(ToolError::new(
            Code::Unsupported,
            "checkpoints are off in this profile ([checkpoints] mode = \"off\")",
            "turn them on in the profile to undo changes",
        )),
    }
}

fn io(e: std::io::Error) -> ToolError {
    match e.kind() {
        std::io::ErrorKind::NotFound => ToolError::new(
            Code::NotFound,
            e.to_string(),
            "checkpoint_list shows the checkpoints there are",
        ),
        std::io::ErrorKind::InvalidInput => ToolError::invalid_input(
            e.to_string(),
            "checkpoint_list shows the checkpoints there are",
        ),
        std::io::ErrorKind::InvalidData => ToolError::new(
            Code::Internal,
            e.to_string(),
            "the checkpoint store was changed behind whalebox's back; nothing in the workspace \
             was touched; an older checkpoint may still be whole",
        ),
        _ if MachineFault::of(&e).is_some() => {
            ToolError::io("the checkpoint store", &e, "the workspace was not touched")
        }
        _ => ToolError::new(
            Code::Internal,
            format!("the checkpoint store: {e}"),
            "check the disk (space, permissions) of the store; `whalebox doctor` names it",
        ),
    }
}

/// A restore that failed (`state`: where it left the workspace; `next_step`: what to
/// do). A full disk or a failing device keeps its own code and says what to free
/// first; a restore stopped midway also says it will be finished.
fn restore_failed(why: &std::io::Error, state: &str, next_step: &str, midway: bool) -> ToolError {
    let message = format!("{state}: {why}");
    match MachineFault::of(why) {
        None => ToolError::new(Code::Internal, message, next_step),
        Some(fault) if midway => ToolError::new(
            fault.code,
            message,
            format!("{}; {next_step}", fault.next_step),
        ),
        Some(fault) => ToolError::new(fault.code, message, fault.next_step),
    }
}

/// A path argument as a path from the workspace's top (`""`: all of it).
fn workspace_path(env: &Env, raw: &str) -> Result<String, ToolError> {
    let raw = raw.trim();
    if raw.is_empty() || raw == "." {
        return Ok(String::new());
    }
    let allowed = guarded(env, raw, Access::Write)?;
    let rel = allowed
        .abs
        .strip_prefix(&env.profile.workspace)
        .map_err(|_| {
            ToolError::new(
                Code::PathDenied,
                format!(
                    "{raw} is not inside the workspace, and checkpoints keep only the workspace"
                ),
                "give a path inside the workspace",
            )
        })?;
    Ok(rel.to_string_lossy().trim_end_matches('/').to_string())
}

struct List(Arc<Env>);

#[derive(Deserialize)]
struct ListArgs {
    #[serde(default)]
    limit: Option<usize>,
}

impl Tool for List {
    fn name(&self) -> &str {
        "checkpoint_list"
    }

    fn title(&self) -> Option<String> {
        Some("List checkpoints".into())
    }

    fn description(&self) -> String {
        "List the workspace's checkpoints, newest first: one is taken before every call that \
         may change the workspace (edit, multi_edit, write, shell_run, write_stdin, call_tool). \
         Each shows its id, when, the call(s) that followed it and what they changed \
         (+added −removed Modified), and what changed afterwards outside those calls."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "limit": {"type": "integer", "minimum": 1, "maximum": 500, "description": "How many (default 20)."}
            },
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn run(self: Arc<Self>, input: Value, _ctx: CallContext) -> BoxFuture<'static, ToolResult> {
        let env = Arc::clone(&self.0);
        run_blocking(move || {
            let a: ListArgs = args(input)?;
            let cp = store(&env)?;
            let list = cp.list(a.limit.unwrap_or(20), true).map_err(io)?;
            let text = report::list(&list, now(), report::Reader::Model);
            Ok(ToolOutput::new(text, json!({"checkpoints": list})))
        })
    }
}

type ToolResult = crate::core::ToolResult;

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

struct Diff(Arc<Env>);

#[derive(Deserialize)]
struct DiffArgs {
    id: String,
    #[serde(default)]
    path: Option<String>,
}

impl Tool for Diff {
    fn name(&self) -> &str {
        "checkpoint_diff"
    }

    fn title(&self) -> Option<String> {
        Some("Diff since a checkpoint".into())
    }

    fn description(&self) -> String {
        "Show what changed from a checkpoint to the workspace now: a unified diff per text \
         file (--- the checkpoint, +++ now), size and hash for binary files, created and \
         deleted paths. `path` limits it to a file or directory."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The checkpoint id, from checkpoint_list."},
                "path": {"type": "string", "description": "Only this file or directory."}
            },
            "required": ["id"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn run(self: Arc<Self>, input: Value, _ctx: CallContext) -> BoxFuture<'static, ToolResult> {
        let env = Arc::clone(&self.0);
        run_blocking(move || {
            let a: DiffArgs = args(input)?;
            let cp = store(&env)?;
            let path = workspace_path(&env, a.path.as_deref().unwrap_or(""))?;
            let (rec, diffs) = cp.diff(&a.id, &path).map_err(io)?;
            let text = report::diff(cp.store(), &rec, &diffs, env.limits.max_chars());
            let paths: Vec<Value> = diffs
                .iter()
                .filter(|d| {
                    !d.before.as_ref().is_some_and(|e| e.kind.is_dir()) || d.after.is_none()
                })
                .map(|d| json!({"path": d.path, "change": d.change()}))
                .collect();
            Ok(ToolOutput::new(
                text,
                json!({"id": rec.id, "changes": paths}),
            ))
        })
    }
}

struct Restore(Arc<Env>);

#[derive(Deserialize)]
struct RestoreArgs {
    id: String,
    #[serde(default)]
    paths: Vec<String>,
    #[serde(default)]
    dry_run: bool,
    #[serde(default)]
    force: bool,
    #[serde(default)]
    cancel_tasks: bool,
}

impl Tool for Restore {
    fn name(&self) -> &str {
        "checkpoint_restore"
    }

    fn title(&self) -> Option<String> {
        Some("Restore a checkpoint".into())
    }

    fn description(&self) -> String {
        "Put the workspace, or `paths` of it, back as it was at a checkpoint: files rewritten \
         with their bytes and modes, deleted files recreated, files created since removed, \
         links as links. A checkpoint is taken first, so the restore itself can be undone. \
         `dry_run` shows what would change. Files changed since by something other than \
         whalebox's calls (the person, an editor) are named, and overwriting them needs \
         `force`; running shell tasks must end first (or `cancel_tasks`)."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The checkpoint id, from checkpoint_list."},
                "paths": {"type": "array", "items": {"type": "string"}, "description": "Only these files or directories (default: the whole workspace)."},
                "dry_run": {"type": "boolean", "description": "Only say what would change."},
                "force": {"type": "boolean", "description": "Overwrite changes made outside whalebox since the checkpoint."},
                "cancel_tasks": {"type": "boolean", "description": "Cancel running shell tasks first instead of refusing."}
            },
            "required": ["id"],
            "additionalProperties": false
        })
    }

    fn run(self: Arc<Self>, input: Value, ctx: CallContext) -> BoxFuture<'static, ToolResult> {
        let env = Arc::clone(&self.0);
        Box::pin(async move {
            let a: RestoreArgs = args(input)?;
            let cp = store(&env)?;
            let mut paths = Vec::new();
            for p in &a.paths {
                paths.push(workspace_path(&env, p)?);
            }
            if paths.iter().any(String::is_empty) {
                paths.clear();
            }
            let live: Vec<_> = env
                .tasks
                .ids()
                .into_iter()
                .filter_map(|id| env.tasks.get(&id))
                .filter(|t| t.is_running())
                .collect();
            if !live.is_empty() && !a.dry_run {
                if !a.cancel_tasks {
                    let names: Vec<String> = live
                        .iter()
                        .map(|t| {
                            format!(
                                "task {} ({})",
                                t.id,
                                super::common::cut_line(&t.command, 60)
                            )
                        })
                        .collect();
                    return Err(ToolError::new(
                        Code::WriteConflict,
                        format!(
                            "{} still running and may still be writing: {}",
                            if live.len() == 1 { "a shell task is" } else { "shell tasks are" },
                            names.join(", ")
                        ),
                        "wait for it (shell_wait), cancel it (shell_cancel), or call again with cancel_tasks: true",
                    )
                    .with_data(json!({"tasks": live.iter().map(|t| t.id.clone()).collect::<Vec<_>>()})));
                }
                for t in &live {
                    t.cancel().await;
                }
            }
            let progress = ctx.progress.clone();
            tokio::task::spawn_blocking(move || {
                let report_progress = move |done: usize, total: usize| {
                    progress.report(
                        done as f64,
                        Some(total as f64),
                        Some("restoring the checkpoint".into()),
                    );
                };
                match cp.restore(&a.id, &paths, a.dry_run, a.force, &report_progress) {
                    Ok(r) => Ok(ToolOutput::new(report::restored(&r), json!(r))),
                    Err(RestoreError::Outside(outside, _)) => Err(ToolError::new(
                        Code::WriteConflict,
                        format!(
                            "nothing was restored: since checkpoint {}, {} changed by something other than whalebox's calls and tasks (the person, an editor, another program): {}",
                            a.id,
                            if outside.len() == 1 { "this path was" } else { "these paths were" },
                            outside.join(", ")
                        ),
                        "check with checkpoint_diff, then call again with force: true to overwrite them, or leave them out with `paths`",
                    )
                    .with_data(json!({"outside": outside}))),
                    Err(RestoreError::Untouched(why)) => Err(restore_failed(
                        &why,
                        "nothing was restored, the workspace is as it was",
                        "free disk space (or repair the store) and call again",
                        false,
                    )),
                    Err(RestoreError::Midway(why)) => Err(restore_failed(
                        &why,
                        "the restore stopped midway",
                        "it is finished the next time checkpoints are used (once the cause is fixed); call checkpoint_list to finish it",
                        true,
                    )),
                    Err(RestoreError::Unrecorded(why)) => Err(restore_failed(
                        &why,
                        &format!("the workspace IS restored to checkpoint {}, but the store could not record it", a.id),
                        "check with checkpoint_diff; do not restore again",
                        true,
                    )),
                    Err(RestoreError::Io(e)) => Err(io(e)),
                }
            })
            .await
            .unwrap_or_else(|e| Err(ToolError::internal(format!("the restore panicked: {e}"))))
        })
    }
}
