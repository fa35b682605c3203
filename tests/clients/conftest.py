"""Fixtures for the tests that drive the real clients (Claude Code, Codex CLI) through
whalebox: see harness.py. The clients come from tests/clients/install.sh; without them these
tests skip, saying why, rather than pass."""

import os
import pathlib
import subprocess

import pytest

import harness


@pytest.fixture(scope="session")
def whalebox_bin() -> str:
    path = harness.whalebox_bin()
    if not os.access(path, os.X_OK):
        pytest.fail(f"whalebox binary not found at {path}; build it first (tests/run does)")
    return path


def _require(name: str) -> None:
    if harness.client_path(name) is None:
        pytest.skip(f"{name} is not installed in {harness.clients_bin()}: run "
                    "tests/clients/install.sh (or point CLIENTS_BIN at a directory holding it)")
    if name == "codex" and not harness.node_available():
        pytest.skip("codex's npm entry point needs node on PATH")


def _runner(request, name: str):
    _require(name)
    run = {"claude": harness.run_claude, "codex": harness.run_codex}[name]
    tmp = request.getfixturevalue("tmp_path")

    def go(workspace, script, **options):
        options.setdefault("tmp", tmp)
        return run(workspace, script, **options)

    return go


@pytest.fixture(params=["claude", "codex"])
def client(request, whalebox_bin):
    """Each client in turn, as (name, run function taking workspace, script, **options)."""
    return request.param, _runner(request, request.param)


@pytest.fixture
def claude(request, whalebox_bin):
    """harness.run_claude, with this test's tmp_path for the run's HOME."""
    return _runner(request, "claude")


@pytest.fixture
def codex(request, whalebox_bin):
    """harness.run_codex, with this test's tmp_path for the run's HOME."""
    return _runner(request, "codex")


@pytest.fixture
def workspace(tmp_path: pathlib.Path) -> pathlib.Path:
    """A small git repository, as in tests/mcp (so .gitignore applies as in real use)."""
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    (ws / ".gitignore").write_text("build/\n")
    (ws / "README.md").write_text("# demo\nSecond line\n")
    (ws / "src" / "main.rs").write_text('fn main() {\n    println!("hello");\n}\n')
    (ws / "src" / "lib.rs").write_text("pub fn answer() -> u32 {\n    42\n}\n")
    return ws


@pytest.fixture
def http_whalebox(tmp_path, whalebox_bin):
    """Start `whalebox serve --http 127.0.0.1:0` on a workspace (harness.HttpWhalebox);
    every server started is stopped at the end of the test."""
    started = []

    def start(workspace, **options):
        options.setdefault("tmp", tmp_path)
        server = harness.HttpWhalebox(workspace, **options)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()
