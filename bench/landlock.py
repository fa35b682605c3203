"""Landlock overhead benchmark (not a test): the same calls through one MCP session per
mode, `[landlock] mode = "enforce"` against `"off"`, side by side in one run:
shell_run {"command": "true"} (median of BENCH_RUNS) and a grep over a 1000-file tree
(median of BENCH_RUNS / 10). Prints milliseconds and the ratio (expected about 1.0)."""

import os
import shutil
import statistics
import sys
import tempfile

from mcp_session import Session, median_ms

RUNS = int(os.environ.get("BENCH_RUNS", "200"))
binary = sys.argv[1]
root = tempfile.mkdtemp(prefix="whalebox-landlock-bench-")
ws = os.path.join(root, "ws")
for i in range(1000):
    d = os.path.join(ws, f"d{i % 20}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"f{i}.txt"), "w") as f:
        f.write("".join(f"line {j} of file {i} with some words\n" for j in range(40)))
        if i % 97 == 0:
            f.write("needle here\n")


def session(mode):
    profile = os.path.join(root, f"{mode}.toml")
    with open(profile, "w") as f:
        f.write(f'[landlock]\nmode = "{mode}"\n')
    env = {"PATH": os.environ["PATH"], "HOME": root, "RUST_LOG": "warn"}
    return Session(binary, ["--profile", profile, "--workspace", ws], env)


sessions = {m: session(m) for m in ("enforce", "off")}
landlock = sessions["enforce"].call("shell_run", {"command": "true"})["data"]["landlock"]
if landlock.get("kernel_abi", 0) == 0:
    print("landlock bench: this kernel has no Landlock; nothing to compare")
    shutil.rmtree(root, ignore_errors=True)
    sys.exit(0)
results = {}
# Interleave the modes so drift on the machine hits both alike.
for name, tool, args, runs in [
    ("shell_run true", "shell_run", {"command": "true"}, RUNS),
    ("grep 1000 files", "grep", {"pattern": "needle", "output_mode": "count"}, max(RUNS // 10, 5)),
]:
    per = {m: [] for m in sessions}
    for _ in range(3):
        for m, s in sessions.items():
            per[m].append(median_ms(lambda: s.call(tool, args), runs // 3 or 1))
    results[name] = {m: statistics.median(v) for m, v in per.items()}
for s in sessions.values():
    s.close()
shutil.rmtree(root, ignore_errors=True)
print(f"landlock bench (kernel ABI {landlock['kernel_abi']}, medians):")
for name, r in results.items():
    print(f"  {name:16} enforce {r['enforce']:7.2f} ms   off {r['off']:7.2f} ms   "
          f"ratio {r['enforce'] / r['off']:.2f}x")
