"""Checkpoints through the real MCP client on both lifecycles, and `whalebox checkpoints`
beside a running server: a checkpoint before every call that may change the workspace,
checkpoint_list / checkpoint_diff / checkpoint_restore (exact, undoable, careful about
the person's own changes and running tasks), and several sessions on one store."""

import asyncio
import json
import os
import pathlib
import re
import stat
import subprocess

import pytest

from test_mcp import MODES
from test_shell import call

pytestmark = pytest.mark.anyio


def env_for(workspace: pathlib.Path) -> dict:
    """The environment of the server and of the person's CLI: HOME and XDG_STATE_HOME in
    the test's tmp directory, so the store is never the real ~/.local/state."""
    tmp = workspace.parent
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp),
        "XDG_STATE_HOME": str(tmp / "state"),
        "RUST_LOG": "warn",
    }


def cp_client(whalebox_bin, workspace, mode):
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=whalebox_bin,
        args=["serve", "--workspace", str(workspace)],
        env=env_for(workspace),
    )
    return Client(params, mode=mode, read_timeout_seconds=60)


def cli(whalebox_bin, workspace, command, *args, check=True):
    """`whalebox checkpoints COMMAND --workspace WS ARGS…`, as the person runs it (from
    the workspace)."""
    proc = subprocess.run(
        [whalebox_bin, "checkpoints", command, "--workspace", str(workspace), *args],
        cwd=workspace, env=env_for(workspace), capture_output=True, text=True, timeout=60,
    )
    if check:
        assert proc.returncode == 0, (proc.stdout, proc.stderr)
    return proc


def store_dir(workspace: pathlib.Path) -> pathlib.Path:
    dirs = list((workspace.parent / "state" / "whalebox" / "checkpoints").glob("ws-*"))
    assert len(dirs) == 1, dirs
    return dirs[0]


def snapshot(root: pathlib.Path) -> dict:
    """Every path under `root` (.git included): a file's bytes and mode, a link's target,
    a directory's mode."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = pathlib.Path(dirpath, name)
            st = os.lstat(p)
            rel = str(p.relative_to(root))
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", oct(stat.S_IMODE(st.st_mode)))
            else:
                out[rel] = ("file", oct(stat.S_IMODE(st.st_mode)), p.read_bytes())
    return out


def differences(a: dict, b: dict) -> dict:
    return {k: (a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}


def assert_same(now: dict, expected: dict):
    assert now == expected, f"differs (now, expected): {differences(now, expected)}"


def failed(env: dict, code: str) -> dict:
    assert not env["ok"] and env["code"] == code, env
    return env


def prepare(workspace: pathlib.Path):
    """What the conftest workspace lacks: a script to chmod, a link, a private file, an
    empty directory."""
    run = workspace / "run.sh"
    run.write_text("#!/bin/sh\necho run\n")
    run.chmod(0o644)
    os.symlink("src/lib.rs", workspace / "link")
    key = workspace / "src" / "keep.key"
    key.write_bytes(b"\x00\x01secret\xff")
    key.chmod(0o600)
    (workspace / "src" / "empty").mkdir()


async def ids(c) -> list[str]:
    env = await call(c, "checkpoint_list", {"limit": 500})
    assert env["ok"], env
    return [s["id"] for s in env["data"]["checkpoints"]]


@pytest.mark.parametrize("mode", MODES)
async def test_a_model_undoes_its_calls_exactly(whalebox_bin, workspace, mode):
    prepare(workspace)
    async with cp_client(whalebox_bin, workspace, mode) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert {"checkpoint_list", "checkpoint_diff", "checkpoint_restore"} <= set(tools)
        assert tools["checkpoint_list"].annotations.read_only_hint is True
        assert tools["checkpoint_restore"].annotations.read_only_hint is False

        env = await call(c, "checkpoint_list", {})
        assert env["ok"] and env["data"]["checkpoints"] == [] and env["text"].startswith("No checkpoints yet")

        before_write = snapshot(workspace)
        env = await call(c, "write", {"file_path": "notes.txt", "content": "one\ntwo\n"})
        assert env["ok"] and env["data"]["checkpoint"] == "1", env
        env = await call(c, "edit", {"file_path": "notes.txt", "search": "two", "replace": "TWO"})
        assert env["ok"] and env["data"]["checkpoint"] == "2", env
        # Certainly read-only: no checkpoint.
        env = await call(c, "shell_run", {"command": "ls src"})
        assert env["ok"] and "checkpoint" not in env["data"] and "checkpoint_missing" not in env["data"], env
        command = "rm -rf src && echo hi > z && chmod 755 run.sh && ln -sfn z link && cp logo.png l && cat l >> logo.png && rm l"
        assert len(command) <= 120, "the summary is the whole command"
        env = await call(c, "shell_run", {"command": command})
        assert env["ok"] and env["data"]["exit_code"] == 0 and env["data"]["checkpoint"] == "3", env
        task = env["data"]["task_id"]
        after_shell = snapshot(workspace)
        assert "src" not in after_shell and after_shell["link"] == ("link", "z")
        # The store is outside the workspace, private.
        store = store_dir(workspace)
        assert stat.S_IMODE(store.stat().st_mode) == 0o700
        assert not any(".whalebox" in p or "checkpoint" in p for p in after_shell)

        env = await call(c, "checkpoint_list", {})
        listed = env["data"]["checkpoints"]
        assert [s["id"] for s in listed] == ["3", "2", "1"], "newest first"
        assert [s["causes"][0]["tool"] for s in listed] == ["shell_run", "edit", "write"]
        assert listed[0]["causes"][0]["summary"] == command and listed[0]["causes"][0]["task"] == task
        assert listed[2]["causes"][0]["summary"] == "notes.txt (8 bytes)"
        assert [s["by_calls"] for s in listed] == [
            {"added": 1, "removed": 3, "modified": 3},  # z; src's 3 files; run.sh, link, logo.png
            {"added": 0, "removed": 0, "modified": 1},
            {"added": 1, "removed": 0, "modified": 0},
        ]
        assert all(s["after_calls"] == {"added": 0, "removed": 0, "modified": 0} for s in listed)
        lines = env["text"].splitlines()
        assert re.fullmatch(rf"3  \d+s ago  shell_run {re.escape(command)} \[task {task}\]  \(\+1 −3 M3\)", lines[0]), lines
        assert re.fullmatch(r"2  \d+s ago  edit notes.txt  \(\+0 −0 M1\)", lines[1]), lines
        assert re.fullmatch(r"1  \d+s ago  write notes.txt \(8 bytes\)  \(\+1 −0 M0\)", lines[2]), lines
        assert "outside whalebox" not in env["text"]
        assert [s["id"] for s in (await call(c, "checkpoint_list", {"limit": 2}))["data"]["checkpoints"]] == ["3", "2"]

        env = await call(c, "checkpoint_diff", {"id": "1"})
        assert env["ok"], env
        text = env["text"]
        assert text.startswith("8 path(s) changed since checkpoint 1 (--- the checkpoint, +++ now):\n"), text
        assert "notes.txt: created since\n--- a/notes.txt\n+++ b/notes.txt\n@@ -0,0 +1,2 @@\n+one\n+TWO\n" in text
        assert "src/lib.rs: deleted since\n--- a/src/lib.rs\n+++ b/src/lib.rs\n" in text
        assert "-pub fn answer() -> u32 {\n" in text
        assert "run.sh: modified: mode 644 → 755\n" in text
        assert "link: modified: a link to src/lib.rs → a link to z\n" in text
        assert re.search(r"logo\.png: modified: 16 bytes, sha256 \w+, mode 644 → 32 bytes, sha256 \w+, mode 644\n", text), text
        assert "z: created since\n--- a/z\n+++ b/z\n@@ -0,0 +1 @@\n+hi\n" in text
        changes = {d["path"]: d["change"] for d in env["data"]["changes"]}
        assert {k: v for k, v in changes.items() if k != "src" and not k.startswith("src/empty")} == {
            "notes.txt": "added", "src/lib.rs": "removed", "src/main.rs": "removed",
            "src/keep.key": "removed", "run.sh": "modified", "link": "modified",
            "logo.png": "modified", "z": "added",
        }, changes
        env = await call(c, "checkpoint_diff", {"id": "1", "path": "src"})
        assert {d["path"] for d in env["data"]["changes"]} <= {"src", "src/lib.rs", "src/main.rs", "src/keep.key", "src/empty"}
        assert "notes.txt" not in env["text"] and "src/main.rs: deleted since" in env["text"]
        env = await call(c, "checkpoint_diff", {"id": "3", "path": "notes.txt"})
        assert env["text"] == "Nothing changed since checkpoint 3.", env

        # A dry run says what would change, and changes nothing.
        env = await call(c, "checkpoint_restore", {"id": "1", "dry_run": True})
        assert env["ok"] and env["data"]["dry_run"] is True and env["data"]["before"] is None, env
        assert env["text"].startswith("Dry run: restoring checkpoint 1 would change ")
        assert "  notes.txt: removed (created since)\n" in env["text"]
        assert "  src/lib.rs: recreated\n" in env["text"]
        assert env["text"].endswith("Call again without dry_run to restore.")
        assert_same(snapshot(workspace), after_shell)
        assert await ids(c) == ["3", "2", "1"], "a dry run takes no checkpoint"

        # The restore: bytes, modes, links, the empty directory, as they were.
        env = await call(c, "checkpoint_restore", {"id": "1"})
        assert env["ok"], env
        undo = env["data"]["before"]
        assert undo == "4" and env["data"]["outside"] == [], env
        assert env["text"].startswith("Restored checkpoint 1: ")
        assert env["text"].endswith(f'Undo this restore with checkpoint_restore {{"id": "{undo}"}}.')
        assert_same(snapshot(workspace), before_write)

        env = await call(c, "checkpoint_list", {})
        top = env["data"]["checkpoints"][0]
        assert top["id"] == "4" and top["causes"][0]["tool"] == "checkpoint_restore"
        assert top["causes"][0]["summary"] == "to checkpoint 1"
        assert env["text"].splitlines()[0].startswith("4  ")

        # Undoing the restore brings back the state after the command.
        env = await call(c, "checkpoint_restore", {"id": undo})
        assert env["ok"], env
        assert_same(snapshot(workspace), after_shell)
        # And the model's tools still see the workspace as it is.
        env = await call(c, "read_file", {"file_path": "notes.txt"})
        assert env["text"] == "     1\tone\n     2\tTWO\n"
        env = await call(c, "checkpoint_restore", {"id": "2", "paths": ["notes.txt"]})
        assert env["ok"] and [p for p, _ in env["data"]["changes"]] == ["notes.txt"], env
        assert (workspace / "notes.txt").read_text() == "one\ntwo\n"
        assert not (workspace / "src").exists(), "only the path asked for"


@pytest.mark.parametrize("mode", MODES)
async def test_the_person_uses_the_cli_while_the_server_runs(whalebox_bin, workspace, mode):
    async with cp_client(whalebox_bin, workspace, mode) as c:
        before = snapshot(workspace)
        env = await call(c, "edit", {"file_path": "README.md", "search": "Second line", "replace": "Changed line"})
        assert env["data"]["checkpoint"] == "1", env
        env = await call(c, "write", {"file_path": "new.txt", "content": "new\n"})
        assert env["data"]["checkpoint"] == "2", env
        by_model = snapshot(workspace)

        out = cli(whalebox_bin, workspace, "list").stdout
        assert re.match(r"2  \d+s ago  write new\.txt \(4 bytes\)  \(\+1 −0 M0\)\n1  \d+s ago  edit README\.md  \(\+0 −0 M1\)\n", out), out
        listed = json.loads(cli(whalebox_bin, workspace, "list", "--json").stdout)
        assert listed["ok"] and [s["id"] for s in listed["checkpoints"]] == ["2", "1"]
        out = cli(whalebox_bin, workspace, "diff", "1", "README.md").stdout
        assert "--- a/README.md\n+++ b/README.md\n" in out and "-Second line\n+Changed line\n" in out, out
        assert "new.txt" not in out
        out = cli(whalebox_bin, workspace, "restore", "1", "--dry-run").stdout
        assert out.startswith("Dry run: restoring checkpoint 1 would change 2 path(s):"), out
        assert_same(snapshot(workspace), by_model)

        out = cli(whalebox_bin, workspace, "restore", "1").stdout
        assert out.startswith("Restored checkpoint 1: 2 path(s) put back."), out
        m = re.search(r"Undo this restore with `whalebox checkpoints restore (\d+)`\.", out)
        assert m, out
        undo = m.group(1)
        assert undo == "3"
        assert_same(snapshot(workspace), before)

        # The model's next list shows the person's restore.
        env = await call(c, "checkpoint_list", {})
        top = env["data"]["checkpoints"][0]
        assert top["id"] == undo and top["session"].startswith("cli "), top
        assert top["causes"][0]["tool"] == "checkpoint_restore" and top["causes"][0]["summary"] == "to checkpoint 1"
        assert top["by_calls"] == {"added": 0, "removed": 1, "modified": 1}, top
        assert [s["id"] for s in env["data"]["checkpoints"]] == ["3", "2", "1"]
        assert re.match(r"3  \d+s ago  checkpoint_restore to checkpoint 1  \(\+0 −1 M1\)\n", env["text"]), env["text"]
        env = await call(c, "checkpoint_diff", {"id": undo})
        assert {d["path"]: d["change"] for d in env["data"]["changes"]} == {"README.md": "modified", "new.txt": "removed"}
        # The model undoes the person's restore; nothing of it is an outside change.
        env = await call(c, "checkpoint_restore", {"id": undo})
        assert env["ok"] and env["data"]["outside"] == [], env
        assert_same(snapshot(workspace), by_model)
        env = await call(c, "edit", {"file_path": "new.txt", "search": "new", "replace": "newer"})
        assert env["ok"] and env["data"]["checkpoint"] == "5", env
    # After the server exited, the CLI sees all of it.
    listed = json.loads(cli(whalebox_bin, workspace, "list", "--json").stdout)
    assert [s["id"] for s in listed["checkpoints"]] == ["5", "4", "3", "2", "1"]


@pytest.mark.parametrize("mode", MODES)
async def test_outside_changes_need_force(whalebox_bin, workspace, mode):
    async with cp_client(whalebox_bin, workspace, mode) as c:
        before = snapshot(workspace)
        env = await call(c, "edit", {"file_path": "README.md", "search": "Second line", "replace": "By the model"})
        first = env["data"]["checkpoint"]
        env = await call(c, "edit", {"file_path": "src/lib.rs", "search": "42", "replace": "43"})
        assert env["ok"], env
        # The person edits a file and adds one, outside whalebox.
        (workspace / "README.md").write_text("# demo\nBy the person\n")
        (workspace / "person.txt").write_text("mine\n")
        by_person = snapshot(workspace)

        env = await call(c, "checkpoint_list", {})
        assert "then, outside whalebox: +1 −0 M1" in env["text"], env["text"]
        assert env["data"]["checkpoints"][0]["after_calls"] == {"added": 1, "removed": 0, "modified": 1}

        env = failed(await call(c, "checkpoint_restore", {"id": first}), "write_conflict")
        assert env["data"]["outside"] == ["README.md", "person.txt"], env
        assert "README.md" in env["text"] and "person.txt" in env["text"]
        assert "nothing was restored" in env["text"] and "force: true" in env["text"], env["text"]
        assert_same(snapshot(workspace), by_person)
        # A dry run names them too.
        env = await call(c, "checkpoint_restore", {"id": first, "dry_run": True})
        assert env["ok"] and env["data"]["outside"] == ["README.md", "person.txt"], env
        assert "(overwritten): README.md, person.txt" in env["text"]
        # Leaving them out needs no force.
        env = await call(c, "checkpoint_restore", {"id": first, "paths": ["src/lib.rs"]})
        assert env["ok"] and env["data"]["outside"] == [], env
        assert (workspace / "src" / "lib.rs").read_text() == "pub fn answer() -> u32 {\n    42\n}\n"
        assert (workspace / "README.md").read_text() == "# demo\nBy the person\n"

        env = await call(c, "checkpoint_restore", {"id": first, "force": True})
        assert env["ok"] and env["data"]["outside"] == ["README.md", "person.txt"], env
        assert "Changed since by something other than whalebox's calls and tasks (overwritten): README.md, person.txt" in env["text"]
        assert_same(snapshot(workspace), before)
        # The person's work is not lost: the restore is undoable.
        undo = env["data"]["before"]
        env = await call(c, "checkpoint_restore", {"id": undo})
        assert env["ok"], env
        after_undo = snapshot(workspace)
        assert after_undo["README.md"][2] == b"# demo\nBy the person\n" and after_undo["person.txt"][2] == b"mine\n"

    # The CLI refuses the same way, and says --force.
    proc = cli(whalebox_bin, workspace, "restore", first, check=False)
    assert proc.returncode != 0 and "--force" in proc.stderr and "README.md" in proc.stderr, proc
    assert_same(snapshot(workspace), after_undo)
    cli(whalebox_bin, workspace, "restore", first, "--force")
    assert_same(snapshot(workspace), before)


@pytest.mark.parametrize("mode", MODES)
async def test_running_tasks_block_a_restore_unless_cancelled(whalebox_bin, workspace, mode):
    async with cp_client(whalebox_bin, workspace, mode) as c:
        before = snapshot(workspace)
        env = await call(c, "shell_run", {"command": "echo started > bg.txt; sleep 30", "background": True})
        assert env["ok"] and env["data"]["status"] == "running", env
        task, first = env["data"]["task_id"], env["data"]["checkpoint"]
        for _ in range(100):
            if (workspace / "bg.txt").exists():
                break
            await asyncio.sleep(0.05)
        assert (workspace / "bg.txt").read_text() == "started\n"

        env = await call(c, "checkpoint_list", {})
        assert f"then, while task {task}" in env["text"], env["text"]
        assert "outside whalebox" not in env["text"]

        env = failed(await call(c, "checkpoint_restore", {"id": first}), "write_conflict")
        assert env["data"]["tasks"] == [task], env
        assert f"task {task} (echo started > bg.txt; sleep 30)" in env["text"], env["text"]
        assert "cancel_tasks: true" in env["text"]
        assert (workspace / "bg.txt").exists()
        env = await call(c, "shell_wait", {"task_id": task, "timeout_ms": 10})
        assert env["data"]["status"] == "running", "a refused restore leaves the task alone"
        # A dry run is fine while it runs.
        env = await call(c, "checkpoint_restore", {"id": first, "dry_run": True})
        assert env["ok"] and "  bg.txt: removed (created since)" in env["text"], env

        env = await call(c, "checkpoint_restore", {"id": first, "cancel_tasks": True})
        assert env["ok"], env
        assert env["data"]["outside"] == [], "what the task wrote is not an outside change"
        env = await call(c, "shell_wait", {"task_id": task, "timeout_ms": 2000})
        assert env["data"]["status"] != "running", env
        assert_same(snapshot(workspace), before)


@pytest.mark.parametrize("mode", MODES)
async def test_bad_ids_and_paths_change_nothing(whalebox_bin, workspace, mode):
    async with cp_client(whalebox_bin, workspace, mode) as c:
        env = await call(c, "write", {"file_path": "a.txt", "content": "a\n"})
        first = env["data"]["checkpoint"]
        await call(c, "edit", {"file_path": "a.txt", "search": "a", "replace": "b"})
        now = snapshot(workspace)
        outside = (workspace.parent / "outside.txt").read_text()
        kept = await ids(c)

        for tool in ("checkpoint_restore", "checkpoint_diff"):
            env = failed(await call(c, tool, {"id": "999"}), "not_found")
            assert "no checkpoint 999" in env["text"] and "checkpoint_list" in env["data"]["next_step"], env
            env = await call(c, tool, {"id": "../x"})
            assert env["code"] in ("invalid_input", "not_found"), env
            assert env["data"]["next_step"], env
            for garbage in ("", "1/../1", "-1", "1 2"):
                env = await call(c, tool, {"id": garbage})
                assert env["code"] in ("invalid_input", "not_found"), (garbage, env)
        env = failed(await call(c, "checkpoint_diff", {"id": first, "path": "../outside.txt"}), "path_denied")
        assert env["data"]["next_step"]
        failed(await call(c, "checkpoint_diff", {"id": first, "path": "/etc"}), "path_denied")
        for paths in (["../outside.txt"], ["/etc/passwd"], ["a.txt", str(workspace.parent)]):
            env = failed(await call(c, "checkpoint_restore", {"id": first, "paths": paths}), "path_denied")
            assert env["data"]["next_step"], env
        failed(await call(c, "checkpoint_restore", {"id": first, "path": "a.txt"}), "invalid_input")
        failed(await call(c, "checkpoint_list", {"limit": 0}), "invalid_input")

        assert_same(snapshot(workspace), now)
        assert (workspace.parent / "outside.txt").read_text() == outside
        assert await ids(c) == kept, "no checkpoint for a refused call"

        # The store is the server's: a command neither reads nor writes it.
        store = store_dir(workspace)
        env = await call(c, "shell_run", {"command": f"ls {store}/records"})
        assert env["data"]["exit_code"] != 0, env
        env = await call(c, "shell_run", {"command": f"echo x > {store}/records/77.json"})
        assert env["data"]["exit_code"] != 0, env
        assert not (store / "records" / "77.json").exists()

    for bad in (["restore", "../x"], ["restore", "999"], ["diff", "../x"],
                ["restore", first, "../outside.txt"], ["diff", first, "/etc"]):
        proc = cli(whalebox_bin, workspace, *bad, check=False)
        assert proc.returncode != 0 and proc.stderr.strip(), (bad, proc)
    proc = cli(whalebox_bin, workspace, "restore", "999", "--json", check=False)
    assert proc.returncode != 0 and json.loads(proc.stdout) == {"ok": False, "error": "no checkpoint 999"}, proc
    assert_same(snapshot(workspace), now)


@pytest.mark.parametrize("mode", MODES)
async def test_without_a_store_calls_still_run_and_say_so(whalebox_bin, workspace, mode):
    # XDG_STATE_HOME is a file: the store cannot be made.
    (workspace.parent / "state").write_text("not a directory\n")
    async with cp_client(whalebox_bin, workspace, mode) as c:
        env = await call(c, "write", {"file_path": "a.txt", "content": "a\n"})
        assert env["ok"] and "checkpoint" not in env["data"], env
        assert "Not a directory" in env["data"]["checkpoint_missing"], env
        assert (workspace / "a.txt").read_text() == "a\n"
        env = failed(await call(c, "checkpoint_list", {}), "unsupported")
        assert "checkpoints are not available in this session" in env["text"], env
        failed(await call(c, "checkpoint_restore", {"id": "1"}), "unsupported")
        env = await call(c, "shell_run", {"command": "ls"})
        assert "checkpoint_missing" not in env["data"], "a read-only command needs none"


def links_out(workspace: pathlib.Path) -> pathlib.Path:
    """src/ (with lib.rs and deep/d.rs) as checkpointed; the returned directory outside the
    workspace is what a command will put a link to in its place."""
    (workspace / "src" / "deep").mkdir()
    (workspace / "src" / "deep" / "d.rs").write_text("d\n")
    out = workspace.parent / "outdir"
    out.mkdir()
    return out


@pytest.mark.parametrize("mode", MODES)
async def test_a_restore_never_writes_through_a_link_out_of_the_workspace(whalebox_bin, workspace, mode):
    out = links_out(workspace)
    async with cp_client(whalebox_bin, workspace, mode) as c:
        before = snapshot(workspace)
        env = await call(c, "shell_run", {"command": "rm -rf src && ln -s ../outdir src"})
        first = env["data"]["checkpoint"]
        for paths in (["src/lib.rs"], ["src/deep"], ["src"]):
            env = failed(await call(c, "checkpoint_restore", {"id": first, "paths": paths}), "path_denied")
            assert "outdir" in env["text"], env
        assert list(out.iterdir()) == []
        env = await call(c, "checkpoint_restore", {"id": first})
        assert env["ok"] and "  src: rewritten" in env["text"], env
        assert list(out.iterdir()) == [], "the link is replaced, not followed"
        assert_same(snapshot(workspace), before)


async def test_the_cli_never_writes_through_a_link_out_of_the_workspace(whalebox_bin, workspace):
    out = links_out(workspace)
    async with cp_client(whalebox_bin, workspace, "legacy") as c:
        env = await call(c, "shell_run", {"command": "rm -rf src && ln -s ../outdir src"})
        first = env["data"]["checkpoint"]
    for path in ("src/lib.rs", "src/deep"):
        cli(whalebox_bin, workspace, "restore", first, path, check=False)
        assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == [], \
            f"restoring {path} wrote outside the workspace"


async def test_two_sessions_share_one_store(whalebox_bin, workspace):
    async with cp_client(whalebox_bin, workspace, "legacy") as one, \
            cp_client(whalebox_bin, workspace, "2026-07-28") as two:
        got = []
        got.append((await call(one, "write", {"file_path": "one.txt", "content": "1\n"}))["data"]["checkpoint"])
        got.append((await call(two, "write", {"file_path": "two.txt", "content": "2\n"}))["data"]["checkpoint"])
        got.append((await call(one, "edit", {"file_path": "one.txt", "search": "1", "replace": "one"}))["data"]["checkpoint"])
        assert got == ["1", "2", "3"], got

        async def edits(c, name):
            out = []
            for i in range(4):
                env = await call(c, "write", {"file_path": f"{name}-{i}.txt", "content": f"{name} {i}\n"})
                assert env["ok"], env
                out.append(env["data"]["checkpoint"])
            return out

        a, b = await asyncio.gather(edits(one, "a"), edits(two, "b"))
        made = got + a + b
        assert len(set(a)) == len(a) and len(set(b)) == len(b), (a, b)
        assert not set(a) & set(b), f"two sessions got the same checkpoint id: {a} {b}"
        for c in (one, two):
            listed = (await call(c, "checkpoint_list", {"limit": 100}))["data"]["checkpoints"]
            listed_ids = [s["id"] for s in listed]
            assert set(made) <= set(listed_ids), (made, listed_ids)
            assert listed_ids == sorted(listed_ids, key=int, reverse=True)
            assert len({s["session"] for s in listed}) == 2
            summaries = {cause["summary"] for s in listed for cause in s["causes"]}
            assert {"one.txt (2 bytes)", "two.txt (2 bytes)", "a-3.txt (4 bytes)", "b-3.txt (4 bytes)"} <= summaries
        # Each session's calls are undone from the other.
        env = await call(two, "checkpoint_restore", {"id": "1", "force": True})
        assert env["ok"], env
        assert not (workspace / "one.txt").exists() and not (workspace / "b-0.txt").exists()


async def test_overlapping_calls_are_not_outside_changes(whalebox_bin, workspace):
    async with cp_client(whalebox_bin, workspace, "legacy") as one, \
            cp_client(whalebox_bin, workspace, "2026-07-28") as two:
        slow = asyncio.create_task(call(one, "shell_run", {"command": "sleep 1; echo a > a.txt"}))
        await asyncio.sleep(0.3)
        quick = await call(two, "shell_run", {"command": "echo b > b.txt"})
        slow = await slow
        assert slow["data"]["checkpoint"] == "1" and quick["data"]["checkpoint"] == "2", (slow, quick)
        env = await call(one, "checkpoint_list", {})
        assert "outside whalebox" not in env["text"], env["text"]
        env = await call(one, "checkpoint_restore", {"id": "1"})
        assert env["ok"] and env["data"]["outside"] == [], env
        assert not (workspace / "a.txt").exists() and not (workspace / "b.txt").exists()
