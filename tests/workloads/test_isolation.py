"""Bad input, and what one session must not see of another:

- a write outside the workspace is refused with a diagnosis and a next step;
- a connection to a host no list names (a name the proxy would have to resolve) is
  refused with a 403 that names the rule (bare, this step is left out: it would send a
  DNS query off the machine);
- a second session cannot see the first's /dev/shm files, reach its loopback server,
  signal its processes or read their /proc (bare, the same probes succeed: that is what
  proves them)."""

import secrets
import subprocess

import pytest

from conftest import matrix
from harness import StepFailed, check, free_port, pid_namespaces

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("config,user", matrix())
async def test_write_outside(wl, config, user):
    async def steps(t):
        target = t.place.outside / "planted.txt"
        r = await t.sh(f"echo planted > {target}", ok=False)
        if t.fenced:
            check(r, not r.ok and not target.exists(), "a write outside the workspace was not refused")
            check(r, "Diagnosis:" in r.text and "Next step:" in r.text and str(t.place.outside) in r.text,
                  "the refusal of a write outside the workspace gives no diagnosis naming the path and a next step")
        else:
            check(r, r.ok and target.exists(), "bare, the write should land (the probe is broken)")

    await wl.run("write_outside", config, user, steps)


@pytest.mark.parametrize("config,user", matrix())
async def test_unlisted_host(wl, config, user):
    async def steps(t):
        if not t.fenced:
            return  # bare, curl would ask a DNS server off this machine
        host = "unlisted-host.example.com"
        r = await t.sh(f"curl -sS -i --max-time 20 http://{host}/x", ok=False)
        check(r, "403" in r.text.split("\n", 1)[0], "the proxy did not answer 403 for a host no list names")
        check(r, "on_new_domain" in r.text and "allow_domains" in r.text,
              "the 403 does not name the rule that refused and how to allow it")
        refused = (r.data.get("network") or {}).get("refused") or []
        check(r, any(e.get("host") == host for e in refused), "data.network.refused does not list the host")

    await wl.run("unlisted_host", config, user, steps, programs=["curl"])


@pytest.mark.parametrize("config,user", matrix())
async def test_sessions_isolated(wl, config, user):
    port = free_port()
    shm = f"/dev/shm/whalebox-workloads-{secrets.token_hex(4)}"
    mark = secrets.token_hex(8)
    naptime = f"{300 + secrets.randbelow(600)}.{secrets.randbelow(1000):03d}"  # names the sleeper
    ipc_key = 0x5EC00000 + secrets.randbelow(0xFFFFF)  # a System V segment's key

    async def steps(t):
        import os

        try:
            await t.sh(f"echo mine > {shm} && cat {shm}")
            # A System V shared memory segment (IPC_CREAT, mode 0600), which outlives its
            # maker: any process of the same user in the same IPC namespace can attach it.
            await t.sh(f"python3 -c 'import ctypes; l = ctypes.CDLL(None); "
                       f"raise SystemExit(l.shmget({ipc_key}, 4096, 0o1600) < 0)'")
            await t.start(f"exec python3 -m http.server {port} --bind 127.0.0.1")
            await t.start(f"export WORKLOADS_MARK={mark}; echo $$ > sleeper.pid; exec sleep {naptime}")
            # Both up (the server as its own session sees it: test_devserver judges that).
            await t.sh(f"curl -sS -o /dev/null --fail-with-body --max-time 5 --retry 20 --retry-delay 1 "
                       f"--retry-connrefused --retry-max-time 20 http://127.0.0.1:{port}/", ok=False)
            await t.sh("for i in $(seq 1 50); do test -s sleeper.pid && exit 0; sleep 0.1; done; exit 1")
            r = await t.sh(f"cat {shm} && cat sleeper.pid && tr '\\0' ' ' < /proc/$(cat sleeper.pid)/cmdline")
            pid = int(r.text.split()[1])
            check(r, f"sleep {naptime}" in r.text, "the sleeper's pid is not the process that was started")
            async with t.session() as other:
                # Each session has its own PID namespace, where the first's pid may name a
                # process of the second's own: a probe counts only when the pid names the
                # sleeper there (not the probe's own grep, whose pattern is not its text).
                same = f"tr '\\0' ' ' < /proc/{pid}/cmdline | grep -q 'slee[p] {naptime}' && "
                probes = {
                    "see the first session's /dev/shm file": f"cat {shm}",
                    "reach the first session's loopback server": f"curl -fsS --max-time 5 http://127.0.0.1:{port}/",
                    "see the first session's System V shared memory": f"ipcs -m | grep -i {ipc_key:#x}",
                    "signal the first session's process": same + f"kill -0 {pid}",
                    "read the first session's /proc/PID/environ": same + f"tr '\\0' '\\n' < /proc/{pid}/environ | grep {mark}",
                    "read the first session's /proc/PID/fd": same + f"ls -l /proc/{pid}/fd/",
                }
                if pid_namespaces():
                    probes["see the first session's process"] = same + "true"
                failures = []
                for what, probe in probes.items():
                    r = await other.sh(probe, ok=False)
                    if t.fenced and r.ok:
                        failures.append(r.describe(f"a second session could {what}"))
                    elif not t.fenced and not r.ok:
                        failures.append(r.describe(f"bare, a second session should {what} (the probe is broken)"))
                if t.fenced:
                    await other.sh(same + f"kill -TERM {pid}", ok=False)
            # Alive, the way any later call can tell (cmdline needs no ptrace access).
            r = await t.sh(f"tr '\\0' ' ' < /proc/{pid}/cmdline", ok=False)
            if f"sleep {naptime}" not in r.text:
                failures.append(r.describe("the first session's process did not outlive the second's probes"))
            if failures:
                raise StepFailed(f"{len(failures)} isolation probe(s) failed:\n\n" + "\n\n".join(failures))
        finally:
            if os.path.exists(shm):
                os.unlink(shm)
            if not t.fenced:
                subprocess.run(["ipcrm", "-M", str(ipc_key)], stderr=subprocess.DEVNULL)

    await wl.run("sessions", config, user, steps, programs=["python3", "curl", "/usr/bin/ipcs"])
