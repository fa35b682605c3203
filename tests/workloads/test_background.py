"""A long test run sent to the background (shell_run `background: true`), then waited for
with shell_wait until it exits 0, its output whole."""

import pytest

from conftest import matrix
from harness import check

pytestmark = pytest.mark.anyio

SLOW = "for i in 1 2 3 4 5 6; do echo tick $i; sleep 0.5; done; echo all done"


@pytest.mark.parametrize("config,user", matrix())
async def test_background(wl, config, user):
    async def steps(t):
        task = await t.start(SLOW)
        r = await t.sh("echo meanwhile")
        assert "meanwhile" in r.text
        r = await t.wait(task, timeout=30)
        assert r.ok, r.describe("the background run did not exit 0")
        ticks = [line for line in r.text.splitlines() if line.startswith("tick ")]
        assert ticks == [f"tick {i}" for i in range(1, 7)] and "all done" in r.text, r.describe("output lost")

    await wl.run("background", config, user, steps)


@pytest.mark.parametrize("config,user", matrix())
async def test_kill_background(wl, config, user):
    """A server started in the background by one call, stopped with `kill` by a later call
    of the same session (as a model does: `kill $(cat server.pid)`), or, where a fence
    keeps the later call from signalling it, a refusal that says so and names the next
    step (shell_cancel on its task)."""

    async def steps(t):
        server = await t.start("echo $$ > server.pid; exec sleep 600")
        await t.sh("for i in $(seq 1 50); do test -s server.pid && exit 0; sleep 0.1; done; exit 1")
        r = await t.sh("kill $(cat server.pid) && echo stopped", ok=False)
        if r.ok:
            done = await t.wait(server, timeout=15)
            assert done.status != "running" and "still running" not in done.status, \
                done.describe("kill said it stopped the background task, which still runs")
        else:
            check(r, "shell_cancel" in r.text,
                  "a later call of the same session cannot signal its own background task, and the refusal "
                  "does not name the fence or the next step (shell_cancel)")

    await wl.run("kill_background", config, user, steps)
