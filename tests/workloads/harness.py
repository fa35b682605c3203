"""The workloads suite's machinery: who runs a workload (root, or an unprivileged user),
under which fences (a configuration: bare, or a whalebox profile), and the two runners
that carry out its steps the same way: `Bare` (subprocess, no whalebox: proves the
workload is sound here) and `Fenced` (`whalebox serve` over stdio, driven by the real
Python MCP client, one `shell_run` per step, the way a model works).

A step that fails under whalebox fails the test with everything that says which fence
refused what: the shell_run result's text (whalebox's diagnoses and notes),
`data.exec_boundary`, `data.landlock`, `data.network` (refused, reached), `data.denials`
and the diagnoses, plus the tail of the server's own log."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pathlib
import shutil
import signal
import subprocess
import tempfile
import time
from typing import Any, AsyncIterator

import anyio

ROOT = pathlib.Path(__file__).resolve().parents[2]
PREPARED = ROOT / "target" / "workloads"
ENVELOPE_META = "whalebox/envelope"

# Bare first (the workload is sound), then the fence configurations.
CONFIGS = ["bare", "default", "ptrace", "landlock-net", "enforce"]
USERS = ["root", "nobody"]


@dataclasses.dataclass(frozen=True)
class User:
    name: str
    uid: int
    gid: int

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv` run as this user (root runs it as it is)."""
        if self.uid == 0:
            return argv
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", "--", *argv]


ROOT_USER = User("root", 0, 0)
# The unprivileged user: nobody's ids (the workspace, HOME and caches are chowned to it).
NOBODY = User("nobody", 65534, 65534)


def user_named(name: str) -> User:
    return ROOT_USER if name == "root" else NOBODY


@dataclasses.dataclass
class Needs:
    """What a workload needs from the profile beyond its configuration."""

    host_ports: list[int] = dataclasses.field(default_factory=list)
    publish: list[int] = dataclasses.field(default_factory=list)
    debuggers: bool = False
    # Any other profile lines, by section (`{"network": {"credentials": …}}`): merged
    # over the configuration's own, so a test can only add to what it stands for.
    profile: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    # Raw TOML appended to the profile (tables the flat form cannot say, e.g.
    # `[network.credentials.NAME]`), after the configuration's sections.
    toml: str = ""


def rust_toolchain_bin() -> pathlib.Path | None:
    """The bin directory of the readable toolchain copy prepare made (RUSTUP_HOME layout)."""
    settings = PREPARED / "rustup" / "settings.toml"
    if not settings.exists():
        return None
    for line in settings.read_text().splitlines():
        if line.startswith("default_toolchain"):
            name = line.split("=", 1)[1].strip().strip('"')
            b = PREPARED / "rustup" / "toolchains" / name / "bin"
            return b if (b / "cargo").exists() else None
    return None


def task_path() -> str:
    """PATH for every step, bare or fenced, root or not: the readable Rust toolchain, then
    the system's (git is in /usr/local/bin here). Nothing of root's own ~ (pyenv shims,
    ~/.cargo/bin), which the unprivileged user cannot reach."""
    parts = []
    rust = rust_toolchain_bin()
    if rust:
        parts.append(str(rust))
    parts += ["/usr/local/bin", "/usr/bin", "/bin"]
    return ":".join(parts)


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    raise TypeError(v)


def profile_for(config: str, zsh: str, needs: Needs) -> dict[str, dict[str, Any]]:
    """The profile a configuration stands for: the embedded default, with only the lines
    that reach the gated zsh and the test's loopback services, plus the configuration's."""
    p: dict[str, dict[str, Any]] = {"shell": {"zsh": zsh, "exec_boundary": "required"}}
    network: dict[str, Any] = {}
    if config == "ptrace":
        p["shell"]["exec_gate"] = "ptrace"
    elif config == "landlock-net":
        network["kernel"] = "landlock"
    elif config == "enforce":
        p["landlock"] = {"mode": "enforce"}
        network["mode"] = "enforce"
    elif config != "default":
        raise ValueError(config)
    if needs.debuggers:
        p["shell"]["debuggers"] = True
    if needs.host_ports:
        network["host_ports"] = list(needs.host_ports)
    if needs.publish:
        network["publish"] = list(needs.publish)
    if network:
        p["network"] = network
    for section, keys in needs.profile.items():
        p.setdefault(section, {}).update(keys)
    return p


def render_profile(p: dict[str, dict[str, Any]]) -> str:
    out = ["# written by tests/workloads"]
    for section, keys in p.items():
        out.append(f"[{section}]")
        out += [f"{k} = {toml_value(v)}" for k, v in keys.items()]
    return "\n".join(out) + "\n"


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- results ------------------------------------------------------------------------------


@dataclasses.dataclass
class Result:
    command: str
    exit_code: int | None
    text: str
    duration: float
    data: dict | None = None  # the last envelope's data (fenced runs)
    status: str = "exited"
    where: str = ""  # "bare as root", "whalebox default as nobody"
    server_log: pathlib.Path | None = None

    @property
    def ok(self) -> bool:
        return self.status == "exited" and self.exit_code == 0

    def describe(self, why: str = "") -> str:
        """Everything that says which fence refused what."""
        lines = [f"{why or 'step failed'} ({self.where})", f"$ {self.command}",
                 f"status: {self.status}, exit code: {self.exit_code}, {self.duration:.1f} s",
                 "--- what the model read ---", self.text.rstrip()]
        d = self.data
        if d:
            lines.append("--- fences (data) ---")
            lines.append(f"exec_boundary: {json.dumps(d.get('exec_boundary'))}")
            lines.append(f"landlock: {json.dumps(d.get('landlock'))}")
            net = d.get("network") or {}
            lines.append(f"network.enforcement: {json.dumps(net.get('enforcement'))}")
            lines.append(f"network.refused: {json.dumps(net.get('refused'))}")
            lines.append(f"network.reached: {json.dumps(net.get('reached'))}")
            if d.get("denials"):
                lines.append(f"denials ({d.get('denials_total')}): {json.dumps(d.get('denials'))}")
            if d.get("diagnoses"):
                lines.append(f"diagnoses: {json.dumps(d.get('diagnoses'))}")
            limits = d.get("limits") or {}
            if limits.get("hit"):
                lines.append(f"limits.hit: {json.dumps(limits.get('hit'))}")
        if self.server_log and self.server_log.exists():
            tail = self.server_log.read_text(errors="replace").splitlines()[-15:]
            if tail:
                lines.append("--- whalebox serve's log (tail) ---")
                lines += tail
        return "\n".join(lines)


class StepFailed(AssertionError):
    pass


def check(result: Result, ok: bool, why: str):
    if not ok:
        raise StepFailed(result.describe(why))


# -- the test's private directories ---------------------------------------------------------


class Place:
    """A test's directories, all owned by the user it runs as: the workspace, a second
    workspace (for a second session), HOME, TMPDIR for bare runs, a directory outside
    the workspace, and the server's logs."""

    def __init__(self, top: pathlib.Path, name: str, user: User):
        self.user = user
        self.base = pathlib.Path(tempfile.mkdtemp(prefix=f"{name}-", dir=top))
        self.ws = self.base / "ws"
        self.ws2 = self.base / "ws2"
        self.home = self.base / "home"
        self.tmp = self.base / "tmp"
        self.outside = self.base / "outside"
        self.logs = self.base / "logs"
        for d in (self.ws, self.ws2, self.home, self.tmp, self.outside, self.logs):
            d.mkdir()
        os.chmod(self.base, 0o755)

    def write(self, files: dict[str, str | bytes], into: pathlib.Path | None = None):
        into = into or self.ws
        for rel, content in files.items():
            p = into / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                p.write_bytes(content)
            else:
                p.write_text(content)
            if rel.endswith(".sh") or content_is_script(content):
                p.chmod(0o755)

    def give_away(self):
        """chown everything under the base to the user (a no-op for root)."""
        if self.user.uid != 0:
            subprocess.run(["chown", "-R", f"{self.user.uid}:{self.user.gid}", str(self.base)], check=True)

    def env(self) -> dict[str, str]:
        """The environment whalebox serve (and a bare step) starts with."""
        return {
            "PATH": task_path(),
            "HOME": str(self.home),
            "USER": self.user.name,
            "LOGNAME": self.user.name,
            "LANG": "C.UTF-8",
            # The readable toolchain copy (the rust preset follows RUSTUP_HOME and
            # CARGO_HOME: the task's own CARGO_HOME, in HOME, shares nothing).
            "RUSTUP_HOME": str(PREPARED / "rustup"),
            "CARGO_HOME": str(self.home / ".cargo"),
            "RUST_LOG": "warn",
        }


def content_is_script(content: str | bytes) -> bool:
    head = content[:2]
    return head in ("#!", b"#!")


# -- runners ------------------------------------------------------------------------------


class Runner:
    """What a workload's steps are given. `sh` runs one step (one shell_run under
    whalebox) and, unless `ok=False`, fails the test when it does not exit 0."""

    fenced: bool
    config: str
    user: User
    place: Place
    failures: list[str]

    def url(self, port: int) -> str:
        """The URL of a service on the host's loopback, as the workload's steps and files
        name it (`http://127.0.0.1:PORT`)."""
        return f"http://127.0.0.1:{port}"

    @property
    def where(self) -> str:
        return f"{'whalebox ' + self.config if self.fenced else 'bare'} as {self.user.name}"

    def expect(self, result: Result, ok: bool, why: str):
        """Like `check`, but the workload goes on: every failed expectation is reported
        together when it ends (for probes that are independent of each other)."""
        if not ok:
            self.failures.append(result.describe(why))

    async def sh(self, command: str, *, ok: bool = True, timeout: float = 120,
                 env: dict[str, str] | None = None, why: str = "") -> Result:
        r = await self._run(command, timeout=timeout, env=env)
        if ok:
            check(r, r.ok, why or "the step did not exit 0")
        return r

    async def _run(self, command, *, timeout, env) -> Result:
        raise NotImplementedError

    async def start(self, command: str, env: dict[str, str] | None = None) -> Any:
        """Start a step in the background (shell_run `background: true`)."""
        raise NotImplementedError

    async def wait(self, handle: Any, timeout: float = 60) -> Result:
        """Wait for a background step until it exits (shell_wait)."""
        raise NotImplementedError

    def session(self, ws: pathlib.Path | None = None) -> contextlib.AbstractAsyncContextManager[Runner]:
        """Another session of the same user and configuration (by default on the second
        workspace): under whalebox, a second `whalebox serve`."""
        raise NotImplementedError


BARE_EXTRA_ENV = {
    # What whalebox sets for every command, so bare steps run the same way.
    "PAGER": "cat", "GIT_PAGER": "cat", "NO_COLOR": "1", "TERM": "dumb", "GIT_TERMINAL_PROMPT": "0",
}


class Bare(Runner):
    fenced = False
    config = "bare"

    def __init__(self, user: User, place: Place, ws: pathlib.Path | None = None):
        self.user = user
        self.place = place
        self.ws = ws or place.ws
        self.failures = []
        self._procs: list[subprocess.Popen] = []

    def _env(self, env):
        e = self.place.env() | BARE_EXTRA_ENV | {"TMPDIR": str(self.place.tmp)}
        e.pop("RUST_LOG", None)
        return e | (env or {})

    async def _run(self, command, *, timeout, env) -> Result:
        started = time.monotonic()
        proc = subprocess.Popen(self.user.wrap(["bash", "-c", command]), cwd=self.ws, env=self._env(env),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            out = await anyio.to_thread.run_sync(lambda: proc.communicate(timeout=timeout)[0])
            status = "exited"
        except subprocess.TimeoutExpired:
            kill_group(proc)
            out = proc.communicate()[0]
            status = f"timed out after {timeout} s"
        return Result(command, proc.returncode if status == "exited" else None,
                      out.decode(errors="replace"), time.monotonic() - started, status=status, where=self.where)

    async def start(self, command, env=None):
        log = tempfile.TemporaryFile(dir=self.place.tmp)
        proc = subprocess.Popen(self.user.wrap(["bash", "-c", command]), cwd=self.ws, env=self._env(env),
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        proc._wb_log = log  # type: ignore[attr-defined]
        proc._wb_cmd = command  # type: ignore[attr-defined]
        proc._wb_started = time.monotonic()  # type: ignore[attr-defined]
        self._procs.append(proc)
        return proc

    async def wait(self, handle, timeout=60) -> Result:
        try:
            await anyio.to_thread.run_sync(lambda: handle.wait(timeout=timeout))
            status = "exited"
        except subprocess.TimeoutExpired:
            status = f"still running after {timeout} s"
        handle._wb_log.seek(0)
        out = handle._wb_log.read().decode(errors="replace")
        return Result(handle._wb_cmd, handle.returncode, out, time.monotonic() - handle._wb_started,
                      status=status, where=self.where)

    @contextlib.asynccontextmanager
    async def session(self, ws=None) -> AsyncIterator[Runner]:
        other = Bare(self.user, self.place, ws or self.place.ws2)
        try:
            yield other
        finally:
            other.close()

    def close(self):
        for p in self._procs:
            kill_group(p)


def kill_group(proc: subprocess.Popen):
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)


class Fenced(Runner):
    """Steps as shell_run calls on one `whalebox serve --profile FILE --workspace WS`."""

    fenced = True
    CALL_TIMEOUT = 60  # seconds, for one MCP call (shell_run and shell_wait wait 45 s at most)

    def __init__(self, binary: str, config: str, user: User, place: Place, profile: pathlib.Path,
                 ws: pathlib.Path | None = None, label: str = "session1"):
        self.binary = binary
        self.config = config
        self.user = user
        self.place = place
        self.profile = profile
        self.ws = ws or place.ws
        self.label = label
        self.failures = []
        self.log_path = place.logs / f"{label}-{id(self)}.log"
        self.client = None
        self._stack: contextlib.AsyncExitStack | None = None

    async def open(self):
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client

        self._stack = contextlib.AsyncExitStack()
        log = self._stack.enter_context(open(self.log_path, "w"))
        argv = self.user.wrap([self.binary, "serve", "--profile", str(self.profile), "--workspace", str(self.ws)])
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=self.place.env(), cwd=str(self.ws))
        client = Client(stdio_client(params, errlog=log), mode="legacy", read_timeout_seconds=self.CALL_TIMEOUT)
        try:
            # (no fail_after around it: the client's task group must not nest in a
            # cancel scope that ends first; its initialize has the read timeout)
            self.client = await self._stack.enter_async_context(client)
        except BaseException as e:
            await self._stack.aclose()
            said = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
            raise StepFailed(f"whalebox serve did not start ({self.where}, profile {self.profile}):\n"
                             f"{self.profile.read_text()}--- its log ---\n{said}\n--- error: {e!r}") from None
        return self

    async def close(self):
        if self._stack is not None:
            await self._stack.aclose()
            self._stack = None

    async def call(self, tool: str, args: dict) -> dict:
        with anyio.fail_after(self.CALL_TIMEOUT + 10):
            result = await self.client.call_tool(tool, args)
        env = (result.meta or {}).get(ENVELOPE_META)
        if env is None:
            raise StepFailed(f"{tool} answered without an envelope: {result!r}")
        return env

    def _result(self, command, env, text, started) -> Result:
        d = env.get("data") or {}
        status = d.get("status") or ("exited" if env.get("ok") else f"error {env.get('code')}")
        code = d.get("exit_code")
        return Result(command, code, text, time.monotonic() - started, data=d, status=status,
                      where=self.where, server_log=self.log_path)

    async def _run(self, command, *, timeout, env) -> Result:
        started = time.monotonic()
        args: dict[str, Any] = {"command": command, "yield_time_ms": int(min(timeout, 45) * 1000)}
        if env:
            args["env"] = env
        e = await self.call("shell_run", args)
        text = e["text"] if e.get("ok") else f"{e.get('code')}: {e.get('text')}"
        while (e.get("data") or {}).get("status") == "running":
            left = timeout - (time.monotonic() - started)
            if left <= 0:
                task = e["data"]["task_id"]
                c = await self.call("shell_cancel", {"task_id": task})
                text += c.get("text", "")
                r = self._result(command, e, text, started)
                r.status = f"still running after {timeout} s (cancelled)"
                return r
            e = await self.call("shell_wait", {"task_id": e["data"]["task_id"],
                                               "timeout_ms": int(min(left, 45) * 1000)})
            text += e["text"] if e.get("ok") else f"{e.get('code')}: {e.get('text')}"
        r = self._result(command, e, text, started)
        if e.get("ok"):
            self._check_in_force(r)
        return r

    def _check_in_force(self, r: Result):
        """The fences this configuration stands for are the ones the result reports."""
        d = r.data or {}
        gate = d.get("exec_boundary") or {}
        net = (d.get("network") or {}).get("enforcement")
        want_method = "ptrace" if self.config == "ptrace" else None
        want_net = "landlock" if self.config == "landlock-net" else "namespace"
        wrong = []
        if not gate.get("kernel"):
            wrong.append(f"exec_boundary.kernel is {gate.get('kernel')!r}")
        if want_method and gate.get("method") != want_method:
            wrong.append(f"exec_boundary.method is {gate.get('method')!r}, not {want_method!r}")
        if net != want_net:
            wrong.append(f"network.enforcement is {net!r}, not {want_net!r}")
        if self.config == "enforce" and (d.get("landlock") or {}).get("mode") != "enforce":
            wrong.append(f"landlock.mode is {(d.get('landlock') or {}).get('mode')!r}, not 'enforce'")
        if wrong and d:
            raise StepFailed(r.describe(f"the {self.config} configuration is not what ran: " + "; ".join(wrong)))

    async def start(self, command, env=None):
        args: dict[str, Any] = {"command": command, "background": True}
        if env:
            args["env"] = env
        started = time.monotonic()
        e = await self.call("shell_run", args)
        d = e.get("data") or {}
        if not d.get("task_id"):
            r = self._result(command, e, e.get("text", ""), started)
            raise StepFailed(r.describe("shell_run background: true gave no task id"))
        return (d["task_id"], command, started, e)

    async def wait(self, handle, timeout=60) -> Result:
        task, command, started, first = handle
        text = first.get("text", "")
        e = first
        deadline = time.monotonic() + timeout
        while (e.get("data") or {}).get("status") == "running":
            left = deadline - time.monotonic()
            if left <= 0:
                break
            e = await self.call("shell_wait", {"task_id": task, "timeout_ms": int(min(left, 45) * 1000)})
            text += e["text"] if e.get("ok") else f"{e.get('code')}: {e.get('text')}"
        r = self._result(command, e, text, started)
        if r.status == "running":
            r.status = f"still running after {timeout} s"
        return r

    @contextlib.asynccontextmanager
    async def session(self, ws=None) -> AsyncIterator[Runner]:
        other = Fenced(self.binary, self.config, self.user, self.place, self.profile,
                       ws or self.place.ws2, label="session2")
        await other.open()
        try:
            yield other
        finally:
            await other.close()


# -- checks on the machine ---------------------------------------------------------------


_doctor_cache: dict[tuple, dict] = {}


def doctor(binary: str, user: User, place: Place, profile: pathlib.Path) -> dict:
    """`whalebox doctor --json` for this user and profile (cached by user and profile text)."""
    key = (user.name, profile.read_text())
    if key not in _doctor_cache:
        argv = user.wrap([binary, "doctor", "--json", "--profile", str(profile), "--workspace", str(place.ws)])
        out = subprocess.run(argv, env=place.env(), capture_output=True, text=True, timeout=60, cwd=place.ws)
        if out.returncode != 0:
            _doctor_cache[key] = {"error": f"exit {out.returncode}: {out.stderr.strip() or out.stdout.strip()}"}
        else:
            _doctor_cache[key] = json.loads(out.stdout)
    return _doctor_cache[key]


VERSION_ARGS = {"go": ["version"], "gdb": ["--version"], "make": ["--version"]}


def reachable_by(user: User, program: str) -> str | None:
    """None when `program` runs for `user` with the suite's PATH, else why not."""
    path = shutil.which(program, path=task_path())
    if path is None:
        return f"{program} is not on PATH ({task_path()})"
    argv = [path, *VERSION_ARGS.get(program, ["--version"])]
    try:
        out = subprocess.run(user.wrap(argv), capture_output=True, text=True, timeout=30,
                             env={"PATH": task_path(), "HOME": "/tmp"}, cwd="/")
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{' '.join(argv)} as {user.name}: {e}"
    if out.returncode != 0:
        return f"{' '.join(argv)} as {user.name} exited {out.returncode}: {(out.stderr or out.stdout).strip()[:300]}"
    return None


def pid_namespaces() -> bool:
    """Whether this machine lets whalebox give a session a PID namespace with a procfs of
    its own (as root, or in a user namespace of the caller's)."""
    return any(subprocess.run(["unshare", flags, "--mount-proc", "true"],
                              stderr=subprocess.DEVNULL).returncode == 0
               for flags in ("-pf", "-Upf"))
