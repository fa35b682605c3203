//! Group `mcp`: `tool_search` over the catalog of upstream tools, and `call_tool`, which
//! calls any upstream tool by its qualified name (`mcp__SERVER__TOOL`). Listed only when
//! the profile configures at least one `[mcp_servers.NAME]`. The upstreams start in the
//! background when the session starts (see [`crate::upstream`]).

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::core::{
    BoxFuture, CallContext, Code, Forwarded, ForwardedTool, Registry, RegistryError, Tool,
    ToolError, ToolOutput, ToolResult, nearest_names, repair_arguments,
};
use crate::upstream::catalog::{self, Entry};
use crate::upstream::{CallFailure, Unavailable, Upstreams};

use super::Env;
use super::common::args;

pub(crate) fn register(env: &Arc<Env>, registry: &mut Registry) -> Result<(), RegistryError> {
    if env.profile.mcp_servers.is_empty() {
        return Ok(());
    }
    let upstreams = Arc::new(Upstreams::new(env));
    registry.set_forwarded(Arc::new(Direct {
        env: Arc::clone(env),
        upstreams: Arc::clone(&upstreams),
    }));
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        let (u, e) = (Arc::clone(&upstreams), Arc::clone(env));
        handle.spawn(async move { u.start_all(&e).await });
    }
    let state = Arc::new(Mcp {
        env: Arc::clone(env),
        upstreams,
    });
    registry.register("mcp", Arc::new(ToolSearch(Arc::clone(&state))))?;
    registry.register("mcp", Arc::new(CallTool(state)))
}

struct Mcp {
    env: Arc<Env>,
    upstreams: Arc<Upstreams>,
}

/// The tools of `defer = false` servers, which clients list beside whalebox's own under
/// their qualified names (and call through `call_tool`).
struct Direct {
    env: Arc<Env>,
    upstreams: Arc<Upstreams>,
}

impl Forwarded for Direct {
    fn list(&self) -> BoxFuture<'_, Vec<ForwardedTool>> {
        Box::pin(async move {
            self.upstreams
                .direct(&self.env)
                .await
                .into_iter()
                .map(|e| ForwardedTool {
                    name: e.name,
                    description: e.description,
                    input_schema: e.input_schema,
                    annotations: e.annotations,
                })
                .collect()
        })
    }
}

fn unavailable_text(problems: &[Unavailable]) -> String {
    if problems.is_empty() {
        return String::new();
    }
    let mut text = String::from("\nUnavailable servers:\n");
    for p in problems {
        text.push_str(&format!("- {}: {}\n", p.server, p.why));
    }
    text
}

fn show(e: &Entry) -> String {
    format!(
        "## {}\n{}\nInput schema: {}\n",
        e.name,
        e.description.trim(),
        serde_json::to_string(&e.input_schema).unwrap_or_default()
    )
}

struct ToolSearch(Arc<Mcp>);

#[derive(Deserialize)]
struct SearchArgs {
    query: String,
    max_results: Option<u64>,
}

impl ToolSearch {
    async fn run(&self, a: SearchArgs) -> ToolResult {
        let m = &self.0;
        let (entries, problems) = m.upstreams.catalog(&m.env).await;
        let deferred: Vec<Entry> = entries
            .into_iter()
            .filter(|e| m.upstreams.server(&e.server).is_some_and(|s| s.defer()))
            .collect();
        let query = catalog::parse(&a.query);
        let max = a.max_results.unwrap_or(5).clamp(1, 50) as usize;
        let found = catalog::search(&deferred, &query, max);
        let data_tools: Vec<Value> = found
            .iter()
            .map(|e| json!({"name": e.name, "description": e.description, "input_schema": e.input_schema}))
            .collect();
        let mut text = if found.is_empty() {
            let mut by_server: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
            for e in &deferred {
                by_server.entry(&e.server).or_default().push(&e.name);
            }
            let mut t = format!("No tool matches \"{}\". The catalog:\n", a.query.trim());
            for (server, names) in by_server {
                t.push_str(&format!("- {server}: {}\n", names.join(", ")));
            }
            t.push_str("Search with other words, `+word` for a word a match must have, or `select:NAME` for exact names.\n");
            t
        } else {
            let mut t = format!(
                "{} tool(s); call one with call_tool {{name, arguments}}:\n\n",
                found.len()
            );
            for e in &found {
                t.push_str(&show(e));
                t.push('\n');
            }
            t
        };
        text.push_str(&unavailable_text(&problems));
        Ok(ToolOutput::new(
            text,
            json!({"tools": data_tools, "unavailable": problems}),
        ))
    }
}

impl Tool for ToolSearch {
    fn name(&self) -> &str {
        "tool_search"
    }

    fn title(&self) -> Option<String> {
        Some("Search upstream tools".into())
    }

    fn description(&self) -> String {
        let servers: Vec<&str> = self
            .0
            .upstreams
            .servers
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        format!(
            "Find tools of the MCP servers behind whalebox ({}) and get their input schemas, \
             then call them with call_tool. `query`: words ranked by relevance; `+word` a \
             word every match must have; `select:NAME,NAME` exact names.",
            servers.join(", ")
        )
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Default 5."}
            },
            "required": ["query"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn run(self: Arc<Self>, input: Value, _ctx: CallContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move { ToolSearch::run(&self, args(input)?).await })
    }
}

struct CallTool(Arc<Mcp>);

#[derive(Deserialize)]
struct CallArgs {
    name: String,
    #[serde(default)]
    arguments: Value,
}

impl CallTool {
    async fn run(&self, a: CallArgs, ctx: CallContext) -> ToolResult {
        let m = &self.0;
        let server_name = a
            .name
            .strip_prefix("mcp__")
            .and_then(|rest| rest.split_once("__"))
            .map(|(s, _)| s.to_string());
        let Some(server) = server_name.as_deref().and_then(|s| m.upstreams.server(s)) else {
            let (entries, _) = m.upstreams.catalog(&m.env).await;
            let near = nearest_names(&a.name, entries.iter().map(|e| e.name.as_str()));
            return Err(unknown(&a.name, &near));
        };
        let entry = match server.entry(&m.env, &a.name).await {
            Ok(Some(entry)) => entry,
            Ok(None) => {
                let (entries, _) = m.upstreams.catalog(&m.env).await;
                let near = nearest_names(&a.name, entries.iter().map(|e| e.name.as_str()));
                return Err(unknown(&a.name, &near));
            }
            Err(u) => return Err(unavailable(u)),
        };
        let raw = match a.arguments {
            Value::Null => Value::Object(Map::new()),
            v => v,
        };
        let (repaired, repairs) = repair_arguments(&entry.input_schema, &raw);
        let arguments = match validate(&entry.input_schema, &repaired) {
            Ok(()) => repaired,
            Err(problems) => {
                return Err(ToolError::invalid_input(
                    format!(
                        "arguments for {} do not fit its schema: {}",
                        entry.name,
                        problems.join("; ")
                    ),
                    format!(
                        "its input schema: {}",
                        serde_json::to_string(&entry.input_schema).unwrap_or_default()
                    ),
                ));
            }
        };
        let Value::Object(arguments) = arguments else {
            return Err(ToolError::invalid_input(
                "arguments must be a JSON object",
                "send {\"name\": \"…\", \"arguments\": {…}}",
            ));
        };
        let result = server
            .call(&m.env, &entry.upstream_name, arguments, &ctx)
            .await
            .map_err(|f| match f {
                CallFailure::Unavailable(u) => unavailable(u),
                CallFailure::Timeout(ms) => ToolError::new(
                    Code::Timeout,
                    format!("{} did not answer within {ms} ms (tool_timeout_ms); the request was cancelled", entry.name),
                    "retry with a smaller request, or raise tool_timeout_ms for this server",
                ),
                CallFailure::Cancelled => ToolError::new(Code::Cancelled, "the call was cancelled", "call again if still needed"),
            })?;
        let texts: Vec<String> = result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect();
        let content = serde_json::to_value(&result.content).unwrap_or(Value::Null);
        let data = json!({
            "server": entry.server,
            "tool": entry.upstream_name,
            "upstream_content": content,
            "structured_content": result.structured_content,
        });
        if result.is_error == Some(true) {
            return Err(ToolError::new(
                Code::UpstreamError,
                format!(
                    "{} answered with an error:\n{}",
                    entry.name,
                    texts.join("\n")
                ),
                "read the upstream's message; fix the arguments or use another tool",
            )
            .with_data(data));
        }
        let mut text = texts.join("\n");
        if text.is_empty() {
            text = match &result.structured_content {
                Some(v) => v.to_string(),
                None => "(no text content)".into(),
            };
        }
        Ok(ToolOutput::new(text, data).with_repairs(repairs))
    }
}

fn validate(schema: &Value, value: &Value) -> Result<(), Vec<String>> {
    let Ok(validator) = jsonschema::validator_for(schema) else {
        // An upstream schema jsonschema cannot compile: the upstream judges.
        return Ok(());
    };
    let problems: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at `{}`", e, e.instance_path()))
        .take(5)
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

fn unknown(name: &str, near: &[String]) -> ToolError {
    ToolError::new(
        Code::UnknownTool,
        format!("no upstream tool is called `{name}`"),
        if near.is_empty() {
            "find it with tool_search".to_string()
        } else {
            format!(
                "did you mean {}? (tool_search lists them)",
                near.iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
    )
    .with_data(json!({"nearest": near}))
}

fn unavailable(u: Unavailable) -> ToolError {
    ToolError::new(
        Code::UpstreamUnavailable,
        format!("the MCP server {} is unavailable: {}", u.server, u.why),
        "it is started again on the next call (later if it keeps failing); if the sandbox refused it, ask the user to add the profile line named here; else check its [mcp_servers] entry and its stderr in data.stderr",
    )
    .with_data(json!({"server": u.server, "stderr": u.stderr}))
}

impl Tool for CallTool {
    fn name(&self) -> &str {
        "call_tool"
    }

    fn title(&self) -> Option<String> {
        Some("Call an upstream tool".into())
    }

    fn description(&self) -> String {
        "Call a tool of an MCP server behind whalebox by its qualified name \
         (`mcp__SERVER__TOOL`, as tool_search shows it) with its arguments."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The qualified name, mcp__SERVER__TOOL."},
                "arguments": {"type": "object", "description": "The tool's arguments, per its input schema."}
            },
            "required": ["name"],
            "additionalProperties": false
        })
    }

    fn open_world(&self) -> bool {
        true
    }

    fn changes_workspace(&self, input: &Value) -> Option<String> {
        // A tool its server calls read-only (as last listed) cannot change anything.
        let name = input["name"].as_str()?;
        let server = name
            .strip_prefix("mcp__")
            .and_then(|rest| rest.split_once("__"))
            .and_then(|(s, _)| self.0.upstreams.server(s));
        let read_only = server.is_some_and(|s| {
            s.tools()
                .iter()
                .any(|e| e.name == name && e.annotations["readOnlyHint"] == Value::Bool(true))
        });
        (!read_only).then(|| name.to_string())
    }

    fn run(self: Arc<Self>, input: Value, ctx: CallContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move { CallTool::run(&self, args(input)?, ctx).await })
    }
}
