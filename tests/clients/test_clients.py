"""What the model reads when whalebox serves the real clients (Claude Code, Codex CLI), each
driven headless by a scripted model on 127.0.0.1 (harness.py, model.py), with whalebox set up
as the manual says (docs/src/setup/): whalebox's own text, an error's code at its head, limits the client does
not cut or spill, and nothing sent off this machine."""

import json
import pathlib
import re

import pytest

SETUP = pathlib.Path(__file__).resolve().parents[2] / "docs" / "src" / "setup"
ZSH = pathlib.Path(__file__).resolve().parents[2] / "target" / "zsh" / "bin" / "zsh"


def ok_run(t):
    assert t.returncode == 0, t.dump()
    assert t.stray_hosts == [], t.dump()
    return t


def no_envelope(text: str):
    """The text is whalebox's text, not a JSON envelope around it."""
    assert '"repairs"' not in text and '"code":' not in text, text
    assert "whalebox/envelope" not in text, text


def result_text(client: str, result) -> str:
    """The tool's own text: Codex puts `Wall time: …\nOutput:` before it."""
    text = result.text
    if client == "codex":
        assert text.startswith("Wall time: "), text
        text = text.split("Output:\n", 1)[1] if "Output:\n" in text else text.split("Output:", 1)[1]
    return text


def test_read_and_a_fuzzy_edit_reach_the_model_as_text(client, workspace):
    name, run = client
    script = [
        [{"tool": "read_file", "args": {"file_path": "src/main.rs"}}],
        # Indented with a tab where the file has four spaces: found, as the only near match.
        [{"tool": "edit", "args": {"file_path": "src/main.rs",
                                   "search": 'fn main() {\n\tprintln!("hello");\n}',
                                   "replace": 'fn main() {\n\tprintln!("hello, world");\n}'}}],
        "Done.",
    ]
    t = ok_run(run(workspace, script))
    read, edit = t.tool_results
    text = result_text(name, read)
    assert text.startswith("     1\tfn main() {\n     2\t    println!(\"hello\");\n"), t.dump()
    no_envelope(text)
    text = result_text(name, edit)
    no_envelope(text)
    assert "exact match" not in text and 'println!("hello, world");' in text, t.dump()
    assert edit.is_error in (None, False), t.dump()
    assert 'println!("hello, world");' in (workspace / "src" / "main.rs").read_text()


def test_an_edit_error_shows_its_code_first(client, workspace):
    name, run = client
    script = [[{"tool": "edit", "args": {"file_path": "README.md", "search": "no such text",
                                         "replace": "x"}}], "Done."]
    t = ok_run(run(workspace, script))
    (edit,) = t.tool_results
    text = result_text(name, edit)
    assert text.startswith("search_not_found: search text not found in README.md"), t.dump()
    assert "\nNext step: " in text, t.dump()
    no_envelope(text)
    if name == "claude":
        assert edit.is_error is True, t.dump()
    assert (workspace / "README.md").read_text() == "# demo\nSecond line\n", "nothing changed"


def test_a_large_result_is_cut_by_whalebox_not_by_the_client(client, workspace):
    """A 60,000-character file: whalebox pages it below the client's own limits (Codex cuts at
    about 12,000 characters in the middle; Claude Code spills above 50,000 to a file), so the
    model reads whalebox's page and its footer, never the client's marker or a file path."""
    name, run = client
    (workspace / "big.txt").write_text("".join(f"line {i:05} " + "x" * 38 + "\n" for i in range(1, 1201)))
    script = [[{"tool": "read_file", "args": {"file_path": "big.txt"}}], "Done."]
    t = ok_run(run(workspace, script))
    text = result_text(name, t.tool_results[0])
    assert "tokens truncated" not in text and "persisted-output" not in text, t.dump()
    assert "saved to" not in text.lower(), t.dump()
    assert text.startswith("     1\tline 00001 "), t.dump()
    # whalebox's own footer says where to go on.
    assert re.search(r"offset=\d+", text), text[-500:]
    limit = 9_000 if name == "codex" else 30_000
    assert len(text) <= limit, len(text)


def test_claude_codes_own_limits_are_followed(claude, workspace):
    """Claude Code starts whalebox with its environment: MAX_MCP_OUTPUT_TOKENS and
    MCP_TOOL_TIMEOUT, when set, lower the result cap (3 characters a token) and the longest
    wait (10 s under the timeout), and the tools' descriptions say so."""
    (workspace / "big.txt").write_text("".join(f"line {i:05} " + "x" * 38 + "\n" for i in range(1, 1201)))
    script = [[{"tool": "read_file", "args": {"file_path": "big.txt"}}], "Done."]
    t = ok_run(claude(workspace, script, env={"MAX_MCP_OUTPUT_TOKENS": "3000", "MCP_TOOL_TIMEOUT": "40000"}))
    text = t.tool_results[0].text
    assert len(text) <= 9_000 and re.search(r"offset=\d+", text), t.dump()
    assert "persisted-output" not in text and "exceeds maximum allowed tokens" not in text, t.dump()
    tools = {x["name"]: x for x in t.model_requests[0].body["tools"]}
    assert "at most 30000" in tools["mcp__whalebox__shell_run"]["description"], t.dump()


def test_a_long_command_answers_with_a_task_and_its_wait(client, workspace):
    name, run = client
    script = [
        [{"tool": "shell_run", "args": {"command": "sleep 2; echo finished-now",
                                        "yield_time_ms": 300}}],
        lambda results: [{"tool": "shell_wait", "args": {
            "task_id": re.search(r"task (t[0-9a-f]+)", results[0].text).group(1),
            "timeout_ms": 20000}}],
        "Done.",
    ]
    t = ok_run(run(workspace, script))
    started, waited = (result_text(name, r) for r in t.tool_results)
    assert started.startswith("[still running · task t"), t.dump()
    no_envelope(started)
    assert waited.startswith("finished-now\n[exit 0 · "), t.dump()


@pytest.mark.skipif(not ZSH.exists(), reason=f"the gated zsh is missing at {ZSH}: nix/zsh/build.sh builds it (tests/run does)")
def test_a_denied_exec_shows_denied_by_policy(client, workspace, tmp_path):
    name, run = client
    (tmp_path / "policy.toml").write_text(
        'version = 1\ndefault = "allow"\n'
        '[[rule]]\npattern = ["rm"]\ndecision = "deny"\njustification = "no rm here"\n'
    )
    profile = tmp_path / "profile.toml"
    profile.write_text(f'policy = "policy.toml"\n[shell]\nexec_boundary = "required"\nzsh = "{ZSH}"\n')
    (workspace / "keep.txt").write_text("kept\n")
    script = [[{"tool": "shell_run", "args": {"command": "rm keep.txt"}}], "Done."]
    t = ok_run(run(workspace, script, server_entry={"args": ["serve", "--profile", str(profile)]}))
    text = result_text(name, t.tool_results[0])
    assert text.startswith("denied_by_policy: "), t.dump()
    assert "no rm here" in text, t.dump()
    assert (workspace / "keep.txt").exists()


def test_a_question_in_a_headless_run_reads_as_nobody_answering(client, workspace):
    """claude -p cancels and codex exec declines every question at once: the model is told
    no one answered, not that the person refused."""
    name, run = client
    script = [[{"tool": "request_user_input", "args": {"question": "Ship it?", "options": ["yes", "no"]}}],
              "Done."]
    t = ok_run(run(workspace, script))
    text = result_text(name, t.tool_results[0])
    assert text.startswith("unsupported: no one answered: the client "), t.dump()
    assert "declined to answer" not in text and "dismissed" not in text, t.dump()
    assert "Ship it? (yes / no)" in text, t.dump()


def test_what_the_client_offers_the_model(client, workspace):
    """Claude Code loads whalebox's tools up front from the tools' own hint, with no
    `alwaysLoad` in the entry; both clients get short instructions without whitespace runs."""
    name, run = client
    script = [[{"tool": "read_file", "args": {"file_path": "README.md"}}], "Done."]
    entry = {"alwaysLoad": None} if name == "claude" else None
    t = ok_run(run(workspace, script, server_entry=entry))
    first = t.model_requests[0].body
    blob = json.dumps(first)
    if name == "claude":
        names = {x["name"] for x in first["tools"]}
        assert "mcp__whalebox__read_file" in names and "mcp__whalebox__shell_run" in names, sorted(names)
        system = json.dumps(first.get("system", "")) + json.dumps(first["messages"])
        assert "## whalebox" in system
    else:
        spaces = [x for x in first["tools"] if x.get("name") == "mcp__whalebox"]
        assert len(spaces) == 1 and len(spaces[0]["tools"]) >= 19, blob[:2000]
        instructions = spaces[0]["description"]
        assert "starts with its code" in instructions
        assert len(instructions) < 700, instructions
    assert not re.search(r"Tools for the workspace[^\"]*  ", blob), "no whitespace runs in the instructions"


def test_the_manual_headless_forms_are_the_ones_tested():
    """The manual's CI forms (headless.md) carry what the harness runs with: Claude Code's
    permission for whalebox's tools, Codex's approval of them; claude-code-and-codex.md names
    the versions tested."""
    text = (SETUP / "headless.md").read_text()
    section = text.split("<!-- headless:begin -->")[1].split("<!-- headless:end -->")[0]
    assert "--allowedTools mcp__whalebox" in section
    assert "--strict-mcp-config" in section
    assert 'default_tools_approval_mode = "approve"' in section
    assert "codex exec" in section
    versions = json.loads((pathlib.Path(__file__).parent / "package.json").read_text())["dependencies"]
    for package, version in versions.items():
        assert f"{package}@{version}" in (SETUP / "claude-code-and-codex.md").read_text(), (
            f"the manual names the tested {package} version"
        )
