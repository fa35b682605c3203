//! Approvals on the terminal, for `whalebox run` and `whalebox shell`: the question goes
//! to `/dev/tty`, never to the command's stdin or stdout.
//!
//! The command being judged shares the terminal, and a process on it may push bytes
//! into the terminal's input (TIOCSTI, still allowed where `dev.tty.legacy_tiocsti = 1`
//! or for root). So the answer must carry a code printed with the question: output on
//! a terminal cannot be read back by the processes writing to it, so they cannot know
//! it, and a wrong answer is a denial. Pending input is flushed before the question.

use std::io::{BufRead, Read, Write};
use std::os::fd::AsFd;
use std::sync::{Arc, Mutex};

use nix::sys::signal::{SigHandler, Signal, signal};
use nix::sys::termios::{self, LocalFlags, SetArg};
use nix::unistd::{getpgrp, tcgetpgrp, tcsetpgrp};

use super::{Approval, ApprovalRequest, Approver};

const WHO: &str = "the user (terminal)";

/// An approver that asks on the controlling terminal, or None when there is none.
pub fn terminal_approver() -> Option<Approver> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .ok()?;
    // One question at a time, whatever the number of parallel asks.
    let turn = Arc::new(Mutex::new(()));
    Some(Arc::new(move |req: &ApprovalRequest| {
        let _one = turn.lock().ok()?;
        ask(req).ok()
    }))
}

fn code() -> String {
    let mut b = [0u8; 2];
    let _ = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b));
    format!("{:04}", u16::from_le_bytes(b) % 10_000)
}

fn ask(req: &ApprovalRequest) -> std::io::Result<(Approval, &'static str)> {
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")?;
    // The command being judged is the terminal's foreground job: take the terminal for
    // the question and give it back after (SIGTTOU would stop us while in background).
    // SAFETY: ignoring a job-control signal; no handler runs.
    let _ = unsafe { signal(Signal::SIGTTOU, SigHandler::SigIgn) };
    let foreground = tcgetpgrp(tty.as_fd()).ok();
    let _ = tcsetpgrp(tty.as_fd(), getpgrp());
    let saved = termios::tcgetattr(tty.as_fd()).ok();
    if let Some(t) = &saved {
        let mut cooked = t.clone();
        cooked.local_flags |= LocalFlags::ICANON | LocalFlags::ECHO;
        let _ = termios::tcsetattr(tty.as_fd(), SetArg::TCSANOW, &cooked);
    }
    let _ = termios::tcflush(tty.as_fd(), termios::FlushArg::TCIFLUSH);
    let code = code();
    let answer = (|| -> std::io::Result<String> {
        let mut out = &tty;
        write!(
            out,
            "\r\nwhalebox: the policy asks before running: {}\r\n  ({})\r\n  \
             allow once: o{code}   allow for this session: s{code}   deny: anything else\r\n> ",
            req.command, req.reason
        )?;
        out.flush()?;
        let mut line = String::new();
        std::io::BufReader::new(&tty).read_line(&mut line)?;
        Ok(line.trim().to_string())
    })();
    if let Some(t) = &saved {
        let _ = termios::tcsetattr(tty.as_fd(), SetArg::TCSANOW, t);
    }
    if let Some(pg) = foreground {
        let _ = tcsetpgrp(tty.as_fd(), pg);
    }
    let answer = answer?;
    Ok(if answer == format!("o{code}") {
        (Approval::Once, WHO)
    } else if answer == format!("s{code}") {
        (Approval::Session, WHO)
    } else {
        (Approval::Deny, WHO)
    })
}

/// Puts request_user_input's forms to the person on the controlling terminal (for
/// `whalebox call`), or None when there is none. Each question in turn: its options
/// numbered (a number picks one; several, comma-separated, for a multi-select; any
/// other text is an answer in the person's words), an empty line skips it, `:decline`
/// declines the whole form, end of input dismisses it.
pub fn terminal_asker() -> Option<crate::core::Asker> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .ok()?;
    Some(Arc::new(
        |form: crate::core::Form, timeout: std::time::Duration| {
            Box::pin(async move {
                let asking = tokio::task::spawn_blocking(move || ask_form(&form));
                match tokio::time::timeout(timeout, asking).await {
                    Ok(Ok(Ok(answer))) => answer,
                    Ok(_) => crate::core::Answer::Cancel,
                    Err(_) => crate::core::Answer::Timeout,
                }
            })
        },
    ))
}

fn ask_form(form: &crate::core::Form) -> std::io::Result<crate::core::Answer> {
    use crate::core::Answer;
    use serde_json::{Value, json};
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")?;
    let mut out = &tty;
    let mut lines = std::io::BufReader::new(&tty).lines();
    writeln!(out, "\nwhalebox: {}", form.message)?;
    let empty = serde_json::Map::new();
    let props = form.schema["properties"].as_object().unwrap_or(&empty);
    let mut content = serde_json::Map::new();
    for (id, prop) in props {
        if id.ends_with("_other") && props.contains_key(id.trim_end_matches("_other")) {
            continue;
        }
        // Titled choices (`oneOf` / `items.anyOf` of {const, title}) or a plain `enum`.
        let titled = prop["oneOf"]
            .as_array()
            .or_else(|| prop["items"]["anyOf"].as_array());
        let (choices, titles): (Vec<&str>, Vec<&str>) = match (titled, prop["enum"].as_array()) {
            (Some(c), _) => c
                .iter()
                .filter_map(|o| Some((o["const"].as_str()?, o["title"].as_str()?)))
                .unzip(),
            (None, Some(e)) => e.iter().filter_map(|v| v.as_str().map(|v| (v, v))).unzip(),
            _ => (Vec::new(), Vec::new()),
        };
        let multi = prop["type"] == "array";
        writeln!(out, "\n{}", prop["description"].as_str().unwrap_or(id))?;
        for (i, t) in titles.iter().enumerate() {
            writeln!(out, "  {}) {t}", i + 1)?;
        }
        let how = match (choices.is_empty(), multi) {
            (true, _) => "your answer",
            (false, false) => "a number, or your own answer",
            (false, true) => "numbers separated by commas, or your own answer",
        };
        write!(out, "({how}; empty: skip; :decline: decline all)\n> ")?;
        out.flush()?;
        let Some(line) = lines.next().transpose()? else {
            return Ok(Answer::Cancel);
        };
        let line = line.trim();
        if line == ":decline" {
            return Ok(Answer::Decline);
        }
        if line.is_empty() {
            continue;
        }
        let picked: Option<Vec<&str>> = line
            .split(',')
            .map(|n| {
                n.trim()
                    .parse::<usize>()
                    .ok()
                    .and_then(|n| choices.get(n.wrapping_sub(1)).copied())
            })
            .collect();
        match picked {
            Some(p) if !choices.is_empty() && (multi || p.len() == 1) => {
                let v = if multi { json!(p) } else { json!(p[0]) };
                content.insert(id.clone(), v);
            }
            _ if choices.is_empty() => {
                content.insert(id.clone(), Value::String(line.to_string()));
            }
            _ => {
                content.insert(format!("{id}_other"), Value::String(line.to_string()));
            }
        }
    }
    Ok(Answer::Accept(content))
}
