"""The exec policy and the program that really runs: a policy that denies `touch` (and
`git push`) by name, and a task that calls touch by another way: through the dynamic
loader, busybox, a symlink named `ls`, a renamed copy (run itself or by the loader), a memfd or a deleted file run by descriptor, and
`git push` behind git's global options. Bare, each trick makes `made-<trick>` in the
workspace (or pushes to a bare repository in it): the probe works. Fenced, the file
must not appear, the refusal names touch (or push), and whalebox goes on serving."""

import pathlib
import shutil

import pytest

from conftest import matrix
from harness import Needs, check

pytestmark = pytest.mark.anyio

POLICY = """version = 1
default = "allow"

[[rule]]
pattern = ["touch"]
decision = "deny"
justification = "the adversarial suite's denied program"
match = ["touch x", "/usr/bin/touch -c x"]

[[rule]]
pattern = ["git", "push"]
decision = "deny"
justification = "pushing is for people"
match = ["git push", "git -C . push", "git -c k=v push"]
"""


def with_policy(place):
    """The policy outside the workspace (a task cannot edit it), named by the profile."""
    policy = place.base / "policy.toml"
    policy.write_text(POLICY)
    policy.chmod(0o644)
    profile = place.base / "profile.toml"
    if profile.exists():
        profile.write_text(f'policy = "{policy}"\n' + profile.read_text())


PY = "/usr/bin/python3"

# Each trick runs touch (or git push) under another name; `{f}` is the file it makes.
TRICKS = {
    "ldso": "/lib64/ld-linux-x86-64.so.2 /usr/bin/touch {f}",
    "busybox": "busybox touch {f}",
    "busybox_argv0": "exec -a touch busybox {f}",
    "symlink": "ln -sf /usr/bin/touch ls && ./ls {f}",
    "copy": "cp /usr/bin/touch mytool && ./mytool {f}",
    "copy_ldso": "cp /usr/bin/touch mytool2 && /lib64/ld-linux-x86-64.so.2 ./mytool2 {f}",
    "memfd": PY + " -c 'import os; fd = os.memfd_create(\"ls\", 0); "
    "os.write(fd, open(\"/usr/bin/touch\", \"rb\").read()); "
    "os.execv(f\"/proc/self/fd/{{fd}}\", [\"ls\", \"{f}\"])'",
    "memfd_fexecve": PY + " -c 'import os; fd = os.memfd_create(\"ls\", 0); "
    "os.write(fd, open(\"/usr/bin/touch\", \"rb\").read()); "
    "os.execve(fd, [\"ls\", \"{f}\"], dict(os.environ))'",
    "deleted": "cp /usr/bin/touch lsdel && " + PY + " -c 'import os; "
    "fd = os.open(\"lsdel\", os.O_RDONLY); os.unlink(\"lsdel\"); "
    "os.execv(f\"/proc/self/fd/{{fd}}\", [\"ls\", \"{f}\"])'",
}


ANONYMOUS = {"memfd", "memfd_fexecve", "deleted"}


@pytest.mark.parametrize("trick", sorted(TRICKS))
@pytest.mark.parametrize("config,user", matrix())
async def test_a_denied_program_does_not_run_under_another_name(wl, config, user, trick):
    if trick.startswith("busybox") and shutil.which("busybox") is None:
        pytest.skip("SKIPPED: busybox is not installed (tests/install installs it)")
    made = f"made-{trick}"

    async def steps(t):
        r = await t.sh(TRICKS[trick].format(f=made), ok=False)
        there = (pathlib.Path(t.ws) / made).exists()
        if t.fenced:
            check(r, not there, f"{trick}: touch ran under another name though the policy denies it")
            # A file with no name has no program to name: the refusal names the setting.
            named = "allow_anonymous_exec" if trick in ANONYMOUS else "touch"
            check(r, named in r.text, f"{trick}: the refusal should name {named}")
            await t.sh("true", why="whalebox stopped serving after the refusal")
        else:
            check(r, r.ok and there, f"bare, {trick} should make {made} (the probe is broken)")

    await wl.run(f"exec_{trick}", config, user, steps, setup=with_policy, programs=[PY])


PUSHES = {
    "git_C": "git -C . push -q origin HEAD:refs/heads/{b}",
    "git_c": "git -c a.b=c push -q origin HEAD:refs/heads/{b}",
    "git_dir": "git --git-dir=.git --no-pager push -q origin HEAD:refs/heads/{b}",
    "sh_c": "sh -c 'git -C . push -q origin HEAD:refs/heads/{b}'",
}


@pytest.mark.parametrize("trick", sorted(PUSHES))
@pytest.mark.parametrize("config,user", matrix())
async def test_git_push_is_denied_however_the_global_options_come(wl, config, user, trick):
    async def steps(t):
        await t.sh("git init -q --bare remote.git && git init -q && "
                   "git -c user.email=a@b -c user.name=a commit -q --allow-empty -m one && "
                   "git remote add origin ./remote.git")
        r = await t.sh(PUSHES[trick].format(b=trick), ok=False)
        pushed = (pathlib.Path(t.ws) / "remote.git" / "refs" / "heads" / trick).exists()
        if t.fenced:
            check(r, not pushed, f"{trick}: git push ran though the policy denies it")
            check(r, "push" in r.text, f"{trick}: the refusal should name git push")
            await t.sh("git status --short", why="git stopped working after the refusal")
        else:
            check(r, r.ok and pushed, f"bare, {trick} should push (the probe is broken)")

    await wl.run(f"exec_push_{trick}", config, user, steps, setup=with_policy, programs=["git"])
