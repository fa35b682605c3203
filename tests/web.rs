//! The web group against real HTTP servers on loopback that each test starts (nothing
//! here may send a packet off this machine: refused addresses are refused before any
//! connection, and the servers count what reached them). Pages, charsets, compressed,
//! huge, endless and slow bodies, redirects across hosts and to private addresses, HTTP
//! errors, paging from the cache, fetch's headers, and search in SearXNG's format.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::Fixture;
use serde_json::{Value, json};

/// A loopback HTTP/1.1 server with fixed routes; counts the requests per path.
struct Server {
    port: u16,
    hits: Arc<Mutex<HashMap<String, usize>>>,
    total: Arc<AtomicUsize>,
}

struct Reply {
    status: &'static str,
    headers: Vec<(String, String)>,
    body: Body,
}

enum Body {
    Bytes(Vec<u8>),
    /// Chunks of zeros forever.
    Endless,
    /// One byte every 200 ms, forever.
    Drip,
}

fn reply(status: &'static str, content_type: &str, body: impl Into<Vec<u8>>) -> Reply {
    Reply {
        status,
        headers: vec![("Content-Type".into(), content_type.into())],
        body: Body::Bytes(body.into()),
    }
}

fn redirect(to: String) -> Reply {
    Reply {
        status: "302 Found",
        headers: vec![("Location".into(), to)],
        body: Body::Bytes(Vec::new()),
    }
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

const ARTICLE: &str = r#"<!doctype html><html><head><meta charset="utf-8"><title>The Guide</title>
<script>var tracking = 1;</script><style>body { color: red }</style></head>
<body><header><a href="/">Home</a> | <a href="/blog">Blog</a></header>
<nav><ul><li><a href="/a">Menu A</a></li></ul></nav>
<article><h1>Installing</h1><p>Run the <em>installer</em>, then read <a href="docs/next.html">the next step</a>.</p>
<h2>Options</h2><ul><li>fast</li><li>safe</li></ul>
<pre><code>cargo install whalebox</code></pre>
<table><thead><tr><th>flag</th><th>meaning</th></tr></thead><tbody><tr><td>-v</td><td>verbose</td></tr></tbody></table>
</article><aside>Sponsored</aside><footer>© 2026 Footer Inc</footer></body></html>"#;

impl Server {
    fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let total = Arc::new(AtomicUsize::new(0));
        let (h, t) = (Arc::clone(&hits), Arc::clone(&total));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (h, t) = (Arc::clone(&h), Arc::clone(&t));
                std::thread::spawn(move || serve(stream, port, &h, &t));
            }
        });
        Server { port, hits, total }
    }

    fn hits(&self, path: &str) -> usize {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

fn route(path: &str, port: u16, headers: &HashMap<String, String>) -> Reply {
    match path {
        "/article" => reply("200 OK", "text/html; charset=utf-8", ARTICLE),
        "/latin1" => reply("200 OK", "text/plain; charset=iso-8859-1", b"caf\xe9 cr\xe8me".to_vec()),
        "/sjis" => {
            let mut page = b"<html><head><meta charset=\"shift_jis\"></head><body><p>".to_vec();
            page.extend(encoding_rs::SHIFT_JIS.encode("日本語のページ").0.iter());
            page.extend(b"</p></body></html>");
            reply("200 OK", "text/html", page)
        }
        "/gzip" | "/deflate" | "/br" => {
            let text = b"squeezed text, twice squeezed text".repeat(50);
            let (encoding, body) = match path {
                "/gzip" => ("gzip", gzip(&text)),
                "/deflate" => {
                    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
                    e.write_all(&text).unwrap();
                    ("deflate", e.finish().unwrap())
                }
                _ => {
                    let mut out = Vec::new();
                    brotli::BrotliCompress(&mut &text[..], &mut out, &Default::default()).unwrap();
                    ("br", out)
                }
            };
            let mut r = reply("200 OK", "text/plain", body);
            r.headers.push(("Content-Encoding".into(), encoding.into()));
            r
        }
        "/bomb" => {
            let mut r = reply("200 OK", "text/plain", gzip(&vec![b'a'; 64 * 1024 * 1024]));
            r.headers.push(("Content-Encoding".into(), "gzip".into()));
            r
        }
        "/huge" => reply("200 OK", "text/plain", vec![b'x'; 3 * 1024 * 1024]),
        "/endless" => Reply {
            status: "200 OK",
            headers: vec![("Content-Type".into(), "text/plain".into())],
            body: Body::Endless,
        },
        "/slow" => Reply {
            status: "200 OK",
            headers: vec![("Content-Type".into(), "text/plain".into())],
            body: Body::Drip,
        },
        "/long" => {
            let mut page = String::from("<html><body><main>");
            for i in 0..2000 {
                page.push_str(&format!("<p>Paragraph {i} of the long page.</p>"));
            }
            page.push_str("</main></body></html>");
            reply("200 OK", "text/html", page)
        }
        "/json" => reply("200 OK", "application/json", r#"{"name":"whalebox","tags":["a","b"]}"#),
        "/image" => reply("200 OK", "image/png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec()),
        "/missing" => reply("404 Not Found", "text/plain", "no such page here"),
        "/broken" => reply("500 Internal Server Error", "text/plain", "the server fell over"),
        "/to-article" => redirect("/article".into()),
        "/to-localhost" => redirect(format!("http://localhost:{port}/headers")),
        "/to-metadata" => redirect("http://169.254.169.254/latest/meta-data/".into()),
        "/to-other-loopback" => redirect(format!("http://127.0.0.2:{port}/article")),
        "/loop" => redirect("/loop".into()),
        "/headers" => reply(
            "200 OK",
            "application/json",
            serde_json::to_string(headers).unwrap(),
        ),
        "/search" => reply(
            "200 OK",
            "application/json",
            json!({"query": "whalebox", "results": [
                {"title": "whalebox docs", "url": "https://docs.example.org/whalebox", "content": "The <b>hands</b> of an agent."},
                {"title": "Blocked result", "url": "https://spam.example.com/x", "content": "spam"},
                {"title": "whalebox on crates", "url": "https://crates.example.org/whalebox", "content": "Rust crate."}
            ]})
            .to_string(),
        ),
        "/limited/search" => reply("429 Too Many Requests", "text/plain", "slow down"),
        _ => reply("404 Not Found", "text/plain", "unknown route"),
    }
}

fn serve(
    mut stream: TcpStream,
    port: u16,
    hits: &Mutex<HashMap<String, usize>>,
    total: &AtomicUsize,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let target = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut headers = HashMap::new();
    let mut length = 0usize;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.trim_end().split_once(':') {
            let k = k.trim().to_ascii_lowercase();
            if k == "content-length" {
                length = v.trim().parse().unwrap_or(0);
            }
            headers.insert(k, v.trim().to_string());
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let path = target.split('?').next().unwrap_or("/").to_string();
    *hits.lock().unwrap().entry(path.clone()).or_default() += 1;
    total.fetch_add(1, Ordering::SeqCst);
    let r = route(&path, port, &headers);
    let mut head = format!("HTTP/1.1 {}\r\nConnection: close\r\n", r.status);
    for (k, v) in &r.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    match r.body {
        Body::Bytes(b) => {
            head.push_str(&format!("Content-Length: {}\r\n\r\n", b.len()));
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&b);
        }
        Body::Endless => {
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes());
            let chunk = vec![b'z'; 64 * 1024];
            while stream.write_all(&chunk).is_ok() {}
        }
        Body::Drip => {
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes());
            for _ in 0..600 {
                if stream.write_all(b".").is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

/// A workspace whose profile turns the web group on for this server's port, with the
/// loopback addresses allowed (and whatever `extra` adds).
fn fixture(server: &Server, extra: &str) -> Fixture {
    Fixture::new().with_profile(&format!(
        "tools = [\"web\"]\n[web]\nallow_private = [\"127.0.0.1\", \"::1\"]\nports = [{}]\ntimeout_ms = 4000\nmax_bytes = 1048576\n{extra}",
        server.port
    ))
}

fn args(v: Value) -> String {
    v.to_string()
}

#[test]
fn a_page_comes_as_markdown_of_its_main_content() {
    let s = Server::start();
    let f = fixture(&s, "");
    let env = f.ok("web_fetch", &args(json!({"url": s.url("/article")})));
    let text = env["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!(
            "Title: The Guide\nURL: {}\n\n# Installing\n",
            s.url("/article")
        )),
        "{text}"
    );
    for want in [
        "Run the *installer*, then read [the next step](",
        "/docs/next.html)",
        "## Options",
        "- fast\n- safe",
        "```\ncargo install whalebox\n```",
        "| flag | meaning |",
    ] {
        assert!(text.contains(want), "{want:?} in {text}");
    }
    for gone in [
        "tracking",
        "color: red",
        "Menu A",
        "Sponsored",
        "Footer Inc",
        "Blog",
    ] {
        assert!(!text.contains(gone), "{gone:?} in {text}");
    }
    let d = &env["data"];
    assert_eq!(
        (d["status"].as_u64(), d["title"].as_str()),
        (Some(200), Some("The Guide"))
    );
    assert_eq!(d["content_type"], "text/html; charset=utf-8");
    assert_eq!(d["cached"], false);

    // raw: the body verbatim; JSON and text as they are.
    let raw = f.ok(
        "web_fetch",
        &args(json!({"url": s.url("/article"), "raw": true})),
    );
    assert!(
        raw["text"]
            .as_str()
            .unwrap()
            .contains("<script>var tracking = 1;</script>")
    );
    let json_page = f.ok("web_fetch", &args(json!({"url": s.url("/json")})));
    assert!(
        json_page["text"]
            .as_str()
            .unwrap()
            .contains(r#"{"name":"whalebox","tags":["a","b"]}"#)
    );
}

#[test]
fn charsets_and_compressed_bodies() {
    let s = Server::start();
    let f = fixture(&s, "");
    let env = f.ok("web_fetch", &args(json!({"url": s.url("/latin1")})));
    assert!(
        env["text"].as_str().unwrap().contains("café crème"),
        "{env}"
    );
    assert_eq!(env["data"]["encoding"], "windows-1252");
    let env = f.ok("web_fetch", &args(json!({"url": s.url("/sjis")})));
    assert!(
        env["text"].as_str().unwrap().contains("日本語のページ"),
        "{env}"
    );
    assert_eq!(env["data"]["encoding"], "Shift_JIS");
    for path in ["/gzip", "/deflate", "/br"] {
        let env = f.ok("web_fetch", &args(json!({"url": s.url(path)})));
        assert!(
            env["text"]
                .as_str()
                .unwrap()
                .starts_with("squeezed text, twice squeezed text"),
            "{path}: {env}"
        );
        assert_eq!(env["data"]["total_chars"], 34 * 50, "{path}");
    }
}

#[test]
fn bodies_stop_at_max_bytes_and_slow_servers_at_the_timeout() {
    let s = Server::start();
    let f = fixture(&s, "");
    for path in ["/huge", "/endless", "/bomb"] {
        let env = f.ok(
            "web_fetch",
            &args(json!({"url": s.url(path), "max_length": 100})),
        );
        assert_eq!(env["data"]["truncated"], true, "{path}: {env}");
        assert_eq!(env["data"]["total_chars"], 1024 * 1024, "{path}");
        assert!(
            env["text"]
                .as_str()
                .unwrap()
                .contains("cut at 1048576 bytes ([web] max_bytes)")
        );
    }
    let started = std::time::Instant::now();
    let env = f.err(
        "web_fetch",
        &args(json!({"url": s.url("/slow")})),
        "timeout",
    );
    assert!(
        env["text"]
            .as_str()
            .unwrap()
            .contains("4000 ms ([web] timeout_ms)")
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the call was held"
    );
}

#[test]
fn redirects_are_checked_hop_by_hop() {
    let s = Server::start();
    let f = fixture(&s, "max_redirects = 3\n");
    let env = f.ok("web_fetch", &args(json!({"url": s.url("/to-article")})));
    assert_eq!(env["data"]["final_url"], s.url("/article"));
    assert_eq!(env["data"]["redirects"][0]["status"], 302);

    // Across hosts: a caller's Authorization header does not follow to another host.
    let env = f.ok(
        "fetch",
        &args(
            json!({"url": s.url("/to-localhost"), "headers": {"Authorization": "Bearer secret"}}),
        ),
    );
    let seen: Value =
        serde_json::from_str(env["text"].as_str().unwrap().split("\n\n").nth(1).unwrap()).unwrap();
    assert!(seen.get("authorization").is_none(), "{seen}");
    assert!(
        env["data"]["final_url"]
            .as_str()
            .unwrap()
            .starts_with("http://localhost:")
    );

    let before = s.total.load(Ordering::SeqCst);
    let env = f.err(
        "web_fetch",
        &args(json!({"url": s.url("/to-metadata")})),
        "url_denied",
    );
    assert!(
        env["text"]
            .as_str()
            .unwrap()
            .contains("169.254.169.254 is a link-local (the cloud metadata address) address"),
        "{env}"
    );
    let env = f.err(
        "web_fetch",
        &args(json!({"url": s.url("/to-other-loopback")})),
        "url_denied",
    );
    assert!(
        env["text"]
            .as_str()
            .unwrap()
            .contains("127.0.0.2 is a loopback address"),
        "{env}"
    );
    assert_eq!(s.hits("/article"), 1, "the refused hop never connected");
    assert_eq!(
        s.total.load(Ordering::SeqCst),
        before + 2,
        "only the two first hops reached the server"
    );
    let env = f.err(
        "web_fetch",
        &args(json!({"url": s.url("/loop")})),
        "network_error",
    );
    assert!(
        env["text"]
            .as_str()
            .unwrap()
            .contains("more than 3 redirects"),
        "{env}"
    );
}

#[test]
fn the_default_rules_refuse_this_machine_in_every_spelling() {
    let s = Server::start();
    // The web group on, nothing allowed: loopback and metadata refused whatever the
    // spelling, before a connection is made.
    let f = Fixture::new().with_profile(&format!(
        "tools = [\"web\"]\n[web]\nports = [80, 443, {}]\n",
        s.port
    ));
    let p = s.port;
    for url in [
        format!("http://127.0.0.1:{p}/article"),
        format!("http://2130706433:{p}/article"),
        format!("http://0x7f000001:{p}/article"),
        format!("http://0177.0.0.1:{p}/article"),
        format!("http://127.1:{p}/article"),
        format!("http://0x7f.0.0.1:{p}/article"),
        format!("http://[::1]:{p}/article"),
        format!("http://[::ffff:127.0.0.1]:{p}/article"),
        format!("http://[::ffff:7f00:1]:{p}/article"),
        format!("http://localhost:{p}/article"),
        format!("http://LOCALHOST.:{p}/article"),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "http://2852039166/latest/meta-data/".to_string(),
        "http://0xa9.0xfe.0xa9.0xfe/".to_string(),
        "http://[::ffff:a9fe:a9fe]/".to_string(),
        "http://0.0.0.0/".to_string(),
        "http://10.0.0.1/".to_string(),
        "http://[fd00::1]/".to_string(),
    ] {
        let env = f.err("web_fetch", &args(json!({"url": url})), "url_denied");
        let text = env["text"].as_str().unwrap();
        assert!(text.contains("allow_private"), "{url}: {text}");
    }
    assert_eq!(
        s.total.load(Ordering::SeqCst),
        0,
        "no request reached the server"
    );
    for (url, why) in [
        ("file:///etc/passwd", "scheme `file:`"),
        ("ftp://example.org/x", "scheme `ftp:`"),
        ("https://example.org:8443/", "port 8443"),
    ] {
        let env = f.err("web_fetch", &args(json!({"url": url})), "url_denied");
        assert!(env["text"].as_str().unwrap().contains(why), "{url}: {env}");
    }
    let env = f.err(
        "web_fetch",
        &args(json!({"url": "docs.rs/htmd"})),
        "invalid_input",
    );
    assert!(
        env["text"]
            .as_str()
            .unwrap()
            .contains("https://docs.rs/htmd"),
        "{env}"
    );
}

#[test]
fn errors_binary_and_paging_from_the_cache() {
    let s = Server::start();
    let f = fixture(&s, "");
    let env = f.err(
        "web_fetch",
        &args(json!({"url": s.url("/missing")})),
        "http_error",
    );
    assert!(
        env["text"]
            .as_str()
            .unwrap()
            .contains("HTTP 404:\nno such page here"),
        "{env}"
    );
    assert_eq!(env["data"]["status"], 404);
    f.err(
        "fetch",
        &args(json!({"url": s.url("/broken")})),
        "http_error",
    );
    let env = f.err(
        "web_fetch",
        &args(json!({"url": s.url("/image")})),
        "binary_file",
    );
    assert!(
        env["text"]
            .as_str()
            .unwrap()
            .contains("image/png (16 bytes"),
        "{env}"
    );

    // One session (an MCP server) pages through the cache; the CLI is one call per
    // session, so the pages of one document come from one fetch only within a server.
    let env = f.ok(
        "web_fetch",
        &args(json!({"url": s.url("/long"), "max_length": 1000})),
    );
    let next = env["data"]["next_start_index"].as_u64().unwrap();
    assert_eq!(next, 1000);
    assert!(
        env["text"]
            .as_str()
            .unwrap()
            .contains("call again with start_index=1000")
    );
    let env = f.ok(
        "web_fetch",
        &args(json!({"url": s.url("/long"), "start_index": next, "max_length": 1000})),
    );
    assert_eq!(env["data"]["start_index"], 1000);
    assert!(!env["text"].as_str().unwrap().starts_with("Title:"));
}

#[test]
fn fetch_is_plain_http_that_only_reads() {
    let s = Server::start();
    let f = fixture(&s, "");
    let env = f.ok(
        "fetch",
        &args(json!({"url": s.url("/headers"), "headers": {"X-Trace": "t-1"}})),
    );
    assert!(
        env["text"]
            .as_str()
            .unwrap()
            .starts_with("HTTP 200 application/json\n\n"),
        "{env}"
    );
    assert_eq!(env["data"]["headers"]["content-type"], "application/json");
    let seen: Value =
        serde_json::from_str(env["text"].as_str().unwrap().split("\n\n").nth(1).unwrap()).unwrap();
    assert_eq!(seen["x-trace"], "t-1");
    assert!(
        seen["user-agent"]
            .as_str()
            .unwrap()
            .starts_with("whalebox/")
    );
    let env = f.ok(
        "fetch",
        &args(json!({"url": s.url("/json"), "method": "HEAD"})),
    );
    assert_eq!(env["data"]["status"], 200);
    for method in ["POST", "DELETE", "PUT"] {
        let env = f.err(
            "fetch",
            &args(json!({"url": s.url("/json"), "method": method})),
            "invalid_input",
        );
        assert!(
            env["text"]
                .as_str()
                .unwrap()
                .contains("changes nothing remote"),
            "{env}"
        );
    }
    f.err(
        "fetch",
        &args(json!({"url": s.url("/json"), "headers": {"Host": "evil"}})),
        "invalid_input",
    );
}

#[test]
fn search_in_searxng_format_with_domain_filters_and_fallback() {
    let s = Server::start();
    let f = fixture(
        &s,
        &format!(
            "[web.search]\nbackend = \"searxng\"\nurl = \"{}\"\n",
            s.url("/")
        ),
    );
    let env = f.ok(
        "web_search",
        &args(json!({"query": "whalebox", "blocked_domains": ["spam.example.com"]})),
    );
    let text = env["text"].as_str().unwrap();
    assert!(
        text.contains(
            "1. whalebox docs\n   https://docs.example.org/whalebox\n   The hands of an agent."
        ),
        "{text}"
    );
    assert!(text.contains("2. whalebox on crates"), "{text}");
    assert!(!text.contains("spam"), "{text}");
    assert_eq!(env["data"]["backend"], "searxng");
    let env = f.ok(
        "web_search",
        &args(json!({"query": "whalebox", "allowed_domains": ["crates.example.org"]})),
    );
    assert_eq!(env["data"]["results"].as_array().unwrap().len(), 1);

    // A rate-limited backend: the fallback answers, and the result says what was tried.
    let f = fixture(
        &s,
        &format!(
            "[web.search]\nbackend = \"searxng\"\nurl = \"{}\"\nfallback = [{{ backend = \"searxng\", url = \"{}\" }}]\n",
            s.url("/limited/"),
            s.url("/")
        ),
    );
    let env = f.ok(
        "web_search",
        &args(json!({"query": "whalebox", "max_results": 1})),
    );
    assert_eq!(env["data"]["results"].as_array().unwrap().len(), 1);
    assert!(
        env["data"]["tried"][0]["error"]
            .as_str()
            .unwrap()
            .contains("rate-limited"),
        "{env}"
    );

    // Only the rate-limited one: the error says so and what to do.
    let f = fixture(
        &s,
        &format!(
            "[web.search]\nbackend = \"searxng\"\nurl = \"{}\"\n",
            s.url("/limited/")
        ),
    );
    let env = f.err("web_search", &args(json!({"query": "x"})), "network_error");
    assert!(
        env["text"].as_str().unwrap().contains("rate-limited"),
        "{env}"
    );

    // No backend: unsupported, with the lines to add.
    let f = fixture(&s, "");
    let env = f.err("web_search", &args(json!({"query": "x"})), "unsupported");
    assert!(
        env["text"]
            .as_str()
            .unwrap()
            .contains("[web.search]\nbackend = "),
        "{env}"
    );
}

#[test]
fn the_web_group_is_opt_in_and_its_profile_is_checked() {
    let f = Fixture::new();
    let (_, env) = f.call("web_fetch", r#"{"url": "https://example.org/"}"#);
    assert_eq!(
        env["code"], "unknown_tool",
        "not in the default profile: {env}"
    );
    for (bad, says) in [
        (
            "[web]\nallow_private = [\"localhost\"]\n",
            "not an IP address",
        ),
        ("[web]\nports = []\n", "ports is empty"),
        (
            "[web]\nallow_hosts = [\"https://docs.rs\"]\n",
            "host pattern",
        ),
        ("[web.search]\nbackend = \"searxng\"\n", "needs `url`"),
        (
            "[web.search]\nbackend = \"brave\"\napi_key_env = \"sk-123 456\"\n",
            "not a variable name",
        ),
    ] {
        let f = Fixture::new().with_profile(&format!("tools = [\"web\"]\n{bad}"));
        let out = f
            .command(&[
                "profile",
                "check",
                "--profile",
                f.profile.as_ref().unwrap().to_str().unwrap(),
            ])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {stderr}");
        assert!(stderr.contains(says), "{bad}: {stderr}");
    }
}

#[test]
fn with_network_denied_the_server_reaches_the_web_ports_and_commands_do_not() {
    if common::landlock_abi() < 4 {
        eprintln!("SKIPPED: Landlock ABI 4 (TCP rules) is not in this kernel");
        return;
    }
    let s = Server::start();
    let f = Fixture::new().with_profile(&format!(
        "tools = [\"web\", \"shell\"]\n[web]\nallow_private = [\"127.0.0.1\"]\nports = [{p}]\n\
         [shell]\nexec_boundary = \"off\"\n[landlock]\nmode = \"enforce\"\nmin_abi = 4\nnetwork = \"deny\"\nconnect = []\n\
         [network]\nmode = \"off\"\n",
        p = s.port
    ));
    let env = f.ok("web_fetch", &args(json!({"url": s.url("/json")})));
    assert!(env["text"].as_str().unwrap().contains("whalebox"), "{env}");
    let python = common::system_program("python3");
    let env = f.call(
        "shell_run",
        &args(json!({"command": format!(
            "{} -c \"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {}), timeout=5); print('connected')\nexcept OSError as e:\n    print('refused', e.errno)\"",
            python.display(), s.port
        )})),
    )
    .1;
    assert!(
        env["text"].as_str().unwrap().contains("refused 13"),
        "{env}"
    );
    assert_eq!(s.hits("/json"), 1, "only the server's own request arrived");
}
