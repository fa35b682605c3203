"""The built whalebox binary, as in tests/mcp (WHALEBOX_BIN, else target/debug)."""

import os
import pathlib

import pytest


@pytest.fixture(scope="session")
def whalebox_bin() -> str:
    path = os.environ.get("WHALEBOX_BIN")
    if not path:
        path = str(pathlib.Path(__file__).resolve().parents[2] / "target" / "debug" / "whalebox")
    if not os.access(path, os.X_OK):
        pytest.fail(f"whalebox binary not found at {path}; build it first (tests/run does)")
    return path
