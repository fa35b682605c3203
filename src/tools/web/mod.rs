//! Group `web` (opt-in): `web_fetch` (a page as Markdown of its main content, or any
//! text as it is), `fetch` (plain GET/HEAD for APIs: status, headers, body verbatim) and
//! `web_search` (the configured backend). Every request and redirect hop passes the
//! guard of [`crate::web`]; converted documents are cached per session so `start_index`
//! pages through them without fetching again. No summarizing model: the model gets the
//! page.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};
use url::Url;

use crate::boundary::{Approval, ApprovalRequest, approval_form, approval_of};
use crate::core::{
    Asking, BoxFuture, CallContext, Code, Registry, RegistryError, Tool, ToolError, ToolOutput,
    ToolResult, input_required,
};
use crate::profile::{OnNewHost, WebSection};
use crate::web::body::{self, Kind};
use crate::web::cache::{Cache, Doc};
use crate::web::client::{self, Failure, Limits, Request, Response};
use crate::web::guard::{Guard, host_matches};
use crate::web::{html, search};

use super::Env;
use super::common::args;

pub(crate) fn register(env: &Arc<Env>, registry: &mut Registry) -> Result<(), RegistryError> {
    let cfg = &env.profile.web;
    let guard = Guard::new(cfg).expect("[web] allow_private was checked when the profile loaded");
    let state = Arc::new(Web {
        env: Arc::clone(env),
        guard,
        user_agent: cfg.user_agent.clone().unwrap_or_else(|| {
            format!(
                "whalebox/{} (+https://github.com/whalebox/whalebox)",
                env!("CARGO_PKG_VERSION")
            )
        }),
        cache: Cache::default(),
        approved: Mutex::default(),
    });
    registry.register("web", Arc::new(WebFetch(Arc::clone(&state))))?;
    registry.register("web", Arc::new(Fetch(Arc::clone(&state))))?;
    registry.register("web", Arc::new(WebSearch(state)))
}

struct Web {
    env: Arc<Env>,
    guard: Guard,
    user_agent: String,
    cache: Cache,
    /// Hosts the person allowed for the session (`on_new_host = "ask"`).
    approved: Mutex<HashSet<String>>,
}

/// What a page call returns: a slice of a cached document.
struct Paging {
    start_index: usize,
    max_length: usize,
}

fn url_of(raw: &str) -> Result<Url, ToolError> {
    let raw = raw.trim();
    Url::parse(raw).map_err(|e| {
        let hint = if !raw.contains("://") && raw.contains('.') {
            format!("give the whole URL, for example https://{raw}")
        } else {
            "give an absolute http or https URL".to_string()
        };
        ToolError::invalid_input(format!("`{raw}` is not a URL: {e}"), hint)
    })
}

/// A first request to a host that nobody answered the question about.
fn unanswered(url: &Url, host: &str, answer: &crate::core::Answer) -> ToolError {
    let why = answer
        .unread_reason()
        .unwrap_or_else(|| "no one answered in time".into());
    denied(
        url,
        &format!("{host} needs a person's yes, and {why}"),
        "fetch a host allowed already, or put the request in your reply for the person",
    )
}

fn denied(url: &Url, why: &str, how: &str) -> ToolError {
    ToolError::new(Code::UrlDenied, format!("refused {url}: {why}"), how)
        .with_data(json!({"url": url.as_str()}))
}

impl Web {
    fn cfg(&self) -> &WebSection {
        &self.env.profile.web
    }

    fn ttl(&self) -> Duration {
        Duration::from_secs(self.cfg().cache_ttl_s)
    }

    fn default_length(&self) -> usize {
        self.env
            .limits
            .max_chars()
            .saturating_sub(1000)
            .clamp(500, 20_000)
    }

    /// Hosts that need no question (allow_hosts), and the rule for the others.
    fn host_allowed_without_asking(&self, host: &str) -> bool {
        self.cfg().allow_hosts.iter().any(|p| host_matches(p, host))
    }

    /// The request with its redirects, asking the person about new hosts when the
    /// profile says so; the whole of it within `timeout_ms`.
    async fn send(
        &self,
        url: Url,
        method: Method,
        headers: &[(String, String)],
        ctx: &CallContext,
    ) -> Result<Response, ToolError> {
        let cfg = self.cfg();
        let mut this_call: HashSet<String> = HashSet::new();
        // A retry bringing the person's answer about a host.
        if let Asking::Retry(Some(r)) = &ctx.ask
            && let Some(host) = r.state["host"].as_str()
        {
            match approval_of(&r.answer) {
                Some(Approval::Once) => {
                    this_call.insert(host.to_string());
                }
                Some(Approval::Session) => {
                    if let Ok(mut a) = self.approved.lock() {
                        a.insert(host.to_string());
                    }
                }
                Some(Approval::Deny) => {
                    return Err(denied(
                        &url,
                        &format!("the person did not allow {host}"),
                        "fetch another host, or ask the person why",
                    ));
                }
                None => return Err(unanswered(&url, host, &r.answer)),
            }
        }
        let timeout = Duration::from_millis(cfg.timeout_ms);
        let work = async {
            loop {
                let approved: Option<HashSet<String>> = match cfg.on_new_host {
                    OnNewHost::Allow => None,
                    _ => {
                        let mut set = self.approved.lock().map(|a| a.clone()).unwrap_or_default();
                        set.extend(this_call.iter().cloned());
                        Some(set)
                    }
                };
                let limits = Limits {
                    max_bytes: cfg.max_bytes,
                    max_redirects: cfg.max_redirects,
                    user_agent: &self.user_agent,
                    approved: approved.as_ref(),
                };
                let req = Request {
                    url: url.clone(),
                    method: method.clone(),
                    headers,
                    exempt: false,
                    body: None,
                };
                match client::send(req, &self.guard, &limits).await {
                    Ok(resp) => return Ok(resp),
                    Err(Failure::NewHost { url: at, host }) => {
                        if self.host_allowed_without_asking(&host) {
                            this_call.insert(host);
                            continue;
                        }
                        if cfg.on_new_host == OnNewHost::Deny {
                            return Err(denied(
                                &at,
                                &format!(
                                    "{host} is not in [web] allow_hosts and on_new_host = \"deny\""
                                ),
                                &format!("add \"{host}\" to [web] allow_hosts in the profile"),
                            ));
                        }
                        let question = ApprovalRequest {
                            command: format!("fetch {at}"),
                            reason: format!(
                                "[web] on_new_host = \"ask\": the first request to {host} in this session"
                            ),
                            task_id: None,
                        };
                        let form = approval_form(&question);
                        match &ctx.ask {
                            Asking::Now(asker) => {
                                let answer = asker(form, timeout).await;
                                match approval_of(&answer) {
                                    Some(Approval::Once) => {
                                        this_call.insert(host);
                                    }
                                    Some(Approval::Session) => {
                                        if let Ok(mut a) = self.approved.lock() {
                                            a.insert(host);
                                        }
                                    }
                                    Some(Approval::Deny) => {
                                        return Err(denied(
                                            &at,
                                            &format!("the person did not allow {host}"),
                                            "fetch another host, or ask the person why",
                                        ));
                                    }
                                    None => return Err(unanswered(&at, &host, &answer)),
                                }
                            }
                            Asking::Retry(_) => {
                                return Err(input_required(form, json!({"host": host})));
                            }
                            Asking::Nobody(why) => {
                                return Err(denied(
                                    &at,
                                    &format!(
                                        "{host} is new, [web] on_new_host = \"ask\", and nobody can be asked here ({why})"
                                    ),
                                    &format!(
                                        "add \"{host}\" to [web] allow_hosts, or use a client that supports elicitation"
                                    ),
                                ));
                            }
                        }
                    }
                    Err(Failure::Denied { url, denied: d }) => {
                        return Err(denied(&url, &d.why, &d.how));
                    }
                    Err(Failure::TooManyRedirects { url, max }) => {
                        return Err(ToolError::new(
                            Code::NetworkError,
                            format!("more than {max} redirects, the last to {url}"),
                            "fetch the last URL directly, or raise [web] max_redirects",
                        ));
                    }
                    Err(Failure::Network { url, why, next }) => {
                        return Err(ToolError::new(
                            Code::NetworkError,
                            format!("{url}: {why}"),
                            next,
                        )
                        .with_data(json!({"url": url.as_str()})));
                    }
                }
            }
        };
        match tokio::time::timeout(timeout, work).await {
            Ok(r) => r,
            Err(_) => Err(ToolError::new(
                Code::Timeout,
                format!(
                    "{url} did not finish within {} ms ([web] timeout_ms)",
                    cfg.timeout_ms
                ),
                "the site is slow or keeps the connection open; try again later or another source",
            )),
        }
    }

    /// A slice of `doc` with the notes that say where the rest is.
    fn page(&self, doc: &Doc, paging: &Paging, cached: bool, head: &str) -> ToolOutput {
        let total = doc.total_chars();
        let start = paging.start_index.min(total);
        let slice = doc.slice(start, paging.max_length);
        let end = start + slice.chars().count();
        let mut text = String::from(head);
        text.push_str(slice);
        let mut data = doc.meta.clone();
        data["total_chars"] = json!(total);
        data["start_index"] = json!(start);
        data["cached"] = json!(cached);
        if end < total {
            data["next_start_index"] = json!(end);
            text.push_str(&format!(
                "\n\n[{} more characters: call again with start_index={end}]",
                total - end
            ));
        }
        if doc.meta["truncated"] == true {
            text.push_str(&format!(
                "\n\n[the body was cut at {} bytes ([web] max_bytes)]",
                self.cfg().max_bytes
            ));
        }
        ToolOutput::new(text, data)
    }
}

fn http_error(resp: &Response, text: &str) -> ToolError {
    let snippet: String = text.chars().take(500).collect();
    ToolError::new(
        Code::HttpError,
        format!("{} answered HTTP {}:\n{snippet}", resp.final_url, resp.status),
        match resp.status {
            404 | 410 => "the page does not exist; check the URL or search for where it moved",
            401 | 403 => "the site refuses this request (login or a block); use another source",
            429 => "the site rate-limits requests; wait before retrying",
            _ => "retry later, or use another source",
        },
    )
    .with_data(json!({"status": resp.status, "url": resp.final_url.as_str(), "headers": headers_map(&resp.headers)}))
}

fn headers_map(headers: &[(String, String)]) -> Value {
    let mut map = serde_json::Map::new();
    for (k, v) in headers {
        match map.get_mut(k) {
            Some(Value::String(old)) => {
                old.push_str(", ");
                old.push_str(v);
            }
            _ => {
                map.insert(k.clone(), json!(v));
            }
        }
    }
    Value::Object(map)
}

fn binary(resp: &Response) -> ToolError {
    ToolError::new(
        Code::BinaryFile,
        format!(
            "{} is {} ({} bytes{}): not text, so its bytes are not shown",
            resp.final_url,
            resp.content_type.as_deref().unwrap_or("binary data"),
            resp.body.len(),
            if resp.cut { ", cut at max_bytes" } else { "" }
        ),
        "download it with a shell command (curl -o) if the shell group is on and the policy allows it",
    )
    .with_data(json!({"content_type": resp.content_type, "bytes": resp.body.len(), "url": resp.final_url.as_str()}))
}

fn paging(start_index: Option<u64>, max_length: Option<u64>, default: usize) -> Paging {
    Paging {
        start_index: start_index.unwrap_or(0) as usize,
        max_length: max_length
            .map(|m| m as usize)
            .unwrap_or(default)
            .clamp(1, default.max(1)),
    }
}

struct WebFetch(Arc<Web>);

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

struct Fetch(Arc<Web>);

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

struct WebSearch(Arc<Web>);

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
