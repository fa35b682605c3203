"""Git: configuration and hooks a task leaves in the workspace's repository run on the
person's next `git status` or `git commit`, outside every fence (issue 41). Whalebox
cannot stop the write (the workspace is writable); it must undo it before the person's
git reads it. Bare, the planted program runs on a plain `git status` / `git commit` (the
probe is sound); fenced, it must not, and the result names what was undone. Real git
work (identity, commits, remotes, plain aliases) is left as it was."""

import json
import subprocess

import anyio
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


AUDITED = Needs(profile={"shell": {"audit_log": "audit.jsonl"}})


@pytest.mark.parametrize("config,user", matrix())
async def test_a_plant_after_the_last_answer_is_undone_at_session_end(wl, config, user):
    """A background task plants `core.fsmonitor` after its shell_run answered, and no
    call answers again before the session ends. Bare, the person's `git status` runs
    it; fenced, the server's last check at session end unsets it, and the audit log
    has a `git_undone` record naming the key (no model is left to tell)."""
    async def steps(t):
        marker = t.place.outside / "late-ran"
        cfg = t.ws / ".git/config"
        # A session of its own, ended here (the first one's end is the harness's).
        async with t.session(t.ws) as s:
            await s.sh("git init -q .")
            handle = await s.start(f"sleep 1; git config core.fsmonitor \"sh -c 'touch {marker}'\"")
            if not t.fenced:
                r = await s.wait(handle)
            else:
                r = await s.sh("true")
                deadline = anyio.current_time() + 20
                while "fsmonitor" not in cfg.read_text() and anyio.current_time() < deadline:
                    await anyio.sleep(0.2)
                check(r, "fsmonitor" in cfg.read_text(), "the background task did not plant it")
        person_git(t, ["status"])
        if not t.fenced:
            check(r, marker.exists(), "bare, the person's git status should run the late plant (the probe is broken)")
            return
        check(r, not marker.exists(), "the person's git ran a program planted after the last answer")
        audit = [json.loads(line) for line in (t.place.base / "audit.jsonl").read_text().splitlines() if line]
        undone = [a for a in audit if a.get("kind") == "git_undone"]
        check(r, any(u["key"] == "core.fsmonitor" for a in undone for u in a["config"]),
              f"the audit log should have a git_undone record for core.fsmonitor: {undone}")

    await wl.run("git_session_end", config, user, steps, needs=AUDITED)


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


def person_repos(place):
    """What the person had before the session: the workspace's repository, whose config
    includes `team.gitconfig` (a file of the workspace), and their own clone two
    directories down, `vendor/lib`."""
    def run(*args, cwd):
        subprocess.run(["git", "-c", "safe.directory=*", *args], cwd=cwd, check=True, capture_output=True, env=place.env() | IDENTITY)
    run("init", "-q", ".", cwd=place.ws)
    run("config", "include.path", "../team.gitconfig", cwd=place.ws)
    (place.ws / "team.gitconfig").write_text("[user]\n\tname = team\n")
    (place.ws / "vendor/lib").mkdir(parents=True)
    run("init", "-q", ".", cwd=place.ws / "vendor/lib")


@pytest.mark.parametrize("config,user", matrix())
async def test_included_config_and_deeper_repositories_are_guarded(wl, config, user):
    """A task plants `core.fsmonitor` in a file the workspace repository's configuration
    includes (`include.path`), and in the person's clone two directories down. Bare, the
    person's `git status` in each runs it; fenced, neither runs and both are named."""
    async def steps(t):
        out = t.place.outside
        included, deep = out / "included-ran", out / "deep-ran"
        r = await t.sh(
            f"git config --file team.gitconfig core.fsmonitor \"sh -c 'touch {included}'\" && "
            f"git -C vendor/lib config core.fsmonitor \"sh -c 'touch {deep}'\"",
            why="writing the workspace's files must work")
        person_git(t, ["status"])
        person_git(t, ["status"], cwd=t.ws / "vendor/lib")
        ran = [p.name for p in (included, deep) if p.exists()]
        if not t.fenced:
            check(r, ran == ["included-ran", "deep-ran"],
                  f"bare, the person's git should run both planted programs (the probe is broken): ran {ran}")
            return
        check(r, not ran, f"the person's git ran programs a task planted: {ran}")
        undone = (r.data or {}).get("git_undone") or {}
        files = sorted(str(u["file"]) for u in undone.get("config", []))
        check(r, files == sorted([str(t.ws / "team.gitconfig"), str(t.ws / "vendor/lib/.git/config")]),
              f"data.git_undone.config should name both files: {undone}")
        team = (t.ws / "team.gitconfig").read_text()
        check(r, "name = team" in team, f"the rest of the included file was lost: {team!r}")

    await wl.run("git_included_and_deep", config, user, steps, setup=person_repos)
