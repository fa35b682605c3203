"""Servers, the way development uses them:

- a dev server started in the background by one shell_run (`python3 -m http.server`)
  and its client (`curl`) in the next shell_run of the same session; a second session
  must not reach it;
- a service the person runs on the host's loopback, reached through `[network]
  host_ports` (and recorded by the network fence), while a loopback port the profile
  does not list stays closed;
- a server a task listens on, published to the host's loopback by `[network] publish`:
  the test itself connects to it."""

import http.server
import threading
import urllib.request

import anyio
import pytest

from conftest import matrix
from harness import Needs, StepFailed, check, free_port

pytestmark = pytest.mark.anyio


def poll(url: str) -> str:
    """A step that waits (20 s at most) for the server at `url` to start, then prints what
    it serves; an answer that is not 2xx (a fence's 403) ends it at once, body shown."""
    return (f"curl -sS --fail-with-body --max-time 5 --retry 20 --retry-delay 1 --retry-connrefused "
            f"--retry-max-time 20 {url}")


@pytest.mark.parametrize("config,user", matrix())
async def test_devserver(wl, config, user):
    port = free_port()

    async def steps(t):
        await t.sh("mkdir -p site && echo 'dev server page' > site/index.html")
        server = await t.start(f"exec python3 -m http.server {port} --bind 127.0.0.1 --directory site")
        r = await t.sh(poll(f"http://127.0.0.1:{port}/index.html"), ok=False)
        if not (r.ok and "dev server page" in r.text):
            s = await t.wait(server, timeout=1)
            raise StepFailed(r.describe("the dev server the previous shell_run started is not reachable "
                                        "from the next shell_run of the same session")
                             + "\n\n" + s.describe("the dev server's own task"))
        r = await t.sh(f"curl -sS --max-time 5 http://localhost:{port}/index.html", ok=False)
        check(r, "dev server page" in r.text, "the dev server is not reachable as localhost")
        async with t.session() as other:
            r = await other.sh(f"curl -sS --max-time 5 http://127.0.0.1:{port}/index.html", ok=False)
            if t.fenced and t.config != "landlock-net":
                check(r, "dev server page" not in r.text, "a second session reached the first session's dev server")
            elif not t.fenced:
                check(r, "dev server page" in r.text, "bare, a second session should reach it (the probe is broken)")
            # Under the landlock fence there is no namespace: every session is on this
            # machine's loopback, and host_ports opens the port to all of them (the
            # network chapter says so).

    # Under the landlock fence a task's server is on this machine's loopback, which only
    # host_ports opens (a refusal names it: tests/real_work.rs).
    needs = Needs(host_ports=[port]) if config == "landlock-net" else Needs()
    await wl.run("devserver", config, user, steps, needs=needs, programs=["python3", "curl"])


class Service:
    """An HTTP service on the host's loopback, as a person runs one."""

    def __init__(self, greeting: str, address: str = "127.0.0.1"):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = f"{greeting} at {self.path}\n".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer((address, 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def services():
    # The listed one on every interface: a task must reach it on 127.0.0.1 only.
    listed, unlisted = Service("listed service", "0.0.0.0"), Service("unlisted service")
    yield listed, unlisted
    listed.close()
    unlisted.close()


@pytest.mark.parametrize("config,user", matrix())
async def test_host_service(wl, services, config, user):
    listed, unlisted = services

    async def steps(t):
        landlock_fence = t.fenced and t.config == "landlock-net"
        r = await t.sh(f"curl -sS --max-time 10 http://127.0.0.1:{listed.port}/a", ok=False)
        t.expect(r, r.ok and "listed service at /a" in r.text, "the host's service on a host_ports port is not reachable")
        if landlock_fence:
            # No namespace to bridge: the connection is direct, unrecorded, and Landlock
            # opens the port on every address; the result must say so.
            still_open = " ".join((r.data.get("network") or {}).get("still_open") or [])
            t.expect(r, "host_ports" in still_open and str(listed.port) in still_open,
                     "the landlock fence does not say that host_ports leaves the port open on any address")
        elif t.fenced:
            reached = (r.data.get("network") or {}).get("reached") or []
            t.expect(r, any(e.get("port") == listed.port for e in reached),
                     "the connection to the host_ports service is not in data.network.reached")
        r = await t.sh(f"curl -sS --max-time 10 http://localhost:{listed.port}/b", ok=False)
        t.expect(r, r.ok and "listed service at /b" in r.text, "the host's service is not reachable as localhost")
        r = await t.sh(f"curl -sS --max-time 10 http://127.0.0.1:{unlisted.port}/c", ok=False)
        if t.fenced:
            t.expect(r, "unlisted service" not in r.text,
                     f"a host loopback port no host_ports line lists ({unlisted.port}) was reached")
        else:
            t.expect(r, "unlisted service at /c" in r.text, "bare, the unlisted service should answer (the probe is broken)")
        # host_ports opens the host's 127.0.0.1:PORT, not PORT on every address: the same
        # service on this machine's own non-loopback address is another host, which no
        # list names (no packet leaves the machine: the address is local).
        ip = local_address()
        if ip:
            r = await t.sh(f"curl --noproxy '*' -sS --max-time 10 http://{ip}:{listed.port}/d", ok=False)
            if t.fenced and not landlock_fence:
                t.expect(r, "listed service" not in r.text,
                         f"host_ports = [{listed.port}] let the task connect directly to {ip}:{listed.port} "
                         "(another address than the host's loopback), past the proxy and unrecorded")
            elif not t.fenced:
                t.expect(r, "listed service at /d" in r.text, f"bare, the service should answer on {ip} (the probe is broken)")

    await wl.run("host_service", config, user, steps, needs=Needs(host_ports=[listed.port]), programs=["curl"])


def local_address() -> str | None:
    """This machine's own non-loopback IPv4 address (a UDP connect sends nothing), or None."""
    import socket

    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))
            ip = s.getsockname()[0]
    except OSError:
        return None
    return None if ip.startswith("127.") else ip


def fetch(url: str, seconds: float) -> str:
    """GET `url` from the host, retrying for `seconds`; the body, or the last error."""
    import time

    deadline = time.monotonic() + seconds
    last = ""
    while time.monotonic() < deadline:
        try:
            with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(url, timeout=3) as resp:
                return resp.read().decode(errors="replace")
        except Exception as e:  # connection refused while the server starts, or the fence
            last = f"error: {e!r}"
            time.sleep(0.2)
    return last


@pytest.mark.parametrize("config,user", matrix())
async def test_publish(wl, config, user):
    port = free_port()

    async def steps(t):
        await t.sh("mkdir -p site && echo 'published page' > site/index.html")
        server = await t.start(f"exec python3 -m http.server {port} --bind 127.0.0.1 --directory site")
        got = await anyio.to_thread.run_sync(fetch, f"http://127.0.0.1:{port}/index.html", 15)
        if "published page" not in got:
            s = await t.wait(server, timeout=1)
            raise StepFailed(s.describe(f"the host could not reach the task's server on 127.0.0.1:{port} "
                                        f"([network] publish = [{port}]): {got}"))

    await wl.run("publish", config, user, steps, needs=Needs(publish=[port]), programs=["python3"])
