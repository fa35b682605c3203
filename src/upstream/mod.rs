//! Upstream MCP servers that whalebox starts and fronts (the `mcp` group). Each runs like
//! a shell task: under a supervisor, in the task's Landlock layer and (where it can be
//! installed) the kernel exec gate, with a rebuilt environment and the server's private
//! TMPDIR, in its own process group that dies with whalebox. Its command line is put to
//! the exec policy first; a refused server is not started and says so. whalebox speaks to
//! it with rmcp's client over the server's stdin and stdout; its stderr is kept (the last
//! lines) for the reports of a server that failed.
//!
//! A server that fails to start, exits or crashes never takes whalebox down: it is
//! `unavailable` with the reason and its last stderr lines, and the next call restarts it
//! (at most once per backoff period, which doubles up to a minute).

pub mod catalog;

use std::collections::VecDeque;
use std::io::BufRead;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value};
use tokio::sync::Mutex as AsyncMutex;

use crate::policy::Decision;
use crate::profile::McpServerSection;
use crate::shell::spawn::{self, Spec};
use crate::tools::Env;
use catalog::Entry;

/// How many stderr lines of a server are kept.
const STDERR_LINES: usize = 20;

/// Why an upstream cannot be used now.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Unavailable {
    pub server: String,
    pub why: String,
    /// Its last stderr lines.
    pub stderr: Vec<String>,
}

enum State {
    /// Not started yet (or stopped after a failure, waiting for its backoff).
    Idle,
    Ready(Connection),
    Failed {
        why: String,
        at: Instant,
        failures: u32,
    },
    /// The exec policy refused its command line: never started.
    Refused(String),
}

struct Connection {
    client: RunningService<RoleClient, Listener>,
    pid: i32,
}

/// Hears an upstream's `notifications/tools/list_changed`: its tools are listed again
/// before the catalog is next read.
#[derive(Clone, Default)]
struct Listener {
    stale: Arc<std::sync::atomic::AtomicBool>,
    /// Where each running call's progress goes, by its progress token.
    progress:
        Arc<Mutex<std::collections::HashMap<rmcp::model::ProgressToken, crate::core::Progress>>>,
}

impl rmcp::ClientHandler for Listener {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        let sink = self
            .progress
            .lock()
            .ok()
            .and_then(|p| p.get(&params.progress_token).cloned());
        if let Some(sink) = sink {
            sink.report(params.progress, params.total, params.message);
        }
    }

    async fn on_tool_list_changed(&self, _context: rmcp::service::NotificationContext<RoleClient>) {
        self.stale.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // The whole process group: the supervisor and everything the server started.
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

pub struct Upstream {
    pub name: String,
    cfg: McpServerSection,
    state: AsyncMutex<State>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    tools: Mutex<Vec<Entry>>,
    /// Set when the server says its tool list changed.
    stale: Arc<std::sync::atomic::AtomicBool>,
    progress:
        Arc<Mutex<std::collections::HashMap<rmcp::model::ProgressToken, crate::core::Progress>>>,
    /// Tool names dropped because their sanitized names collide (reported).
    collisions: Mutex<Vec<String>>,
}

/// `NAME` as clients accept it in a tool name: letters, digits, `_` and `-`.
pub fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

pub fn qualified(server: &str, tool: &str) -> String {
    format!("mcp__{server}__{}", sanitize(tool))
}

impl Upstream {
    fn new(name: String, cfg: McpServerSection) -> Upstream {
        Upstream {
            name,
            cfg,
            state: AsyncMutex::new(State::Idle),
            stderr: Arc::default(),
            tools: Mutex::default(),
            stale: Arc::default(),
            progress: Arc::default(),
            collisions: Mutex::default(),
        }
    }

    pub fn defer(&self) -> bool {
        self.cfg.defer
    }

    pub fn tool_timeout(&self) -> Duration {
        Duration::from_millis(self.cfg.tool_timeout_ms)
    }

    pub fn tools(&self) -> Vec<Entry> {
        self.tools.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// The entry of the qualified `name`, once the server is running; Err when the
    /// server cannot be used; Ok(None) when it has no such tool.
    pub async fn entry(&self, env: &Env, name: &str) -> Result<Option<Entry>, Unavailable> {
        self.ready(env).await?;
        Ok(self
            .tools
            .lock()
            .ok()
            .and_then(|t| t.iter().find(|e| e.name == name).cloned()))
    }

    fn stderr_tail(&self) -> Vec<String> {
        self.stderr
            .lock()
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn unavailable(&self, why: impl Into<String>) -> Unavailable {
        Unavailable {
            server: self.name.clone(),
            why: why.into(),
            stderr: self.stderr_tail(),
        }
    }

    /// Why it cannot be used now, if so (without starting it).
    pub async fn problem(&self) -> Option<Unavailable> {
        match &*self.state.lock().await {
            State::Failed { why, .. } => Some(self.unavailable(why.clone())),
            State::Refused(why) => Some(self.unavailable(why.clone())),
            _ => None,
        }
    }

    /// The running connection's client, starting (or restarting) the server if needed.
    async fn ready(&self, env: &Env) -> Result<rmcp::Peer<RoleClient>, Unavailable> {
        let mut state = self.state.lock().await;
        if let State::Ready(c) = &*state {
            if !c.client.is_closed() {
                let peer = c.client.peer().clone();
                if self.stale.swap(false, std::sync::atomic::Ordering::SeqCst) {
                    let timeout = Duration::from_millis(self.cfg.startup_timeout_ms);
                    if let Ok(Ok(listed)) =
                        tokio::time::timeout(timeout, peer.list_all_tools()).await
                    {
                        self.set_tools(listed);
                    }
                }
                return Ok(peer);
            }
            // It exited since: start it again now (repeated failures back off).
            *state = State::Idle;
        }
        let failures = match &*state {
            State::Refused(why) => return Err(self.unavailable(why.clone())),
            State::Failed { why, at, failures } => {
                let backoff =
                    Duration::from_secs(1 << (*failures).min(6)).min(Duration::from_secs(60));
                if at.elapsed() < backoff {
                    return Err(self.unavailable(format!(
                        "{why}; retried in {} s",
                        (backoff - at.elapsed()).as_secs() + 1
                    )));
                }
                *failures
            }
            _ => 0,
        };
        match self.start(env).await {
            Ok(conn) => {
                let peer = conn.client.peer().clone();
                *state = State::Ready(conn);
                Ok(peer)
            }
            Err(Start::Refused(why)) => {
                *state = State::Refused(why.clone());
                Err(self.unavailable(why))
            }
            Err(Start::Failed(why)) => {
                *state = State::Failed {
                    why: why.clone(),
                    at: Instant::now(),
                    failures: failures + 1,
                };
                Err(self.unavailable(why))
            }
        }
    }

    async fn start(&self, env: &Env) -> Result<Connection, Start> {
        let program = self.cfg.command.clone();
        let mut argv = vec![program.clone()];
        argv.extend(self.cfg.args.iter().cloned());
        // The exec policy decides the command line before anything starts.
        if let Some(policy) = &env.policy {
            let verdict = policy.evaluate_exec(&program, &argv, false);
            match verdict.decision {
                Decision::Allow => {}
                Decision::Ask if env.profile.shell.on_ask == crate::boundary::OnAsk::Allow => {}
                Decision::Ask => {
                    return Err(Start::Refused(format!(
                        "the exec policy asks a person before `{}`, and nobody can answer when a server starts ([shell] on_ask = deny): {}",
                        argv.join(" "),
                        verdict.reason
                    )));
                }
                Decision::Deny => {
                    return Err(Start::Refused(format!(
                        "the exec policy refuses `{}`: {}",
                        argv.join(" "),
                        verdict.reason
                    )));
                }
            }
        }
        let exec_gate = match env.shell_boundary() {
            Ok(crate::tools::ShellBoundary::Gated { kernel, .. }) => kernel,
            Ok(_) => None,
            Err(why) => {
                return Err(Start::Refused(format!(
                    "the exec boundary is required, but {why}"
                )));
            }
        };
        let mut vars = spawn::child_env(
            spawn::Mode::Pipe,
            std::path::Path::new("/bin/sh"),
            &self.cfg.pass_env,
            &self
                .cfg
                .env
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<Vec<_>>(),
            &[],
        );
        if !vars.iter().any(|(k, _)| k == "TMPDIR") {
            vars.push(("TMPDIR".into(), env.private.tmp.display().to_string()));
        }
        let sandbox = match &env.sandbox {
            Some(s) => Some(serde_json::to_string(s).map_err(|e| Start::Failed(e.to_string()))?),
            None => None,
        };
        let spec = Spec {
            mode: spawn::Mode::Pipe,
            argv: argv.iter().map(Into::into).collect(),
            cwd: env.guard.workspace().to_path_buf(),
            env: vars,
            rows: 24,
            cols: 80,
            sandbox,
            exec_gate,
        };
        let started = spawn::start_stdio(spec)
            .map_err(|e| Start::Failed(format!("cannot start `{}`: {e}", argv.join(" "))))?;
        let pid = started.pid;
        let tail = Arc::clone(&self.stderr);
        let stderr = started.stderr;
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Ok(mut t) = tail.lock() {
                    if t.len() == STDERR_LINES {
                        t.pop_front();
                    }
                    t.push_back(line.chars().take(500).collect());
                }
            }
        });
        let kill = || {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        };
        let rx = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(started.stdout))
            .map_err(|e| Start::Failed(e.to_string()));
        let tx = tokio::net::unix::pipe::Sender::from_owned_fd(OwnedFd::from(started.stdin))
            .map_err(|e| Start::Failed(e.to_string()));
        let (rx, tx) = match (rx, tx) {
            (Ok(rx), Ok(tx)) => (rx, tx),
            (Err(e), _) | (_, Err(e)) => {
                kill();
                return Err(e);
            }
        };
        let timeout = Duration::from_millis(self.cfg.startup_timeout_ms);
        let listener = Listener {
            stale: Arc::clone(&self.stale),
            progress: Arc::clone(&self.progress),
        };
        let client = match tokio::time::timeout(timeout, listener.serve((rx, tx))).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                kill();
                return Err(Start::Failed(format!(
                    "it did not complete MCP's initialize: {e}"
                )));
            }
            Err(_) => {
                kill();
                return Err(Start::Failed(format!(
                    "it did not answer initialize within {} ms (startup_timeout_ms)",
                    self.cfg.startup_timeout_ms
                )));
            }
        };
        let listed = match tokio::time::timeout(timeout, client.peer().list_all_tools()).await {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => {
                kill();
                return Err(Start::Failed(format!("its tools/list failed: {e}")));
            }
            Err(_) => {
                kill();
                return Err(Start::Failed(
                    "its tools/list did not answer in time".into(),
                ));
            }
        };
        self.set_tools(listed);
        Ok(Connection { client, pid })
    }

    fn set_tools(&self, listed: Vec<rmcp::model::Tool>) {
        let mut entries: Vec<Entry> = Vec::new();
        let mut collisions = Vec::new();
        for t in listed {
            let name = t.name.to_string();
            if (!self.cfg.enabled_tools.is_empty() && !self.cfg.enabled_tools.contains(&name))
                || self.cfg.disabled_tools.contains(&name)
            {
                continue;
            }
            let q = qualified(&self.name, &name);
            if let Some(other) = entries.iter().find(|e| e.name == q) {
                collisions.push(format!(
                    "`{name}` and `{}` are both {q} once sanitized; neither is offered",
                    other.upstream_name
                ));
                continue;
            }
            entries.push(Entry {
                name: q,
                server: self.name.clone(),
                upstream_name: name,
                description: t.description.map(|d| d.to_string()).unwrap_or_default(),
                input_schema: Value::Object((*t.input_schema).clone()),
                annotations: serde_json::to_value(&t.annotations).unwrap_or(Value::Null),
            });
        }
        // A colliding name is dropped entirely: a call could reach either tool.
        let dropped: Vec<String> = collisions
            .iter()
            .filter_map(|c| c.split(" are both ").nth(1))
            .filter_map(|rest| rest.split(' ').next())
            .map(str::to_string)
            .collect();
        entries.retain(|e| !dropped.contains(&e.name));
        if let Ok(mut t) = self.tools.lock() {
            *t = entries;
        }
        if let Ok(mut c) = self.collisions.lock() {
            *c = collisions;
        }
    }

    pub fn collisions(&self) -> Vec<String> {
        self.collisions
            .lock()
            .map(|c| c.clone())
            .unwrap_or_default()
    }

    /// Call `tool` (the upstream's own name) within `tool_timeout_ms`; the request is
    /// cancelled upstream when the time is up or the caller cancels.
    pub async fn call(
        &self,
        env: &Env,
        tool: &str,
        arguments: Map<String, Value>,
        ctx: &crate::core::CallContext,
    ) -> Result<CallToolResult, CallFailure> {
        use rmcp::model::{
            CallToolRequest, CancelledNotificationParam, ClientRequest, ServerResult,
        };
        let peer = self.ready(env).await.map_err(CallFailure::Unavailable)?;
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let broken = |e: rmcp::ServiceError| async move {
            // The connection is broken: drop it (its process group is killed); the next
            // call after a second's backoff starts the server again.
            let why = format!("it stopped during a call: {e}");
            *self.state.lock().await = State::Failed {
                why: why.clone(),
                at: Instant::now(),
                failures: 0,
            };
            CallFailure::Unavailable(self.unavailable(why))
        };
        let handle = match peer
            .send_cancellable_request(
                ClientRequest::CallToolRequest(CallToolRequest::new(params)),
                rmcp::service::PeerRequestOptions::no_options(),
            )
            .await
        {
            Ok(h) => h,
            Err(e) => return Err(broken(e).await),
        };
        let (id, token) = (handle.id.clone(), handle.progress_token.clone());
        // The caller's progress sink hears the upstream's progress for this call.
        if ctx.progress.is_connected()
            && let Ok(mut p) = self.progress.lock()
        {
            p.insert(token.clone(), ctx.progress.clone());
        }
        let cancel_upstream = |reason: &str| {
            let peer = peer.clone();
            let param = CancelledNotificationParam::new(Some(id.clone()), Some(reason.to_string()));
            async move {
                let _ = peer.notify_cancelled(param).await;
            }
        };
        let outcome = tokio::select! {
            r = tokio::time::timeout(self.tool_timeout(), handle.await_response()) => match r {
                Ok(Ok(ServerResult::CallToolResult(result))) => Ok(result),
                Ok(Ok(other)) => Err(CallFailure::Unavailable(self.unavailable(format!("it answered tools/call with something else: {other:?}")))),
                Ok(Err(e)) => Err(broken(e).await),
                Err(_) => {
                    cancel_upstream("tool_timeout_ms").await;
                    Err(CallFailure::Timeout(self.cfg.tool_timeout_ms))
                }
            },
            _ = ctx.cancel.cancelled() => {
                cancel_upstream("the client cancelled").await;
                Err(CallFailure::Cancelled)
            }
        };
        if let Ok(mut p) = self.progress.lock() {
            p.remove(&token);
        }
        outcome
    }
}

pub enum CallFailure {
    Unavailable(Unavailable),
    Timeout(u64),
    Cancelled,
}

enum Start {
    Refused(String),
    Failed(String),
}

/// Every configured upstream of a session.
pub struct Upstreams {
    pub servers: Vec<Arc<Upstream>>,
}

impl std::fmt::Debug for Upstreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.servers.iter().map(|s| s.name.as_str()).collect();
        f.debug_struct("Upstreams")
            .field("servers", &names)
            .finish()
    }
}

impl Upstreams {
    pub fn new(env: &Env) -> Upstreams {
        Upstreams {
            servers: env
                .profile
                .mcp_servers
                .iter()
                .map(|(name, cfg)| Arc::new(Upstream::new(name.clone(), cfg.clone())))
                .collect(),
        }
    }

    /// Start every server (in parallel), so the catalog is ready for the first search.
    pub async fn start_all(&self, env: &Arc<Env>) {
        let mut handles = Vec::new();
        for s in &self.servers {
            let (s, env) = (Arc::clone(s), Arc::clone(env));
            handles.push(tokio::spawn(async move {
                let _ = s.ready(&env).await;
            }));
        }
        for h in handles {
            let _ = h.await;
        }
    }

    /// Every tool of every available server, and the servers that are not available.
    pub async fn catalog(&self, env: &Env) -> (Vec<Entry>, Vec<Unavailable>) {
        let mut tools = Vec::new();
        let mut problems = Vec::new();
        for s in &self.servers {
            match s.ready(env).await {
                Ok(_) => tools.extend(s.tools()),
                Err(u) => problems.push(u),
            }
            for c in s.collisions() {
                problems.push(s.unavailable(c));
            }
        }
        (tools, problems)
    }

    /// The tools of the `defer = false` servers, for `tools/list` (each server started
    /// first, within its startup timeout; one that fails lists nothing).
    pub async fn direct(&self, env: &Env) -> Vec<Entry> {
        let mut out = Vec::new();
        for s in self.servers.iter().filter(|s| !s.defer()) {
            if s.ready(env).await.is_ok() {
                out.extend(s.tools());
            }
        }
        out
    }

    pub fn server(&self, name: &str) -> Option<&Arc<Upstream>> {
        self.servers.iter().find(|s| s.name == name)
    }
}
