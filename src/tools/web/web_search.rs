//! The `web_search` tool: the configured backends in turn, results filtered by
//! `allowed_domains` and `blocked_domains`.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use url::Url;

use crate::core::{BoxFuture, CallContext, Code, Tool, ToolError, ToolOutput, ToolResult};
use crate::tools::common::args;
use crate::web::client::Limits;
use crate::web::guard::host_matches;
use crate::web::search;

use super::Web;

pub(super) struct WebSearch(pub(super) Arc<Web>);

#[derive(Deserialize)]
struct SearchArgs {
    query: String,
    max_results: Option<u64>,
    #[serde(default)]
    allowed_domains: Vec<String>,
    #[serde(default)]
    blocked_domains: Vec<String>,
}

/// Is the URL's host one of `domains` or under one (`example.com`, `*.example.com`)?
fn in_domains(url: &str, domains: &[String]) -> bool {
    let Some(host) = Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
    else {
        return false;
    };
    domains.iter().any(|d| {
        let d = d.trim();
        host_matches(d, &host) || host_matches(&format!("*.{d}"), &host)
    })
}

const SEARCH_SETUP: &str = "[web.search]\nbackend = \"searxng\"            # searxng | brave | tavily | duckduckgo\nurl = \"https://searx.example.org\"  # your SearXNG instance (brave, tavily and duckduckgo have defaults)\n# api_key_env = \"BRAVE_API_KEY\"    # brave and tavily: the variable holding the key\nfallback = [\"duckduckgo\"]";

impl WebSearch {
    async fn run(&self, a: SearchArgs) -> ToolResult {
        let web = &self.0;
        let cfg = web.cfg();
        let query = a.query.trim();
        if query.is_empty() {
            return Err(ToolError::invalid_input(
                "the query is empty",
                "say what to search for",
            ));
        }
        let endpoints = cfg.search.endpoints();
        if endpoints.is_empty() {
            return Err(ToolError::new(
                Code::Unsupported,
                "no search backend is configured",
                format!("add to the profile:\n{SEARCH_SETUP}"),
            ));
        }
        let max = a.max_results.unwrap_or(5).clamp(1, 20) as usize;
        let wanted = if a.allowed_domains.is_empty() && a.blocked_domains.is_empty() {
            max
        } else {
            (max * 3).min(20)
        };
        let limits = Limits {
            max_bytes: cfg.max_bytes,
            max_redirects: cfg.max_redirects,
            user_agent: &web.user_agent,
            approved: None,
        };
        let timeout = Duration::from_millis(cfg.timeout_ms);
        let mut tried = Vec::new();
        for endpoint in &endpoints {
            let name = search::name(endpoint.backend);
            let outcome = tokio::time::timeout(
                timeout,
                search::search(endpoint, query, wanted, &web.guard, &limits),
            )
            .await
            .unwrap_or_else(|_| {
                Err(search::Trouble::Failed(format!(
                    "no answer within {} ms",
                    cfg.timeout_ms
                )))
            });
            let hits = match outcome {
                Ok(hits) => hits,
                Err(t) => {
                    let why = match t {
                        search::Trouble::Refused(w)
                        | search::Trouble::Config(w)
                        | search::Trouble::Failed(w) => w,
                    };
                    tried.push(json!({"backend": name, "error": why}));
                    continue;
                }
            };
            tried.push(json!({"backend": name, "results": hits.len()}));
            let hits: Vec<_> = hits
                .into_iter()
                .filter(|h| a.allowed_domains.is_empty() || in_domains(&h.url, &a.allowed_domains))
                .filter(|h| !in_domains(&h.url, &a.blocked_domains))
                .take(max)
                .collect();
            let mut text = if hits.is_empty() {
                format!("No results for \"{query}\" ({name}).\n")
            } else {
                format!("Results for \"{query}\" ({name}):\n\n")
            };
            for (i, h) in hits.iter().enumerate() {
                text.push_str(&format!("{}. {}\n   {}\n", i + 1, h.title, h.url));
                if !h.snippet.is_empty() {
                    text.push_str(&format!("   {}\n", h.snippet));
                }
                text.push('\n');
            }
            if !hits.is_empty() {
                text.push_str("Read a result with web_fetch.\n");
            }
            return Ok(ToolOutput::new(
                text,
                json!({"backend": name, "results": hits, "tried": tried}),
            ));
        }
        let errors: Vec<String> = tried
            .iter()
            .map(|t| {
                format!(
                    "{}: {}",
                    t["backend"].as_str().unwrap_or(""),
                    t["error"].as_str().unwrap_or("")
                )
            })
            .collect();
        Err(ToolError::new(
            Code::NetworkError,
            format!("no search backend answered:\n{}", errors.join("\n")),
            "wait a minute if one was rate-limited, check [web.search] (url, api_key_env), or add a fallback backend",
        )
        .with_data(json!({"tried": tried})))
    }
}

impl Tool for WebSearch {
    fn name(&self) -> &str {
        "web_search"
    }

    fn title(&self) -> Option<String> {
        Some("Search the web".into())
    }

    fn description(&self) -> String {
        "Search the web through the configured backend: numbered results with title, URL and \
         snippet (data.results). `allowed_domains` keeps only those sites, `blocked_domains` \
         drops them. Read a result with web_fetch."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 20, "description": "Default 5."},
                "allowed_domains": {"type": "array", "items": {"type": "string"}},
                "blocked_domains": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["query"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn open_world(&self) -> bool {
        true
    }

    fn run(self: Arc<Self>, input: Value, _ctx: CallContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move { WebSearch::run(&self, args(input)?).await })
    }
}
