"""Resource exhaustion under `[shell.limits]`, through the real MCP client over
Streamable HTTP, with two sessions of one server: a task that fills its output buffer
forever, one that opens every descriptor it may, a fork bomb, and one that allocates
without end. For each, while it runs (or after the kernel stopped it) the server keeps
serving the same session and the other one, the task's result names the limit it hit,
shell_cancel stops it with nothing of it left, and the session's own state (its todo
list, its checkpoints, its other task) is intact.

Each runs with a cgroup per task where one can be made and with `cgroup = "off"` (a
machine without one: rlimits alone). A scenario whose limit the machine cannot keep
skips, saying why: the fork bomb as root without a cgroup (root is not held by RLIMIT_NPROC, so it would take the machine). The
memory scenario uses the cgroup's memory limit where there is one, else `address_space`
(RLIMIT_AS). Nothing here asserts a duration; the waits are generous bounds.
"""

import json
import os
import pathlib
import subprocess

import pytest

from test_http import call, eventually, mcp_client, serve, unique_sleep, wait_running  # noqa: F401 (serve: a fixture)

pytestmark = pytest.mark.anyio

LIMITS = """
[shell]
buffer_bytes = 65536
[shell.limits]
processes = 64
memory = "256M"
open_files = 512
"""

PYTHON_FDS = (
    "python3 -c \"import os, time\nfs = []\ntry:\n    while True: fs.append(os.open('/dev/null', os.O_RDONLY))\n"
    "except OSError as e:\n    print('stopped after', len(fs), e, flush=True)\ntime.sleep(1000)\""
)
PYTHON_ALLOC = "python3 -c \"x = []\nwhile True: x.append(bytearray(1 << 20))\""
FORK_BOMB = "bomb() { bomb | bomb & }; bomb; sleep 1000"


def doctor_limits(binary: str, workspace: pathlib.Path, profile: pathlib.Path) -> dict:
    out = subprocess.run([binary, "doctor", "--json", "--profile", str(profile), "--workspace", str(workspace)],
                         capture_output=True, text=True, check=True,
                         env={"PATH": os.environ.get("PATH", ""), "HOME": str(workspace.parent)})
    return json.loads(out.stdout)["limits"]


async def wait_for(c, task: str, done, tries: int = 60) -> dict:
    """shell_wait (1 s at a time) until `done(env)` or the task ended; the last result."""
    env = {}
    for _ in range(tries):
        env = await call(c, "shell_wait", {"task_id": task, "timeout_ms": 1000})
        if done(env) or env["data"]["status"] != "running":
            break
    return env


def hit(limit: str):
    return lambda env: limit in ((env["data"].get("limits") or {}).get("hit") or [])


SCENARIOS = {
    # name: (command, done while running, what the final result says)
    "flood": ("yes flood", lambda env: env["data"]["output_truncated"], None),
    "descriptors": (PYTHON_FDS, hit("open_files"), "ran out of file descriptors at its limit (512"),
    "fork_bomb": (FORK_BOMB, hit("processes"), "the task reached its process limit"),
    "memory": (PYTHON_ALLOC, None, None),
}


@pytest.mark.parametrize("cgroup", ["auto", "off"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
async def test_an_exhausting_task_is_reported_cancelled_and_harms_nothing(
        serve, whalebox_bin, workspace, tmp_path, scenario, cgroup):
    """`cgroup = "off"` is the machine without a cgroup: rlimits alone."""
    command, done, says = SCENARIOS[scenario]
    profile_text = LIMITS + f'cgroup = "{cgroup}"\n'
    probe = tmp_path / "probe.toml"
    probe.write_text(profile_text)
    limits = doctor_limits(whalebox_bin, workspace, probe)
    by_cgroup = limits["processes"]["enforced_by"].startswith("cgroup")
    if scenario == "fork_bomb" and not by_cgroup and os.geteuid() == 0:
        pytest.skip(f"SKIPPED the fork bomb, it would not be stopped: processes: {limits['processes'].get('note')}")
    if scenario == "memory":
        if limits["memory"]["enforced_by"].startswith("cgroup"):
            done, says = hit("memory"), "at its memory limit (256 MiB"
        else:
            print(f"NOTE: no cgroup memory limit here ({limits['memory'].get('note')}): RLIMIT_AS instead")
            profile_text += 'address_space = "256M"\n'
            done, says = hit("address_space"), "at its address-space limit (256 MiB"
    srv = serve(profile_text)
    async with mcp_client(srv.url, "legacy") as one, mcp_client(srv.url, "legacy") as two:
        await call(one, "todo_add", {"content": "keep me"})
        await call(two, "todo_add", {"content": "mine"})
        sleep = unique_sleep()
        bystander = (await call(one, "shell_run", {"command": sleep, "background": True}))["data"]["task_id"]
        wait_running(sleep)

        env = await call(one, "shell_run", {"command": command, "background": True})
        task = env["data"]["task_id"]
        env = await wait_for(one, task, done)
        assert done(env), f"{scenario}: the limit never showed: {env['text'][-3000:]}"

        # Meanwhile (the task may still run): both sessions are served.
        out = await call(two, "shell_run", {"command": "echo still here"})
        assert out["data"]["exit_code"] == 0 and out["text"].startswith("still here"), out
        out = await call(one, "shell_run", {"command": "echo me too"})
        assert out["data"]["exit_code"] == 0 and out["text"].startswith("me too"), out
        assert [t["content"] for t in (await call(two, "todo_list", {}))["data"]["todos"]] == ["mine"]

        env = await call(one, "shell_cancel", {"task_id": task})
        assert env["data"]["status"] != "running", env
        if says is not None:
            assert says in env["text"], env["text"][-3000:]
        limits_data = env["data"]["limits"]
        if scenario == "flood":
            assert env["data"]["output_truncated"] is True
            assert limits_data["hit"] == [], limits_data
        assert limits_data["processes_by"] == ("cgroup" if by_cgroup else "rlimit"), limits_data
        if scenario == "fork_bomb" and by_cgroup:
            assert limits_data["forks_refused"] > 0, limits_data
        if scenario == "memory" and limits_data["memory_by"] == "cgroup":
            assert limits_data["oom_kills"] > 0, limits_data

        # Nothing of the task is left: its cgroup is gone (with every process in it).
        for d in limits.get("cgroup_dirs") or []:
            server_dir = pathlib.Path(d.rsplit("/whalebox-", 1)[0]) / f"whalebox-{srv.proc.pid}"
            eventually(lambda: not (server_dir / task).exists(), f"{server_dir / task} outlived the task")

        # The session's state is intact: its todo list, its checkpoints, its other task.
        assert [t["content"] for t in (await call(one, "todo_list", {}))["data"]["todos"]] == ["keep me"]
        assert (await call(one, "checkpoint_list", {}))["ok"]
        env = await call(one, "shell_wait", {"task_id": bystander, "timeout_ms": 0})
        assert env["data"]["status"] == "running", env
        env = await call(one, "shell_cancel", {"task_id": bystander})
        assert env["data"]["status"] != "running", env
    assert srv.proc.poll() is None, "the server is still up"
