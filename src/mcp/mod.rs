//! The MCP server: a thin rmcp adapter over the registry. Tools are listed from the
//! frozen specs with their raw JSON schemas and annotations; a call goes through
//! [`Registry::dispatch`] and comes back as `content` (the envelope's text),
//! `structuredContent` (the whole envelope) and `isError`. rmcp handles both the
//! `initialize` handshake (2025-06-18 / 2025-11-25) and the 2026-07-28 lifecycle
//! (`server/discover` and per-request metadata).

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    CustomResult, ErrorCode, Implementation, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProtocolVersion, ServerCapabilities, ServerConfig, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};

use crate::boundary::{Approval, ApprovalRequest, Approver, ApproverSlot};
use crate::core::{CallContext, Progress, Registry, ToolSpec};
use crate::tools::Env;

/// How long a person has to answer an approval (the gate waits 120 s).
const APPROVAL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(110);

/// An approver that asks the client's user through MCP elicitation, when the client
/// declared it can (form mode). Called on the decision server's threads, so it blocks
/// on the runtime.
fn elicitation_approver(context: &RequestContext<RoleServer>) -> Option<Approver> {
    use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema, EnumSchema};
    use rmcp::service::ElicitationMode;
    let peer = context.peer.clone();
    if !peer
        .supported_elicitation_modes()
        .contains(&ElicitationMode::Form)
    {
        return None;
    }
    let handle = tokio::runtime::Handle::current();
    Some(Arc::new(move |req: &ApprovalRequest| {
        let choices = EnumSchema::builder(vec![
            "allow_once".to_string(),
            "allow_session".to_string(),
            "deny".to_string(),
        ])
        .build();
        let schema = ElicitationSchema::builder()
            .required_enum_schema("decision", choices)
            .build()
            .ok()?;
        let task = req
            .task_id
            .as_deref()
            .map(|t| format!(" (task {t})"))
            .unwrap_or_default();
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: format!(
                "whalebox: the agent wants to run `{}`{task}. The exec policy asks a person: {}. Allow it?",
                req.command, req.reason
            ),
            requested_schema: schema,
        };
        let answer = handle
            .block_on(peer.create_elicitation_with_timeout(params, Some(APPROVAL_TIMEOUT)))
            .ok()?;
        let choice = match answer.action {
            ElicitationAction::Accept => {
                match answer.content.as_ref().and_then(|c| c["decision"].as_str()) {
                    Some("allow_once") => Approval::Once,
                    Some("allow_session") => Approval::Session,
                    _ => Approval::Deny,
                }
            }
            _ => Approval::Deny,
        };
        Some((choice, "the user (MCP elicitation)"))
    }))
}

pub struct Server {
    registry: Arc<Registry>,
    tools: Vec<rmcp::model::Tool>,
    instructions: String,
    /// Where the exec boundary looks for someone to answer `ask`.
    approver: ApproverSlot,
}

impl Server {
    pub fn new(registry: Arc<Registry>, env: &Env) -> Self {
        let tools = registry.specs().map(mcp_tool).collect();
        Server {
            instructions: instructions(&registry, env),
            registry,
            tools,
            approver: env.approver.clone(),
        }
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

fn mcp_tool(spec: &ToolSpec) -> rmcp::model::Tool {
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
    tool.output_schema = Some(Arc::new(envelope_schema()));
    tool
}

fn instructions(registry: &Registry, env: &Env) -> String {
    let mut text = format!(
        "whalebox tools for the workspace {}. Relative paths are relative to it. Every result \
         is an envelope {{ok, code, text, data, repairs}}; errors end with the next step to take.",
        env.guard.workspace().display()
    );
    if !env.guard.read_roots().is_empty() {
        let roots: Vec<String> = env
            .guard
            .read_roots()
            .iter()
            .map(|r| r.display().to_string())
            .collect();
        text.push_str(&format!(" Read-only roots: {}.", roots.join(", ")));
    }
    text.push_str(&format!(" Tools: {}.", registry.names().join(", ")));
    text.push_str(&format!(" Sandbox: {}.", env.sandbox_status().summary()));
    if registry.names().contains(&"shell_run") && env.policy.is_some() {
        text.push_str(&match env.shell_boundary() {
            Ok(crate::tools::ShellBoundary::Gated { status, .. }) if status["kernel"] == true => {
                " Exec policy: every program any command starts is decided by the policy; a \
                 refused one fails with EACCES after a `whalebox: denied` line, and the result \
                 lists it."
                    .to_string()
            }
            Ok(crate::tools::ShellBoundary::Gated { status, .. }) => format!(
                " Exec policy: partial: {}.",
                status["not_covered"].as_str().unwrap_or_default()
            ),
            Ok(crate::tools::ShellBoundary::Ungated { why, .. }) => {
                format!(" Exec policy: not enforced ({why}).")
            }
            Err(why) => {
                format!(" Shell commands are refused: the exec boundary is required, but {why}.")
            }
        });
    }
    if env.sandbox.is_some() {
        text.push_str(&format!(
            " Shell commands may write only in the workspace and $TMPDIR ({}), not /tmp.",
            env.private.tmp.display()
        ));
    }
    text
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION"))
                    .with_title("whalebox"),
            )
            .with_instructions(self.instructions.clone())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        if !self.approver.is_set()
            && let Some(approver) = elicitation_approver(&context)
        {
            self.approver.set(approver);
        }
        let result = self.call(&request.name, args, &context).await;
        Ok(CallToolResponse::Complete(result))
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
        let result = self.call(name, args, &context).await;
        let mut value = serde_json::to_value(&result)
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let modern = context
            .protocol_version()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        if !modern && let Value::Object(map) = &mut value {
            // Older protocol versions have no `resultType`.
            map.remove("resultType");
        }
        Ok(CustomResult::new(value))
    }
}

impl Server {
    async fn call(
        &self,
        name: &str,
        args: Value,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
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
        };
        let envelope = self.registry.dispatch(name, args, ctx).await;
        let mut result = CallToolResult::default();
        result.content = vec![ContentBlock::text(envelope.text.clone())];
        result.is_error = Some(!envelope.ok);
        result.structured_content = serde_json::to_value(&envelope).ok();
        result
    }
}
