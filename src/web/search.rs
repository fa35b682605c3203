//! web_search's backends, each request and answer shaped as its documentation says:
//! SearXNG's JSON API (`GET /search?q=…&format=json`), the Brave Search API
//! (`GET /res/v1/web/search`, `X-Subscription-Token`), Tavily (`POST /search`, a bearer
//! key) and DuckDuckGo's HTML endpoint (`POST /html/`, results parsed from the page).
//! The backend's URL is the operator's choice: it is exempt from the host and address
//! rules that guard fetches. None of the public services was reachable where this was
//! built; the SearXNG format is tested against a loopback server.

use std::collections::HashSet;

use reqwest::Method;
use serde::Serialize;
use serde_json::{Value, json};
use url::Url;

use super::client::{self, Failure, Limits, Request};
use super::guard::Guard;
use super::html;
use super::settings::{Endpoint, SearchBackend};

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Hit {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// Why one backend gave no results.
#[derive(Debug)]
pub enum Trouble {
    /// Refused for now: rate-limited or blocked (the next backend is tried).
    Refused(String),
    /// Misconfigured (no key, bad URL).
    Config(String),
    /// Unreachable or broken.
    Failed(String),
}

pub fn name(b: SearchBackend) -> &'static str {
    match b {
        SearchBackend::Searxng => "searxng",
        SearchBackend::Brave => "brave",
        SearchBackend::Tavily => "tavily",
        SearchBackend::Duckduckgo => "duckduckgo",
    }
}

fn base(e: &Endpoint) -> Result<Url, Trouble> {
    let raw = match (e.backend, e.url.as_deref()) {
        (_, Some(u)) => u,
        (SearchBackend::Brave, None) => "https://api.search.brave.com",
        (SearchBackend::Tavily, None) => "https://api.tavily.com",
        (SearchBackend::Duckduckgo, None) => "https://html.duckduckgo.com",
        (SearchBackend::Searxng, None) => {
            return Err(Trouble::Config(
                "searxng needs a url (your instance)".into(),
            ));
        }
    };
    let mut url =
        Url::parse(raw).map_err(|err| Trouble::Config(format!("search url `{raw}`: {err}")))?;
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Ok(url)
}

fn key(e: &Endpoint) -> Result<String, Trouble> {
    let Some(var) = &e.api_key_env else {
        return Err(Trouble::Config(format!(
            "{} needs an API key: set [web.search] api_key_env to the name of the variable that holds it",
            name(e.backend)
        )));
    };
    std::env::var(var)
        .ok()
        .filter(|k| !k.is_empty())
        .ok_or_else(|| Trouble::Config(format!("the variable {var} (api_key_env) is not set")))
}

/// One backend's results for `query`.
pub async fn search(
    e: &Endpoint,
    query: &str,
    max: usize,
    guard: &Guard,
    limits: &Limits<'_>,
) -> Result<Vec<Hit>, Trouble> {
    let b = e.backend;
    let root = base(e)?;
    let mut headers = vec![("accept".to_string(), "application/json".to_string())];
    let (url, method, body) = match b {
        SearchBackend::Searxng => {
            let mut u = root
                .join("search")
                .map_err(|e| Trouble::Config(e.to_string()))?;
            u.query_pairs_mut()
                .append_pair("q", query)
                .append_pair("format", "json");
            (u, Method::GET, None)
        }
        SearchBackend::Brave => {
            headers.push(("x-subscription-token".into(), key(e)?));
            let mut u = root
                .join("res/v1/web/search")
                .map_err(|e| Trouble::Config(e.to_string()))?;
            u.query_pairs_mut()
                .append_pair("q", query)
                .append_pair("count", &max.min(20).to_string());
            (u, Method::GET, None)
        }
        SearchBackend::Tavily => {
            headers.push(("authorization".into(), format!("Bearer {}", key(e)?)));
            let u = root
                .join("search")
                .map_err(|e| Trouble::Config(e.to_string()))?;
            let body = json!({"query": query, "max_results": max.min(20)}).to_string();
            (
                u,
                Method::POST,
                Some(("application/json", body.into_bytes())),
            )
        }
        SearchBackend::Duckduckgo => {
            headers = vec![("accept".into(), "text/html".into())];
            let u = root
                .join("html/")
                .map_err(|e| Trouble::Config(e.to_string()))?;
            let form = url::form_urlencoded::Serializer::new(String::new())
                .append_pair("q", query)
                .finish();
            (
                u,
                Method::POST,
                Some(("application/x-www-form-urlencoded", form.into_bytes())),
            )
        }
    };
    let req = Request {
        url,
        method,
        headers: &headers,
        exempt: true,
        body,
    };
    let resp = client::send(req, guard, limits)
        .await
        .map_err(|f| match f {
            Failure::Network { why, .. } => Trouble::Failed(why),
            Failure::TooManyRedirects { .. } => Trouble::Failed("too many redirects".into()),
            Failure::Denied { denied, .. } => Trouble::Config(denied.why),
            Failure::NewHost { .. } => Trouble::Config("unexpected host approval".into()),
        })?;
    match resp.status {
        429 => {
            return Err(Trouble::Refused(format!(
                "{} rate-limited the query (429)",
                name(b)
            )));
        }
        401 | 403 => {
            return Err(Trouble::Refused(format!(
                "{} refused the query ({}): a missing or wrong key, or a block",
                name(b),
                resp.status
            )));
        }
        s if s >= 400 => return Err(Trouble::Failed(format!("{} answered HTTP {s}", name(b)))),
        _ => {}
    }
    let text = String::from_utf8_lossy(&resp.body);
    let hits = match b {
        SearchBackend::Duckduckgo => duckduckgo(&text, &resp.final_url)?,
        _ => {
            let v: Value = serde_json::from_str(&text)
                .map_err(|e| Trouble::Failed(format!("{} did not answer JSON: {e}", name(b))))?;
            let (list, snippet) = match b {
                SearchBackend::Brave => (&v["web"]["results"], "description"),
                _ => (&v["results"], "content"),
            };
            list.as_array()
                .map(|items| {
                    items
                        .iter()
                        .filter_map(|r| {
                            Some(Hit {
                                title: r["title"].as_str().unwrap_or_default().trim().to_string(),
                                url: r["url"].as_str()?.to_string(),
                                snippet: html::squash(&strip_tags(
                                    r[snippet].as_str().unwrap_or_default(),
                                )),
                            })
                        })
                        .collect()
                })
                .unwrap_or_default()
        }
    };
    let mut seen = HashSet::new();
    Ok(hits
        .into_iter()
        .filter(|h| seen.insert(h.url.clone()))
        .take(max)
        .collect())
}

/// Brave marks matches with `<strong>`; snippets are shown as text.
fn strip_tags(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut inside = false;
    for c in s.chars() {
        match c {
            '<' => inside = true,
            '>' if inside => inside = false,
            c if !inside => out.push(c),
            _ => {}
        }
    }
    out.replace("&amp;", "&")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
}

fn has_class(node: &html5ever_node::Handle, class: &str) -> bool {
    html::attr(node, "class").is_some_and(|c| c.split_whitespace().any(|k| k == class))
}

mod html5ever_node {
    pub use markup5ever_rcdom::Handle;
}

/// DuckDuckGo's HTML page: each `.result` holds an `a.result__a` (its href a redirect
/// through `/l/?uddg=TARGET`) and a `.result__snippet`.
fn duckduckgo(page: &str, base: &Url) -> Result<Vec<Hit>, Trouble> {
    let Some(doc) = html::parse(page) else {
        return Ok(Vec::new());
    };
    if page.contains("anomaly-modal") || page.contains("Unfortunately, bots use DuckDuckGo too") {
        return Err(Trouble::Refused(
            "duckduckgo asked for a captcha (it blocks automated queries from this address)".into(),
        ));
    }
    let mut results = Vec::new();
    html::all(
        &doc,
        &|n| has_class(n, "result") && !has_class(n, "result--ad"),
        &mut results,
    );
    Ok(results
        .iter()
        .filter_map(|r| {
            let link = html::first(r, &|n| has_class(n, "result__a"))?;
            let href = html::attr(&link, "href")?;
            let mut target = base.join(&href).ok()?;
            if target.path() == "/l/"
                && let Some((_, real)) = target.query_pairs().find(|(k, _)| k == "uddg")
            {
                target = Url::parse(&real).ok()?;
            }
            let snippet = html::first(r, &|n| has_class(n, "result__snippet"))
                .map(|s| html::squash(&html::text_of(&s)))
                .unwrap_or_default();
            Some(Hit {
                title: html::squash(&html::text_of(&link)),
                url: target.to_string(),
                snippet,
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duckduckgo_results_page() {
        let page = r#"<div class="result results_links web-result"><h2><a class="result__a"
            href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fdocs.rs%2Fhtmd&amp;rut=x">htmd - <b>Rust</b></a></h2>
            <a class="result__snippet" href="x">An HTML to <b>Markdown</b> converter.</a></div>
            <div class="result result--ad"><a class="result__a" href="https://ads.example/">Ad</a></div>"#;
        let hits = duckduckgo(
            page,
            &Url::parse("https://html.duckduckgo.com/html/").unwrap(),
        )
        .unwrap();
        assert_eq!(
            hits,
            vec![Hit {
                title: "htmd - Rust".into(),
                url: "https://docs.rs/htmd".into(),
                snippet: "An HTML to Markdown converter.".into()
            }]
        );
        assert_eq!(strip_tags("a <strong>b</strong> &amp; c"), "a b & c");
    }
}
