"""git, the way a model uses it: init, commit, branch, rebase, stash, a linked worktree
inside the workspace, gc, fsck."""

import pytest

from conftest import matrix

pytestmark = pytest.mark.anyio

GIT = "git -c user.name=Model -c user.email=model@example.invalid"


@pytest.mark.parametrize("config,user", matrix())
async def test_git(wl, config, user):
    async def steps(t):
        await t.sh("git init -q -b main . && git config user.name Model && git config user.email model@example.invalid"
                   " && printf 'wt-*/\\n' >> .git/info/exclude")
        await t.sh("mkdir -p src && printf 'one\\n' > src/a.txt && git add -A && git commit -q -m first && git log --oneline")
        await t.sh("git checkout -q -b feature && printf 'two\\n' >> src/a.txt && git commit -qam second"
                   " && git checkout -q main && printf 'other\\n' > b.txt && git add b.txt && git commit -qm third")
        r = await t.sh("git checkout -q feature && git rebase -q main && git log --format=%s")
        assert "second\nthird\nfirst\n" in r.text, r.describe("rebase did not replay `second` on main")
        await t.sh("printf 'wip\\n' >> b.txt && git stash && git status --short && git stash pop && git diff --stat")
        await t.sh("git stash && git stash list && git stash drop")
        r = await t.sh("git worktree add -q wt-main main && git -C wt-main log --format=%s -1 && git worktree list")
        assert "third" in r.text, r.describe("the worktree is not on main")
        await t.sh("printf 'from wt\\n' > wt-main/c.txt && git -C wt-main add c.txt && git -C wt-main commit -qm fromwt"
                   " && git log --format=%s -1 main")
        await t.sh("git worktree remove wt-main && git worktree prune")
        await t.sh("git gc -q && git fsck --full --strict && git count-objects -v")
        r = await t.sh("git log --all --format=%s | sort | tr '\\n' ' '")
        assert "fromwt" in r.text and "second" in r.text, r.describe("history is missing commits")

    await wl.run("git", config, user, steps, programs=["git"])
