"""Paths: what whalebox opens, or trusts, because of what a task wrote in the workspace.
A planted `.git` file naming an outside directory as its repository must not make a
later session add that directory as a root (issue 41)."""

import subprocess

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
