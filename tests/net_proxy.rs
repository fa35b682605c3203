//! The egress proxy (src/net) against origin servers on loopback that each test starts:
//! a tiny HTTP server and a TCP echo, reached through the proxy by curl (plain
//! forwarding and `--proxytunnel`) and by raw clients. Names come from a static resolver
//! the tests control; every upstream is 127.0.0.1, which the proxy refuses unless a test
//! lists it in `allow_private`. Refused hosts, private addresses behind names, disallowed
//! ports, garbage, floods, limits and byte counts. No packet leaves 127.0.0.1: refused
//! addresses are refused before any connection, and the servers count what reached them.

use std::net::{IpAddr, SocketAddr};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::UnboundedReceiver;
use whalebox::net::head::{forward_head, parse_absolute, parse_authority, parse_head};
use whalebox::net::{
    ConnectionRecord, Decide, Decision, Kind, Outcome, Proxy, ProxyConfig, Rules, StaticResolver,
    channel_sink,
};
use whalebox::web::address::AllowList;

const LOOPBACK: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

/// A loopback origin: HTTP (`/bytes/N` answers N bytes, anything else a greeting) or a
/// TCP echo. Counts connections and keeps each HTTP request head it got.
struct Origin {
    port: u16,
    conns: Arc<AtomicUsize>,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Origin {
    async fn http() -> Origin {
        Origin::start(true).await
    }

    async fn echo() -> Origin {
        Origin::start(false).await
    }

    async fn start(http: bool) -> Origin {
        let listener = TcpListener::bind((LOOPBACK, 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let conns = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (c, r) = (conns.clone(), requests.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = listener.accept().await else {
                    return;
                };
                c.fetch_add(1, Ordering::SeqCst);
                let r = r.clone();
                tokio::spawn(async move {
                    if http {
                        serve_http(&mut s, &r).await;
                    } else {
                        let (mut rd, mut wr) = s.split();
                        let _ = tokio::io::copy(&mut rd, &mut wr).await;
                    }
                });
            }
        });
        Origin {
            port,
            conns,
            requests,
        }
    }

    fn conns(&self) -> usize {
        self.conns.load(Ordering::SeqCst)
    }
}

async fn serve_http(s: &mut TcpStream, seen: &Mutex<Vec<String>>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&buf[..end]).to_string();
    let path = head.split(' ').nth(1).unwrap_or("/").to_string();
    let length: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().to_string())
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut got = buf[end..].to_vec();
    while got.len() < length {
        match s.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => got.extend_from_slice(&chunk[..n]),
        }
    }
    seen.lock().unwrap().push(head);
    let body = match path.strip_prefix("/bytes/") {
        Some(n) => vec![b'x'; n.parse().unwrap_or(0)],
        None if length > 0 => format!(
            "got {} bytes, sha {}\n",
            got.len(),
            got.iter()
                .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(*b as u32))
        )
        .into_bytes(),
        None => format!("hello from the origin at {path}\n").into_bytes(),
    };
    let mut reply = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    reply.extend_from_slice(&body);
    let _ = s.write_all(&reply).await;
    let _ = s.shutdown().await;
}

fn allow_all() -> Arc<dyn Decide> {
    Arc::new(|_: &str, _: u16| Decision::Allow)
}

fn resolver() -> Arc<StaticResolver> {
    let v4: IpAddr = LOOPBACK;
    Arc::new(
        StaticResolver::new()
            .with("origin.test", &[v4])
            .with("echo.test", &[v4])
            .with("x.evil.test", &[v4])
            .with("rebind.test", &[v4])
            .with("mapped.test", &["::ffff:127.0.0.1".parse().unwrap()])
            .with("meta.test", &["169.254.169.254".parse().unwrap()])
            .with("intranet.test", &["10.0.0.7".parse().unwrap()])
            .with("half.test", &[v4, "10.0.0.7".parse().unwrap()])
            .with(
                "mixed.test",
                &["192.0.2.10".parse().unwrap(), "10.1.2.3".parse().unwrap()],
            ),
    )
}

fn config(allow_private: &[&str]) -> ProxyConfig {
    ProxyConfig {
        allow_private: AllowList::parse(
            &allow_private
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>(),
        )
        .unwrap(),
        ..ProxyConfig::default()
    }
}

async fn proxy(
    cfg: ProxyConfig,
    decide: Arc<dyn Decide>,
) -> (Proxy, UnboundedReceiver<ConnectionRecord>) {
    let (sink, rx) = channel_sink();
    let p = Proxy::start(cfg, decide, resolver(), sink).await.unwrap();
    (p, rx)
}

async fn next_record(rx: &mut UnboundedReceiver<ConnectionRecord>) -> ConnectionRecord {
    tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("a record within 10 s")
        .expect("the sink is open")
}

/// Sends `bytes` on a new connection to the proxy and reads the answer to the end.
async fn raw(proxy: SocketAddr, bytes: &[u8]) -> String {
    let mut s = TcpStream::connect(proxy).await.unwrap();
    s.write_all(bytes).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).to_string()
}

/// Opens a tunnel; panics unless the proxy answers 200.
async fn tunnel(proxy: SocketAddr, authority: &str) -> TcpStream {
    let mut s = TcpStream::connect(proxy).await.unwrap();
    s.write_all(format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let head = read_head(&mut s).await;
    assert!(
        head.starts_with("HTTP/1.1 200"),
        "CONNECT answered {head:?}"
    );
    s
}

async fn read_head(s: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut b).await {
            Ok(1) => head.push(b[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&head).to_string()
}

/// curl through the proxy: (exit code, stdout, stderr); None (and a loud line) when
/// curl is not installed.
async fn curl(args: Vec<String>) -> Option<(i32, String, String)> {
    tokio::task::spawn_blocking(move || {
        let mut cmd = Command::new("curl");
        // -q first: no ~/.curlrc; no proxy variables or NO_PROXY from the environment.
        cmd.arg("-q")
            .args(["-sS", "--max-time", "20", "--noproxy", ""]);
        for v in [
            "http_proxy",
            "HTTP_PROXY",
            "https_proxy",
            "HTTPS_PROXY",
            "all_proxy",
            "ALL_PROXY",
            "no_proxy",
            "NO_PROXY",
        ] {
            cmd.env_remove(v);
        }
        match cmd.args(&args).output() {
            Ok(o) => Some((
                o.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&o.stdout).to_string(),
                String::from_utf8_lossy(&o.stderr).to_string(),
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                eprintln!("SKIPPED: curl is not installed; this test needs it");
                None
            }
            Err(e) => panic!("running curl: {e}"),
        }
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_plain_http_is_forwarded_to_the_checked_origin() {
    let origin = Origin::http().await;
    let (p, mut rx) = proxy(config(&["127.0.0.1"]), allow_all()).await;
    let url = format!("http://origin.test:{}/hello?x=1", origin.port);
    let Some((code, out, err)) = curl(vec!["-x".into(), p.url(), url]).await else {
        return;
    };
    assert_eq!(code, 0, "curl failed: {err}");
    assert_eq!(out, "hello from the origin at /hello?x=1\n");
    let seen = origin.requests.lock().unwrap()[0].clone();
    assert!(seen.starts_with("GET /hello?x=1 HTTP/1.1\r\n"), "{seen}");
    assert!(
        seen.contains(&format!("Host: origin.test:{}\r\n", origin.port)),
        "{seen}"
    );
    assert!(seen.contains("Connection: close\r\n"), "{seen}");
    assert!(!seen.to_ascii_lowercase().contains("proxy-"), "{seen}");

    let r = next_record(&mut rx).await;
    assert_eq!(r.kind, Kind::Forward);
    assert_eq!(r.host.as_deref(), Some("origin.test"));
    assert_eq!(r.port, Some(origin.port));
    assert_eq!(r.address, Some(SocketAddr::new(LOOPBACK, origin.port)));
    assert_eq!(r.outcome, Outcome::Allowed);
    assert_eq!(r.bytes_up, seen.len() as u64, "the forwarded head");
    assert!(
        r.bytes_down > out.len() as u64,
        "head and body: {}",
        r.bytes_down
    );
    assert!(r.start <= r.end);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_forwarded_post_carries_its_whole_body() {
    let origin = Origin::http().await;
    let (p, mut rx) = proxy(config(&["127.0.0.1"]), allow_all()).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("upload");
    let data: Vec<u8> = (0..150_000u32).map(|i| (i * 7 % 256) as u8).collect();
    std::fs::write(&file, &data).unwrap();
    let url = format!("http://origin.test:{}/upload", origin.port);
    let Some((code, out, err)) = curl(vec![
        "-x".into(),
        p.url(),
        "--data-binary".into(),
        format!("@{}", file.display()),
        url,
    ])
    .await
    else {
        return;
    };
    assert_eq!(code, 0, "curl failed: {err}");
    let sum = data
        .iter()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(*b as u32));
    assert_eq!(out, format!("got 150000 bytes, sha {sum}\n"));
    let seen = origin.requests.lock().unwrap()[0].clone();
    assert!(seen.starts_with("POST /upload HTTP/1.1\r\n"), "{seen}");
    let r = next_record(&mut rx).await;
    assert_eq!(r.bytes_up, (seen.len() + data.len()) as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_proxytunnel_goes_through_connect() {
    let origin = Origin::http().await;
    let (p, mut rx) = proxy(config(&["127.0.0.1"]), allow_all()).await;
    let url = format!("http://origin.test:{}/bytes/200000", origin.port);
    let Some((code, out, err)) = curl(vec!["-p".into(), "-x".into(), p.url(), url]).await else {
        return;
    };
    assert_eq!(code, 0, "curl failed: {err}");
    assert_eq!(out.len(), 200_000);
    // Inside the tunnel curl speaks to the origin directly: origin-form, curl's own Host.
    let seen = origin.requests.lock().unwrap()[0].clone();
    assert!(seen.starts_with("GET /bytes/200000 HTTP/1.1\r\n"), "{seen}");
    let r = next_record(&mut rx).await;
    assert_eq!(r.kind, Kind::Connect);
    assert_eq!(r.outcome, Outcome::Allowed);
    assert_eq!(r.bytes_up, seen.len() as u64);
    assert!(
        r.bytes_down > 200_000 && r.bytes_down < 200_200,
        "{}",
        r.bytes_down
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tunnel_relays_both_ways_and_counts_every_byte() {
    let echo = Origin::echo().await;
    let (p, mut rx) = proxy(config(&["127.0.0.1"]), allow_all()).await;
    let mut s = TcpStream::connect(p.addr()).await.unwrap();
    // The first tunnel bytes in the same packet as the CONNECT head are not lost.
    let auth = format!("echo.test:{}", echo.port);
    s.write_all(format!("CONNECT {auth} HTTP/1.1\r\n\r\nearly").as_bytes())
        .await
        .unwrap();
    let head = read_head(&mut s).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let (mut rd, mut wr) = s.into_split();
    let sent = data.clone();
    let writer = tokio::spawn(async move {
        wr.write_all(&sent).await.unwrap();
        wr.shutdown().await.unwrap();
    });
    let mut back = Vec::new();
    rd.read_to_end(&mut back).await.unwrap();
    writer.await.unwrap();
    assert_eq!(&back[..5], b"early");
    assert!(back[5..] == data[..], "the echo came back whole");
    let r = next_record(&mut rx).await;
    assert_eq!((r.kind, r.outcome), (Kind::Connect, Outcome::Allowed));
    assert_eq!(r.bytes_up, 300_005);
    assert_eq!(r.bytes_down, 300_005);
    assert_eq!(r.note, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_host_gets_403_naming_the_rule_and_how_to_allow_it() {
    let origin = Origin::http().await;
    let rules = Rules {
        allow_domains: vec![],
        deny_domains: vec!["*.evil.test".into()],
        ports: vec![],
        allow_unlisted: true,
    };
    let (p, mut rx) = proxy(config(&["127.0.0.1"]), Arc::new(rules)).await;
    let url = format!("http://x.evil.test:{}/steal", origin.port);
    if let Some((code, out, err)) = curl(vec![
        "-x".into(),
        p.url(),
        "-w".into(),
        "\n%{http_code}".into(),
        url,
    ])
    .await
    {
        assert_eq!(code, 0, "{err}");
        assert!(out.ends_with("\n403"), "{out}");
        assert!(
            out.contains(&format!("x.evil.test:{}", origin.port)),
            "{out}"
        );
        assert!(out.contains("deny_domains (`*.evil.test`)"), "{out}");
        assert!(out.contains("To allow it: remove `*.evil.test`"), "{out}");
        let r = next_record(&mut rx).await;
        assert_eq!(r.kind, Kind::Forward);
        assert_eq!(
            r.rule(),
            Some("x.evil.test is in deny_domains (`*.evil.test`)")
        );
        assert_eq!(r.address, None);
    }
    let answer = raw(
        p.addr(),
        format!("CONNECT X.Evil.Test.:{} HTTP/1.1\r\n\r\n", origin.port).as_bytes(),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{answer}");
    assert!(answer.contains("deny_domains"), "{answer}");
    let r = next_record(&mut rx).await;
    assert_eq!(r.kind, Kind::Connect);
    assert_eq!(r.host.as_deref(), Some("x.evil.test"));
    assert!(matches!(r.outcome, Outcome::Denied { .. }));
    assert_eq!(origin.conns(), 0, "nothing reached the origin");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_and_literals_for_private_addresses_are_refused_before_any_connection() {
    // The origin listens on 127.0.0.1, which this proxy does not allow.
    let origin = Origin::echo().await;
    let (p, mut rx) = proxy(config(&[]), allow_all()).await;
    let port = origin.port;
    for (authority, rule) in [
        (
            format!("rebind.test:{port}"),
            "rebind.test resolves to 127.0.0.1, a loopback address".to_string(),
        ),
        (
            format!("mapped.test:{port}"),
            "mapped.test resolves to 127.0.0.1, a loopback address".into(),
        ),
        (
            format!("meta.test:{port}"),
            "meta.test resolves to 169.254.169.254, a link-local (the cloud metadata address) address"
                .into(),
        ),
        (
            format!("intranet.test:{port}"),
            "intranet.test resolves to 10.0.0.7, a private (10.0.0.0/8) address".into(),
        ),
        // One private address among others refuses the host (no connection is tried).
        (
            format!("mixed.test:{port}"),
            "mixed.test resolves to 192.0.2.10, a documentation address".into(),
        ),
        (
            format!("127.0.0.1:{port}"),
            "127.0.0.1 is a loopback address".into(),
        ),
        (
            format!("0x7f.1:{port}"),
            "127.0.0.1 is a loopback address".into(),
        ),
        (
            format!("[::ffff:7f00:1]:{port}"),
            "127.0.0.1 is a loopback address".into(),
        ),
        (format!("[::1]:{port}"), "::1 is a loopback address".into()),
    ] {
        let answer = raw(
            p.addr(),
            format!("CONNECT {authority} HTTP/1.1\r\n\r\n").as_bytes(),
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{authority}: {answer}");
        assert!(answer.contains(&rule), "{authority}: {answer}");
        assert!(answer.contains("allow_private"), "{authority}: {answer}");
        let r = next_record(&mut rx).await;
        assert_eq!(r.rule(), Some(rule.as_str()), "{authority}");
        assert_eq!(r.address, None);
    }
    // Plain forwarding is held to the same rules.
    let answer = raw(
        p.addr(),
        format!("GET http://rebind.test:{port}/ HTTP/1.1\r\nHost: rebind.test\r\n\r\n").as_bytes(),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert_eq!(origin.conns(), 0, "nothing reached the loopback origin");

    // Listed in allow_private, the same names work; the mapped form connects to the
    // IPv4 address it carries.
    let (p2, mut rx2) = proxy(config(&["127.0.0.1"]), allow_all()).await;
    // One address not allowed refuses the host, even when another is allowed and answers.
    let answer = raw(
        p2.addr(),
        format!("CONNECT half.test:{port} HTTP/1.1\r\n\r\n").as_bytes(),
    )
    .await;
    assert!(
        answer.contains("half.test resolves to 10.0.0.7, a private (10.0.0.0/8) address"),
        "{answer}"
    );
    next_record(&mut rx2).await;
    assert_eq!(origin.conns(), 0);
    let mut s = tunnel(p2.addr(), &format!("mapped.test:{port}")).await;
    s.write_all(b"ping").await.unwrap();
    let mut b = [0u8; 4];
    s.read_exact(&mut b).await.unwrap();
    assert_eq!(&b, b"ping");
    drop(s);
    let r = next_record(&mut rx2).await;
    assert_eq!(r.address, Some(SocketAddr::new(LOOPBACK, port)));
    assert_eq!(origin.conns(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_to_a_port_not_allowed_is_refused() {
    let echo = Origin::echo().await;
    let rules = Rules {
        allow_domains: vec![],
        deny_domains: vec![],
        ports: vec![443],
        allow_unlisted: true,
    };
    let (p, mut rx) = proxy(config(&["127.0.0.1"]), Arc::new(rules)).await;
    let answer = raw(
        p.addr(),
        format!("CONNECT echo.test:{} HTTP/1.1\r\n\r\n", echo.port).as_bytes(),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(
        answer.contains(&format!(
            "port {} is not in the allowed ports [443]",
            echo.port
        )),
        "{answer}"
    );
    assert!(answer.contains(&format!("add {} to the network ports", echo.port)));
    let r = next_record(&mut rx).await;
    assert_eq!(r.port, Some(echo.port));
    assert!(matches!(r.outcome, Outcome::Denied { .. }));
    assert_eq!(echo.conns(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_gets_400_and_the_proxy_keeps_serving() {
    let origin = Origin::http().await;
    let cfg = ProxyConfig {
        max_header_bytes: 4096,
        ..config(&["127.0.0.1"])
    };
    let (p, mut rx) = proxy(cfg, allow_all()).await;
    let huge = format!(
        "GET http://origin.test:{}/ HTTP/1.1\r\nX-Big: {}\r\n\r\n",
        origin.port,
        "a".repeat(10_000)
    );
    let cases: Vec<(Vec<u8>, &str, &str)> = vec![
        (b"\x00\x01\x02garbage\r\n\r\n".to_vec(), "HTTP/1.1 400", "not an HTTP/1.x request"),
        (b"GET /local HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(), "HTTP/1.1 400", "egress proxy"),
        (b"CONNECT nowhere HTTP/1.1\r\n\r\n".to_vec(), "HTTP/1.1 400", "has no port"),
        (
            b"CONNECT evil.test:443@good.test:443 HTTP/1.1\r\n\r\n".to_vec(),
            "HTTP/1.1 400",
            "is not a host and port",
        ),
        (
            b"GET https://origin.test/ HTTP/1.1\r\n\r\n".to_vec(),
            "HTTP/1.1 400",
            "CONNECT host:443",
        ),
        (
            format!(
                "POST http://origin.test:{}/ HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
                origin.port
            )
            .into_bytes(),
            "HTTP/1.1 400",
            "both Content-Length and Transfer-Encoding",
        ),
        (huge.into_bytes(), "HTTP/1.1 431", "larger than 4096 bytes"),
    ];
    for (bytes, status, text) in cases {
        let answer = raw(p.addr(), &bytes).await;
        assert!(answer.starts_with(status), "{answer}");
        assert!(answer.contains(text), "{answer}");
        let r = next_record(&mut rx).await;
        assert!(matches!(r.outcome, Outcome::Rejected { .. }), "{r:?}");
    }
    // A client that connects and says nothing is recorded too.
    drop(TcpStream::connect(p.addr()).await.unwrap());
    let r = next_record(&mut rx).await;
    assert_eq!(r.kind, Kind::Unknown);
    assert!(matches!(r.outcome, Outcome::Rejected { status: 0, .. }));

    assert_eq!(origin.conns(), 0);
    let answer = raw(
        p.addr(),
        format!(
            "GET http://origin.test:{}/still HTTP/1.1\r\n\r\n",
            origin.port
        )
        .as_bytes(),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    assert!(
        answer.ends_with("hello from the origin at /still\n"),
        "{answer}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_tunnels_each_get_their_own_bytes() {
    const N: usize = 100;
    let echo = Origin::echo().await;
    let (p, mut rx) = proxy(config(&["127.0.0.1"]), allow_all()).await;
    let auth = format!("echo.test:{}", echo.port);
    let mut clients = Vec::new();
    for i in 0..N {
        let (addr, auth) = (p.addr(), auth.clone());
        clients.push(tokio::spawn(async move {
            let mut s = tunnel(addr, &auth).await;
            let data = vec![(i % 256) as u8; 10_000 + i];
            s.write_all(&data).await.unwrap();
            s.shutdown().await.unwrap();
            let mut back = Vec::new();
            s.read_to_end(&mut back).await.unwrap();
            assert!(back == data, "client {i} got its own bytes back");
        }));
    }
    for c in clients {
        c.await.unwrap();
    }
    let mut sizes = Vec::new();
    for _ in 0..N {
        let r = next_record(&mut rx).await;
        assert_eq!(r.outcome, Outcome::Allowed);
        assert_eq!(r.bytes_up, r.bytes_down);
        sizes.push(r.bytes_up as usize);
    }
    sizes.sort();
    assert_eq!(sizes, (0..N).map(|i| 10_000 + i).collect::<Vec<_>>());
    assert_eq!(echo.conns(), N);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_connection_limit_the_proxy_answers_503_then_recovers() {
    let echo = Origin::echo().await;
    let cfg = ProxyConfig {
        max_connections: 4,
        ..config(&["127.0.0.1"])
    };
    let (p, mut rx) = proxy(cfg, allow_all()).await;
    let auth = format!("echo.test:{}", echo.port);
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(tunnel(p.addr(), &auth).await);
    }
    let answer = raw(
        p.addr(),
        format!("CONNECT {auth} HTTP/1.1\r\n\r\n").as_bytes(),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("limit of 4 connections"), "{answer}");
    let r = next_record(&mut rx).await;
    assert!(matches!(r.outcome, Outcome::Rejected { status: 503, .. }));
    held.pop();
    next_record(&mut rx).await; // the closed tunnel, once its slot is free
    let mut s = tunnel(p.addr(), &auth).await;
    s.write_all(b"again").await.unwrap();
    let mut b = [0u8; 5];
    s.read_exact(&mut b).await.unwrap();
    assert_eq!(&b, b"again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_tunnels_and_silent_clients_are_closed() {
    let echo = Origin::echo().await;
    let cfg = ProxyConfig {
        idle_timeout: Duration::from_millis(300),
        head_timeout: Duration::from_millis(600),
        ..config(&["127.0.0.1"])
    };
    let (p, mut rx) = proxy(cfg, allow_all()).await;
    let mut s = tunnel(p.addr(), &format!("echo.test:{}", echo.port)).await;
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest)).await;
    assert!(read.is_ok(), "the idle tunnel was closed");
    let r = next_record(&mut rx).await;
    assert_eq!(r.outcome, Outcome::Allowed);
    assert!(
        r.note.as_deref().unwrap_or("").contains("without a byte"),
        "{r:?}"
    );

    // A head dripped slower than the idle timeout: 408.
    let mut s = TcpStream::connect(p.addr()).await.unwrap();
    s.write_all(b"GET http://origin.test/ HTTP/1.1\r\n")
        .await
        .unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out))
        .await
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(&out).starts_with("HTTP/1.1 408"));
    next_record(&mut rx).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_cuts_open_tunnels_and_still_records_them() {
    let echo = Origin::echo().await;
    let (p, mut rx) = proxy(config(&["127.0.0.1"]), allow_all()).await;
    let addr = p.addr();
    let mut s = tunnel(addr, &format!("echo.test:{}", echo.port)).await;
    s.write_all(b"abc").await.unwrap();
    let mut b = [0u8; 3];
    s.read_exact(&mut b).await.unwrap();
    p.shutdown().await;
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest)).await;
    assert!(read.is_ok(), "the tunnel ended with the proxy");
    let r = next_record(&mut rx).await;
    assert_eq!(r.note.as_deref(), Some("the proxy stopped"));
    assert_eq!((r.bytes_up, r.bytes_down), (3, 3));
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "nothing listens any more"
    );
}

#[test]
fn authorities_in_every_spelling() {
    let t = parse_authority("Example.ORG.:443", None).unwrap();
    assert_eq!(
        (t.host.as_str(), t.port, t.literal),
        ("example.org", 443, None)
    );
    let t = parse_authority("0x7f.1:80", None).unwrap();
    assert_eq!(t.host, "127.0.0.1");
    let t = parse_authority("[::ffff:7f00:1]:443", None).unwrap();
    assert_eq!(t.literal, Some("::ffff:127.0.0.1".parse().unwrap()));
    assert_eq!(parse_authority("a.example", Some(80)).unwrap().port, 80);
    for bad in [
        "a.example",
        "a.example:0",
        "a.example:70000",
        "evil.example:443@good.example",
        "a\\b.example:80",
        "::1:443",
        "[::1:443",
        ":443",
        "a b:80",
        "%61.example:80",
    ] {
        assert!(parse_authority(bad, None).is_err(), "{bad} must be refused");
    }
}

#[test]
fn absolute_uris_keep_the_clients_path() {
    let (t, p) = parse_absolute("http://a.example:8080/x/../y?q=1#frag").unwrap();
    assert_eq!((t.host.as_str(), t.port), ("a.example", 8080));
    assert_eq!(p, "/x/../y?q=1");
    let (_, p) = parse_absolute("HTTP://a.example?q").unwrap();
    assert_eq!(p, "/?q");
    assert!(
        parse_absolute("/path")
            .unwrap_err()
            .contains("egress proxy")
    );
    assert!(
        parse_absolute("https://a.example/")
            .unwrap_err()
            .contains("CONNECT")
    );
    assert!(parse_absolute("http://u:p@a.example/").is_err());
    assert!(parse_absolute("http://evil.example\\@good.example/").is_err());
}

#[test]
fn forwarded_heads_drop_hop_by_hop_headers() {
    let raw = b"GET http://a.example:81/p HTTP/1.1\r\nHost: other.example\r\n\
                    Proxy-Authorization: Basic eA==\r\nConnection: keep-alive, X-Hop\r\n\
                    X-Hop: 1\r\nAccept: */*\r\n\r\n";
    let head = parse_head(raw).unwrap().unwrap();
    let (t, p) = parse_absolute(&head.target).unwrap();
    let out = String::from_utf8(forward_head(&head, &t, &p).unwrap()).unwrap();
    assert_eq!(
        out,
        "GET /p HTTP/1.1\r\nHost: a.example:81\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    );
    let smuggle = parse_head(
            b"POST http://a.example/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
        )
        .unwrap()
        .unwrap();
    assert!(forward_head(&smuggle, &t, "/").is_err());
}
