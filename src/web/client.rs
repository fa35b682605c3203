//! One HTTP request with its redirects, each hop checked by the [`Guard`] before any
//! connection: a host name is resolved once here, every address it resolves to is
//! checked, and the connection is pinned to those addresses (reqwest's
//! `resolve_to_addrs`), so a second resolution (DNS rebinding) cannot send the request
//! elsewhere. Redirects are followed here, not by reqwest, so each hop is checked and
//! credentials set by the caller do not follow to another host. The body is read up to
//! `max_bytes` after decompression (a decompression bomb stops at the same bound).
//!
//! With `HTTPS_PROXY` / `HTTP_PROXY` set (and the host not in `NO_PROXY`), reqwest
//! connects to the proxy; a name that does not resolve here is then resolved by the
//! proxy, and only the host rules apply to it.

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, LOCATION};
use reqwest::{Method, redirect};
use url::Url;

use super::guard::{Denied, Guard, Target};

/// How a request failed before an HTTP status could be had.
#[derive(Debug)]
pub enum Failure {
    /// A guard refused the URL or an address.
    Denied {
        url: Url,
        denied: Denied,
    },
    /// `on_new_host = "ask"` and nobody has allowed this host yet.
    NewHost {
        url: Url,
        host: String,
    },
    /// DNS, connection, TLS or protocol trouble.
    Network {
        url: Url,
        why: String,
        next: String,
    },
    TooManyRedirects {
        url: Url,
        max: u32,
    },
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Hop {
    pub url: String,
    pub status: u16,
}

#[derive(Debug)]
pub struct Response {
    pub final_url: Url,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
    /// The body went past `max_bytes` and the rest was not read.
    pub cut: bool,
    /// Every hop before the last, with its status (the redirect chain).
    pub redirects: Vec<Hop>,
    /// The name was resolved by a proxy, not here.
    pub via_proxy: bool,
}

pub struct Request<'a> {
    pub url: Url,
    pub method: Method,
    pub headers: &'a [(String, String)],
    /// The operator's own endpoint (the search backend): exempt from the host, port and
    /// address rules.
    pub exempt: bool,
    pub body: Option<(&'static str, Vec<u8>)>,
}

pub struct Limits<'a> {
    pub max_bytes: u64,
    pub max_redirects: u32,
    pub user_agent: &'a str,
    /// Hosts the person allowed (with `on_new_host = "ask"`); None: every host may be
    /// reached.
    pub approved: Option<&'a HashSet<String>>,
}

fn network(url: &Url, e: &reqwest::Error) -> Failure {
    let mut why = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        why.push_str(": ");
        why.push_str(&s.to_string());
        source = s.source();
    }
    let next = if e.is_connect() {
        "the server refused or did not answer the connection; check the URL and that the site is up"
    } else if why.contains("certificate") || why.contains("tls") || why.contains("TLS") {
        "the TLS handshake failed (an untrusted or expired certificate?); whalebox does not skip certificate checks"
    } else {
        "retry once; if it fails again, the site or the network is the problem"
    };
    Failure::Network {
        url: url.clone(),
        why,
        next: next.into(),
    }
}

/// Resolve `target` once and check every address; None when the URL names an address.
async fn resolve(
    url: &Url,
    target: &Target,
    guard: &Guard,
    exempt: bool,
) -> Result<Vec<SocketAddr>, Failure> {
    if target.literal.is_some() {
        return Ok(Vec::new());
    }
    let addrs: Vec<SocketAddr> =
        match tokio::net::lookup_host((target.host.as_str(), target.port)).await {
            Ok(a) => a.collect(),
            Err(e) => {
                return Err(Failure::Network {
                    url: url.clone(),
                    why: format!("cannot resolve {}: {e}", target.host),
                    next: "check the host name; this machine's resolver does not know it".into(),
                });
            }
        };
    if !exempt {
        for a in &addrs {
            guard
                .address(&target.host, a.ip())
                .map_err(|denied| Failure::Denied {
                    url: url.clone(),
                    denied,
                })?;
        }
    }
    Ok(addrs)
}

/// Is this URL's connection going to a proxy (reqwest's reading of the environment)?
fn proxied(url: &Url) -> bool {
    let var = |names: &[&str]| {
        names
            .iter()
            .any(|n| std::env::var_os(n).is_some_and(|v| !v.is_empty()))
    };
    let wanted = match url.scheme() {
        "https" => var(&["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"]),
        _ => var(&["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]),
    };
    if !wanted {
        return false;
    }
    let host = url.host_str().unwrap_or_default();
    let no_proxy = std::env::var("NO_PROXY")
        .or_else(|_| std::env::var("no_proxy"))
        .unwrap_or_default();
    !no_proxy.split(',').map(str::trim).any(|p| {
        p == "*"
            || (!p.is_empty()
                && (host == p.trim_start_matches('.')
                    || host.ends_with(&format!(".{}", p.trim_start_matches('.')))))
    })
}

/// Carry out `req`: every hop checked, resolved once, pinned; redirects followed up to
/// the limit; the body read up to `max_bytes`.
pub async fn send(
    req: Request<'_>,
    guard: &Guard,
    limits: &Limits<'_>,
) -> Result<Response, Failure> {
    let mut url = req.url;
    let mut method = req.method;
    let mut body = req.body;
    let first_host = url.host_str().map(str::to_string);
    let mut redirects = Vec::new();
    loop {
        let target = guard
            .url(&url, req.exempt)
            .map_err(|denied| Failure::Denied {
                url: url.clone(),
                denied,
            })?;
        if let Some(approved) = limits.approved
            && !req.exempt
            && !approved.contains(&target.host)
        {
            return Err(Failure::NewHost {
                url: url.clone(),
                host: target.host,
            });
        }
        let via_proxy = proxied(&url);
        let addrs = match resolve(&url, &target, guard, req.exempt).await {
            Ok(a) => a,
            Err(Failure::Network { .. }) if via_proxy => Vec::new(),
            Err(e) => return Err(e),
        };
        let mut builder = reqwest::Client::builder()
            .redirect(redirect::Policy::none())
            .user_agent(limits.user_agent)
            .connect_timeout(Duration::from_secs(10))
            .gzip(true)
            .brotli(true)
            .deflate(true);
        if !addrs.is_empty() {
            builder = builder.resolve_to_addrs(&target.host, &addrs);
        }
        let client = builder.build().map_err(|e| network(&url, &e))?;
        let mut headers = HeaderMap::new();
        // The caller's headers go to the first host only (no Authorization or Cookie
        // follows a redirect to another host).
        if url.host_str().map(str::to_string) == first_host {
            for (k, v) in req.headers {
                if let (Ok(k), Ok(v)) = (
                    HeaderName::try_from(k.as_str()),
                    HeaderValue::try_from(v.as_str()),
                ) {
                    headers.insert(k, v);
                }
            }
        }
        let mut request = client.request(method.clone(), url.clone()).headers(headers);
        if let Some((content_type, bytes)) = &body {
            request = request
                .header(reqwest::header::CONTENT_TYPE, *content_type)
                .body(bytes.clone());
        }
        let mut resp = request.send().await.map_err(|e| network(&url, &e))?;
        let status = resp.status();
        if status.is_redirection()
            && let Some(location) = resp.headers().get(LOCATION).and_then(|l| l.to_str().ok())
        {
            let next = url.join(location).map_err(|e| Failure::Network {
                url: url.clone(),
                why: format!("the redirect to `{location}` is not a URL: {e}"),
                next: "the site sent a broken redirect; try the URL it meant".into(),
            })?;
            redirects.push(Hop {
                url: url.to_string(),
                status: status.as_u16(),
            });
            if redirects.len() as u32 > limits.max_redirects {
                return Err(Failure::TooManyRedirects {
                    url,
                    max: limits.max_redirects,
                });
            }
            // 303, and 301/302 after a POST, continue as GET without a body.
            if status.as_u16() == 303
                || (method == Method::POST && matches!(status.as_u16(), 301 | 302))
            {
                if method != Method::HEAD {
                    method = Method::GET;
                }
                body = None;
            }
            url = next;
            continue;
        }
        let headers: Vec<(String, String)> = resp
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let content_type = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let max = limits.max_bytes as usize;
        let mut bytes =
            Vec::with_capacity(resp.content_length().unwrap_or(0).min(max as u64) as usize);
        let mut cut = false;
        while let Some(chunk) = resp.chunk().await.map_err(|e| network(&url, &e))? {
            let room = max - bytes.len();
            if chunk.len() > room {
                bytes.extend_from_slice(&chunk[..room]);
                cut = true;
                break;
            }
            bytes.extend_from_slice(&chunk);
        }
        return Ok(Response {
            final_url: url,
            status: status.as_u16(),
            headers,
            content_type,
            body: bytes,
            cut,
            redirects,
            via_proxy: via_proxy && addrs.is_empty() && target.literal.is_none(),
        });
    }
}

/// The address a URL's literal host names, for messages.
pub fn literal(url: &Url) -> Option<IpAddr> {
    match url.host()? {
        url::Host::Ipv4(ip) => Some(IpAddr::V4(ip)),
        url::Host::Ipv6(ip) => Some(IpAddr::V6(ip)),
        url::Host::Domain(_) => None,
    }
}
