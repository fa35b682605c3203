//! MCP JSON-RPC into the real server (`mcp::Server`, rmcp over an in-process duplex pipe,
//! the transport `serve` uses on stdio): after the `initialize` handshake, lines of raw
//! bytes, or JSON-RPC messages drawn from the protocol's methods (requests, notifications,
//! responses nobody asked for, batches, odd ids, tool calls with arbitrary arguments to
//! the read-only tool groups), then a `ping` or `tools/list`.
//!
//! Oracle: never a panic; the server neither dies nor hangs: it answers the final request
//! (by its id) within 10 s, whatever came before. One runtime and one registry serve
//! every input; each input gets a fresh session.

#![no_main]

use std::sync::Arc;
use std::time::Duration;

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use rmcp::ServiceExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use whalebox::core::Registry;
use whalebox::mcp::Server;
use whalebox::tools::Env;

/// Read-only groups only: a fuzzed call must not run commands or write files.
const PROFILE: &str = r#"
tools = ["files", "search", "plan", "todo"]
[checkpoints]
mode = "off"
"#;

struct Setup {
    runtime: tokio::runtime::Runtime,
    registry: Arc<Registry>,
    env: Arc<Env>,
}

thread_local! {
    static SETUP: Setup = {
        let (registry, env) = whalebox_fuzz::registry("mcp_messages", PROFILE);
        std::fs::write(env.profile.workspace.join("a.txt"), "alpha\nbeta\n").expect("a workspace file");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        Setup { runtime, registry: Arc::new(registry), env }
    };
}

const METHODS: &[&str] = &[
    "ping",
    "initialize",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "prompts/list",
    "prompts/get",
    "logging/setLevel",
    "completion/complete",
    "server/discover",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
    "tasks/list",
    "",
    "nonexistent/method",
];

const TOOLS: &[&str] = &[
    "read_file",
    "list_dir",
    "grep",
    "search_files",
    "update_plan",
    "todo_add",
    "todo_list",
    "todo_update",
    "nope",
];

fn json_value(u: &mut Unstructured, depth: u32) -> Result<Value> {
    Ok(match u.int_in_range(0..=if depth > 2 { 4 } else { 6 })? {
        0 => Value::Null,
        1 => json!(u.arbitrary::<bool>()?),
        2 => json!(u.arbitrary::<i64>()?),
        3 => json!(u.choose(&["a.txt", "", "..", "/etc/passwd", "alpha", "x*", "[a](a)"])?),
        4 => json!(u.arbitrary::<String>()?),
        5 => Value::Array(
            (0..u.int_in_range(0..=3)?)
                .map(|_| json_value(u, depth + 1))
                .collect::<Result<_>>()?,
        ),
        _ => {
            let mut m = serde_json::Map::new();
            for _ in 0..u.int_in_range(0..=3)? {
                let k = u
                    .choose(&[
                        "path",
                        "file_path",
                        "pattern",
                        "name",
                        "uri",
                        "id",
                        "cursor",
                        "_meta",
                        "level",
                    ])?
                    .to_string();
                m.insert(k, json_value(u, depth + 1)?);
            }
            Value::Object(m)
        }
    })
}

fn message(u: &mut Unstructured) -> Result<Value> {
    let method = *u.choose(METHODS)?;
    let params = if method == "tools/call" {
        json!({"name": u.choose(TOOLS)?, "arguments": json_value(u, 0)?})
    } else {
        json_value(u, 0)?
    };
    let id = match u.int_in_range(0..=6)? {
        0 => None,
        1 => Some(json!(null)),
        2 => Some(json!(u.arbitrary::<String>()?)),
        3 => Some(json!({"a": 1})),
        4 => Some(json!(1.5)),
        _ => Some(json!(u.int_in_range(1..=5)?)),
    };
    let mut m = json!({"jsonrpc": "2.0", "method": method, "params": params});
    match u.int_in_range(0..=9)? {
        0 => {
            m = json!({"jsonrpc": "2.0", "id": id.clone().unwrap_or(json!(7)), "result": json_value(u, 0)?})
        }
        1 => {
            m = json!({"jsonrpc": "2.0", "id": id.clone().unwrap_or(json!(7)), "error": {"code": -1, "message": "x"}})
        }
        2 => m["jsonrpc"] = json!("1.0"),
        3 => m = json!([m, {"jsonrpc": "2.0", "id": 9, "method": "ping"}]),
        _ => {}
    }
    if let (Some(id), Some(obj)) = (id, m.as_object_mut()) {
        obj.insert("id".into(), id);
    }
    Ok(m)
}

async fn session(setup: &Setup, garbage: Vec<Vec<u8>>, last: &str) {
    let (client, server_side) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_side);
    let server = Server::new(Arc::clone(&setup.registry), &setup.env);
    let serving = tokio::spawn(async move {
        if let Ok(running) = server.serve((server_read, server_write)).await {
            let _ = running.waiting().await;
        }
    });
    let (read, mut write) = tokio::io::split(client);
    let mut lines = BufReader::new(read).lines();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "fuzz", "version": "0"}}});
    write
        .write_all(format!("{init}\n").as_bytes())
        .await
        .expect("write");
    let answer = lines
        .next_line()
        .await
        .expect("read")
        .expect("an answer to initialize");
    assert!(answer.contains("\"result\""), "initialize failed: {answer}");
    write
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .expect("write");
    let mut garbage = garbage;
    let final_request = json!({"jsonrpc": "2.0", "id": "fuzz-final", "method": last, "params": {}});
    garbage.push(format!("{final_request}").into_bytes());
    // Write while reading: a slow reader must not stall a server that answers a lot.
    let writer = tokio::spawn(async move {
        for mut line in garbage {
            line.push(b'\n');
            if write.write_all(&line).await.is_err() {
                return write;
            }
        }
        write
    });
    let answered = tokio::time::timeout(Duration::from_secs(10), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.contains("\"fuzz-final\"") {
                return Some(line);
            }
        }
        None
    })
    .await;
    let line = match answered {
        Ok(Some(line)) => line,
        Ok(None) => panic!("the server closed the connection instead of answering {last}"),
        Err(_) => panic!("no answer to {last} within 10 s"),
    };
    assert!(
        line.contains("\"result\""),
        "{last} failed after the garbage: {line}"
    );
    drop(writer.await);
    drop(lines);
    let _ = tokio::time::timeout(Duration::from_secs(5), serving).await;
}

fn lines_of(u: &mut Unstructured) -> Result<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    for _ in 0..u.int_in_range(0..=8)? {
        if u.ratio(1, 3)? {
            let raw: Vec<u8> = u.arbitrary()?;
            out.extend(raw.split(|&b| b == b'\n').map(<[u8]>::to_vec));
        } else {
            out.push(message(u)?.to_string().into_bytes());
        }
    }
    Ok(out)
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(garbage) = lines_of(&mut u) else {
        return;
    };
    let last = if u.arbitrary().unwrap_or(false) {
        "tools/list"
    } else {
        "ping"
    };
    SETUP.with(|setup| setup.runtime.block_on(session(setup, garbage, last)));
});
