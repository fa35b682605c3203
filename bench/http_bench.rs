//! bench/http.sh: `whalebox serve --http` under load, beside the same calls over stdio.
//!
//! 1. BENCH_SESSIONS (100) sessions at once, each making BENCH_CALLS (200) `read_file` calls
//!    one after another: over loopback HTTP (classic sessions: `initialize`, then
//!    `Mcp-Session-Id`, as Codex does), over HTTP without sessions (2026-07-28 stateless
//!    requests, as Claude Code sends them), and over stdio (one `whalebox serve` process per
//!    session: the baseline). The sessions are opened first; the clock runs over the calls
//!    alone. Prints calls/s and the p50 and p99 of a call's round trip, and the ratios.
//! 2. Memory per idle session: the server's RSS (with any processes it started) before and
//!    after BENCH_IDLE (1,000) more classic sessions are opened, divided.
//!
//! The load generator is this one thread (tokio's current-thread runtime, reqwest with
//! keep-alive, one connection per session): on 2 cores the server gets the other. It speaks
//! the minimal Streamable HTTP itself: POST with `Accept: application/json,
//! text/event-stream`, the answer read from the SSE `data:` lines.
//!
//! Usage: http_bench WHALEBOX_BINARY. BENCH_ONLY=http|stateless|stdio|idle (comma-separated)
//! runs only those parts.
//!
//! One file of about 700 lines: a Cargo example is one file, and its parts (the two
//! transports' clients, the statistics, the memory reading) serve this benchmark alone.

use std::io::BufRead;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::pipe;

type Error = Box<dyn std::error::Error + Send + Sync>;
type Res<T> = Result<T, Error>;

const CLASSIC: &str = "2025-06-18";
const STATELESS: &str = "2026-07-28";
const GOAL_CALLS_PER_S: f64 = 5000.0;
const GOAL_P99_MS: f64 = 5.0;
const GOAL_IDLE_KIB: f64 = 200.0;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn wanted(part: &str) -> bool {
    match std::env::var("BENCH_ONLY") {
        Ok(only) if !only.is_empty() => only.split(',').any(|p| p.trim() == part),
        _ => true,
    }
}

/// The workspace every server serves: a git-less directory with one 40-line file.
struct Scratch {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Scratch {
    fn new(sessions: usize) -> Res<Scratch> {
        let dir = tempfile::Builder::new()
            .prefix("whalebox-http-bench-")
            .tempdir()?;
        let root = dir.path().to_path_buf();
        std::fs::create_dir_all(root.join("ws/src"))?;
        std::fs::create_dir_all(root.join("home/tmp"))?;
        let text: String = (1..=40)
            .map(|i| format!("pub fn f{i}(x: u32) -> u32 {{ x.wrapping_mul({i}) }}\n"))
            .collect();
        std::fs::write(root.join("ws/src/lib.rs"), text)?;
        // Room for the load's sessions, the idle ones and a few more.
        let max = sessions + env_usize("BENCH_IDLE", 1000) + 64;
        std::fs::write(
            root.join("profile.toml"),
            format!(
                "[http]\nmax_sessions = {max}\nmax_connections = {}\nidle_timeout_s = 3600\n",
                max + 64
            ),
        )?;
        Ok(Scratch { _dir: dir, root })
    }

    fn command(&self, bin: &Path, log: &str) -> Command {
        let mut c = Command::new(bin);
        c.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.root.join("home"))
            .env("TMPDIR", self.root.join("home/tmp"))
            .env("LANG", "C.UTF-8")
            // Every call's log line is left out, as a production server would run.
            .env("RUST_LOG", log)
            .arg("serve")
            .arg("--workspace")
            .arg(self.root.join("ws"))
            .arg("--profile")
            .arg(self.root.join("profile.toml"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }
}

/// SIGTERM (whalebox's graceful stop), then SIGKILL after `grace`; reaped either way.
fn stop(child: &mut Child, grace: Duration) {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn read_args() -> Value {
    json!({"file_path": "src/lib.rs", "offset": 1, "limit": 20})
}

/// What a `tools/call` of read_file must answer: whalebox's numbered lines, no error.
fn check_result(reply: &Value) -> Res<()> {
    let result = &reply["result"];
    let text = result["content"][0]["text"].as_str().unwrap_or("");
    if result["isError"] == json!(true) || !text.starts_with("     1\tpub fn f1(") {
        return Err(format!("unexpected answer: {reply}").into());
    }
    Ok(())
}

// ---- stats -----------------------------------------------------------------------------

struct Run {
    calls: usize,
    wall: Duration,
    latencies: Vec<Duration>,
    /// CPU time this load generator used meanwhile.
    cpu: Duration,
}

/// This process's CPU time (user + system) so far, from /proc/self/stat (in ticks of 10 ms).
fn own_cpu() -> Duration {
    let ticks = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(')')?.1.to_string();
            let f: Vec<&str> = rest.split_whitespace().collect();
            // After the command: state is field 3, utime 14, stime 15.
            Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
        })
        .unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

impl Run {
    fn new(wall: Duration, cpu: Duration, per_session: Vec<Vec<Duration>>) -> Run {
        let mut latencies: Vec<Duration> = per_session.into_iter().flatten().collect();
        latencies.sort_unstable();
        Run {
            calls: latencies.len(),
            wall,
            latencies,
            cpu,
        }
    }
    fn rate(&self) -> f64 {
        self.calls as f64 / self.wall.as_secs_f64()
    }
    fn pct_ms(&self, p: usize) -> f64 {
        let i = (self.latencies.len() * p / 100).min(self.latencies.len() - 1);
        self.latencies[i].as_secs_f64() * 1000.0
    }
    fn line(&self, what: &str) -> String {
        format!(
            "{what:<40} {:>6.0} calls/s  p50 {:>6.2} ms  p99 {:>6.2} ms  ({} calls in {:.2} s; \
             the load generator used {:.0}% of a core)",
            self.rate(),
            self.pct_ms(50),
            self.pct_ms(99),
            self.calls,
            self.wall.as_secs_f64(),
            100.0 * self.cpu.as_secs_f64() / self.wall.as_secs_f64()
        )
    }
}

// ---- memory ----------------------------------------------------------------------------

/// VmRSS of `pid` and every process under it, in KiB.
fn tree_rss_kib(pid: u32) -> u64 {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Ok(p) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            if let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat"))
                && let Some((_, rest)) = stat.rsplit_once(')')
                && let Some(ppid) = rest.split_whitespace().nth(1)
                && let Ok(ppid) = ppid.parse()
            {
                parents.push((p, ppid));
            }
        }
    }
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(
            parents
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    tree.iter().map(|p| rss_kib(*p)).sum()
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

// ---- HTTP ------------------------------------------------------------------------------

struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start(scratch: &Scratch, bin: &Path) -> Res<HttpServer> {
        let mut cmd = scratch.command(bin, "warn,whalebox::serve=info");
        cmd.arg("--http").arg("127.0.0.1:0").stdout(Stdio::null());
        let mut child = cmd.spawn()?;
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let (tx, rx) = std::sync::mpsc::channel();
        // Its log is read to the end on a thread of its own, so a full pipe never stops it.
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                match line.split_once("listening on ") {
                    Some((_, rest)) if tx.is_some() => {
                        let url = rest.split_whitespace().next().unwrap_or("").to_string();
                        let _ = tx.take().map(|tx| tx.send(url));
                    }
                    _ => eprintln!("whalebox: {line}"),
                }
            }
        });
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(url) => Ok(HttpServer { child, url }),
            Err(_) => {
                stop(&mut child, Duration::ZERO);
                Err("the server did not say where it listens within 30 s".into())
            }
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        stop(&mut self.child, Duration::from_secs(30));
    }
}

fn client() -> Res<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(60))
        .pool_idle_timeout(None)
        .build()?)
}

/// POST one message; the reply with `id`, or None for a notification (202).
async fn post(
    client: &reqwest::Client,
    url: &str,
    headers: &[(&str, String)],
    body: &Value,
) -> Res<(Option<String>, Option<Value>)> {
    let mut req = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    for (name, value) in headers {
        req = req.header(*name, value);
    }
    let response = req.send().await?;
    let status = response.status();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let sse = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let bytes = response.bytes().await?;
    if !status.is_success() {
        return Err(format!("{status}: {}", String::from_utf8_lossy(&bytes)).into());
    }
    let Some(id) = body.get("id") else {
        return Ok((session, None));
    };
    let text = std::str::from_utf8(&bytes)?;
    let reply = if sse {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .find(|m| m.get("id") == Some(id))
    } else {
        serde_json::from_str(text).ok()
    };
    let reply = reply.ok_or_else(|| format!("no reply to {id} in {text:?}"))?;
    Ok((session, Some(reply)))
}

struct HttpSession {
    client: reqwest::Client,
    url: String,
    headers: Vec<(&'static str, String)>,
    next: u64,
}

impl HttpSession {
    /// A classic session (`client`: its own for a caller of its own, or shared).
    async fn open(url: &str, client: reqwest::Client) -> Res<HttpSession> {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": CLASSIC, "capabilities": {},
            "clientInfo": {"name": "whalebox-http-bench", "version": "1"}}});
        let (session, reply) = post(&client, url, &[], &init).await?;
        let session = session.ok_or("initialize: no Mcp-Session-Id")?;
        reply
            .and_then(|r| r.get("result").cloned())
            .ok_or("initialize failed")?;
        let headers = vec![
            ("mcp-session-id", session),
            ("mcp-protocol-version", CLASSIC.to_string()),
        ];
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        post(&client, url, &headers, &note).await?;
        Ok(HttpSession {
            client,
            url: url.to_string(),
            headers,
            next: 1,
        })
    }

    /// A stateless 2026-07-28 caller: no session, everything in each request.
    fn stateless(url: &str) -> Res<HttpSession> {
        Ok(HttpSession {
            client: client()?,
            url: url.to_string(),
            headers: vec![("mcp-protocol-version", STATELESS.to_string())],
            next: 1,
        })
    }

    async fn call(&mut self, stateless: bool) -> Res<()> {
        self.next += 1;
        let mut params = json!({"name": "read_file", "arguments": read_args()});
        let mut headers = self.headers.clone();
        if stateless {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": STATELESS,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "whalebox-http-bench", "version": "1"}});
            headers.push(("mcp-method", "tools/call".into()));
            headers.push(("mcp-name", "read_file".into()));
        }
        let msg =
            json!({"jsonrpc": "2.0", "id": self.next, "method": "tools/call", "params": params});
        let (_, reply) = post(&self.client, &self.url, &headers, &msg).await?;
        check_result(&reply.ok_or("no reply")?)
    }
}

async fn http_load(url: &str, sessions: usize, calls: usize, stateless: bool) -> Res<Run> {
    let mut opened = Vec::with_capacity(sessions);
    for _ in 0..sessions {
        opened.push(if stateless {
            HttpSession::stateless(url)?
        } else {
            HttpSession::open(url, client()?).await?
        });
    }
    // One call each before the clock starts: connections made, first-call work done.
    for s in &mut opened {
        s.call(stateless).await?;
    }
    let (start, cpu) = (Instant::now(), own_cpu());
    let tasks: Vec<_> = opened
        .into_iter()
        .map(|mut s| {
            tokio::spawn(async move {
                let mut times = Vec::with_capacity(calls);
                for _ in 0..calls {
                    let t = Instant::now();
                    s.call(stateless).await?;
                    times.push(t.elapsed());
                }
                Ok::<_, Error>(times)
            })
        })
        .collect();
    let mut all = Vec::with_capacity(sessions);
    for t in tasks {
        all.push(t.await??);
    }
    Ok(Run::new(start.elapsed(), own_cpu() - cpu, all))
}

// ---- stdio -----------------------------------------------------------------------------

struct StdioSession {
    child: Child,
    /// None once closed (the server's cue to exit: it does not on SIGTERM alone while its
    /// stdin is open).
    stdin: Option<pipe::Sender>,
    stdout: BufReader<pipe::Receiver>,
    next: u64,
    line: String,
}

impl StdioSession {
    async fn open(scratch: &Scratch, bin: &Path) -> Res<StdioSession> {
        let mut cmd = scratch.command(bin, "warn");
        cmd.stderr(Stdio::null());
        let mut child = cmd.spawn()?;
        let stdin =
            pipe::Sender::from_owned_fd(OwnedFd::from(child.stdin.take().ok_or("no stdin")?))?;
        let stdout =
            pipe::Receiver::from_owned_fd(OwnedFd::from(child.stdout.take().ok_or("no stdout")?))?;
        let mut s = StdioSession {
            child,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
            next: 0,
            line: String::new(),
        };
        s.rpc(
            "initialize",
            json!({"protocolVersion": CLASSIC, "capabilities": {},
            "clientInfo": {"name": "whalebox-http-bench", "version": "1"}}),
        )
        .await?;
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        s.send(&note).await?;
        Ok(s)
    }

    async fn send(&mut self, msg: &Value) -> Res<()> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        stdin.write_all(format!("{msg}\n").as_bytes()).await?;
        stdin.flush().await?;
        Ok(())
    }

    async fn rpc(&mut self, method: &str, params: Value) -> Res<Value> {
        self.next += 1;
        let msg = json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params});
        self.send(&msg).await?;
        loop {
            self.line.clear();
            if self.stdout.read_line(&mut self.line).await? == 0 {
                return Err("the stdio server closed its output".into());
            }
            let reply: Value = serde_json::from_str(&self.line)?;
            if reply.get("id") == Some(&json!(self.next)) {
                return Ok(reply);
            }
        }
    }

    async fn call(&mut self) -> Res<()> {
        let reply = self
            .rpc(
                "tools/call",
                json!({"name": "read_file", "arguments": read_args()}),
            )
            .await?;
        check_result(&reply)
    }
}

impl Drop for StdioSession {
    fn drop(&mut self) {
        self.stdin = None;
        stop(&mut self.child, Duration::from_secs(10));
    }
}

async fn stdio_load(
    scratch: &Scratch,
    bin: &Path,
    sessions: usize,
    calls: usize,
) -> Res<(Run, u64)> {
    let mut opened = Vec::with_capacity(sessions);
    for _ in 0..sessions {
        opened.push(StdioSession::open(scratch, bin).await?);
    }
    for s in &mut opened {
        s.call().await?;
    }
    // What one stdio session costs: a whole process (and whatever it started).
    let rss = opened
        .iter()
        .map(|s| tree_rss_kib(s.child.id()))
        .sum::<u64>()
        / sessions.max(1) as u64;
    let (start, cpu) = (Instant::now(), own_cpu());
    let tasks: Vec<_> = opened
        .into_iter()
        .map(|mut s| {
            tokio::spawn(async move {
                let mut times = Vec::with_capacity(calls);
                for _ in 0..calls {
                    let t = Instant::now();
                    s.call().await?;
                    times.push(t.elapsed());
                }
                Ok::<_, Error>((times, s))
            })
        })
        .collect();
    let mut all = Vec::with_capacity(sessions);
    let mut done = Vec::with_capacity(sessions);
    for t in tasks {
        let (times, s) = t.await??;
        all.push(times);
        done.push(s);
    }
    let run = Run::new(start.elapsed(), own_cpu() - cpu, all);
    // All told to stop at once (stdin closed: what ends a stdio server), then each reaped.
    for s in &mut done {
        s.stdin = None;
    }
    drop(done);
    Ok((run, rss))
}

// ---- idle sessions ---------------------------------------------------------------------

async fn idle_sessions(scratch: &Scratch, bin: &Path, count: usize) -> Res<(u64, u64)> {
    let server = HttpServer::start(scratch, bin)?;
    // One session with a call first: what is built once per server is built.
    let mut warm = HttpSession::open(&server.url, client()?).await?;
    warm.call(false).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = tree_rss_kib(server.pid());
    // Opened 50 at a time over one client: the sessions, not as many connections, are measured.
    let shared = client()?;
    let mut open = Vec::with_capacity(count);
    for chunk in 0..count.div_ceil(50) {
        let n = 50.min(count - chunk * 50);
        let batch: Vec<_> = (0..n)
            .map(|_| {
                let url = server.url.clone();
                let client = shared.clone();
                tokio::spawn(async move { HttpSession::open(&url, client).await })
            })
            .collect();
        for b in batch {
            open.push(b.await??);
        }
    }
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let after = tree_rss_kib(server.pid());
    drop((open, warm, shared));
    // The connections' tasks close their sockets before the server is told to stop.
    tokio::time::sleep(Duration::from_millis(200)).await;
    drop(server);
    Ok((before, after))
}

// ---- main ------------------------------------------------------------------------------

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "NOT met" }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Res<()> {
    let bin = PathBuf::from(
        std::env::args()
            .nth(1)
            .ok_or("usage: http_bench WHALEBOX_BINARY")?,
    );
    let sessions = env_usize("BENCH_SESSIONS", 100);
    let calls = env_usize("BENCH_CALLS", 200);
    let idle = env_usize("BENCH_IDLE", 1000);
    let scratch = Scratch::new(sessions)?;
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "http bench: {sessions} sessions at once x {calls} read_file calls each \
         ({} calls), {cores} cores, {}",
        sessions * calls,
        bin.display()
    );
    let goals = format!("goals: >= {GOAL_CALLS_PER_S:.0} calls/s, p99 <= {GOAL_P99_MS:.0} ms");
    let mut http = None;
    let mut stdio = None;
    if wanted("http") || wanted("stateless") {
        let server = HttpServer::start(&scratch, &bin)?;
        if wanted("http") {
            let run = http_load(&server.url, sessions, calls, false).await?;
            println!("  {}", run.line("HTTP, classic sessions:"));
            let alone = http_load(&server.url, 1, calls, false).await?;
            println!("  {}", alone.line("HTTP, one classic session alone:"));
            http = Some((run, alone));
        }
        if wanted("stateless") {
            let run = http_load(&server.url, sessions, calls, true).await?;
            println!("  {}", run.line("HTTP, stateless 2026-07-28 requests:"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        drop(server);
    }
    if wanted("stdio") {
        let (run, rss) = stdio_load(&scratch, &bin, sessions, calls).await?;
        println!(
            "  {}",
            run.line(&format!("stdio, {sessions} processes (baseline):"))
        );
        let (alone, _) = stdio_load(&scratch, &bin, 1, calls).await?;
        println!("  {}", alone.line("stdio, one session alone:"));
        stdio = Some((run, alone, rss));
    }
    if let (Some((h, ha)), Some((s, sa, _))) = (&http, &stdio) {
        println!(
            "  HTTP / stdio: {sessions} sessions: throughput {:.2}x, p50 {:.2}x, p99 {:.2}x; \
             one session: p50 {:.2}x, p99 {:.2}x",
            h.rate() / s.rate(),
            h.pct_ms(50) / s.pct_ms(50),
            h.pct_ms(99) / s.pct_ms(99),
            ha.pct_ms(50) / sa.pct_ms(50),
            ha.pct_ms(99) / sa.pct_ms(99)
        );
    }
    if let Some((h, ha)) = &http {
        // Each caller waits for its answer before the next call, so with N callers a call
        // waits about N / throughput: p99 <= 5 ms at 100 callers takes 20,000 calls/s.
        println!(
            "  {goals}: {:.0} calls/s with {sessions} sessions ({}), p99 {:.2} ms with \
             {sessions} ({}) and {:.2} ms alone ({})",
            h.rate(),
            verdict(h.rate() >= GOAL_CALLS_PER_S),
            h.pct_ms(99),
            verdict(h.pct_ms(99) <= GOAL_P99_MS),
            ha.pct_ms(99),
            verdict(ha.pct_ms(99) <= GOAL_P99_MS)
        );
    }
    if wanted("idle") {
        let (before, after) = idle_sessions(&scratch, &bin, idle).await?;
        let per = after.saturating_sub(before) as f64 / idle as f64;
        let stdio_note = match &stdio {
            Some((_, _, rss)) => format!(
                "; a stdio session is a process of {:.1} MiB",
                *rss as f64 / 1024.0
            ),
            None => String::new(),
        };
        println!(
            "  idle sessions: {idle} opened, server RSS {:.1} -> {:.1} MiB = {per:.0} KiB per session \
             (goal <= {GOAL_IDLE_KIB:.0} KiB: {}){stdio_note}",
            before as f64 / 1024.0,
            after as f64 / 1024.0,
            verdict(per <= GOAL_IDLE_KIB)
        );
    }
    Ok(())
}
