"""Paths: what whalebox opens, or trusts, because of what a task wrote in the workspace.
A planted `.git` file naming an outside directory as its repository must not make a
later session add that directory as a root; a file flipped to a link to /proc while the
checkpoint scanner works must not be read through it; a directory flipped to a link
while read_file, grep or write work on a path in it, or list_dir and search_files walk
it, must not be followed (issue 41)."""

import json
import os
import pathlib
import subprocess
import time

import anyio
import pytest

from conftest import matrix
from harness import check

pytestmark = pytest.mark.anyio

SECRET = "wb-outside-secret-7f3a"


@pytest.mark.parametrize("config,user", matrix())
async def test_a_planted_git_file_derives_no_root(wl, config, user):
    """A task plants `.git` (`gitdir: .wt/x`) and `.wt/x/commondir` naming a real
    repository of the same user outside the workspace (`outside/.git`), with the
    back-pointer `.wt/x/gitdir` too, all inside the workspace. Bare, git itself follows
    the plant (`git rev-parse --git-common-dir` names the outside repository) and the
    outside secret is readable: the mechanism is real. Fenced, a second session on that
    workspace must neither read `outside/secret.txt` (command or read_file) nor write
    into `outside/.git/objects`, and keeps working."""
    async def steps(t):
        outside = t.place.outside
        (outside / "secret.txt").write_text(SECRET + "\n")
        t.place.give_away()
        # The person's other repository, theirs (made as the user, outside the workspace).
        subprocess.run(t.user.wrap(["git", "init", "-q", str(outside)]), check=True,
                       env=t.place.env(), stdout=subprocess.DEVNULL)
        plant = (
            "mkdir -p .wt/x && printf 'gitdir: .wt/x\\n' > .git && "
            f"printf '%s\\n' {outside}/.git > .wt/x/commondir && "
            "printf 'ref: refs/heads/main\\n' > .wt/x/HEAD && "
            "printf '%s\\n' \"$PWD/.git\" > .wt/x/gitdir"
        )
        await t.sh(plant, why="planting files in the workspace must work")
        async with t.session(t.ws) as later:
            common = await later.sh("git rev-parse --git-common-dir", ok=False)
            cat = await later.sh(f"cat {outside}/secret.txt", ok=False)
            wrote = await later.sh(f"echo x > {outside}/.git/objects/planted && echo wrote", ok=False)
            if not t.fenced:
                check(common, str(outside) in common.text,
                      "bare, git should follow the planted .git to the outside repository (the probe is broken)")
                check(cat, SECRET in cat.text, "bare, the outside secret should be readable (the probe is broken)")
                return
            check(cat, SECRET not in cat.text,
                  "a later session read outside the workspace through a planted .git file")
            check(wrote, "wrote" not in wrote.text,
                  "a later session wrote into the outside repository through a planted .git file")
            e = await later.call("read_file", {"file_path": str(outside / "secret.txt")})
            check(cat, not e.get("ok") and SECRET not in str(e),
                  f"read_file read outside the workspace through a planted .git file: {e}")
            await later.sh("true", why="the later session stopped working")

    await wl.run("planted_git_file", config, user, steps)


def _files_under(root: pathlib.Path):
    for p in root.rglob("*"):
        if p.is_file() and not p.is_symlink():
            yield p


@pytest.mark.parametrize("config,user", matrix())
async def test_the_checkpoint_scanner_follows_no_swapped_link(wl, config, user):
    """A background task flips `x/e` between a file and a symlink to /proc/self/environ
    (atomic renames, for a bounded time) while the model calls `write` (each write is
    preceded by a checkpoint scan). Whalebox itself is the target, so the control is the
    mechanism: bare, a plain following open of `x/e` during the flips returns the
    opener's environment (the swap happens and a following open reaches /proc). Fenced,
    no blob of the checkpoint store may hold the server's environment, and the server
    keeps working. The window between the scanner's stat and its open is narrow, so on
    the unfixed scanner this race is hit only sometimes in its bounded rounds; the
    deterministic proof of the check is the Rust test
    `checkpoint::scan::tests::a_swapped_link_is_never_listed_or_read`."""
    flip = ("mkdir -p x && end=$((SECONDS+6)); while [ $SECONDS -lt $end ]; do "
            "printf plain > x/f && mv -f x/f x/e; ln -sfn /proc/self/environ x/l && mv -Tf x/l x/e; done")
    async def steps(t):
        marker = f"HOME={t.place.home}".encode()
        handle = await t.start(flip)
        seen = 0
        if not t.fenced:
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not seen:
                try:
                    # The reader's own environment (this test's), through the link.
                    seen += b"PATH=" in (t.ws / "x" / "e").read_bytes()
                except OSError:
                    pass
            await t.wait(handle, timeout=30)
            check(await t.sh("true"), seen > 0,
                  "bare, a following open of the flipped link should return an environment (the probe is broken)")
            return
        for i in range(40):
            e = await t.call("write", {"file_path": str(t.ws / "y.txt"), "content": f"round {i}\n"})
            assert e.get("ok"), e
        r = await t.wait(handle, timeout=30)
        argv = t.user.wrap([t.binary, "doctor", "--json", "--profile", str(t.profile), "--workspace", str(t.ws)])
        out = subprocess.run(argv, env=t.place.env(), capture_output=True, text=True, timeout=60, cwd=t.ws)
        store = pathlib.Path(json.loads(out.stdout)["checkpoints"]["store"])
        leaked = [str(p) for p in _files_under(store) if marker in p.read_bytes()]
        check(r, not leaked, f"the checkpoint store holds the server's environment: {leaked}")
        await t.sh("true", why="the server stopped working after the flips")

    await wl.run("scanner_swap", config, user, steps)


# `d` flips between a real directory and a link (atomic renames, for a bounded time).
def _flipper(link_to: str) -> str:
    return ("mkdir -p d.real && printf plain > d.real/status && end=$((SECONDS+6)); "
            "while [ $SECONDS -lt $end ]; do "
            "mv -Tf d.real d 2>/dev/null; mv -Tf d d.real 2>/dev/null; "
            f"ln -sfn {link_to} d.link && mv -Tf d.link d; rm -f d; done; "
            "[ -d d.real ] && mv -Tf d.real d; true")


@pytest.mark.parametrize("config,user", matrix())
async def test_the_file_tools_follow_no_swapped_directory(wl, config, user):
    """A background task flips `d` between a directory holding `status` and a link to
    /proc/self, while the model calls read_file and grep on `d/status`. The path guard
    resolves `d/status` inside the workspace; a tool that then opened the path again
    would follow the new link and hand the model the server's own /proc/self/status.
    Bare, a following open during the flips reaches /proc (the swap happens). Fenced,
    no answer may hold a /proc status (`TracerPid`), and the server keeps working. The
    window between the check and the open is microseconds against a flip of milliseconds,
    so the unfixed tools lose this race only rarely in its bounded rounds; the
    deterministic proof (the swap made between check and use, and a path open shown to
    follow it) is the Rust test `paths::tests::a_directory_swapped_for_a_link_after_the_
    check_is_refused_not_followed` in whalebox-sandbox."""
    async def steps(t):
        handle = await t.start(_flipper("/proc/self"))
        if not t.fenced:
            seen = 0
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not seen:
                try:
                    seen += b"TracerPid" in (t.ws / "d" / "status").read_bytes()
                except OSError:
                    pass
            await t.wait(handle, timeout=30)
            check(await t.sh("true"), seen > 0,
                  "bare, a following open of d/status should reach /proc/self/status (the probe is broken)")
            return
        answers = []
        for _ in range(60):
            answers.append(await t.call("read_file", {"file_path": "d/status"}))
            answers.append(await t.call("grep", {"pattern": "Pid", "path": "d",
                                                 "output_mode": "content"}))
        r = await t.wait(handle, timeout=30)
        leaked = [a for a in answers if "TracerPid" in json.dumps(a)]
        check(r, not leaked, f"a file tool read through a swapped link: {leaked[:1]}")
        await t.sh("true", why="the server stopped working after the flips")

    await wl.run("tools_swap_read", config, user, steps)


@pytest.mark.parametrize("config,user", matrix())
async def test_write_follows_no_swapped_directory(wl, config, user):
    """The same flip with `d` a link to a directory outside the workspace, while the
    model creates `d/new-N.txt`: a write that re-walked the path after the guard's check
    would create the file outside. Bare, a following create during the flips lands
    outside. Fenced, nothing appears outside and the server keeps working (the same
    Rust test proves the write side deterministically)."""
    async def steps(t):
        outside = t.place.outside
        t.place.give_away()
        handle = await t.start(_flipper(str(outside)))
        if not t.fenced:
            deadline = time.monotonic() + 5
            n = 0
            while time.monotonic() < deadline and not any(outside.glob("new-*")):
                try:
                    (t.ws / "d" / f"new-{n}.txt").write_text("x")
                except OSError:
                    pass
                n += 1
            await t.wait(handle, timeout=30)
            check(await t.sh("true"), any(outside.glob("new-*")),
                  "bare, a following create in d should land outside (the probe is broken)")
            return
        for i in range(60):
            await t.call("write", {"file_path": f"d/new-{i}.txt", "content": "x\n"})
        r = await t.wait(handle, timeout=30)
        planted = sorted(p.name for p in outside.glob("new-*"))
        check(r, not planted, f"write created files outside the workspace through a swapped link: {planted}")
        await t.sh("true", why="the server stopped working after the flips")

    await wl.run("tools_swap_write", config, user, steps)


# `d` and the link `d.link` trade places in a tight loop (renameat2 RENAME_EXCHANGE,
# one atomic swap per system call, for a bounded time): a walk's window between seeing
# `d` a directory and listing it by path is microseconds, which the flips of `_flipper`
# (a process per rename) almost never hit. `d` is left the directory.
def _exchanger(link_to: str) -> str:
    swap = ('use Config; my $nr = $Config{archname} =~ /aarch64/ ? 276 : 316; '
            'my ($d, $l) = ("d", "d.link"); '
            'sub swap { syscall($nr, -100, $d, -100, $l, 2) == 0 or die "renameat2: $!" } '
            'my $end = time + 6; swap() while time < $end; swap() if -l "d";')
    return (f"mkdir -p d && printf plain > d/status && ln -sfn {link_to} d.link && "
            f"perl -e '{swap}'")


@pytest.mark.parametrize("config,user", matrix())
async def test_the_walking_tools_follow_no_swapped_directory(wl, config, user):
    """A background task trades `d` (a directory holding `status`) and `d.link` (a link
    to /proc/self) in a tight loop, while the model calls list_dir and search_files on
    the workspace and on `d`. A walk that saw `d` a directory and then listed it by path
    would list the server's own /proc/self (`mountinfo`, `environ`, `fd/`) through the
    link. Bare, a listing of `d` during the exchanges names `mountinfo` (the swap happens
    and a following listing reaches /proc). Fenced, no answer may name it, and the server
    keeps working; the walkers before the descriptor walk lost this race within seconds.
    The deterministic proof (the swap made between check and walk, also to an outside
    directory, and a walk by path shown to follow it) is in the Rust tests
    `tools::files::tests::list_dir_refuses_a_directory_swapped_for_a_link_after_the_check`,
    `tools::search::search_files::tests::search_files_refuses_a_directory_swapped_for_a_
    link_after_the_check` and `tools::walk::tests::a_directory_swapped_for_a_link_mid_
    walk_is_not_descended`."""
    async def steps(t):
        handle = await t.start(_exchanger("/proc/self"))
        if not t.fenced:
            seen = False
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not seen:
                try:
                    seen = any(p.name == "mountinfo" for p in (t.ws / "d").iterdir())
                except OSError:
                    pass
            await t.wait(handle, timeout=30)
            check(await t.sh("true"), seen,
                  "bare, a listing of d during the exchanges should name /proc/self's mountinfo (the probe is broken)")
            return
        answers = []
        # Calls while the exchanges run: from the link's appearance, for 5 seconds.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not os.path.lexists(t.ws / "d.link"):
            await anyio.sleep(0.01)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            answers.append(await t.call("list_dir", {"path": "."}))
            answers.append(await t.call("list_dir", {"path": "d", "depth": 3}))
            answers.append(await t.call("search_files", {"pattern": "**/*"}))
            answers.append(await t.call("search_files", {"pattern": "*", "path": "d"}))
        r = await t.wait(handle, timeout=30)
        # The server saw the exchanges: `d.link` was the directory at times.
        check(r, r.ok and any('"d.link/' in json.dumps(a) for a in answers),
              "the exchanges did not run or were never seen (the probe is broken)")
        leaked = [a for a in answers if "mountinfo" in json.dumps(a)]
        check(r, not leaked, f"a walking tool listed a directory through a swapped link: {leaked[:1]}")
        await t.sh("true", why="the server stopped working after the flips")

    await wl.run("tools_swap_walk", config, user, steps)
