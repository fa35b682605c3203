"""Run the real Claude Code and Codex CLI, headless, against whalebox and a scripted model.

Each run gets a fresh HOME (and CODEX_HOME), whalebox configured as an MCP server the way the
manual shows, the model server of model.py as its API *and* its proxy, a timeout, and its own
process group. The result is a Transcript: what each client handed the model as each tool's
result, every model request body, any host the client tried to reach besides 127.0.0.1, and
the client's own output.

Environment:
  WHALEBOX_BIN  the whalebox binary (default: target/debug/whalebox of this repo)
  CLIENTS_BIN   directory holding `claude` and `codex` (default: target/clients/node_modules/.bin,
                where tests/clients/install.sh puts them)
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import shutil
import signal
import subprocess
import tempfile
import threading
from typing import Any

try:  # imported as part of the tests package or as a plain module
    from .model import MODEL, SERVER, ModelServer, Request, ToolResult
except ImportError:
    from model import MODEL, SERVER, ModelServer, Request, ToolResult

REPO = pathlib.Path(__file__).resolve().parents[2]
PROMPT = "Follow the scripted steps."
TIMEOUT = 120.0  # seconds per client run


def whalebox_bin() -> str:
    return os.environ.get("WHALEBOX_BIN") or str(REPO / "target" / "debug" / "whalebox")


def clients_bin() -> pathlib.Path:
    return pathlib.Path(
        os.environ.get("CLIENTS_BIN") or REPO / "target" / "clients" / "node_modules" / ".bin"
    )


def client_path(name: str) -> pathlib.Path | None:
    """The client's executable, or None when it is not installed."""
    path = clients_bin() / name
    return path if os.access(path, os.X_OK) else None


@dataclasses.dataclass
class Transcript:
    client: str
    tool_results: list[ToolResult]  # in the order the client sent them to the model
    requests: list[Request]  # every request the model server got, in order
    stray_hosts: list[str]  # hosts the client tried to reach through the proxy (refused)
    stdout: str
    stderr: str
    returncode: int | None  # None: killed after the timeout
    home: pathlib.Path  # the run's HOME (Claude Code spills big results under it)

    @property
    def model_requests(self) -> list[Request]:
        """The agent-loop requests (those answered from the script)."""
        return [r for r in self.requests if r.kind == "main"]

    def dump(self) -> str:
        """Everything, human-readable, for a failing test's message or a probe's log."""
        out = [f"=== {self.client}: exit {self.returncode}, stray hosts {self.stray_hosts}"]
        for r in self.tool_results:
            out.append(f"--- tool result {r.call_id} {r.tool} {json.dumps(r.args)} "
                       f"is_error={r.is_error}\n{json.dumps(r.raw, indent=1, ensure_ascii=False)}")
        for i, r in enumerate(self.requests):
            out.append(f"--- request {i} {r.method} {r.path} kind={r.kind} step={r.step}\n"
                       + json.dumps(r.body, indent=1, ensure_ascii=False))
        out.append(f"--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}")
        return "\n".join(out)


def _base_env(home: pathlib.Path, server: ModelServer) -> dict[str, str]:
    # Built from scratch, not inherited: the developer's own API keys, proxies and client
    # settings must not leak into a run, and a fresh HOME keeps their config out.
    proxy = server.url
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "USER": os.environ.get("USER", "test"),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "TMPDIR": str(home / "tmp"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        # Everything not for 127.0.0.1 goes to the model server, which refuses and records it.
        "HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "ALL_PROXY": proxy,
        "http_proxy": proxy, "https_proxy": proxy, "all_proxy": proxy,
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
    }


def _entry(base: dict, overrides: dict | None) -> dict:
    """`base` with `overrides` applied; an override of None removes the key."""
    entry = dict(base)
    for key, value in (overrides or {}).items():
        if value is None:
            entry.pop(key, None)
        else:
            entry[key] = value
    return entry


def _run(client: str, argv: list[str], cwd: pathlib.Path, env: dict, server: ModelServer,
         home: pathlib.Path, timeout: float) -> Transcript:
    # Own session = own process group, so a hung client and whatever it started (whalebox,
    # its shells) can be ended together without touching anything else on the machine.
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        # Clients may start MCP servers in sessions of their own (Codex does), out of reach
        # of killpg: note the whole tree by parent pid while it is still linked to the client.
        tree = _descendants(proc.pid)
        os.killpg(proc.pid, signal.SIGKILL)
        for pid in tree:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            stdout, stderr = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            # Something that left the group (a shell task in its own session) still holds
            # the pipes; give up on the rest of the output rather than hang the test.
            proc.wait()
            stdout, stderr = b"", b"(output lost: pipes held open after the timeout kill)"
        code = None
    finally:
        # The client has exited; anything left in its group (an MCP server it did not reap)
        # was started by this run and goes too.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return Transcript(client, list(server.tool_results), list(server.requests),
                      list(server.stray_hosts), stdout.decode("utf-8", "replace"),
                      stderr.decode("utf-8", "replace"), code, home)


def _descendants(root: int) -> list[int]:
    """Pids of every live descendant of `root` (from /proc; empty where there is none)."""
    children: dict[int, list[int]] = {}
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # comm may hold spaces and parentheses: the fields after the last ")" are fixed.
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _home(tmp: pathlib.Path | None) -> pathlib.Path:
    home = pathlib.Path(tempfile.mkdtemp(prefix="home-", dir=tmp))
    (home / "tmp").mkdir()
    return home


def run_claude(workspace: pathlib.Path, script: list, *, server_entry: dict | None = None,
               extra_args: list[str] = (), env: dict | None = None,
               prompt: str = PROMPT, timeout: float = TIMEOUT,
               tmp: pathlib.Path | None = None, command: list[str] | None = None) -> Transcript:
    """Run `claude -p` in `workspace` with whalebox as its only MCP server.

    server_entry: keys applied over the manual's entry (docs/src/setup/clients.md)
      {"type": "stdio", "command": WHALEBOX_BIN, "args": ["serve"], "alwaysLoad": true};
      a value of None removes a key (e.g. {"alwaysLoad": None} to get deferred tools).
    command: the MCP server's command line instead of [WHALEBOX_BIN, "serve"] (probes).
    """
    claude = client_path("claude")
    if claude is None:
        raise FileNotFoundError(f"claude not found in {clients_bin()}")
    home = _home(tmp)
    cmd = command or [whalebox_bin(), "serve"]
    entry = _entry({"type": "stdio", "command": cmd[0], "args": cmd[1:], "alwaysLoad": True},
                   server_entry)
    config = home / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {SERVER: entry}}, indent=2))
    with ModelServer(script) as server:
        run_env = _base_env(home, server) | {
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": "sk-ant-test-not-a-key",
            "ANTHROPIC_MODEL": MODEL,
            "ANTHROPIC_SMALL_FAST_MODEL": MODEL,
            "ANTHROPIC_DEFAULT_HAIKU_MODEL": MODEL,
            # With these it sends nothing but model requests (no telemetry, update checks,
            # error reports, feature flags).
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        } | (env or {})
        argv = [str(claude), "-p", prompt, "--output-format", "stream-json", "--verbose",
                "--mcp-config", str(config), "--strict-mcp-config",
                "--allowedTools", f"mcp__{SERVER}", *extra_args]
        return _run("claude", argv, workspace, run_env, server, home, timeout)


def codex_config(server: ModelServer, entry: dict) -> str:
    """config.toml for one run: the scripted provider, whalebox, and no start-up traffic."""
    lines = [
        f'model = "{MODEL}"',
        'model_provider = "scripted"',
        # Without these three Codex contacts GitHub and its own hosts at start.
        "check_for_update_on_startup = false",
        "",
        "[features]",
        "plugins = false",
        "",
        "[analytics]",
        "enabled = false",
        "",
        "[model_providers.scripted]",
        'name = "scripted"',
        f'base_url = "{server.url}/v1"',
        'wire_api = "responses"',
        'env_key = "SCRIPTED_API_KEY"',
        "",
        f"[mcp_servers.{SERVER}]",
    ]
    lines += [f"{key} = {_toml(value)}" for key, value in entry.items()]
    return "\n".join(lines) + "\n"


def _toml(value: Any) -> str:
    # JSON strings, numbers, booleans and arrays of them are valid TOML values; tables (an
    # entry's `env`) become inline tables.
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)


def run_codex(workspace: pathlib.Path, script: list, *, server_entry: dict | None = None,
              extra_args: list[str] = (), env: dict | None = None,
              prompt: str = PROMPT, timeout: float = TIMEOUT,
              tmp: pathlib.Path | None = None, command: list[str] | None = None) -> Transcript:
    """Run `codex exec` in `workspace` with whalebox as an MCP server.

    server_entry: keys applied over
      {"command": WHALEBOX_BIN, "args": ["serve"], "default_tools_approval_mode": "approve"}
      (without the approval mode `codex exec` refuses every tool not marked read-only).
    """
    codex = client_path("codex")
    if codex is None:
        raise FileNotFoundError(f"codex not found in {clients_bin()}")
    home = _home(tmp)
    codex_home = home / ".codex"
    codex_home.mkdir()
    cmd = command or [whalebox_bin(), "serve"]
    entry = _entry({"command": cmd[0], "args": cmd[1:],
                    "default_tools_approval_mode": "approve"}, server_entry)
    with ModelServer(script) as server:
        (codex_home / "config.toml").write_text(codex_config(server, entry))
        run_env = _base_env(home, server) | {
            "CODEX_HOME": str(codex_home),
            "SCRIPTED_API_KEY": "test-not-a-key",
        } | (env or {})
        argv = [str(codex), "exec", "--skip-git-repo-check", "--json", "-C", str(workspace),
                *extra_args, prompt]
        return _run("codex", argv, workspace, run_env, server, home, timeout)


class HttpWhalebox:
    """`whalebox serve --http 127.0.0.1:0` on `workspace`, started by the test (not by a
    client), with bearer tokens from a tokens file when `tokens` ({NAME: TOKEN}) is given.
    Use as a context manager; `url` is its `/mcp` endpoint, `log` what it wrote on stderr.

    The tokens file lives outside the workspace. The server reads it after entering its
    Landlock fences, so the profile names it in `[landlock] ro` too (without that it
    fails at start: "tokens file …: Permission denied").
    """

    START_TIMEOUT = 30.0

    def __init__(self, workspace: pathlib.Path, *, tokens: dict[str, str] | None = None,
                 tmp: pathlib.Path | None = None, profile: str = "",
                 extra_args: list[str] = ()):
        self.home = _home(tmp)
        lines = ["[http]"]
        ro = ["~/.gitconfig", "~/.config/git"]
        if tokens is not None:
            tokens_file = self.home / "tokens"
            tokens_file.write_text("".join(f"{n}:{t}\n" for n, t in tokens.items()))
            tokens_file.chmod(0o600)
            lines.append(f"tokens_file = {json.dumps(str(tokens_file))}")
            ro.append(str(tokens_file))
        lines += ["", "[landlock]", f"ro = {_toml(ro)}", "", profile]
        self.profile = self.home / "profile.toml"
        self.profile.write_text("\n".join(lines) + "\n")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "USER": os.environ.get("USER", "test"),
            "LANG": "C.UTF-8",
            "TMPDIR": str(self.home / "tmp"),
            "RUST_LOG": "info",
        }
        argv = [whalebox_bin(), "serve", "--http", "127.0.0.1:0", "--workspace", str(workspace),
                "--profile", str(self.profile), *extra_args]
        self._log: list[str] = []
        self._listening = threading.Event()
        self.url = ""
        # Own session, so the server and whatever it started end together (by its id).
        self.proc = subprocess.Popen(argv, cwd=workspace, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     start_new_session=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._listening.wait(self.START_TIMEOUT) or not self.url:
            self.close()
            raise RuntimeError(f"whalebox serve --http did not start:\n{self.log}")

    def _read(self) -> None:
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace")
            self._log.append(line)
            if not self.url and "listening on http://" in line:
                self.url = line.split("listening on ", 1)[1].split()[0]
                self._listening.set()
        self._listening.set()  # exited: stop waiting

    @property
    def log(self) -> str:
        return "".join(self._log)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: the server's own graceful stop
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self._reader.join(timeout=5)

    def __enter__(self) -> "HttpWhalebox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def installed() -> dict[str, pathlib.Path | None]:
    return {name: client_path(name) for name in ("claude", "codex")}


def node_available() -> bool:
    # Codex's npm entry point is a Node script.
    return shutil.which("node") is not None
