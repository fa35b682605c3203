"""The web group over MCP, against an HTTP server on loopback that the test starts: the
tools are listed only when the group is on, a long page is fetched once and paged from
the session's cache, and `on_new_host = "ask"` asks the person once per host through
elicitation (classic lifecycle) or an input_required round (2026-07-28)."""

import http.server
import json
import threading

import pytest

from test_mcp import MODES, client
from test_session_state import profile_client
from test_shell import call

pytestmark = pytest.mark.anyio


class Pages(http.server.BaseHTTPRequestHandler):
    hits: dict = {}

    def do_GET(self):
        Pages.hits[self.path] = Pages.hits.get(self.path, 0) + 1
        body = "<html><head><title>Long</title></head><body><main>" + "".join(
            f"<p>Paragraph {i}.</p>" for i in range(3000)) + "</main></body></html>"
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def site():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Pages.hits = {}
    yield server.server_address[1]
    server.shutdown()


def web_profile(tmp_path, port, extra=""):
    profile = tmp_path / "web.toml"
    profile.write_text(f'tools = ["web"]\n[web]\nallow_private = ["127.0.0.1"]\nports = [{port}]\n{extra}')
    return profile


async def test_web_tools_are_opt_in(whalebox_bin, workspace):
    async with client(whalebox_bin, workspace, "legacy") as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert not names & {"web_fetch", "fetch", "web_search"}


@pytest.mark.parametrize("mode", MODES)
async def test_pages_come_from_the_cache(whalebox_bin, workspace, tmp_path, site, mode):
    async with profile_client(whalebox_bin, workspace, web_profile(tmp_path, site), mode) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert tools["web_fetch"].annotations.open_world_hint is True
        url = f"http://127.0.0.1:{site}/long"
        first = await call(c, "web_fetch", {"url": url, "max_length": 2000})
        assert first["ok"] and first["data"]["cached"] is False
        total = first["data"]["total_chars"]
        seen = first["text"]
        start = first["data"]["next_start_index"]
        while start is not None:
            page = await call(c, "web_fetch", {"url": url, "start_index": start, "max_length": 5000})
            assert page["data"]["cached"] is True
            seen += page["text"]
            start = page["data"].get("next_start_index")
        assert "Paragraph 0." in seen and "Paragraph 2999." in seen
        assert total > 20000
        assert Pages.hits == {"/long": 1}, "one request for every page"


@pytest.mark.parametrize("mode", MODES)
async def test_a_new_host_is_asked_once(whalebox_bin, workspace, tmp_path, site, mode):
    from mcp import types

    asked = []

    async def on_elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": "allow_session"})

    profile = web_profile(tmp_path, site, 'on_new_host = "ask"\n')
    async with profile_client(whalebox_bin, workspace, profile, mode, on_elicit) as c:
        env = await call(c, "web_fetch", {"url": f"http://127.0.0.1:{site}/a", "max_length": 100})
        assert env["ok"], env
        env = await call(c, "fetch", {"url": f"http://127.0.0.1:{site}/b", "max_length": 100})
        assert env["ok"], env
        assert len(asked) == 1 and "127.0.0.1" in asked[0], asked

    async def refuse(context, params):
        return types.ElicitResult(action="accept", content={"decision": "deny"})

    async with profile_client(whalebox_bin, workspace, profile, mode, refuse) as c:
        env = await call(c, "web_fetch", {"url": f"http://127.0.0.1:{site}/c"})
        assert env["code"] == "url_denied" and "did not allow" in env["text"], env
    assert "/c" not in Pages.hits

    async with profile_client(whalebox_bin, workspace, profile, mode) as c:
        env = await call(c, "web_fetch", {"url": f"http://127.0.0.1:{site}/d"})
        assert env["code"] == "url_denied" and "nobody can be asked" in env["text"], env
