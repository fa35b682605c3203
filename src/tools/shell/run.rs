//! shell_run: check the call, choose the shell, the mode and the boundary, start the
//! task and wait a bounded time for it.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::core::{BoxFuture, CallContext, Code, Tool, ToolError, ToolResult};
use crate::guard::Access;
use crate::session::ShellBoundary;
use crate::shell::spawn::{self, Spec};
use crate::shell::task::StartError;
use crate::shell::{Mode, classify};

use super::report::report_with_network;
use super::{resumed_approval, wait_for};
use crate::tools::Env;
use crate::tools::common::{args, guarded};

pub(crate) struct ShellRun {
    pub(super) env: Arc<Env>,
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
        Some(crate::tools::common::cut_line(&line, 120))
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
        if let Some((_, net)) = &network {
            notes.extend(net.notes.iter().cloned());
        }
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
            join: env.task_join(),
            socket_filter: network.as_ref().is_some_and(|(_, n)| n.landlock_fence),
            user_namespaces: env.profile.shell.user_namespaces.allowed(),
            limits: Some(spawn::TaskLimits {
                limits: cfg.task_limits,
                cgroup: cfg.limits.cgroup == crate::guard::limits::CgroupMode::Auto,
            }),
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
                return Err(ToolError::io("cannot start the command", &e, "nothing ran"));
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
