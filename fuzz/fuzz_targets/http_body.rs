//! HTTP bodies: the web client (`web::client::send`) against a loopback server that
//! answers with a fuzzed body, `Content-Encoding` (gzip, deflate, br, identity, an
//! unknown one, none), `Content-Type` and a `max_bytes` limit, including decompression
//! bombs (up to 2 MB of one byte, compressed to a few kilobytes); then charset sniffing
//! and decoding (`web::body`: the header's charset, `<meta charset>`, BOMs, UTF-8, the
//! windows-1252 fallback) on the bytes read, and on raw bytes directly.
//!
//! Oracle: never a panic; the body read is at most `max_bytes`, and is `cut` exactly when
//! there was more; a body compressed by a supported coding comes back decoded, byte for
//! byte (or its first `max_bytes`); `body::decode` and `body::decode_owned` (the copy-free
//! path) agree on text, encoding and replacement; decoded text is at most 3 bytes per
//! byte of body.

#![no_main]

use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;
use std::time::Duration;

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use url::Url;
use whalebox::web::body::{self, Kind};
use whalebox::web::client::{Limits, Request, send};
use whalebox::web::guard::Guard;
use whalebox::web::settings::WebSection;

struct Server {
    runtime: tokio::runtime::Runtime,
    port: u16,
    /// The response the next connection gets (head and body).
    next: Rc<RefCell<Vec<u8>>>,
    guard: Guard,
}

thread_local! {
    static SERVER: Server = {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let listener = runtime
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .expect("a loopback port");
        let port = listener.local_addr().expect("an address").port();
        let next = Rc::new(RefCell::new(Vec::new()));
        let serving = Rc::clone(&next);
        let local = tokio::task::LocalSet::new();
        local.spawn_local(async move {
            loop {
                let Ok((mut conn, _)) = listener.accept().await else { continue };
                let response = serving.borrow().clone();
                tokio::task::spawn_local(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match conn.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let _ = conn.write_all(&response).await;
                    let _ = conn.shutdown().await;
                });
            }
        });
        // The server runs whenever the task set does (in `check`'s block_on).
        let cfg = WebSection {
            allow_private: vec!["127.0.0.1".into()],
            ports: vec![port],
            ..WebSection::default()
        };
        let guard = Guard::new(&cfg).expect("a guard");
        LOCAL.with(|l| *l.borrow_mut() = Some(local));
        Server { runtime, port, next, guard }
    };
    static LOCAL: RefCell<Option<tokio::task::LocalSet>> = const { RefCell::new(None) };
}

const TYPES: &[&str] = &[
    "text/html",
    "text/html; charset=iso-8859-1",
    "text/html; charset=\"shift_jis\"",
    "text/plain; charset=utf-16le",
    "text/plain; charset=utf-8",
    "application/json",
    "application/octet-stream",
    "text/plain; charset=bogus",
    "",
];

fn compress(coding: &str, raw: &[u8]) -> Vec<u8> {
    match coding {
        "gzip" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(raw).expect("in memory");
            e.finish().expect("in memory")
        }
        "deflate" => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(raw).expect("in memory");
            e.finish().expect("in memory")
        }
        "br" => {
            let mut out = Vec::new();
            let mut e = brotli::CompressorWriter::new(&mut out, 4096, 1, 20);
            e.write_all(raw).expect("in memory");
            drop(e);
            out
        }
        _ => raw.to_vec(),
    }
}

fn check_decoding(bytes: &[u8], content_type: Option<&str>) {
    let kind = body::kind(content_type, bytes);
    let a = body::decode(bytes, content_type, kind);
    let b = body::decode_owned(bytes.to_vec(), content_type, kind);
    assert_eq!(
        (&a.text, a.encoding, a.replaced),
        (&b.text, b.encoding, b.replaced),
        "decode and decode_owned differ ({content_type:?}, {kind:?})"
    );
    assert!(
        a.text.len() <= 3 * bytes.len() + 3,
        "{} bytes of text from {}",
        a.text.len(),
        bytes.len()
    );
    let _ = (kind == Kind::Html, body::media_type(content_type));
}

fn check(server: &Server, local: &tokio::task::LocalSet, u: &mut Unstructured) -> Result<()> {
    let ct = *u.choose(TYPES)?;
    let content_type = (!ct.is_empty()).then_some(ct);
    if u.ratio(1, 2)? {
        let bytes: Vec<u8> = u.arbitrary()?;
        check_decoding(&bytes, content_type);
        return Ok(());
    }
    let coding = *u.choose(&["gzip", "deflate", "br", "identity", "zstd", "gzip, br", ""])?;
    let max_bytes = u.int_in_range(0..=70_000u64)?;
    // The decoded body we expect back, when we know it.
    let (wire, decoded): (Vec<u8>, Option<Vec<u8>>) = match u.int_in_range(0..=3)? {
        0 => {
            let raw: Vec<u8> = u.arbitrary()?;
            (raw, None)
        }
        1 => {
            // A bomb: up to 2 MB of one byte, a few kilobytes on the wire.
            let n = u.int_in_range(0..=2usize << 20)?;
            let raw = vec![u.arbitrary::<u8>()?; n];
            (compress(coding, &raw), Some(raw))
        }
        _ => {
            let raw: Vec<u8> = u.arbitrary()?;
            (compress(coding, &raw), Some(raw))
        }
    };
    let known = matches!(coding, "gzip" | "deflate" | "br" | "identity" | "");
    let mut response = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n",
        wire.len()
    )
    .into_bytes();
    if !coding.is_empty() {
        response.extend_from_slice(format!("Content-Encoding: {coding}\r\n").as_bytes());
    }
    if let Some(ct) = content_type {
        response.extend_from_slice(format!("Content-Type: {ct}\r\n").as_bytes());
    }
    response.extend_from_slice(b"\r\n");
    response.extend_from_slice(&wire);
    *server.next.borrow_mut() = response;

    let url = Url::parse(&format!("http://127.0.0.1:{}/body", server.port)).expect("a URL");
    let req = Request {
        url,
        method: reqwest::Method::GET,
        headers: &[],
        exempt: false,
        body: None,
    };
    let limits = Limits {
        max_bytes,
        max_redirects: 0,
        user_agent: "whalebox-fuzz",
        approved: None,
    };
    let sent = local.block_on(&server.runtime, async {
        tokio::time::timeout(Duration::from_secs(10), send(req, &server.guard, &limits)).await
    });
    let sent = sent.expect("the request finished within 10 s");
    let Ok(resp) = sent else {
        return Ok(());
    };
    let max = max_bytes as usize;
    assert!(
        resp.body.len() <= max,
        "{} bytes read past max_bytes {max}",
        resp.body.len()
    );
    if resp.cut {
        assert_eq!(resp.body.len(), max, "cut before max_bytes");
    }
    if let (Some(decoded), true) = (&decoded, known) {
        let want = &decoded[..decoded.len().min(max)];
        assert_eq!(
            &resp.body[..],
            want,
            "the body is not the {coding} stream decoded"
        );
        assert_eq!(
            resp.cut,
            decoded.len() > max,
            "cut is wrong ({} of {max})",
            decoded.len()
        );
    }
    check_decoding(&resp.body, resp.content_type.as_deref());
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    SERVER.with(|server| {
        LOCAL.with(|local| {
            let local = local.borrow();
            let local = local.as_ref().expect("the server's task set");
            let _ = check(server, local, &mut Unstructured::new(data));
        })
    });
});
