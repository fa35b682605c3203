//! The `web_fetch` tool: a page as Markdown of its main content (or any text as it is),
//! cached so `start_index` pages through it.

use std::sync::Arc;

use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::core::{BoxFuture, CallContext, Tool, ToolError, ToolResult};
use crate::tools::common::args;
use crate::web::body::{self, Kind};
use crate::web::cache::Doc;
use crate::web::html;

use super::response::{binary, http_error, paging};
use super::{Web, url_of};

pub(super) struct WebFetch(pub(super) Arc<Web>);

#[derive(Deserialize)]
struct FetchPageArgs {
    url: String,
    start_index: Option<u64>,
    max_length: Option<u64>,
    #[serde(default)]
    raw: bool,
}

impl WebFetch {
    async fn run(&self, a: FetchPageArgs, ctx: CallContext) -> ToolResult {
        let web = &self.0;
        let url = url_of(&a.url)?;
        let paging = paging(a.start_index, a.max_length, web.default_length());
        let key = format!("web_fetch raw={} {url}", a.raw);
        if let Some(doc) = web.cache.get(&key, web.ttl()) {
            return Ok(web.page(&doc, &paging, true, ""));
        }
        let mut resp = web.send(url.clone(), Method::GET, &[], &ctx).await?;
        let kind = body::kind(resp.content_type.as_deref(), &resp.body);
        if kind == Kind::Binary {
            return Err(binary(&resp));
        }
        let bytes = std::mem::take(&mut resp.body);
        let decoded = body::decode_owned(bytes, resp.content_type.as_deref(), kind);
        if resp.status >= 400 {
            return Err(http_error(&resp, &decoded.text));
        }
        let final_url = resp.final_url.clone();
        let (text, title) = if kind == Kind::Html && !a.raw {
            let source = decoded.text;
            let base = final_url.clone();
            let page = tokio::task::spawn_blocking(move || html::to_markdown(&source, &base))
                .await
                .map_err(|e| ToolError::internal(format!("the HTML conversion failed: {e}")))?;
            (page.markdown, page.title)
        } else {
            (decoded.text, None)
        };
        let meta = json!({
            "url": url.as_str(),
            "final_url": final_url.as_str(),
            "status": resp.status,
            "content_type": resp.content_type,
            "title": title,
            "encoding": decoded.encoding,
            "decode_errors": decoded.replaced,
            "redirects": resp.redirects,
            "truncated": resp.cut,
            "via_proxy": resp.via_proxy,
            "format": if kind == Kind::Html && !a.raw { "markdown" } else { "text" },
        });
        let doc = web.cache.put(key, Doc::new(text, meta), web.ttl());
        let head = match doc.meta["title"].as_str() {
            Some(t) if paging.start_index == 0 => format!("Title: {t}\nURL: {final_url}\n\n"),
            _ => String::new(),
        };
        Ok(web.page(&doc, &paging, false, &head))
    }
}

impl Tool for WebFetch {
    fn name(&self) -> &str {
        "web_fetch"
    }

    fn title(&self) -> Option<String> {
        Some("Fetch a web page".into())
    }

    fn description(&self) -> String {
        "Fetch a URL and return its main content as Markdown (headings, lists, links with \
         their URLs, code blocks, tables; no scripts, navigation or footers); JSON and plain \
         text come as they are, `raw: true` gives the decoded body verbatim. Long documents \
         come in pages: call again with the `start_index` the result names (served from a \
         cache). http(s) only; private, loopback and link-local addresses are refused."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "An absolute http or https URL."},
                "start_index": {"type": "integer", "minimum": 0, "description": "Character offset to start from (default 0)."},
                "max_length": {"type": "integer", "minimum": 1, "description": "Characters to return at most."},
                "raw": {"type": "boolean", "description": "The decoded body verbatim instead of Markdown."}
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
        Box::pin(async move { WebFetch::run(&self, args(input)?, ctx).await })
    }
}
