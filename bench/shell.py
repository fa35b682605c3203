"""Shell latency benchmark (not a test): median wall time of `shell_run {"command":
"true"}` through one MCP session (pipe and PTY) and through `whalebox call`, beside
spawning the same shell directly, and through a session whose tasks get no cgroup
(`[shell.limits] cgroup = "off"`: what a task's cgroup costs, where one can be made).
Prints milliseconds and the differences."""

import os
import shutil
import subprocess
import sys
import tempfile

from mcp_session import Session, median_ms

RUNS = int(os.environ.get("BENCH_RUNS", "200"))
binary = sys.argv[1]
# The shell shell_run uses: the gated zsh when built (run bare, it is a stock zsh).
gated = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target", "zsh", "bin", "zsh")
shell = os.path.realpath(gated) if os.access(gated, os.X_OK) else (shutil.which("zsh") or shutil.which("bash"))
ws = tempfile.mkdtemp(prefix="whalebox-shell-bench-")
# HOME (and the checkpoint store under it) outside the workspace, as whalebox requires.
home = tempfile.mkdtemp(prefix="whalebox-shell-bench-home-")
env = {"PATH": os.environ["PATH"], "HOME": home, "RUST_LOG": "warn"}


bare = median_ms(lambda: subprocess.run([shell, "-fc", "true"], check=True), RUNS)
server = Session(binary, ["--workspace", ws], env)


def run(mode):
    def go():
        env = server.call("shell_run", {"command": "true", "mode": mode})
        assert env["data"]["exit_code"] == 0, env
    return go


pipe = median_ms(run("pipe"), RUNS)
pty = median_ms(run("pty"), RUNS)
server.close()
no_cgroup_profile = os.path.join(ws, "no-cgroup.toml")
with open(no_cgroup_profile, "w") as f:
    f.write('[shell.limits]\ncgroup = "off"\n')
server = Session(binary, ["--workspace", ws, "--profile", no_cgroup_profile], env)
no_cgroup = median_ms(run("pipe"), RUNS)
server.close()
call = median_ms(
    lambda: subprocess.run(
        [binary, "call", "shell_run", "--workspace", ws, "--args", '{"command":"true","mode":"pipe"}'],
        check=True, stdout=subprocess.DEVNULL, env=env),
    max(20, RUNS // 4),
)
shutil.rmtree(ws)
shutil.rmtree(home, ignore_errors=True)
print(f"shell: {shell}; {RUNS} runs each; medians in ms")
print(f"  bare `{os.path.basename(shell)} -c true`      {bare:7.2f}")
print(f"  MCP shell_run (pipe)         {pipe:7.2f}   +{pipe - bare:.2f} ms over bare ({pipe / bare:.2f}x)   target: within 2 ms")
print(f"  MCP shell_run (pty)          {pty:7.2f}   +{pty - bare:.2f} ms over bare ({pty / bare:.2f}x)")
print(f"  PTY task vs pipe task        {pty - pipe:+7.2f}")
print(f"  pipe task, no cgroup         {no_cgroup:7.2f}   a task's cgroup costs {pipe - no_cgroup:+.2f} ms "
      "(where one can be made: `whalebox doctor`, limits)")
print(f"  whalebox call shell_run      {call:7.2f}   +{call - bare:.2f} ms over bare ({call / bare:.2f}x)")
