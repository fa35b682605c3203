"""whalebox driven by the real Python MCP client (PyPI `mcp`) over stdio, in both
protocol lifecycles: the classic `initialize` handshake and 2026-07-28."""

import json
import os
import pathlib
import subprocess

import pytest
from mcp import Client, StdioServerParameters

MODES = ["legacy", "2026-07-28"]
READ_TOOLS = {"read_file", "list_dir", "load_skill", "grep", "search_files", "shell_wait",
              "checkpoint_list", "checkpoint_diff"}
EDIT_TOOLS = {"edit", "multi_edit", "write", "shell_run", "write_stdin", "shell_cancel",
              "checkpoint_restore"}
# The agent's own state and its line to the person: (read-only, destructive).
SESSION_TOOLS = {
    "update_plan": (False, False), "todo_add": (False, False), "todo_update": (False, False),
    "todo_list": (True, False), "todo_remove": (False, True),
    "todo_clear_completed": (False, True), "request_user_input": (True, False),
}
TOOLS = READ_TOOLS | EDIT_TOOLS | set(SESSION_TOOLS)


def client(binary: str, workspace: pathlib.Path, mode: str) -> Client:
    params = StdioServerParameters(
        command=binary,
        args=["serve", "--workspace", str(workspace)],
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(workspace.parent), "RUST_LOG": "warn"},
    )
    return Client(params, mode=mode, read_timeout_seconds=30)


ENVELOPE_META = "whalebox/envelope"


def envelope(result) -> dict:
    """The envelope every result carries in `_meta`, checked against what the model reads:
    the text as content (an error's led by its code), no structuredContent by default."""
    assert result.structured_content is None, "no structuredContent unless the profile asks"
    env = (result.meta or {}).get(ENVELOPE_META)
    assert env is not None, f"every result carries the envelope in _meta[{ENVELOPE_META!r}]"
    assert set(env) == {"ok", "code", "text", "data", "repairs"}
    shown = env["text"] if env["ok"] else f"{env['code']}: {env['text']}"
    assert result.content[0].text == shown, "content is the envelope's text, an error's led by its code"
    assert result.is_error == (not env["ok"])
    return env


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_lists_tools_with_schemas_and_annotations(whalebox_bin, workspace, mode):
    async with client(whalebox_bin, workspace, mode) as c:
        expected = "2025-11-25" if mode == "legacy" else "2026-07-28"
        assert c.protocol_version == expected
        listed = await c.list_tools()
        tools = {t.name: t for t in listed.tools}
        assert set(tools) == TOOLS
        for tool in tools.values():
            assert tool.input_schema["type"] == "object"
            assert tool.input_schema["additionalProperties"] is False
            assert tool.description
            assert tool.title
            writes = tool.name in EDIT_TOOLS
            read_only, destructive = SESSION_TOOLS.get(tool.name, (not writes, writes))
            assert tool.annotations.read_only_hint is read_only, tool.name
            assert tool.annotations.destructive_hint is destructive, tool.name
            assert tool.annotations.open_world_hint is False
            assert tool.output_schema is None, "no outputSchema unless the profile asks"
            assert tool.meta is None, "no client hints for a client whalebox does not know"
        assert tools["read_file"].input_schema["required"] == ["file_path"]
        assert "release: Cut a release" in tools["load_skill"].description


@pytest.mark.anyio
async def test_structured_output_when_the_profile_asks(whalebox_bin, workspace):
    """`[output] structured = true`: an outputSchema on every tool and the envelope as
    structuredContent too (for clients that show it to no model)."""
    profile = workspace.parent / "structured.toml"
    profile.write_text("[output]\nstructured = true\n")
    params = StdioServerParameters(
        command=whalebox_bin,
        args=["serve", "--workspace", str(workspace), "--profile", str(profile)],
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(workspace.parent), "RUST_LOG": "warn"},
    )
    async with Client(params, mode="legacy", read_timeout_seconds=30) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert tools["edit"].output_schema["required"] == ["ok", "code", "text", "data", "repairs"]
        result = await c.call_tool("edit", {"file_path": "README.md", "search": "absent", "replace": "x"})
        assert result.structured_content == result.meta[ENVELOPE_META]
        assert result.content[0].text.startswith("search_not_found: ")


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_calls_every_tool(whalebox_bin, workspace, mode):
    async with client(whalebox_bin, workspace, mode) as c:
        env = envelope(await c.call_tool("read_file", {"file_path": "README.md"}))
        assert env["ok"] and env["text"] == "     1\t# demo\n     2\tSecond line\n"
        assert env["data"]["encoding"] == "utf-8"

        env = envelope(await c.call_tool("list_dir", {"path": "src"}))
        assert "main.rs" in env["text"] and "lib.rs" in env["text"]

        env = envelope(await c.call_tool("grep", {"pattern": "fn main"}))
        assert env["text"] == "src/main.rs:1:fn main() {\n", "build/ is gitignored"

        env = envelope(await c.call_tool("search_files", {"pattern": "**/*.rs"}))
        assert env["text"] == "src/lib.rs\nsrc/main.rs\n"

        env = envelope(await c.call_tool("load_skill", {"name": "release"}))
        assert env["text"].startswith("# Skill: release\n")
        assert env["text"].endswith("1. Bump the version.\n2. Tag it.\n")


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_bad_calls_are_errors_with_hints_and_the_server_keeps_serving(whalebox_bin, workspace, mode):
    async with client(whalebox_bin, workspace, mode) as c:
        env = envelope(await c.call_tool("read_file", {"path": "README.md"}))
        assert env["code"] == "invalid_input"
        assert "read_file takes the file as `file_path`" in env["text"]
        assert "\nNext step: " in env["text"]

        env = envelope(await c.call_tool("search_files", {"pattern": "*", "include": "*.rs"}))
        assert "search_files has no `include`" in env["text"]

        env = envelope(await c.call_tool("Read", {"file_path": "README.md"}))
        assert env["code"] == "unknown_tool" and "did you mean `read_file`?" in env["text"]

        env = envelope(await c.call_tool("read_file", {"file_path": "../outside.txt"}))
        assert env["code"] == "path_denied" and "secret" not in env["text"]

        env = envelope(await c.call_tool("read_file", {"file_path": "logo.png"}))
        assert env["code"] == "binary_file"

        env = envelope(await c.call_tool("read_file", {"file_path": "src"}))
        assert env["code"] == "is_directory"

        env = envelope(await c.call_tool("grep", {"pattern": "(unclosed"}))
        assert env["code"] == "invalid_input" and "regex" in env["text"]

        # Still serving after all of that.
        env = envelope(await c.call_tool("read_file", {"file_path": "src/lib.rs", "limit": 1}))
        assert env["ok"] and env["text"].startswith("     1\tpub fn answer() -> u32 {\n")


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_repaired_call_succeeds_and_reports_the_repair(whalebox_bin, workspace, mode):
    async with client(whalebox_bin, workspace, mode) as c:
        env = envelope(
            await c.call_tool(
                "read_file",
                {"file_path": "[README.md](http://README.md)", "limit": "1", "offset": None},
            )
        )
        assert env["ok"], env["text"]
        assert env["text"].startswith("     1\t# demo\n")
        kinds = [r["kind"] for r in env["repairs"]]
        assert kinds == ["markdown_autolink_path", "semantic_boolean_string", "null_optional_omitted"]
        assert env["repairs"][0]["field"] == "/file_path"


@pytest.mark.anyio
async def test_auto_mode_discovers_the_modern_lifecycle(whalebox_bin, workspace):
    async with client(whalebox_bin, workspace, "auto") as c:
        assert c.protocol_version == "2026-07-28"
        assert c.server_info.name == "whalebox"
        assert "workspace" in (c.instructions or "")
        env = envelope(await c.call_tool("search_files", {"pattern": "*.md"}))
        assert env["text"] == "README.md\n"


def rpc_session(binary: str, workspace: pathlib.Path, lines: list) -> list:
    """Raw JSON-RPC over the server's stdio; returns the responses by id."""
    proc = subprocess.run(
        [binary, "serve", "--workspace", str(workspace)],
        input="".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(workspace.parent), "RUST_LOG": "warn"},
    )
    responses = {}
    for line in proc.stdout.splitlines():
        msg = json.loads(line)
        if "id" in msg:
            responses[msg["id"]] = msg
    return responses


def test_initialize_2025_06_18_and_arguments_sent_as_a_string(whalebox_bin, workspace):
    responses = rpc_session(
        whalebox_bin,
        workspace,
        [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "raw", "version": "0"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            "this line is not JSON",
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"name": "read_file", "arguments": json.dumps({"file_path": "README.md"})}},
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
             "params": {"name": "grep", "arguments": {"pattern": "answer"}}},
        ],
    )
    init = responses[1]["result"]
    assert init["protocolVersion"] == "2025-06-18"
    assert init["serverInfo"]["name"] == "whalebox"
    assert "tools" in init["capabilities"]
    stringified = responses[2]["result"]
    assert "resultType" not in stringified, "no 2026 fields on a 2025 session"
    assert stringified["isError"] is False
    assert "structuredContent" not in stringified
    assert stringified["_meta"][ENVELOPE_META]["repairs"][0]["kind"] == "stringified_arguments"
    assert responses[3]["result"]["content"][0]["text"] == "src/lib.rs:1:pub fn answer() -> u32 {\n"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_edit_tools_and_stale_protection_within_one_session(whalebox_bin, workspace, mode):
    notes = workspace / "notes.txt"
    async with client(whalebox_bin, workspace, mode) as c:
        env = envelope(await c.call_tool("write", {"file_path": "notes.txt", "content": "one\ntwo\n"}))
        assert env["ok"] and env["text"].startswith("Created notes.txt")

        env = envelope(await c.call_tool("edit", {"file_path": "notes.txt", "search": "two", "replace": "2"}))
        assert env["ok"] and "+2\n" in env["text"]

        # Written by this session: overwriting it is not stale.
        env = envelope(await c.call_tool("write", {"file_path": "notes.txt", "content": "fresh\n"}))
        assert env["ok"], env["text"]

        # Someone else changes it: a blind overwrite is refused, nothing is lost.
        notes.write_text("their change\n")
        env = envelope(await c.call_tool("write", {"file_path": "notes.txt", "content": "mine\n"}))
        assert env["code"] == "stale_file"
        assert notes.read_text() == "their change\n"

        # An edit works on the fresh bytes and says the file moved under it.
        env = envelope(await c.call_tool("edit", {"file_path": "notes.txt", "search": "their", "replace": "our"}))
        assert env["ok"] and "changed on disk since you last read it" in env["text"]
        assert env["data"]["changed_since_read"] is True

        # After reading, writing is fine.
        notes.write_text("again theirs\n")
        envelope(await c.call_tool("read_file", {"file_path": "notes.txt"}))
        env = envelope(await c.call_tool("write", {"file_path": "notes.txt", "content": "mine\n"}))
        assert env["ok"] and notes.read_text() == "mine\n"

        env = envelope(await c.call_tool("multi_edit", {"file_path": "notes.txt", "edits": [
            {"search": "mine", "replace": "step1"},
            {"search": "step1", "replace": "step2"},
        ]}))
        assert env["ok"] and notes.read_text() == "step2\n"

        env = envelope(await c.call_tool("edit", {"file_path": "notes.txt", "search": "absent", "replace": "x"}))
        assert env["code"] == "search_not_found" and "Next step" in env["text"]
