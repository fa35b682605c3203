"""File operations across directories: mv, ln (hard and symbolic), tar, cp -a,
os.replace, shutil.move, and git mv, inside the workspace and through $TMPDIR."""

import pytest

from conftest import matrix

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("config,user", matrix())
async def test_files(wl, config, user):
    async def steps(t):
        await t.sh("mkdir -p a/b c d && printf 'one\\n' > a/b/f && printf 'kept\\n' > a/b/keep && printf 'two\\n' > a/g")
        await t.sh("mv a/b/f c/f && mv c/f d/ && mv a/b c/b2 && ls d c/b2")
        await t.sh("ln d/f a/hard && ln -s ../d/f c/soft && cat c/soft a/hard && test d/f -ef a/hard")
        r = await t.sh("stat -c %h d/f && readlink c/soft")
        assert "2\n" in r.text and "../d/f" in r.text, r.describe("links are not what ln made")
        await t.sh("tar czf t.tgz a c d && mkdir x && tar xzf t.tgz -C x && diff -r a x/a && test -L x/c/soft")
        await t.sh("cp -a x y && test -L y/c/soft && diff -r x y")
        await t.sh("python3 -c 'import os, shutil; os.replace(\"a/g\", \"c/g\"); shutil.move(\"c/g\", \"d/sub/\") "
                   "if os.makedirs(\"d/sub\") is None else None; shutil.move(\"y\", \"d/y\")' && ls d/sub d/y")
        await t.sh('mkdir -p "$TMPDIR/w" && mv d/sub/g "$TMPDIR/w/g" && mv "$TMPDIR/w/g" a/g2 && cat a/g2')
        await t.sh("git init -q . && git add a c d && git -c user.name=M -c user.email=m@example.invalid commit -qm files"
                   " && mkdir -p lib && git mv d/f lib/f && git mv c/b2 lib/b2 && git status --short")
        r = await t.sh("git -c user.name=M -c user.email=m@example.invalid commit -qm moved && git show -M --name-status --format= HEAD")
        assert "d/f\tlib/f" in r.text and "R100" in r.text, r.describe("git mv across directories did not record the rename")

    await wl.run("files", config, user, steps, programs=["git", "tar", "python3"])
