"""Package registries on 127.0.0.1, served from what tests/workloads/prepare fetched into
target/workloads/ (nothing here reaches another machine):

- cargo: a sparse registry, `/cargo/index/` (`config.json` with `dl`, one index file per
  crate at its `it/oa/itoa` path, the crates.io lines as they are) and the `.crate`
  files under `/cargo/crates/`;
- pip: a PEP 503 simple index, `/pip/simple/<name>/`, links carrying `#sha256=`, the
  wheels under `/pip/files/`;
- npm: a registry, `/npm/<name>` (the package document, built from each tarball's
  package.json, with `dist.tarball` pointing back here, `shasum` and `integrity`), the
  tarballs under `/npm/-/`;
- `/hello`: a greeting, for the host-service workloads.

Every request is recorded (`Registry.requests`), so a workload can prove the packages
came from here."""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import pathlib
import re
import tarfile
import threading


def pep503(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def cargo_index_path(name: str) -> str:
    n = name.lower()
    if len(n) <= 2:
        return f"{len(n)}/{n}"
    if len(n) == 3:
        return f"3/{n[0]}/{n}"
    return f"{n[:2]}/{n[2:4]}/{n}"


class Registry:
    """One threaded HTTP server on 127.0.0.1 and a free port, serving all three registries."""

    def __init__(self, prepared: pathlib.Path, greeting: str = "hello from the host"):
        self.prepared = prepared
        self.greeting = greeting
        self.requests: list[str] = []
        self._lock = threading.Lock()
        self._cargo_index = {}
        for line_file in sorted((prepared / "cargo" / "index").glob("*")):
            self._cargo_index[cargo_index_path(line_file.name)] = line_file.read_bytes()
        self._wheels: dict[str, list[pathlib.Path]] = {}
        for wheel in sorted((prepared / "pip").glob("*.whl")):
            self._wheels.setdefault(pep503(wheel.name.split("-")[0]), []).append(wheel)
        self._npm: dict[str, list[tuple[dict, pathlib.Path]]] = {}
        for tgz in sorted((prepared / "npm").glob("*.tgz")):
            with tarfile.open(tgz) as t:
                member = next(m for m in t.getmembers() if m.name.endswith("package.json")
                              and m.name.count("/") == 1)
                manifest = json.load(t.extractfile(member))
            self._npm.setdefault(manifest["name"], []).append((manifest, tgz))

        registry = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                with registry._lock:
                    registry.requests.append(self.path)
                status, ctype, body = registry.route(self.path.split("?")[0], self.base())
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def base(self) -> str:
                """Links point back the way the client came (its Host header)."""
                host = self.headers.get("Host") or f"127.0.0.1:{registry.port}"
                return f"http://{host}"

            def do_HEAD(self):
                status, ctype, body = registry.route(self.path.split("?")[0], self.base())
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()

            def do_POST(self):  # npm audit and the like: not served
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def served(self, prefix: str) -> list[str]:
        with self._lock:
            return [p for p in self.requests if p.startswith(prefix)]

    # -- routes -------------------------------------------------------------------------

    def route(self, path: str, base: str) -> tuple[int, str, bytes]:
        if path == "/hello":
            return 200, "text/plain", (self.greeting + "\n").encode()
        if path.startswith("/cargo/"):
            return self.cargo(path[len("/cargo/"):], base)
        if path.startswith("/pip/"):
            return self.pip(path[len("/pip/"):])
        if path.startswith("/npm/"):
            return self.npm(path[len("/npm/"):], base)
        return 404, "text/plain", b"not here\n"

    def cargo(self, path: str, base: str):
        if path == "index/config.json":
            body = {"dl": f"{base}/cargo/crates/{{crate}}-{{version}}.crate", "api": None}
            return 200, "application/json", json.dumps(body).encode()
        if path.startswith("index/"):
            entry = self._cargo_index.get(path[len("index/"):].lower())
            if entry is not None:
                return 200, "text/plain", entry
        if path.startswith("crates/"):
            return self.file(self.prepared / "cargo" / "crates", path[len("crates/"):], "application/gzip")
        return 404, "text/plain", b"no such crate\n"

    def pip(self, path: str):
        if path in ("simple/", "simple"):
            links = "".join(f'<a href="{n}/">{n}</a>\n' for n in sorted(self._wheels))
            return 200, "text/html", f"<!DOCTYPE html><html><body>\n{links}</body></html>\n".encode()
        if path.startswith("simple/"):
            name = pep503(path[len("simple/"):].strip("/"))
            if name in self._wheels:
                links = ""
                for wheel in self._wheels[name]:
                    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
                    links += f'<a href="../../files/{wheel.name}#sha256={digest}">{wheel.name}</a>\n'
                return 200, "text/html", f"<!DOCTYPE html><html><body>\n{links}</body></html>\n".encode()
        if path.startswith("files/"):
            return self.file(self.prepared / "pip", path[len("files/"):], "application/octet-stream")
        return 404, "text/plain", b"no such project\n"

    def npm(self, path: str, base: str):
        if path.startswith("-/"):
            return self.file(self.prepared / "npm", path[2:], "application/octet-stream")
        name = path.replace("%2f", "/").replace("%2F", "/")
        if name in self._npm:
            versions = {}
            for manifest, tgz in self._npm[name]:
                data = tgz.read_bytes()
                doc = dict(manifest)
                doc["dist"] = {
                    "tarball": f"{base}/npm/-/{tgz.name}",
                    "shasum": hashlib.sha1(data).hexdigest(),
                    "integrity": "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode(),
                }
                versions[manifest["version"]] = doc
            latest = sorted(versions, key=lambda v: [int(x) for x in v.split(".")])[-1]
            body = {"name": name, "dist-tags": {"latest": latest}, "versions": versions}
            return 200, "application/json", json.dumps(body).encode()
        return 404, "application/json", b'{"error": "not found"}'

    @staticmethod
    def file(directory: pathlib.Path, name: str, ctype: str):
        if "/" in name or name.startswith("."):
            return 404, "text/plain", b"no\n"
        p = directory / name
        if not p.is_file():
            return 404, "text/plain", b"no such file\n"
        return 200, ctype, p.read_bytes()
