"""`whalebox serve --http`: MCP over Streamable HTTP, driven by the real Python `mcp`
client (both lifecycles) and by hand-written requests where a status code, a header or a
half-sent request is the point: bearer tokens and OAuth JWTs, sessions bound to their
caller and kept apart, `Host` and `Origin`, the request limits, `max_sessions`, TLS,
/metrics and /readyz, the graceful stop, and a client that goes away mid-call.

Every server listens on 127.0.0.1 port 0 (the bound URL is read from its log); nothing
here sends a packet off this machine. One file, over 600 lines: its tests share the
server harness, the raw-HTTP helpers and the keys, and together they are the HTTP
front door's contract.

Known server bugs are tests marked `xfail(strict=True, raises=KnownBug)` whose reason
starts with "BUG": each raises KnownBug only on seeing exactly the bug it describes (any
other failure is a real failure). When the server is fixed the test passes, strict xfail
reports that as a failure, and the marker should go.
"""

import asyncio
import base64
import concurrent.futures
import contextlib
import datetime
import hashlib
import hmac
import ipaddress
import json
import os
import pathlib
import re
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time

import httpx2
import jwt
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from test_mcp import MODES, TOOLS, envelope
from test_shell import kernel_landlock_abi, pids_running

pytestmark = pytest.mark.anyio

LISTENING = re.compile(r"listening on (https?://\S+/mcp)")
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
CLASSIC = "2025-11-25"
MODERN = "2026-07-28"
STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "test_http", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
NOT_FOUND_BODY = "Not Found: Session not found"


class KnownBug(AssertionError):
    """The failure a `xfail(raises=KnownBug)` test expects: the bug it names, seen."""


def bug(reason: str):
    return pytest.mark.xfail(strict=True, raises=KnownBug, reason="BUG: " + reason)


# ---------------------------------------------------------------------------------------
# The server


class Served:
    """One `whalebox serve --http` process; its stderr is collected line by line."""

    def __init__(self, binary, workspace, home, profile, addr, tmpdir):
        self.proc = subprocess.Popen(
            [binary, "serve", "--http", addr, "--profile", str(profile), "--workspace", str(workspace)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={
                "PATH": os.environ.get("PATH", ""),
                "HOME": str(home),
                # The server's private directory goes under TMPDIR (short: its sockets
                # live there), which the fixture removes: the server leaves it behind
                # (test_the_private_directory_goes_with_the_server).
                "TMPDIR": str(tmpdir),
                "RUST_LOG": "whalebox=info,whalebox_http=info,rmcp=warn",
            },
        )
        self.lines: list[str] = []
        self.url: str | None = None
        self._listening = threading.Event()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.proc.stderr:
            self.lines.append(line)
            m = LISTENING.search(line)
            if m and self.url is None:
                self.url = m.group(1)
                self._listening.set()
        self._listening.set()

    def wait_listening(self, timeout=60):
        self._listening.wait(timeout)
        if self.url is None:
            raise AssertionError(f"the server did not listen (exit {self.proc.poll()}):\n{self.log}")
        return self

    @property
    def log(self) -> str:
        return "".join(self.lines)

    @property
    def base(self) -> str:
        return self.url[: -len("/mcp")]

    @property
    def port(self) -> int:
        return int(self.base.rsplit(":", 1)[1])

    def metrics(self) -> str:
        with plain_http() as h:
            return h.get(self.base + "/metrics").text

    def metric(self, sample: str) -> float | None:
        return metric(self.metrics(), sample)

    def session_threads(self) -> int:
        """Threads of whalebox's own (a session's exec-decision server has one), not the
        async runtime's (whose idle blocking threads linger 10 s)."""
        count = 0
        for task in os.listdir(f"/proc/{self.proc.pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{self.proc.pid}/task/{task}/comm") as f:
                count += f.read().startswith("whalebox-")
        return count

    def wait_for_log(self, needle: str, timeout=10.0):
        deadline = time.monotonic() + timeout
        while needle not in self.log:
            if time.monotonic() > deadline:
                raise AssertionError(f"{needle!r} never logged:\n{self.log}")
            time.sleep(0.02)


@pytest.fixture
def serve(whalebox_bin, workspace, tmp_path):
    """serve(profile_text, addr=..., wait=True): a server with that profile; every one
    started is killed (if still running) when the test ends."""
    started: list[Served] = []
    tmpdir = tempfile.mkdtemp(prefix="wbh-", dir="/tmp")

    def start(profile_text: str = "", addr: str = "127.0.0.1:0", wait: bool = True) -> Served:
        profile = tmp_path / f"profile{len(started)}.toml"
        profile.write_text(profile_text)
        served = Served(whalebox_bin, workspace, tmp_path, profile, addr, tmpdir)
        started.append(served)
        return served.wait_listening() if wait else served

    yield start
    for n, s in enumerate(started):
        if s.proc.poll() is None:
            s.proc.kill()
        s.proc.wait(timeout=10)
        # Shown by pytest only when the test failed.
        print(f"--- server {n} (exit {s.proc.returncode}) ---\n{s.log}")
    shutil.rmtree(tmpdir, ignore_errors=True)


@pytest.fixture
def secret_dir(tmp_path) -> pathlib.Path:
    """A directory outside the workspace for tokens, keys and certificates."""
    d = tmp_path / "secrets"
    d.mkdir()
    return d


def profile(http: str = "", *, readable: pathlib.Path | None = None, extra: str = "") -> str:
    """A profile with these `[http]` lines. `readable` (the secrets' directory) is only
    documentation: the server alone reads its secrets, wherever they are, and no
    `[landlock]` list may name them (commands could read them too)."""
    text = "[http]\n" + "\n".join(l.strip() for l in http.strip().splitlines()) + "\n"
    return text + extra


def write_tokens(path: pathlib.Path, **tokens: str) -> pathlib.Path:
    path.write_text("# test tokens\n" + "".join(f"{name}:{token}\n" for name, token in tokens.items()))
    return path


def new_token(name: str) -> str:
    return f"{name}-{secrets.token_urlsafe(18)}"


# ---------------------------------------------------------------------------------------
# Raw HTTP


def plain_http(*, reuse: bool = True, **kwargs) -> httpx2.Client:
    """trust_env=False: no proxy from the environment, ever (everything is on 127.0.0.1).
    reuse=False: a new connection per request, for tests whose requests are refused
    before their body is read (test_a_refused_request_says_connection_close)."""
    if not reuse:
        kwargs["limits"] = httpx2.Limits(max_keepalive_connections=0)
    return httpx2.Client(trust_env=False, timeout=kwargs.pop("timeout", 15), **kwargs)


def metric(text: str, sample: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(sample + " "):
            return float(line.rsplit(" ", 1)[1])
    return None


def init_message(version: str = CLASSIC, id: int = 1) -> dict:
    return {"jsonrpc": "2.0", "id": id, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {},
                       "clientInfo": {"name": "test_http", "version": "1"}}}


def messages(response) -> list[dict]:
    """The JSON-RPC messages of a response: its JSON body, or its SSE `data:` lines."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return [response.json()]
    return [json.loads(line[len("data:"):]) for line in response.text.splitlines()
            if line.startswith("data:") and line[len("data:"):].strip()]


def answer(response, id) -> dict:
    found = [m for m in messages(response) if m.get("id") == id]
    assert len(found) == 1, f"no single answer to {id}: {response.status_code} {response.text!r}"
    return found[0]


def bearer(token: str) -> dict:
    return {"authorization": f"Bearer {token}"}


class Session:
    """A classic session opened by hand (initialize, then notifications/initialized)."""

    def __init__(self, http: httpx2.Client, url: str, headers: dict | None = None, version=CLASSIC):
        self.http, self.url, self.auth = http, url, headers or {}
        r = http.post(url, headers={**ACCEPT, **self.auth}, json=init_message(version))
        assert r.status_code == 200, (r.status_code, r.text)
        self.id = r.headers["mcp-session-id"]
        self.init = answer(r, 1)
        self.next_id = 10
        r = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert r.status_code == 202, (r.status_code, r.text)

    def headers(self, auth: dict | None = None) -> dict:
        return {**ACCEPT, **(self.auth if auth is None else auth),
                "mcp-session-id": self.id, "mcp-protocol-version": CLASSIC}

    def post(self, message: dict, auth: dict | None = None):
        return self.http.post(self.url, headers=self.headers(auth), json=message)

    def call(self, tool: str, arguments: dict, auth: dict | None = None):
        """(the HTTP response, the envelope or None)."""
        self.next_id += 1
        r = self.post({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                       "params": {"name": tool, "arguments": arguments}}, auth)
        if r.status_code != 200:
            return r, None
        return r, answer(r, self.next_id)["result"]["_meta"]["whalebox/envelope"]

    def delete(self, auth: dict | None = None):
        return self.http.delete(self.url, headers=self.headers(auth))


def stateless(http, url, method, params, *, name=None, headers=None, id=1, meta=STATELESS_META):
    """A 2026-07-28 request: the version, method and name in headers and in `_meta`."""
    h = {**ACCEPT, "mcp-protocol-version": MODERN, "mcp-method": method}
    if name is not None:
        h["mcp-name"] = name
    h.update(headers or {})
    h = {k: v for k, v in h.items() if v is not None}
    body = {"jsonrpc": "2.0", "id": id, "method": method, "params": dict(params)}
    if meta is not None:
        body["params"]["_meta"] = meta
    return http.post(url, headers=h, json=body)


# ---------------------------------------------------------------------------------------
# The real client


@contextlib.asynccontextmanager
async def mcp_client(url: str, mode: str, *, headers: dict | None = None, verify=True, seen: list | None = None):
    """The real `mcp` client over Streamable HTTP; `seen` collects every HTTP response."""
    hooks = {}
    if seen is not None:
        async def record(response):
            seen.append(response)
        hooks["response"] = [record]
    async with httpx2.AsyncClient(headers=headers or {}, trust_env=False, verify=verify,
                                  timeout=httpx2.Timeout(30, read=120), event_hooks=hooks) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode,
                          read_timeout_seconds=60) as c:
            yield c


async def call(c, tool, args):
    return envelope(await c.call_tool(tool, args))


def gated(srv: Served) -> bool:
    with plain_http() as h:
        return h.get(srv.base + "/readyz").json()["detail"]["exec_boundary"].get("gated") is True


def unique_sleep() -> str:
    """A command line no other test runs, to find its process in /proc."""
    return f"sleep {3000 + secrets.randbelow(10**6) / 1000:.3f}"


def eventually(predicate, message: str, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, message
        time.sleep(0.05)


def wait_running(cmdline: str, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not pids_running(cmdline):
        assert time.monotonic() < deadline, f"{cmdline!r} never ran"
        time.sleep(0.05)


def wait_gone(cmdline: str, timeout=5.0) -> bool:
    deadline = time.monotonic() + timeout
    while pids_running(cmdline):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


# ---------------------------------------------------------------------------------------
# 1. The real client, both lifecycles


@pytest.mark.parametrize("mode", MODES)
async def test_the_real_client_with_a_bearer_token(serve, secret_dir, mode):
    token = new_token("alice")
    tokens = write_tokens(secret_dir / "tokens", alice=token)
    srv = serve(profile(f'tokens_file = "{tokens}"', readable=secret_dir))
    seen = []
    async with mcp_client(srv.url, mode, headers=bearer(token), seen=seen) as c:
        assert c.protocol_version == (CLASSIC if mode == "legacy" else MODERN)
        assert {t.name for t in (await c.list_tools()).tools} == TOOLS
        env = await call(c, "read_file", {"file_path": "README.md"})
        assert env["ok"] and env["text"] == "     1\t# demo\n     2\tSecond line\n", env
        if not gated(srv):
            pytest.skip("SKIPPED: no exec boundary here (/readyz: exec_boundary not gated), "
                        "so the default policy's `ask` for su is not enforced")
        env = await call(c, "shell_run", {"command": "su -"})
        assert env["code"] == "approval_needed", env
        assert env["data"]["denials"][0]["argv"] == ["su", "-"]
        assert "runs as another user" in env["text"]
        # The caller's credential is not handed to the commands it runs.
        env = await call(c, "shell_run", {"command": "env"})
        assert env["ok"] and token not in env["text"]
    statuses = {(r.request.method, r.status_code) for r in seen}
    assert all(200 <= status < 300 for _, status in statuses), statuses
    session_ids = {r.headers.get("mcp-session-id") for r in seen} - {None}
    if mode == "legacy":
        assert len(session_ids) == 1, "one classic session"
        assert ("DELETE", 202) in statuses, "the client ends its session"
    else:
        assert session_ids == set(), "the 2026-07-28 lifecycle has no session"
    assert srv.metric('whalebox_tool_calls_total{tool="read_file",code="ok"}') == 1
    assert srv.metric("whalebox_sessions") == 0
    assert token not in srv.log, "a token never reaches the log"


def test_stateless_requests_by_hand(serve, workspace):
    """2026-07-28 by hand, as rmcp requires it: MCP-Protocol-Version, Mcp-Method and
    Mcp-Name headers agreeing with the body, and protocolVersion, clientInfo and
    clientCapabilities in `_meta`. A header that contradicts the body is 400
    (-32020, HEADER_MISMATCH) and nothing runs."""
    srv = serve()
    with plain_http() as h:
        r = stateless(h, srv.url, "tools/list", {})
        assert r.status_code == 200, r.text
        assert "mcp-session-id" not in r.headers
        assert {t["name"] for t in answer(r, 1)["result"]["tools"]} == TOOLS

        r = stateless(h, srv.url, "tools/call", {"name": "read_file", "arguments": {"file_path": "README.md"}},
                      name="read_file", id=2)
        assert r.status_code == 200, r.text
        assert "mcp-session-id" not in r.headers
        env = answer(r, 2)["result"]["_meta"]["whalebox/envelope"]
        assert env["ok"] and env["text"].startswith("     1\t# demo\n")

        write = {"name": "write", "arguments": {"file_path": "smuggled.txt", "content": "x"}}
        for headers, why in [
            ({"mcp-method": "tools/list"}, "Mcp-Method header `tools/list` does not match body method `tools/call`"),
            ({"mcp-name": "read_file"}, "Mcp-Name header `read_file` does not match body value `write`"),
            ({"mcp-method": None}, "missing required Mcp-Method header"),
        ]:
            r = stateless(h, srv.url, "tools/call", write, name="write", headers=headers, id=3)
            assert r.status_code == 400, (headers, r.status_code, r.text)
            error = r.json()["error"]
            assert error["code"] == -32020 and error["message"] == why, error
            assert "mcp-session-id" not in r.headers
        # The header names 2026-07-28 but `_meta` lacks what that revision requires.
        r = stateless(h, srv.url, "tools/call", write, name="write", meta=None, id=4)
        assert r.status_code == 400, r.text
        assert r.json()["error"]["code"] == -32602
        assert not (workspace / "smuggled.txt").exists(), "a refused request runs nothing"
    text = srv.metrics()
    assert metric(text, 'whalebox_tool_calls_total{tool="read_file",code="ok"}') == 1
    assert 'tool="write"' not in text
    assert metric(text, "whalebox_sessions") == 0, "stateless requests open no session"


# ---------------------------------------------------------------------------------------
# 2. Sessions are separate


async def test_classic_sessions_are_separate(serve):
    srv = serve()
    sleep = unique_sleep()
    async with mcp_client(srv.url, "legacy") as one, mcp_client(srv.url, "legacy") as two:
        await one.list_tools()
        await two.list_tools()
        await call(one, "todo_add", {"content": "only in one"})
        assert (await call(two, "todo_list", {}))["data"]["todos"] == []
        await call(one, "update_plan", {"plan": [{"step": "one's", "status": "pending"}]})
        plan = json.loads((await two.read_resource("whalebox://session/plan")).contents[0].text)
        assert plan["plan"] is None, plan

        env = await call(one, "shell_run", {"command": sleep, "background": True})
        task = env["data"]["task_id"]
        assert env["data"]["status"] == "running", env
        wait_running(sleep)
        for tool, args in [("shell_wait", {"task_id": task, "timeout_ms": 100}),
                           ("shell_cancel", {"task_id": task}),
                           ("write_stdin", {"task_id": task, "input": "x"})]:
            env = await call(two, tool, args)
            assert env["code"] == "task_not_found", (tool, env)
            assert env["data"]["tasks"] == [], "another session's tasks are not listed"
        assert pids_running(sleep), "the other session could not stop it"

        tmp_one = (await call(one, "shell_run", {"command": "echo $TMPDIR"}))["text"].splitlines()[0]
        tmp_two = (await call(two, "shell_run", {"command": "echo $TMPDIR"}))["text"].splitlines()[0]
        assert tmp_one != tmp_two and os.path.isdir(tmp_one) and os.path.isdir(tmp_two)
        assert not tmp_one.startswith(tmp_two + "/") and not tmp_two.startswith(tmp_one + "/")
        assert srv.metric("whalebox_sessions") == 2
    # Both clients ended their sessions (DELETE): their tasks and private TMPDIRs go too.
    assert wait_gone(sleep), "the session's task outlived it"
    eventually(lambda: not os.path.exists(tmp_one) and not os.path.exists(tmp_two),
               "the sessions' TMPDIRs outlived them")
    assert srv.metric("whalebox_sessions") == 0


async def test_stateless_state_is_kept_per_caller(serve, secret_dir):
    """2026-07-28 has no session: what one call leaves for the next (todos, tasks) is
    kept per caller (one Env per principal), so two callers are apart and two clients of
    the same caller share it."""
    alice, bob = new_token("alice"), new_token("bob")
    tokens = write_tokens(secret_dir / "tokens", alice=alice, bob=bob)
    srv = serve(profile(f'tokens_file = "{tokens}"', readable=secret_dir))
    sleep = unique_sleep()
    async with mcp_client(srv.url, MODERN, headers=bearer(alice)) as a, \
            mcp_client(srv.url, MODERN, headers=bearer(bob)) as b, \
            mcp_client(srv.url, MODERN, headers=bearer(alice)) as a2:
        for c in (a, b, a2):
            await c.list_tools()
        await call(a, "todo_add", {"content": "alice's"})
        assert (await call(b, "todo_list", {}))["data"]["todos"] == []
        assert [t["content"] for t in (await call(a2, "todo_list", {}))["data"]["todos"]] == ["alice's"]
        task = (await call(a, "shell_run", {"command": sleep, "background": True}))["data"]["task_id"]
        wait_running(sleep)
        assert (await call(b, "shell_cancel", {"task_id": task}))["code"] == "task_not_found"
        assert pids_running(sleep)
        assert (await call(a2, "shell_cancel", {"task_id": task}))["ok"]
    assert wait_gone(sleep)
    assert srv.metric("whalebox_sessions") == 0


# ---------------------------------------------------------------------------------------
# 3. Bearer tokens


def test_bearer_tokens(serve, secret_dir):
    alice, carol, wrong = new_token("alice"), new_token("carol"), new_token("mallory")
    # Kubernetes mounts a Secret as a symlink to a directory it swaps atomically.
    (secret_dir / "..v1").mkdir()
    write_tokens(secret_dir / "..v1" / "tokens", alice=alice)
    os.symlink("..v1", secret_dir / "..data")
    os.symlink("..data/tokens", secret_dir / "tokens")
    srv = serve(profile(f'tokens_file = "{secret_dir / "tokens"}"\ntoken_header = "X-Whalebox-Token"',
                        readable=secret_dir))
    with plain_http(reuse=False) as h:
        def initialize(headers=None, url=srv.url):
            return h.post(url, headers={**ACCEPT, **(headers or {})}, json=init_message())

        refused = [
            (None, 'Bearer realm="whalebox"'),
            (bearer(wrong), 'Bearer realm="whalebox", error="invalid_token"'),
            ({"authorization": f"Basic {alice}"}, 'Bearer realm="whalebox"'),
            ({"authorization": f"Bearer {alice[:-1]}"}, 'Bearer realm="whalebox", error="invalid_token"'),
        ]
        for headers, challenge in refused:
            r = initialize(headers)
            assert r.status_code == 401, (headers, r.status_code)
            assert r.headers["www-authenticate"] == challenge, (headers, r.headers)
            assert "mcp-session-id" not in r.headers
            assert alice not in r.text and wrong not in r.text
        # A token in the query string is never read.
        for query in ("access_token", "token"):
            r = initialize(url=f"{srv.url}?{query}={alice}")
            assert r.status_code == 401 and r.headers["www-authenticate"] == 'Bearer realm="whalebox"'
        # GET and DELETE are guarded too.
        assert h.get(srv.url, headers={"accept": "text/event-stream"}).status_code == 401
        assert h.delete(srv.url, headers={"mcp-session-id": "x"}).status_code == 401

        r = initialize(bearer(alice))
        assert r.status_code == 200 and r.headers["mcp-session-id"]
        r = initialize({"x-whalebox-token": alice})
        assert r.status_code == 200, "token_header carries the token too"
        assert srv.metric("whalebox_sessions") == 2

        # Rotation, as Kubernetes does it: a new directory, the link swapped.
        (secret_dir / "..v2").mkdir()
        write_tokens(secret_dir / "..v2" / "tokens", carol=carol)
        os.symlink("..v2", secret_dir / "..data.tmp")
        os.replace(secret_dir / "..data.tmp", secret_dir / "..data")
        assert initialize(bearer(carol)).status_code == 200, "the new token works without a restart"
        assert initialize(bearer(alice)).status_code == 401, "the rotated-out token no longer does"
        # A file rewritten in place, and then a broken one: the tokens read last stay.
        path = secret_dir / "..v2" / "tokens"
        write_tokens(path, alice=alice)
        later = time.time() + 2
        os.utime(path, (later, later))
        assert initialize(bearer(alice)).status_code == 200
        path.write_text("no colon here\n")
        os.utime(path, (later + 2, later + 2))
        assert initialize(bearer(alice)).status_code == 200
        assert initialize(bearer(carol)).status_code == 401
    text = srv.metrics()
    assert metric(text, 'whalebox_auth_refusals_total{reason="missing"}') == 6
    assert metric(text, 'whalebox_auth_refusals_total{reason="invalid"}') == 4
    assert metric(text, "whalebox_sessions") == 5
    for secret in (alice, carol, wrong):
        assert secret not in srv.log
    assert "tokens file read again" in srv.log


@pytest.mark.parametrize("addr", ["0.0.0.0:0", "[::]:0"])
def test_a_public_address_needs_authentication(serve, addr):
    srv = serve("", addr=addr, wait=False)
    assert srv.proc.wait(timeout=60) == 2
    srv._listening.wait(5)
    assert f"refusing to listen on {addr} without authentication" in srv.log, srv.log
    assert "tokens_file" in srv.log and "[http.oauth]" in srv.log
    assert srv.url is None, "it never listened"


def test_a_tokens_file_outside_the_workspace_is_read_by_the_server_only(serve, whalebox_bin, secret_dir):
    """The Kubernetes manifests' tokens file is /run/secrets/whalebox/tokens: outside the
    workspace and every `[landlock]` list. The server reads it (and again when rotated)
    inside its fences; the agent's commands cannot. (Found failing on 2026-12-05: the
    server entered its Landlock layer before reading the file and exited 2, "tokens file
    …: Permission denied"; the only ways round it let commands read every token.)"""
    if kernel_landlock_abi(whalebox_bin) == 0:
        pytest.skip("SKIPPED: this kernel has no Landlock: nothing keeps commands from the tokens")
    token = new_token("alice")
    tokens = write_tokens(secret_dir / "tokens", alice=token)
    srv = serve(profile(f'tokens_file = "{tokens}"'), wait=False)
    srv._listening.wait(60)
    assert srv.url is not None, f"the server did not start (exit {srv.proc.wait(timeout=10)}):\n{srv.log}"
    with plain_http() as h:
        s = Session(h, srv.url, bearer(token))
        _, env = s.call("shell_run", {"command": f"cat {tokens}; ls {secret_dir}"})
        assert token not in env["text"], "the agent's commands can read the server's tokens"
        assert "Permission denied" in env["text"], env["text"]
        _, env = s.call("read_file", {"file_path": str(tokens)})
        assert env["code"] == "path_denied", env
        # Rotated: read again, inside the fences.
        rotated = new_token("alice")
        write_tokens(tokens, alice=rotated)
        later = time.time() + 2
        os.utime(tokens, (later, later))
        r = h.post(srv.url, headers={**ACCEPT, **bearer(rotated)}, json=init_message())
        assert r.status_code == 200, r.text


# ---------------------------------------------------------------------------------------
# 4. A session belongs to its caller


def test_a_session_belongs_to_its_caller(serve, secret_dir):
    alice, bob = new_token("alice"), new_token("bob")
    tokens = write_tokens(secret_dir / "tokens", alice=alice, bob=bob)
    srv = serve(profile(f'tokens_file = "{tokens}"', readable=secret_dir))
    sleep = unique_sleep()
    with plain_http() as h:
        s = Session(h, srv.url, bearer(alice))
        _, env = s.call("todo_add", {"content": "alice's"})
        assert env["ok"]
        _, env = s.call("shell_run", {"command": sleep, "background": True})
        assert env["data"]["status"] == "running"
        wait_running(sleep)

        # Bob presenting Alice's id hears what he would of an id that never existed.
        unknown = h.post(srv.url, headers={**s.headers(bearer(bob)), "mcp-session-id": "no-such-session"},
                         json={"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
        assert unknown.status_code == 404 and unknown.text == NOT_FOUND_BODY
        r, _ = s.call("todo_list", {}, auth=bearer(bob))
        assert (r.status_code, r.text) == (404, NOT_FOUND_BODY)
        r = s.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, auth=bearer(bob))
        assert (r.status_code, r.text) == (404, NOT_FOUND_BODY)
        r = h.get(srv.url, headers={**s.headers(bearer(bob)), "accept": "text/event-stream"})
        assert (r.status_code, r.text) == (404, NOT_FOUND_BODY)
        r = s.delete(auth=bearer(bob))
        assert (r.status_code, r.text) == (404, NOT_FOUND_BODY)
        assert "alice" not in r.text

        # Alice's session is untouched.
        _, env = s.call("todo_list", {})
        assert [t["content"] for t in env["data"]["todos"]] == ["alice's"]
        assert pids_running(sleep)

        r = s.delete()
        assert r.status_code == 202, (r.status_code, r.text)
        assert wait_gone(sleep), "DELETE ends the session's tasks"
        r, _ = s.call("todo_list", {})
        assert (r.status_code, r.text) == (404, NOT_FOUND_BODY)
    assert srv.metric("whalebox_sessions") == 0
    assert "refused another caller's session id" in srv.log


def test_delete_during_a_call_ends_it_and_its_command(serve):
    srv = serve()
    sleep = unique_sleep()
    with plain_http(timeout=30) as h:
        s = Session(h, srv.url)
        results = []

        def long_call():
            with contextlib.suppress(httpx2.TransportError):
                r = s.post({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
                    "name": "shell_run", "arguments": {"command": sleep, "yield_time_ms": 30000}}})
                results.append((r.status_code, [m for m in messages(r) if m.get("id") == 5]))

        caller = threading.Thread(target=long_call)
        caller.start()
        wait_running(sleep)
        deleted = time.monotonic()
        with plain_http() as other:
            assert other.delete(srv.url, headers=s.headers()).status_code == 202
        assert wait_gone(sleep, 3), "DELETE left the call's command running"
        caller.join(timeout=10)
        assert not caller.is_alive(), "the call's stream outlived its session"
        assert time.monotonic() - deleted < 5
        # The call's event stream ends with its session, without an answer.
        assert results == [(200, [])], results
    assert srv.metric("whalebox_tool_calls_in_flight") == 0
    assert srv.metric("whalebox_sessions") == 0
    assert srv.proc.poll() is None


def two_callers(serve, secret_dir, http=""):
    alice, bob = new_token("alice"), new_token("bob")
    tokens = write_tokens(secret_dir / "tokens", alice=alice, bob=bob)
    srv = serve(profile(f'tokens_file = "{tokens}"\n{http}', readable=secret_dir))
    return srv, bearer(alice), bearer(bob)


def test_a_session_opened_by_an_initialize_naming_2026_07_28_belongs_to_its_caller(serve, secret_dir):
    srv, alice, bob = two_callers(serve, secret_dir)
    with plain_http() as h:
        s = Session(h, srv.url, alice, version=MODERN)
        assert s.init["result"]["protocolVersion"] == CLASSIC, "the handshake negotiates down"
        _, env = s.call("todo_add", {"content": "alice's secret"})
        assert env["ok"]
        r, env = s.call("todo_list", {}, auth=bob)
        if r.status_code == 200 and "alice's secret" in env["text"]:
            raise KnownBug(f"bob read alice's session: {env['text']!r}")
        assert (r.status_code, r.text) == (404, NOT_FOUND_BODY)


def test_an_initialize_naming_2026_07_28_counts_under_max_sessions(serve, secret_dir):
    srv, alice, _ = two_callers(serve, secret_dir, "max_sessions = 1")
    with plain_http() as h:
        Session(h, srv.url, alice)
        opened = [h.post(srv.url, headers={**ACCEPT, **alice}, json=init_message(version))
                  for version in (CLASSIC, MODERN, MODERN, "2099-01-01")]
        codes = [r.status_code for r in opened]
        if codes[0] == 503 and 200 in codes[1:] and all("mcp-session-id" in r.headers for r in opened[1:]):
            raise KnownBug(f"{codes}; whalebox_sessions = {srv.metric('whalebox_sessions')}")
        assert codes == [503, 503, 503, 503]


# ---------------------------------------------------------------------------------------
# 5. Host and Origin


def test_host_and_origin(serve):
    srv = serve(profile('allowed_origins = ["http://app.test:8080"]'))
    with plain_http() as h:
        def initialize(**headers):
            return h.post(srv.url, headers={**ACCEPT, **headers}, json=init_message())

        for host in ("evil.example", f"evil.example:{srv.port}", f"127.0.0.1.evil.example:{srv.port}"):
            r = initialize(host=host)
            assert (r.status_code, r.text) == (403, "Forbidden: Host header is not allowed"), host
            assert "mcp-session-id" not in r.headers
        for origin in ("http://evil.test", "http://app.test:8081", "https://app.test:8080", "null"):
            r = initialize(origin=origin)
            assert (r.status_code, r.text) == (403, "Forbidden: Origin header is not allowed"), origin
            assert "mcp-session-id" not in r.headers
        assert initialize(host=f"localhost:{srv.port}").status_code == 200
        assert initialize(origin="http://app.test:8080").status_code == 200
        assert initialize().status_code == 200, "non-browser clients send no Origin"
    assert srv.metric("whalebox_sessions") == 3

    # Without allowed_origins the Origin is not checked (as documented: "once the list is
    # set"); the Host still is.
    srv = serve(profile(""))
    with plain_http() as h:
        assert h.post(srv.url, headers={**ACCEPT, "origin": "http://evil.test"},
                      json=init_message()).status_code == 200
        assert h.post(srv.url, headers={**ACCEPT, "host": "evil.example"},
                      json=init_message()).status_code == 403


# ---------------------------------------------------------------------------------------
# 6. Request limits


def raw_connect(srv: Served) -> socket.socket:
    return socket.create_connection(("127.0.0.1", srv.port), timeout=10)


def slowloris(srv: Served) -> float:
    """Headers one line every 0.3 s, never finished: seconds until the server hangs up."""
    start = time.monotonic()
    with raw_connect(srv) as sk:
        sk.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        sk.settimeout(0.3)
        while time.monotonic() - start < 15:
            try:
                sk.sendall(b"X-Slow: 1\r\n")
                if sk.recv(4096) == b"":
                    break
            except socket.timeout:
                continue
            except OSError:
                break
    return time.monotonic() - start


def unfinished_body(srv: Served, chunked: bool) -> tuple[float, bytes]:
    start = time.monotonic()
    with raw_connect(srv) as sk:
        framing = b"Transfer-Encoding: chunked\r\n\r\n6\r\n{\"json\r\n" if chunked else \
            b"Content-Length: 500\r\n\r\n{\"jsonrpc\""
        sk.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\n"
                   b"Content-Type: application/json\r\n" + framing)
        got = b""
        while b"\r\n\r\n" not in got:
            chunk = sk.recv(4096)
            if not chunk:
                break
            got += chunk
    return time.monotonic() - start, got


def test_request_limits(serve):
    srv = serve(profile("max_body_bytes = 2048\nrequest_timeout_s = 2"))
    with plain_http(reuse=False) as h:
        big = json.dumps({**init_message(), "padding": "x" * 5000})
        r = h.post(srv.url, headers=ACCEPT, content=big)
        assert (r.status_code, r.text) == (413, "the body is over 2048 bytes\n")
        assert "mcp-session-id" not in r.headers

        def chunks():
            for _ in range(10):
                yield b"x" * 512
        r = h.post(srv.url, headers=ACCEPT, content=chunks())
        assert r.status_code == 413, "a chunked body is counted as it comes"

        # A slow client: headers dripping, a body that never ends (both framings), at once.
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            loris = pool.submit(slowloris, srv)
            sized = pool.submit(unfinished_body, srv, False)
            chunked = pool.submit(unfinished_body, srv, True)
            # Meanwhile the server serves others.
            assert h.get(srv.base + "/healthz").status_code == 200
            took = loris.result(timeout=30)
            assert 1.5 <= took <= 5, f"slow headers were cut after {took:.1f} s, not about 2"
            for future in (sized, chunked):
                took, got = future.result(timeout=30)
                assert got.startswith(b"HTTP/1.1 408 "), got
                assert got.endswith(b"\r\n\r\n") or b"the body did not arrive in time" in got
                assert 1.5 <= took <= 5, took
        assert h.get(srv.base + "/healthz").status_code == 200
    text = srv.metrics()
    assert metric(text, 'whalebox_http_requests_total{route="/mcp",status="413"}') == 2
    assert metric(text, 'whalebox_http_requests_total{route="/mcp",status="408"}') == 2
    assert metric(text, "whalebox_sessions") == 0


# ---------------------------------------------------------------------------------------
# 7. max_sessions


async def initialize_many(url: str, n: int, parallel: int = 100):
    async with httpx2.AsyncClient(trust_env=False, timeout=60,
                                  limits=httpx2.Limits(max_connections=parallel)) as h:
        return await asyncio.gather(*[h.post(url, headers=ACCEPT, json=init_message()) for _ in range(n)])


async def test_max_sessions(serve):
    srv = serve(profile("max_sessions = 5"))
    answers = await initialize_many(srv.url, 50, parallel=50)
    ok = [r for r in answers if r.status_code == 200]
    busy = [r for r in answers if r.status_code == 503]
    assert (len(ok), len(busy)) == (5, 45), sorted(r.status_code for r in answers)
    assert len({r.headers["mcp-session-id"] for r in ok}) == 5
    for r in busy:
        assert r.headers["retry-after"] == "5"
        assert "mcp-session-id" not in r.headers
        assert "max_sessions" in r.text
    text = srv.metrics()
    assert metric(text, "whalebox_sessions") == 5
    assert metric(text, "whalebox_sessions_refused_total") == 45
    with plain_http() as h:
        assert h.post(srv.url, headers=ACCEPT, json=init_message()).status_code == 503
        r = h.delete(srv.url, headers={**ACCEPT, "mcp-session-id": ok[0].headers["mcp-session-id"]})
        assert r.status_code == 202
        deadline = time.monotonic() + 3
        while (r := h.post(srv.url, headers=ACCEPT, json=init_message())).status_code == 503:
            assert time.monotonic() < deadline, "the place of a deleted session was not given back"
            await asyncio.sleep(0.05)
        assert r.status_code == 200
        assert h.post(srv.url, headers=ACCEPT, json=init_message()).status_code == 503
    assert srv.metric("whalebox_sessions") == 5


async def test_a_thousand_initializes_at_once(serve):
    """1,000 initializes against the default max_sessions (256): the server keeps
    answering /healthz while they come, opens exactly 256 (an idle session holds no
    thread: its exec-decision server starts with its first command), and when every
    session is deleted they are all gone."""
    srv = serve(profile("max_sessions = 256"))
    threads_before = srv.session_threads()
    health = []

    async def probe():
        async with httpx2.AsyncClient(trust_env=False, timeout=10) as h:
            while len(health) < 1000:
                health.append((await h.get(srv.base + "/healthz")).status_code)
                await asyncio.sleep(0.2)

    prober = asyncio.create_task(probe())
    answers = await initialize_many(srv.url, 1000)
    prober.cancel()
    counts = {}
    for r in answers:
        counts[r.status_code] = counts.get(r.status_code, 0) + 1
    assert counts == {200: 256, 503: 744}, counts
    assert health and set(health) == {200}, health
    assert srv.metric("whalebox_sessions") == 256
    assert srv.session_threads() == threads_before
    async with httpx2.AsyncClient(trust_env=False, timeout=30) as h:
        gone = await asyncio.gather(*[h.delete(srv.url, headers={**ACCEPT, "mcp-session-id": r.headers["mcp-session-id"]})
                                      for r in answers if r.status_code == 200])
    assert {r.status_code for r in gone} == {202}
    await asyncio.to_thread(
        eventually, lambda: srv.metric("whalebox_sessions") == 0 and srv.session_threads() == threads_before,
        "the deleted sessions stayed")
    with plain_http() as h:
        assert h.get(srv.base + "/healthz").status_code == 200


# ---------------------------------------------------------------------------------------
# 8. OAuth


@pytest.fixture(scope="module")
def keys():
    return {
        "rsa": rsa.generate_private_key(public_exponent=65537, key_size=2048),
        "ec": ec.generate_private_key(ec.SECP256R1()),
        "other": rsa.generate_private_key(public_exponent=65537, key_size=2048),
    }


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def tampered(token: str, claims: dict) -> str:
    header, _, signature = token.split(".")
    return f"{header}.{b64url(json.dumps(claims).encode())}.{signature}"


def forged(header: dict, claims: dict, sign=lambda signing_input: b"") -> str:
    signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}"
    return f"{signing_input}.{b64url(sign(signing_input.encode()))}"


PUBLIC_URL = "https://whalebox.test"
ISSUER = "https://issuer.test"
SCOPE = "whalebox:use"


def test_oauth_resource_server(serve, secret_dir, keys):
    jwks = {"keys": [
        {**RSAAlgorithm.to_jwk(keys["rsa"].public_key(), as_dict=True), "kid": "rsa1", "use": "sig", "alg": "RS256"},
        {**ECAlgorithm.to_jwk(keys["ec"].public_key(), as_dict=True), "kid": "ec1", "use": "sig", "alg": "ES256"},
    ]}
    (secret_dir / "jwks.json").write_text(json.dumps(jwks))
    srv = serve(profile(f'public_url = "{PUBLIC_URL}"', readable=secret_dir, extra=(
        f'[http.oauth]\nissuer = "{ISSUER}"\njwks_file = "{secret_dir / "jwks.json"}"\nscopes = ["{SCOPE}"]\n')))
    now = int(time.time())
    good = {"iss": ISSUER, "aud": PUBLIC_URL + "/mcp", "sub": "agent-7", "iat": now, "exp": now + 300,
            "scope": f"openid {SCOPE}"}
    rsa_key, ec_key = keys["rsa"], keys["ec"]
    public_pem = rsa_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                   serialization.PublicFormat.SubjectPublicKeyInfo)

    def rs256(claims, key=rsa_key, kid="rsa1", alg="RS256"):
        return jwt.encode(claims, key, algorithm=alg, headers={"kid": kid})

    metadata_url = f"{PUBLIC_URL}/.well-known/oauth-protected-resource/mcp"
    base_challenge = f'Bearer realm="whalebox", resource_metadata="{metadata_url}", scope="{SCOPE}"'
    invalid = (401, base_challenge + ', error="invalid_token"')
    cases = [
        ("RS256", rs256(good), (200, None)),
        ("ES256", jwt.encode(good, ec_key, algorithm="ES256", headers={"kid": "ec1"}), (200, None)),
        ("scp as a list", rs256({**{k: v for k, v in good.items() if k != "scope"}, "scp": [SCOPE]}), (200, None)),
        ("no token", None, (401, base_challenge)),
        ("expired", rs256({**good, "exp": now - 120}), invalid),
        ("not yet valid", rs256({**good, "nbf": now + 600}), invalid),
        ("no exp", rs256({k: v for k, v in good.items() if k != "exp"}), invalid),
        ("wrong audience", rs256({**good, "aud": "https://other.test/mcp"}), invalid),
        ("audience without /mcp", rs256({**good, "aud": PUBLIC_URL}), invalid),
        ("wrong issuer", rs256({**good, "iss": "https://evil.test"}), invalid),
        ("another key, our kid", rs256(good, key=keys["other"]), invalid),
        ("unknown kid", rs256(good, kid="rsa2"), invalid),
        ("EC key named as RSA", jwt.encode(good, ec_key, algorithm="ES256", headers={"kid": "rsa1"}), invalid),
        ("alg none", forged({"alg": "none", "typ": "JWT", "kid": "rsa1"}, good), invalid),
        ("alg none, no kid", forged({"alg": "none", "typ": "JWT"}, good), invalid),
        ("HS256 keyed with the public key",
         forged({"alg": "HS256", "typ": "JWT", "kid": "rsa1"}, good,
                lambda m: hmac.new(public_pem, m, hashlib.sha256).digest()), invalid),
        ("claims changed after signing", tampered(rs256(good), {**good, "sub": "admin"}), invalid),
        ("not a JWT", "definitely-not-a-jwt-token", invalid),
        ("missing scope", rs256({**good, "scope": "openid"}),
         (403, base_challenge + ', error="insufficient_scope"')),
    ]
    failures = []
    with plain_http(reuse=False) as h:
        for name, token, (status, challenge) in cases:
            r = h.post(srv.url, headers={**ACCEPT, **(bearer(token) if token else {})}, json=init_message())
            got = (r.status_code, r.headers.get("www-authenticate"))
            if got != (status, challenge):
                failures.append(f"{name}: expected {(status, challenge)}, got {got} {r.text!r}")
            if status != 200 and "mcp-session-id" in r.headers:
                failures.append(f"{name}: a session was opened")
        assert not failures, "\n".join(failures)

        for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
            r = h.get(srv.base + path)
            assert r.status_code == 200 and r.headers["content-type"] == "application/json"
            meta = r.json()
            assert meta["resource"] == PUBLIC_URL + "/mcp"
            assert meta["authorization_servers"] == [ISSUER]
            assert meta["bearer_methods_supported"] == ["header"]
            assert meta["scopes_supported"] == [SCOPE]
        assert h.post(srv.base + "/.well-known/oauth-protected-resource").status_code == 405
    text = srv.metrics()
    statuses = [status for _, _, (status, _) in cases]
    assert metric(text, "whalebox_sessions") == statuses.count(200)
    assert metric(text, 'whalebox_auth_refusals_total{reason="insufficient_scope"}') == statuses.count(403)
    assert metric(text, 'whalebox_auth_refusals_total{reason="missing"}') == 1
    assert metric(text, 'whalebox_auth_refusals_total{reason="invalid"}') == statuses.count(401) - 1
    assert "principal=agent-7" in srv.log, "the JWT's subject is the caller"
    for _, token, _ in cases:
        assert token is None or token not in srv.log


# ---------------------------------------------------------------------------------------
# 9. TLS


def self_signed(dir: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = dir / "cert.pem", dir / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


async def test_tls(serve, secret_dir):
    cert, key = self_signed(secret_dir)
    srv = serve(profile("request_timeout_s = 3", readable=secret_dir,
                        extra=f'[http.tls]\ncert = "{cert}"\nkey = "{key}"\n'))
    assert srv.url == f"https://127.0.0.1:{srv.port}/mcp"
    trust = ssl.create_default_context(cafile=str(cert))
    with plain_http(verify=trust) as h:
        assert h.get(srv.base + "/healthz").text == "ok\n"
    async with mcp_client(srv.url, "legacy", verify=trust) as c:
        await c.list_tools()
        assert (await call(c, "read_file", {"file_path": "README.md"}))["ok"]
    # A client that does not trust the certificate refuses it.
    with plain_http() as h, pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        h.get(srv.base + "/healthz")
    # Plain HTTP to the TLS port gets no HTTP answer.
    with plain_http(timeout=10) as h, pytest.raises(httpx2.TransportError):
        h.get(f"http://127.0.0.1:{srv.port}/healthz")
    with raw_connect(srv) as sk:
        sk.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        got = b""
        with contextlib.suppress(OSError):
            while chunk := sk.recv(4096):
                got += chunk
        assert not got.startswith(b"HTTP/"), got
    with plain_http(verify=trust) as h:
        assert h.get(srv.base + "/healthz").status_code == 200, "and the server still serves"


# ---------------------------------------------------------------------------------------
# 10. /metrics and /readyz


async def test_metrics_and_readyz(serve, secret_dir, whalebox_bin, workspace):
    token = new_token("alice")
    tokens = write_tokens(secret_dir / "tokens", alice=token)
    srv = serve(profile(f'tokens_file = "{tokens}"', readable=secret_dir))
    with plain_http(reuse=False) as h:
        assert h.post(srv.url, headers=ACCEPT, json=init_message()).status_code == 401
    async with mcp_client(srv.url, "legacy", headers=bearer(token)) as c:
        await c.list_tools()
        for _ in range(2):
            assert (await call(c, "read_file", {"file_path": "README.md"}))["ok"]
        assert (await call(c, "read_file", {"file_path": "absent.md"}))["code"] == "not_found"
        assert (await call(c, "read_file", {"file_path": "../outside.txt"}))["ok"] is False
        during = srv.metrics()
    with plain_http() as h:
        r = h.get(srv.base + "/metrics")
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain; version=0.0.4")
        text = r.text
        assert metric(text, 'whalebox_tool_calls_total{tool="read_file",code="ok"}') == 2
        assert metric(text, 'whalebox_tool_calls_total{tool="read_file",code="not_found"}') == 1
        assert metric(text, 'whalebox_auth_refusals_total{reason="missing"}') == 1
        assert metric(text, 'whalebox_http_requests_total{route="/mcp",status="401"}') == 1
        assert metric(during, "whalebox_sessions") == 1 and metric(text, "whalebox_sessions") == 0
        assert metric(text, "whalebox_tool_calls_in_flight") == 0
        assert metric(text, "whalebox_tasks") == 0
        assert "whalebox_tool_call_seconds_bucket{" in text
        assert any(l.startswith("whalebox_denials_total{") for l in text.splitlines()), \
            "the path guard's refusal is a denial"
        assert str(workspace) not in text and token not in text

        r = h.get(srv.base + "/readyz")
        assert r.status_code == 200 and r.headers["content-type"] == "application/json"
        ready = r.json()
        assert ready["ready"] is True and ready["detail"]["problems"] == []
        assert ready["detail"]["policy_loaded"] is True
        assert set(ready["detail"]["exec_boundary"]) >= {"gated"}
        assert "runtime" in ready["detail"]
        assert str(workspace) not in r.text
        r = h.post(srv.base + "/readyz")
        assert r.status_code == 405 and r.headers["allow"] == "GET, HEAD"
        assert h.get(srv.base + "/healthz").text == "ok\n"
        assert h.get(srv.base + "/nowhere").status_code == 404
        assert h.get(srv.base + "/.well-known/oauth-protected-resource").status_code == 404, "no OAuth here"
        abi = kernel_landlock_abi(whalebox_bin)
        if abi == 0:
            pytest.skip("SKIPPED: this kernel has no Landlock; /readyz's landlock detail not checked")
        landlock = ready["detail"]["landlock"]
        assert landlock["kernel_abi"] == abi and "filesystem" in landlock["enforced"]


# ---------------------------------------------------------------------------------------
# 11. The stop


async def wait_in_flight(srv: Served, n: int, timeout=10.0):
    deadline = time.monotonic() + timeout
    while srv.metric("whalebox_tool_calls_in_flight") != n:
        assert time.monotonic() < deadline, f"never {n} call(s) in flight"
        await asyncio.sleep(0.05)


def refused_or_not_ready(srv: Served) -> str:
    try:
        with plain_http(timeout=3) as h:
            r = h.get(srv.base + "/readyz")
    except httpx2.ConnectError:
        return "refused"
    assert r.status_code == 503 and r.json()["ready"] is False, (r.status_code, r.text)
    return "503"


async def test_sigterm_lets_a_call_under_way_finish(serve):
    srv = serve(profile("grace_period_s = 6"))
    async with mcp_client(srv.url, "legacy") as c:
        await c.list_tools()
        call_task = asyncio.create_task(c.call_tool(
            "shell_run", {"command": "sleep 2; echo finished after the signal", "yield_time_ms": 20000}))
        await wait_in_flight(srv, 1)
        signalled = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        await asyncio.to_thread(srv.wait_for_log, "SIGTERM: stopping")
        assert refused_or_not_ready(srv) in ("refused", "503")
        env = envelope(await asyncio.wait_for(call_task, 15))
        assert env["ok"] and env["text"].startswith("finished after the signal\n"), env
        assert env["data"]["exit_code"] == 0
        rc = await asyncio.to_thread(srv.proc.wait, 15)
        took = time.monotonic() - signalled
    assert rc == 0
    assert took < 6 + 5, f"stopped {took:.1f} s after SIGTERM"
    assert "still under way after the grace period" not in srv.log


def test_sigterm_cancels_a_call_longer_than_the_grace_period(serve):
    srv = serve(profile("grace_period_s = 1"))
    sleep = unique_sleep()
    with plain_http(timeout=30) as h:
        s = Session(h, srv.url)
        results = []

        def long_call():
            with contextlib.suppress(httpx2.TransportError):
                r = s.post({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
                    "name": "shell_run", "arguments": {"command": sleep, "yield_time_ms": 30000}}})
                results.append((r.status_code, [m for m in messages(r) if m.get("id") == 5]))

        caller = threading.Thread(target=long_call)
        caller.start()
        deadline = time.monotonic() + 10
        while not pids_running(sleep):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        signalled = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.proc.wait(timeout=15) == 0
        took = time.monotonic() - signalled
        caller.join(timeout=15)
    assert 1 <= took < 1 + 5, f"stopped {took:.1f} s after SIGTERM"
    assert "cancelling 1 call(s) still under way after the grace period" in srv.log
    assert wait_gone(sleep), "the cancelled call's command outlived the server"
    # The call got no answer: its event stream ended with the server.
    assert not caller.is_alive()
    assert results in ([], [(200, [])]), results


# ---------------------------------------------------------------------------------------
# 12. A client that goes away mid-call


@pytest.mark.parametrize("mode", MODES)
def test_a_client_that_disconnects_mid_call(serve, workspace, mode):
    """The client sends a call that takes 2 s and closes its connection after 0.5 s.
    What happens (observed with the binary of 2026-12-05): the server stays healthy; the
    call is cancelled at once (whalebox_tool_calls_total{tool="shell_run",
    code="cancelled"}, no longer in flight), on both lifecycles; its command is not
    killed: it goes on as the session's (or caller's) background task and finishes
    (the marker file appears). A classic session stays usable."""
    srv = serve()
    marker = workspace / f"marker-{mode}"
    command = f"sleep 2; echo finished > {marker.name}"
    with plain_http() as h:
        if mode == "legacy":
            s = Session(h, srv.url)
            headers = s.headers()
            params = {"name": "shell_run", "arguments": {"command": command, "yield_time_ms": 20000}}
        else:
            headers = {**ACCEPT, "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "shell_run"}
            params = {"name": "shell_run", "arguments": {"command": command, "yield_time_ms": 20000},
                      "_meta": STATELESS_META}
        body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}).encode()
        head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        with raw_connect(srv) as sk:
            sk.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}Content-Length: {len(body)}\r\n\r\n"
                       .encode() + body)
            time.sleep(0.5)
        gone = time.monotonic()
        assert h.get(srv.base + "/healthz").status_code == 200
        deadline = time.monotonic() + 5
        while (ended := {l.split(" ")[0] for l in srv.metrics().splitlines()
                         if l.startswith('whalebox_tool_calls_total{tool="shell_run"')}) == set():
            assert time.monotonic() < deadline, "the call never ended"
            time.sleep(0.05)
        ended_after = time.monotonic() - gone
        assert ended == {'whalebox_tool_calls_total{tool="shell_run",code="cancelled"}'}, ended
        assert ended_after < 2, f"cancelled {ended_after:.1f} s after the client left"
        assert srv.metric("whalebox_tool_calls_in_flight") == 0
        assert not marker.exists()
        deadline = time.monotonic() + 6
        while not marker.exists():
            assert time.monotonic() < deadline, "the command did not run on"
            time.sleep(0.05)
        if mode == "legacy":
            _, env = s.call("todo_list", {})
            assert env["ok"], "the session outlives the dropped connection"
            assert s.delete().status_code == 202
    assert srv.proc.poll() is None


# ---------------------------------------------------------------------------------------
# Found on the way


def test_a_call_longer_than_the_idle_timeout_keeps_its_session(serve):
    srv = serve(profile("idle_timeout_s = 1"))
    with plain_http(timeout=30) as h:
        s = Session(h, srv.url)
        r = s.post({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
            "name": "shell_run", "arguments": {"command": "sleep 2.5; echo done", "yield_time_ms": 20000}}})
        answers = [m for m in messages(r) if m.get("id") == 5]
        if r.status_code == 200 and not answers:
            after = s.call("todo_list", {})[0].status_code
            raise KnownBug(f"no answer on the call's stream; the session then answers {after}")
        assert answers and answers[0]["result"]["content"][0]["text"].startswith("done\n"), r.text
        assert s.call("todo_list", {})[1]["ok"]


def test_the_private_directory_goes_with_the_server(serve):
    srv = serve()
    with plain_http() as h:
        s = Session(h, srv.url)
        _, env = s.call("shell_run", {"command": "echo $TMPDIR"})
        tmpdir = pathlib.Path(env["text"].splitlines()[0])
        root = tmpdir.parents[1]
        assert root.name.startswith("whalebox-"), root
    srv.proc.send_signal(signal.SIGTERM)
    assert srv.proc.wait(timeout=30) == 0
    assert not tmpdir.exists(), "a session's TMPDIR goes with the session"
    if root.exists():
        shutil.rmtree(root, ignore_errors=True)
        raise KnownBug(f"{root} left behind")


def send_then_reuse(srv: Served, head: bytes, rest: bytes) -> tuple[bytes, bytes | None]:
    """Send the first part of a request, read the answer (which comes before the body is
    all read), then send the rest and a second request on the same connection: (the first
    answer's head, the second answer, or None when the connection was closed under it)."""
    with raw_connect(srv) as sk:
        sk.sendall(head)
        first = b""
        while b"\r\n\r\n" not in first:
            first += sk.recv(4096)
        first_head = first.split(b"\r\n\r\n")[0].lower()
        length = int(re.search(rb"content-length: (\d+)", first_head).group(1))
        while len(first.split(b"\r\n\r\n", 1)[1]) < length:
            first += sk.recv(4096)
        time.sleep(0.1)
        try:
            sk.sendall(rest)
            sk.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            sk.settimeout(5)
            second = sk.recv(4096)
        except OSError:
            second = b""
    return first_head, second or None


def test_a_refused_request_says_connection_close(serve, secret_dir):
    token = new_token("alice")
    tokens = write_tokens(secret_dir / "tokens", alice=token)
    srv = serve(profile(f'tokens_file = "{tokens}"\nmax_body_bytes = 2048', readable=secret_dir))
    body = json.dumps(init_message()).encode()
    head = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\n"
            b"Content-Type: application/json\r\n")
    dropped = []
    big = b"x" * 4096
    for status, first_part, rest in [
        # Refused on its head: the body is sent after the answer.
        (b"401", head + b"Content-Length: %d\r\n\r\n" % len(body), body),
        # Refused when 2048 bytes of its 4096 are read.
        (b"413", head + f"Authorization: Bearer {token}\r\n".encode()
         + b"Content-Length: %d\r\n\r\n" % len(big) + big[:3000], big[3000:]),
    ]:
        first, second = send_then_reuse(srv, first_part, rest)
        assert first.startswith(b"http/1.1 " + status), first
        if b"connection: close" in first:
            continue
        if second is None:
            dropped.append(status.decode())
        else:
            assert second.startswith(b"HTTP/1.1 200 "), second
    if dropped:
        raise KnownBug(f"closed without `Connection: close` after {dropped}")
