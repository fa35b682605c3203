//! Credentials the task never sees (src/net/credential.rs, intercept.rs), against origins
//! on loopback that each test starts: HTTPS origins with certificates from a test CA
//! made here (rcgen), trusted by the proxy through `upstream_roots`, and plain-HTTP
//! origins; each keeps the heads of the requests it got. Driven by real curl (and git)
//! through the proxy, trusting the session CA by the bundle the proxy writes. Names come
//! from a static resolver; every origin is 127.0.0.1, allowed by `allow_private`. No
//! packet leaves 127.0.0.1.

mod common;

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType, IsCa, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::UnboundedReceiver;
use whalebox::net::{
    ConnectionRecord, Credential, Credentials, Decide, Decision, Kind, Outcome, Proxy, ProxyConfig,
    Sending, StaticResolver, channel_sink, trust_env,
};
use whalebox::web::address::AllowList;

const LOOPBACK: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
const SECRET: &str = "s3cret-value-9f8e7d";
const BASIC_SECRET: &str = "basic-s3cret-42";

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A certificate authority for the test's origins (not the proxy's session CA).
struct TestCa {
    ca: CertifiedIssuer<'static, KeyPair>,
}

impl TestCa {
    fn new(name: &str) -> TestCa {
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, name);
        params.distinguished_name = dn;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        TestCa {
            ca: CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap(),
        }
    }

    fn der(&self) -> CertificateDer<'static> {
        self.ca.der().clone()
    }

    fn write_pem(&self, dir: &Path) -> PathBuf {
        let p = dir.join("test-ca.pem");
        std::fs::write(&p, self.ca.pem()).unwrap();
        p
    }

    /// A TLS server configuration for `host` (HTTP/1.1), signed by this CA.
    fn server(&self, host: &str) -> Arc<rustls::ServerConfig> {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec![host.to_string()])
            .unwrap()
            .signed_by(&key, &self.ca)
            .unwrap();
        let mut cfg = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .unwrap();
        cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
        Arc::new(cfg)
    }
}

/// What an origin saw of one request.
#[derive(Debug, Clone)]
struct Seen {
    conn: usize,
    path: String,
    host: String,
    authorization: Option<String>,
    all: String,
}

/// A loopback HTTP/1.1 origin (keep-alive), over TLS or plain; answers
/// `hello from NAME at PATH` and keeps what it saw.
struct Origin {
    port: u16,
    conns: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Origin {
    async fn start(name: &'static str, tls: Option<Arc<rustls::ServerConfig>>) -> Origin {
        let listener = TcpListener::bind((LOOPBACK, 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let conns = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (c, s) = (conns.clone(), seen.clone());
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let n = c.fetch_add(1, Ordering::SeqCst) + 1;
                let s = s.clone();
                let tls = tls.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                        let s = s.clone();
                        async move {
                            let h = req.headers();
                            let get = |k: &str| {
                                h.get(k)
                                    .map(|v| String::from_utf8_lossy(v.as_bytes()).to_string())
                            };
                            let path = req
                                .uri()
                                .path_and_query()
                                .map(|p| p.to_string())
                                .unwrap_or_default();
                            let all = format!("{} {:?}", req.uri(), h);
                            s.lock().unwrap().push(Seen {
                                conn: n,
                                path: path.clone(),
                                host: get("host").unwrap_or_default(),
                                authorization: get("authorization"),
                                all,
                            });
                            let challenge = path.contains("service=git-upload-pack")
                                && h.get("authorization").is_none();
                            let auth = h.get("authorization").cloned();
                            let _ = req.into_body().collect().await;
                            // `/echo`: the request's Authorization in the body too.
                            let echoed = match (&auth, path.starts_with("/echo")) {
                                (Some(a), true) => {
                                    format!("auth={}\n", String::from_utf8_lossy(a.as_bytes()))
                                }
                                _ => String::new(),
                            };
                            let mut resp = Response::new(Full::new(Bytes::from(format!(
                                "hello from {name} at {path}\n{echoed}"
                            ))));
                            // An origin that echoes what it got (the proxy masks the secret).
                            if let Some(a) = auth.clone() {
                                resp.headers_mut().insert("x-seen-auth", a);
                            }
                            // `/reason`: the Authorization in the status line's reason
                            // phrase, as an API naming the token it refuses might.
                            if let (Some(a), true) = (&auth, path.starts_with("/reason")) {
                                *resp.status_mut() = hyper::StatusCode::UNAUTHORIZED;
                                let mut reason = b"bad credentials: ".to_vec();
                                reason.extend_from_slice(a.as_bytes());
                                resp.extensions_mut()
                                    .insert(hyper::ext::ReasonPhrase::try_from(reason).unwrap());
                            }
                            // `/name`: the token in a header's name.
                            if let (Some(a), true) = (&auth, path.starts_with("/name")) {
                                let token = String::from_utf8_lossy(a.as_bytes())
                                    .rsplit(' ')
                                    .next()
                                    .unwrap_or_default()
                                    .to_string();
                                resp.headers_mut().insert(
                                    hyper::header::HeaderName::from_bytes(
                                        format!("x-token-{token}").as_bytes(),
                                    )
                                    .unwrap(),
                                    hyper::header::HeaderValue::from_static("seen"),
                                );
                            }
                            // `/twice-encoded`: `identity` first, then `gzip`;
                            // `/te-gzip`: a transfer coding besides chunked.
                            if path.starts_with("/twice-encoded") {
                                let h = resp.headers_mut();
                                h.append("content-encoding", "identity".parse().unwrap());
                                h.append("content-encoding", "gzip".parse().unwrap());
                            }
                            if path.starts_with("/te-gzip") {
                                resp.headers_mut()
                                    .insert("transfer-encoding", "gzip, chunked".parse().unwrap());
                            }
                            // git asks for credentials only when challenged.
                            if challenge {
                                *resp.status_mut() = hyper::StatusCode::UNAUTHORIZED;
                                resp.headers_mut().insert(
                                    "www-authenticate",
                                    hyper::header::HeaderValue::from_static("Basic realm=\"git\""),
                                );
                            }
                            Ok::<_, std::convert::Infallible>(resp)
                        }
                    });
                    let http = hyper::server::conn::http1::Builder::new();
                    match tls {
                        Some(cfg) => {
                            let Ok(stream) = tokio_rustls::TlsAcceptor::from(cfg).accept(tcp).await
                            else {
                                return;
                            };
                            let _ = http.serve_connection(TokioIo::new(stream), service).await;
                        }
                        None => {
                            let _ = http.serve_connection(TokioIo::new(tcp), service).await;
                        }
                    }
                });
            }
        });
        Origin { port, conns, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn conns(&self) -> usize {
        self.conns.load(Ordering::SeqCst)
    }
}

fn resolver() -> Arc<StaticResolver> {
    let mut r = StaticResolver::new();
    for h in [
        "api.cred.test",
        "git.cred.test",
        "bad.cred.test",
        "plain.cred.test",
        "other.cred.test",
    ] {
        r = r.with(h, &[LOOPBACK]);
    }
    Arc::new(r)
}

fn credentials() -> Arc<Credentials> {
    Arc::new(
        Credentials::new(vec![
            Credential {
                name: "api".into(),
                env: "API_TOKEN".into(),
                hosts: vec!["api.cred.test".into(), "bad.cred.test".into()],
                sending: Sending::default(),
                secret: SECRET.into(),
                plain_http: false,
            },
            Credential {
                name: "git".into(),
                env: "GIT_TOKEN".into(),
                hosts: vec!["git.cred.test".into()],
                sending: Sending::Basic {
                    user: "x-access-token".into(),
                },
                secret: BASIC_SECRET.into(),
                plain_http: false,
            },
        ])
        .unwrap(),
    )
}

fn placeholder(creds: &Credentials, var: &str) -> String {
    creds
        .task_env()
        .into_iter()
        .find(|(k, _)| k == var)
        .unwrap()
        .1
}

/// A proxy with the credentials, trusting `roots` upstream; its records.
async fn proxy(
    creds: Arc<Credentials>,
    roots: Vec<CertificateDer<'static>>,
    max_header_bytes: Option<usize>,
) -> (Proxy, UnboundedReceiver<ConnectionRecord>) {
    let cfg = ProxyConfig {
        allow_private: AllowList::parse(&["127.0.0.1".to_string()]).unwrap(),
        credentials: Some(creds),
        upstream_roots: roots,
        max_header_bytes: max_header_bytes.unwrap_or(64 * 1024),
        ..ProxyConfig::default()
    };
    let allow: Arc<dyn Decide> = Arc::new(|_: &str, _: u16| Decision::Allow);
    let (sink, rx) = channel_sink();
    let p = Proxy::start(cfg, allow, resolver(), sink).await.unwrap();
    (p, rx)
}

async fn next_record(rx: &mut UnboundedReceiver<ConnectionRecord>) -> ConnectionRecord {
    let r = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("a record within 10 s")
        .expect("the sink is open");
    let text = format!("{r:?}");
    assert!(
        !text.contains(SECRET) && !text.contains(BASIC_SECRET),
        "a record holds a secret: {text}"
    );
    r
}

/// curl through `proxy`: (exit code, stdout, stderr); None (and a loud line) when curl
/// is not installed.
async fn curl(proxy: &Proxy, args: Vec<String>) -> Option<(i32, String, String)> {
    let proxy = proxy.url();
    tokio::task::spawn_blocking(move || {
        let mut cmd = Command::new("curl");
        // -q first: no ~/.curlrc; no proxy variables or NO_PROXY from the environment.
        cmd.arg("-q")
            .args(["-sS", "--max-time", "20", "--noproxy", "", "-x", &proxy]);
        for v in [
            "http_proxy",
            "HTTP_PROXY",
            "https_proxy",
            "HTTPS_PROXY",
            "all_proxy",
            "ALL_PROXY",
            "no_proxy",
            "NO_PROXY",
            "SSL_CERT_FILE",
            "CURL_CA_BUNDLE",
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

/// The session CA bundle the task would get, written into a fresh directory.
fn bundle(creds: &Credentials) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = creds.write_ca_bundle(dir.path()).unwrap();
    (dir, path.display().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_bearer_placeholder_reaches_the_origin_as_the_secret() {
    let ca = TestCa::new("test origins");
    let origin = Origin::start("api", Some(ca.server("api.cred.test"))).await;
    let creds = credentials();
    let ph = placeholder(&creds, "API_TOKEN");
    let (p, mut rx) = proxy(creds.clone(), vec![ca.der()], None).await;
    let (_dir, bundle) = bundle(&creds);
    let url = format!("https://api.cred.test:{}/user?x=1", origin.port);
    let Some((code, out, err)) = curl(
        &p,
        vec![
            "--cacert".into(),
            bundle,
            "-i".into(),
            "-H".into(),
            format!("Authorization: Bearer {ph}"),
            url,
        ],
    )
    .await
    else {
        return;
    };
    assert_eq!(code, 0, "curl failed: {err}");
    assert!(
        out.ends_with("\r\n\r\nhello from api at /user?x=1\n"),
        "{out}"
    );
    // The origin's echo of the secret comes back to the task as the placeholder.
    assert!(!out.contains(SECRET), "{out}");
    assert!(
        out.contains(&format!("x-seen-auth: Bearer {ph}\r\n")),
        "{out}"
    );
    let seen = origin.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].authorization.as_deref(),
        Some(format!("Bearer {SECRET}").as_str())
    );
    assert_eq!(seen[0].host, format!("api.cred.test:{}", origin.port));
    assert!(!seen[0].all.contains(&ph), "{}", seen[0].all);

    let r = next_record(&mut rx).await;
    assert_eq!(r.kind, Kind::Connect);
    assert_eq!(r.host.as_deref(), Some("api.cred.test"));
    assert_eq!(r.address, Some(SocketAddr::new(LOOPBACK, origin.port)));
    assert_eq!(r.outcome, Outcome::Allowed);
    assert_eq!(r.credential.as_deref(), Some("api"));
    assert!(r.bytes_up > 0 && r.bytes_down > 0, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_requests_on_one_keep_alive_connection_are_both_swapped() {
    let ca = TestCa::new("test origins");
    let origin = Origin::start("api", Some(ca.server("api.cred.test"))).await;
    let creds = credentials();
    let ph = placeholder(&creds, "API_TOKEN");
    let (p, mut rx) = proxy(creds.clone(), vec![ca.der()], None).await;
    let (_dir, bundle) = bundle(&creds);
    let base = format!("https://api.cred.test:{}", origin.port);
    let Some((code, out, err)) = curl(
        &p,
        vec![
            "--cacert".into(),
            bundle,
            "-H".into(),
            format!("Authorization: token {ph}"),
            format!("{base}/one"),
            format!("{base}/two"),
        ],
    )
    .await
    else {
        return;
    };
    assert_eq!(code, 0, "curl failed: {err}");
    assert_eq!(out, "hello from api at /one\nhello from api at /two\n");
    let seen = origin.seen();
    assert_eq!(seen.len(), 2);
    for s in &seen {
        assert_eq!(
            s.authorization.as_deref(),
            Some(format!("token {SECRET}").as_str())
        );
    }
    assert_eq!(
        origin.conns(),
        1,
        "both on the proxy's one upstream connection"
    );
    assert_eq!(seen[0].conn, seen[1].conn);
    let r = next_record(&mut rx).await;
    assert_eq!(r.outcome, Outcome::Allowed);
    assert_eq!(r.credential.as_deref(), Some("api"));
    assert!(
        tokio::time::timeout(Duration::from_millis(300), rx.recv())
            .await
            .is_err(),
        "one client connection, one record"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basic_credentials_are_decoded_swapped_and_re_encoded() {
    let ca = TestCa::new("test origins");
    let origin = Origin::start("git", Some(ca.server("git.cred.test"))).await;
    let creds = credentials();
    let ph = placeholder(&creds, "GIT_TOKEN");
    let (p, mut rx) = proxy(creds.clone(), vec![ca.der()], None).await;
    let (_dir, bundle) = bundle(&creds);
    let url = format!("https://git.cred.test:{}/repo.git/info/refs", origin.port);
    let Some((code, out, err)) = curl(
        &p,
        vec![
            "--cacert".into(),
            bundle,
            "-u".into(),
            format!("someone:{ph}"),
            url,
        ],
    )
    .await
    else {
        return;
    };
    assert_eq!(code, 0, "curl failed: {err}");
    assert_eq!(out, "hello from git at /repo.git/info/refs\n");
    let expect = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("someone:{BASIC_SECRET}"))
    );
    assert_eq!(
        origin.seen()[0].authorization.as_deref(),
        Some(expect.as_str())
    );
    let r = next_record(&mut rx).await;
    assert_eq!(r.credential.as_deref(), Some("git"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_ls_remote_over_https_gets_the_secret() {
    let ca = TestCa::new("test origins");
    let origin = Origin::start("git", Some(ca.server("git.cred.test"))).await;
    let creds = credentials();
    let ph = placeholder(&creds, "GIT_TOKEN");
    let (p, mut rx) = proxy(creds.clone(), vec![ca.der()], None).await;
    let (dir, bundle) = bundle(&creds);
    let url = format!(
        "https://x-access-token:{ph}@git.cred.test:{}/repo.git",
        origin.port
    );
    let home = dir.path().to_path_buf();
    let mut cmd = Command::new("git");
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("HTTPS_PROXY", p.url())
        .envs(trust_env(Path::new(&bundle)))
        .args(["ls-remote", &url]);
    let out = match tokio::task::spawn_blocking(move || cmd.output())
        .await
        .unwrap()
    {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("SKIPPED: git is not installed; this test needs it");
            return;
        }
        Err(e) => panic!("running git: {e}"),
    };
    // The origin is no git server: git fails after its first request, which is enough.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("SSL") && !err.contains("certificate"),
        "{err}"
    );
    let seen = origin.seen();
    assert!(!seen.is_empty(), "git reached the origin: {err}");
    assert!(seen[0].path.starts_with("/repo.git/info/refs"), "{seen:?}");
    let expect = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{BASIC_SECRET}"))
    );
    assert!(
        seen.iter()
            .any(|s| s.authorization.as_deref() == Some(expect.as_str())),
        "{seen:?}"
    );
    let r = next_record(&mut rx).await;
    assert_eq!(r.kind, Kind::Connect);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_https_hosts_stay_tunnels_with_their_own_certificates() {
    let ca = TestCa::new("test origins");
    let origin = Origin::start("plain", Some(ca.server("plain.cred.test"))).await;
    let creds = credentials();
    let (p, mut rx) = proxy(creds.clone(), vec![ca.der()], None).await;
    let dir = tempfile::tempdir().unwrap();
    let test_ca = ca.write_pem(dir.path()).display().to_string();
    let url = format!("https://plain.cred.test:{}/", origin.port);
    // Trusting only the test CA works: the certificate curl sees is the origin's own.
    let Some((code, out, err)) = curl(&p, vec!["--cacert".into(), test_ca, url.clone()]).await
    else {
        return;
    };
    assert_eq!(code, 0, "curl failed: {err}");
    assert_eq!(out, "hello from plain at /\n");
    let r = next_record(&mut rx).await;
    assert_eq!((r.kind, r.outcome), (Kind::Connect, Outcome::Allowed));
    assert_eq!(r.credential, None);
    // Trusting only the session CA fails: the proxy made no certificate for this host.
    let only_session = dir.path().join("session-ca.pem");
    std::fs::write(&only_session, creds.ca_pem()).unwrap();
    let (code, _, _) = curl(
        &p,
        vec!["--cacert".into(), only_session.display().to_string(), url],
    )
    .await
    .unwrap();
    assert_ne!(code, 0, "the origin's certificate is not the session CA's");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_placeholder_sent_to_another_host_is_refused_and_reaches_nothing() {
    let other = Origin::start("other", None).await;
    let creds = credentials();
    let ph = placeholder(&creds, "API_TOKEN");
    let (p, mut rx) = proxy(creds.clone(), vec![], None).await;
    let base = format!("http://other.cred.test:{}", other.port);
    let cases: Vec<(&str, Vec<String>)> = vec![
        (
            "header",
            vec![
                "-H".into(),
                format!("Authorization: Bearer {ph}"),
                format!("{base}/h"),
            ],
        ),
        ("query", vec![format!("{base}/q?token={ph}")]),
        (
            "body",
            vec!["--data".into(), format!("token={ph}"), format!("{base}/b")],
        ),
        (
            "basic",
            vec!["-u".into(), format!("me:{ph}"), format!("{base}/u")],
        ),
        // issue 41: a body sent after `100 Continue` went unscreened.
        (
            "body after Expect: 100-continue",
            vec![
                "-H".into(),
                "Expect: 100-continue".into(),
                "--data".into(),
                format!("token={ph}"),
                format!("{base}/e"),
            ],
        ),
    ];
    for (what, mut args) in cases {
        args.extend(["-w".into(), "\n%{http_code}".into()]);
        let Some((code, out, err)) = curl(&p, args).await else {
            return;
        };
        assert_eq!(code, 0, "{what}: {err}");
        assert!(out.ends_with("\n403"), "{what}: {out}");
        assert!(out.contains("credential `api`"), "{what}: {out}");
        assert!(out.contains("API_TOKEN"), "{what}: {out}");
        assert!(
            out.contains(&format!("other.cred.test:{}", other.port)),
            "{what}: {out}"
        );
        assert!(out.contains("sent only to api.cred.test"), "{what}: {out}");
        assert!(!out.contains(SECRET), "{what}: {out}");
        let r = next_record(&mut rx).await;
        assert_eq!(r.kind, Kind::Forward, "{what}");
        assert!(
            matches!(&r.outcome, Outcome::Denied { rule, .. } if rule.contains("credential `api`")),
            "{what}: {:?}",
            r.outcome
        );
        assert_eq!(r.address, None, "{what}: refused before any connection");
    }
    assert_eq!(other.conns(), 0, "the other origin saw nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_to_a_credential_host_is_refused_unless_the_profile_allows_it() {
    // issue 41: the secret crossed the wire in clear. Refused before any connection.
    let origin = Origin::start("api-plain", None).await;
    let creds = credentials();
    let ph = placeholder(&creds, "API_TOKEN");
    let (p, mut rx) = proxy(creds.clone(), vec![], None).await;
    let url = format!("http://api.cred.test:{}/plain", origin.port);
    let Some((code, out, err)) = curl(
        &p,
        vec![
            "-H".into(),
            format!("Authorization: Bearer {ph}"),
            "-w".into(),
            "\n%{http_code}".into(),
            url,
        ],
    )
    .await
    else {
        return;
    };
    assert_eq!(code, 0, "curl failed: {err}");
    assert!(out.ends_with("\n403"), "{out}");
    assert!(out.contains("only over HTTPS"), "{out}");
    assert!(out.contains("plain_http = true"), "{out}");
    assert!(!out.contains(SECRET), "{out}");
    let r = next_record(&mut rx).await;
    assert!(
        matches!(r.outcome, Outcome::Denied { .. }),
        "{:?}",
        r.outcome
    );
    assert_eq!(origin.conns(), 0, "the origin saw nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_to_a_credential_host_is_swapped_in_the_head() {
    let origin = Origin::start("api-plain", None).await;
    let creds = Arc::new(
        Credentials::new(vec![Credential {
            name: "api".into(),
            env: "API_TOKEN".into(),
            hosts: vec!["api.cred.test".into()],
            sending: Sending::default(),
            secret: SECRET.into(),
            plain_http: true,
        }])
        .unwrap(),
    );
    let ph = placeholder(&creds, "API_TOKEN");
    let (p, mut rx) = proxy(creds.clone(), vec![], None).await;
    let url = format!("http://api.cred.test:{}/plain", origin.port);
    let Some((code, out, err)) = curl(
        &p,
        vec!["-H".into(), format!("Authorization: Bearer {ph}"), url],
    )
    .await
    else {
        return;
    };
    assert_eq!(code, 0, "curl failed: {err}");
    assert_eq!(out, "hello from api-plain at /plain\n");
    assert_eq!(
        origin.seen()[0].authorization.as_deref(),
        Some(format!("Bearer {SECRET}").as_str())
    );
    let r = next_record(&mut rx).await;
    assert_eq!((r.kind, r.outcome), (Kind::Forward, Outcome::Allowed));
    assert_eq!(r.credential.as_deref(), Some("api"));
}

/// issue 41: with `plain_http = true` the answer came back as the origin sent it, so an
/// origin echoing its request handed the task the secret. It is masked as inside TLS,
/// headers and body, Content-Length and all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_http_origin_echoing_the_secret_hands_back_the_placeholder() {
    let origin = Origin::start("api-plain", None).await;
    let creds = Arc::new(
        Credentials::new(vec![Credential {
            name: "api".into(),
            env: "API_TOKEN".into(),
            hosts: vec!["api.cred.test".into()],
            sending: Sending::default(),
            secret: SECRET.into(),
            plain_http: true,
        }])
        .unwrap(),
    );
    let ph = placeholder(&creds, "API_TOKEN");
    let (p, mut rx) = proxy(creds.clone(), vec![], None).await;
    let url = format!("http://api.cred.test:{}/echo", origin.port);
    let Some((code, out, err)) = curl(
        &p,
        vec![
            "-D".into(),
            "-".into(),
            "-H".into(),
            format!("Authorization: Bearer {ph}"),
            url,
        ],
    )
    .await
    else {
        return;
    };
    assert_eq!(code, 0, "curl failed: {err}");
    assert_eq!(
        origin.seen()[0].authorization.as_deref(),
        Some(format!("Bearer {SECRET}").as_str()),
        "the origin got the secret"
    );
    let b64 = base64::engine::general_purpose::STANDARD.encode(SECRET);
    assert!(!out.contains(SECRET) && !out.contains(&b64), "{out}");
    assert!(
        out.to_ascii_lowercase()
            .contains(&format!("x-seen-auth: bearer {ph}")),
        "the echoed header holds the placeholder: {out}"
    );
    assert!(
        out.contains(&format!("auth=Bearer {ph}")),
        "the echoed body holds the placeholder: {out}"
    );
    let r = next_record(&mut rx).await;
    assert_eq!((r.kind, r.outcome), (Kind::Forward, Outcome::Allowed));
    assert_eq!(r.credential.as_deref(), Some("api"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_credentials_placeholder_inside_tls_is_refused() {
    let ca = TestCa::new("test origins");
    let origin = Origin::start("api", Some(ca.server("api.cred.test"))).await;
    let creds = credentials();
    let git = placeholder(&creds, "GIT_TOKEN");
    let (p, mut rx) = proxy(creds.clone(), vec![ca.der()], None).await;
    let (_dir, bundle) = bundle(&creds);
    let url = format!("https://api.cred.test:{}/x?t={git}", origin.port);
    let Some((code, out, err)) = curl(
        &p,
        vec![
            "--cacert".into(),
            bundle,
            "-w".into(),
            "\n%{http_code}".into(),
            url,
        ],
    )
    .await
    else {
        return;
    };
    assert_eq!(code, 0, "curl failed: {err}");
    assert!(out.ends_with("\n403"), "{out}");
    assert!(out.contains("credential `git`"), "{out}");
    assert!(origin.seen().is_empty());
    let r = next_record(&mut rx).await;
    assert!(matches!(r.outcome, Outcome::Denied { .. }), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_upstream_certificate_is_a_502_and_the_secret_is_not_sent() {
    let trusted = TestCa::new("test origins");
    let rogue = TestCa::new("rogue");
    let origin = Origin::start("bad", Some(rogue.server("bad.cred.test"))).await;
    let creds = credentials();
    let ph = placeholder(&creds, "API_TOKEN");
    let (p, mut rx) = proxy(creds.clone(), vec![trusted.der()], None).await;
    let (_dir, bundle) = bundle(&creds);
    let url = format!("https://bad.cred.test:{}/", origin.port);
    let Some((code, out, err)) = curl(
        &p,
        vec![
            "--cacert".into(),
            bundle,
            "-H".into(),
            format!("Authorization: Bearer {ph}"),
            "-w".into(),
            "\n%{http_code}".into(),
            url,
        ],
    )
    .await
    else {
        return;
    };
    assert_eq!(code, 0, "curl failed: {err}");
    assert!(out.ends_with("\n502"), "{out}");
    assert!(out.contains("TLS handshake with bad.cred.test"), "{out}");
    assert!(out.contains("certificate"), "{out}");
    assert!(origin.seen().is_empty());
    let r = next_record(&mut rx).await;
    assert!(
        matches!(&r.outcome, Outcome::Failed { why } if why.contains("TLS handshake")),
        "{r:?}"
    );
    assert_eq!(r.credential, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_instead_of_tls_to_a_credential_host_is_closed_and_recorded() {
    let ca = TestCa::new("test origins");
    let origin = Origin::start("api", Some(ca.server("api.cred.test"))).await;
    let creds = credentials();
    let (p, mut rx) = proxy(creds, vec![ca.der()], None).await;
    let mut s = TcpStream::connect(p.addr()).await.unwrap();
    let auth = format!("api.cred.test:{}", origin.port);
    s.write_all(format!("CONNECT {auth} HTTP/1.1\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut b).await.unwrap(), 1);
        head.push(b[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 200"));
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut rest)).await;
    let r = next_record(&mut rx).await;
    assert!(
        matches!(&r.outcome, Outcome::Rejected { status: 0, why } if why.contains("TLS handshake failed")),
        "{r:?}"
    );
    assert!(origin.seen().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_headers_inside_tls_are_bounded() {
    let ca = TestCa::new("test origins");
    let origin = Origin::start("api", Some(ca.server("api.cred.test"))).await;
    let creds = credentials();
    let (p, mut rx) = proxy(creds.clone(), vec![ca.der()], Some(16 * 1024)).await;
    let (_dir, bundle) = bundle(&creds);
    let url = format!("https://api.cred.test:{}/", origin.port);
    let Some((_, out, _)) = curl(
        &p,
        vec![
            "--cacert".into(),
            bundle,
            "-H".into(),
            format!("X-Big: {}", "a".repeat(40_000)),
            "-w".into(),
            "\n%{http_code}".into(),
            url,
        ],
    )
    .await
    else {
        return;
    };
    assert!(out.ends_with("431"), "{out}");
    assert!(origin.seen().is_empty());
    let r = next_record(&mut rx).await;
    assert!(
        matches!(r.outcome, Outcome::Rejected { status: 431, .. }),
        "{r:?}"
    );
}

#[test]
fn the_bundle_holds_the_session_ca_and_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let creds = credentials();
    let dir = tempfile::tempdir().unwrap();
    let path = creds.write_ca_bundle(dir.path()).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.ends_with(&creds.ca_pem()));
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let env = trust_env(&path);
    let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
    for v in [
        "SSL_CERT_FILE",
        "NODE_EXTRA_CA_CERTS",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "CARGO_HTTP_CAINFO",
        "GIT_SSL_CAINFO",
        "PIP_CERT",
        "NIX_SSL_CERT_FILE",
    ] {
        assert!(names.contains(&v), "{v}");
    }
    assert!(env.iter().all(|(_, p)| Path::new(p) == path));
    let task_env = creds.task_env();
    assert_eq!(task_env.len(), 2);
    assert!(
        task_env
            .iter()
            .all(|(_, v)| v != SECRET && v != BASIC_SECRET)
    );
}

/// A TLS client of the proxy's own making: CONNECT, then TLS trusting the session CA.
async fn tls_through(
    p: &Proxy,
    creds: &Credentials,
    host: &str,
    port: u16,
) -> tokio_rustls::client::TlsStream<TcpStream> {
    let mut s = TcpStream::connect(p.addr()).await.unwrap();
    s.write_all(format!("CONNECT {host}:{port} HTTP/1.1\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut b).await.unwrap(), 1);
        head.push(b[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 200"));
    let mut roots = rustls::RootCertStore::empty();
    roots.add(creds.ca_der()).unwrap();
    let cfg = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from(host.to_string()).unwrap();
    tokio_rustls::TlsConnector::from(Arc::new(cfg))
        .connect(name, s)
        .await
        .unwrap()
}

/// Sends one keep-alive GET and reads its answer (the proxy relays a credential host's
/// body chunked, since masking the secret in it may change its length).
async fn get(s: &mut tokio_rustls::client::TlsStream<TcpStream>, path: &str, auth: &str) -> String {
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: {auth}\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk).await.unwrap();
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&got).to_string();
        if let Some(end) = text.find("\r\n\r\n") {
            let len: Option<usize> = text[..end].lines().find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().parse().unwrap())
            });
            let whole = match len {
                Some(len) => got.len() >= end + 4 + len,
                None => text.ends_with("0\r\n\r\n"),
            };
            if whole {
                return text;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_origin_echoing_the_secret_in_its_body_hands_back_the_placeholder() {
    let ca = TestCa::new("test origins");
    let origin = Origin::start("api", Some(ca.server("api.cred.test"))).await;
    let creds = credentials();
    let ph = placeholder(&creds, "API_TOKEN");
    let (p, _rx) = proxy(creds.clone(), vec![ca.der()], None).await;
    let mut s = tls_through(&p, &creds, "api.cred.test", origin.port).await;
    let answer = get(&mut s, "/echo", &format!("Bearer {ph}")).await;
    assert_eq!(
        origin.seen()[0].authorization.as_deref(),
        Some(format!("Bearer {SECRET}").as_str()),
        "the origin got the secret"
    );
    assert!(!answer.contains(SECRET), "{answer}");
    // The body comes chunked: its data lines are every other line after the sizes.
    let (_, chunked) = answer.split_once("\r\n\r\n").unwrap();
    let body: String = chunked.split("\r\n").skip(1).step_by(2).collect();
    assert!(!body.contains(SECRET), "{body}");
    assert!(body.contains(&format!("auth=Bearer {ph}")), "{body}");
}

/// issue 41: hyper passes on a reason phrase other than the status's own as the origin
/// wrote it, so `401 bad credentials: Bearer SECRET` reached the task. It is masked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_origin_naming_the_secret_in_its_reason_phrase_hands_back_the_placeholder() {
    let ca = TestCa::new("test origins");
    let origin = Origin::start("api", Some(ca.server("api.cred.test"))).await;
    let creds = credentials();
    let ph = placeholder(&creds, "API_TOKEN");
    let (p, _rx) = proxy(creds.clone(), vec![ca.der()], None).await;
    let mut s = tls_through(&p, &creds, "api.cred.test", origin.port).await;
    let answer = get(&mut s, "/reason", &format!("Bearer {ph}")).await;
    assert_eq!(
        origin.seen()[0].authorization.as_deref(),
        Some(format!("Bearer {SECRET}").as_str()),
        "the origin got the secret"
    );
    assert!(!answer.contains(SECRET), "{answer}");
    assert!(
        answer.starts_with(&format!("HTTP/1.1 401 bad credentials: Bearer {ph}\r\n")),
        "{answer}"
    );
}

/// issue 41: response header names were passed on as they came; an origin that names a
/// header after the token it got handed the task the secret. Such a header is dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_origin_naming_a_header_after_the_secret_hands_back_no_secret() {
    let ca = TestCa::new("test origins");
    let origin = Origin::start("api", Some(ca.server("api.cred.test"))).await;
    let creds = credentials();
    let ph = placeholder(&creds, "API_TOKEN");
    let (p, _rx) = proxy(creds.clone(), vec![ca.der()], None).await;
    let mut s = tls_through(&p, &creds, "api.cred.test", origin.port).await;
    let answer = get(&mut s, "/name", &format!("Bearer {ph}")).await;
    assert_eq!(
        origin.seen()[0].authorization.as_deref(),
        Some(format!("Bearer {SECRET}").as_str()),
        "the origin got the secret"
    );
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(!answer.contains(SECRET), "{answer}");
}

/// A compressed answer is refused (the masker cannot see into it) however the origin
/// says so: a second `Content-Encoding` after `identity`, or a transfer coding besides
/// chunked (hyper takes off only chunked).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_encoded_behind_identity_or_in_its_transfer_coding_is_refused() {
    let ca = TestCa::new("test origins");
    let origin = Origin::start("api", Some(ca.server("api.cred.test"))).await;
    let creds = credentials();
    let ph = placeholder(&creds, "API_TOKEN");
    let (p, _rx) = proxy(creds.clone(), vec![ca.der()], None).await;
    for path in ["/twice-encoded", "/te-gzip"] {
        let mut s = tls_through(&p, &creds, "api.cred.test", origin.port).await;
        let answer = get(&mut s, path, &format!("Bearer {ph}")).await;
        assert!(answer.starts_with("HTTP/1.1 502"), "{path}: {answer}");
        assert!(answer.contains("compressed"), "{path}: {answer}");
    }
}

/// issue 41: a Basic value holding the placeholder is swapped for any user, but only the
/// credential's own Basic form was masked; with a user of the task's choosing the
/// secret's base64 sits at another alignment, and an echo handed back
/// `Basic base64(evil:SECRET)`. Each payload the proxy sends is masked whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basic_with_a_user_the_task_chose_is_masked_in_the_echo() {
    let ca = TestCa::new("test origins");
    let origin = Origin::start("api", Some(ca.server("api.cred.test"))).await;
    let creds = credentials();
    let ph = placeholder(&creds, "API_TOKEN");
    let (p, _rx) = proxy(creds.clone(), vec![ca.der()], None).await;
    let b64 = |s: String| base64::engine::general_purpose::STANDARD.encode(s);
    for user in ["evil", "e", "ev"] {
        let mut s = tls_through(&p, &creds, "api.cred.test", origin.port).await;
        let sent = format!("Basic {}", b64(format!("{user}:{ph}")));
        let answer = get(&mut s, "/echo", &sent).await;
        let secret = b64(format!("{user}:{SECRET}"));
        assert!(
            origin
                .seen()
                .iter()
                .any(|r| r.authorization.as_deref() == Some(&format!("Basic {secret}"))),
            "the origin got the secret"
        );
        assert!(!answer.contains(&secret), "{user}: {answer}");
        assert!(answer.contains(&sent), "{user}: {answer}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_cuts_an_intercepted_connection_and_still_records_it() {
    let ca = TestCa::new("test origins");
    let origin = Origin::start("api", Some(ca.server("api.cred.test"))).await;
    let creds = credentials();
    let ph = placeholder(&creds, "API_TOKEN");
    let (p, mut rx) = proxy(creds.clone(), vec![ca.der()], None).await;
    let mut s = tls_through(&p, &creds, "api.cred.test", origin.port).await;
    let answer = get(&mut s, "/first", &format!("Bearer {ph}")).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // The Host the client wrote is not the one the origin gets: the decided host is.
    assert_eq!(
        origin.seen()[0].host,
        format!("api.cred.test:{}", origin.port)
    );
    p.shutdown().await;
    let r = next_record(&mut rx).await;
    assert_eq!(r.outcome, Outcome::Allowed);
    assert_eq!(r.note.as_deref(), Some("the proxy stopped"));
    assert_eq!(r.credential.as_deref(), Some("api"));
    assert!(r.bytes_up > 0 && r.bytes_down > 0, "{r:?}");
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_intercepted_connection_is_closed() {
    let ca = TestCa::new("test origins");
    let origin = Origin::start("api", Some(ca.server("api.cred.test"))).await;
    let creds = credentials();
    let cfg = ProxyConfig {
        allow_private: AllowList::parse(&["127.0.0.1".to_string()]).unwrap(),
        credentials: Some(creds.clone()),
        upstream_roots: vec![ca.der()],
        idle_timeout: Duration::from_millis(400),
        ..ProxyConfig::default()
    };
    let allow: Arc<dyn Decide> = Arc::new(|_: &str, _: u16| Decision::Allow);
    let (sink, mut rx) = channel_sink();
    let p = Proxy::start(cfg, allow, resolver(), sink).await.unwrap();
    let mut s = tls_through(&p, &creds, "api.cred.test", origin.port).await;
    let answer = get(&mut s, "/", "Bearer nothing-to-swap").await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest)).await;
    let r = next_record(&mut rx).await;
    assert_eq!(r.outcome, Outcome::Allowed);
    assert!(
        r.note
            .as_deref()
            .is_some_and(|n| n.contains("without a byte")),
        "{r:?}"
    );
    assert_eq!(r.credential, None, "no placeholder, nothing swapped");
    assert_eq!(
        origin.seen()[0].authorization.as_deref(),
        Some("Bearer nothing-to-swap")
    );
}

/// The whole path through a profile: whalebox holds the secret in its own environment,
/// a shell command sees only the placeholder, its curl trusts the session CA from the
/// variables the task gets, the origin sees the secret, and the same placeholder sent
/// to another host is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_sees_a_placeholder_and_its_request_carries_the_secret() {
    let ca = TestCa::new("test origins");
    let api = Origin::start("api", Some(ca.server("api.cred.test"))).await;
    let other = Origin::start("other", None).await;
    let f = common::Fixture::new();
    let ca_file = ca.write_pem(&f.root);
    let f = f.with_profile(&format!(
        "[shell]\nexec_boundary = \"off\"\n[network]\nallow_domains = [\"api.cred.test\", \"other.test\"]\n\
         allow_private = [\"127.0.0.1\"]\nports = []\nca_files = [\"{}\"]\n\
         [network.hosts]\n\"api.cred.test\" = \"127.0.0.1\"\n\"other.test\" = \"127.0.0.1\"\n\
         [network.credentials.api]\nenv = \"CRED_TOKEN\"\nhosts = [\"api.cred.test\"]\n",
        ca_file.display()
    ));
    let command = format!(
        "echo \"token=$CRED_TOKEN\"; curl -sS -H \"Authorization: Bearer $CRED_TOKEN\" https://api.cred.test:{}/x; \
         curl -sS \"http://other.test:{}/leak?t=$CRED_TOKEN\"",
        api.port, other.port
    );
    let args = serde_json::json!({ "command": command }).to_string();
    let profile = f.profile.clone().unwrap();
    let ws = f.ws.clone();
    let mut cmd = f.command(&[
        "call",
        "shell_run",
        "--args",
        &args,
        "--profile",
        profile.to_str().unwrap(),
        "--workspace",
        ws.to_str().unwrap(),
    ]);
    cmd.env("CRED_TOKEN", SECRET);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        !stdout.contains(SECRET),
        "the task saw the secret: {stdout}"
    );
    let env: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let text = env["text"].as_str().unwrap();
    assert!(text.contains("token=whalebox-placeholder-api-"), "{text}");
    assert!(text.contains("hello from api at /x"), "{text}");
    let seen = api.seen();
    assert_eq!(
        seen[0].authorization.as_deref(),
        Some(format!("Bearer {SECRET}").as_str())
    );
    assert!(
        text.contains("credential"),
        "the leak is refused, saying why: {text}"
    );
    assert_eq!(other.conns(), 0, "the other host got nothing");
}
