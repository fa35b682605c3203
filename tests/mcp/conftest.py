"""Fixtures for the MCP end-to-end tests: the built whalebox binary and a real
workspace (a git repository, so .gitignore applies as in real use)."""

import os
import pathlib
import subprocess

import pytest


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="session")
def whalebox_bin() -> str:
    path = os.environ.get("WHALEBOX_BIN")
    if not path:
        path = str(pathlib.Path(__file__).resolve().parents[2] / "target" / "debug" / "whalebox")
    if not os.access(path, os.X_OK):
        pytest.fail(f"whalebox binary not found at {path}; build it first (tests/run does)")
    return path


@pytest.fixture
def workspace(tmp_path: pathlib.Path) -> pathlib.Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    (ws / ".gitignore").write_text("build/\n")
    (ws / "README.md").write_text("# demo\nSecond line\n")
    (ws / "src" / "main.rs").write_text('fn main() {\n    println!("hello");\n}\n')
    (ws / "src" / "lib.rs").write_text("pub fn answer() -> u32 {\n    42\n}\n")
    (ws / "build").mkdir()
    (ws / "build" / "out.rs").write_text("fn main() {}\n")
    (ws / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    skill = ws / ".agents" / "skills" / "release"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: release\ndescription: Cut a release of the demo project.\n---\n"
        "1. Bump the version.\n2. Tag it.\n"
    )
    (tmp_path / "outside.txt").write_text("secret\n")
    return ws
