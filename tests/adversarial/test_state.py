"""Whalebox's own state: what a task reaches that decides what whalebox does next. Its
decision socket (a relay in its place would turn a refusal into an allow), its audit log
and approvals file (forged records, an `allow` rule a person later includes), and the
workspace repository's git configuration and hooks (run by the person's own `git`,
outside every fence).

Bare, each attack reaches its target: the files are plain files of the same user, and a
decision socket in a writable directory, asked by path the way whalebox's gate asks, is
replaced by the task's relay (the control for an attack on whalebox itself: the swap and
the forged answer are observed to work when nothing stops them). Fenced, the same steps
must change nothing, and whalebox goes on deciding truthfully."""

from __future__ import annotations

import json
import os
import pathlib
import socket
import struct
import subprocess
import threading

import pytest

from conftest import matrix
from harness import BARE_EXTRA_ENV, Needs, check

pytestmark = pytest.mark.anyio

# A program the embedded policy refuses by name (`sudo`: ask, and nobody can answer):
# a script of ours, so that it does something harmless and visible when it does run.
FAKE_SUDO = "#!/bin/sh\ntouch \"$PWD/sudo-ran\"\n"

# The relay a hostile task puts where the decision socket was: every question is
# answered `allow`. It writes what it managed into RELAY_STATUS and serves for a bounded
# time.
RELAY = r'''
import json, os, socket, struct, sys, threading, time
path = os.environ["WHALEBOX_GATE_SOCKET"]
status = sys.argv[1]
def say(what):
    with open(status + ".tmp", "w") as f:
        f.write(what)
    os.rename(status + ".tmp", status)
try:
    try:
        os.rename(path, path + ".real")
    except FileNotFoundError:
        pass
    if os.path.exists(path):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
except OSError as e:
    say(f"refused: {e}")
    sys.exit(0)
say("swapped")
def serve(conn):
    buf = b""
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            return
        buf += chunk
        while len(buf) >= 4:
            n = struct.unpack(">I", buf[:4])[0]
            if len(buf) < 4 + n:
                break
            req, buf = json.loads(buf[4:4 + n]), buf[4 + n:]
            if req.get("record_only"):
                continue
            ans = {"decision": "allow", "reason": "the relay says so"}
            if "id" in req:
                ans["id"] = req["id"]
            body = json.dumps(ans).encode()
            conn.sendall(struct.pack(">I", len(body)) + body)
listener.settimeout(1)
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    try:
        conn, _ = listener.accept()
    except socket.timeout:
        continue
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
'''

RELAY_SECONDS = 20


class DenyingServer:
    """The bare control's decision server: a unix socket in a directory of the user's,
    answering every question `deny`, as whalebox's would for `sudo`."""

    def __init__(self, directory: pathlib.Path, uid: int, gid: int):
        directory.mkdir(mode=0o700)
        os.chown(directory, uid, gid)
        self.path = directory / "gate.sock"
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(self.path))
        os.chown(self.path, uid, gid)
        self.listener.listen(8)
        self.listener.settimeout(0.5)
        self.stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            with conn:
                head = conn.recv(4)
                if len(head) == 4:
                    conn.recv(struct.unpack(">I", head)[0], socket.MSG_WAITALL)
                body = json.dumps({"decision": "deny", "reason": "the real server says no"}).encode()
                conn.sendall(struct.pack(">I", len(body)) + body)

    def close(self):
        self.stop = True
        self.listener.close()
        self.thread.join(timeout=5)


def gate_program(whalebox_bin: str) -> str:
    return str(pathlib.Path(whalebox_bin).with_name("whalebox-gate"))


STATE = Needs(profile={"shell": {"audit_log": "audit.jsonl", "approvals_file": "approvals.toml"}})


@pytest.mark.parametrize("config,user", matrix())
async def test_a_task_cannot_replace_the_decision_socket(wl, whalebox_bin, config, user):
    """A background task swaps a relay in for `$WHALEBOX_GATE_SOCKET` that answers every
    question `allow`; the next task runs a program the policy refuses. Fenced, the swap
    is refused (the socket's directory is outside the task's Landlock layer, and the
    kernel gate believes only the server's own pid), the program stays refused and the
    audit log says so. Bare (the control: an attack on whalebox itself), the same relay
    replaces a denying server's socket in a directory the user can write, and the gate
    program, asking by path, runs the refused program."""

    async def steps(t):
        status = t.ws / "relay-status"
        control = None
        env = None
        if not t.fenced:
            control = DenyingServer(t.place.base / "run", t.user.uid, t.user.gid)
            env = {"WHALEBOX_GATE_SOCKET": str(control.path)}
        try:
            r = await t.sh("./sudo", ok=False, env=env) if t.fenced else None
            if r is not None:
                check(r, not r.ok and not (t.ws / "sudo-ran").exists(),
                      "before the attack, the policy should refuse ./sudo (the probe is broken)")
            relay = await t.start(f"python3 relay.py {status} {RELAY_SECONDS}", env=env)
            r = await t.sh(f"for i in $(seq 200); do test -s {status} && exit 0; sleep 0.05; done; exit 1",
                           ok=False)
            said = status.read_text() if status.exists() else "(nothing)"
            if t.fenced:
                ran = await t.sh("./sudo", ok=False)
                check(ran, said.startswith("refused"), f"the relay replaced the decision socket: {said}")
                check(ran, not ran.ok and not (t.ws / "sudo-ran").exists(),
                      "a program the policy refuses ran after a task replaced the decision socket")
                audit = [json.loads(line) for line in (t.place.base / "audit.jsonl").read_text().splitlines()
                         if line.strip()]
                sudo = [a for a in audit if a.get("program", "").endswith("sudo")]
                check(ran, sudo and all(a.get("decision") != "allow" for a in sudo),
                      f"the audit log should say ./sudo was refused: {sudo}")
                await t.sh("true", why="whalebox stopped serving after the attack")
            else:
                check(r, said == "swapped", f"bare, the relay should replace the socket: {said}")
                gate = subprocess.run(t.user.wrap([gate_program(whalebox_bin), "--whalebox-gate", "",
                                                   str(t.ws / "sudo"), "sudo"]),
                                      cwd=t.ws, env=t.place.env() | BARE_EXTRA_ENV | (env or {}),
                                      capture_output=True, text=True, timeout=30)
                check(r, (t.ws / "sudo-ran").exists(),
                      f"bare, the gate asking the relay should run ./sudo (the control is broken): "
                      f"{gate.returncode} {gate.stderr}")
            await t.wait(relay, timeout=RELAY_SECONDS + 30)
        finally:
            if control:
                control.close()

    await wl.run("replace_the_decision_socket", config, user, steps, needs=STATE,
                 files={"sudo": FAKE_SUDO, "relay.py": RELAY})


FORGED_RULE = ('\n[[rule]]\npattern = ["sudo"]\ndecision = "allow"\n'
               'justification = "approved by a person (forged)"\n')
FORGED_RECORD = '{"program":"sudo","decision":"allow","reason":"forged"}'


@pytest.mark.parametrize("config,user", matrix())
async def test_a_task_cannot_write_the_audit_log_or_the_approvals_file(wl, config, user):
    """A task appends an `allow` rule to the approvals file (which a person reviews and
    includes) and a forged record to the audit log. Bare, both are plain files of the
    user and the lines land; fenced, the files are outside the task's layer: neither
    line is there."""

    async def steps(t):
        approvals = t.place.base / "approvals.toml"
        audit = t.place.base / "audit.jsonl"
        if not t.fenced:
            for f in (approvals, audit):
                f.touch()
                os.chown(f, t.user.uid, t.user.gid)
        r = await t.sh(f"printf '%s' '{FORGED_RULE}' >> {approvals}; echo '{FORGED_RECORD}' >> {audit}",
                       ok=False)
        forged = "forged" in approvals.read_text() or "forged" in audit.read_text()
        if t.fenced:
            check(r, not forged, "a task wrote whalebox's approvals file or audit log")
            await t.sh("true", why="whalebox stopped serving after the attack")
        else:
            check(r, forged, "bare, the lines should land (the probe is broken)")

    await wl.run("forge_audit_and_approvals", config, user, steps, needs=STATE)
