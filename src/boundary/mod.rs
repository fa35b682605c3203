//! The decision server: answers the gate's "may I exec this?" over a unix socket in a
//! private directory (0700, socket 0600), one thread per connection, with the policy's
//! verdict; `ask` is settled by the profile's `on_ask` when no person can answer. Every
//! decision is appended to the audit log (JSONL) when the profile names one. The server
//! and its directory go away when it is dropped.

/// The kernel exec gate (the `whalebox-sandbox` crate), which asks this module's
/// decision server about every exec.
pub use whalebox_sandbox::kernel;
mod pending;
pub mod tty;

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

/// Who settles an `ask` when nobody can be asked.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum OnAsk {
    /// Refuse the exec (the result says `approval_needed`).
    #[default]
    Deny,
    /// Run it (CI jobs that trust their policy's `ask` rules).
    Allow,
}

/// Finds the task a gate process belongs to (by walking its parents).
pub type TaskOf = Arc<dyn Fn(u32) -> Option<String> + Send + Sync>;

/// A person's answer to an `ask`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    Once,
    /// Allow this program (and first argument) for the rest of the session.
    Session,
    Deny,
}

/// What a person is asked about.
#[derive(Debug, Clone)]
pub struct ApprovalRequest {
    pub command: String,
    pub reason: String,
    pub task_id: Option<String>,
}

/// Asks a person (MCP elicitation, a terminal); `None`: nobody can answer here.
pub type Approver = Arc<dyn Fn(&ApprovalRequest) -> Option<(Approval, &'static str)> + Send + Sync>;

/// Where the session's approver is installed once a client that can answer connects.
#[derive(Clone, Default)]
pub struct ApproverSlot(Arc<Mutex<Option<Approver>>>);

impl ApproverSlot {
    pub fn set(&self, approver: Approver) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(approver);
        }
    }

    pub fn get(&self) -> Option<Approver> {
        self.0.lock().ok().and_then(|a| a.clone())
    }

    pub fn is_set(&self) -> bool {
        self.0.lock().map(|a| a.is_some()).unwrap_or(false)
    }
}

impl std::fmt::Debug for ApproverSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApproverSlot(set: {})", self.is_set())
    }
}

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
            && subject(&req, &shared.policy).2.decision == Decision::Ask;
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
    let (decision, reason, record) = decide(req, shared);
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
        let _ = writeln!(f, "{record}");
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

pub use kernel::nested;

/// What a question is decided on: the program, or a script's interpreter when that is
/// the stricter of the two (both verdicts' rules are kept).
fn subject<'a>(
    req: &'a Request,
    policy: &Policy,
) -> (&'a str, &'a [String], crate::policy::Verdict) {
    let nested = nested(req.via.as_deref(), req.chain.len());
    let verdict = policy.evaluate_exec(&req.program, &req.argv, nested);
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

/// Append "allow KEY" to the approvals file as a policy rule (the file is created as a
/// policy of its own, `version = 1`, so it can be checked and included as it is).
fn remember(
    file: &Path,
    key: &[String],
    verdict: &crate::policy::Verdict,
    who: &str,
    argv: &[String],
) -> std::io::Result<()> {
    let quote = |s: &str| toml::Value::String(s.to_string()).to_string();
    // The example must split back into the same words (crate::policy::words).
    let example: Vec<String> = key
        .iter()
        .map(|w| {
            if w.chars()
                .any(|c| c.is_whitespace() || c == '\'' || c == '"')
            {
                if w.contains('\'') {
                    format!("\"{w}\"")
                } else {
                    format!("'{w}'")
                }
            } else {
                w.clone()
            }
        })
        .collect();
    let checkable = key.iter().all(|w| !(w.contains('\'') && w.contains('"')));
    let day = crate::boundary::today();
    let mut block = format!(
        "\n# Allowed for a session by {who} on {day}, when it ran: {}\n",
        argv.join(" ").replace('\n', " ")
    );
    for m in verdict
        .matched
        .iter()
        .filter(|m| m.decision != Decision::Allow)
    {
        block.push_str(&format!(
            "# Note: {} also says {} here, and the strictest rule wins; change that rule for this one to matter.\n",
            m.source,
            m.decision.as_str()
        ));
    }
    block.push_str("[[rule]]\n");
    block.push_str(&format!(
        "pattern = [{}]\n",
        key.iter().map(|w| quote(w)).collect::<Vec<_>>().join(", ")
    ));
    block.push_str("decision = \"allow\"\n");
    block.push_str(&format!(
        "justification = {}\n",
        quote(&format!("approved for a session by {who} on {day}"))
    ));
    if checkable {
        block.push_str(&format!("match = [{}]\n", quote(&example.join(" "))));
    }
    append_approval(file, &block)
}

/// Append a block of policy rules to the approvals file, which starts as a policy of its
/// own (`version = 1`) when it is empty; in one write, so blocks never interleave.
pub(crate) fn append_approval(file: &Path, block: &str) -> std::io::Result<()> {
    // Empty, not missing: the server creates the file at start when Landlock needs it.
    let fresh = std::fs::metadata(file)
        .map(|m| m.len() == 0)
        .unwrap_or(true);
    let mut text = String::new();
    if fresh {
        text.push_str(
            "# Approvals remembered by whalebox ([shell] approvals_file). Review them, then\n\
             # commit this file and `include` it from your policy, or copy the rules over.\n\
             version = 1\n",
        );
    }
    text.push_str(block);
    let mut opts = std::fs::OpenOptions::new();
    opts.create(true).append(true);
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o644);
    opts.open(file)?.write_all(text.as_bytes())
}

/// Today's date (UTC) as YYYY-MM-DD, for remembered approvals.
pub(crate) fn today() -> String {
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() / 86_400)
        .unwrap_or(0) as i64;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
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

fn decide(req: &Request, shared: &Shared) -> (Decision, String, serde_json::Value) {
    let (program, argv, verdict) = subject(req, &shared.policy);
    let task_id = (shared.task_of)(req.pid).or_else(|| (shared.task_of)(req.peer));
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

/// The gated zsh and the gate, found and checked.
#[derive(Debug, Clone)]
pub struct GatedShell {
    pub zsh: PathBuf,
    pub gate: PathBuf,
}

/// Where the gate program is: `$WHALEBOX_GATE_BIN`, or `whalebox-gate` next to whalebox.
pub fn gate_program() -> Option<PathBuf> {
    std::env::var_os("WHALEBOX_GATE_BIN")
        .map(PathBuf::from)
        .or_else(|| {
            let exe = std::env::current_exe().ok()?;
            Some(exe.parent()?.join("whalebox-gate"))
        })
        .filter(|g| g.is_file())
}

/// Where the gated zsh may be, in order: the profile's `[shell] zsh`, else
/// `$WHALEBOX_ZSH`, `zsh` next to the whalebox binary, `../zsh/bin/zsh`, or
/// `target/zsh/bin/zsh` of the build whalebox runs from.
pub fn gated_shell_candidates(configured: Option<&str>) -> Vec<PathBuf> {
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf));
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(c) = configured {
        candidates.push(c.into());
    } else {
        if let Some(z) = std::env::var_os("WHALEBOX_ZSH") {
            candidates.push(z.into());
        }
        if let Some(d) = &exe_dir {
            candidates.push(d.join("zsh"));
            candidates.push(d.join("../zsh/bin/zsh"));
            candidates.push(d.join("../../target/zsh/bin/zsh"));
        }
    }
    candidates
}

/// Find the gated zsh among [`gated_shell_candidates`], and the gate
/// ([`gate_program`]). A candidate counts only if it really gates: run with no
/// server, an exec of the zsh itself must be denied. (The zsh, not a system program:
/// NixOS and Nix's build sandbox have no `/bin/true`, and a missing program exits 127
/// before any gate is asked.)
pub fn find_gated_shell(configured: Option<&str>) -> Result<GatedShell, String> {
    let gate = gate_program()
        .ok_or("whalebox-gate was not found next to the whalebox binary (or $WHALEBOX_GATE_BIN)")?;
    let candidates = gated_shell_candidates(configured);
    let mut tried = Vec::new();
    for zsh in candidates {
        if !zsh.is_file() {
            tried.push(format!("{} (missing)", zsh.display()));
            continue;
        }
        let probe = std::process::Command::new(&zsh)
            .args(["-fc", "\"$0\" -fc :"])
            .arg(&zsh)
            .env("WHALEBOX_GATE", &gate)
            .env("WHALEBOX_GATE_SOCKET", "/nonexistent/whalebox-probe.sock")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
        match probe {
            Ok(st) if st.code() == Some(126) => {
                let zsh = zsh.canonicalize().unwrap_or(zsh);
                return Ok(GatedShell { zsh, gate });
            }
            _ => tried.push(format!("{} (not the gated zsh)", zsh.display())),
        }
    }
    Err(format!(
        "no gated zsh found (tried {}); build it with nix/zsh/build.sh or set [shell] zsh",
        if tried.is_empty() {
            "nothing".to_string()
        } else {
            tried.join(", ")
        }
    ))
}
