"""The manual's client snippets (docs/src/setup/clients.md, between `<!-- clients:begin -->` and `<!-- clients:end -->`),
each parsed the way its client reads it and its command line started, as that client would
start it, through a real MCP `initialize` and `tools/list` with the real Python client.

How each client starts a stdio server (see that chapter's table): Claude Code, Codex and Goose
start it in the directory they run in (the workspace here) and have no workspace variable;
Cursor and VS Code resolve `${workspaceFolder}`. Those two are started from an unrelated
directory, so the snippet itself must name the workspace.

Plain forms run `whalebox` as the built binary (WHALEBOX_BIN; only the program is substituted).
`nix run` forms run when WHALEBOX_NIX_RUN holds a `nix run …` prefix that replaces
`nix run github:whalebox/whalebox` (tests/nix/run sets it); otherwise they are parsed and
checked, then skipped."""

import dataclasses
import json
import os
import pathlib
import re
import shlex
import tomllib

import pytest
import yaml
from mcp import Client, StdioServerParameters

# The README shows one of these per client; tests/docs.rs checks each is one of these, verbatim.
CLIENTS = pathlib.Path(__file__).resolve().parents[2] / "docs/src/setup/clients.md"
NAME = "docs/src/setup/clients.md"
BEGIN, END = "<!-- clients:begin -->", "<!-- clients:end -->"
NIX_FLAKE = ["nix", "run", "github:whalebox/whalebox"]
# Each client, the snippet languages it has; every one in both forms, exactly once.
EXPECTED = {
    "Claude Code": {"sh", "json"},
    "Codex": {"toml"},
    "Cursor": {"json"},
    "Goose": {"yaml"},
    "VS Code": {"json"},
}
FORMS = ("plain", "nix")
TOOLS = {
    "read_file", "list_dir", "load_skill", "grep", "search_files", "edit", "multi_edit",
    "write", "shell_run", "shell_wait", "write_stdin", "shell_cancel", "update_plan",
    "todo_add", "todo_list", "todo_update", "todo_remove", "todo_clear_completed",
    "request_user_input", "checkpoint_list", "checkpoint_diff", "checkpoint_restore",
}
MARKER = "served from the workspace\n"

# Keys each client accepts on a stdio entry (a typo is an error here, as it is in Codex, which
# rejects unknown keys).
CLAUDE_KEYS = {"type", "command", "args", "env", "alwaysLoad"}
CODEX_KEYS = {
    "command", "args", "env", "env_vars", "cwd", "enabled", "required", "startup_timeout_sec",
    "tool_timeout_sec", "enabled_tools", "disabled_tools",
}
CURSOR_KEYS = {"type", "command", "args", "env", "envFile"}
GOOSE_KEYS = {
    "type", "name", "description", "cmd", "args", "envs", "env_keys", "timeout", "bundled",
    "available_tools", "enabled",
}
VSCODE_KEYS = {"type", "command", "args", "env", "envFile", "cwd"}


@dataclasses.dataclass
class Snippet:
    client: str
    lang: str
    text: str
    line: int  # where it starts in CLIENTS

    @property
    def form(self) -> str:
        return "nix" if "github:whalebox/whalebox" in self.text else "plain"

    @property
    def id(self) -> str:
        return f"{self.client}-{self.lang}-{self.form}".replace(" ", "_")

    def where(self) -> str:
        return f"{NAME}:{self.line} ({self.client}, {self.lang}, {self.form})"


@dataclasses.dataclass
class Launch:
    """A stdio server as the client would start it."""

    command: str
    args: list
    env: dict
    cwd: str  # "workspace", "elsewhere", or an absolute path from the snippet
    workspace_variable: bool  # the client resolves ${workspaceFolder}


def extract(text: str) -> list:
    """Every snippet between the markers: each fenced block, and each command line of an sh block,
    attributed to the client named by the last `**Client**` paragraph before it."""
    assert text.count(BEGIN) == 1 and text.count(END) == 1, f"{NAME} needs one {BEGIN} and one {END}"
    first = text[: text.index(BEGIN)].count("\n") + 1
    lines = text[text.index(BEGIN) : text.index(END)].split("\n")
    snippets, client, fence = [], None, None
    for i, line in enumerate(lines):
        lineno = first + i
        if fence is None:
            named = re.match(r"\*\*(.+?)\*\*", line)
            if named:
                client = named.group(1)
                assert client in EXPECTED, f"{NAME}:{lineno}: unknown client {client!r}"
            if line.startswith("```"):
                # The info string's first word; the rest are markers (`client`: CONTRIBUTING.md).
                lang = (line[3:].split() or [""])[0]
                assert lang in {"sh", "json", "toml", "yaml"}, f"{NAME}:{lineno}: code block language {lang!r}"
                assert client, f"{NAME}:{lineno}: code block before any **Client** paragraph"
                fence = (lang, lineno, [])
        elif line.startswith("```"):
            lang, start, body = fence
            fence = None
            if lang == "sh":
                joined = "\n".join(body).replace("\\\n", " ")
                for offset, command in enumerate(joined.split("\n")):
                    if command.strip() and not command.lstrip().startswith("#"):
                        snippets.append(Snippet(client, lang, command, start + 1 + offset))
            else:
                snippets.append(Snippet(client, lang, "\n".join(body), start + 1))
        else:
            fence[2].append(line)
    assert fence is None, f"{NAME}:{fence[1]}: code block never closed"
    return snippets


SNIPPETS = extract(CLIENTS.read_text())


def entry(data, *path):
    for key in path:
        assert isinstance(data, dict) and key in data, f"no {'.'.join(path)}"
        data = data[key]
    assert isinstance(data, dict), f"{'.'.join(path)} is not a table/object"
    return data


def strings(value, what) -> list:
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), f"{what} must be a list of strings"
    return value


def string_map(value, what) -> dict:
    value = value or {}
    assert isinstance(value, dict) and all(isinstance(v, str) for v in value.values()), f"{what} must map names to strings"
    return dict(value)


def known(server: dict, keys: set, client: str):
    unknown = set(server) - keys
    assert not unknown, f"{client} has no key(s) {sorted(unknown)}"


def parse(snippet: Snippet) -> Launch:
    """The snippet as its client reads it."""
    client, text = snippet.client, snippet.text
    if client == "Claude Code" and snippet.lang == "sh":
        argv = shlex.split(text)
        assert argv[:3] == ["claude", "mcp", "add"], "expected `claude mcp add …`"
        assert "--" in argv, "`claude mcp add` needs `--` before the server's command line"
        split = argv.index("--")
        options, command = argv[3:split], argv[split + 1 :]
        env, names, it = {}, [], iter(options)
        for option in it:
            if option in ("-s", "--scope"):
                assert next(it, None) in ("local", "project", "user"), "scope is local, project or user"
            elif option in ("-t", "--transport"):
                assert next(it, None) == "stdio", "whalebox serves stdio"
            elif option in ("-e", "--env"):
                name, _, value = next(it, "").partition("=")
                assert name, "--env takes NAME=value"
                env[name] = value
            else:
                assert not option.startswith("-"), f"unknown option {option}"
                names.append(option)
        assert names == ["whalebox"], f"server name {names}"
        assert command, "no command after `--`"
        return Launch(command[0], command[1:], env, "workspace", False)
    if snippet.lang == "json":
        data = json.loads(text)
        if client == "Claude Code":
            server = entry(data, "mcpServers", "whalebox")
            known(server, CLAUDE_KEYS, client)
            assert server.get("type", "stdio") == "stdio"
            assert server.get("alwaysLoad") is True, "alwaysLoad keeps whalebox's tools out of tool search"
            cwd, variables = "workspace", False
        elif client == "Cursor":
            server = entry(data, "mcpServers", "whalebox")
            known(server, CURSOR_KEYS, client)
            assert server.get("type", "stdio") == "stdio"
            cwd, variables = "elsewhere", True
        elif client == "VS Code":
            server = entry(data, "servers", "whalebox")
            known(server, VSCODE_KEYS, client)
            assert server.get("type") == "stdio", 'VS Code needs "type": "stdio"'
            cwd, variables = server.get("cwd", "elsewhere"), True
        else:
            raise AssertionError(f"{client} has no JSON snippet")
        assert isinstance(server.get("command"), str), "command must be a string"
        args = strings(server.get("args", []), "args")
        return Launch(server["command"], args, string_map(server.get("env"), "env"), cwd, variables)
    if snippet.lang == "toml":
        assert client == "Codex", f"{client} has no TOML snippet"
        server = entry(tomllib.loads(text), "mcp_servers", "whalebox")
        known(server, CODEX_KEYS, client)
        assert isinstance(server.get("command"), str), "command must be a string"
        for key in ("startup_timeout_sec", "tool_timeout_sec"):
            assert isinstance(server.get(key, 1), (int, float)), f"{key} is a number of seconds"
        args = strings(server.get("args", []), "args")
        return Launch(server["command"], args, string_map(server.get("env"), "env"), server.get("cwd", "workspace"), False)
    if snippet.lang == "yaml":
        assert client == "Goose", f"{client} has no YAML snippet"
        server = entry(yaml.safe_load(text), "extensions", "whalebox")
        known(server, GOOSE_KEYS, client)
        assert server.get("type") == "stdio", "type: stdio"
        assert server.get("name") == "whalebox", "goose keys the extension by its name"
        assert server.get("enabled") is True, "enabled: true"
        assert isinstance(server.get("cmd"), str), "cmd must be a string"
        assert "args" in server, "goose requires args"
        assert isinstance(server.get("timeout", 1), int), "timeout is whole seconds"
        return Launch(server["cmd"], strings(server["args"], "args"), string_map(server.get("envs"), "envs"), "workspace", False)
    raise AssertionError(f"no parser for {client} {snippet.lang}")


def whalebox_args(launch: Launch, form: str) -> list:
    """What the snippet passes to whalebox itself."""
    if form == "nix":
        assert [launch.command, *launch.args[:2]] == NIX_FLAKE, "the nix form runs `nix run github:whalebox/whalebox`"
        assert launch.args[2:3] == ["--"], "`--` before whalebox's arguments"
        args = launch.args[3:]
    else:
        assert launch.command == "whalebox" or launch.command.endswith("/whalebox"), "the plain form runs `whalebox`"
        args = launch.args
    assert args[:1] == ["serve"], "whalebox serve"
    return args


def test_every_client_has_each_snippet_in_both_forms():
    seen = {}
    for s in SNIPPETS:
        seen.setdefault((s.client, s.lang, s.form), []).append(s.line)
    expected = {(c, lang, form) for c, langs in EXPECTED.items() for lang in langs for form in FORMS}
    assert set(seen) == expected, f"missing {sorted(expected - set(seen))}, unexpected {sorted(set(seen) - expected)}"
    twice = {k: v for k, v in seen.items() if len(v) > 1}
    assert not twice, f"more than one snippet for {twice}"
    # Both forms of a snippet give whalebox the same arguments.
    by_key = {(s.client, s.lang, s.form): s for s in SNIPPETS}
    for client, langs in EXPECTED.items():
        for lang in langs:
            plain, nix = (by_key[(client, lang, f)] for f in FORMS)
            assert whalebox_args(parse(plain), "plain") == whalebox_args(parse(nix), "nix"), (
                f"{plain.where()} and {nix.where()} pass whalebox different arguments"
            )


@pytest.mark.anyio
@pytest.mark.parametrize("snippet", SNIPPETS, ids=[s.id for s in SNIPPETS])
async def test_snippet_starts_whalebox_to_initialize(snippet, whalebox_bin, tmp_path):
    try:
        launch = parse(snippet)
        whalebox_args(launch, snippet.form)
    except Exception as e:
        pytest.fail(f"{snippet.where()}: {type(e).__name__}: {e}\n{snippet.text}")

    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "MARKER.txt").write_text(MARKER)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "MARKER.txt").write_text("the wrong directory\n")

    if snippet.form == "nix":
        prefix = os.environ.get("WHALEBOX_NIX_RUN")
        if not prefix:
            pytest.skip("`nix run` forms run under tests/nix/run, which sets WHALEBOX_NIX_RUN")
        prefix = shlex.split(prefix)
        # `nix run github:whalebox/whalebox` becomes the prefix; `-- serve …` stays as written.
        command, args = prefix[0], prefix[1:] + launch.args[2:]
        env = dict(os.environ)  # nix needs its own settings (store, config) from the caller
        timeout = 600  # the first run may evaluate and build
    else:
        command, args = whalebox_bin, launch.args  # only the program is substituted
        (tmp_path / "home").mkdir()
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path / "home")}
        timeout = 30
    env["RUST_LOG"] = "warn"

    def resolve(value: str) -> str:
        """The client's variables (Cursor, VS Code), and `~`."""
        if launch.workspace_variable:
            value = value.replace("${workspaceFolder}", str(workspace))
            value = value.replace("${userHome}", env.get("HOME", ""))
            value = re.sub(r"\$\{env:(\w+)\}", lambda m: os.environ.get(m.group(1), ""), value)
        if value == "~" or value.startswith("~/"):
            value = env.get("HOME", "") + value[1:]
        return value

    env.update({name: resolve(value) for name, value in launch.env.items()})
    args = [resolve(a) for a in args]
    cwd = {"workspace": workspace, "elsewhere": elsewhere}.get(launch.cwd) or resolve(launch.cwd)
    assert "${" not in " ".join(args), f"{snippet.where()}: a variable this client does not resolve: {args}"

    params = StdioServerParameters(command=command, args=args, env=env, cwd=str(cwd))
    async with Client(params, mode="legacy", read_timeout_seconds=timeout) as c:
        assert c.protocol_version == "2025-11-25", "the initialize handshake"
        assert c.server_info.name == "whalebox"
        listed = {t.name for t in (await c.list_tools()).tools}
        assert listed == TOOLS, f"{snippet.where()}: tools {sorted(listed)}"
        envelope = (await c.call_tool("read_file", {"file_path": "MARKER.txt"})).meta["whalebox/envelope"]
        assert envelope["ok"], envelope["text"]
        assert MARKER.strip() in envelope["text"], f"{snippet.where()}: served the wrong directory: {envelope['text']!r}"
