//! `whalebox serve --http`: the MCP server over Streamable HTTP. rmcp speaks the
//! protocol (sessions with `Mcp-Session-Id`, the 2026-07-28 stateless requests and
//! their header checks, `Host` and `Origin`); the front door (`whalebox-http`)
//! authenticates and limits; this module decides which session a request belongs to.
//!
//! - **A classic session** (an `initialize` below 2026-07-28) gets its own [`Env`]
//!   ([`Env::new_session`]): its own ledger, tasks, plan, todos, approvals, exec gate
//!   and private directories, in the server's fences. It is bound to the caller that
//!   opened it: another caller presenting its id is told it does not exist. At most
//!   `max_sessions` are open; one more `initialize` gets 503. A session ends on
//!   `DELETE`, after `idle_timeout_s` without a request, or when the server stops, and
//!   its tasks end with it.
//! - **Stateless requests** (2026-07-28) carry no session: their state (tasks started
//!   by one call and read by the next, the plan, todos) is kept per caller, in one
//!   [`Env`] per principal, dropped after `idle_timeout_s` unused with no task running.
//!
//! rmcp makes a handler with a factory that cannot see the request, so the route is
//! decided before rmcp runs and handed to the factory in a task-local (`ROUTE`).

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use whalebox_http::{Body, Endpoint, HttpSettings, Metrics, Principal};

use super::Server;
use crate::core::Registry;
use crate::session::Env;

/// What a request is, decided before rmcp sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RouteKind {
    /// An `initialize`: rmcp opens a classic session for it.
    NewSession,
    /// A request on an open classic session (rmcp may ask for a handler only to read a
    /// tool's schema).
    Existing,
    /// A 2026-07-28 request, or one rmcp will refuse.
    Stateless,
}

struct Route {
    kind: RouteKind,
    principal: Principal,
    /// The session's place under `max_sessions`, taken by the factory.
    slot: Mutex<Option<SessionSlot>>,
    /// The new session's Env, once the factory made it.
    env: Mutex<Option<Weak<Env>>>,
}

/// Who opened a classic session, its state, and when it was last used.
struct Owner {
    principal: String,
    env: Weak<Env>,
    /// When its last request began or its last answer ended.
    last_seen: Instant,
    /// Its requests whose answers are still under way (a call, an event stream): a
    /// session is idle only with none.
    active: usize,
}

tokio::task_local! {
    static ROUTE: Arc<Route>;
}

/// A classic session's place: while it lives, it counts under `max_sessions`; when rmcp
/// drops the session's handler (closed, expired, server stopping), its tasks are
/// stopped and its owner forgotten.
pub(super) struct SessionSlot {
    sessions: Arc<Shared>,
    env: Option<Arc<Env>>,
    session_id: Arc<std::sync::OnceLock<String>>,
}

impl Drop for SessionSlot {
    fn drop(&mut self) {
        if let Some(env) = self.env.take() {
            env.tasks.kill_all();
            env.check_git();
            self.sessions.metrics.session_closed();
            if let Some(id) = self.session_id.get() {
                tracing::info!(session = %id, "session closed");
            }
        }
        if let Some(id) = self.session_id.get() {
            self.sessions
                .owners
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(id);
        }
        self.sessions.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A principal's state for stateless requests.
struct Stateless {
    registry: Arc<Registry>,
    env: Arc<Env>,
    used: Instant,
}

/// What the sessions of one HTTP server share.
struct Shared {
    base: Arc<Env>,
    base_registry: Arc<Registry>,
    /// The instructions every session gets, made once from the server's own session.
    instructions: String,
    metrics: Arc<Metrics>,
    max_sessions: usize,
    idle: Duration,
    open: AtomicUsize,
    next: AtomicU64,
    /// Which principal opened each classic session, by session id.
    owners: Mutex<HashMap<String, Owner>>,
    /// rmcp's sessions (a client gone mid-call is told to them as a cancellation).
    manager: Arc<LocalSessionManager>,
    stateless: Mutex<HashMap<String, Stateless>>,
    /// Every session's Env, for the task gauge and the stop.
    envs: Mutex<Vec<Weak<Env>>>,
}

/// The `/mcp` endpoint: rmcp's Streamable HTTP service, with the routing above.
pub struct McpEndpoint {
    shared: Arc<Shared>,
    service: StreamableHttpService<Server, LocalSessionManager>,
}

impl McpEndpoint {
    /// `base`: the server's own session, built from the profile and already inside the
    /// sandbox; every HTTP session is made from it. `stop`: cancelled when the server
    /// stops (every session ends, its event streams close).
    pub fn new(
        registry: Registry,
        base: Arc<Env>,
        settings: &HttpSettings,
        metrics: Arc<Metrics>,
        stop: CancellationToken,
    ) -> McpEndpoint {
        let mut manager = LocalSessionManager::default();
        // rmcp's keep-alive counts from a session's last message, so it would close a
        // session in the middle of a long call; idle sessions are closed here instead
        // (`expire_idle`), counting from the end of the last answer.
        manager.session_config.keep_alive = None;
        let manager = Arc::new(manager);
        let stop_sweeping = stop.clone();
        let shared = Arc::new(Shared {
            manager: Arc::clone(&manager),
            instructions: super::instructions(&registry, &base),
            base,
            base_registry: Arc::new(registry),
            metrics,
            max_sessions: settings.max_sessions,
            idle: settings.idle_timeout,
            open: AtomicUsize::new(0),
            next: AtomicU64::new(1),
            owners: Mutex::default(),
            stateless: Mutex::default(),
            envs: Mutex::default(),
        });
        let mut config = StreamableHttpServerConfig::default()
            .with_cancellation_token(stop)
            .with_max_request_body_bytes(settings.max_body_bytes)
            .with_allowed_origins(settings.allowed_origins.clone());
        config = match settings.hosts_for() {
            Some(hosts) => config.with_allowed_hosts(hosts),
            None => config.disable_allowed_hosts(),
        };
        if !settings.allowed_origins.is_empty() {
            config = config.enforce_origin_validation();
        }
        let factory = Arc::clone(&shared);
        let service = StreamableHttpService::new(move || factory.handler(), manager, config);
        tokio::spawn(expire_idle(Arc::clone(&shared), stop_sweeping));
        McpEndpoint { shared, service }
    }

    /// Tasks running in every session (for the metrics).
    pub fn tasks_running(&self) -> usize {
        self.shared
            .live_envs()
            .iter()
            .map(|e| e.tasks.running())
            .sum()
    }

    /// Stop every session's tasks (the server is going away).
    pub fn kill_all_tasks(&self) {
        for env in self.shared.live_envs() {
            env.tasks.kill_all();
        }
        self.shared.base.tasks.kill_all();
    }
}

impl Shared {
    /// Keep a new session's Env in sight (the ended ones' places are reused).
    fn remember(&self, env: &Arc<Env>) {
        let mut envs = self.envs.lock().unwrap_or_else(|p| p.into_inner());
        envs.retain(|w| w.strong_count() > 0);
        envs.push(Arc::downgrade(env));
    }

    fn live_envs(&self) -> Vec<Arc<Env>> {
        let mut envs = self.envs.lock().unwrap_or_else(|p| p.into_inner());
        envs.retain(|w| w.strong_count() > 0);
        envs.iter().filter_map(Weak::upgrade).collect()
    }

    /// rmcp's handler factory: a handler for the request [`ROUTE`] describes.
    fn handler(self: &Arc<Self>) -> Result<Server, std::io::Error> {
        let route = ROUTE
            .try_with(Arc::clone)
            .map_err(|_| std::io::Error::other("a handler was asked for outside a request"))?;
        match route.kind {
            RouteKind::Existing => Ok(Server::with_instructions(
                Arc::clone(&self.base_registry),
                &self.base,
                self.instructions.clone(),
            )),
            RouteKind::NewSession => {
                let mut slot = route
                    .slot
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .take()
                    .ok_or_else(|| std::io::Error::other("no session slot reserved"))?;
                let name = format!("s{}", self.next.fetch_add(1, Ordering::SeqCst));
                let (registry, env) =
                    crate::tools::build_another_session(&self.base, &name, &route.principal.name)
                        .map_err(|e| std::io::Error::other(e.to_string()))?;
                self.remember(&env);
                slot.env = Some(Arc::clone(&env));
                *route.env.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::downgrade(&env));
                self.metrics.session_opened();
                tracing::info!(principal = %route.principal.name, env = %name, "session opened");
                Ok(
                    Server::with_instructions(Arc::new(registry), &env, self.instructions.clone())
                        .in_http(Arc::clone(&self.metrics), Some(slot)),
                )
            }
            RouteKind::Stateless => {
                let (registry, env) = self.stateless_for(&route.principal)?;
                Ok(
                    Server::with_instructions(registry, &env, self.instructions.clone())
                        .in_http(Arc::clone(&self.metrics), None),
                )
            }
        }
    }

    /// The principal's state for stateless requests, made on first use; others idle
    /// past `idle_timeout_s` with no task running are dropped on the way.
    fn stateless_for(
        &self,
        principal: &Principal,
    ) -> Result<(Arc<Registry>, Arc<Env>), std::io::Error> {
        let mut map = self.stateless.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, s| s.used.elapsed() < self.idle || s.env.tasks.running() > 0);
        if let Some(s) = map.get_mut(&principal.name) {
            s.used = Instant::now();
            return Ok((Arc::clone(&s.registry), Arc::clone(&s.env)));
        }
        let name = format!("p{}", self.next.fetch_add(1, Ordering::SeqCst));
        let (registry, env) =
            crate::tools::build_another_session(&self.base, &name, &principal.name)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
        self.remember(&env);
        let registry = Arc::new(registry);
        map.insert(
            principal.name.clone(),
            Stateless {
                registry: Arc::clone(&registry),
                env: Arc::clone(&env),
                used: Instant::now(),
            },
        );
        Ok((registry, env))
    }

    /// A classic session was closed (DELETE): its tasks stop now, not when a call still
    /// under way in it returns and rmcp drops its handler.
    fn ended(&self, id: &str) {
        let owner = self
            .owners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
        if let Some(env) = owner.and_then(|o| o.env.upgrade()) {
            tokio::task::spawn_blocking(move || env.tasks.kill_all());
        }
    }

    /// Take a place under `max_sessions`, or None when all are taken.
    fn reserve(self: &Arc<Self>) -> Option<SessionSlot> {
        let before = self.open.fetch_add(1, Ordering::SeqCst);
        let slot = SessionSlot {
            sessions: Arc::clone(self),
            env: None,
            session_id: Arc::default(),
        };
        if before >= self.max_sessions {
            drop(slot);
            return None;
        }
        Some(slot)
    }
}

/// Which kind of request this is: by its session header, else by its body.
fn route_kind(request: &Request<Full<Bytes>>, body: &[u8]) -> RouteKind {
    if request.headers().contains_key("mcp-session-id") {
        return RouteKind::Existing;
    }
    if request.method() != http::Method::POST {
        return RouteKind::Stateless;
    }
    let Ok(message) = serde_json::from_slice::<Value>(body) else {
        return RouteKind::Stateless;
    };
    // rmcp answers every `initialize` with the classic handshake and a session (one
    // naming 2026-07-28 negotiates down), so each is a new session here too.
    if message["method"] == "initialize" {
        RouteKind::NewSession
    } else {
        RouteKind::Stateless
    }
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(text.to_string())).boxed());
    *response.status_mut() = status;
    response
}

impl Endpoint for McpEndpoint {
    fn handle(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Pin<Box<dyn std::future::Future<Output = Response<Body>> + Send>> {
        let shared = Arc::clone(&self.shared);
        let service = self.service.clone();
        Box::pin(async move {
            let principal = request
                .extensions()
                .get::<Principal>()
                .cloned()
                .unwrap_or_else(|| Principal {
                    name: "local".into(),
                    scheme: whalebox_http::Scheme::None,
                    scopes: Vec::new(),
                });
            let body = request.body().clone();
            let body = body
                .collect()
                .await
                .map(|c| c.to_bytes())
                .unwrap_or_default();
            let kind = route_kind(&request, &body);
            let mut activity = None;
            if kind == RouteKind::Existing
                && let Some(id) = request
                    .headers()
                    .get("mcp-session-id")
                    .and_then(|v| v.to_str().ok())
            {
                let owner = shared
                    .owners
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get(id)
                    .map(|o| o.principal.clone());
                if owner.as_ref() == Some(&principal.name) {
                    activity = Some(Activity::begin(&shared, id));
                }
                if owner.is_some_and(|o| o != principal.name) {
                    tracing::warn!(principal = %principal.name, "refused another caller's session id");
                    // As for a session that does not exist: nothing said about whose it is.
                    return plain(StatusCode::NOT_FOUND, "Not Found: Session not found");
                }
            }
            let slot = if kind == RouteKind::NewSession {
                match shared.reserve() {
                    Some(slot) => Some(slot),
                    None => {
                        shared.metrics.session_refused();
                        let mut response = plain(
                            StatusCode::SERVICE_UNAVAILABLE,
                            &format!(
                                "Service Unavailable: {} sessions are open (max_sessions); \
                                 close one (DELETE) or try again later",
                                shared.max_sessions
                            ),
                        );
                        response.headers_mut().insert(
                            http::header::RETRY_AFTER,
                            http::HeaderValue::from_static("5"),
                        );
                        return response;
                    }
                }
            } else {
                None
            };
            let session_id = slot
                .as_ref()
                .map(|s| Arc::clone(&s.session_id))
                .unwrap_or_default();
            let session = request
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
                .map(String::from);
            let deleting = request.method() == http::Method::DELETE;
            // A call on a classic session whose client goes away before the answer is
            // cancelled, as if the client had sent notifications/cancelled.
            let call_id = match (&session, serde_json::from_slice::<Value>(&body)) {
                (Some(_), Ok(m)) if m["method"].is_string() && !m["id"].is_null() => {
                    Some(m["id"].clone())
                }
                _ => None,
            };
            let route = Arc::new(Route {
                kind,
                principal: principal.clone(),
                slot: Mutex::new(slot),
                env: Mutex::new(None),
            });
            let response = ROUTE
                .scope(Arc::clone(&route), service.handle(request))
                .await;
            if deleting
                && response.status().is_success()
                && let Some(id) = &session
            {
                shared.ended(id);
            }
            let cancel = match (session, call_id) {
                (Some(session), Some(call)) => Some((Arc::clone(&shared.manager), session, call)),
                _ => None,
            };
            let response = if cancel.is_some() || activity.is_some() {
                let (parts, body) = response.into_parts();
                let body = Tracked {
                    inner: body,
                    cancel,
                    _activity: activity,
                };
                Response::from_parts(parts, body.boxed())
            } else {
                response
            };
            if kind == RouteKind::NewSession
                && let Some(id) = response
                    .headers()
                    .get("mcp-session-id")
                    .and_then(|v| v.to_str().ok())
            {
                let _ = session_id.set(id.to_string());
                let env = route
                    .env
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone()
                    .unwrap_or_default();
                shared
                    .owners
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(
                        id.to_string(),
                        Owner {
                            principal: principal.name.clone(),
                            env,
                            last_seen: Instant::now(),
                            active: 0,
                        },
                    );
            }
            // A slot the factory did not take (rmcp refused the request first) is given back here.
            drop(route);
            response
        })
    }
}

/// A classic session's request under way: the session is not idle until it ends.
struct Activity {
    shared: Arc<Shared>,
    session: String,
}

impl Activity {
    fn begin(shared: &Arc<Shared>, session: &str) -> Activity {
        if let Some(o) = shared
            .owners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(session)
        {
            o.active += 1;
            o.last_seen = Instant::now();
        }
        Activity {
            shared: Arc::clone(shared),
            session: session.to_string(),
        }
    }
}

impl Drop for Activity {
    fn drop(&mut self) {
        if let Some(o) = self
            .shared
            .owners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(&self.session)
        {
            o.active = o.active.saturating_sub(1);
            o.last_seen = Instant::now();
        }
    }
}

/// Close the classic sessions idle for `idle_timeout_s` (no request under way, none
/// begun since), until the server stops.
async fn expire_idle(shared: Arc<Shared>, stop: CancellationToken) {
    use rmcp::transport::streamable_http_server::session::SessionManager;
    let every = (shared.idle / 4).clamp(Duration::from_millis(250), Duration::from_secs(5));
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        let idle: Vec<String> = shared
            .owners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|(_, o)| o.active == 0 && o.last_seen.elapsed() >= shared.idle)
            .map(|(id, _)| id.clone())
            .collect();
        for id in idle {
            tracing::info!(session = %id, "session closed: idle for {} s", shared.idle.as_secs());
            let _ = shared.manager.close_session(&id.clone().into()).await;
            shared.ended(&id);
        }
    }
}

/// A response body that keeps its session's [`Activity`] until it is done and, dropped
/// before its end (the client went away), tells rmcp the call was cancelled, so the tool
/// stops waiting.
struct Tracked {
    inner: Body,
    cancel: Option<(Arc<LocalSessionManager>, String, Value)>,
    _activity: Option<Activity>,
}

impl http_body::Body for Tracked {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let std::task::Poll::Ready(None) = polled {
            self.cancel = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        use rmcp::transport::streamable_http_server::session::SessionManager;
        let Some((manager, session, call)) = self.cancel.take() else {
            return;
        };
        tracing::info!(%session, %call, "the client went away before the answer: cancelling the call");
        let Ok(message) = serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": call, "reason": "the client disconnected"},
        })) else {
            tracing::warn!("cannot build the cancellation of call {call}");
            return;
        };
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let id: rmcp::transport::streamable_http_server::SessionId = session.into();
                if let Err(e) = manager.accept_message(&id, message).await {
                    tracing::debug!("cancellation not delivered: {e}");
                }
            });
        }
    }
}
