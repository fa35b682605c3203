//! The MCP server: a thin rmcp adapter over the registry. Tools are listed from the
//! specs with their raw JSON schemas and annotations; a call goes through
//! [`Registry::dispatch`] and comes back as `content` (the envelope's text, an error's
//! led by its code), `_meta` (the whole envelope, which no client shows the model) and
//! `isError`; `structuredContent` only when the profile asks. The session's limits are
//! fitted to the client at its first request (`fit`). rmcp handles both the
//! `initialize` handshake (2025-06-18 / 2025-11-25) and the 2026-07-28 lifecycle
//! (`server/discover` and per-request metadata). A call that needs a person's answer
//! asks through `ask`; the session's plan and todos are resources (`resources`).

mod ask;
mod fit;
pub mod http;
mod resources;

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    CustomResult, ErrorCode, Implementation, InputResponses, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig, SubscribeRequestParams,
    SubscriptionFilter, ToolAnnotations, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};

use crate::boundary::{ApprovalRequest, Approver, ApproverSlot, approval_form, approval_of};
use crate::core::{CallContext, Code, Envelope, Progress, Registry, ToolSpec};
use crate::session::Env;

/// How long a person has to answer an approval (the gate waits 120 s).
const APPROVAL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(110);

/// An approver that asks the client's user through MCP elicitation, when the client
/// declared it can (form mode). Called on the decision server's threads, so it blocks
/// on the runtime.
fn elicitation_approver(context: &RequestContext<RoleServer>) -> Option<Approver> {
    let asker = ask::elicitation_asker(context)?;
    let handle = tokio::runtime::Handle::current();
    Some(Arc::new(move |req: &ApprovalRequest| {
        let answer = handle.block_on(asker(approval_form(req), APPROVAL_TIMEOUT));
        // None: nobody answered (no reply, or the client dismissed the question itself),
        // and the profile's `on_ask` decides, as when no one can be asked.
        approval_of(&answer).map(|a| (a, "the user (MCP elicitation)"))
    }))
}

pub struct Server {
    registry: Arc<Registry>,
    /// The limits and tool hints for the client, fixed at its first request.
    fit: std::sync::OnceLock<fit::Fit>,
    instructions: String,
    /// Where the exec boundary looks for someone to answer `ask`.
    approver: ApproverSlot,
    questions: ask::Questions,
    /// Approvals parked for the 2026-07-28 lifecycle.
    pending: crate::boundary::PendingApprovals,
    resources: resources::Resources,
    /// How long a sealed question stays answerable.
    question_ttl: std::time::Duration,
    env: Arc<Env>,
    /// The directly listed upstream tools, made once.
    direct: tokio::sync::OnceCell<Vec<crate::core::ForwardedTool>>,
    /// Over HTTP: where calls are counted.
    metrics: Option<Arc<whalebox_http::Metrics>>,
    /// Over HTTP, a classic session's place: dropped with this handler when the
    /// session ends, which stops its tasks.
    _session: Option<http::SessionSlot>,
}

impl Server {
    pub fn new(registry: Arc<Registry>, env: &Arc<Env>) -> Self {
        let instructions = instructions(&registry, env);
        Server::with_instructions(registry, env, instructions)
    }

    /// A server whose instructions were made already (an HTTP session's are the
    /// server's: making them would start the session's exec gate before any command).
    pub fn with_instructions(
        registry: Arc<Registry>,
        env: &Arc<Env>,
        instructions: String,
    ) -> Self {
        Server {
            instructions,
            registry,
            fit: std::sync::OnceLock::new(),
            approver: env.approver.clone(),
            questions: ask::Questions::new(),
            pending: env.approvals.clone(),
            resources: resources::Resources::new(Arc::clone(env)),
            question_ttl: std::time::Duration::from_millis(env.profile.input.timeout_ms)
                .max(APPROVAL_TIMEOUT),
            env: Arc::clone(env),
            direct: tokio::sync::OnceCell::new(),
            metrics: None,
            _session: None,
        }
    }

    /// This handler serves over HTTP: count its calls, and hold its session's place.
    fn in_http(
        mut self,
        metrics: Arc<whalebox_http::Metrics>,
        session: Option<http::SessionSlot>,
    ) -> Self {
        self.metrics = Some(metrics);
        self._session = session;
        self
    }

    /// Serve on stdin/stdout until the client goes away.
    pub async fn serve_stdio(self) -> Result<(), String> {
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| format!("MCP session failed to start: {e}"))?;
        let reason = running
            .waiting()
            .await
            .map_err(|e| format!("MCP session ended abnormally: {e}"))?;
        tracing::info!(?reason, "MCP session ended");
        Ok(())
    }
}

/// The JSON Schema of the envelope, as every tool's `outputSchema`.
fn envelope_schema() -> Map<String, Value> {
    let schema = json!({
        "type": "object",
        "properties": {
            "ok": {"type": "boolean"},
            "code": {"type": "string"},
            "text": {"type": "string"},
            "data": {},
            "repairs": {"type": "array", "items": {"type": "object"}}
        },
        "required": ["ok", "code", "text", "data", "repairs"]
    });
    match schema {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// One of whalebox's tools as MCP lists it: the spec, the client's hints in `_meta`,
/// and the envelope's schema only when the profile asks for structured output.
fn mcp_tool(spec: &ToolSpec, fit: &fit::Fit, structured: bool) -> rmcp::model::Tool {
    let schema = match &spec.input_schema {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    let a = spec.annotations;
    let mut annotations = ToolAnnotations::new()
        .read_only(a.read_only)
        .destructive(a.destructive)
        .idempotent(a.idempotent)
        .open_world(a.open_world);
    annotations.title = spec.title.clone();
    let mut tool = rmcp::model::Tool::new(spec.name.clone(), spec.description.clone(), schema);
    tool.title = spec.title.clone();
    tool.annotations = Some(annotations);
    if structured {
        tool.output_schema = Some(Arc::new(envelope_schema()));
    }
    if !fit.tool_meta.is_empty() {
        tool.meta = Some(rmcp::model::MetaObject(fit.tool_meta.clone()));
    }
    tool
}

/// The server's instructions: short, because Codex's code mode repeats them after
/// every tool's description, and free of whitespace runs. The tools describe
/// themselves; this says what holds across them.
fn instructions(registry: &Registry, env: &Env) -> String {
    let mut text = format!(
        "Tools for the workspace {} (relative paths start there",
        env.guard.workspace().display()
    );
    if !env.guard.read_roots().is_empty() {
        let roots: Vec<String> = env
            .guard
            .read_roots()
            .iter()
            .map(|r| r.display().to_string())
            .collect();
        text.push_str(&format!("; read-only: {}", roots.join(", ")));
    }
    text.push_str(
        "). An error starts with its code (as `search_not_found:`) and ends with the next step.",
    );
    let names = registry.names();
    if names.contains(&"update_plan") || names.contains(&"todo_add") {
        text.push_str(" The plan and todos are shown to the person.");
    }
    if names.contains(&"request_user_input") {
        text.push_str(" request_user_input asks the person; never for secrets.");
    }
    text.push_str(&format!(" Sandbox: {}.", env.sandbox_status().brief()));
    if names.contains(&"shell_run") && env.policy.is_some() {
        text.push_str(&match env.shell_boundary() {
            Ok(crate::session::ShellBoundary::Gated { status, .. }) if status["kernel"] == true => {
                " Exec policy: every program a command starts is decided; a refused one fails \
                 with EACCES after a `whalebox: denied` line."
                    .to_string()
            }
            Ok(crate::session::ShellBoundary::Gated { status, .. }) => format!(
                " Exec policy: partial: {}.",
                status["not_covered"].as_str().unwrap_or_default()
            ),
            Ok(crate::session::ShellBoundary::Ungated { why, .. }) => {
                format!(" Exec policy: not enforced ({why}).")
            }
            Err(why) => {
                format!(" Shell commands are refused: the exec boundary is required, but {why}.")
            }
        });
    }
    if env.sandbox.is_some() {
        text.push_str(" Commands may write only in the workspace and $TMPDIR, not /tmp.");
    }
    if names.contains(&"shell_run")
        && let Some(kernel) = env.network_kernel_enforced()
    {
        let net = &env.profile.network;
        let hosts = if net.allow_domains.is_empty() {
            "no host".to_string()
        } else {
            net.allow_domains.join(", ")
        };
        let others = match net.on_new_domain {
            crate::profile::network::OnNewDomain::Allow => "any other host",
            crate::profile::network::OnNewDomain::Ask => "others after a person allows them",
            crate::profile::network::OnNewDomain::Deny => "nothing else",
        };
        text.push_str(&format!(
            " Network: through whalebox's proxy (HTTP_PROXY is set), {}; reachable: {hosts}; {others}.",
            if kernel {
                "enforced by the kernel"
            } else {
                "not enforced"
            }
        ));
    }
    text
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let capabilities = if self.resources.uris().is_empty() {
            ServerCapabilities::builder().enable_tools().build()
        } else {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_subscribe()
                .build()
        };
        ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION"))
                    .with_title("whalebox"),
            )
            .with_instructions(self.instructions.clone())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let fit = self.fit(&context);
        let structured = self.env.profile.output.structured;
        let mut tools: Vec<rmcp::model::Tool> = self
            .registry
            .described_specs()
            .iter()
            .map(|spec| mcp_tool(spec, fit, structured))
            .collect();
        // Upstream tools of `defer = false` servers, under their qualified names. The
        // list is fixed the first time it is made (it must not change as a side effect
        // of other calls).
        let direct = self
            .direct
            .get_or_init(|| async {
                match self.registry.forwarded() {
                    Some(tools) => tools.list().await,
                    None => Vec::new(),
                }
            })
            .await;
        tools.extend(direct.iter().map(|e| {
            let schema = match &e.input_schema {
                Value::Object(m) => m.clone(),
                _ => Map::new(),
            };
            let mut tool = rmcp::model::Tool::new(e.name.clone(), e.description.clone(), schema);
            tool.annotations = serde_json::from_value(e.annotations.clone()).ok();
            tool
        }));
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        self.fit(&context);
        if !self.approver.is_set() {
            if ask::can_retry(&context) {
                // No server-initiated requests: questions wait for a call to carry them.
                self.approver.set(self.pending.approver(APPROVAL_TIMEOUT));
            } else if !ask::modern(&context)
                && let Some(approver) = elicitation_approver(&context)
            {
                self.approver.set(approver);
            }
        }
        Ok(self
            .call(
                &request.name,
                args,
                &context,
                request.input_responses.as_ref(),
                request.request_state.as_deref(),
            )
            .await)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(self.resources.list()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        self.resources.read(&request.uri).map(Into::into)
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.resources.subscribe(&request.uri, context.peer.clone())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.resources.unsubscribe(&request.uri);
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let ours = self.resources.uris();
        let mut filter = SubscriptionFilter::new();
        filter.resource_subscriptions = requested.resource_subscriptions.as_ref().map(|uris| {
            uris.iter()
                .filter(|u| ours.contains(&u.as_str()))
                .cloned()
                .collect()
        });
        Some(filter)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        self.resources.listen(context).await;
        Ok(())
    }

    /// rmcp hands over a `tools/call` whose params do not deserialize (arguments sent as
    /// a JSON string, a number …) as a custom request. Answer it like any call, so the
    /// registry can repair or explain it instead of the client seeing "method not found".
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        if request.method != "tools/call" {
            return Err(McpError::new(
                ErrorCode::METHOD_NOT_FOUND,
                request.method,
                None,
            ));
        }
        let params = request.params.unwrap_or(Value::Null);
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Err(McpError::invalid_params(
                "tools/call needs a string `name` naming the tool",
                None,
            ));
        };
        let args = params.get("arguments").cloned().unwrap_or(Value::Null);
        self.fit(&context);
        let responses: Option<InputResponses> = params
            .get("inputResponses")
            .and_then(|r| serde_json::from_value(r.clone()).ok());
        let state = params.get("requestState").and_then(Value::as_str);
        let response = self
            .call(name, args, &context, responses.as_ref(), state)
            .await;
        let mut value = match &response {
            CallToolResponse::InputRequired(r) => serde_json::to_value(r),
            CallToolResponse::Complete(r) => serde_json::to_value(r),
            _ => return Err(McpError::internal_error("unexpected call outcome", None)),
        }
        .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        if !ask::modern(&context)
            && let Value::Object(map) = &mut value
        {
            // Older protocol versions have no `resultType`.
            map.remove("resultType");
        }
        Ok(CustomResult::new(value))
    }
}

impl Server {
    /// The fit for this session's client, made at its first request: the classic
    /// lifecycle names the client at `initialize`, the 2026-07-28 one in each request's
    /// `_meta`. The limits it sets hold for the rest of the session.
    fn fit(&self, context: &RequestContext<RoleServer>) -> &fit::Fit {
        self.fit.get_or_init(|| {
            let client = context
                .meta
                .client_info()
                .map(|i| i.name)
                .or_else(|| context.peer.peer_info().map(|p| p.client_info.name.clone()))
                .unwrap_or_default();
            let fit = fit::fit_for(
                &client,
                &self.env.profile.output,
                &self.env.profile.shell,
                &|name| std::env::var(name).ok(),
            );
            self.env.limits.set(fit.max_chars, fit.max_yield_ms);
            tracing::info!(
                client = %fit.client,
                max_chars = fit.max_chars,
                max_yield_ms = fit.max_yield_ms,
                from = fit.source,
                "limits fitted to the client"
            );
            fit
        })
    }

    /// The MCP result of an envelope, as this session's profile wants it.
    fn result(&self, envelope: &Envelope) -> CallToolResult {
        tool_result(envelope, self.env.profile.output.structured)
    }

    async fn call(
        &self,
        name: &str,
        args: Value,
        context: &RequestContext<RoleServer>,
        responses: Option<&InputResponses>,
        state: Option<&str>,
    ) -> CallToolResponse {
        let ask = match self
            .questions
            .asking(name, &args, context, responses, state)
        {
            Ok(ask) => ask,
            Err(why) => {
                return CallToolResponse::Complete(self.result(&Envelope::error(
                    Code::InvalidInput,
                    &why,
                    "call the tool again without requestState to be asked afresh",
                    Value::Null,
                )));
            }
        };
        let progress = match context.meta.get_progress_token() {
            Some(token) => {
                let peer = context.peer.clone();
                Progress::new(move |update| {
                    let mut param = ProgressNotificationParam::new(token.clone(), update.progress);
                    param.total = update.total;
                    param.message = update.message;
                    let peer = peer.clone();
                    tokio::spawn(async move {
                        let _ = peer.notify_progress(param).await;
                    });
                })
            }
            None => Progress::default(),
        };
        let ctx = CallContext {
            cancel: context.ct.clone(),
            progress,
            ask,
        };
        // An upstream tool called by its qualified name (listed directly, or found by
        // tool_search) goes through call_tool.
        let counted = self
            .metrics
            .as_ref()
            .map(|m| (m.call_started(), std::time::Instant::now()));
        let envelope = if self.registry.spec(name).is_none()
            && name.starts_with("mcp__")
            && self.registry.spec("call_tool").is_some()
        {
            let routed = serde_json::json!({"name": name, "arguments": args.clone()});
            self.registry.dispatch("call_tool", routed, ctx).await
        } else {
            self.registry.dispatch(name, args.clone(), ctx).await
        };
        if let (Some(metrics), Some((_in_flight, started))) = (&self.metrics, counted) {
            let denied = matches!(
                envelope.code,
                Code::PathDenied | Code::DeniedByPolicy | Code::UrlDenied
            );
            // Tool names come from the client: only real ones become labels.
            let known = self.registry.spec(name).is_some()
                || (name.starts_with("mcp__") && envelope.code != Code::UnknownTool);
            let label = if known { name } else { "unknown" };
            metrics.call_ended(label, &envelope.code.to_string(), started.elapsed(), denied);
        }
        if envelope.code == Code::InputRequired {
            return match self.questions.input_required(
                name,
                &args,
                &envelope.data,
                self.question_ttl,
            ) {
                Some(r) => CallToolResponse::InputRequired(r),
                None => CallToolResponse::Complete(self.result(&Envelope::error(
                    Code::Internal,
                    "whalebox could not build the question for the client",
                    "this is a whalebox bug; report it",
                    Value::Null,
                ))),
            };
        }
        CallToolResponse::Complete(self.result(&envelope))
    }
}

/// Where every result carries the whole envelope, in `_meta`: clients hand the model
/// `content` (and Claude Code and Codex hand it `structuredContent` when there is one),
/// never `_meta`, so programs read codes and data there without the model paying for it.
pub const ENVELOPE_META_KEY: &str = "whalebox/envelope";

/// The MCP result of an envelope: the text as content (an error's text led by its code,
/// which clients do not otherwise show the model), the envelope in `_meta`, `isError`
/// when it is not ok, and the envelope again as `structuredContent` when `structured`.
fn tool_result(envelope: &Envelope, structured: bool) -> CallToolResult {
    let mut result = CallToolResult::default();
    let text = if envelope.ok {
        envelope.text.clone()
    } else {
        format!("{}: {}", envelope.code, envelope.text)
    };
    result.content = vec![ContentBlock::text(text)];
    // An upstream tool's images, audio and resources pass through after the text.
    if let Some(blocks) = envelope.data["upstream_content"].as_array() {
        result.content.extend(
            blocks
                .iter()
                .filter(|b| b["type"] != "text")
                .filter_map(|b| serde_json::from_value::<ContentBlock>(b.clone()).ok()),
        );
    }
    result.is_error = Some(!envelope.ok);
    let whole = serde_json::to_value(envelope).ok();
    if let Some(whole) = &whole {
        let mut meta = Map::new();
        meta.insert(ENVELOPE_META_KEY.into(), whole.clone());
        result.meta = Some(rmcp::model::MetaObject(meta));
    }
    if structured {
        result.structured_content = whole;
    }
    result
}
