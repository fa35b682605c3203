"""Checkpoint benchmark (not a test), on two trees side by side: a ~2k-file project and a
78k-file Linux-sized tree ($LINUX_TREE copied, else synthesized: ≈78k text files in ≈5k
directories, about 12 KB on average), each its own git repository, made once under
$BENCH_DIR (default target/bench-checkpoints) and reused. Every run starts from an empty
checkpoint store (XDG_STATE_HOME and HOME in $BENCH_DIR), so its first checkpoint reads and
hashes every file: that time is printed on its own.

The checkpoint's cost is measured in the server, as the model pays it: `shell_run` of
`: ok` (a command the read-only classifier cannot clear, so every call is checkpointed:
a scan before, one after) through MCP sessions on the same tree, `[checkpoints] mode =
"on"` with inotify, "on" with `inotify = false` (a stat pass of every directory), and
"off"; the difference of the medians is the checkpoint's cost (both scans). Side by side:

1. an unchanged tree: the checkpoint against `git status --porcelain` (goal: at most 0.5x
   git's time; bar: 1x);
2. 100 files changed since the last checkpoint (rewritten with a line more, their mtime
   set 2 s back so neither side re-reads them later as racily clean): the checkpoint
   against `git add -A && git write-tree` in the same tree (whose git index was up to date
   before the 100 files changed);
3. the latency checkpoints add to `shell_run` on the project (goal: +1 ms at most).

Secondary, a separate process: `whalebox checkpoints save` (the stat pass, with the stamp
index the store keeps for the next process), minus the process's start: `whalebox
checkpoints diff 0` on an empty directory (it stops at "no checkpoints yet").

Every call is checked: a checkpoint id on each changing call ("on" sessions), none when
off, the same id while the tree is unchanged, a new one after each change, and the list
saying each change was 100 files modified.

BENCH_RUNS (10): timed runs of the costly cases (git, stat passes, changes, the CLI).
BENCH_CALLS (200): calls of the cheap in-session cases (inotify on vs off, unchanged).
BENCH_FILES (78000) and BENCH_SMALL_FILES (2000): the trees' sizes. LINUX_TREE: a real
tree to copy (its .git left out; the copy is what is changed). BENCH_DIR: scratch;
BENCH_STATE: where the stores go (default $BENCH_DIR/state; emptied before and after).

Creating files dominates some of these numbers (the first pass, 100 changed files, and
even an unchanged call, which rewrites its record), so the filesystem shows through: on
an ext4 without a journal (some VM images), creating a file scans past the inodes freed
in the last few minutes, so a run soon after another (whose stores it deleted) creates
files several times slower, and both sides' write-heavy cases vary from run to run."""

import json
import os
import pathlib
import random
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from mcp_session import Rpc  # noqa: E402

RUNS = int(os.environ.get("BENCH_RUNS", "10"))
CALLS = int(os.environ.get("BENCH_CALLS", "200"))
BIG = int(os.environ.get("BENCH_FILES", "78000"))
SMALL = int(os.environ.get("BENCH_SMALL_FILES", "2000"))
CHANGED = 100
COMMAND = ": ok"  # not on the read-only list: checkpointed

binary = sys.argv[1]
repo = pathlib.Path(__file__).resolve().parents[1]
work = pathlib.Path(os.environ.get("BENCH_DIR", repo / "target" / "bench-checkpoints")).resolve()
state = pathlib.Path(os.environ.get("BENCH_STATE", work / "state")).resolve()
home = work / "home"
env = {"PATH": os.environ["PATH"], "HOME": str(home), "XDG_STATE_HOME": str(state),
       "RUST_LOG": "warn", "GIT_CONFIG_NOSYSTEM": "1"}
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def ms(seconds):
    return seconds * 1000


# --- the trees -------------------------------------------------------------------------

WORDS = ("static int struct return if else for while unsigned long void const char err dev "
         "data size ret lock buf len page node list entry flags mask irq reg val ctx priv "
         "ops init exit free alloc map addr offset count index state queue work timer").split()


def synthesize(root, files, seed):
    """≈files text files in ≈files/15.6 directories (Linux: 78k in 5k), at most 7 deep;
    sizes log-normal around 12 KB on average (median ≈6 KB), each file's first line its
    own path (no two alike)."""
    rng = random.Random(seed)
    pool = ["\t" * rng.randint(0, 3) + " ".join(rng.choices(WORDS, k=rng.randint(2, 10))) + ";\n"
            for _ in range(8192)]
    avg_line = sum(map(len, pool)) / len(pool)
    ndirs = max(1, round(files / 15.6))
    dirs, depth = [""], {"": 0}
    for i in range(1, ndirs):
        # Biased towards early (shallow) directories, like a source tree's wide top.
        parent = dirs[int(len(dirs) * rng.random() ** 2)]
        if depth[parent] >= 7:
            parent = ""
        d = f"{parent}/{rng.choice(WORDS)}{i}" if parent else f"{rng.choice(WORDS)}{i}"
        dirs.append(d)
        depth[d] = depth[parent] + 1
    for d in dirs:
        (root / d).mkdir(parents=True, exist_ok=True)
    total = 0
    for j in range(files):
        d = rng.choice(dirs)
        rel = f"{d}/{rng.choice(WORDS)}_{j}.{rng.choice('chhcS')}" if d else f"f_{j}.c"
        size = min(int(rng.lognormvariate(8.67, 1.2)), 1 << 20)
        body = f"/* {rel} */\n" + "".join(rng.choices(pool, k=int(size / avg_line) + 1))
        (root / rel).write_text(body)
        total += len(body)
    return total


def make_tree(name, files, source=None):
    """The tree `name` under work/, made once: copied from `source` (without its .git) or
    synthesized, then committed to its own git repository."""
    root = work / name
    done = work / f"{name}.done"
    if done.exists():
        return root
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    t = time.perf_counter()
    if source:
        log(f"copying {source} into {root} (once; its .git left out)")
        subprocess.run(f"tar -C '{source}' --exclude=./.git -cf - . | tar -C '{root}' -xf -",
                       shell=True, check=True)
    else:
        log(f"synthesizing {files} files into {root} (once)")
        synthesize(root, files, seed=files)
    log(f"  written in {time.perf_counter() - t:.1f} s; committing it to git")
    t = time.perf_counter()
    subprocess.run(["git", "init", "-q"], cwd=root, env=env, check=True)
    subprocess.run(GIT + ["add", "-A"], cwd=root, env=env, check=True)
    subprocess.run(GIT + ["commit", "-q", "-m", "tree"], cwd=root, env=env, check=True)
    log(f"  committed in {time.perf_counter() - t:.1f} s")
    done.write_text("ok\n")
    return root


def tree_files(root):
    out, dirs, size = [], 0, 0
    for d, subdirs, names in os.walk(root):
        subdirs[:] = [s for s in subdirs if s != ".git"]
        dirs += 1
        for n in names:
            p = os.path.join(d, n)
            if os.path.isfile(p) and not os.path.islink(p):
                out.append(p)
                size += os.path.getsize(p)
    out.sort()
    return out, dirs, size


change_no = 0


def change(paths, rng):
    """Rewrite CHANGED files with one line more, their mtime 2 s back (not racily clean)."""
    global change_no
    change_no += 1
    back = time.time() - 2
    for p in rng.sample(paths, CHANGED):
        with open(p, "a") as f:
            f.write(f"/* bench change {change_no} */\n")
        os.utime(p, (back, back))


# --- whalebox --------------------------------------------------------------------------

def profile(name, mode, inotify=True):
    p = work / f"{name}.toml"
    # Only what the bench calls; the network fence and the exec gate off (the same in
    # every session compared, and their per-call noise would hide a fraction of a ms).
    p.write_text('tools = ["shell", "checkpoints"]\n'
                 '[network]\nmode = "off"\n'
                 '[shell]\nexec_boundary = "off"\n'
                 f'[checkpoints]\nmode = "{mode}"\ninotify = {str(inotify).lower()}\n')
    return str(p)


PROFILES = {}


class Server(Rpc):
    """`whalebox serve` on a tree with one of the profiles."""

    def __init__(self, kind, tree):
        self.kind = kind
        super().__init__([binary, "serve", "--profile", PROFILES[kind], "--workspace", str(tree)], env)

    @classmethod
    def started(cls, kind, tree):
        """A session, and the ms from its start to the end of its first `: ok`."""
        t = time.perf_counter()
        server = cls(kind, tree)
        server.run()
        return server, ms(time.perf_counter() - t)

    def call(self, tool, args):
        result = self.rpc("tools/call", {"name": tool, "arguments": args})
        envelope = result["_meta"]["whalebox/envelope"]
        if not envelope["ok"]:
            sys.exit(f"checkpoints bench: {self.kind}: {tool} failed: {json.dumps(envelope)}")
        return envelope["data"]

    def run(self, command=COMMAND):
        """(ms, checkpoint id) of one shell_run."""
        t = time.perf_counter()
        data = self.call("shell_run", {"command": command, "mode": "pipe"})
        took = ms(time.perf_counter() - t)
        if data.get("exit_code") != 0:
            sys.exit(f"checkpoints bench: {self.kind}: `{command}` exited {data.get('exit_code')}")
        if "checkpoint_missing" in data:
            sys.exit(f"checkpoints bench: {self.kind}: no checkpoint: {data['checkpoint_missing']}")
        checkpoint = data.get("checkpoint")
        if (checkpoint is None) != (self.kind == "off" or command == "true"):
            sys.exit(f"checkpoints bench: {self.kind}: `{command}` answered checkpoint={checkpoint!r}")
        return took, checkpoint

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def cli(tree, sub):
    """`whalebox checkpoints SUB` on `tree` with the "on" profile (the profile options
    after the subcommand, or before it in older builds)."""
    where = ["--profile", PROFILES["on"], "--workspace", str(tree)]
    probe = subprocess.run([binary, "checkpoints", sub[0], "--help"], capture_output=True, text=True)
    if "--workspace" in probe.stdout:
        return [binary, "checkpoints", *sub, *where]
    return [binary, "checkpoints", *where, *sub]


def timed(argv, cwd=None, ok=(0,)):
    t = time.perf_counter()
    r = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    took = ms(time.perf_counter() - t)
    if r.returncode not in ok:
        sys.exit(f"checkpoints bench: {' '.join(argv)} exited {r.returncode}: "
                 f"{r.stderr.decode(errors='replace')[-2000:]}")
    return took, r


def med(xs):
    return statistics.median(xs)


def same_id(ids, what):
    if len(set(ids)) != 1:
        sys.exit(f"checkpoints bench: {what}: the tree did not change, yet the checkpoint ids "
                 f"went {ids[:5]}…{ids[-5:]}")


def new_ids(ids, what):
    if len(set(ids)) != len(ids):
        sys.exit(f"checkpoints bench: {what}: 100 files changed before each call, yet "
                 f"checkpoint ids repeat: {ids}")


def check_counts(server, ids, what):
    """Between consecutive checkpoints of a change loop: 100 files modified, nothing else."""
    listed = server.call("checkpoint_list", {"limit": 500})["checkpoints"]
    by_id = {c["id"]: c for c in listed}
    for i in ids[:-1]:
        got = by_id.get(i, {}).get("after_calls")
        if got != {"added": 0, "removed": 0, "modified": CHANGED}:
            sys.exit(f"checkpoints bench: {what}: after checkpoint {i} the list says {got}, "
                     f"not {CHANGED} modified")


def bench_tree(label, tree):
    r = {"label": label}
    rng = random.Random(label)
    paths, r["dirs"], r["bytes"] = tree_files(tree)
    r["files"] = len(paths)
    log(f"{label}: {r['files']} files, {r['dirs']} directories, {r['bytes'] / 1e6:.0f} MB")
    git = lambda *a: timed(GIT + list(a), cwd=tree)  # noqa: E731
    git("status", "--porcelain")  # the index refreshed, as in a tree git was used in

    # The first pass reads and hashes every file (a server starts it at once; a call made
    # right away waits for it): session start to the end of a first `: ok`, "on" minus
    # "off". A restarted session finds the stamp index the first one kept.
    Server.started("off", tree)[0].close()  # the binary and the shell in the page cache
    off, off_first = Server.started("off", tree)
    on, on_first = Server.started("on", tree)
    again, again_first = Server.started("on", tree)
    again.close()
    stat = Server("stat", tree)
    stat.run()
    r["first"] = on_first - off_first
    r["again_first"] = again_first - off_first
    os.sync()  # the store just written goes to disk now, not during what follows

    # 1. Unchanged tree, all interleaved: off and on every round, stat and git every few.
    log(f"{label}: unchanged tree")
    off_t, on_t, on_ids, stat_t, stat_ids, git_t = [], [], [], [], [], []
    every = max(1, CALLS // RUNS)
    for i in range(CALLS):
        off_t.append(off.run()[0])
        t, c = on.run()
        on_t.append(t)
        on_ids.append(c)
        if i % every == 0:
            t, c = stat.run()
            stat_t.append(t)
            stat_ids.append(c)
            git_t.append(git("status", "--porcelain")[0])
    same_id(on_ids, f"{label} inotify")
    same_id(stat_ids, f"{label} stat pass")
    r["off"] = med(off_t)
    r["u_on"] = med(on_t) - r["off"]
    r["u_stat"] = med(stat_t) - r["off"]
    r["u_git"] = med(git_t)
    r["u_on_max"] = max(on_t) - r["off"]

    # The CLI, unchanged: its start (`diff 0` where there is no store: it stops there) and
    # `save` (every record new: a fresh process has no "last" to add the call to).
    empty = work / "empty"
    empty.mkdir(exist_ok=True)
    start = cli(tree=empty, sub=["diff", "0"])
    save = cli(tree=tree, sub=["save", "-m", "bench", "--json"])
    start_t, save_t = [], []
    timed(save)
    for _ in range(RUNS):
        start_t.append(timed(start, ok=(0, 1))[0])
        t, out = timed(save)
        if not json.loads(out.stdout).get("ok"):
            sys.exit(f"checkpoints bench: {' '.join(save)}: {out.stdout.decode()}")
        save_t.append(t)
    r["cli_start"] = med(start_t)
    r["u_cli"] = med(save_t) - r["cli_start"]

    # 2. 100 changed files before each timed run; each loop catches up first (untimed).
    log(f"{label}: {CHANGED} changed files")
    for kind, server in (("on", on), ("stat", stat)):
        server.run()
        took, off2, ids = [], [], []
        for _ in range(RUNS):
            change(paths, rng)
            t, c = server.run()
            took.append(t)
            ids.append(c)
            off2.append(off.run()[0])
        new_ids(ids, f"{label} {kind}")
        check_counts(server, ids, f"{label} {kind}")
        r[f"c_{kind}"] = med(took) - med(off2)
        r[f"c_{kind}_max"] = max(took) - med(off2)
    git("add", "-A")
    git("write-tree")
    took = []
    for _ in range(RUNS):
        change(paths, rng)
        took.append(git("add", "-A")[0] + git("write-tree")[0])
    r["c_git"] = med(took)
    timed(save)
    took = []
    for _ in range(RUNS):
        change(paths, rng)
        took.append(timed(save)[0])
    r["c_cli"] = med(took) - r["cli_start"]
    for s in (off, on, stat):
        s.close()
    stores = list((state / "whalebox" / "checkpoints").glob(f"{tree.name}-*"))
    index = stores[0] / "index.json" if stores else None
    r["index_mb"] = index.stat().st_size / 1e6 if index and index.exists() else 0
    return r


def main():
    work.mkdir(parents=True, exist_ok=True)
    home.mkdir(exist_ok=True)
    shutil.rmtree(state, ignore_errors=True)
    os.sync()
    PROFILES.update(on=profile("on", "on"), stat=profile("stat", "on", inotify=False),
                    off=profile("off", "off"))
    linux = os.environ.get("LINUX_TREE")
    trees = [("project", make_tree(f"project-{SMALL}", SMALL)),
             ("linux" if linux else "linux-sized",
              make_tree("linux-copy", 0, linux) if linux else make_tree(f"linux-{BIG}", BIG))]
    os.sync()
    load = os.getloadavg()[0]
    results = [bench_tree(label, tree) for label, tree in trees]
    load = f"load average {load:.2f} before, {os.getloadavg()[0]:.2f} after"
    shutil.rmtree(state, ignore_errors=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=repo,
                            capture_output=True, text=True).stdout.strip()
    if subprocess.run(["git", "status", "--porcelain", "src"], cwd=repo,
                      capture_output=True, text=True).stdout.strip():
        commit += " (src/ with uncommitted changes)"
    git_version = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()

    cols = [f"{x['label']} ({x['files']} files)" for x in results]
    w = max(26, *(len(c) + 2 for c in cols))

    def row(name, cells):
        print(f"  {name:46}" + "".join(f"{c:>{w}}" for c in cells))

    def vs(key, base):
        return [f"{x[key]:.2f} ({x[key] / x[base]:.3f}x)" for x in results]

    print(f"checkpoints bench: whalebox {commit}, {git_version}; medians in ms of {RUNS} runs "
          f"({CALLS} calls for inotify on vs off); warm page cache; {load}")
    row("", cols)
    row("directories / content", [f"{x['dirs']} / {x['bytes'] / 1e6:.0f} MB" for x in results])
    row("shell_run `: ok`, checkpoints off", [f"{x['off']:.2f}" for x in results])
    row("first pass (every file read and hashed)", [f"{x['first']:.1f}" for x in results])
    row("the same, restarted (the stamp index kept)", [f"{x['again_first']:.1f}" for x in results])
    print("1. unchanged tree; checkpoint / git (goal <= 0.5x, bar 1x)")
    row("git status --porcelain", [f"{x['u_git']:.2f}" for x in results])
    row("checkpoint in session, inotify (pre+post)", vs("u_on", "u_git"))
    row("checkpoint in session, stat pass (pre+post)", vs("u_stat", "u_git"))
    row("CLI `checkpoints save` (stat pass), minus start", vs("u_cli", "u_git"))
    print(f"2. {CHANGED} files changed since the last checkpoint; checkpoint / git")
    row("git add -A && git write-tree", [f"{x['c_git']:.2f}" for x in results])
    row("checkpoint in session, inotify (pre+post)", vs("c_on", "c_git"))
    row("checkpoint in session, stat pass (pre+post)", vs("c_stat", "c_git"))
    row("CLI `checkpoints save` (stat pass), minus start", vs("c_cli", "c_git"))
    row("slowest in-session run: inotify / stat pass",
        [f"{x['c_on_max']:.1f} / {x['c_stat_max']:.1f}" for x in results])
    row("(CLI start: diff 0, empty dir; stamp index)",
        [f"{x['cli_start']:.2f}; {x['index_mb']:.1f} MB" for x in results])
    p = results[0]
    print(f"3. shell_run `{COMMAND}` on the {p['label']}, median of {CALLS}: checkpoints off "
          f"{p['off']:.2f} ms, on {p['off'] + p['u_on']:.2f} ms: {p['u_on']:+.2f} ms "
          f"(goal <= +1 ms); slowest call {p['u_on_max']:+.2f} ms")


main()
