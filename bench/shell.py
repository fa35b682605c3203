"""Shell latency benchmark (not a test): median wall time of `shell_run {"command":
"true"}` through one MCP session (pipe and PTY) and through `whalebox call`, beside
spawning the same shell directly. Prints milliseconds and the differences."""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

RUNS = int(os.environ.get("BENCH_RUNS", "200"))
binary = sys.argv[1]
# The shell shell_run uses: the gated zsh when built (run bare, it is a stock zsh).
gated = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target", "zsh", "bin", "zsh")
shell = os.path.realpath(gated) if os.access(gated, os.X_OK) else (shutil.which("zsh") or shutil.which("bash"))
ws = tempfile.mkdtemp(prefix="whalebox-shell-bench-")
env = {"PATH": os.environ["PATH"], "HOME": ws, "RUST_LOG": "warn"}


def median_ms(fn, runs=RUNS):
    fn()  # warm up
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


bare = median_ms(lambda: subprocess.run([shell, "-fc", "true"], check=True))

server = subprocess.Popen([binary, "serve", "--workspace", ws], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
next_id = 0


def rpc(method, params=None, notify=False):
    global next_id
    msg = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    if not notify:
        next_id += 1
        msg["id"] = next_id
    server.stdin.write((json.dumps(msg) + "\n").encode())
    server.stdin.flush()
    if not notify:
        reply = json.loads(server.stdout.readline())
        assert "result" in reply, reply
        return reply["result"]


rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}})
rpc("notifications/initialized", notify=True)


def run(mode):
    def go():
        r = rpc("tools/call", {"name": "shell_run", "arguments": {"command": "true", "mode": mode}})
        assert r["structuredContent"]["data"]["exit_code"] == 0, r
    return go


pipe = median_ms(run("pipe"))
pty = median_ms(run("pty"))
server.stdin.close()
server.wait()
call = median_ms(
    lambda: subprocess.run(
        [binary, "call", "shell_run", "--workspace", ws, "--args", '{"command":"true","mode":"pipe"}'],
        check=True, stdout=subprocess.DEVNULL, env=env),
    runs=max(20, RUNS // 4),
)
shutil.rmtree(ws)
print(f"shell: {shell}; {RUNS} runs each; medians in ms")
print(f"  bare `{os.path.basename(shell)} -c true`      {bare:7.2f}")
print(f"  MCP shell_run (pipe)         {pipe:7.2f}   +{pipe - bare:.2f} ms over bare ({pipe / bare:.2f}x)   target: within 2 ms")
print(f"  MCP shell_run (pty)          {pty:7.2f}   +{pty - bare:.2f} ms over bare ({pty / bare:.2f}x)")
print(f"  PTY task vs pipe task        {pty - pipe:+7.2f}")
print(f"  whalebox call shell_run      {call:7.2f}   +{call - bare:.2f} ms over bare ({call / bare:.2f}x)")
