"""Claude Code and Codex with whalebox as an MCP server over Streamable HTTP (`whalebox serve
--http`), started by the test on 127.0.0.1 with a tokens file, not by the client: each client
reaches it at `http://127.0.0.1:PORT/mcp` with a bearer token, as its own configuration says
(Claude Code: an `"type": "http"` entry with `headers`; Codex: `url` and
`bearer_token_env_var`), and a wrong token makes the client report the server as failed at
once instead of hanging. Claude Code speaks the stateless 2026-07-28 protocol (one request at a
time, the caller's state kept by the server per token); Codex opens a classic session
(`initialize` 2025-06-18, `Mcp-Session-Id`)."""

import json
import re
import time

TOKEN = "wb-test-token-0123456789abcdef"  # tokens are at least 16 characters
WRONG = "wb-test-token-not-the-right-one"
ENV_VAR = "WHALEBOX_TOKEN"
QUICK = 30.0  # seconds: a refused token must not keep a client waiting anywhere near this


def http_entry(name: str, url: str, token_var: str = ENV_VAR) -> dict:
    """The client's entry for whalebox over HTTP, the token taken from `token_var` in its
    environment (Claude Code expands `${VAR}` in an entry's headers)."""
    if name == "claude":
        return {"type": "http", "url": url, "headers": {"Authorization": f"Bearer ${{{token_var}}}"},
                "command": None, "args": None}
    return {"url": url, "bearer_token_env_var": token_var, "command": None, "args": None}


def result_text(name: str, result) -> str:
    """The tool's own text: Codex puts `Wall time: …\\nOutput:` before it."""
    text = result.text
    if name == "codex":
        assert text.startswith("Wall time: "), text
        text = text.split("Output:", 1)[1].lstrip("\n")
    return text


def stream_events(stdout: str) -> list[dict]:
    events = []
    for line in stdout.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            pass
    return events


def test_a_read_and_a_command_over_http(client, workspace, http_whalebox):
    name, run = client
    server = http_whalebox(workspace, tokens={"tester": TOKEN})
    script = [
        [{"tool": "read_file", "args": {"file_path": "src/lib.rs"}}],
        # A task that outlives its call: its wait is another request (for Claude Code
        # another stateless one), answered from the same caller's state.
        [{"tool": "shell_run", "args": {"command": "echo started; sleep 1; echo finished-now",
                                        "yield_time_ms": 200}}],
        lambda results: [{"tool": "shell_wait", "args": {
            "task_id": re.search(r"task (t[0-9a-f]+)", results[1].text).group(1),
            "timeout_ms": 20000}}],
        "Done.",
    ]
    t = run(workspace, script, server_entry=http_entry(name, server.url), env={ENV_VAR: TOKEN})
    assert t.returncode == 0, t.dump() + server.log
    assert t.stray_hosts == [], t.dump()
    assert [r.tool for r in t.tool_results] == ["read_file", "shell_run", "shell_wait"], t.dump()
    read, started, waited = (result_text(name, r) for r in t.tool_results)
    assert read.startswith("     1\tpub fn answer() -> u32 {\n     2\t    42\n"), t.dump()
    assert started.startswith("started\n") and "[still running · task t" in started, t.dump()
    assert waited.startswith("finished-now\n[exit 0 · "), t.dump()
    assert all(r.is_error in (None, False) for r in t.tool_results), t.dump()
    # whalebox ran the calls, for the token's name.
    assert 'call tool="shell_wait" code=ok' in server.log, server.log
    if name == "codex":
        assert "session opened principal=tester" in server.log, server.log


def test_claude_code_reports_a_refused_token_as_a_failed_server(claude, workspace, http_whalebox):
    server = http_whalebox(workspace, tokens={"tester": TOKEN})
    started = time.monotonic()
    t = claude(workspace, ["Done."], server_entry=http_entry("claude", server.url),
               env={ENV_VAR: WRONG}, timeout=QUICK * 2)
    took = time.monotonic() - started
    assert t.returncode == 0, t.dump()
    assert took < QUICK, f"{took:.1f} s"
    init = next(e for e in stream_events(t.stdout) if e.get("subtype") == "init")
    assert [s["status"] for s in init["mcp_servers"] if s["name"] == "whalebox"] == ["failed"], init
    names = [x.get("name") for x in t.model_requests[0].body["tools"]]
    assert not [n for n in names if n and n.startswith("mcp__whalebox")], names
    assert 'request refused: not a known token reason="invalid"' in server.log, server.log
    assert t.stray_hosts == [], t.dump()


def test_codex_reports_a_refused_token_as_a_failed_server(codex, workspace, http_whalebox):
    """With `required = true` `codex exec` stops at once, naming the server; without it the run
    goes on without whalebox's tools."""
    server = http_whalebox(workspace, tokens={"tester": TOKEN})
    entry = http_entry("codex", server.url)
    started = time.monotonic()
    t = codex(workspace, ["Done."], server_entry={**entry, "required": True},
              env={ENV_VAR: WRONG}, timeout=QUICK * 2)
    assert time.monotonic() - started < QUICK, t.dump()
    assert t.returncode == 1, t.dump()
    assert "required MCP servers failed to initialize: whalebox" in t.stderr, t.stderr
    assert "invalid_token" in t.stderr, t.stderr
    assert t.model_requests == [], t.dump()

    started = time.monotonic()
    t = codex(workspace, ["Done."], server_entry=entry, env={ENV_VAR: WRONG}, timeout=QUICK * 2)
    assert time.monotonic() - started < QUICK, t.dump()
    assert t.returncode == 0, t.dump()
    tools = t.model_requests[0].body["tools"]
    assert not [x for x in tools if x.get("name") == "mcp__whalebox"], t.dump()
    assert "invalid_token" in t.stderr, t.stderr
    assert t.stray_hosts == [], t.dump()
    assert server.log.count("request refused: not a known token") >= 2, server.log
