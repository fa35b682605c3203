//! A client's request head: read within a size limit and deadlines, parsed by httparse
//! (never by hand), and turned into a target (`CONNECT host:port` or an absolute
//! `http://` URI) and, for plain HTTP, the head the origin gets.

use std::net::IpAddr;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::time::Instant;
use url::{Host, Url};

/// The most headers one request may carry (more is answered 431).
const MAX_HEADERS: usize = 128;

#[derive(Debug)]
pub enum HeadError {
    /// The client closed before sending a byte.
    Closed,
    /// Past the head size limit, or too many headers (431).
    TooLarge,
    /// No complete head in time (408).
    Timeout,
    /// Not an HTTP/1.x request (400).
    Malformed(String),
}

/// The parts of a request head the proxy uses.
#[derive(Debug, Clone)]
pub struct Head {
    pub method: String,
    pub target: String,
    /// The minor version: HTTP/1.0 or HTTP/1.1.
    pub version: u8,
    pub headers: Vec<(String, Vec<u8>)>,
    /// The head's length in the buffer; what follows is the start of the body or tunnel.
    pub len: usize,
}

impl Head {
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }
}

/// Reads until `buf` holds a complete head (it may hold more: the body's first bytes).
/// `idle` bounds each read, `total` the whole head (a client dripping a byte at a time
/// cannot hold a connection forever).
pub async fn read_head<R: AsyncRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    max_bytes: usize,
    idle: Duration,
    total: Duration,
) -> Result<Head, HeadError> {
    let deadline = Instant::now() + total;
    let mut chunk = [0u8; 4096];
    loop {
        if !buf.is_empty() {
            if let Some(head) = parse_head(buf)? {
                return Ok(head);
            }
            if buf.len() >= max_bytes {
                return Err(HeadError::TooLarge);
            }
        }
        let until = deadline.min(Instant::now() + idle);
        let n = match tokio::time::timeout_at(until, r.read(&mut chunk)).await {
            Err(_) => return Err(HeadError::Timeout),
            Ok(Err(e)) => return Err(HeadError::Malformed(format!("reading the request: {e}"))),
            Ok(Ok(n)) => n,
        };
        if n == 0 {
            return Err(if buf.is_empty() {
                HeadError::Closed
            } else {
                HeadError::Malformed(
                    "the connection closed in the middle of the request head".into(),
                )
            });
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// A complete head at the start of `buf`, None when more bytes are needed.
pub fn parse_head(buf: &[u8]) -> Result<Option<Head>, HeadError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(buf) {
        Ok(httparse::Status::Partial) => Ok(None),
        Ok(httparse::Status::Complete(len)) => Ok(Some(Head {
            method: req.method.unwrap_or_default().to_string(),
            target: req.path.unwrap_or_default().to_string(),
            version: req.version.unwrap_or(1),
            headers: req
                .headers
                .iter()
                .map(|h| (h.name.to_string(), h.value.to_vec()))
                .collect(),
            len,
        })),
        Err(httparse::Error::TooManyHeaders) => Err(HeadError::TooLarge),
        Err(e) => Err(HeadError::Malformed(format!(
            "not an HTTP/1.x request ({e})"
        ))),
    }
}

/// Where a request goes, as the proxy judges it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Lower case, no trailing dot, IDNs in punycode; an address as its canonical text.
    pub host: String,
    pub port: u16,
    /// The address, when the request names one instead of a host name.
    pub literal: Option<IpAddr>,
}

/// `host:port` (`CONNECT`'s authority form; `default_port` None means the port is
/// required) or `host[:port]` (an absolute URI's authority). Only the characters a host
/// and port can hold are accepted, so userinfo (`a@b`), backslashes, percent-escapes and
/// spaces never reach the URL parser; the host is then read by the WHATWG rules, so an
/// address in any spelling (`0x7f.1`, `2130706433`, `[::ffff:7f00:1]`) is the address
/// it means.
pub fn parse_authority(auth: &str, default_port: Option<u16>) -> Result<Target, String> {
    if auth.is_empty()
        || !auth
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-_:[]".contains(&b))
    {
        return Err(format!("`{auth}` is not a host and port"));
    }
    let (host, port) = if let Some(rest) = auth.strip_prefix('[') {
        let (inside, after) = rest
            .split_once(']')
            .ok_or_else(|| format!("`{auth}`: an IPv6 address needs its closing `]`"))?;
        let port = match after {
            "" => None,
            p => Some(
                p.strip_prefix(':')
                    .ok_or_else(|| format!("`{auth}` is not a host and port"))?,
            ),
        };
        (format!("[{inside}]"), port)
    } else {
        match auth.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (auth.to_string(), None),
        }
    };
    if host.contains(':') && !host.starts_with('[') {
        return Err(format!("`{auth}`: an IPv6 address is written in brackets"));
    }
    let port = match (port, default_port) {
        (Some(p), _) => match p.parse::<u16>() {
            Ok(p) if p != 0 => p,
            _ => return Err(format!("`{p}` is not a port number (1 to 65535)")),
        },
        (None, Some(d)) => d,
        (None, None) => return Err(format!("`{auth}` has no port (CONNECT host:port)")),
    };
    let url = Url::parse(&format!("http://{host}/"))
        .map_err(|e| format!("`{host}` is not a host name or address ({e})"))?;
    let (host, literal) = match url.host() {
        Some(Host::Domain(d)) => (d.trim_end_matches('.').to_ascii_lowercase(), None),
        Some(Host::Ipv4(ip)) => (ip.to_string(), Some(IpAddr::V4(ip))),
        Some(Host::Ipv6(ip)) => (ip.to_string(), Some(IpAddr::V6(ip))),
        None => return Err(format!("`{auth}` has no host")),
    };
    if host.is_empty() {
        return Err(format!("`{auth}` has no host"));
    }
    Ok(Target {
        host,
        port,
        literal,
    })
}

/// A plain-HTTP request target in absolute form: where it goes, and the origin-form
/// target (`/path?query`, as the client wrote it) the origin gets.
pub fn parse_absolute(uri: &str) -> Result<(Target, String), String> {
    let Some(rest) = uri
        .get(..7)
        .filter(|s| s.eq_ignore_ascii_case("http://"))
        .map(|_| &uri[7..])
    else {
        return Err(if uri.starts_with('/') {
            "this is whalebox's egress proxy: a request names its whole URL \
             (GET http://host/path), or tunnels with CONNECT host:port"
                .to_string()
        } else if uri.len() >= 8 && uri[..8].eq_ignore_ascii_case("https://") {
            "https goes through the proxy with CONNECT host:443, not as a plain request".into()
        } else {
            format!("`{uri}` is not an http:// URL")
        });
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let target = parse_authority(&rest[..end], Some(80))?;
    let mut path = rest[end..].split('#').next().unwrap_or("").to_string();
    if !path.starts_with('/') {
        path.insert(0, '/');
    }
    if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err("the URL's path holds spaces or control characters".into());
    }
    Ok((target, path))
}

/// Headers that describe one hop, not the request: never passed on, in either
/// direction (`Host` is set by the proxy from the target it decided).
pub(crate) const HOP_BY_HOP: &[&str] = &[
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "upgrade",
    "host",
];

/// The head the origin gets for a forwarded request: origin-form target, `Host` from the
/// URL (RFC 9112 §3.2.2), hop-by-hop headers and those `Connection` names dropped, and
/// `Connection: close` (one request per connection, so every request on it was the one
/// decided). The body's framing headers pass unchanged, as the body does; a request
/// with both `Content-Length` and `Transfer-Encoding` is refused (smuggling).
pub fn forward_head(head: &Head, target: &Target, path: &str) -> Result<Vec<u8>, String> {
    if head.header("content-length").is_some() && head.header("transfer-encoding").is_some() {
        return Err("the request has both Content-Length and Transfer-Encoding".into());
    }
    let named: Vec<String> = head
        .headers
        .iter()
        .filter(|(n, _)| {
            n.eq_ignore_ascii_case("connection") || n.eq_ignore_ascii_case("proxy-connection")
        })
        .flat_map(|(_, v)| {
            String::from_utf8_lossy(v)
                .split(',')
                .map(|s| s.trim().to_ascii_lowercase())
                .collect::<Vec<_>>()
        })
        .collect();
    let host = match target.literal {
        Some(IpAddr::V6(ip)) => format!("[{ip}]"),
        _ => target.host.clone(),
    };
    let host = if target.port == 80 {
        host
    } else {
        format!("{host}:{}", target.port)
    };
    let mut out = Vec::with_capacity(head.len + 64);
    out.extend_from_slice(
        format!(
            "{} {path} HTTP/1.{}\r\nHost: {host}\r\n",
            head.method, head.version
        )
        .as_bytes(),
    );
    for (name, value) in &head.headers {
        let lower = name.to_ascii_lowercase();
        if HOP_BY_HOP.contains(&lower.as_str()) || named.contains(&lower) {
            continue;
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    Ok(out)
}
