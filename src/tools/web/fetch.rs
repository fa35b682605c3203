//! The `fetch` tool: plain GET or HEAD for APIs, with request headers; status,
//! response headers and the body verbatim, in pages.

use std::sync::Arc;

use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::core::{BoxFuture, CallContext, Tool, ToolError, ToolResult};
use crate::tools::common::args;
use crate::web::body::{self, Kind};
use crate::web::cache::Doc;

use super::response::{binary, headers_map, http_error, paging};
use super::{Web, url_of};

pub(super) struct Fetch(pub(super) Arc<Web>);

#[derive(Deserialize)]
struct FetchArgs {
    url: String,
    method: Option<String>,
    #[serde(default)]
    headers: std::collections::BTreeMap<String, String>,
    start_index: Option<u64>,
    max_length: Option<u64>,
}

/// Headers the HTTP client owns.
const OWN_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
    "trailer",
    "keep-alive",
    "proxy-authorization",
    "proxy-connection",
];

impl Fetch {
    async fn run(&self, a: FetchArgs, ctx: CallContext) -> ToolResult {
        let web = &self.0;
        let url = url_of(&a.url)?;
        let method = match a.method.as_deref().map(str::to_ascii_uppercase).as_deref() {
            None | Some("GET") => Method::GET,
            Some("HEAD") => Method::HEAD,
            Some(other) => {
                return Err(ToolError::invalid_input(
                    format!("method {other} is not allowed"),
                    "fetch only reads (GET or HEAD): a sandbox's fetch changes nothing remote",
                ));
            }
        };
        for k in a.headers.keys() {
            if OWN_HEADERS.contains(&k.to_ascii_lowercase().as_str()) {
                return Err(ToolError::invalid_input(
                    format!("the header {k} is set by the HTTP client"),
                    "leave it out",
                ));
            }
        }
        let headers: Vec<(String, String)> = a.headers.into_iter().collect();
        let paging = paging(a.start_index, a.max_length, web.default_length());
        let key = format!("fetch {method} {url} {headers:?}");
        let head = |doc: &Doc| {
            if paging.start_index == 0 {
                format!(
                    "HTTP {} {}\n\n",
                    doc.meta["status"],
                    doc.meta["content_type"].as_str().unwrap_or("")
                )
            } else {
                String::new()
            }
        };
        if let Some(doc) = web.cache.get(&key, web.ttl()) {
            return Ok(web.page(&doc, &paging, true, &head(&doc)));
        }
        let mut resp = web.send(url.clone(), method, &headers, &ctx).await?;
        let kind = body::kind(resp.content_type.as_deref(), &resp.body);
        if kind == Kind::Binary && !resp.body.is_empty() {
            return Err(binary(&resp));
        }
        let bytes = std::mem::take(&mut resp.body);
        let decoded = body::decode_owned(bytes, resp.content_type.as_deref(), kind);
        if resp.status >= 400 {
            return Err(http_error(&resp, &decoded.text));
        }
        let meta = json!({
            "url": url.as_str(),
            "final_url": resp.final_url.as_str(),
            "status": resp.status,
            "headers": headers_map(&resp.headers),
            "content_type": resp.content_type,
            "encoding": decoded.encoding,
            "decode_errors": decoded.replaced,
            "redirects": resp.redirects,
            "truncated": resp.cut,
            "via_proxy": resp.via_proxy,
        });
        let doc = web.cache.put(key, Doc::new(decoded.text, meta), web.ttl());
        Ok(web.page(&doc, &paging, false, &head(&doc)))
    }
}

impl Tool for Fetch {
    fn name(&self) -> &str {
        "fetch"
    }

    fn title(&self) -> Option<String> {
        Some("HTTP GET or HEAD".into())
    }

    fn description(&self) -> String {
        "Plain HTTP for APIs: GET (default) or HEAD a URL with optional request headers, and \
         get the status, the response headers (data.headers) and the body verbatim, in pages \
         like web_fetch. Only reads: no POST, PUT or DELETE from a sandbox."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "url": {"type": "string"},
                "method": {"type": "string", "description": "GET (default) or HEAD; fetch only reads, so nothing remote is changed from the sandbox."},
                "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                "start_index": {"type": "integer", "minimum": 0},
                "max_length": {"type": "integer", "minimum": 1}
            },
            "required": ["url"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn open_world(&self) -> bool {
        true
    }

    fn run(self: Arc<Self>, input: Value, ctx: CallContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move { Fetch::run(&self, args(input)?, ctx).await })
    }
}
