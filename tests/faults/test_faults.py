"""Faults during writes (issue 28), against the real binary and the real kernel.

- Every step: a FUSE file system of the test's own (faultfs.py) passes calls through to a
  real directory and fails exactly one changing call (create, write, chmod, fsync,
  rename, fsync of the directory, ...) with EIO, ENOSPC or EDQUOT, or SIGKILLs whalebox
  while that call waits. For `edit`, `multi_edit`, `write` (a new file), the todo file
  and `checkpoint_restore`, each step of each call is failed in turn, until a run passes
  with no step left to fail. After each run the file holds exactly the old or exactly
  the new bytes, the answer is a clear error (`disk_full`, `io_error`; never
  `internal`) that says which of the two it is, and after the next successful call no
  temporary file is left.
- A real full disk: a tmpfs filled to the byte. A real quota: a tmpfs with a user quota
  (Linux 6.6+), with whalebox run without CAP_SYS_RESOURCE so the quota binds root too.

What the FUSE layer proves: how whalebox answers and what it leaves when the kernel fails
any one of its calls. What it does not: how a real disk orders writes in a power cut
(no crash below the page cache is simulated). Needs root, /dev/fuse and libfuse2
(tests/run installs it); without them the tests skip, saying why.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

import pytest

HERE = pathlib.Path(__file__).resolve().parent
CODES = {"EIO": "io_error", "ENOSPC": "disk_full", "EDQUOT": "disk_full"}
# Steps a writer may fail and carry on: the owner is kept only where the kernel allows;
# a temporary name left after a create (linked, then unlinked) is removed by the next
# commit in that directory.
OPTIONAL_STEPS = {"chown", "unlink"}
# Mixed line endings, which every change must keep.
OLD = "alpha\r\nbeta\r\ngamma\r\n" + "".join(f"line {i}\n" for i in range(200))
NEW = OLD.replace("beta", "BETA", 1)
NEW_MULTI = NEW.replace("line 7\n", "line seven\n", 1)


def skip_loudly(why: str):
    print(f"SKIPPED: {why}", file=sys.stderr)
    pytest.skip(why)


def leftovers(directory: pathlib.Path, expected: set) -> list:
    """Names in `directory` beyond `expected`: temporary files a writer left."""
    return sorted(set(os.listdir(directory)) - expected)


class FaultFs:
    def __init__(self, base: pathlib.Path):
        self.backing = base / "backing"
        self.mount = base / "mnt"
        self.control = base / "control"
        for d in (self.backing, self.mount, self.control):
            d.mkdir()
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "faultfs.py"), self.backing, self.mount, self.control],
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 10
        while not os.path.ismount(self.mount):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                skip_loudly(f"the FUSE file system did not mount: {self.proc.stderr.read()[-500:]}")
            time.sleep(0.05)

    def arm(self, step: int, fault: str):
        (self.control / "log").write_text("")
        (self.control / "plan.json").write_text(json.dumps({"step": step, "fault": fault}))

    def disarm(self) -> list:
        (self.control / "plan.json").write_text("")
        # The file system reads the plan at its next step; make one, so the old plan's
        # count cannot reach the next run.
        (self.mount / ".disarm").write_text("")
        (self.mount / ".disarm").unlink()
        return (self.control / "log").read_text().splitlines()

    def close(self):
        subprocess.run(["umount", "-l", str(self.mount)], check=False)
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="module")
def faultfs(tmp_path_factory):
    if os.geteuid() != 0:
        skip_loudly("mounting the fault-injecting FUSE file system needs root")
    if not os.path.exists("/dev/fuse"):
        skip_loudly("no /dev/fuse on this machine")
    try:
        import fuse  # noqa: F401
    except (ImportError, OSError) as e:
        skip_loudly(f"fusepy or libfuse2 is missing ({e}); tests/run installs both")
    fs = FaultFs(tmp_path_factory.mktemp("faultfs"))
    yield fs
    fs.close()


class Whalebox:
    """`whalebox call` on the workspace `ws` (made afresh), its profile and HOME in
    `config`, the todo file in the workspace, checkpoints on or off."""

    def __init__(self, whalebox_bin: str, ws: pathlib.Path, config: pathlib.Path, checkpoints=False, store=None):
        self.bin = whalebox_bin
        self.ws = ws
        if self.ws.exists():
            shutil.rmtree(self.ws)
        self.ws.mkdir()
        self.home = config / f"home-{ws.name}"
        self.home.mkdir(exist_ok=True)
        self.store = store or config / f"store-{ws.name}"
        self.profile = config / f"{ws.name}.toml"
        lines = [
            f'workspace = "{self.ws}"',
            "[todo]",
            f'file = "{self.ws / "todo.json"}"',
            "[checkpoints]",
            f'mode = "{"on" if checkpoints else "off"}"',
            f'dir = "{self.store}"',
        ]
        self.profile.write_text("\n".join(lines) + "\n")

    @classmethod
    def on(cls, whalebox_bin: str, fs: FaultFs, name: str, checkpoints: bool):
        """A workspace inside the fault file system, its checkpoint store there too."""
        return cls(whalebox_bin, fs.mount / name, fs.control, checkpoints, store=fs.mount / f"store-{name}")

    def call(self, tool: str, args: dict, prefix=()):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("WHALEBOX_", "XDG_"))}
        env["HOME"] = str(self.home)
        out = subprocess.run(
            [*prefix, self.bin, "call", tool, "--profile", str(self.profile), "--args", json.dumps(args)],
            capture_output=True,
            text=True,
            env=env,
            cwd=self.home,
            timeout=120,
        )
        try:
            envelope = json.loads(out.stdout) if out.stdout.strip() else None
        except json.JSONDecodeError:
            envelope = None
        return out.returncode, envelope, out.stderr


def says_written(envelope) -> bool:
    return "IS in" in envelope["text"]


def sweep(
    fs,
    prepare,
    run,
    state,
    old,
    new,
    expect_names,
    faults=("EIO", "ENOSPC", "EDQUOT", "KILL"),
    settle=lambda: None,
    said_new=says_written,
    best_effort=OPTIONAL_STEPS,
):
    """Fail each step of `run` in turn with each fault. `prepare` puts the old state back
    (no fault armed), `settle` runs after the fault is gone (what the next use does),
    `state` reads what the file now is, `said_new` whether the answer says the change
    was made, `expect_names` the names the workspace should hold once a call has
    succeeded, `best_effort` the steps whose failure may be answered ok when the change
    was made. Returns the steps failed per fault."""
    failed = {}
    for fault in faults:
        step = 1
        while True:
            prepare()
            fs.arm(step, fault)
            code, envelope, stderr = run()
            log = fs.disarm()
            hit = [line for line in log if line.endswith("FAULT")]
            settle()
            now = state()
            where = f"{fault} at step {step} ({hit[0] if hit else 'none'}); log: {log}; stderr: {stderr[-800:]}"
            assert now in (old, new), f"the file is neither old nor new after {where}"
            if not hit:
                assert envelope and envelope["ok"], f"a run with no fault failed: {envelope} {where}"
                assert now == new, where
                break
            if fault != "KILL" and hit[0].split()[1] in best_effort and envelope and envelope["ok"]:
                assert now == new, where
            elif fault == "KILL":
                assert code == -9, f"whalebox was not killed: {code} {envelope} {where}"
            else:
                assert envelope is not None, f"no envelope: {where}"
                assert not envelope["ok"], f"a failed step was answered ok: {envelope} {where}"
                assert envelope["code"] == CODES[fault], f"{envelope['code']}: {envelope['text']} {where}"
                assert said_new(envelope) == (now == new), (
                    f"the answer misstates the file: {envelope['text']} {where}"
                )
            # The next call that succeeds leaves no temporary file behind.
            prepare()
            code, envelope, stderr = run()
            assert envelope and envelope["ok"], f"the call after {where} failed: {envelope} {stderr[-800:]}"
            left = leftovers_of(expect_names)
            assert not left, f"left behind after {where}: {left}"
            step += 1
        failed[fault] = step - 1
    return failed


def leftovers_of(expect_names):
    directory, names = expect_names()
    return leftovers(directory, names)


def test_edit_multi_edit_and_write_keep_old_or_new_at_every_failed_step(faultfs, whalebox_bin):
    wb = Whalebox.on(whalebox_bin, faultfs, "edits", checkpoints=False)
    f = wb.ws / "f.txt"

    def prepare():
        f.write_bytes(OLD.encode())
        for extra in ("new.txt",):
            (wb.ws / extra).unlink(missing_ok=True)

    def state():
        return f.read_bytes().decode()

    def names():
        return wb.ws, {"f.txt"}

    edit = sweep(
        faultfs,
        prepare,
        lambda: wb.call("edit", {"file_path": str(f), "search": "beta", "replace": "BETA"}),
        state,
        OLD,
        NEW,
        names,
    )
    multi = sweep(
        faultfs,
        prepare,
        lambda: wb.call(
            "multi_edit",
            {
                "file_path": str(f),
                "edits": [
                    {"search": "alpha\r\nbeta", "replace": "alpha\r\nBETA"},
                    {"search": "line 7\n", "replace": "line seven\n"},
                ],
            },
        ),
        state,
        OLD,
        NEW_MULTI,
        names,
    )

    new_file = wb.ws / "sub" / "new.txt"

    def prepare_create():
        prepare()
        shutil.rmtree(wb.ws / "sub", ignore_errors=True)

    def created():
        return new_file.read_bytes().decode() if new_file.exists() else ""

    def names_create():
        return wb.ws / "sub", {"new.txt"}

    # (A new file gets "\n" endings.)
    content = NEW.replace("\r\n", "\n")
    write = sweep(
        faultfs,
        prepare_create,
        lambda: wb.call("write", {"file_path": str(new_file), "content": content}),
        created,
        "",
        content,
        names_create,
    )
    print(f"steps failed: edit {edit}, multi_edit {multi}, write {write}", file=sys.stderr)
    for steps in (edit, multi, write):
        assert all(n >= 4 for n in steps.values()), steps


def test_the_todo_file_keeps_old_or_new_at_every_failed_step(faultfs, whalebox_bin):
    wb = Whalebox.on(whalebox_bin, faultfs, "todo", checkpoints=False)
    todo = wb.ws / "todo.json"
    wb.call("todo_add", {"content": "first"})
    before = todo.read_text()

    def prepare():
        todo.write_text(before)

    def state():
        items = json.loads(todo.read_text())
        return json.dumps(items, sort_keys=True)

    old = json.dumps(json.loads(before), sort_keys=True)
    wb.call("todo_add", {"content": "second"})
    new = state()
    steps = sweep(
        faultfs,
        prepare,
        lambda: wb.call("todo_add", {"content": "second"}),
        state,
        old,
        new,
        lambda: (wb.ws, {"todo.json"}),
    )
    print(f"steps failed: todo_add {steps}", file=sys.stderr)


def test_a_checkpoint_restore_keeps_old_or_new_at_every_failed_step(faultfs, whalebox_bin):
    """A restore puts f.txt back from NEW to OLD. Failed midway, it is finished by the
    next use of the store; each file is old or new after the run, and restored after
    that next use once the fault is gone."""
    wb = Whalebox.on(whalebox_bin, faultfs, "restore", checkpoints=True)
    f = wb.ws / "f.txt"
    g = wb.ws / "g.txt"
    target = {}

    def prepare():
        shutil.rmtree(wb.store, ignore_errors=True)
        for p in wb.ws.iterdir():
            shutil.rmtree(p) if p.is_dir() else p.unlink()
        f.write_text(OLD)
        g.write_text("g old\n")
        code, envelope, _ = wb.call("edit", {"file_path": str(f), "search": "beta", "replace": "BETA"})
        assert envelope["ok"], envelope
        code, envelope, _ = wb.call("write", {"file_path": str(wb.ws / "h.txt"), "content": "h\n"})
        assert envelope["ok"], envelope
        code, envelope, _ = wb.call("checkpoint_list", {})
        target["id"] = envelope["data"]["checkpoints"][-1]["id"]

    def state():
        h = (wb.ws / "h.txt").read_bytes().decode() if (wb.ws / "h.txt").exists() else None
        return (f.read_bytes().decode(), h)

    def run():
        result = wb.call("checkpoint_restore", {"id": target["id"], "force": True})
        f_now, h_now = state()
        assert f_now in (OLD, NEW) and h_now in ("h\n", None), f"a file is half-restored: {f_now!r} {h_now!r}"
        return result

    def settle():
        # The next use of the store finishes a restore that stopped midway.
        wb.call("checkpoint_list", {})

    def names():
        return wb.ws, {"f.txt", "g.txt"}

    steps = sweep(
        faultfs,
        prepare,
        run,
        state,
        (NEW, "h\n"),
        (OLD, None),
        names,
        faults=("EIO", "ENOSPC", "KILL"),
        settle=settle,
        said_new=lambda envelope: any(w in envelope["text"] for w in ("stopped midway", "IS restored")),
        # The store's bookkeeping (in-flight markers, the index, the logs) is rebuilt
        # when it fails; what matters is the workspace and what the answer says of it.
        best_effort={"create", "write", "rename", "unlink", "chmod", "chown", "fsync", "mkdir", "rmdir"},
    )
    print(f"steps failed: checkpoint_restore {steps}", file=sys.stderr)


def small_tmpfs(at: pathlib.Path, options: str):
    at.mkdir()
    out = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(at)], capture_output=True, text=True)
    if out.returncode != 0:
        skip_loudly(f"cannot mount a tmpfs with {options}: {out.stderr.strip()}")


def fill(directory: pathlib.Path):
    """Fill the file system of `directory` to the last byte."""
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        for size in (1 << 20, 1 << 12, 1):
            while True:
                try:
                    os.write(fd, b"\0" * size)
                except OSError:
                    break
    finally:
        os.close(fd)


def seeded(whalebox_bin: str, mnt: pathlib.Path, config: pathlib.Path) -> Whalebox:
    """A workspace on the file system mounted at `mnt`: f.txt and a todo list of one."""
    wb = Whalebox(whalebox_bin, mnt / "ws", config)
    (wb.ws / "f.txt").write_text(OLD)
    assert wb.call("todo_add", {"content": "first"})[1]["ok"]
    return wb


def check_full(wb, prefix=()):
    """Every writing tool answers disk_full on a full disk and changes nothing."""
    f = wb.ws / "f.txt"
    todo_before = (wb.ws / "todo.json").read_bytes()
    for tool, args in [
        ("edit", {"file_path": str(f), "search": "beta", "replace": "BETA" * 3000}),
        ("multi_edit", {"file_path": str(f), "edits": [{"search": "gamma", "replace": "G" * 9000}]}),
        ("write", {"file_path": str(wb.ws / "new.txt"), "content": "x" * 20000}),
        ("todo_add", {"content": "y" * 20000}),
    ]:
        code, envelope, stderr = wb.call(tool, args, prefix)
        assert envelope is not None, stderr
        assert envelope["code"] == "disk_full", f"{tool}: {envelope}"
        assert "Next step:" in envelope["text"], envelope["text"]
        assert f.read_bytes().decode() == OLD
        assert (wb.ws / "todo.json").read_bytes() == todo_before
        assert not (wb.ws / "new.txt").exists()
        assert leftovers(wb.ws, {"f.txt", "todo.json", "filler"}) == []


def test_a_tmpfs_full_to_the_byte_answers_disk_full(tmp_path, whalebox_bin):
    if os.geteuid() != 0:
        skip_loudly("mounting a tmpfs needs root")
    mnt = tmp_path / "full"
    small_tmpfs(mnt, "size=1m")
    try:
        wb = seeded(whalebox_bin, mnt, tmp_path)
        fill(wb.ws)
        check_full(wb)
        (wb.ws / "filler").unlink()
        code, envelope, _ = wb.call("edit", {"file_path": str(wb.ws / "f.txt"), "search": "beta", "replace": "BETA"})
        assert envelope["ok"], envelope
        assert leftovers(wb.ws, {"f.txt", "todo.json"}) == []
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_used_up_quota_answers_disk_full(tmp_path, whalebox_bin):
    if os.geteuid() != 0:
        skip_loudly("mounting a tmpfs needs root")
    if not shutil.which("setpriv"):
        skip_loudly("setpriv (util-linux) is missing")
    mnt = tmp_path / "quota"
    small_tmpfs(mnt, "size=8m,quota,usrquota_block_hardlimit=1m")
    try:
        # Root has CAP_SYS_RESOURCE, which passes any quota: whalebox runs without it.
        no_resource = ["setpriv", "--inh-caps=-sys_resource", "--bounding-set=-sys_resource"]
        wb = seeded(whalebox_bin, mnt, tmp_path)
        fill_as = subprocess.run(
            [*no_resource, sys.executable, "-c", f"import sys; sys.path.insert(0, {str(HERE)!r}); "
             f"import pathlib, test_faults; test_faults.fill(pathlib.Path({str(wb.ws)!r}))"],
            capture_output=True,
            text=True,
        )
        assert fill_as.returncode == 0, fill_as.stderr
        statvfs = os.statvfs(wb.ws)
        if statvfs.f_bavail * statvfs.f_frsize < 1 << 20:
            pytest.fail("the quota did not bind: the tmpfs itself filled up")
        # The filler is the whole quota; a write by root with CAP_SYS_RESOURCE still works.
        check_full(wb, no_resource)
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
