//! The egress proxy: a listener on 127.0.0.1 (a random port) serving `CONNECT host:port`
//! tunnels and plain-HTTP requests in absolute form. Per connection: read the head
//! ([`super::head`]), ask the [`Decide`]r about the host and port, resolve the name
//! ([`Resolve`]), refuse if any address is loopback, private, link-local or metadata
//! (the web group's address rules, [`crate::web::address`]) unless `allow_private`
//! names it, connect to an address it checked, relay ([`super::relay`]), and hand one
//! [`ConnectionRecord`] to the sink. A refusal is an HTTP answer whose text names the
//! host, the rule and how to allow it.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

pub use super::config::ProxyConfig;
use super::credential;
use super::decide::{Decide, Decision};
use super::head::{self, HeadError, Target};
use super::intercept::{self, Tally};
use super::record::{ConnectionRecord, Kind, Outcome, Sink};
use super::relay::{self, Counters, End};
use super::resolve::Resolve;
use crate::web::address::{canonical, private_kind};

/// What every door of one proxy shares: the limits, the resolver, the connection slots.
struct Shared {
    config: ProxyConfig,
    resolve: Arc<dyn Resolve>,
    slots: Arc<Semaphore>,
    next_id: AtomicU64,
}

/// One listener of the proxy and what decides and records its connections: a task's own
/// door knows the task, so its asks and records name it.
#[derive(Clone)]
pub struct DoorConfig {
    pub decide: Arc<dyn Decide>,
    pub sink: Sink,
    /// Copied into each record (the task id).
    pub label: Option<String>,
    /// Names the programs behind a connection (client address, door address), when it
    /// is accepted: see `net::programs`.
    pub identify: Option<Identify>,
}

/// See [`DoorConfig::identify`]: the programs behind a connection, or, when another task
/// holds the client end (its door is its own), who.
pub type Identify =
    Arc<dyn Fn(SocketAddr, SocketAddr) -> Result<Option<Vec<String>>, Foreign> + Send + Sync>;

/// A connection to a door that is not its task's: what the door answers, and where the
/// refusal is recorded (the task that made it, not the door's).
pub struct Foreign {
    /// The task whose processes connected.
    pub task: String,
    pub sink: Sink,
    pub programs: Option<Vec<String>>,
}

/// The proxy's shared part; [`Egress::open`] serves one more listener with it.
#[derive(Clone)]
pub struct Egress {
    shared: Arc<Shared>,
    stop: CancellationToken,
}

impl Egress {
    pub fn new(config: ProxyConfig, resolve: Arc<dyn Resolve>) -> Egress {
        Egress {
            shared: Arc::new(Shared {
                slots: Arc::new(Semaphore::new(config.max_connections)),
                config,
                resolve,
                next_id: AtomicU64::new(1),
            }),
            stop: CancellationToken::new(),
        }
    }

    /// Serve `listener` (any TCP listener: one on 127.0.0.1, or one a task bound in its
    /// own network namespace and handed over) until the door is dropped or the proxy
    /// stops. Call from within a tokio runtime.
    pub fn open(&self, listener: TcpListener, door: DoorConfig) -> io::Result<Door> {
        let addr = listener.local_addr()?;
        let stop = self.stop.child_token();
        let active = Arc::new(AtomicUsize::new(0));
        let task = tokio::spawn(accept_loop(
            listener,
            self.shared.clone(),
            Arc::new(door),
            active.clone(),
            stop.clone(),
        ));
        Ok(Door {
            addr,
            stop,
            task,
            active,
        })
    }

    /// Bind 127.0.0.1 on a port the kernel picks and serve it as a door.
    pub async fn open_loopback(&self, door: DoorConfig) -> io::Result<Door> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        self.open(listener, door)
    }

    /// Stop every door and end every connection (each still recorded).
    pub fn stop(&self) {
        self.stop.cancel();
    }
}

/// A served listener; dropping it (or [`Door::shutdown`]) stops it and ends its
/// connections, each still recorded.
pub struct Door {
    addr: SocketAddr,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
    active: Arc<AtomicUsize>,
}

impl Door {
    /// Connections accepted and not yet recorded.
    pub fn active(&self) -> usize {
        self.active.load(Ordering::SeqCst)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`, for `HTTP_PROXY` and friends.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting, ends every connection, and waits for the listener to close.
    pub async fn shutdown(mut self) {
        self.stop.cancel();
        let _ = (&mut self.task).await;
    }
}

impl Drop for Door {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// A proxy with one door on 127.0.0.1: what tests and single-listener callers need.
pub struct Proxy {
    door: Door,
}

impl Proxy {
    /// Binds 127.0.0.1 on a port the kernel picks and serves until stopped.
    pub async fn start(
        config: ProxyConfig,
        decide: Arc<dyn Decide>,
        resolve: Arc<dyn Resolve>,
        sink: Sink,
    ) -> io::Result<Proxy> {
        let egress = Egress::new(config, resolve);
        let door = egress
            .open_loopback(DoorConfig {
                decide,
                sink,
                label: None,
                identify: None,
            })
            .await?;
        Ok(Proxy { door })
    }

    pub fn addr(&self) -> SocketAddr {
        self.door.addr()
    }

    /// `http://127.0.0.1:PORT`, for `HTTP_PROXY` and friends.
    pub fn url(&self) -> String {
        self.door.url()
    }

    /// Stops accepting, ends every connection, and waits for the listener to close.
    pub async fn shutdown(self) {
        self.door.shutdown().await
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    door: Arc<DoorConfig>,
    active: Arc<AtomicUsize>,
    stop: CancellationToken,
) {
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => return,
            a = listener.accept() => a,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!("egress proxy: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        let door = door.clone();
        let stop = stop.child_token();
        let active = active.clone();
        active.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(async move {
            connection(stream, peer, shared, door, stop).await;
            active.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

/// What `serve` learned, kept outside its future so a cancelled connection is still
/// recorded with what it got to.
struct Conn {
    kind: Kind,
    target: Option<Target>,
    address: Option<SocketAddr>,
    note: Option<String>,
    counters: Counters,
    /// The credentials swapped into the requests.
    credential: Option<String>,
}

async fn connection(
    mut stream: TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
    door: Arc<DoorConfig>,
    stop: CancellationToken,
) {
    let start = SystemTime::now();
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    // Named before the proxy answers, while the program surely waits on its socket
    // (a lookup is a few /proc reads and pidfd calls: tens of microseconds).
    let programs = match (&door.identify, stream.local_addr()) {
        (Some(identify), Ok(local)) => identify(peer, local),
        _ => Ok(None),
    };
    let programs = match programs {
        Ok(p) => p,
        Err(foreign) => {
            // Another command's door: its decisions, questions and records would name
            // that command, so it serves only its own.
            let why = format!(
                "this proxy door belongs to another command of the session; task {} connected \
                 to it. Each command's own HTTP_PROXY names its door",
                foreign.task
            );
            answer(&mut stream, 403, "Forbidden", &why, &shared).await;
            (foreign.sink)(ConnectionRecord {
                id,
                task: Some(foreign.task),
                client: peer,
                kind: Kind::Unknown,
                host: None,
                port: None,
                address: None,
                outcome: Outcome::Rejected { status: 403, why },
                bytes_up: 0,
                bytes_down: 0,
                start,
                end: SystemTime::now(),
                note: None,
                credential: None,
                programs: foreign.programs,
            });
            return;
        }
    };
    let mut conn = Conn {
        kind: Kind::Unknown,
        target: None,
        address: None,
        note: None,
        counters: Counters::default(),
        credential: None,
    };
    let outcome = match shared.slots.clone().try_acquire_owned() {
        Err(_) => {
            let why = format!(
                "whalebox's egress proxy is serving its limit of {} connections at once; \
                 retry when some have finished",
                shared.config.max_connections
            );
            answer(&mut stream, 503, "Service Unavailable", &why, &shared).await;
            Outcome::Rejected { status: 503, why }
        }
        Ok(_permit) => tokio::select! {
            o = serve(&mut stream, &mut conn, &shared, &door) => o,
            _ = stop.cancelled() => {
                conn.note = Some("the proxy stopped".into());
                match conn.address {
                    Some(_) => Outcome::Allowed,
                    None => Outcome::Failed { why: "the proxy stopped".into() },
                }
            }
        },
    };
    let record = ConnectionRecord {
        id,
        task: door.label.clone(),
        client: peer,
        kind: conn.kind,
        host: conn.target.as_ref().map(|t| t.host.clone()),
        port: conn.target.as_ref().map(|t| t.port),
        address: conn.address,
        outcome,
        bytes_up: conn.counters.up.load(Ordering::Relaxed),
        bytes_down: conn.counters.down.load(Ordering::Relaxed),
        start,
        end: SystemTime::now(),
        note: conn.note,
        credential: conn.credential,
        programs,
    };
    (door.sink)(record);
}

async fn serve(
    stream: &mut TcpStream,
    conn: &mut Conn,
    shared: &Shared,
    door: &DoorConfig,
) -> Outcome {
    let cfg = &shared.config;
    let mut buf = Vec::new();
    let parsed = head::read_head(
        stream,
        &mut buf,
        cfg.max_header_bytes,
        cfg.idle_timeout.min(cfg.head_timeout),
        cfg.head_timeout,
    )
    .await;
    let mut h = match parsed {
        Ok(h) => h,
        Err(HeadError::Closed) => {
            return Outcome::Rejected {
                status: 0,
                why: "closed before sending a request".into(),
            };
        }
        Err(HeadError::TooLarge) => {
            let why = format!(
                "the request head is larger than {} bytes or has too many headers",
                cfg.max_header_bytes
            );
            return reject(stream, 431, "Request Header Fields Too Large", why, shared).await;
        }
        Err(HeadError::Timeout) => {
            let why = "no complete request head in time".to_string();
            return reject(stream, 408, "Request Timeout", why, shared).await;
        }
        Err(HeadError::Malformed(why)) => {
            return reject(stream, 400, "Bad Request", why, shared).await;
        }
    };
    let connect = h.method.eq_ignore_ascii_case("CONNECT");
    conn.kind = if connect {
        Kind::Connect
    } else {
        Kind::Forward
    };
    let parsed = if connect {
        head::parse_authority(&h.target, None).map(|t| (t, String::new()))
    } else {
        head::parse_absolute(&h.target)
    };
    let (target, path) = match parsed {
        Ok(t) => t,
        Err(why) => return reject(stream, 400, "Bad Request", why, shared).await,
    };
    conn.target = Some(target.clone());
    // Credentials: a placeholder is refused where its credential is not sent (before any
    // decision or ask), and swapped in a plain request's head where it is.
    let mut swapped = None;
    if let Some(creds) = &cfg.credentials {
        let wait = cfg.idle_timeout.min(cfg.head_timeout);
        match credential::screen_request(creds, stream, &mut buf, &mut h, &target, connect, wait)
            .await
        {
            Ok(used) => swapped = used,
            Err(l) => return refuse(stream, &target, l.rule, l.how_to_allow, shared).await,
        }
    }
    let upstream_head = if connect {
        None
    } else {
        match head::forward_head(&h, &target, &path) {
            Ok(bytes) => Some(bytes),
            Err(why) => return reject(stream, 400, "Bad Request", why, shared).await,
        }
    };

    // The decision, on the host as the proxy reads it.
    if let Decision::Deny { rule, how_to_allow } =
        door.decide.decide(&target.host, target.port).await
    {
        return refuse(stream, &target, rule, how_to_allow, shared).await;
    }

    // The addresses: the literal, or every address the name resolves to, all checked.
    let ips = match target.literal {
        Some(ip) => vec![ip],
        None => {
            let resolved =
                tokio::time::timeout(cfg.connect_timeout, shared.resolve.resolve(&target.host))
                    .await;
            match resolved {
                Ok(Ok(ips)) if !ips.is_empty() => ips,
                Ok(Ok(_)) => {
                    let why = format!("{} resolves to no address", target.host);
                    return fail(stream, 502, "Bad Gateway", why, shared).await;
                }
                Ok(Err(e)) => {
                    let why = format!("{} does not resolve: {e}", target.host);
                    return fail(stream, 502, "Bad Gateway", why, shared).await;
                }
                Err(_) => {
                    let why = format!("resolving {} took too long", target.host);
                    return fail(stream, 504, "Gateway Timeout", why, shared).await;
                }
            }
        }
    };
    let mut checked = Vec::with_capacity(ips.len());
    for ip in ips {
        let ip = canonical(ip);
        if let Some(kind) = private_kind(ip)
            && !cfg.allow_private.allows(ip)
        {
            let rule = if target.literal.is_some() {
                format!("{ip} is a {kind} address")
            } else {
                format!("{} resolves to {ip}, a {kind} address", target.host)
            };
            let how = format!(
                "loopback, private and link-local addresses are refused so a command cannot \
                 reach this machine, its network or the cloud metadata service through the \
                 proxy; if {ip} is meant to be reachable, add \"{ip}\" to allow_private"
            );
            return refuse(stream, &target, rule, how, shared).await;
        }
        checked.push(SocketAddr::new(ip, target.port));
    }

    // Connect to a checked address, never to the name again.
    let mut origin = None;
    let mut last_err = String::new();
    for addr in &checked {
        match tokio::time::timeout(cfg.connect_timeout, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => {
                origin = Some((s, *addr));
                break;
            }
            Ok(Err(e)) => last_err = format!("{addr}: {e}"),
            Err(_) => last_err = format!("{addr}: no answer within {:?}", cfg.connect_timeout),
        }
    }
    let Some((mut origin, addr)) = origin else {
        let why = format!(
            "could not connect to {}:{} ({last_err})",
            target.host, target.port
        );
        return fail(stream, 502, "Bad Gateway", why, shared).await;
    };
    let _ = origin.set_nodelay(true);
    conn.address = Some(addr);

    // A credential host's TLS is ended here, its requests swapped one by one.
    if let Some(creds) = cfg.credentials.as_ref().filter(|c| c.covers(&target.host))
        && connect
    {
        let mut tally = Tally {
            counters: &conn.counters,
            credential: &mut conn.credential,
            note: &mut conn.note,
        };
        let early = &buf[h.len..];
        return intercept::intercept(
            stream,
            early,
            (origin, addr),
            &target,
            creds,
            cfg,
            &mut tally,
        )
        .await;
    }

    // What the client sent after the head is the tunnel's or the body's first bytes.
    let early = &buf[h.len..];

    // A plain request to a credential host is answered through the same per-request
    // path, so what the origin echoes back is masked as inside TLS.
    if let Some(creds) = cfg.credentials.as_ref().filter(|c| c.covers(&target.host))
        && let Some(head) = &upstream_head
    {
        let mut first = head.clone();
        first.extend_from_slice(early);
        conn.credential = swapped;
        let mut tally = Tally {
            counters: &conn.counters,
            credential: &mut conn.credential,
            note: &mut conn.note,
        };
        return intercept::forward_plain(
            stream,
            first,
            (origin, addr),
            &target,
            creds,
            cfg,
            &mut tally,
        )
        .await;
    }
    let sent = match upstream_head {
        None => {
            if let Err(e) = stream
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
            {
                conn.note = Some(format!("writing to the client: {e}"));
                return Outcome::Allowed;
            }
            origin.write_all(early).await.map(|_| early.len())
        }
        Some(mut head) => {
            head.extend_from_slice(early);
            origin.write_all(&head).await.map(|_| head.len())
        }
    };
    match sent {
        Ok(n) => {
            conn.counters.up.fetch_add(n as u64, Ordering::Relaxed);
            conn.credential = swapped;
        }
        Err(e) => {
            conn.note = Some(format!("writing to {addr}: {e}"));
            return Outcome::Allowed;
        }
    }
    match relay::relay(stream, &mut origin, &conn.counters, cfg.idle_timeout).await {
        End::Closed => {}
        End::Idle => {
            conn.note = Some(format!(
                "closed after {:?} without a byte either way",
                cfg.idle_timeout
            ))
        }
        End::Error(e) => conn.note = Some(e),
    }
    Outcome::Allowed
}

async fn refuse(
    stream: &mut TcpStream,
    target: &Target,
    rule: String,
    how_to_allow: String,
    shared: &Shared,
) -> Outcome {
    let host = match target.literal {
        Some(IpAddr::V6(ip)) => format!("[{ip}]"),
        _ => target.host.clone(),
    };
    let body = format!(
        "whalebox refused the connection to {host}:{}.\nRule: {rule}\nTo allow it: {how_to_allow}\n",
        target.port
    );
    answer(stream, 403, "Forbidden", &body, shared).await;
    Outcome::Denied { rule, how_to_allow }
}

async fn reject(
    stream: &mut TcpStream,
    status: u16,
    reason: &str,
    why: String,
    shared: &Shared,
) -> Outcome {
    answer(
        stream,
        status,
        reason,
        &format!("whalebox's egress proxy: {why}\n"),
        shared,
    )
    .await;
    Outcome::Rejected { status, why }
}

async fn fail(
    stream: &mut TcpStream,
    status: u16,
    reason: &str,
    why: String,
    shared: &Shared,
) -> Outcome {
    answer(
        stream,
        status,
        reason,
        &format!("whalebox's egress proxy: {why}\n"),
        shared,
    )
    .await;
    Outcome::Failed { why }
}

/// A complete answer with a text body, then the connection closes. Bounded by the idle
/// timeout, so a client that never reads cannot hold the task. What the client still
/// sends is read and dropped for a moment, so closing with unread bytes does not reset
/// the connection before the client has read the answer.
async fn answer(stream: &mut TcpStream, status: u16, reason: &str, body: &str, shared: &Shared) {
    let mut msg = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    msg.extend_from_slice(body.as_bytes());
    let _ = tokio::time::timeout(shared.config.idle_timeout, async {
        stream.write_all(&msg).await?;
        stream.shutdown().await
    })
    .await;
    let mut sink = [0u8; 8192];
    let _ = tokio::time::timeout(Duration::from_millis(500), async {
        let mut drained = 0usize;
        while drained < 1 << 20 {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => drained += n,
            }
        }
    })
    .await;
}
