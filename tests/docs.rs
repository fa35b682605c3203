//! Every snippet of the documentation, checked against the real binary: the manual
//! (docs/src/**/*.md), README.md, CONTRIBUTING.md and policies/README.md (the manual
//! includes it). The info string of a code block says what it is (CONTRIBUTING.md):
//!
//! - ```` ```toml profile ````: a whole profile, loaded by `whalebox profile check`;
//! - ```` ```toml policy ````: a policy (or its rules alone: `version = 1` is put before a
//!   snippet without it), loaded by `whalebox policy test` next to copies of policies/;
//! - ```` ```LANG client ````: a client's configuration. Those of the manual's client
//!   chapters, between `<!-- clients:begin -->`/`<!-- headless:begin -->` and their ends,
//!   are started by tests/mcp/test_clients.py and tests/clients; one anywhere else must be
//!   a verbatim copy of one of them;
//! - ```` ```sh run ````: run with bash in a scratch directory, `whalebox` on PATH; every
//!   envelope it prints must be ok;
//! - ```` ```LANG ignore ````: shown, not checked (an illustration with `…` in it);
//! - every other ```` ```json ```` block must parse, a ```` ```toml ```` block must say which
//!   of the above it is, and every tool call in an `sh` block (`whalebox call TOOL --args
//!   '…'`, `echo '…' | whalebox call TOOL --args-file -`) or in running text (`` `TOOL
//!   {…}` ``) must fit that tool's input schema from `whalebox tools --json`.
//!
//! The Nix build's check phase has no docs/ (nix/package.nix builds from the sources
//! alone): there these tests skip, saying so.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A fenced code block: where it starts, its info string split in words, its text.
#[derive(Debug)]
struct Block {
    file: String,
    line: usize,
    lang: String,
    markers: Vec<String>,
    body: String,
    /// `clients` or `headless` when inside that marked region.
    region: Option<String>,
}

impl Block {
    fn has(&self, marker: &str) -> bool {
        self.markers.iter().any(|m| m == marker)
    }
    fn at(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

/// A documentation file's text, by its path from the repository root.
struct Doc {
    file: String,
    text: String,
}

/// Every documentation file, or None (said on stderr) where they are not in the tree.
fn docs() -> Option<Vec<Doc>> {
    let root = repo();
    let book = root.join("docs/src");
    if !book.join("SUMMARY.md").is_file() || !root.join("README.md").is_file() {
        eprintln!(
            "tests/docs.rs: SKIPPED: no docs/src/SUMMARY.md or README.md in {} (a build from the \
             sources alone, such as the Nix package's); tests/run checks them",
            root.display()
        );
        return None;
    }
    let mut files = vec![
        PathBuf::from("README.md"),
        PathBuf::from("CONTRIBUTING.md"),
        PathBuf::from("policies/README.md"),
    ];
    let mut stack = vec![book];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read docs/src") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(
                    path.strip_prefix(root)
                        .expect("under the repo")
                        .to_path_buf(),
                );
            }
        }
    }
    files.sort();
    Some(
        files
            .into_iter()
            .map(|f| Doc {
                text: std::fs::read_to_string(root.join(&f))
                    .unwrap_or_else(|e| panic!("{}: {e}", f.display())),
                file: f.display().to_string(),
            })
            .collect(),
    )
}

/// The fenced code blocks of a Markdown file (fences of three backticks, as every file here
/// writes them), and the lines of running text outside them.
fn blocks(doc: &Doc) -> (Vec<Block>, Vec<(usize, &str)>) {
    let (mut found, mut prose) = (Vec::new(), Vec::new());
    let mut open: Option<(usize, Vec<String>, Vec<&str>)> = None;
    let mut region: Option<String> = None;
    for (i, line) in doc.text.lines().enumerate() {
        let lineno = i + 1;
        let fence = line.trim_start().starts_with("```");
        match &mut open {
            None if fence => {
                let info = line.trim_start().trim_start_matches('`');
                open = Some((
                    lineno,
                    info.split_whitespace().map(String::from).collect(),
                    vec![],
                ));
            }
            None => {
                for name in ["clients", "headless"] {
                    // A marker alone on its line (a mention in running text is not one).
                    if line.trim() == format!("<!-- {name}:begin -->") {
                        region = Some(name.to_string());
                    } else if line.trim() == format!("<!-- {name}:end -->") {
                        region = None;
                    }
                }
                prose.push((lineno, line));
            }
            Some(_) if fence => {
                let (start, info, body) = open.take().expect("open block");
                let mut words = info.into_iter();
                found.push(Block {
                    file: doc.file.clone(),
                    line: start,
                    lang: words.next().unwrap_or_default(),
                    markers: words.collect(),
                    body: body.iter().map(|l| format!("{l}\n")).collect(),
                    region: region.clone(),
                });
            }
            Some((_, _, body)) => body.push(line),
        }
    }
    assert!(open.is_none(), "{}: a code block is never closed", doc.file);
    assert!(
        region.is_none(),
        "{}: <!-- {:?}:begin --> is never ended",
        doc.file,
        region
    );
    (found, prose)
}

fn all_blocks(docs: &[Doc]) -> Vec<Block> {
    docs.iter().flat_map(|d| blocks(d).0).collect()
}

fn whalebox(home: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(common::bin());
    cmd.args(args);
    common::isolate(&mut cmd, home);
    cmd
}

fn said(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A scratch directory holding a copy of policies/ (so a snippet's `policy =
/// "policies/dev.toml"` or `include = ["org.toml"]` resolves), a workspace and a HOME.
fn scratch() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    for dir in ["ws", "home", "policies"] {
        std::fs::create_dir_all(tmp.path().join(dir)).expect("mkdir");
    }
    for entry in std::fs::read_dir(repo().join("policies")).expect("policies/") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "toml") {
            let name = path.file_name().expect("name");
            std::fs::copy(&path, tmp.path().join("policies").join(name)).expect("copy policy");
            std::fs::copy(&path, tmp.path().join(name)).expect("copy policy");
        }
    }
    tmp
}

fn report(what: &str, checked: usize, failures: Vec<String>) {
    assert!(checked > 0, "no {what} found: the scan is broken");
    assert!(
        failures.is_empty(),
        "{} of {checked} {what} failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    eprintln!("tests/docs.rs: {checked} {what} checked");
}

#[test]
fn every_toml_block_says_what_it_is_and_profiles_and_policies_load() {
    let Some(docs) = docs() else { return };
    let tmp = scratch();
    let (ws, home) = (tmp.path().join("ws"), tmp.path().join("home"));
    let (mut checked, mut failures) = (0, Vec::new());
    for (n, block) in all_blocks(&docs).iter().enumerate() {
        if block.lang != "toml" {
            continue;
        }
        let kinds: Vec<&str> = ["profile", "policy", "client", "ignore"]
            .into_iter()
            .filter(|k| block.has(k))
            .collect();
        if kinds.len() != 1 {
            failures.push(format!(
                "{}: a toml block says which of profile, policy, client or ignore it is \
                 (```toml profile …), exactly one; it says {:?}",
                block.at(),
                block.markers
            ));
            continue;
        }
        checked += 1;
        let file = tmp.path().join(format!("snippet-{n}.toml"));
        let out = match kinds[0] {
            "profile" => {
                std::fs::write(&file, &block.body).expect("write snippet");
                whalebox(&home, &["profile", "check"])
                    .arg(&file)
                    .arg("--workspace")
                    .arg(&ws)
                    .output()
                    .expect("run whalebox")
            }
            "policy" => {
                let versioned = block.body.lines().any(|l| l.starts_with("version"));
                let text = if versioned {
                    block.body.clone()
                } else {
                    format!("version = 1\n{}", block.body)
                };
                std::fs::write(&file, text).expect("write snippet");
                whalebox(&home, &["policy", "test"])
                    .arg(&file)
                    .output()
                    .expect("run whalebox")
            }
            "client" => {
                if let Err(e) = block.body.parse::<toml::Table>() {
                    failures.push(format!("{}: not TOML: {e}", block.at()));
                }
                continue;
            }
            _ => continue,
        };
        if !out.status.success() {
            failures.push(format!(
                "{}: `whalebox {}` refuses this {} snippet (written to {}):\n{}",
                block.at(),
                if kinds[0] == "profile" {
                    "profile check"
                } else {
                    "policy test"
                },
                kinds[0],
                file.display(),
                said(&out)
            ));
        }
    }
    report("toml blocks", checked, failures);
}

#[test]
fn every_json_block_parses() {
    let Some(docs) = docs() else { return };
    let (mut checked, mut failures) = (0, Vec::new());
    for block in all_blocks(&docs) {
        if block.lang != "json" || block.has("ignore") {
            continue;
        }
        checked += 1;
        if let Err(e) = serde_json::from_str::<Value>(&block.body) {
            failures.push(format!(
                "{}: not JSON ({e}); mark an illustration `json ignore`",
                block.at()
            ));
        }
    }
    report("JSON blocks", checked, failures);
}

/// Every tool's input schema, with every group on (the mcp group lists its tools only
/// when a server is configured; `tools` starts none).
fn schemas(tmp: &Path) -> serde_json::Map<String, Value> {
    let profile = tmp.join("all-groups.toml");
    std::fs::write(
        &profile,
        "tools = [\"files\", \"search\", \"edit\", \"shell\", \"plan\", \"todo\", \"input\", \
         \"checkpoints\", \"web\", \"mcp\"]\n[mcp_servers.upstream]\ncommand = \"true\"\n",
    )
    .expect("write profile");
    let out = whalebox(&tmp.join("home"), &["tools", "--json", "--profile"])
        .arg(&profile)
        .arg("--workspace")
        .arg(tmp.join("ws"))
        .output()
        .expect("run whalebox tools");
    assert!(
        out.status.success(),
        "whalebox tools --json: {}",
        said(&out)
    );
    let specs: Vec<Value> = serde_json::from_slice(&out.stdout).expect("tools --json is JSON");
    specs
        .into_iter()
        .map(|s| {
            (
                s["name"].as_str().expect("name").to_string(),
                s["input_schema"].clone(),
            )
        })
        .collect()
}

/// `(where, tool, arguments)` of every tool call the documentation shows.
fn tool_calls(
    docs: &[Doc],
    tools: &serde_json::Map<String, Value>,
) -> Vec<(String, String, String)> {
    let call = regex::Regex::new(r"whalebox call ([A-Za-z_]+) --args '([^']*)'").expect("regex");
    let piped = regex::Regex::new(r"echo '([^']*)' \| whalebox call ([A-Za-z_]+) --args-file -")
        .expect("regex");
    let inline = regex::Regex::new(r"`([a-z_]+) (\{[^`]*\})`").expect("regex");
    let mut found = Vec::new();
    for doc in docs {
        let (blocks, prose) = blocks(doc);
        for block in blocks.iter().filter(|b| b.lang == "sh") {
            for (i, line) in block.body.lines().enumerate() {
                let at = format!("{}:{}", doc.file, block.line + 1 + i);
                for c in call.captures_iter(line) {
                    found.push((at.clone(), c[1].to_string(), c[2].to_string()));
                }
                for c in piped.captures_iter(line) {
                    found.push((at.clone(), c[2].to_string(), c[1].to_string()));
                }
            }
        }
        for (lineno, line) in prose {
            for c in inline.captures_iter(line) {
                if tools.contains_key(&c[1]) {
                    let at = format!("{}:{lineno}", doc.file);
                    found.push((at, c[1].to_string(), c[2].to_string()));
                }
            }
        }
    }
    found
}

#[test]
fn every_tool_call_example_fits_the_tools_input_schema() {
    let Some(docs) = docs() else { return };
    let tmp = scratch();
    let tools = schemas(tmp.path());
    let (mut checked, mut failures) = (0, Vec::new());
    for (at, tool, args) in tool_calls(&docs, &tools) {
        checked += 1;
        let Some(schema) = tools.get(&tool) else {
            failures.push(format!(
                "{at}: no tool `{tool}` (known: {:?})",
                tools.keys().collect::<Vec<_>>()
            ));
            continue;
        };
        let value: Value = match serde_json::from_str(&args) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!(
                    "{at}: the arguments of `{tool}` are not JSON ({e}): {args}"
                ));
                continue;
            }
        };
        let validator = jsonschema::validator_for(schema).expect("a tool's schema compiles");
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| e.to_string())
            .collect();
        if !errors.is_empty() {
            failures.push(format!("{at}: `{tool}` {args}: {}", errors.join("; ")));
        }
    }
    report("tool-call examples", checked, failures);
}

#[test]
fn client_snippets_are_the_tested_ones() {
    let Some(docs) = docs() else { return };
    let all = all_blocks(&docs);
    let tested: Vec<&Block> = all.iter().filter(|b| b.region.is_some()).collect();
    let (mut checked, mut failures) = (0, Vec::new());
    for block in &tested {
        if !block.has("client") {
            failures.push(format!(
                "{}: a block in the {} region is a client's configuration: mark it `{} client`",
                block.at(),
                block.region.as_deref().unwrap_or_default(),
                block.lang
            ));
        }
    }
    for block in all.iter().filter(|b| b.has("client") && b.region.is_none()) {
        checked += 1;
        let same_lang = || tested.iter().filter(|t| t.lang == block.lang);
        let copied = if block.lang == "sh" {
            block
                .body
                .lines()
                .filter(|l| !l.trim().is_empty())
                .all(|l| same_lang().any(|t| t.body.lines().any(|tl| tl == l)))
        } else {
            same_lang().any(|t| t.body == block.body)
        };
        if !copied {
            failures.push(format!(
                "{}: this `{} client` block is not a verbatim copy of one in \
                 docs/src/setup/clients.md or headless.md (between the begin/end markers), which \
                 tests/mcp/test_clients.py and tests/clients run:\n{}",
                block.at(),
                block.lang,
                block.body
            ));
        }
    }
    assert!(
        tested.len() >= 10,
        "the client chapters' marked regions hold {} blocks",
        tested.len()
    );
    report(
        "client snippets outside the client chapters",
        checked,
        failures,
    );
}

#[test]
fn runnable_blocks_run_and_every_call_in_them_is_ok() {
    let Some(docs) = docs() else { return };
    let bin_dir = Path::new(common::bin())
        .parent()
        .expect("bin dir")
        .to_path_buf();
    let (mut checked, mut failures) = (0, Vec::new());
    for block in all_blocks(&docs).iter().filter(|b| b.has("run")) {
        checked += 1;
        let tmp = scratch();
        let path = format!(
            "{}:{}",
            bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut bash = Command::new("bash");
        bash.args(["-euo", "pipefail", "-c", &block.body]);
        common::isolate(&mut bash, &tmp.path().join("home"));
        let out = bash
            .env("PATH", path)
            .env("TMPDIR", tmp.path())
            .current_dir(tmp.path())
            .output()
            .expect("run bash");
        if !out.status.success() {
            failures.push(format!("{}: the block fails:\n{}", block.at(), said(&out)));
            continue;
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        let envelopes: Vec<&str> = stdout.lines().filter(|l| l.starts_with('{')).collect();
        if envelopes.is_empty() {
            failures.push(format!(
                "{}: printed no envelope:\n{}",
                block.at(),
                said(&out)
            ));
        }
        for line in envelopes {
            let ok = serde_json::from_str::<Value>(line).is_ok_and(|v| v["ok"] == true);
            if !ok {
                failures.push(format!("{}: a call answered {line}", block.at()));
            }
        }
    }
    report("runnable blocks", checked, failures);
}
