//! The `shell` group: shell_run, shell_wait, write_stdin and shell_cancel. Commands run
//! in tasks (see `crate::shell`); a call waits a bounded time and then answers, with
//! the task id when the command is still running.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};

use crate::boundary::{approval_form, approval_of};
use crate::core::{
    Asking, BoxFuture, CallContext, Code, Registry, RegistryError, Tool, ToolError, ToolOutput,
    ToolResult, input_required,
};
use crate::guard::Access;
use crate::session::ShellBoundary;
use crate::shell::diagnose::{Facts, diagnose};
use crate::shell::spawn::{self, Spec};
use crate::shell::task::StartError;
use crate::shell::{Exit, Mode, Task, cap_output, classify, strip_terminal};

use super::common::{args, guarded};
use super::{Env, Session};

pub(crate) fn register(env: &Arc<Env>, registry: &mut Registry) -> Result<(), RegistryError> {
    registry.register("shell", Arc::new(ShellRun { env: env.clone() }))?;
    registry.register("shell", Arc::new(ShellWait { env: env.clone() }))?;
    registry.register("shell", Arc::new(WriteStdin { env: env.clone() }))?;
    registry.register("shell", Arc::new(ShellCancel { env: env.clone() }))?;
    Ok(())
}

const DEFAULT_STDIN_WAIT_MS: u64 = 250;
const MAX_STDIN_WAIT_MS: u64 = 10_000;

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

/// The result of a task at this moment: the output since the last read, status,
/// diagnoses. `notes` are said before the status line.
/// The task's state as a result: output so far, status, diagnoses. A task that ended
/// with execs the boundary refused is an error (`denied_by_policy`, or
/// `approval_needed` when every refusal was an unanswered `ask`), output included.
fn report(env: &Env, task: &Task, notes: &[String]) -> Result<ToolOutput, ToolError> {
    let denials = env
        .started_gate()
        .map(|g| g.server.denials(&task.id))
        .unwrap_or_default();
    let mut st = task.lock();
    let running = st.ended_at.is_none();
    let chunk = st.buffer.read_new(!running);
    let total_bytes = st.buffer.total_bytes();
    let total_lines = st.buffer.total_lines();
    let tail = st.buffer.tail_text(400);
    // Permission errors are looked for further back: a tool may warn early and go on
    // (pip without its cache), or print a long chain after the refused path.
    let denial_tail = st.buffer.tail_text(16 * 1024);
    let silent_for = st.last_output.map(|t| t.elapsed().as_secs_f64());
    let exit = st.exit;
    let elapsed = st
        .ended_at
        .unwrap_or_else(Instant::now)
        .duration_since(task.started);
    drop(st);

    let decode = |b: &[u8]| match task.mode {
        Mode::Pty => strip_terminal(b),
        Mode::Pipe => String::from_utf8_lossy(b).into_owned(),
    };
    let before_gap = if chunk.dropped > 0 {
        chunk.gap_at
    } else {
        chunk.bytes.len()
    };
    let mut output = decode(&chunk.bytes[..before_gap]);
    if chunk.dropped > 0 {
        output.push_str(&format!(
            "\n… {} bytes not kept (the task's buffer keeps the start and the end) …\n",
            chunk.dropped
        ));
        output.push_str(&decode(&chunk.bytes[chunk.gap_at..]));
    }
    // Leave room under the registry's cap for the status and diagnoses.
    let room = env.limits.max_chars().saturating_sub(1500).max(200);
    let (output, cut) = cap_output(&output, room);

    let (code, signal) = match exit {
        Some(Exit::Code(c)) => (Some(c), None),
        Some(Exit::Signal(s)) => (None, Some(s)),
        None => (None, None),
    };
    let shape = classify::profile(&task.command);
    let tail = if task.mode == Mode::Pty {
        strip_terminal(tail.as_bytes())
    } else {
        tail
    };
    let diagnoses = diagnose(&Facts {
        task_id: &task.id,
        running,
        exit_code: code,
        tail: &tail,
        silent_for,
        elapsed: elapsed.as_secs_f64(),
        interactive: &shape.interactive,
        long_running: &shape.long_running,
        is_pty: task.mode == Mode::Pty,
    });
    let mut diagnoses = diagnoses;
    if let Some(sandbox) = &env.sandbox {
        let denial_tail = if task.mode == Mode::Pty {
            strip_terminal(denial_tail.as_bytes())
        } else {
            denial_tail
        };
        for path in crate::shell::diagnose::denied_paths(&denial_tail)
            .iter()
            .rev()
            .take(3)
        {
            diagnoses.push(crate::shell::diagnose::Diagnosis {
                kind: "sandbox",
                message: sandbox.explain(std::path::Path::new(path)),
                next_step: "work inside the workspace (temporary files in $TMPDIR), or ask the user to widen the profile's fences".into(),
            });
        }
    }
    let status = if running {
        "running"
    } else if signal.is_some() {
        "killed"
    } else {
        "exited"
    };
    let mut text = output;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let secs = elapsed.as_secs_f64();
    let lines = format!("{total_lines} lines, {total_bytes} bytes of output");
    let status_line = match (code, signal) {
        _ if running => format!("[still running · task {} · {secs:.1} s · {lines}]", task.id),
        (Some(c), _) => format!("[exit {c} · {secs:.2} s · {lines}]"),
        (_, Some(s)) => format!("[killed by signal {s} · {secs:.2} s · {lines}]"),
        _ => format!("[ended · {secs:.2} s]"),
    };
    text.push_str(&status_line);
    text.push('\n');
    for note in notes {
        text.push_str(&format!("Note: {note}\n"));
    }
    for d in &diagnoses {
        text.push_str(&format!(
            "Diagnosis: {}. Next step: {}.\n",
            d.message, d.next_step
        ));
    }
    if running {
        if diagnoses.is_empty() {
            text.push_str(&format!(
                "Next step: shell_wait {{\"task_id\": \"{}\"}} for more output or the exit, write_stdin to type into it, shell_cancel to stop it.\n",
                task.id
            ));
        }
        if env.session == Session::OneShot {
            text.push_str(
                "Note: `whalebox call` is a session of one call, so this task is stopped when the call returns; \
                 run long commands through `whalebox serve`, or give a longer yield_time_ms.\n",
            );
        }
    }
    let data = json!({
        "task_id": task.id,
        "status": status,
        "exit_code": code,
        "signal": signal,
        "duration_ms": elapsed.as_millis() as u64,
        "mode": task.mode,
        "output_bytes": total_bytes,
        "output_lines": total_lines,
        "output_truncated": cut || chunk.dropped > 0,
        "read_only": classify::read_only(&task.command),
        "interactive": shape.interactive,
        "long_running": shape.long_running,
        "diagnoses": diagnoses,
        "denials": denials.first,
        "denials_total": denials.total,
    });
    if running || denials.total == 0 {
        return Ok(ToolOutput::new(text, data));
    }
    // The task ended and part of it never ran: say so as the result's code, with the
    // rules, so the model does not read the exit status alone.
    let approval_needed = denials.first.iter().all(|d| d.approval_needed);
    let code = if approval_needed {
        Code::ApprovalNeeded
    } else {
        Code::DeniedByPolicy
    };
    text.push_str(&format!(
        "{} exec{} refused by the exec policy:\n",
        denials.total,
        if denials.total == 1 { " was" } else { "s were" }
    ));
    for d in &denials.first {
        let rules: Vec<String> = d
            .rules
            .iter()
            .map(|m| match &m.justification {
                Some(j) => format!("{} ({}: {j})", m.source, m.decision.as_str()),
                None => format!("{} ({})", m.source, m.decision.as_str()),
            })
            .collect();
        text.push_str(&format!(
            "- `{}`: {}{}\n",
            d.argv.join(" "),
            d.reason,
            if rules.is_empty() {
                String::new()
            } else {
                format!(" [rule {}]", rules.join("; "))
            }
        ));
    }
    if denials.total > denials.first.len() {
        text.push_str(&format!(
            "- … and {} more\n",
            denials.total - denials.first.len()
        ));
    }
    let next = if approval_needed {
        "these programs need a person's approval and none could answer here; ask the user to \
         approve them (an MCP client with elicitation, or a rule in the policy file), or do it without them"
    } else {
        "do not retry the same program through another route (the boundary sees every exec); \
         use an allowed program, or ask the user to change the policy file"
    };
    Err(ToolError::new(code, text.trim_end(), next).with_data(data))
}

pub(crate) struct ShellRun {
    env: Arc<Env>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
enum ModeArg {
    #[default]
    Auto,
    Pipe,
    Pty,
}

#[derive(Deserialize)]
struct RunArgs {
    command: String,
    cwd: Option<String>,
    #[serde(default)]
    mode: ModeArg,
    yield_time_ms: Option<u64>,
    #[serde(default)]
    background: bool,
    #[serde(default)]
    env: std::collections::BTreeMap<String, String>,
}

impl Tool for ShellRun {
    fn name(&self) -> &str {
        "shell_run"
    }

    fn changes_workspace(&self, input: &Value) -> Option<String> {
        let command = input["command"].as_str()?;
        if crate::shell::classify::read_only(command) == crate::shell::classify::ReadOnly::Yes {
            return None;
        }
        let line = command.split_whitespace().collect::<Vec<_>>().join(" ");
        Some(super::common::cut_line(&line, 120))
    }

    fn title(&self) -> Option<String> {
        Some("Run shell command".into())
    }

    fn description(&self) -> String {
        let limits = &self.env.limits;
        format!(
            "Run a command line with the shell, in the workspace or `cwd` inside it. Waits up to \
             `yield_time_ms` (default {}, at most {}): a finished command answers with its exit \
             code, duration and output; one still running keeps running in the background and \
             the answer gives its task_id (then shell_wait, write_stdin, shell_cancel). \
             `background: true` answers at once. mode: auto (a terminal for commands that need \
             one: sudo, ssh, editors, pagers, REPLs), pipe, or pty. Output is bounded: long \
             output keeps its start and end. The environment is clean (PAGER=cat, NO_COLOR=1); \
             pass variables in `env`.",
            limits.default_yield_ms(),
            limits.max_yield_ms()
        )
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line, run by the shell with -c."},
                "cwd": {"type": "string", "description": "Directory to run in, inside the workspace (default: the workspace)."},
                "mode": {"type": "string", "enum": ["auto", "pipe", "pty"], "description": "auto (default), pipe, or pty."},
                "yield_time_ms": {"type": "integer", "minimum": 0, "description": "How long to wait for the command before answering with a task id."},
                "background": {"type": "boolean", "description": "Answer at once with the task id."},
                "env": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Extra environment variables."}
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    fn run(self: Arc<Self>, input: Value, ctx: CallContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move { self.start(args(input)?, ctx).await })
    }
}

impl ShellRun {
    async fn start(&self, a: RunArgs, ctx: CallContext) -> ToolResult {
        let env = &self.env;
        let cfg = &env.profile.shell;
        if a.command.trim().is_empty() {
            return Err(ToolError::invalid_input(
                "the command is empty",
                "give the command line to run, e.g. {\"command\": \"ls -la\"}",
            ));
        }
        if a.command.contains('\0') {
            return Err(ToolError::invalid_input(
                "the command contains a NUL byte",
                "send the command as plain text",
            ));
        }
        for (k, v) in &a.env {
            if k.is_empty() || k.contains('=') || k.contains('\0') || v.contains('\0') {
                return Err(ToolError::invalid_input(
                    format!(
                        "env: {k:?} is not a valid variable (names have no `=` or NUL, values no NUL)"
                    ),
                    "use names like FOO_BAR and plain values",
                ));
            }
        }
        let cwd = match &a.cwd {
            Some(c) => {
                let allowed = guarded(env, c, Access::Write)?;
                if !allowed.abs.is_dir() {
                    return Err(ToolError::new(
                        Code::NotFound,
                        format!("cwd {} is not a directory", allowed.shown),
                        "give an existing directory inside the workspace, or leave cwd out",
                    ));
                }
                allowed.abs
            }
            None => env.guard.workspace().to_path_buf(),
        };
        let shape = classify::profile(&a.command);
        let mode = match a.mode {
            ModeArg::Pipe => Mode::Pipe,
            ModeArg::Pty => Mode::Pty,
            ModeArg::Auto if shape.needs_terminal.is_some() => Mode::Pty,
            ModeArg::Auto => Mode::Pipe,
        };
        let plain_shell = || {
            spawn::find_shell(cfg.program.as_deref()).ok_or_else(|| {
                ToolError::new(
                    Code::NotFound,
                    format!(
                        "no shell found ({})",
                        cfg.program.as_deref().unwrap_or("zsh, bash or sh in PATH")
                    ),
                    "install zsh or bash, or set [shell] program in the profile",
                )
            })
        };
        let mut notes = Vec::new();
        let mut gate_env: Vec<(String, String)> = Vec::new();
        let mut gated_zsh = None;
        let mut exec_gate = None;
        let boundary = match env.shell_boundary() {
            Ok(ShellBoundary::Gated {
                zsh,
                vars,
                kernel,
                status,
                note,
            }) => {
                gate_env = vars;
                gated_zsh = zsh;
                exec_gate = kernel;
                notes.extend(note);
                status
            }
            Ok(ShellBoundary::Ungated { why, best_effort }) => {
                if best_effort {
                    notes.push(format!(
                        "running ungated (exec_boundary = best-effort): {why}"
                    ));
                }
                json!({"gated": false, "kernel": false, "reason": why})
            }
            Err(why) => {
                return Err(ToolError::new(
                    Code::Unsupported,
                    format!("the exec boundary is required, but {why}"),
                    "see `whalebox doctor` for what is missing and what to do; or set exec_boundary = \"best-effort\"",
                ));
            }
        };
        let shell = match gated_zsh {
            Some(zsh) => zsh,
            None => plain_shell()?,
        };
        let limits = &env.limits;
        let requested = a.yield_time_ms.unwrap_or(limits.default_yield_ms());
        let yield_ms = requested.min(limits.max_yield_ms());
        if requested > yield_ms {
            notes.push(format!(
                "yield_time_ms {requested} was clamped to {yield_ms} (this session's cap, under the client's tool timeout); the command goes on: shell_wait for more"
            ));
        }
        if a.mode == ModeArg::Auto
            && let Some(why) = &shape.needs_terminal
        {
            notes.push(format!("running in a PTY: {why}"));
        }
        let profile_env: Vec<(String, String)> = cfg
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let call_env: Vec<(String, String)> = a.env.into_iter().collect();
        let network = env.task_network(&a.command)?;
        let spec = Spec {
            mode,
            argv: spawn::shell_argv(&shell, &a.command, cfg.rc_files),
            cwd,
            env: {
                // The presets' variables (CARGO_HOME …) as well: the sandbox granted the
                // directories they name, so the tools must look there.
                let pass: Vec<String> = cfg
                    .pass_env
                    .iter()
                    .cloned()
                    .chain(
                        env.profile
                            .landlock
                            .preset_env
                            .iter()
                            .map(|v| v.to_string()),
                    )
                    .collect();
                let mut vars = spawn::child_env(mode, &shell, &pass, &profile_env, &call_env);
                // The server's private temporary directory (Landlock leaves /tmp closed),
                // unless the profile or the call chose one.
                if !vars.iter().any(|(k, _)| k == "TMPDIR") {
                    vars.push(("TMPDIR".into(), env.private.tmp.display().to_string()));
                }
                // The boundary's variables come last: nothing the call sets can change them.
                vars.retain(|(k, _)| !k.starts_with("WHALEBOX_GATE"));
                vars.extend(gate_env);
                if let Some((_, net)) = &network {
                    vars.retain(|(k, _)| !net.env.iter().any(|(n, _)| n == k));
                    vars.extend(net.env.iter().cloned());
                }
                vars
            },
            rows: cfg.pty_rows,
            cols: cfg.pty_cols,
            exec_gate,
            sandbox: env.task_sandbox(network.as_ref().map(|(_, n)| n))?,
            netns: network.as_ref().and_then(|(_, n)| n.netns.clone()),
            socket_filter: network
                .as_ref()
                .is_some_and(|(_, n)| n.connect_port.is_some()),
        };
        // The retry that brings a person's answer to an approval (2026-07-28): the task
        // is the one that asked; nothing new starts.
        if let Some(resumed) = resumed_approval(env, &ctx) {
            let (task, note) = resumed?;
            notes.extend(note);
            wait_for(env, &task, Duration::from_millis(yield_ms), &ctx).await?;
            return report_with_network(env, &task, &notes).await;
        }
        let started = env.tasks.start(&a.command, spec);
        if let Some((fence, net)) = &network {
            fence.started(
                net.token(),
                started.as_ref().ok().map(|t| (t.id.as_str(), t.pid)),
            );
        }
        let task = match started {
            Ok(t) => t,
            Err(StartError::Full { live }) => {
                return Err(ToolError::new(
                    Code::TaskLimit,
                    format!("{live} tasks are running, the profile's limit ([shell] max_tasks)"),
                    "wait for one with shell_wait, or stop one with shell_cancel, then run again",
                )
                .with_data(json!({"tasks": env.tasks.ids()})));
            }
            Err(StartError::Io(e)) => {
                return Err(ToolError::internal(format!(
                    "cannot start the command: {e}"
                )));
            }
        };
        if !a.background {
            wait_for(env, &task, Duration::from_millis(yield_ms), &ctx).await?;
        }
        let sandbox = json!(env.sandbox_status());
        let with_boundary = |data: &mut serde_json::Value| {
            if let Some(obj) = data.as_object_mut() {
                obj.insert("exec_boundary".into(), boundary.clone());
                obj.insert("landlock".into(), sandbox.clone());
            }
        };
        report_with_network(env, &task, &notes)
            .await
            .map(|mut out| {
                with_boundary(&mut out.data);
                out
            })
            .map_err(|mut err| {
                with_boundary(&mut err.data);
                err
            })
    }
}

/// The network part of a task's result: `data.network`, and a note per refused host.
/// A task that ended has its proxy door closed once its last connections are recorded.
async fn network_report(env: &Env, task: &Task) -> Option<(Value, Vec<String>)> {
    let fence = env.network().ok().flatten()?;
    if !task.is_running() {
        fence.ended(&task.id, Duration::from_millis(500)).await;
    }
    let (data, mut lines) = fence.report(&task.id);
    let tail = task.lock().buffer.tail_text(4096);
    lines.extend(fence.explain_direct(&tail));
    Some((data, lines))
}

/// `report`, with the network's part added.
async fn report_with_network(
    env: &Env,
    task: &Task,
    notes: &[String],
) -> Result<ToolOutput, ToolError> {
    let network = network_report(env, task).await;
    let mut notes = notes.to_vec();
    if let Some((_, lines)) = &network {
        notes.extend(lines.iter().cloned());
    }
    let add = |data: &mut Value| {
        if let (Some(obj), Some((net, _))) = (data.as_object_mut(), &network) {
            obj.insert("network".into(), net.clone());
        }
    };
    report(env, task, &notes)
        .map(|mut out| {
            add(&mut out.data);
            out
        })
        .map_err(|mut err| {
            add(&mut err.data);
            err
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

pub(crate) struct ShellWait {
    env: Arc<Env>,
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
    env: Arc<Env>,
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

pub(crate) struct ShellCancel {
    env: Arc<Env>,
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
