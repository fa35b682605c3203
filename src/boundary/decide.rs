//! Deciding one exec request: the policy's verdict on the program (or on a script's
//! interpreter, when stricter), the session's earlier answers, and `ask` put to the
//! approver or settled by `on_ask`; the record for the audit log.

use serde_json::json;

use super::approvals::{Approval, ApprovalRequest, OnAsk, remember};
use super::{DENIALS_KEPT, Denial, Request, Shared, nested};
use crate::policy::{Decision, Policy};

/// What a question is decided on: the program, or a script's interpreter when that is
/// the stricter of the two (both verdicts' rules are kept).
pub(super) fn subject<'a>(
    req: &'a Request,
    policy: &Policy,
) -> (&'a str, &'a [String], crate::policy::Verdict) {
    let nested = nested(req.via.as_deref(), req.chain.len());
    let mut verdict = policy.evaluate_exec(&req.program, &req.argv, nested);
    if let Some(real) = &req.real {
        // A link, a copy's descriptor or a memfd: the file itself is judged too, by the
        // rules that name it (a link to a denied program is refused) and, with no name
        // at all, by the anonymous-file rule. Not by the policy's default: the system's
        // own links (`python3` -> `python3.11`, `cc` -> `x86_64-linux-gnu-gcc-12`) are
        // named by what people call them.
        let by_file = policy.evaluate_exec(real, &req.argv, nested);
        if !by_file.matched.is_empty() || crate::policy::program::is_anonymous(real) {
            verdict = stricter(verdict, by_file, || format!("{} is {real}", req.program));
        }
    }
    if let Some(name) = &req.copy_of {
        // A copy of a program the policy names is that program: judged as it, with
        // the same argv (`cp /usr/bin/touch t && ./t x` is `touch x`).
        let as_copy = policy.evaluate_exec(name, &req.argv, nested);
        verdict = stricter(verdict, as_copy, || {
            format!("{} is a copy of {name}", req.program)
        });
    }
    let Some(interp) = &req.interpreter else {
        return (&req.program, &req.argv, verdict);
    };
    let other = policy.evaluate_exec(&interp.program, &interp.argv, nested);
    let mut matched = verdict.matched.clone();
    matched.extend(other.matched.iter().cloned());
    if other.decision > verdict.decision {
        let reason = format!("interpreter of {}: {}", req.program, other.reason);
        (
            &interp.program,
            &interp.argv,
            crate::policy::Verdict {
                decision: other.decision,
                reason,
                matched,
            },
        )
    } else {
        (
            &req.program,
            &req.argv,
            crate::policy::Verdict { matched, ..verdict },
        )
    }
}

/// `other` when it is the stricter verdict (its reason prefixed by `why`), else `verdict`;
/// either way with both verdicts' rules.
fn stricter(
    verdict: crate::policy::Verdict,
    other: crate::policy::Verdict,
    why: impl FnOnce() -> String,
) -> crate::policy::Verdict {
    if other.decision <= verdict.decision {
        return verdict;
    }
    let mut matched = verdict.matched;
    matched.extend(other.matched);
    crate::policy::Verdict {
        decision: other.decision,
        reason: format!("{}: {}", why(), other.reason),
        matched,
    }
}

/// The session prefix an approval covers: the program's basename, plus its first
/// argument when the policy tells that program's subcommands apart (so allowing
/// `git fetch` for the session does not allow `git push`).
fn prefix(program: &str, argv: &[String], policy: &Policy) -> Vec<String> {
    let base = program.rsplit('/').next().unwrap_or(program).to_string();
    let by_subcommand = policy
        .rules
        .iter()
        .any(|r| r.pattern.len() > 1 && r.pattern[0].contains(&base));
    std::iter::once(base.clone())
        .chain(argv.get(1).cloned().filter(|_| by_subcommand))
        .collect()
}

/// The refused command as the last link of a chain: its basename and arguments.
fn command_line(program: &str, argv: &[String]) -> String {
    let base = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
    let mut words: Vec<String> = argv.to_vec();
    match words.first_mut() {
        Some(first) if !first.is_empty() => *first = base(first),
        Some(first) => *first = base(program),
        None => words.push(base(program)),
    }
    let line = words.join(" ");
    match line.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

pub(super) fn decide(req: &Request, shared: &Shared) -> (Decision, String, serde_json::Value) {
    let (program, argv, verdict) = subject(req, &shared.policy);
    // The connecting process first: its pid is the kernel's, in our namespace; the pid
    // a gate writes is in the session's PID namespace, and names another process here.
    let task_id = (shared.task_of)(req.peer).or_else(|| (shared.task_of)(req.pid));
    let mut approval_needed = false;
    let (decision, reason, approved_by) = match verdict.decision {
        Decision::Ask => {
            let key = prefix(program, argv, &shared.policy);
            let remembered = shared
                .allowed
                .lock()
                .map(|a| a.contains(&key))
                .unwrap_or(false);
            let approver = shared.approver.get();
            let asked = if remembered {
                Some((Approval::Session, "session approval"))
            } else {
                approver.and_then(|ask| {
                    ask(&ApprovalRequest {
                        command: if req.chain.is_empty() {
                            argv.join(" ")
                        } else {
                            format!("{} (run by {})", argv.join(" "), req.chain.join(" → "))
                        },
                        reason: verdict.reason.clone(),
                        task_id: task_id.clone(),
                    })
                })
            };
            match asked {
                Some((Approval::Once, who)) => (
                    Decision::Allow,
                    format!("approved once by {who}"),
                    Some(who),
                ),
                Some((Approval::Session, who)) => {
                    if let Ok(mut a) = shared.allowed.lock()
                        && !a.contains(&key)
                    {
                        a.push(key.clone());
                        // Under the lock, so appends from parallel approvals do not interleave.
                        if let Some(file) = &shared.approvals_file
                            && let Err(e) = remember(file, &key, &verdict, who, argv)
                        {
                            tracing::warn!(
                                "cannot remember the approval in {}: {e}",
                                file.display()
                            );
                        }
                    }
                    (
                        Decision::Allow,
                        format!("approved for this session ({}) by {who}", key.join(" ")),
                        Some(who),
                    )
                }
                Some((Approval::Deny, who)) => (
                    Decision::Deny,
                    format!("declined by {who}: {}", verdict.reason),
                    None,
                ),
                None => match shared.on_ask {
                    OnAsk::Allow => (
                        Decision::Allow,
                        format!(
                            "{} (approval needed; allowed by on_ask = \"allow\")",
                            verdict.reason
                        ),
                        Some("on_ask"),
                    ),
                    OnAsk::Deny => {
                        approval_needed = true;
                        (
                            Decision::Deny,
                            format!(
                                "approval needed and no one can answer here (on_ask = \"deny\"): {}",
                                verdict.reason
                            ),
                            None,
                        )
                    }
                },
            }
        }
        d => (d, verdict.reason.clone(), None),
    };
    let mut chain = req.chain.clone();
    chain.push(command_line(program, argv));
    let killed = decision != Decision::Allow && req.stage.as_deref() == Some("loaded");
    if decision != Decision::Allow
        && let Some(id) = &task_id
        && let Ok(mut all) = shared.denials.lock()
    {
        let entry = all.entry(id.clone()).or_default();
        entry.total += 1;
        if entry.first.len() < DENIALS_KEPT {
            entry.first.push(Denial {
                program: program.to_string(),
                argv: argv.to_vec(),
                approval_needed,
                reason: reason.clone(),
                rules: verdict.matched.clone(),
                chain: chain.clone(),
                killed,
            });
        }
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let record = json!({
        "time": now,
        "task_id": task_id,
        "program": program,
        "argv": argv,
        "cwd": req.cwd,
        "pid": req.pid,
        "chain": chain,
        "via": req.via.as_deref().unwrap_or("zsh"),
        "stage": req.stage,
        "interpreter": req.interpreter,
        "killed": killed,
        "decision": decision.as_str(),
        "policy_decision": verdict.decision.as_str(),
        "matched": verdict.matched,
        "reason": reason,
        "approved_by": approved_by,
    });
    (decision, reason, record)
}
