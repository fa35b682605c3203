//! The decision server: answers the gate's "may I exec this?" over a unix socket in a
//! private directory (0700, socket 0600), one thread per connection, with the policy's
//! verdict; `ask` is settled by the profile's `on_ask` when no person can answer. Every
//! decision is appended to the audit log (JSONL) when the profile names one. The server
//! and its directory go away when it is dropped.

/// The kernel exec gate (the `whalebox-sandbox` crate), which asks this module's
/// decision server about every exec.
pub use whalebox_sandbox::kernel;
mod approvals;
mod decide;
mod gated;
mod pending;
pub mod tty;

pub use approvals::{Approval, ApprovalRequest, Approver, ApproverSlot, OnAsk};
pub(crate) use approvals::{append_approval, today};
pub use gated::{GatedShell, find_gated_shell, gate_program, gated_shell_candidates};
pub use kernel::nested;
pub use pending::{PendingApprovals, approval_form, approval_of};

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use crate::policy::{Decision, Policy};

/// Above ARG_MAX plus JSON escaping: a real exec always fits.
const MAX_REQUEST: usize = 8 << 20;

#[derive(Debug, Clone, Deserialize)]
struct Request {
    program: String,
    argv: Vec<String>,
    #[serde(default)]
    cwd: String,
    #[serde(default)]
    pid: u32,
    /// Set by the kernel gate, which keeps one connection and many questions in flight:
    /// the answer carries the same id.
    #[serde(default)]
    id: Option<u64>,
    /// The programs that led to this exec (the kernel gate follows the process tree).
    #[serde(default)]
    chain: Vec<String>,
    /// Who asks: "zsh" (its in-process gate) or "kernel" (the kernel gate); absent for
    /// zsh and whalebox-gate talking to the server directly.
    #[serde(default)]
    via: Option<String>,
    /// "call" (the exec can still fail with EACCES) or "loaded" (the image is loaded
    /// and a denial kills it).
    #[serde(default)]
    stage: Option<String>,
    /// A `#!` script's interpreter, decided in the same question (strictest wins).
    #[serde(default)]
    interpreter: Option<Interpreter>,
    /// The file's real path when it differs from `program` (the kernel gate resolved
    /// links and descriptors): decided with the same argv, strictest wins.
    #[serde(default)]
    real: Option<String>,
    /// The known program the file is a copy of, by content (a renamed copy of a program
    /// the policy names): decided as that program with the same argv, strictest wins.
    #[serde(default)]
    copy_of: Option<String>,
    /// The kernel gate already allowed this exec by the same policy and only wants it
    /// in the audit log: no answer.
    #[serde(default)]
    record_only: bool,
    /// The connecting process (SO_PEERCRED): the task's supervisor for the kernel gate,
    /// which finds the task when the exec's own process is already gone.
    #[serde(skip)]
    peer: u32,
}

/// The kernel gate's own messages: it asks for the policy when it starts, and for a
/// sync (every record it sent is in the audit log) before its task ends.
#[derive(Debug, Deserialize)]
struct Hello {
    id: u64,
    want: String,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
struct Interpreter {
    program: String,
    argv: Vec<String>,
}

/// Finds the task a gate process belongs to (by walking its parents).
pub type TaskOf = Arc<dyn Fn(u32) -> Option<String> + Send + Sync>;

pub struct DecisionServer {
    dir: tempfile::TempDir,
    socket: PathBuf,
    listener: Arc<UnixListener>,
    shared: Arc<Shared>,
}

/// One exec the boundary refused, kept for the result of the task that tried it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Denial {
    pub program: String,
    pub argv: Vec<String>,
    /// The policy said `ask` and nobody could answer (as opposed to a deny rule or a
    /// person saying no).
    pub approval_needed: bool,
    pub reason: String,
    /// Every rule that matched, with its file:line and justification.
    pub rules: Vec<crate::policy::Matched>,
    /// The programs that led there, ending with the refused command
    /// (`zsh → make → sh → git push`).
    pub chain: Vec<String>,
    /// The image was already loaded (a thread changed the exec after it was checked, or
    /// the exec was not seen before): the process was killed instead of getting EACCES.
    pub killed: bool,
}

/// The denials of one task: the first few in full, and how many there were.
#[derive(Debug, Clone, Default)]
pub struct TaskDenials {
    pub first: Vec<Denial>,
    pub total: usize,
}

/// How many denials of one task are kept in full.
const DENIALS_KEPT: usize = 10;

struct Shared {
    policy: Arc<Policy>,
    on_ask: OnAsk,
    approvals_file: Option<PathBuf>,
    audit: Option<Mutex<std::fs::File>>,
    caller: Option<String>,
    task_of: TaskOf,
    approver: ApproverSlot,
    /// Prefixes (program basename, first argument) a person allowed for the session.
    allowed: Mutex<Vec<Vec<String>>>,
    /// Refused execs by task id, for that task's result.
    denials: Mutex<std::collections::HashMap<String, TaskDenials>>,
}

/// What the profile says about how decisions are settled and recorded.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub on_ask: OnAsk,
    /// JSONL, one line per decision.
    pub audit_log: Option<PathBuf>,
    /// "Allow for the session" answers are appended here as policy rules, for a person
    /// to review, commit and `include`.
    pub approvals_file: Option<PathBuf>,
    /// Where the socket's private directory is made (default: the system's temp dir).
    pub runtime_dir: Option<PathBuf>,
    /// Who the session serves (an HTTP caller's token name or JWT subject), written in
    /// each record as `caller`.
    pub caller: Option<String>,
}

impl DecisionServer {
    pub fn start(
        policy: Arc<Policy>,
        settings: Settings,
        task_of: TaskOf,
        approver: ApproverSlot,
    ) -> std::io::Result<DecisionServer> {
        let mut builder = tempfile::Builder::new();
        builder.prefix("gate-");
        let dir = match &settings.runtime_dir {
            Some(d) => builder.tempdir_in(d)?,
            None => builder.tempdir()?,
        };
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))?;
        let socket = dir.path().join("gate.sock");
        let listener = UnixListener::bind(&socket)?;
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))?;
        let audit = match &settings.audit_log {
            Some(p) => {
                let mut opts = std::fs::OpenOptions::new();
                opts.create(true).append(true);
                std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
                Some(Mutex::new(opts.open(p)?))
            }
            None => None,
        };
        let shared = Arc::new(Shared {
            policy,
            on_ask: settings.on_ask,
            approvals_file: settings.approvals_file,
            audit,
            caller: settings.caller,
            task_of,
            approver,
            allowed: Mutex::new(Vec::new()),
            denials: Mutex::default(),
        });
        let listener = Arc::new(listener);
        let accepting = listener.clone();
        let serving = shared.clone();
        std::thread::Builder::new()
            .name("whalebox-decisions".into())
            .spawn(move || {
                for conn in accepting.incoming() {
                    let Ok(conn) = conn else { break };
                    let shared = serving.clone();
                    let _ = std::thread::Builder::new()
                        .name("whalebox-decision".into())
                        .spawn(move || serve(conn, shared));
                }
            })?;
        Ok(DecisionServer {
            dir,
            socket,
            listener,
            shared,
        })
    }

    /// The execs refused for this task so far.
    pub fn denials(&self, task_id: &str) -> TaskDenials {
        self.shared
            .denials
            .lock()
            .ok()
            .and_then(|d| d.get(task_id).cloned())
            .unwrap_or_default()
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for DecisionServer {
    fn drop(&mut self) {
        // Wake the accept loop so the thread ends; the directory goes with TempDir.
        let _ = self.listener.set_nonblocking(true);
        let _ = UnixStream::connect(&self.socket);
    }
}

fn read_frame(conn: &mut UnixStream) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    conn.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_REQUEST {
        return Err(std::io::Error::other("request too large"));
    }
    let mut body = vec![0u8; len];
    conn.read_exact(&mut body)?;
    Ok(body)
}

/// One connection: zsh and whalebox-gate ask one question and hang up; the kernel gate
/// keeps the connection and numbers its questions. Questions that may wait for a person
/// are answered on a thread of their own so the others are not held up.
fn serve(mut conn: UnixStream, shared: Arc<Shared>) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    let Ok(writer) = conn.try_clone() else {
        return;
    };
    let writer = Arc::new(Mutex::new(writer));
    let peer = nix::sys::socket::getsockopt(&conn, nix::sys::socket::sockopt::PeerCredentials)
        .map(|c| c.pid() as u32)
        .unwrap_or(0);
    loop {
        let Ok(body) = read_frame(&mut conn) else {
            return;
        };
        if let Ok(hello) = serde_json::from_slice::<Hello>(&body) {
            // "policy": the policy itself; "sync": an empty answer, written after every
            // record sent before it (they are handled in order on this connection).
            let answer = match hello.want.as_str() {
                "policy" => json!({"id": hello.id, "policy": &*shared.policy}),
                _ => json!({"id": hello.id}),
            }
            .to_string();
            let mut frame = (answer.len() as u32).to_be_bytes().to_vec();
            frame.extend_from_slice(answer.as_bytes());
            if let Ok(mut w) = writer.lock() {
                let _ = w.write_all(&frame);
            }
            let _ = conn.set_read_timeout(None);
            continue;
        }
        let req = match serde_json::from_slice::<Request>(&body) {
            Ok(req) => Request { peer, ..req },
            Err(e) => {
                let record = json!({"error": e.to_string()});
                write_audit(&shared, &record);
                reply(
                    &writer,
                    None,
                    Decision::Deny,
                    &format!("a malformed request: {e}"),
                );
                return;
            }
        };
        if req.id.is_some() {
            let _ = conn.set_read_timeout(None);
        }
        let may_wait = req.id.is_some()
            && !req.record_only
            && decide::subject(&req, &shared.policy).2.decision == Decision::Ask;
        if may_wait {
            let (shared, writer) = (shared.clone(), writer.clone());
            let _ = std::thread::Builder::new()
                .name("whalebox-approval".into())
                .spawn(move || answer(&req, &shared, &writer));
        } else {
            answer(&req, &shared, &writer);
        }
    }
}

fn answer(req: &Request, shared: &Shared, writer: &Mutex<UnixStream>) {
    let (decision, reason, record) = decide::decide(req, shared);
    if req.record_only {
        // The kernel gate decided it already; it asks for a "sync" once at the end.
        write_audit(shared, &record);
        return;
    }
    // The record goes to the audit log before the answer: once the exec is allowed, the
    // program may finish and whalebox exit before this thread would run again (seen in
    // release builds: `whalebox run -- touch x` ended with an empty audit log).
    write_audit(shared, &record);
    reply(writer, req.id, decision, &reason);
}

fn write_audit(shared: &Shared, record: &serde_json::Value) {
    if let Some(audit) = &shared.audit
        && let Ok(mut f) = audit.lock()
    {
        match (&shared.caller, record) {
            (Some(caller), serde_json::Value::Object(map)) => {
                let mut map = map.clone();
                map.insert("caller".into(), json!(caller));
                let _ = writeln!(f, "{}", serde_json::Value::Object(map));
            }
            _ => {
                let _ = writeln!(f, "{record}");
            }
        }
    }
}

fn reply(writer: &Mutex<UnixStream>, id: Option<u64>, decision: Decision, reason: &str) {
    let mut body = json!({"decision": decision.as_str(), "reason": reason});
    if let Some(id) = id {
        body["id"] = json!(id);
    }
    let body = body.to_string();
    let mut frame = (body.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(body.as_bytes());
    if let Ok(mut w) = writer.lock() {
        let _ = w.write_all(&frame);
    }
}
