//! What both methods of the kernel gate share once an exec is read: the plan of the
//! exec (the file it names, a `#!` interpreter, what the loaded image must be), the
//! question for the decision server, and the [`Decider`], which settles `allow` verdicts
//! locally with the server's own policy (sent once per task) and only records them, and
//! puts `ask` and `deny` to the server with the caller held until the answer.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::unistd::Pid;
use serde_json::{Value, json};

use super::identity::Identities;
use super::link::{Server, frame};
use super::tracee::{self, ExecCall, FileId, Loaded};
use whalebox_policy::{Decision, Policy};

/// How often batched audit records go to the server.
pub const RECORDS_EVERY_MS: u16 = 20;

/// What an exec was allowed as, to compare with what the kernel loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expect {
    pub file: FileId,
    pub argv: Vec<Vec<u8>>,
    /// For a `#!` script: the interpreter's identity and the argv the kernel builds.
    pub script: Option<(Option<FileId>, Vec<Vec<u8>>)>,
    /// The program's name in chains.
    pub label: String,
}

impl Expect {
    pub fn matches(&self, loaded: &Loaded) -> bool {
        match &self.script {
            None => loaded.id == Some(self.file) && loaded.argv == self.argv,
            Some((interp, argv)) => {
                interp.is_some() && loaded.id == *interp && loaded.argv == *argv
            }
        }
    }
}

/// An exec call worked out: what it would load and how to ask about it.
pub struct Plan {
    pub expect: Expect,
    /// The program as the question names it.
    pub shown: String,
    /// A `#!` script's interpreter: as shown, and the argv the kernel gives it.
    interpreter: Option<(String, Vec<Vec<u8>>)>,
    argv: Vec<Vec<u8>>,
    /// The file's real path, when it differs from the name shown (decided too).
    real: Option<String>,
    /// The known program the file is a copy of (decided too).
    copy_of: Option<String>,
}

/// Work out `call` made by `pid`. Err: the errno the call fails with on its own (the
/// file is missing or not an executable regular file), as far as the gate can tell.
pub fn plan(pid: Pid, call: &ExecCall, known: &Identities) -> Result<Plan, i32> {
    let target = tracee::target(&call.reachable(pid), known)?;
    let shown = call.shown(pid);
    // A copy of a known program, run itself or by the dynamic loader (`ld.so ./t`).
    let copy_of = target.copy_of.clone().or_else(|| {
        let args = tracee::strings(&call.argv);
        if !whalebox_policy::program::is_loader(&basename(&shown)) {
            return None;
        }
        let (inner, _) = whalebox_policy::program::loader_inner(args.get(1..)?)?;
        let named = ExecCall {
            dirfd: None,
            path: inner.into_bytes(),
            fd_itself: false,
            argv: Vec::new(),
        };
        tracee::target(&named.reachable(pid), known).ok()?.copy_of
    });
    let script = target.shebang.as_ref().map(|(interp, arg)| {
        let mut argv = vec![interp.clone()];
        argv.extend(arg.iter().cloned());
        argv.push(call.script_name());
        argv.extend(call.argv.iter().skip(1).cloned());
        let named = ExecCall {
            dirfd: None,
            path: interp.clone(),
            fd_itself: false,
            argv: Vec::new(),
        };
        let id = tracee::target(&named.reachable(pid), known)
            .ok()
            .map(|t| t.id);
        (named.shown(pid), id, argv)
    });
    Ok(Plan {
        expect: Expect {
            file: target.id,
            argv: call.argv.clone(),
            script: script.as_ref().map(|(_, id, argv)| (*id, argv.clone())),
            label: basename(&shown),
        },
        interpreter: script.map(|(shown, _, argv)| (shown, argv)),
        argv: call.argv.clone(),
        // A script's file is what its interpreter reads, like `python3 x.py`: the
        // interpreter's command is what runs and is decided (`npm` is a link to
        // `npm-cli.js`, run by node). A file with no name is judged whatever it holds.
        real: target.real.filter(|real| {
            *real != shown
                && (target.shebang.is_none() || whalebox_policy::program::is_anonymous(real))
        }),
        copy_of,
        shown,
    })
}

impl Plan {
    /// The question about this exec, made by `pid` below `chain`.
    pub fn request(&self, pid: Pid, chain: Vec<String>) -> Value {
        let mut request = request(pid, &self.shown, &self.argv, "call", chain);
        if let Some(real) = &self.real {
            request["real"] = json!(real);
        }
        if let Some(copy_of) = &self.copy_of {
            request["copy_of"] = json!(copy_of);
        }
        if let Some((shown, argv)) = &self.interpreter {
            request["interpreter"] = json!({
                "program": shown,
                "argv": tracee::strings(argv),
            });
        }
        request
    }
}

/// The question for the server (and the audit record) about `pid` running `program`.
pub fn request(
    pid: Pid,
    program: &str,
    argv: &[Vec<u8>],
    stage: &str,
    chain: Vec<String>,
) -> Value {
    json!({
        "program": program,
        "argv": tracee::strings(argv),
        "cwd": tracee::cwd(pid),
        "pid": pid.as_raw(),
        "chain": chain,
        "via": "kernel",
        "stage": stage,
    })
}

pub fn basename(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_string()
}

/// The gate's first words to the server: its policy, please.
pub fn hello() -> Value {
    json!({"id": 0, "want": "policy"})
}

/// Settles what the policy allows, asks the server the rest; `W` is what a held caller
/// needs to be answered (its pid, what it was allowed as).
pub struct Decider<W> {
    /// The decision server's socket, connected at the first exec that needs it (a task
    /// whose only exec is its first program never connects: no connection, no policy).
    socket: Option<PathBuf>,
    /// The server's pid, checked against whoever answers on the socket.
    server_pid: Option<i32>,
    server: Option<Server>,
    /// A connection made (and checked, and the policy asked for) before the gate was,
    /// used at the first exec that needs it (see [`super::connect_ahead`]).
    ahead: Option<std::os::unix::net::UnixStream>,
    timeout: Duration,
    /// The server's own policy, once it sent it.
    policy: Option<Policy>,
    waiting: HashMap<u64, (W, Instant)>,
    next_id: u64,
    /// Records of execs allowed here, not sent yet: they go in batches (one wake-up of
    /// the server for many execs), and a sync before the task ends makes sure the
    /// audit log is complete, and in order, when whalebox reports the task.
    records: Vec<u8>,
    records_since: Option<Instant>,
    /// Whether anything for the audit log went to the server (else there is nothing to
    /// wait for at the end).
    sent: bool,
    /// The programs known by content (see `identity`).
    known: Identities,
}

/// A held caller's answer.
pub struct Answer<W> {
    pub waiting: W,
    pub allowed: bool,
    pub reason: String,
}

impl<W> Decider<W> {
    pub fn new(
        socket: Option<PathBuf>,
        server_pid: Option<i32>,
        timeout: Duration,
        known: Identities,
    ) -> Decider<W> {
        Decider {
            socket,
            server_pid,
            server: None,
            ahead: None,
            timeout,
            policy: None,
            waiting: HashMap::new(),
            next_id: 0,
            records: Vec::new(),
            records_since: None,
            sent: false,
            known,
        }
    }

    /// Use `stream`, made by [`super::connect_ahead`], instead of connecting.
    pub fn connected_ahead(mut self, stream: Option<std::os::unix::net::UnixStream>) -> Self {
        self.ahead = stream;
        self
    }

    /// The programs known by content, for [`plan`].
    pub fn known(&self) -> &Identities {
        &self.known
    }

    /// The connection, made (and the server's policy asked for) on first use.
    fn server(&mut self) -> &mut Server {
        self.server.get_or_insert_with(|| match self.ahead.take() {
            Some(stream) => Server::from_stream(stream),
            None => {
                let mut server = Server::connect(self.socket.as_deref(), self.server_pid);
                let _ = server.send(&hello());
                server
            }
        })
    }

    pub fn server_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.server.as_ref().and_then(Server::fd)
    }

    /// How long the event loop may sleep before [`Decider::tick`] has work.
    pub fn poll_timeout(&self) -> u16 {
        if !self.records.is_empty() {
            RECORDS_EVERY_MS
        } else if self.waiting.is_empty() {
            1000
        } else {
            200
        }
    }

    /// Whether the policy allows `request` outright (then it is only recorded).
    fn settles(&self, request: &Value) -> bool {
        let Some(policy) = &self.policy else {
            return false;
        };
        let nested = super::nested(
            request["via"].as_str(),
            request["chain"].as_array().map_or(0, Vec::len),
        );
        let allows = |v: &Value| {
            let program = v["program"].as_str().unwrap_or_default();
            policy.evaluate_exec(program, &argv_of(v), nested).decision == Decision::Allow
        };
        // The file's real path is judged with the same argv by the rules that name it
        // (and the anonymous-file rule), not by the default (the server does the same:
        // `boundary::decide`); anything else goes to the server, which decides both
        // names (a deny on either wins).
        let real_allows = |real: &str| {
            let v = policy.evaluate_exec(real, &argv_of(request), nested);
            v.decision == Decision::Allow
                || (v.matched.is_empty() && !whalebox_policy::program::is_anonymous(real))
        };
        // A copy of a known program is that program, with the same argv.
        let copy_allows = |name: &str| {
            policy
                .evaluate_exec(name, &argv_of(request), nested)
                .decision
                == Decision::Allow
        };
        allows(request)
            && request["real"].as_str().is_none_or(real_allows)
            && request["copy_of"].as_str().is_none_or(copy_allows)
            && (request["interpreter"].is_null() || allows(&request["interpreter"]))
    }

    /// Settle `request` here if the policy allows it, else put it to the server with the
    /// caller held until the answer. Ok(true): allowed here.
    pub fn decide(&mut self, mut request: Value, waiting: W) -> Result<bool, String> {
        if self.settles(&request) {
            request["record_only"] = json!(true);
            self.records.extend_from_slice(&frame(&request));
            self.records_since.get_or_insert_with(Instant::now);
            if self.records.len() > 64 * 1024 {
                self.send_records();
            }
            return Ok(true);
        }
        // Records first, so the audit log keeps the order execs were decided in.
        self.send_records();
        self.next_id += 1;
        let id = self.next_id;
        request["id"] = json!(id);
        self.sent = true;
        self.server().send(&request)?;
        self.waiting.insert(id, (waiting, Instant::now()));
        Ok(false)
    }

    /// The held callers, to find one asked about again (a signal restarted its call).
    pub fn held_mut(&mut self) -> impl Iterator<Item = &mut W> {
        self.waiting.values_mut().map(|(w, _)| w)
    }

    fn send_records(&mut self) {
        if !self.records.is_empty() {
            self.sent = true;
            let records = std::mem::take(&mut self.records);
            let _ = self.server().send_frames(&records);
        }
        self.records_since = None;
    }

    /// Timed work: batched records out, questions past their time denied (a slow or
    /// stuck server never hangs a task), everything held denied when the server is gone.
    pub fn tick(&mut self) -> Vec<Answer<W>> {
        if self
            .records_since
            .is_some_and(|t| t.elapsed() >= Duration::from_millis(RECORDS_EVERY_MS.into()))
        {
            self.send_records();
        }
        let gone = self.server.as_ref().and_then(|s| s.gone.clone());
        let late: Vec<u64> = self
            .waiting
            .iter()
            .filter(|(_, (_, since))| gone.is_some() || since.elapsed() > self.timeout)
            .map(|(id, _)| *id)
            .collect();
        let why = gone.unwrap_or_else(|| {
            format!(
                "no answer from the decision server in {} s",
                self.timeout.as_secs()
            )
        });
        late.into_iter()
            .filter_map(|id| self.waiting.remove(&id))
            .map(|(waiting, _)| Answer {
                waiting,
                allowed: false,
                reason: why.clone(),
            })
            .collect()
    }

    /// The answers that have arrived from the server (the policy is kept).
    pub fn answers(&mut self) -> Vec<Answer<W>> {
        let mut out = Vec::new();
        let Some(server) = self.server.as_mut() else {
            return Vec::new();
        };
        for answer in server.answers() {
            if answer["id"] == 0 && !answer["policy"].is_null() {
                self.policy = serde_json::from_value(answer["policy"].clone()).ok();
                continue;
            }
            let Some((waiting, _)) = answer["id"]
                .as_u64()
                .and_then(|id| self.waiting.remove(&id))
            else {
                continue;
            };
            out.push(Answer {
                waiting,
                allowed: answer["decision"] == "allow",
                reason: answer["reason"]
                    .as_str()
                    .unwrap_or("no reason given")
                    .to_string(),
            });
        }
        out
    }

    /// Send what is left and wait (a bounded time) until the server has written it.
    pub fn flush(&mut self, limit: Duration) {
        self.send_records();
        if !self.sent {
            return;
        }
        self.next_id += 1;
        let sync = self.next_id;
        let server = self.server();
        if server.send(&json!({"id": sync, "want": "sync"})).is_err() {
            return;
        }
        let start = Instant::now();
        while server.gone.is_none() && start.elapsed() < limit {
            if let Some(fd) = server.fd() {
                let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
                let _ = poll(&mut fds, PollTimeout::from(100u16));
            }
            if server.answers().iter().any(|a| a["id"] == sync) {
                return;
            }
        }
    }
}

/// A request's `argv`, as strings.
fn argv_of(request: &Value) -> Vec<String> {
    request["argv"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}
