"""The mcp group: real upstream MCP servers (tests/mcp/upstream/catalog_server.py, written
with PyPI's `mcp`) started by whalebox inside its fences, found with tool_search and
called with call_tool, through the real Python client on both lifecycles."""

import json
import os
import pathlib
import sys

import pytest

from test_mcp import MODES
from test_session_state import profile_client
from test_shell import call

pytestmark = pytest.mark.anyio

HERE = pathlib.Path(__file__).resolve().parent
SERVER = HERE / "upstream" / "catalog_server.py"
VENV = pathlib.Path(sys.prefix)


def upstream_profile(tmp_path, servers, extra="", command=sys.executable):
    """A profile with the mcp group and `servers` ({name: (extra args, extra keys)}),
    each started as `command` (a Python) running the catalog server."""
    lines = [
        'tools = ["mcp"]',
        f'read_roots = ["{VENV}", "{HERE / "upstream"}"]',
        extra,
        # The interpreter's installation (pyenv under the real home): read and execute.
        f'[landlock]\nrox = ["{pathlib.Path(sys.base_prefix).resolve()}"]',
    ]
    for name, (args, keys) in servers.items():
        argv = json.dumps([str(SERVER), name, *args])
        lines.append(f"[mcp_servers.{name}]\ncommand = \"{command}\"\nargs = {argv}\n{keys}")
    profile = tmp_path / "upstream.toml"
    profile.write_text("\n".join(lines) + "\n")
    return profile


@pytest.mark.parametrize("mode", MODES)
async def test_search_and_call(whalebox_bin, workspace, tmp_path, mode):
    profile = upstream_profile(tmp_path, {"gh": ([], ""), "chat": ([], "")})
    async with profile_client(whalebox_bin, workspace, profile, mode) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert {"tool_search", "call_tool"} <= names
        env = await call(c, "tool_search", {"query": "create a pull request", "max_results": 3})
        assert env["ok"], env
        found = [t["name"] for t in env["data"]["tools"]]
        assert found[0].endswith("__create_pull_request"), found
        assert env["data"]["tools"][0]["input_schema"]["required"] == ["repository"]
        env = await call(c, "tool_search", {"query": "+chat message"})
        found = [t["name"] for t in env["data"]["tools"]]
        assert found[0] == "mcp__chat__post_message", found
        env = await call(c, "tool_search", {"query": "+gh +message"})
        assert [t["name"] for t in env["data"]["tools"]] == ["mcp__gh__post_message"], env
        env = await call(c, "tool_search", {"query": "select:mcp__gh__query_database,mcp__chat__crash"})
        assert [t["name"] for t in env["data"]["tools"]] == ["mcp__gh__query_database", "mcp__chat__crash"]
        env = await call(c, "tool_search", {"query": "kubernetes pods"})
        assert env["data"]["tools"] == [] and "- gh: " in env["text"], env

        env = await call(c, "call_tool", {"name": "mcp__gh__get_release",
                                          "arguments": {"repository": "o/r", "query": "v1"}})
        assert env["ok"] and env["text"] == "get release in o/r (v1)", env
        # Stringified arguments are repaired; wrong ones explained with the schema.
        env = await call(c, "call_tool", {"name": "mcp__chat__post_message",
                                          "arguments": {"channel": "#x", "text": "hi"}})
        assert env["ok"], env
        env = await call(c, "call_tool", {"name": "mcp__chat__post_message", "arguments": {"channel": "#x"}})
        assert env["code"] == "invalid_input" and "text" in env["text"], env
        env = await call(c, "call_tool", {"name": "mcp__gh__create_isue", "arguments": {}})
        assert env["code"] == "unknown_tool" and "mcp__gh__create_issue" in env["text"], env
        env = await call(c, "call_tool", {"name": "mcp__gh__fail_always", "arguments": {"reason": "x"}})
        assert env["code"] == "upstream_error", env


async def test_bad_upstreams_are_reported_and_the_rest_works(whalebox_bin, workspace, tmp_path):
    profile = upstream_profile(tmp_path, {
        "good": ([], 'tool_timeout_ms = 1500'),
        "gone": (["--exit"], ""),
        "garbage": (["--garbage"], "startup_timeout_ms = 1500"),
        "dup": (["--collide"], ""),
    })
    profile.write_text(profile.read_text() + '[mcp_servers.missing]\ncommand = "/nonexistent/server"\n')
    async with profile_client(whalebox_bin, workspace, profile, "legacy") as c:
        env = await call(c, "tool_search", {"query": "issue"})
        text = env["text"]
        why = {u["server"]: u for u in env["data"]["unavailable"]}
        assert "giving up at once" in "\n".join(why["gone"]["stderr"]), why["gone"]
        assert "initialize" in why["garbage"]["why"], why["garbage"]
        assert "missing" in why, text
        assert "both mcp__dup__get_status" in why["dup"]["why"], why
        assert any(t["name"].startswith("mcp__good__") for t in env["data"]["tools"])

        env = await call(c, "call_tool", {"name": "mcp__good__hang", "arguments": {"seconds": 30}})
        assert env["code"] == "timeout" and "1500 ms" in env["text"], env
        env = await call(c, "call_tool", {"name": "mcp__good__crash", "arguments": {}})
        assert env["code"] == "upstream_unavailable", env
        assert "crashing on purpose" in "\n".join(env["data"]["stderr"]), env
        # Started again by the very next call.
        env = await call(c, "call_tool", {"name": "mcp__good__get_issue", "arguments": {"repository": "o/r"}})
        assert env["ok"], env


async def test_a_crashed_upstream_starts_again_on_the_next_call(whalebox_bin, workspace, tmp_path):
    starts = workspace / "starts.log"
    profile = upstream_profile(tmp_path, {"gh": ([], f'env = {{ UPSTREAM_STARTS = "{starts}" }}')})
    get = {"name": "mcp__gh__get_issue", "arguments": {"repository": "o/r"}}
    crash = {"name": "mcp__gh__crash", "arguments": {}}
    async with profile_client(whalebox_bin, workspace, profile, "legacy") as c:
        for _ in range(2):
            env = await call(c, "call_tool", get)
            assert env["ok"], env
            env = await call(c, "call_tool", crash)
            assert env["code"] == "upstream_unavailable", env
            assert "started again on the next call" in env["text"], env
            # No waiting: the next call starts it (within startup_timeout_ms) and is answered.
            env = await call(c, "call_tool", get)
            assert env["ok"], env
        assert len(starts.read_text().splitlines()) == 3
        # Stopping again before any call worked: now it waits its backoff.
        env = await call(c, "call_tool", crash)
        env = await call(c, "call_tool", crash)
        assert env["code"] == "upstream_unavailable" and "keeps failing" in env["text"], env
        env = await call(c, "call_tool", get)
        assert env["code"] == "upstream_unavailable" and "after 1 s" in env["text"], env
        import anyio
        await anyio.sleep(1.2)
        env = await call(c, "call_tool", get)
        assert env["ok"], env


async def test_an_upstream_that_keeps_failing_to_start_backs_off(whalebox_bin, workspace, tmp_path):
    import re
    import time

    import anyio

    starts = workspace / "starts.log"
    profile = upstream_profile(tmp_path, {"gone": (["--exit"], f'env = {{ UPSTREAM_STARTS = "{starts}" }}')})
    async with profile_client(whalebox_bin, workspace, profile, "legacy") as c:
        texts = []
        began = time.monotonic()
        while time.monotonic() - began < 5:
            env = await call(c, "call_tool", {"name": "mcp__gone__get_issue", "arguments": {}})
            assert env["code"] == "upstream_unavailable", env
            assert "giving up at once" in "\n".join(env["data"]["stderr"]), env
            texts.append(env["text"])
            await anyio.sleep(0.2)
        # Started when the session began, then after 1 s and 2 s: not on every call.
        assert 2 <= len(starts.read_text().splitlines()) <= 3, starts.read_text()
        assert len(texts) >= 5, texts
        waits = [int(w) for t in texts for w in re.findall(r"started again on a call after (\d+) s", t)]
        assert waits and max(waits) >= 2, texts
        assert any("it keeps failing" in t for t in texts), texts


async def test_a_bare_command_is_found_in_the_servers_path(whalebox_bin, workspace, tmp_path):
    """`command = "NAME"` (like `npx` or `uvx`) runs what the server's PATH finds, also
    under the exec gate (which execs the command as given)."""
    import sysconfig

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "upstream-python").symlink_to(sys.executable)
    keys = f'env = {{ PATH = "{bin_dir}:/usr/bin:/bin", PYTHONPATH = "{sysconfig.get_paths()["purelib"]}" }}'
    profile = upstream_profile(tmp_path, {"gh": ([], keys)}, command="upstream-python")
    async with profile_client(whalebox_bin, workspace, profile, "legacy") as c:
        env = await call(c, "call_tool", {"name": "mcp__gh__get_issue", "arguments": {"repository": "o/r"}})
        assert env["ok"] and env["text"] == "get issue in o/r ()", env


async def test_a_command_the_sandbox_refuses_names_the_path_and_the_line(whalebox_bin, workspace, tmp_path):
    """A pyenv-style layout: the workspace's venv python is a symlink to an interpreter
    under a home directory no fence covers. The refusal names that interpreter and the
    profile line that allows it; with the line added, the server runs."""
    import re
    import shutil
    import sysconfig

    home = workspace.parent  # HOME of the whalebox under test
    prefix = (home / ".localpython" / "versions" / "3.x").resolve()
    (prefix / "bin").mkdir(parents=True)
    interpreter = prefix / "bin" / "python3"
    shutil.copy2(pathlib.Path(sys.executable).resolve(), interpreter)
    venv_python = workspace / ".venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.symlink_to(interpreter)
    keys = (f'env = {{ PYTHONHOME = "{sys.base_prefix}", PYTHONPATH = "{sysconfig.get_paths()["purelib"]}" }}\n'
            "startup_timeout_ms = 5000")
    profile = upstream_profile(tmp_path, {"gh": ([], keys)}, command=venv_python)
    get = {"name": "mcp__gh__get_issue", "arguments": {"repository": "o/r"}}
    async with profile_client(whalebox_bin, workspace, profile, "legacy") as c:
        env = await call(c, "call_tool", get)
        assert env["code"] == "upstream_unavailable", env
        text = env["text"]
        assert f"the sandbox refuses to execute {interpreter} (outside every sandbox root)" in text, text
        assert f"{venv_python} is {interpreter}" in text, text
        assert f"[landlock] in {profile}: rox = [" in text, text
        line = re.search(r"rox = \[[^\]]*\]", text).group(0)
        assert f'"{prefix}"' in line, line
    # The line, as said, in place of the profile's own.
    profile.write_text(re.sub(r"^rox = \[.*\]$", lambda _: line, profile.read_text(), flags=re.M))
    async with profile_client(whalebox_bin, workspace, profile, "legacy") as c:
        env = await call(c, "call_tool", get)
        assert env["ok"] and env["text"] == "get issue in o/r ()", env


async def test_upstreams_are_fenced_and_judged_by_the_policy(whalebox_bin, workspace, tmp_path):
    (tmp_path / "policy.toml").write_text(
        'version = 1\ndefault = "allow"\n[[rule]]\npattern = ["evil"]\n'
        'decision = "deny"\njustification = "no evil servers"\n'
    )
    profile = upstream_profile(tmp_path, {"files": ([], "")}, 'policy = "policy.toml"')
    profile.write_text(profile.read_text() + '[mcp_servers.evil]\ncommand = "/nonexistent/evil"\n')
    async with profile_client(whalebox_bin, workspace, profile, "2026-07-28") as c:
        env = await call(c, "call_tool", {"name": "mcp__files__write_file",
                                          "arguments": {"path": str(workspace / "inside.txt"), "text": "ok"}})
        assert env["ok"], env
        assert (workspace / "inside.txt").read_text() == "ok"
        outside = tmp_path / "written-outside.txt"
        env = await call(c, "call_tool", {"name": "mcp__files__write_file",
                                          "arguments": {"path": str(outside), "text": "no"}})
        assert env["code"] == "upstream_error" and not outside.exists(), env
        env = await call(c, "tool_search", {"query": "anything"})
        evil = [u for u in env["data"]["unavailable"] if u["server"] == "evil"]
        assert evil and "policy refuses" in evil[0]["why"], env


@pytest.mark.parametrize("mode", MODES)
async def test_direct_tools_are_listed_and_called_by_name(whalebox_bin, workspace, tmp_path, mode):
    profile = upstream_profile(tmp_path, {
        "db": ([], 'defer = false\nenabled_tools = ["query_database", "post_message"]'),
        "gh": ([], ""),
    })
    async with profile_client(whalebox_bin, workspace, profile, mode) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert {"mcp__db__query_database", "mcp__db__post_message"} <= set(tools)
        assert not any(n.startswith("mcp__gh__") for n in tools), "deferred tools are not listed"
        assert tools["mcp__db__query_database"].input_schema["required"] == ["sql"]
        again = {t.name for t in (await c.list_tools()).tools}
        assert again == set(tools), "tools/list does not change"
        env = await call(c, "mcp__db__query_database", {"sql": "select 1"})
        assert env["ok"] and env["text"].startswith("id,name"), env
        # A deferred tool may be called by its qualified name too.
        env = await call(c, "mcp__gh__get_branch", {"repository": "o/r", "query": "main"})
        assert env["ok"] and env["text"] == "get branch in o/r (main)", env
        # Direct servers are not in tool_search's catalog.
        env = await call(c, "tool_search", {"query": "database query"})
        assert not any(t["name"].startswith("mcp__db__") for t in env["data"]["tools"]), env


async def test_a_changed_tool_list_rebuilds_the_catalog(whalebox_bin, workspace, tmp_path):
    profile = upstream_profile(tmp_path, {"gh": ([], "")})
    async with profile_client(whalebox_bin, workspace, profile, "legacy") as c:
        env = await call(c, "tool_search", {"query": "select:mcp__gh__zebra_finder"})
        assert env["data"]["tools"] == []
        env = await call(c, "call_tool", {"name": "mcp__gh__add_tool", "arguments": {"name": "zebra_finder"}})
        assert env["ok"], env
        import anyio
        for _ in range(50):
            env = await call(c, "tool_search", {"query": "zebra"})
            if env["data"]["tools"]:
                break
            await anyio.sleep(0.1)
        assert [t["name"] for t in env["data"]["tools"]] == ["mcp__gh__zebra_finder"], env
        env = await call(c, "call_tool", {"name": "mcp__gh__zebra_finder", "arguments": {}})
        assert env["text"] == "zebra_finder answers", env


def test_the_cli_calls_upstream_tools(whalebox_bin, workspace, tmp_path):
    import subprocess

    profile = upstream_profile(tmp_path, {"gh": ([], "")})
    out = subprocess.run([whalebox_bin, "call", "call_tool", "--profile", str(profile),
                          "--workspace", str(workspace), "--args",
                          json.dumps({"name": "mcp__gh__list_label", "arguments": {"repository": "o/r"}})],
                         capture_output=True, text=True, start_new_session=True, timeout=60,
                         env={"PATH": os.environ["PATH"], "HOME": str(workspace.parent)})
    env = json.loads(out.stdout)
    assert out.returncode == 0 and env["text"] == "list label in o/r ()", out.stdout + out.stderr


@pytest.mark.parametrize("mode", MODES)
async def test_progress_passes_through(whalebox_bin, workspace, tmp_path, mode):
    from test_mcp import envelope

    profile = upstream_profile(tmp_path, {"gh": ([], "")})
    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, total, message))

    async with profile_client(whalebox_bin, workspace, profile, mode) as c:
        result = await c.call_tool("call_tool", {"name": "mcp__gh__count_slowly", "arguments": {"n": 3}},
                                   progress_callback=on_progress)
        assert envelope(result)["text"] == "counted to 3"
        assert [(p, t) for p, t, _ in seen] == [(1, 3), (2, 3), (3, 3)], seen
        assert seen[-1][2] == "step 3"
