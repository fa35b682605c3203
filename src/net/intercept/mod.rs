//! TLS ended by the proxy, for credential hosts only: after the decision and the address
//! check, a `CONNECT` to a host a [`Credentials`] covers is answered 200, the client's TLS
//! is accepted with a leaf certificate for that host signed by the session CA (HTTP/1.1
//! only, by ALPN), and each request on the connection (keep-alive carries several) is
//! parsed by hyper's HTTP/1 server: the placeholders in its headers are swapped for the
//! secrets ([`Credentials::swap_value`]), a placeholder of another credential in its URL
//! or headers is refused (403, the connection closed), `Host` is set to the host the
//! proxy decided (no fronting another site behind the same address), and the request
//! goes to the real origin over rustls (hyper's HTTP/1 client), on the connection the
//! proxy already made to the address it checked (a new connection, if the origin closes
//! between requests, goes to that same address: never resolved again). The origin's
//! certificate is checked against Mozilla's roots, the system's and
//! [`ProxyConfig::upstream_roots`]; a bad one is a 502 to the task. All other hosts stay
//! tunnels: their TLS is never ended. A plain-HTTP request to a credential host goes
//! the same per-request way without TLS on either side ([`forward_plain`]), so its answer
//! is masked too.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::header::{HOST, HeaderMap, HeaderValue};
use http::{Request, Response, StatusCode, Uri};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::{TokioIo, TokioTimer};
use rustls::pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use tokio::time::Instant;

mod plain;
mod streams;

pub(crate) use plain::forward_plain;

use streams::{Counted, Prefixed};

use super::config::ProxyConfig;
use super::credential::{Credentials, Leak, Masked, provider};
use super::head::Target;
use super::record::Outcome;
use super::relay::Counters;

type Body = BoxBody<Bytes, hyper::Error>;

/// Where an intercepted connection writes what the record needs; filled in also when the
/// connection is cut (the proxy stopping drops this future).
pub(crate) struct Tally<'a> {
    pub counters: &'a Counters,
    pub credential: &'a mut Option<String>,
    pub note: &'a mut Option<String>,
}

/// The time of the last byte either way, for the idle timeout.
struct Activity {
    base: Instant,
    last_ms: AtomicU64,
}

impl Activity {
    fn touch(&self) {
        self.last_ms
            .store(self.base.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    fn last(&self) -> Instant {
        self.base + Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
    }
}

#[derive(Default)]
struct Totals {
    up: AtomicU64,
    down: AtomicU64,
}

/// What the requests of one connection share.
struct State {
    creds: Arc<Credentials>,
    host: String,
    port: u16,
    literal: Option<IpAddr>,
    /// `Host` for the origin: the host (an IPv6 address in brackets) and a port not 443.
    authority: HeaderValue,
    addr: SocketAddr,
    /// TLS to the origin (None: plain HTTP, [`forward_plain`]).
    client_tls: Option<Arc<rustls::ClientConfig>>,
    connect_timeout: Duration,
    /// The connection the proxy made; taken by the first request.
    pending: Mutex<Option<TcpStream>>,
    sender: tokio::sync::Mutex<Option<SendRequest<Incoming>>>,
    /// The upstream connections' drivers: aborted when the connection ends.
    tasks: Mutex<JoinSet<()>>,
    totals: Arc<Totals>,
    activity: Arc<Activity>,
    /// The first refusal or failure on the connection (else it was allowed).
    outcome: Mutex<Option<Outcome>>,
    used: Mutex<Vec<String>>,
}

/// Copies the state's counts and credential names into the record's tally when the
/// connection ends or is cut.
struct Flush<'a, 'b> {
    state: Arc<State>,
    tally: &'b mut Tally<'a>,
}

impl Drop for Flush<'_, '_> {
    fn drop(&mut self) {
        let t = &self.state.totals;
        let c = self.tally.counters;
        c.up.fetch_add(t.up.swap(0, Ordering::Relaxed), Ordering::Relaxed);
        c.down
            .fetch_add(t.down.swap(0, Ordering::Relaxed), Ordering::Relaxed);
        let used = self.state.used.lock().unwrap();
        if !used.is_empty() {
            *self.tally.credential = Some(used.join(", "));
        }
    }
}

/// The upstream TLS client configuration: Mozilla's roots, the system's and the extra
/// ones (tests' CAs), HTTP/1.1 by ALPN; made once per [`Credentials`].
fn client_tls(creds: &Credentials, cfg: &ProxyConfig) -> Result<Arc<rustls::ClientConfig>, String> {
    creds
        .upstream
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore::empty();
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            let native = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(native.certs);
            for c in &cfg.upstream_roots {
                roots
                    .add(c.clone())
                    .map_err(|e| format!("an upstream root certificate: {e}"))?;
            }
            let mut c = rustls::ClientConfig::builder_with_provider(provider())
                .with_safe_default_protocol_versions()
                .map_err(|e| e.to_string())?
                .with_root_certificates(roots)
                .with_no_client_auth();
            c.alpn_protocols = vec![b"http/1.1".to_vec()];
            Ok(Arc::new(c))
        })
        .clone()
}

/// Serves one intercepted `CONNECT` (see the module doc) until either side closes, the
/// idle timeout, or a refusal; returns the connection's outcome.
pub(crate) async fn intercept(
    client: &mut TcpStream,
    early: &[u8],
    origin: (TcpStream, SocketAddr),
    target: &Target,
    creds: &Arc<Credentials>,
    cfg: &ProxyConfig,
    tally: &mut Tally<'_>,
) -> Outcome {
    let host = target.host.clone();
    let fail = |why: String| Outcome::Failed { why };
    let server_tls = match creds.server_config(&host) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let client_tls = match client_tls(creds, cfg) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    if let Err(e) = client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
    {
        *tally.note = Some(format!("writing to the client: {e}"));
        return Outcome::Allowed;
    }
    let activity = Arc::new(Activity {
        base: Instant::now(),
        last_ms: AtomicU64::new(0),
    });
    let io = Prefixed {
        early: early.to_vec(),
        pos: 0,
        inner: client,
        activity: activity.clone(),
    };
    let accepted = tokio::time::timeout(
        cfg.head_timeout,
        tokio_rustls::TlsAcceptor::from(server_tls).accept(io),
    )
    .await;
    let tls = match accepted {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            return Outcome::Rejected {
                status: 0,
                why: format!(
                    "{host} is a credential host, whose TLS whalebox ends, and the client's \
                     TLS handshake failed: {e}"
                ),
            };
        }
        Err(_) => {
            return Outcome::Rejected {
                status: 0,
                why: format!(
                    "no TLS handshake from the client within {:?}",
                    cfg.head_timeout
                ),
            };
        }
    };
    let state = State::new(creds, target, origin, Some(client_tls), cfg, activity);
    let flush = Flush {
        state: state.clone(),
        tally,
    };
    let outcome = serve(tls, &state, cfg, true, flush.tally.note).await;
    finish(client, state, flush, outcome).await
}

/// The requests on one client connection (`io`), each through [`handle`], until either
/// side closes, the idle timeout, or a refusal; what went wrong with the connection
/// itself (431), else None.
async fn serve<I>(
    io: I,
    state: &Arc<State>,
    cfg: &ProxyConfig,
    keep_alive: bool,
    note: &mut Option<String>,
) -> Option<Outcome>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let service_state = state.clone();
    let service = hyper::service::service_fn(move |req| {
        let st = service_state.clone();
        async move { Ok::<_, Infallible>(handle(st, req).await) }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .keep_alive(keep_alive)
        .max_buf_size(cfg.max_header_bytes.max(8192) + 8192)
        .max_header_size(cfg.max_header_bytes)
        .timer(TokioTimer::new())
        // Also bounds the wait for the next request on a kept-alive connection.
        .header_read_timeout(cfg.head_timeout);
    let conn = builder.serve_connection(TokioIo::new(io), service);
    let activity = &state.activity;
    let idle = cfg.idle_timeout;
    let watch = async {
        loop {
            let deadline = activity.last() + idle;
            if Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep_until(deadline).await;
        }
    };
    activity.touch();
    let mut outcome = None;
    tokio::select! {
        r = conn => if let Err(e) = r {
            if e.is_parse_too_large() {
                outcome = Some(Outcome::Rejected {
                    status: 431,
                    why: format!(
                        "a request head is larger than {} bytes or has too many headers",
                        cfg.max_header_bytes
                    ),
                });
            } else if e.is_timeout() {
                *note = Some(format!(
                    "closed: no complete request head within {:?} (the wait between \
                     requests on a kept-alive connection included)",
                    cfg.head_timeout
                ));
            } else if !e.is_incomplete_message() {
                *note = Some(format!("the client's connection: {e}"));
            }
        },
        _ = watch => {
            *note = Some(format!("closed after {idle:?} without a byte either way"));
        }
    }
    outcome
}

/// The connection's outcome: the first refusal or failure of a request, else what
/// [`serve`] said, else allowed; the record's counts flushed.
async fn finish(
    client: &mut TcpStream,
    state: Arc<State>,
    flush: Flush<'_, '_>,
    outcome: Option<Outcome>,
) -> Outcome {
    if outcome.is_some() {
        // hyper answered 431 and stopped reading: read and drop what the client still
        // sends for a moment, so closing with unread bytes does not reset the connection
        // before the client has read the answer.
        let mut sink = [0u8; 8192];
        let _ = tokio::time::timeout(Duration::from_millis(500), async {
            let mut drained = 0usize;
            while drained < 1 << 20 {
                match client.read(&mut sink).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => drained += n,
                }
            }
        })
        .await;
    }
    let first = state.outcome.lock().unwrap().take();
    drop(flush);
    first.or(outcome).unwrap_or(Outcome::Allowed)
}

fn named_by_connection(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all("connection")
        .iter()
        .flat_map(|v| {
            String::from_utf8_lossy(v.as_bytes())
                .split(',')
                .map(|s| s.trim().to_ascii_lowercase())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Whether an answer's body is encoded in a way the masker cannot see into: any
/// `Content-Encoding` but `identity` (every such header, not just the first), or a
/// `Transfer-Encoding` other than `chunked` (which hyper takes off; `gzip, chunked`
/// would reach the client still gzipped).
fn encoded(headers: &HeaderMap) -> bool {
    let codings = |name: http::header::HeaderName, plain: &'static str| {
        headers.get_all(name).iter().any(move |v| {
            String::from_utf8_lossy(v.as_bytes())
                .split(',')
                .map(str::trim)
                .any(|c| !c.is_empty() && !c.eq_ignore_ascii_case(plain))
        })
    };
    codings(http::header::CONTENT_ENCODING, "identity")
        || codings(http::header::TRANSFER_ENCODING, "chunked")
}

fn text(status: StatusCode, body: String, close: bool) -> Response<Body> {
    let mut r = Response::new(
        Full::new(Bytes::from(body))
            .map_err(|never| match never {})
            .boxed(),
    );
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        "content-type",
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    if close {
        h.insert("connection", HeaderValue::from_static("close"));
    }
    r
}

impl State {
    fn new(
        creds: &Arc<Credentials>,
        target: &Target,
        origin: (TcpStream, SocketAddr),
        client_tls: Option<Arc<rustls::ClientConfig>>,
        cfg: &ProxyConfig,
        activity: Arc<Activity>,
    ) -> Arc<State> {
        let default_port = if client_tls.is_some() { 443 } else { 80 };
        let host = target.host.clone();
        let authority = match (target.literal, target.port) {
            (Some(IpAddr::V6(ip)), p) if p == default_port => format!("[{ip}]"),
            (Some(IpAddr::V6(ip)), p) => format!("[{ip}]:{p}"),
            (_, p) if p == default_port => host.clone(),
            (_, p) => format!("{host}:{p}"),
        };
        Arc::new(State {
            creds: creds.clone(),
            host,
            port: target.port,
            literal: target.literal,
            authority: HeaderValue::from_str(&authority).expect("a checked host is a header value"),
            addr: origin.1,
            client_tls,
            connect_timeout: cfg.connect_timeout,
            pending: Mutex::new(Some(origin.0)),
            sender: tokio::sync::Mutex::new(None),
            tasks: Mutex::new(JoinSet::new()),
            totals: Arc::new(Totals::default()),
            activity,
            outcome: Mutex::new(None),
            used: Mutex::new(Vec::new()),
        })
    }

    fn set_outcome(&self, o: Outcome) {
        let mut cur = self.outcome.lock().unwrap();
        if cur.is_none() {
            *cur = Some(o);
        }
    }

    fn refuse(&self, leak: Leak) -> Response<Body> {
        let body = format!(
            "whalebox refused the request to {}:{}.\nRule: {}\nTo allow it: {}\n",
            self.host, self.port, leak.rule, leak.how_to_allow
        );
        self.set_outcome(Outcome::Denied {
            rule: leak.rule,
            how_to_allow: leak.how_to_allow,
        });
        text(StatusCode::FORBIDDEN, body, true)
    }

    fn bad_gateway(&self, why: String) -> Response<Body> {
        let body = format!("whalebox's egress proxy: {why}\n");
        self.set_outcome(Outcome::Failed { why });
        text(StatusCode::BAD_GATEWAY, body, true)
    }

    /// A new TLS connection to the checked address (the proxy's own, the first time).
    async fn connect(&self) -> Result<SendRequest<Incoming>, String> {
        let (host, port, addr) = (&self.host, self.port, self.addr);
        let pending = self.pending.lock().unwrap().take();
        let tcp = match pending {
            Some(t) => t,
            None => {
                match tokio::time::timeout(self.connect_timeout, TcpStream::connect(addr)).await {
                    Ok(Ok(t)) => t,
                    Ok(Err(e)) => {
                        return Err(format!("could not connect to {host}:{port} ({addr}: {e})"));
                    }
                    Err(_) => {
                        return Err(format!(
                            "could not connect to {host}:{port} ({addr}: no answer within {:?})",
                            self.connect_timeout
                        ));
                    }
                }
            }
        };
        let _ = tcp.set_nodelay(true);
        let io = Counted {
            inner: tcp,
            totals: self.totals.clone(),
            activity: self.activity.clone(),
        };
        let Some(client_tls) = &self.client_tls else {
            let (sender, conn) = hyper::client::conn::http1::Builder::new()
                .handshake(TokioIo::new(io))
                .await
                .map_err(|e| format!("HTTP with {host}:{port}: {e}"))?;
            self.tasks.lock().unwrap().spawn(async move {
                let _ = conn.await;
            });
            return Ok(sender);
        };
        let name = match self.literal {
            Some(ip) => ServerName::IpAddress(ip.into()),
            None => ServerName::try_from(host.clone())
                .map_err(|e| format!("{host} is not a TLS server name: {e}"))?,
        };
        let connector = tokio_rustls::TlsConnector::from(client_tls.clone());
        let tls = match tokio::time::timeout(self.connect_timeout, connector.connect(name, io))
            .await
        {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => {
                return Err(format!(
                    "the TLS handshake with {host}:{port} ({addr}) failed: {e}; whalebox does not \
                     skip certificate checks, and the credential was not sent"
                ));
            }
            Err(_) => {
                return Err(format!(
                    "no TLS handshake from {host}:{port} ({addr}) within {:?}",
                    self.connect_timeout
                ));
            }
        };
        let (sender, conn) = hyper::client::conn::http1::Builder::new()
            .handshake(TokioIo::new(tls))
            .await
            .map_err(|e| format!("HTTP with {host}:{port}: {e}"))?;
        self.tasks.lock().unwrap().spawn(async move {
            let _ = conn.await;
        });
        Ok(sender)
    }
}

/// One request: screened, swapped, sent to the origin; the origin's answer streamed back
/// with any secret in its headers masked.
async fn handle(st: Arc<State>, req: Request<Incoming>) -> Response<Body> {
    let (mut parts, body) = req.into_parts();
    let creds = st.creds.clone();
    let (host, port) = (st.host.as_str(), st.port);
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    if let Some(leak) = creds.leak(host, port, path.as_bytes()) {
        return st.refuse(leak);
    }
    parts.uri = match path.parse::<Uri>() {
        Ok(u) => u,
        Err(e) => {
            return text(
                StatusCode::BAD_REQUEST,
                format!("the request's path: {e}\n"),
                true,
            );
        }
    };
    let named = named_by_connection(&parts.headers);
    let mut headers = HeaderMap::with_capacity(parts.headers.len() + 1);
    headers.insert(HOST, st.authority.clone());
    let mut used: Vec<String> = Vec::new();
    for (name, value) in parts.headers.iter() {
        let lower = name.as_str();
        if super::head::HOP_BY_HOP.contains(&lower) || named.iter().any(|n| n == lower) {
            continue;
        }
        if let Some(leak) = creds.leak(host, port, value.as_bytes()) {
            return st.refuse(leak);
        }
        let value = match creds.swap_value(host, lower, value.as_bytes()) {
            None => value.clone(),
            Some((swapped, names)) => {
                used.extend(names);
                match HeaderValue::from_bytes(&swapped) {
                    Ok(mut v) => {
                        v.set_sensitive(true);
                        v
                    }
                    Err(_) => {
                        return text(
                            StatusCode::BAD_REQUEST,
                            format!("whalebox's egress proxy: the {name} header is malformed\n"),
                            true,
                        );
                    }
                }
            }
        };
        headers.append(name.clone(), value);
    }
    // In clear on the wire: only a credential marked `plain_http` (the head the proxy
    // screened was swapped already; this holds for any request hyper reads after it).
    if st.client_tls.is_none()
        && !used.is_empty()
        && let Err(leak) = creds.in_clear(host, &used.join(", "))
    {
        return st.refuse(leak);
    }
    // The answer is masked as it streams (`credential::Masked`); a compressed body
    // would hide the secret from it, so the origin is asked for the body as it is.
    headers.insert(
        http::header::ACCEPT_ENCODING,
        HeaderValue::from_static("identity"),
    );
    parts.headers = headers;
    let req = Request::from_parts(parts, body);

    let mut guard = st.sender.lock().await;
    let mut tries = 0;
    let sender = loop {
        tries += 1;
        if guard.as_ref().is_none_or(|s| s.is_closed()) {
            match st.connect().await {
                Ok(s) => *guard = Some(s),
                Err(why) => return st.bad_gateway(why),
            }
        }
        let s = guard.as_mut().expect("connected above");
        match s.ready().await {
            Ok(()) => break s,
            Err(e) if tries >= 2 => {
                return st.bad_gateway(format!("{host}:{port} closed the connection: {e}"));
            }
            Err(_) => *guard = None,
        }
    };
    let sent = sender.send_request(req).await;
    drop(guard);
    match sent {
        Ok(resp) => {
            if !used.is_empty() {
                let mut all = st.used.lock().unwrap();
                for n in used {
                    if !all.contains(&n) {
                        all.push(n);
                    }
                }
            }
            let (mut parts, body) = resp.into_parts();
            // A reason phrase other than the status's own is passed on as the origin
            // wrote it (`401 bad token Bearer …`): masked like a header value.
            if let Some(reason) = parts.extensions.get::<hyper::ext::ReasonPhrase>()
                && let Some(masked) = creds.mask_value(host, reason.as_bytes())
            {
                match hyper::ext::ReasonPhrase::try_from(masked) {
                    Ok(r) => {
                        parts.extensions.insert(r);
                    }
                    Err(_) => {
                        parts.extensions.remove::<hyper::ext::ReasonPhrase>();
                    }
                }
            }
            let named = named_by_connection(&parts.headers);
            let mut headers = HeaderMap::with_capacity(parts.headers.len());
            for (name, value) in parts.headers.iter() {
                let lower = name.as_str();
                if (super::head::HOP_BY_HOP.contains(&lower) && lower != "host")
                    || named.iter().any(|n| n == lower)
                    || creds.in_name(host, lower)
                {
                    continue;
                }
                let value = match creds.mask_value(host, value.as_bytes()) {
                    Some(masked) => match HeaderValue::from_bytes(&masked) {
                        Ok(v) => v,
                        Err(_) => continue,
                    },
                    None => value.clone(),
                };
                headers.append(name.clone(), value);
            }
            if encoded(&headers) {
                return st.bad_gateway(format!(
                    "{host}:{port} answered with a compressed body although asked for \
                     identity; whalebox cannot mask the credential's secret in it, so it is \
                     not relayed: ask without compression (no --compressed, Accept-Encoding: identity)"
                ));
            }
            // Masking changes the body's length: it goes chunked.
            headers.remove(http::header::CONTENT_LENGTH);
            parts.headers = headers;
            match creds.masker(host) {
                Some(masker) => Response::from_parts(parts, Masked::new(body, masker).boxed()),
                None => Response::from_parts(parts, body.boxed()),
            }
        }
        Err(e) => st.bad_gateway(format!("{host}:{port} did not answer the request: {e}")),
    }
}
