"""What an attack aims at. Fenced, the victim is the `whalebox serve` the test started
(found by its profile path in /proc); bare, where there is no server, a decoy: a process
of the same user started the same way, holding a secret in its environment like a server
holding a credential. Aiming the same probe at the decoy bare proves the probe reaches
its target, so the fenced check cannot pass vacuously."""

from __future__ import annotations

import contextlib
import os
import pathlib
import secrets
import subprocess
import time
from typing import Iterator

from harness import Bare, Fenced, Runner


class Victim:
    def __init__(self, pid: int, secret: str | None):
        self.pid = pid
        # The value an attack must not learn (None when the victim holds no secret).
        self.secret = secret

    def state(self) -> str:
        """The process's state letter (`R`, `S`, `T` stopped, `Z`, `X` gone)."""
        try:
            stat = pathlib.Path(f"/proc/{self.pid}/stat").read_text()
        except FileNotFoundError:
            return "X"
        return stat.rsplit(")", 1)[1].split()[0]

    def wait_for_state(self, letter: str, seconds: float) -> bool:
        """Whether the process reaches state `letter` within `seconds` (a signal is
        delivered when the process next runs, not when `kill` returns)."""
        deadline = time.monotonic() + seconds
        while True:
            if self.state() == letter:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)

    def status_field(self, name: str) -> str | None:
        try:
            for line in pathlib.Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith(name + ":"):
                    return line.split(":", 1)[1].strip()
        except FileNotFoundError:
            return None
        return None

    def alive(self) -> bool:
        return self.state() not in ("X", "Z")


def server_pid(t: Fenced) -> int:
    """The pid of the `whalebox serve` this runner talks to (its argv names the profile
    and the workspace)."""
    want = [b"serve", str(t.profile).encode(), str(t.ws).encode()]
    for d in pathlib.Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if all(w in argv for w in want) and not argv[0].endswith(b"setpriv"):
            return int(d.name)
    raise AssertionError(f"no whalebox serve process for {t.profile} ({t.where})")


@contextlib.contextmanager
def victim(t: Runner, secret_name: str = "WB_ADVERSARIAL_SECRET") -> Iterator[Victim]:
    """Fenced: the server (its secret is what the test put in its profile, if any: pass
    it through `t.place`'s `secret` attribute). Bare: a decoy `sleep` of the same user
    with a fresh secret in its environment, killed afterwards."""
    if isinstance(t, Fenced):
        yield Victim(server_pid(t), getattr(t.place, "secret", None))
        return
    assert isinstance(t, Bare)
    secret = "wb-" + secrets.token_hex(12)
    env = t.place.env() | {secret_name: secret}
    proc = subprocess.Popen(t.user.wrap(["sleep", "600"]), env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        yield Victim(proc.pid, secret)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, 9)
        proc.wait()


SECRET_VAR = "WB_ADVERSARIAL_SECRET"


def with_secret(place) -> None:
    """`setup` for an attack on the server's secret: the server starts with a fresh one in
    `SECRET_VAR` (named by a `[network.credentials.*]` entry, see `CREDENTIAL_TOML`), and
    `victim` reports it."""
    secret = "wb-" + secrets.token_hex(12)
    place.secret = secret
    base = place.env
    place.env = lambda: base() | {SECRET_VAR: secret}


CREDENTIAL_TOML = f"""
[network.credentials.adversarial]
env = "{SECRET_VAR}"
hosts = ["adversarial.invalid"]
"""
