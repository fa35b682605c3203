"""The server and the machine: what a task does to the process that decides for it
(`whalebox serve`). Bare, each probe is aimed at a decoy of the same user (targets.py)
and must reach it; fenced, aimed at the server, it must not, and the server goes on
serving."""

import os
import signal

import pytest

from conftest import matrix
from harness import check
from targets import victim

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("config,user", matrix())
async def test_a_task_cannot_stop_the_server(wl, config, user):
    async def steps(t):
        with victim(t) as v:
            r = await t.sh(f"kill -STOP {v.pid}", ok=False)
            stopped = v.state() == "T"
            if stopped:
                os.kill(v.pid, signal.SIGCONT)
            if t.fenced:
                check(r, not stopped, f"a task stopped the server (pid {v.pid}) with SIGSTOP")
                await t.sh("true", why="the server stopped answering after a task signalled it")
            else:
                check(r, r.ok and stopped, "bare, the decoy should be stopped (the probe is broken)")

    await wl.run("stop_the_server", config, user, steps)
