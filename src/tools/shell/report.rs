//! A task's state as a tool result: its output since the last read, status line,
//! diagnoses, refused execs, and the network's part.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::core::{Code, ToolError, ToolOutput};
use crate::shell::diagnose::{Facts, diagnose};
use crate::shell::{Exit, Mode, Task, cap_output, classify, strip_terminal};

use crate::tools::{Env, Session};

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
    let events = task.limits.as_ref().and_then(|l| l.events(&st));
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
    let limits = task.limits.as_ref().map(|applied| {
        crate::shell::limits::report(
            applied,
            events,
            &crate::shell::limits::Ending {
                task_id: &task.id,
                exit_code: code,
                signal,
                tail: &denial_tail,
            },
        )
    });
    if let Some((_, found)) = &limits {
        diagnoses.extend(found.iter().cloned());
    }
    let denial_tail = if task.mode == Mode::Pty {
        strip_terminal(denial_tail.as_bytes())
    } else {
        denial_tail
    };
    if let Some(sandbox) = &env.sandbox {
        for path in crate::shell::diagnose::denied_paths(&denial_tail)
            .iter()
            .rev()
            // /proc is read-only by design (a debugger's /proc/PID/mem falls back to
            // ptrace): "write under the workspace" would not help.
            .filter(|p| !p.starts_with("/proc/"))
            .take(3)
        {
            diagnoses.push(crate::shell::diagnose::Diagnosis {
                kind: "sandbox",
                message: sandbox.explain(std::path::Path::new(path)),
                next_step: "work inside the workspace (temporary files in $TMPDIR), or ask the user to widen the profile's fences".into(),
            });
        }
    }
    if env.sandbox.is_some() && crate::shell::diagnose::signal_refused(&denial_tail) {
        let others: Vec<String> = env
            .tasks
            .running_ids()
            .into_iter()
            .filter(|id| *id != task.id)
            .collect();
        diagnoses.push(crate::shell::diagnose::Diagnosis {
            kind: "signal",
            message: "a process outside this command cannot be signalled from it: each \
                      shell_run is fenced apart (Landlock's signal scope), so a server another \
                      call started is out of this one's reach"
                .into(),
            next_step: if others.is_empty() {
                "stop a command another call started with shell_cancel on its task id".into()
            } else {
                format!(
                    "stop it with shell_cancel on its task id (running in this session: {})",
                    others.join(", ")
                )
            },
        });
    }
    if !env.profile.shell.debuggers && crate::shell::diagnose::ptrace_refused(&denial_tail) {
        diagnoses.push(crate::shell::diagnose::Diagnosis {
            kind: "debugger",
            message: "tracing is refused inside a task (ptrace: EPERM): the kernel exec gate \
                      verifies every exec by attaching to it, and a process has one tracer"
                .into(),
            next_step: format!(
                "to run strace, gdb or ltrace here, set [shell] debuggers = true in {} (the trade: \
                 an exec by a traced process is decided but not verified after); else debug outside \
                 the sandbox",
                env.profile.source_name()
            ),
        });
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
        "limits": limits.map(|(data, _)| data),
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
pub(super) async fn report_with_network(
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
    let git = git_report(env).await;
    let said = |text: &mut String, data: &mut Value| {
        if let Some(r) = &git {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!("Note: {}\n", r.line()));
            if let Some(obj) = data.as_object_mut() {
                obj.insert("git_undone".into(), json!(r));
            }
        }
    };
    report(env, task, &notes)
        .map(|mut out| {
            add(&mut out.data);
            said(&mut out.text, &mut out.data);
            out
        })
        .map_err(|mut err| {
            add(&mut err.data);
            said(&mut err.message, &mut err.data);
            err
        })
}

/// What the git guard undid since the model was last told (checked now: the command
/// may have just set it).
async fn git_report(env: &Env) -> Option<crate::gitguard::Report> {
    let guard = env.git_guard.clone()?;
    let report = tokio::task::spawn_blocking(move || {
        guard.check();
        guard.take()
    })
    .await
    .ok()?;
    (!report.is_empty()).then_some(report)
}
