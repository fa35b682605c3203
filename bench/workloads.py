"""The cost of the fences on real work (not a test): the same builds and tests bare and
through `whalebox serve` (the embedded default profile: gated zsh, kernel exec gate,
Landlock, the network fence), side by side in one run, alternating, each in a fresh
copy of its project. Prints the median seconds of each and the ratio (goal: at most
1.05x bare).

- cargo: `cargo build --offline` of crates/whalebox-policy (serde, toml, regex … from the
  machine's registry cache), a fresh target directory each time;
- npm: `npm install` of two packages from a registry on 127.0.0.1, a fresh cache each time;
- pip: `pip install` of pytest and pytest-xdist into a new venv from an index on 127.0.0.1;
- go: `go test -count=1` of a small module (std only), its build cache warm;
- git gc: `git gc --aggressive` of a clone of this repository's history.

The registries are tests/workloads' (run tests/workloads/prepare first; bench/workloads.sh
does). Whalebox reaches them through `[network] host_ports`."""

import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "workloads"))
sys.path.insert(0, str(ROOT / "bench"))

from mcp_session import Session  # noqa: E402
from registries import Registry  # noqa: E402

RUNS = int(os.environ.get("BENCH_RUNS", "3"))
binary = sys.argv[1]
zsh = ROOT / "target" / "zsh" / "bin" / "zsh"
top = pathlib.Path(tempfile.mkdtemp(prefix="whalebox-bench-workloads-"))
home = pathlib.Path(os.environ["HOME"])
registry = Registry(ROOT / "target" / "workloads")
url = registry.url

GO_MOD = "module example.com/demo\n\ngo 1.19\n"
GO_SRC = "package demo\n\nfunc Sum(xs []int) (s int) {\n\tfor _, x := range xs {\n\t\ts += x\n\t}\n\treturn\n}\n"
GO_TEST = (
    'package demo\n\nimport "testing"\n\n'
    "func TestSum(t *testing.T) {\n\tif Sum([]int{1, 2, 3}) != 6 {\n\t\tt.Fatal(\"sum\")\n\t}\n}\n"
)


def project(kind: str, dest: pathlib.Path):
    """A fresh copy of the workload's project in `dest`."""
    if dest.exists():
        shutil.rmtree(dest)
    if kind == "cargo":
        shutil.copytree(ROOT / "crates" / "whalebox-policy", dest)
        text = (dest / "Cargo.toml").read_text()
        (dest / "Cargo.toml").write_text(text + "\n[workspace]\n")
        shutil.copy(ROOT / "Cargo.lock", dest / "Cargo.lock")
    elif kind == "go":
        dest.mkdir(parents=True)
        (dest / "go.mod").write_text(GO_MOD)
        (dest / "sum.go").write_text(GO_SRC)
        (dest / "sum_test.go").write_text(GO_TEST)
    elif kind == "git":
        subprocess.run(["git", "clone", "-q", "--no-local", "--bare", str(ROOT), str(dest)], check=True)
    else:
        dest.mkdir(parents=True)
        (dest / "package.json").write_text('{"name": "bench", "version": "1.0.0", "private": true}\n')


COMMANDS = {
    # The lock file is the workspace's; the crate's own dependencies resolve offline.
    "cargo": "cargo build --offline --quiet 2>&1",
    "npm": f"npm install --no-audit --no-fund --silent --registry {url}/npm/ --cache .npm-cache is-odd@3.0.1 is-number@6.0.0 2>&1",
    "pip": (f"python3 -m venv .venv && .venv/bin/pip --disable-pip-version-check install --quiet "
            f"--index-url {url}/pip/simple/ --trusted-host 127.0.0.1 pytest==8.3.4 pytest-xdist==3.6.1 2>&1"),
    "go": "go test -count=1 ./... 2>&1",
    "git gc": "git gc --aggressive --quiet 2>&1",
}
KINDS = {"cargo": "cargo", "npm": "npm", "pip": "pip", "go": "go", "git gc": "git"}


def bare(name: str, ws: pathlib.Path) -> float:
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "TMPDIR": str(top / "tmp"),
           "LANG": os.environ.get("LANG", "C.UTF-8")}
    for k in ("CARGO_HOME", "RUSTUP_HOME", "GOPATH", "GOCACHE"):
        if k in os.environ:
            env[k] = os.environ[k]
    start = time.perf_counter()
    p = subprocess.run([str(zsh), "-fc", COMMANDS[name]], cwd=ws, env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    assert p.returncode == 0, f"bare {name}: {p.stdout}{p.stderr}"
    return took


def fenced(session: Session, name: str, ws: pathlib.Path) -> float:
    start = time.perf_counter()
    env = session.call("shell_run", {"command": f"cd {ws} && {COMMANDS[name]}", "yield_time_ms": 50000})
    while env["data"].get("status") == "running":
        env = session.call("shell_wait", {"task_id": env["data"]["task_id"], "timeout_ms": 50000})
    took = time.perf_counter() - start
    assert env["data"].get("exit_code") == 0, f"whalebox {name}: {env['text']}"
    return took


(top / "tmp").mkdir()
ws = top / "ws"
ws.mkdir()
subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
profile = top / "profile.toml"
profile.write_text(
    f'[shell]\nzsh = "{zsh}"\nexec_boundary = "required"\n[network]\nhost_ports = [{registry.port}]\n'
    # The workspace is the bench's scratch directory: no marker file there, so name the
    # toolchains whose caches the workloads use.
    '[landlock]\npresets = ["rust", "node", "python", "go"]\n'
    # As the defaults leave a project's own build outputs out of checkpoints (they are
    # at the top of a real workspace, here one level down).
    '[checkpoints]\nexclude = [".git", "target", "node_modules", ".venv", ".npm-cache"]\n'
)
env = {"PATH": os.environ["PATH"], "HOME": str(home), "RUST_LOG": "warn"}
session = Session(binary, ["--workspace", str(ws), "--profile", str(profile)], env)

print(f"workloads, bare and through whalebox serve (default fences, gated zsh), {RUNS} runs each, alternating; median seconds")
print(f"{'workload':10} {'bare':>8} {'whalebox':>9} {'ratio':>7}")
try:
    for name, kind in KINDS.items():
        times = {"bare": [], "fenced": []}
        # Warm both (the go build cache, the page cache), then alternate.
        for i in range(RUNS + 1):
            for how in ("bare", "fenced"):
                dest = ws / f"{kind}-{how}"
                project(kind, dest)
                took = bare(name, dest) if how == "bare" else fenced(session, name, dest)
                if i > 0:
                    times[how].append(took)
        b, f = statistics.median(times["bare"]), statistics.median(times["fenced"])
        print(f"{name:10} {b:8.2f} {f:9.2f} {f / b:6.2f}x", flush=True)
finally:
    session.close()
    registry.close()
    shutil.rmtree(top, ignore_errors=True)
