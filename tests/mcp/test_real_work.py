"""Real work across calls under the default fences (issue 40): a session's commands share
one network namespace and one /dev/shm, so a server one call starts answers the next;
the machine's loopback services a profile names (`host_ports`) are reachable, and the
ports it publishes (`publish`) reach the task's servers; and two sessions stay apart."""

import json
import os
import pathlib
import socket
import socketserver
import threading
import urllib.request
import http.server

import pytest
from mcp import StdioServerParameters

from test_mcp import MODES, Client, envelope

pytestmark = pytest.mark.anyio


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def session(binary: str, workspace: pathlib.Path, mode: str = "legacy", profile: str | None = None) -> Client:
    args = ["serve", "--workspace", str(workspace)]
    if profile is not None:
        path = workspace.parent / f"profile-{free_port()}.toml"
        path.write_text(profile)
        args += ["--profile", str(path)]
    params = StdioServerParameters(
        command=binary,
        args=args,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(workspace.parent), "RUST_LOG": "warn"},
    )
    return Client(params, mode=mode, read_timeout_seconds=60)


async def run(c, command: str, **extra) -> dict:
    return envelope(await c.call_tool("shell_run", {"command": command, **extra}))


def fenced(env: dict) -> None:
    """The call really ran inside a network namespace: otherwise nothing here is proven."""
    assert env["data"]["network"]["enforcement"] == "namespace", json.dumps(env["data"], indent=1)


async def wait_listening(c, port: int) -> None:
    env = await run(
        c,
        f"for i in $(seq 100); do python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}))' 2>/dev/null && exit 0; sleep 0.05; done; exit 1",
    )
    assert env["data"]["exit_code"] == 0, env["text"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_server_one_call_starts_answers_the_next(whalebox_bin, workspace, mode):
    port = free_port()
    async with session(whalebox_bin, workspace, mode) as c:
        env = await run(c, f"python3 -m http.server {port} --bind 127.0.0.1", background=True)
        assert env["data"]["status"] == "running", env["text"]
        await wait_listening(c, port)
        env = await run(c, f"curl -sS -m 5 -o /dev/null -w '%{{http_code}}' http://localhost:{port}/")
        fenced(env)
        assert env["data"]["exit_code"] == 0 and "200" in env["text"], env["text"]
        # The machine's own loopback is not the session's: nothing published, nothing there.
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=2).close()


async def test_dev_shm_is_the_sessions_own(whalebox_bin, workspace):
    marker = f"whalebox-test-{free_port()}"
    async with session(whalebox_bin, workspace) as c:
        env = await run(
            c,
            f"echo one > /dev/shm/{marker} && python3 -c 'import multiprocessing as m; print(sum(m.Pool(2).map(abs, [-1, -2, -3])))'",
        )
        assert env["data"]["exit_code"] == 0 and "6" in env["text"], env["text"]
        env = await run(c, f"cat /dev/shm/{marker}")
        assert "one" in env["text"], env["text"]
        # Not the machine's /dev/shm.
        assert not pathlib.Path("/dev/shm", marker).exists()


async def test_two_sessions_stay_apart(whalebox_bin, workspace):
    port = free_port()
    async with session(whalebox_bin, workspace) as a, session(whalebox_bin, workspace) as b:
        env = await run(a, f"python3 -m http.server {port} --bind 127.0.0.1", background=True)
        await wait_listening(a, port)
        await run(a, "echo secret-of-a > /dev/shm/a-marker")
        env = await run(a, "sh -c 'echo $$ > a.pid; exec sleep 60'", background=True)
        for _ in range(100):
            if (workspace / "a.pid").exists() and (workspace / "a.pid").read_text().strip():
                break
            await run(a, "sleep 0.05")
        pid = (workspace / "a.pid").read_text().strip()

        env = await run(b, f"curl -sS -m 3 http://127.0.0.1:{port}/; echo rc=$?")
        fenced(env)
        assert "rc=7" in env["text"], env["text"]
        env = await run(b, "ls -A /dev/shm; cat /dev/shm/a-marker; echo rc=$?")
        assert "secret-of-a" not in env["text"] and "rc=1" in env["text"], env["text"]
        # A's process is out of B's reach: no signal (Landlock's scopes), no /proc reads
        # (Landlock's domains). As root the /proc read is still open: a root task keeps
        # CAP_SYS_PTRACE, which this kernel lets past Landlock for PTRACE_MODE_READ
        # (issue 41 closes it); the signal is refused either way.
        env = await run(b, f"kill -0 {pid}; echo kill=$?; cat /proc/{pid}/environ >/dev/null; echo environ=$?")
        assert "kill=1" in env["text"], env["text"]
        if os.geteuid() != 0:
            assert "environ=1" in env["text"], env["text"]


class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"hello from the machine\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


async def test_host_ports_reach_the_machine_and_publish_reaches_the_task(whalebox_bin, workspace):
    host_port, published, unlisted = free_port(), free_port(), free_port()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", host_port), Hello)
    other = http.server.ThreadingHTTPServer(("127.0.0.1", unlisted), Hello)
    for s in (server, other):
        threading.Thread(target=s.serve_forever, daemon=True).start()
    profile = f"[network]\nhost_ports = [{host_port}]\npublish = [{published}]\n"
    try:
        async with session(whalebox_bin, workspace, profile=profile) as c:
            env = await run(c, f"curl -sS -m 5 http://127.0.0.1:{host_port}/ && curl -sS -m 5 http://localhost:{host_port}/")
            fenced(env)
            assert env["text"].count("hello from the machine") == 2, env["text"]
            reached = {(r["host"], r["port"]): r for r in env["data"]["network"]["reached"]}
            assert reached[("localhost", host_port)]["connections"] == 2, env["data"]["network"]
            assert "curl" in reached[("localhost", host_port)]["by"], env["data"]["network"]
            # A port the profile does not name stays the session's own (nothing there).
            env = await run(c, f"curl -sS -m 3 http://127.0.0.1:{unlisted}/; echo rc=$?")
            assert "rc=7" in env["text"], env["text"]

            (workspace / "page.txt").write_text("from the task\n")
            env = await run(c, f"python3 -m http.server {published} --bind 127.0.0.1", background=True)
            await wait_listening(c, published)
            with urllib.request.urlopen(f"http://127.0.0.1:{published}/page.txt", timeout=5) as r:
                assert r.read() == b"from the task\n"
    finally:
        server.shutdown()
        other.shutdown()


FAKE_JOIN = r'''
import os, socket, sys
run = os.path.dirname(os.path.dirname(os.environ["WHALEBOX_GATE_SOCKET"]))
path = os.path.join(run, "join.sock")
os.unlink(path)
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen()
open("fake-ready", "w").close()
while True:
    c, _ = s.accept()
    open("fake-asked", "a").write("asked\n")
    c.recv(256)
    c.sendmsg([b"."])  # "no namespaces": the machine's own, were it believed
    c.close()
'''


async def test_the_join_socket_cannot_be_replaced(whalebox_bin, workspace):
    """Under Landlock the socket's directory is read-only to tasks: the swap the next
    test makes fails, and later commands still run in the session's namespaces."""
    async with session(whalebox_bin, workspace) as c:
        env = await run(c, "readlink /proc/self/ns/net")
        fenced(env)
        mine = env["text"].splitlines()[0]
        (workspace / "fake.py").write_text(FAKE_JOIN)
        env = await run(c, "python3 fake.py")
        assert env["data"]["exit_code"] != 0 and not (workspace / "fake-ready").exists(), env["text"]
        env = await run(c, "readlink /proc/self/ns/net")
        assert env["text"].splitlines()[0] == mine, env["text"]


async def test_a_replaced_join_socket_is_not_believed(whalebox_bin, workspace):
    """Without Landlock (so the swap lands), a task replaces the socket later tasks join
    their session's namespaces through, and answers "none": were that believed, they
    would run in the machine's own network namespace, past the proxy. The supervisor
    checks who answers (the server's pid) and what (the very namespaces the server
    made), and runs nothing otherwise."""
    async with session(whalebox_bin, workspace, profile='[landlock]\nmode = "off"\n') as c:
        env = await run(c, "readlink /proc/self/ns/net")
        fenced(env)
        (workspace / "fake.py").write_text(FAKE_JOIN)
        env = await run(c, "exec python3 fake.py", background=True)
        await run(c, "for i in $(seq 100); do test -e fake-ready && exit 0; sleep 0.05; done; exit 1")
        env = await run(c, "readlink /proc/self/ns/net; echo ran")
        # The fake was reached (the attack is real), and nothing ran.
        assert (workspace / "fake-asked").exists(), env["text"]
        assert "ran" not in env["text"], env["text"]
        assert env["data"]["exit_code"] == 126 and "not the server" in env["text"], env["text"]


async def test_another_commands_door_is_refused_and_blamed_on_the_caller(whalebox_bin, workspace, tmp_path):
    """Every command of a session has its own proxy door on the session's loopback; a
    command that uses another's would have its connections decided, asked about and
    recorded as that command's. It gets a 403, and the refusal is its own."""
    audit = tmp_path / "audit.jsonl"
    profile = f'[shell]\naudit_log = "{audit}"\n'
    async with session(whalebox_bin, workspace, profile=profile) as c:
        env = await run(c, "echo $HTTPS_PROXY > innocent-door; sleep 5", background=True)
        innocent = env["data"]["task_id"]
        await run(c, "for i in $(seq 100); do test -s innocent-door && exit 0; sleep 0.05; done; exit 1")
        door = (workspace / "innocent-door").read_text().strip()
        env = await run(c, f"curl -sS -m 5 -x {door} http://example.com/ ; echo; echo mine=$HTTPS_PROXY")
        fenced(env)
        assert "belongs to another command" in env["text"], env["text"]
        assert door not in env["text"].split("mine=")[1], "the attacker's own door is another"
        env = envelope(await c.call_tool("shell_wait", {"task_id": innocent, "timeout_ms": 8000}))
        assert not env["data"]["network"]["refused"] and not env["data"]["network"]["reached"], env["data"]["network"]
    records = [json.loads(l) for l in audit.read_text().splitlines() if '"network"' in l]
    assert records and all("sleep 5" not in r.get("command", "") for r in records), records
