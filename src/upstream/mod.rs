//! Upstream MCP servers that whalebox starts and fronts (the `mcp` group). Each runs like
//! a shell task: under a supervisor, in the task's Landlock layer and (where it can be
//! installed) the kernel exec gate, with a rebuilt environment and the server's private
//! TMPDIR, in its own process group that dies with whalebox. Its command line is put to
//! the exec policy first; a refused server is not started and says so. whalebox speaks to
//! it with rmcp's client over the server's stdin and stdout; its stderr is kept (the last
//! lines) for the reports of a server that failed.
//!
//! A server that fails to start, exits or crashes never takes whalebox down: it is
//! `unavailable` with the reason and its last stderr lines. A server that was running
//! is started again by the next call; one that keeps failing (its start failed, or it
//! stopped again before a call worked) is started at most once per backoff period, from
//! a second, doubling up to a minute. When its stderr says permission was denied, the
//! reason names what the sandbox refused (the command resolved through its symlinks,
//! its `#!` interpreter, or a path it printed) and the profile line that allows it.

pub mod catalog;
mod launch;

use launch::Start;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use serde_json::{Map, Value};
use tokio::sync::Mutex as AsyncMutex;

use crate::profile::McpServerSection;
use crate::session::Env;
use catalog::Entry;

/// How many stderr lines of a server are kept.
const STDERR_LINES: usize = 20;
/// A server that ran this long before it stopped starts again at once, whatever failed
/// before it.
const HEALTHY: Duration = Duration::from_secs(60);

/// The backoff after `failures` failures in a row: 1 s, doubling up to a minute.
fn backoff(failures: u32) -> Duration {
    Duration::from_secs(1 << failures.saturating_sub(1).min(6)).min(Duration::from_secs(60))
}

/// `why`, and when the server is started again: `wait` after the failure (the
/// `failures`-th in a row), `left` from now.
fn when_again(why: &str, failures: u32, wait: Duration, left: Duration) -> String {
    if wait.is_zero() {
        format!("{why}; it is started again on the next call")
    } else if failures < 2 {
        format!(
            "{why}; it is started again on a call after {} s",
            left.as_secs_f64().ceil()
        )
    } else {
        format!(
            "{why}; it keeps failing, so it is started again on a call after {} s",
            left.as_secs_f64().ceil()
        )
    }
}

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
    /// This failure is the `failures`-th in a row without a call that worked; the
    /// server is started again `wait` after `at`.
    Failed {
        why: String,
        at: Instant,
        failures: u32,
        wait: Duration,
    },
    /// The exec policy refused its command line: never started.
    Refused(String),
}

struct Connection {
    client: RunningService<RoleClient, Listener>,
    pid: i32,
    started: Instant,
    /// Set when its stderr reached its end (the whole process group is gone).
    stderr_done: Arc<AtomicBool>,
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
    /// Failures in a row: starts that failed, and stops before a call worked.
    failures: AtomicU32,
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
            failures: AtomicU32::new(0),
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

    /// The running connection's client and process group, starting (or restarting) the
    /// server if needed.
    async fn ready(&self, env: &Env) -> Result<(rmcp::Peer<RoleClient>, i32), Unavailable> {
        let mut state = self.state.lock().await;
        if let State::Ready(c) = &*state {
            if !c.client.is_closed() {
                let (peer, pid) = (c.client.peer().clone(), c.pid);
                if self.stale.swap(false, Ordering::SeqCst) {
                    let timeout = Duration::from_millis(self.cfg.startup_timeout_ms);
                    if let Ok(Ok(listed)) =
                        tokio::time::timeout(timeout, peer.list_all_tools()).await
                    {
                        self.set_tools(listed);
                    }
                }
                return Ok((peer, pid));
            }
            // It exited since it last answered: started again now, unless it keeps failing.
            let (started, done) = (c.started, Arc::clone(&c.stderr_done));
            *state = self.stopped("it exited".into(), started);
            wait_for(&done, Duration::from_millis(500)).await;
            if let State::Failed { why, .. } = &mut *state {
                *why = self.fenced(env, std::mem::take(why));
            }
        }
        match &*state {
            State::Refused(why) => return Err(self.unavailable(why.clone())),
            State::Failed {
                why,
                at,
                failures,
                wait,
            } if at.elapsed() < *wait => {
                let left = wait.saturating_sub(at.elapsed());
                return Err(self.unavailable(when_again(why, *failures, *wait, left)));
            }
            _ => {}
        }
        match self.start(env).await {
            Ok(conn) => {
                let (peer, pid) = (conn.client.peer().clone(), conn.pid);
                *state = State::Ready(conn);
                Ok((peer, pid))
            }
            Err(Start::Refused(why)) => {
                *state = State::Refused(why.clone());
                Err(self.unavailable(why))
            }
            Err(Start::Failed(why)) => {
                let failures = self.failures.fetch_add(1, Ordering::SeqCst) + 1;
                let wait = backoff(failures);
                *state = State::Failed {
                    why: why.clone(),
                    at: Instant::now(),
                    failures,
                    wait,
                };
                Err(self.unavailable(when_again(&why, failures, wait, wait)))
            }
        }
    }

    /// The state of a server that was running and stopped (`why`): the first time, it is
    /// started again on the next call; if no call worked since it last failed, it waits
    /// its backoff. One that ran for [`HEALTHY`] starts afresh.
    fn stopped(&self, why: String, started: Instant) -> State {
        if started.elapsed() >= HEALTHY {
            self.failures.store(0, Ordering::SeqCst);
        }
        let failures = self.failures.fetch_add(1, Ordering::SeqCst) + 1;
        State::Failed {
            why,
            at: Instant::now(),
            failures,
            wait: match failures {
                1 => Duration::ZERO,
                n => backoff(n - 1),
            },
        }
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
        let (peer, pid) = self.ready(env).await.map_err(CallFailure::Unavailable)?;
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let broken = |e: rmcp::ServiceError| async move {
            // The connection is broken: drop it (its process group is killed); the next
            // call starts the server again, unless it keeps failing.
            let mut why = format!("it stopped during a call: {e}");
            let mut state = self.state.lock().await;
            // (Unless another call found it first, and perhaps started it again.)
            if let State::Ready(c) = &*state
                && c.pid == pid
            {
                let (started, done) = (c.started, Arc::clone(&c.stderr_done));
                *state = self.stopped(why.clone(), started);
                wait_for(&done, Duration::from_millis(500)).await;
                why = self.fenced(env, why);
                if let State::Failed {
                    why: kept,
                    failures,
                    wait,
                    ..
                } = &mut *state
                {
                    kept.clone_from(&why);
                    why = when_again(&why, *failures, *wait, *wait);
                }
            }
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
                Ok(Ok(ServerResult::CallToolResult(result))) => {
                    // It works: a later stop is restarted at once.
                    self.failures.store(0, Ordering::SeqCst);
                    Ok(result)
                }
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

/// Wait until `flag` is set, at most `limit`.
async fn wait_for(flag: &AtomicBool, limit: Duration) {
    let until = Instant::now() + limit;
    while !flag.load(Ordering::SeqCst) && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restarts_wait_only_when_a_server_keeps_failing() {
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(3), Duration::from_secs(4));
        assert_eq!(backoff(30), Duration::from_secs(60));
        let up = Upstream::new("s".into(), toml::from_str("command = \"x\"").unwrap());
        let crash = |up: &Upstream| match up.stopped("it exited".into(), Instant::now()) {
            State::Failed { wait, .. } => wait,
            _ => unreachable!(),
        };
        // The first stop: at once; again before a call worked: 1 s, then 2 s.
        assert_eq!(crash(&up), Duration::ZERO);
        assert_eq!(crash(&up), Duration::from_secs(1));
        assert_eq!(crash(&up), Duration::from_secs(2));
        // A call that worked forgets the failures.
        up.failures.store(0, Ordering::SeqCst);
        assert_eq!(crash(&up), Duration::ZERO);
        // So does a run longer than HEALTHY.
        assert_eq!(crash(&up), Duration::from_secs(1));
        match up.stopped("it exited".into(), Instant::now() - HEALTHY) {
            State::Failed { wait, .. } => assert_eq!(wait, Duration::ZERO),
            _ => unreachable!(),
        }
    }
}
