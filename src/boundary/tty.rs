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
