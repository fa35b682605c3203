"""The harness itself: each real client calls whalebox's read_file once, from a scripted
model, and the file's text reaches the model; nothing leaves 127.0.0.1."""


def test_read_file_reaches_the_model(client, workspace):
    name, run = client
    script = [[{"tool": "read_file", "args": {"file_path": "README.md"}}], "All done."]
    t = run(workspace, script)
    assert t.returncode == 0, t.dump()
    assert t.stray_hosts == [], t.dump()
    assert [r.tool for r in t.tool_results] == ["read_file"], t.dump()
    result = t.tool_results[0]
    assert result.is_error in (None, False), t.dump()
    assert "# demo" in result.text and "Second line" in result.text, t.dump()
    # The script ran to its end: the last agent request was answered with the final text.
    assert t.model_requests[-1].step == len(script) - 1, t.dump()


def test_claude_deferred_tools_are_searched_first(claude, workspace, tmp_path):
    """Without "alwaysLoad" (in the entry, or whalebox's tool hints, off with fit_to_client =
    false) Claude Code defers MCP tools behind ToolSearch; the scripted model searches for
    them first (as a model would) and the script still runs unchanged."""
    profile = tmp_path / "unfitted.toml"
    profile.write_text("[output]\nfit_to_client = false\n")
    script = [[{"tool": "read_file", "args": {"file_path": "README.md"}}], "All done."]
    t = claude(workspace, script,
               server_entry={"alwaysLoad": None, "args": ["serve", "--profile", str(profile)]})
    assert t.returncode == 0, t.dump()
    assert t.stray_hosts == [], t.dump()
    first = t.model_requests[0].body
    assert not [x for x in first["tools"] if x["name"].startswith("mcp__whalebox__")], t.dump()
    assert [r.tool for r in t.tool_results] == ["read_file"], t.dump()
    assert "Second line" in t.tool_results[0].text, t.dump()
