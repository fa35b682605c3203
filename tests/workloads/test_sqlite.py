"""SQLite in WAL mode: two connections of one process (a reader sees the writer's
commits, not its open transaction), a checkpoint, and the sqlite3 shell reading it."""

import pytest

from conftest import matrix

pytestmark = pytest.mark.anyio

SCRIPT = '''\
import sqlite3
w = sqlite3.connect("db.sqlite", isolation_level=None)
assert w.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
w.execute("CREATE TABLE t (x INTEGER)")
r = sqlite3.connect("db.sqlite", isolation_level=None)
w.execute("BEGIN")
w.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(100)])
assert r.execute("SELECT count(*) FROM t").fetchone()[0] == 0, "the reader saw an open transaction"
w.execute("COMMIT")
assert r.execute("SELECT count(*) FROM t").fetchone()[0] == 100
print("checkpoint", w.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone())
r.close(); w.close()
print("wal ok")
'''


@pytest.mark.parametrize("config,user", matrix())
async def test_sqlite(wl, config, user):
    async def steps(t):
        r = await t.sh("python3 wal.py && ls")
        assert "wal ok" in r.text, r.describe("the WAL script did not finish")
        r = await t.sh("sqlite3 db.sqlite 'PRAGMA journal_mode; SELECT sum(x) FROM t;'")
        assert "wal" in r.text and "4950" in r.text, r.describe("sqlite3 does not read what python wrote")

    await wl.run("sqlite", config, user, steps, files={"wal.py": SCRIPT}, programs=["python3", "sqlite3"])
