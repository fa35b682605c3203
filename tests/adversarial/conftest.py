"""Fixtures of the adversarial suite (README.md): the workloads suite's own (`wl`, the
configurations, users and runners of tests/workloads), loaded from there so both suites
drive whalebox the same way. An attack is a workload whose steps assert, bare, that the
attack reaches its target (the probe is sound: no check passes vacuously) and, fenced,
that it does not."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
WORKLOADS = HERE.parent / "workloads"
sys.path.insert(0, str(WORKLOADS))

_spec = importlib.util.spec_from_file_location("workloads_conftest", WORKLOADS / "conftest.py")
workloads_conftest = importlib.util.module_from_spec(_spec)
sys.modules["workloads_conftest"] = workloads_conftest
_spec.loader.exec_module(workloads_conftest)

# The fixtures and the timing table, as pytest finds them: by name in this module.
from workloads_conftest import (  # noqa: E402,F401
    anyio_backend,
    gated_zsh,
    matrix,
    pytest_terminal_summary,
    top,
    whalebox_bin,
    wl,
)
