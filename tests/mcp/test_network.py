"""The network fence's questions through the real MCP client on both lifecycles: a
command's first connection to a host no list names is put to the person (elicitation on
the classic lifecycle, an input_required round on 2026-07-28), once per host per session;
a "deny" and a client that cannot answer are refusals that say how to allow the host.
The host is a name from the profile's static host map for an HTTP server on 127.0.0.1."""

import http.server
import json
import os
import subprocess
import threading

import pytest

from test_mcp import MODES
from test_shell import call

pytestmark = pytest.mark.anyio


@pytest.fixture
def origin():
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = f"hello from {self.path}\n".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


def network_client(whalebox_bin, workspace, tmp_path, mode, callback=None):
    from mcp import Client, StdioServerParameters

    profile = tmp_path / "network.toml"
    profile.write_text(
        '[shell]\nexec_boundary = "off"\naudit_log = "audit.jsonl"\napprovals_file = "approvals.toml"\n'
        '[network]\nallow_private = ["127.0.0.1"]\nports = []\non_new_domain = "ask"\n'
        '[network.hosts]\n"asked.test" = "127.0.0.1"\n"second.test" = "127.0.0.1"\n'
    )
    params = StdioServerParameters(
        command=whalebox_bin,
        args=["serve", "--profile", str(profile), "--workspace", str(workspace)],
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(workspace.parent), "RUST_LOG": "warn"},
    )
    return Client(params, mode=mode, read_timeout_seconds=60, elicitation_callback=callback)


@pytest.mark.parametrize("mode", MODES)
async def test_a_new_host_is_asked_once_and_the_answer_holds(whalebox_bin, workspace, tmp_path, origin, mode):
    from mcp import types

    asked = []
    answer = {"decision": "allow_session"}

    async def on_elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content=dict(answer))

    async with network_client(whalebox_bin, workspace, tmp_path, mode, on_elicit) as c:
        env = await call(c, "shell_run", {"command": f"curl -sS http://asked.test:{origin}/one"})
        assert "hello from /one" in env["text"], env
        assert len(asked) == 1 and "connect to asked.test" in asked[0], asked
        assert env["data"]["network"]["reached"][0]["host"] == "asked.test", env["data"]
        env = await call(c, "shell_run", {"command": f"curl -sS http://asked.test:{origin}/two"})
        assert "hello from /two" in env["text"], env
        assert len(asked) == 1, "asked once per host per session"
        answer["decision"] = "deny"
        env = await call(c, "shell_run", {"command": f"curl -sS http://second.test:{origin}/three"})
        assert "hello from /three" not in env["text"], env
        assert "second.test was declined by" in env["text"], env["text"]
        assert "add \"second.test\" to [network] allow_domains" in env["text"], env["text"]
        assert env["data"]["network"]["refused"][0]["host"] == "second.test", env["data"]
        assert len(asked) == 2
    audit = [json.loads(l) for l in (tmp_path / "audit.jsonl").read_text().splitlines()]
    decisions = [(r["host"], r["decision"]) for r in audit if r.get("kind") == "network"]
    assert decisions == [("asked.test", "allow"), ("asked.test", "allow"), ("second.test", "deny")], decisions
    # "For the session" is kept as a [[network]] rule to review and include; it checks.
    remembered = (tmp_path / "approvals.toml").read_text()
    assert '[[network]]\nhosts = ["asked.test"]' in remembered and "second.test" not in remembered, remembered
    check = subprocess.run([whalebox_bin, "policy", "test", str(tmp_path / "approvals.toml")],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize("mode", MODES)
async def test_a_new_host_without_a_person_is_refused_and_said(whalebox_bin, workspace, tmp_path, origin, mode):
    async with network_client(whalebox_bin, workspace, tmp_path, mode) as c:
        env = await call(c, "shell_run", {"command": f"curl -sS http://asked.test:{origin}/x"})
        assert "hello from" not in env["text"], env
        assert "no one can answer here" in env["text"], env["text"]
        assert env["data"]["network"]["refused"][0]["host"] == "asked.test"
