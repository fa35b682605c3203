"""Git: configuration and hooks a task leaves in the workspace's repository run on the
person's next `git status` or `git commit`, outside every fence (issue 41). Whalebox
cannot stop the write (the workspace is writable); it must undo it before the person's
git reads it. Bare, the planted program runs on a plain `git status` / `git commit` (the
probe is sound); fenced, it must not, and the result names what was undone. Real git
work (identity, commits, remotes, plain aliases) is left as it was."""

import subprocess

import pytest

from conftest import matrix
from harness import Needs, check

pytestmark = pytest.mark.anyio

IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}


def person_git(t, args, cwd=None):
    """git run by the person, after the session: outside whalebox, as the same user."""
    return subprocess.run(t.user.wrap(["git", *args]), cwd=cwd or t.ws, env=t.place.env() | IDENTITY,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("config,user", matrix())
async def test_planted_git_programs_do_not_run_for_the_person(wl, config, user):
    """A task sets `core.fsmonitor` (run by `git status`) in the workspace's repository
    and in a repository it makes one directory down, and writes an executable
    `.git/hooks/pre-commit` (run by `git commit`). Each would touch a marker outside the
    workspace. Bare, the person's plain `git status` and `git commit` run them; fenced,
    neither runs, and the shell_run result names the keys and the hook."""
    async def steps(t):
        out = t.place.outside
        fsmon, hook, nested = out / "fsmonitor-ran", out / "hook-ran", out / "nested-ran"
        await t.sh("git init -q . && git init -q sub", why="git init must work")
        plant = (
            f"git config core.fsmonitor \"sh -c 'touch {fsmon}'\" && "
            f"git -C sub config core.fsmonitor \"sh -c 'touch {nested}'\" && "
            f"printf '#!/bin/sh\\ntouch {hook}\\n' > .git/hooks/pre-commit && "
            "chmod +x .git/hooks/pre-commit"
        )
        r = await t.sh(plant, why="writing the repository's own files must work")
        person_git(t, ["status"])
        person_git(t, ["status"], cwd=t.ws / "sub")
        person_git(t, ["commit", "-q", "--allow-empty", "-m", "person"])
        ran = [p.name for p in (fsmon, nested, hook) if p.exists()]
        if not t.fenced:
            check(r, ran == ["fsmonitor-ran", "nested-ran", "hook-ran"],
                  f"bare, the person's git should run every planted program (the probe is broken): ran {ran}")
            return
        check(r, not ran, f"the person's git ran programs a task planted: {ran}")
        undone = (r.data or {}).get("git_undone") or {}
        keys = sorted((u["key"], str(u["file"])) for u in undone.get("config", []))
        check(r, keys == [("core.fsmonitor", str(t.ws / ".git/config")),
                          ("core.fsmonitor", str(t.ws / "sub/.git/config"))],
              f"data.git_undone.config should name both keys: {undone}")
        hooks = [h["hook"] for h in undone.get("hooks", [])]
        check(r, hooks == [str(t.ws / ".git/hooks/pre-commit")], f"data.git_undone.hooks: {undone}")
        moved = undone["hooks"][0]["moved_to"]
        check(r, not moved.startswith(str(t.ws)), f"the hook was quarantined inside the workspace: {moved}")
        check(r, "core.fsmonitor" in r.text and "pre-commit" in r.text,
              "the result's text should say what was undone")
        # The session goes on working, and says nothing more.
        again = await t.sh("git status --short")
        check(again, "git_undone" not in (again.data or {}), "an undo was reported twice")

    await wl.run("git_planted_exec", config, user, steps)


@pytest.mark.parametrize("config,user", matrix())
async def test_ordinary_git_configuration_is_left_alone(wl, config, user):
    """Identity, a commit, a remote, a plain alias and a pager turned off: none runs a
    program, so none is touched, and nothing is reported."""
    async def steps(t):
        r = await t.sh(
            "git init -q . && git config user.email me@example.invalid && git config user.name me && "
            "git config alias.st status && git config pager.branch false && "
            "git remote add origin https://example.invalid/x.git && "
            "echo a > a.txt && git add a.txt && git commit -qm first",
            why="ordinary git work must work")
        email = person_git(t, ["config", "user.email"]).stdout.strip()
        log = person_git(t, ["log", "--format=%s"]).stdout.strip()
        alias = person_git(t, ["config", "alias.st"]).stdout.strip()
        remote = person_git(t, ["remote", "get-url", "origin"]).stdout.strip()
        check(r, (email, log, alias, remote) == ("me@example.invalid", "first", "status",
                                                 "https://example.invalid/x.git"),
              f"ordinary configuration changed: {(email, log, alias, remote)}")
        if t.fenced:
            check(r, "git_undone" not in (r.data or {}), f"ordinary git work was undone: {r.data.get('git_undone')}")

    await wl.run("git_ordinary", config, user, steps)


@pytest.mark.parametrize("user", ["root", "nobody"])
async def test_allow_exec_config_true_keeps_them(wl, user):
    """The control of the fenced check: with `[git] allow_exec_config = true` (the guard
    off) the same plant survives the session and the person's `git status` runs it. So
    what keeps it from running above is the guard, not something else of the fences."""
    async def steps(t):
        marker = t.place.outside / "fsmonitor-ran"
        await t.sh(f"git init -q . && git config core.fsmonitor \"sh -c 'touch {marker}'\"")
        r = await t.sh("git config core.fsmonitor")
        person_git(t, ["status"])
        check(r, marker.exists(), "with allow_exec_config = true the planted fsmonitor should survive")
        check(r, "git_undone" not in (r.data or {}), "nothing is undone with the guard off")

    await wl.run("git_allowed", "default", user, steps,
                 needs=Needs(profile={"git": {"allow_exec_config": True}}))
