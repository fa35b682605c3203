"""mcp group benchmark (not a test), with the test upstream server
(tests/mcp/upstream/catalog_server.py):
1. a call_tool round trip through whalebox (one MCP session, the upstream started
   fenced behind it) against the same call made to the same upstream directly: medians
   of BENCH_RUNS (default 200) and the latency whalebox adds;
2. tool_search over a catalog of 1,000 upstream tools: the median time of one search."""

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from mcp_session import Rpc, median_ms  # noqa: E402

RUNS = int(os.environ.get("BENCH_RUNS", "200"))
binary = sys.argv[1]
repo = pathlib.Path(__file__).resolve().parents[1]
server = repo / "tests" / "mcp" / "upstream" / "catalog_server.py"


root = tempfile.mkdtemp(prefix="whalebox-mcp-bench-")
# HOME (and the checkpoint store under it) outside the workspace, as whalebox requires.
home = tempfile.mkdtemp(prefix="whalebox-mcp-bench-home-")
env = {"PATH": os.environ["PATH"], "HOME": home, "RUST_LOG": "warn"}
base = pathlib.Path(sys.base_prefix).resolve()
profile = pathlib.Path(root) / "p.toml"
profile.write_text(
    f'tools = ["mcp"]\nread_roots = ["{sys.prefix}", "{server.parent}"]\n'
    f'[landlock]\nrox = ["{base}"]\n'
    f'[mcp_servers.gh]\ncommand = "{sys.executable}"\nargs = ["{server}", "gh"]\n'
    f'[mcp_servers.big]\ncommand = "{sys.executable}"\nargs = ["{server}", "big", "--many", "960"]\n')
args = {"repository": "o/r", "query": "x"}
direct = Rpc([sys.executable, str(server), "gh"], env)
behind = Rpc([binary, "serve", "--profile", str(profile), "--workspace", root], env)
wrapped = {"name": "mcp__gh__get_issue", "arguments": args}
behind.rpc("tools/call", {"name": "tool_search", "arguments": {"query": "issue"}})  # start both
d = median_ms(lambda: direct.rpc("tools/call", {"name": "get_issue", "arguments": args}), RUNS)
w = median_ms(lambda: behind.rpc("tools/call", {"name": "call_tool", "arguments": wrapped}), RUNS)
print(f"mcp bench: call_tool round trip, median of {RUNS}: through whalebox {w:.2f} ms, "
      f"upstream directly {d:.2f} ms; added {w - d:.2f} ms")
s = median_ms(lambda: behind.rpc("tools/call", {"name": "tool_search",
                                                "arguments": {"query": "create an invoice for a customer"}}),
              max(RUNS // 10, 10))
# 47 tools in each test server, 960 more in "big".
print(f"mcp bench: tool_search over a catalog of {960 + 2 * 47} tools: median {s:.2f} ms")
direct.close()
behind.close()
shutil.rmtree(root, ignore_errors=True)
shutil.rmtree(home, ignore_errors=True)
