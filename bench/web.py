"""Web benchmark (not a test), against an HTTP server on loopback started here:
1. a 1 MB article fetched and converted to Markdown: `web_fetch` through one MCP session
   (the cache is bypassed with a fresh query string each run) against `curl | pandoc -t
   gfm`, medians of BENCH_RUNS (default 10), and the ratio;
2. paging through a 50 MB text body with `web_fetch` (max_bytes raised to 64 MB): the
   server's peak resident memory (VmHWM) before and after, and the time per page."""

import http.server
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from mcp_session import Session, median_ms

RUNS = int(os.environ.get("BENCH_RUNS", "10"))
binary = sys.argv[1]

paragraph = ("<p>whalebox carries out what a model asks for on a real disk, precisely and "
             "inside declared fences, and answers with <a href='/docs'>text</a> the model can "
             "act on. <em>Every</em> byte an edit did not change is <code>kept</code>.</p>\n")
article = ("<html><head><title>Bench</title></head><body><nav>menu</nav><main><h1>Bench</h1>"
           + "".join(f"<h2>Part {i}</h2>\n" + paragraph * 8 + "<ul><li>one</li><li>two</li></ul>\n"
                     for i in range(520))
           + "</main><footer>f</footer></body></html>").encode()
big = (b"0123456789abcdef" * 64 + b"\n") * (50 * 1024 * 1024 // 1025)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = big if self.path.startswith("/big") else article
        ctype = "text/plain" if self.path.startswith("/big") else "text/html; charset=utf-8"
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
port = server.server_address[1]
root = tempfile.mkdtemp(prefix="whalebox-web-bench-")
# HOME (and the checkpoint store under it) outside the workspace, as whalebox requires.
home = tempfile.mkdtemp(prefix="whalebox-web-bench-home-")
profile = os.path.join(root, "web.toml")
with open(profile, "w") as f:
    f.write(f'tools = ["web"]\n[web]\nallow_private = ["127.0.0.1"]\nports = [{port}]\n'
            'max_bytes = 67108864\ntimeout_ms = 60000\n')
s = Session(binary, ["--profile", profile, "--workspace", root],
            {"PATH": os.environ["PATH"], "HOME": home, "RUST_LOG": "warn"})

n = [0]


def whalebox():
    n[0] += 1
    s.call("web_fetch", {"url": f"http://127.0.0.1:{port}/article?{n[0]}", "max_length": 1000})


def baseline():
    curl = subprocess.Popen(["curl", "-s", f"http://127.0.0.1:{port}/article"], stdout=subprocess.PIPE)
    subprocess.run(["pandoc", "-f", "html", "-t", "gfm"], stdin=curl.stdout,
                   stdout=subprocess.DEVNULL, check=True)
    curl.wait()


w = median_ms(whalebox, RUNS)
b = median_ms(baseline, RUNS)
print(f"web bench: a {len(article) / 1e6:.1f} MB article to Markdown, medians of {RUNS}: "
      f"whalebox web_fetch {w:.0f} ms, curl | pandoc {b:.0f} ms, ratio {w / b:.2f}x")


s.close()
# Paging memory in a session of its own: its peak resident memory against the same
# session's memory before the first page.
s = Session(binary, ["--profile", profile, "--workspace", root],
            {"PATH": os.environ["PATH"], "HOME": home, "RUST_LOG": "warn"})


def rss_kb(field):
    with open(f"/proc/{s.p.pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


before = rss_kb("VmRSS")
start, pages, t0 = 0, 0, time.perf_counter()
while start is not None:
    env = s.call("web_fetch", {"url": f"http://127.0.0.1:{port}/big", "start_index": start,
                               "max_length": 20000})
    pages += 1
    start = env["data"].get("next_start_index")
    if pages >= 200 and start is not None:
        # Jump to the end: the last pages too, without reading all 2600.
        start = max(start, env["data"]["total_chars"] - 20000 * 5)
elapsed = time.perf_counter() - t0
peak = rss_kb("VmHWM")
print(f"web bench: paging a {len(big) / 1e6:.0f} MB body ({pages} pages of 20000 chars, one fetch): "
      f"resident {before / 1024:.0f} MB before, peak {peak / 1024:.0f} MB "
      f"({(peak - before) / 1024 / (len(big) / 1e6):.2f}x the body), {elapsed * 1000 / pages:.1f} ms per page")
s.close()
server.shutdown()
shutil.rmtree(root, ignore_errors=True)
