"""The server and the machine: what a task does to the process that decides for it
(`whalebox serve`). Bare, each probe is aimed at a decoy of the same user (targets.py)
and must reach it; fenced, aimed at the server, it must not, and the server goes on
serving."""

import os
import signal

import pytest

from conftest import matrix
from harness import check
from harness import Needs
from harness import pid_namespaces
from targets import CREDENTIAL_TOML, victim, with_secret

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("config,user", matrix())
async def test_a_task_cannot_stop_the_server(wl, config, user):
    async def steps(t):
        with victim(t) as v:
            r = await t.sh(f"kill -STOP {v.pid}", ok=False)
            stopped = v.wait_for_state("T", seconds=2)
            if stopped:
                os.kill(v.pid, signal.SIGCONT)
            if t.fenced:
                check(r, not stopped, f"a task stopped the server (pid {v.pid}) with SIGSTOP")
                await t.sh("true", why="the server stopped answering after a task signalled it")
            else:
                check(r, r.ok and stopped, "bare, the decoy should be stopped (the probe is broken)")

    await wl.run("stop_the_server", config, user, steps)


@pytest.mark.parametrize("config,user", matrix())
async def test_a_task_cannot_read_the_servers_environment(wl, config, user):
    """`/proc/SERVER/environ` as the issue's reproduction reads it. Fenced, the server
    took the credential's secret out of its environment (and overwrote it in the block
    /proc shows) and is not dumpable; a task holds no CAP_SYS_PTRACE. Bare, the decoy's
    environment is readable by its own user: the probe works."""

    async def steps(t):
        with victim(t) as v:
            r = await t.sh(f"tr '\\0' '\\n' < /proc/{v.pid}/environ", ok=False)
            leaked = v.secret in r.text
            if t.fenced:
                check(r, not leaked, f"a task read the server's secret from /proc/{v.pid}/environ")
                await t.sh("true", why="the server stopped answering")
            else:
                check(r, leaked, "bare, the decoy's environment should be readable (the probe is broken)")

    await wl.run("server_environ", config, user, steps, setup=with_secret,
                 needs=Needs(toml=CREDENTIAL_TOML))


@pytest.mark.parametrize("config,user", matrix())
async def test_a_task_sees_only_its_sessions_processes(wl, config, user):
    """`ls /proc` and `ps -e` from a task list the machine's processes with their command
    lines: the server's, other sessions', the person's. Fenced, the session's PID
    namespace and its own procfs leave only the session's: the server's pid names no
    process (`kill -0` finds none); a process another call of the session left running
    is still listed, and another session (a second server) does not list it. Bare, the
    decoy is listed: the probe works."""

    async def steps(t):
        with victim(t) as v:
            r = await t.sh("ls /proc", ok=False)
            listed = str(v.pid) in r.text.split()
            if t.fenced:
                check(r, not listed, f"a task listed the server (pid {v.pid}) in /proc")
                k = await t.sh(f"kill -0 {v.pid}; echo kill=$?", ok=False)
                check(k, "kill=0" not in k.text, f"a task found the server (pid {v.pid}) with kill -0")
                await t.start("exec sleep 4213")
                seen = await t.sh("ps -e -o args=", ok=False)
                check(seen, "sleep 4213" in seen.text,
                      "a process another call of the session started is out of this one's sight")
                async with t.session() as other:
                    there = await other.sh("ps -e -o args=", ok=False)
                    check(there, "sleep 4213" not in there.text,
                          "another session listed this session's process")
                await t.sh("true", why="the server stopped answering")
            else:
                check(r, listed, f"bare, the decoy (pid {v.pid}) should be listed (the probe is broken)")

    if not pid_namespaces():
        pytest.skip("this machine makes no PID namespace with a procfs of its own "
                    "(unshare -pf --mount-proc fails as root and in a user namespace)")
    await wl.run("server_listed", config, user, steps, programs=["/usr/bin/ps"])


@pytest.mark.parametrize("config,user", matrix())
async def test_a_task_cannot_limit_or_renice_the_server(wl, config, user):
    """`prlimit --fsize=0 --pid SERVER` (the server dies of SIGXFSZ at its next
    checkpoint write) and `renice 19` of the server: the kernel lets a user do both to
    its own processes. Fenced, the deny list refuses both aimed at another pid. Bare,
    the decoy (same user) takes both."""

    async def steps(t):
        with victim(t) as v:
            r = await t.sh(f"prlimit --msgqueue=12345:12345 --pid {v.pid}; p=$?; renice -n 19 -p {v.pid}; echo prlimit=$p renice=$?",
                           ok=False)
            limited = _limit(v.pid, "Max msgqueue size") == "12345"
            reniced = _nice(v.pid) == 19
            if t.fenced:
                check(r, not limited, f"a task set the server's (pid {v.pid}) limits")
                check(r, not reniced, f"a task reniced the server (pid {v.pid})")
                await t.sh("true", why="the server stopped answering")
            else:
                check(r, limited and reniced, "bare, the decoy should be limited and reniced (the probe is broken)")

    await wl.run("server_prlimit", config, user, steps)


@pytest.mark.parametrize("config,user", matrix())
async def test_a_task_cannot_move_the_server_to_other_cpus(wl, config, user):
    """`taskset -p -c CPU SERVER`: the kernel lets a user pin its own processes, with no
    ptrace check for Landlock to scope. Fenced, the deny list refuses sched_setaffinity
    aimed at another pid (as root the kernel refuses it too: the server holds
    capabilities the task dropped). Bare, the decoy (same user) moves."""

    async def steps(t):
        with victim(t) as v:
            before = v.status_field("Cpus_allowed_list")
            last = before.replace(",", "-").split("-")[-1]
            r = await t.sh(f"taskset -p -c {last} {v.pid}", ok=False)
            moved = v.status_field("Cpus_allowed_list") != before
            if t.fenced:
                check(r, not moved, f"a task moved the server (pid {v.pid}) to CPU {last}")
                await t.sh("true", why="the server stopped answering")
            else:
                check(r, moved, f"bare, the decoy should move from CPUs {before} to {last} "
                                "(the probe is broken, or this machine has one CPU)")

    await wl.run("server_affinity", config, user, steps)


# A user namespace made, two ways: unshare(2) (`unshare -U`: not `-Ur`, whose id maps are
# files in /proc that a task's Landlock layer refuses to write whatever the deny list says)
# and a raw clone(CLONE_NEWUSER) from python3 (exit 0 when the kernel let it through).
USERNS_UNSHARE = "unshare -U true"
USERNS_CLONE = ("/usr/bin/python3 -c \"import ctypes,os; l=ctypes.CDLL(None,use_errno=True); "
                "p=l.syscall(56, 0x10000000 | 17, 0, 0, 0, 0); "
                "os._exit(0) if p == 0 else os._exit(1 if p < 0 else os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]))\"")


@pytest.mark.parametrize("config,user", matrix())
async def test_a_task_cannot_make_a_user_namespace(wl, config, user):
    """A user namespace gives its maker CAP_SYS_ADMIN and CAP_NET_ADMIN over the
    namespaces it makes next, the door to most kernel exploits of recent years. Bare,
    root and nobody make one (the probe works). Fenced (`[shell] user_namespaces`
    left at deny), unshare and clone with CLONE_NEWUSER fail."""

    async def steps(t):
        for probe in (USERNS_UNSHARE, USERNS_CLONE):
            r = await t.sh(probe, ok=False)
            if t.fenced:
                check(r, not r.ok, f"a task made a user namespace: {probe}")
            else:
                check(r, r.ok, f"bare, {probe} should work (the probe is broken, or the kernel "
                               "refuses user namespaces: user.max_user_namespaces)")
        if t.fenced:
            await t.sh("true", why="the server stopped answering")

    await wl.run("machine_userns", config, user, steps, programs=["/usr/bin/unshare", "/usr/bin/python3"])


@pytest.mark.parametrize("config,user", matrix())
async def test_user_namespaces_allowed_by_the_profile_work(wl, config, user):
    """`[shell] user_namespaces = "allow"` (rootless containers, bwrap, browsers' own
    sandboxes): `unshare -Ur` works under every fence. The id maps are files in /proc,
    which a task's Landlock layer keeps read-only, so the profile also names /proc in
    `[landlock] rw`, as such a user must (docs/src/profile.md)."""

    async def steps(t):
        r = await t.sh("unshare -Ur id -u", ok=False)
        check(r, r.ok and r.text.splitlines()[:1] == ["0"], "unshare -Ur should work and map the user to 0")
        r = await t.sh(USERNS_CLONE, ok=False)
        check(r, r.ok, "clone(CLONE_NEWUSER) should work")

    await wl.run("machine_userns_allowed", config, user, steps,
                 programs=["/usr/bin/unshare", "/usr/bin/python3"],
                 needs=Needs(profile={"shell": {"user_namespaces": "allow"},
                                      "landlock": {"rw": ["/proc"]}}))


def _limit(pid: int, name: str) -> str | None:
    for line in open(f"/proc/{pid}/limits"):
        if line.startswith(name):
            return line[len(name):].split()[0]
    return None


def _nice(pid: int) -> int:
    return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[16])


# Probes of the machine: a python3 ctypes call each, exit 0 when the kernel let it through.
PY = "/usr/bin/python3"
MACHINE_PROBES = {
    # The host's own name set again: nothing changes should it go through.
    "sethostname": "import ctypes,os,socket; n=socket.gethostname().encode(); "
                   "l=ctypes.CDLL(None,use_errno=True); os._exit(0 if l.sethostname(n,len(n))==0 else 1)",
    "mknod_kmsg": "import os; os.mknod('kmsg', 0o600 | 0o020000, os.makedev(1, 11)); "
                  "f=os.open('kmsg', os.O_RDONLY|os.O_NONBLOCK); os.read(f, 4096); os._exit(0)",
    "af_vsock": "import socket; socket.socket(40, socket.SOCK_STREAM)",
    "io_uring_setup": "import ctypes,os; l=ctypes.CDLL(None,use_errno=True); p=ctypes.create_string_buffer(120); "
                      "os._exit(0 if l.syscall(425, 4, p) >= 0 else 1)",
    "bpf": "import ctypes,os; l=ctypes.CDLL(None,use_errno=True); a=ctypes.create_string_buffer(128); "
           "a[0:4]=(2).to_bytes(4,'little'); a[4:8]=(4).to_bytes(4,'little'); a[8:12]=(4).to_bytes(4,'little'); "
           "a[12:16]=(1).to_bytes(4,'little'); os._exit(0 if l.syscall(321, 0, a, 128) >= 0 else 1)",
    # System-wide (pid -1, cpu 0) software clock counter.
    "perf_event_open": "import ctypes,os; l=ctypes.CDLL(None,use_errno=True); a=ctypes.create_string_buffer(128); "
                       "a[0:4]=(1).to_bytes(4,'little'); a[4:8]=(128).to_bytes(4,'little'); "
                       "os._exit(0 if l.syscall(298, a, -1, 0, -1, 0) >= 0 else 1)",
}


@pytest.mark.parametrize("probe", sorted(MACHINE_PROBES))
@pytest.mark.parametrize("config,user", matrix())
async def test_a_task_cannot_act_on_the_machine(wl, config, user, probe):
    """What a container's root cannot do (Docker's default profile) and Landlock does not
    see. Bare as root each goes through (the probe works); bare as nobody the kernel
    already refuses most (the control records it, no fence is claimed there). Fenced,
    each fails: capabilities dropped to Docker's set and the seccomp deny list."""

    async def steps(t):
        r = await t.sh(f"{PY} -c \"{MACHINE_PROBES[probe]}\"", ok=False)
        if t.fenced:
            check(r, not r.ok, f"{probe} went through under whalebox")
            await t.sh("true", why="the server stopped answering")
        elif t.user.uid == 0:
            check(r, r.ok, f"bare as root, {probe} should go through (the probe is broken)")
        # Bare as nobody: whatever the kernel says (most are refused without privilege).

    await wl.run(f"machine_{probe}", config, user, steps)


class _SocketService:
    """A listening unix socket of the machine's, outside the workspace: the stand-in for a
    `docker.sock` (root on the machine to whoever reaches it). Answers `pong`."""

    def __init__(self):
        import socket
        import tempfile
        import threading
        self.dir = tempfile.mkdtemp(prefix="wb-sock-")
        os.chmod(self.dir, 0o755)
        self.path = os.path.join(self.dir, "docker.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        os.chmod(self.path, 0o777)
        self.sock.listen(8)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"pong\n")

    def close(self):
        import shutil
        self.sock.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.mark.parametrize("config,user", matrix())
async def test_a_task_cannot_reach_the_machines_unix_sockets(wl, config, user):
    """A listening unix socket outside the workspace that no grant names (a docker.sock):
    Landlock before ABI 9 does not refuse the connect, so the session's mount namespace
    covers it with /dev/null. Bare, the task's client gets `pong`. Fenced, the connect is
    refused where the session has a mount namespace (result's data says so), and the
    server goes on serving."""
    service = _SocketService()
    client = ("python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); "
              f"s.connect(sys.argv[1]); print(s.recv(9).decode())' {service.path}")

    async def steps(t):
        r = await t.sh(client, ok=False)
        if t.fenced:
            check(r, "pong" not in r.text, f"a task reached the machine's unix socket {service.path}")
            check(r, "Connection refused" in r.text, "the client should have run and been refused")
            await t.sh("true", why="the server stopped answering after the probe")
        else:
            check(r, "pong" in r.text, "bare, the client should get pong (the probe is broken)")

    try:
        await wl.run("machine_unix_socket", config, user, steps, programs=["/usr/bin/python3"])
    finally:
        service.close()


@pytest.mark.parametrize("config,user", matrix())
async def test_a_task_cannot_reach_another_terminal(wl, config, user):
    """The person's terminal (a pty this test opens, as a terminal emulator would, made
    the user's): a task writes to `/dev/pts/N` (what the person would see) and reads from
    it (what the person types). Bare, the line reaches the terminal. Fenced, the session's
    own devpts instance covers /dev/pts: nothing reaches it; the terminals a task opens
    itself (a pty for a test, `script`) still work, and a PTY call's own terminal is named
    in it."""
    import pty
    import select
    master, slave = pty.openpty()
    name = os.ttyname(slave)

    def heard() -> bytes:
        got = b""
        while select.select([master], [], [], 0.2)[0]:
            try:
                got += os.read(master, 4096)
            except OSError:
                break
        return got

    async def steps(t):
        if user != "root":
            os.chown(name, t.user.uid, -1)
        r = await t.sh(f"echo wb-reached-the-terminal > {name}", ok=False)
        got = heard()
        if t.fenced:
            check(r, b"wb-reached" not in got, f"a task wrote to another terminal {name}")
            own = await t.sh("python3 -c 'import os; m, s = os.openpty(); os.write(s, b\"in-own-pty\\n\"); "
                             "print(os.read(m, 64).decode().strip(), os.ttyname(s))'", ok=False)
            check(own, "in-own-pty" in own.text, "a task could not open and use a terminal of its own")
            # A PTY call's own terminal has a name the task can open (`tty`, GPG_TTY).
            env = await t.call("shell_run", {"command": 'tty && test -c "$(tty)" && echo own-tty-ok',
                                             "mode": "pty"})
            check(own, "own-tty-ok" in env.get("text", ""), f"a PTY task's own terminal has no name: {env}")
        else:
            check(r, b"wb-reached" in got, "bare, the line should reach the terminal (the probe is broken)")

    try:
        await wl.run("another_terminal", config, user, steps, programs=["/usr/bin/python3"])
    finally:
        os.close(master)
        os.close(slave)
