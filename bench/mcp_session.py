"""Shared by the MCP benchmarks: one `whalebox serve` session spoken to as raw JSON-RPC
lines (no client library in the timing), and the median of repeated calls."""

import json
import statistics
import subprocess
import time


class Rpc:
    """Any stdio MCP server, initialized, spoken to as raw JSON-RPC lines."""

    def __init__(self, argv, env):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.next = 0
        self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "bench", "version": "1"}})
        self.rpc("notifications/initialized", notify=True)

    def rpc(self, method, params=None, notify=False):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        if not notify:
            self.next += 1
            msg["id"] = self.next
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()
        if notify:
            return None
        while True:  # skip the server's notifications
            reply = json.loads(self.p.stdout.readline())
            if reply.get("id") == msg["id"]:
                assert "result" in reply, reply
                return reply["result"]


class Session(Rpc):
    """`whalebox serve ARGS`."""

    def __init__(self, binary, args, env):
        super().__init__([binary, "serve", *args], env)

    def call(self, tool, args):
        """The envelope of a successful call."""
        result = self.rpc("tools/call", {"name": tool, "arguments": args})
        # The envelope rides in _meta (structuredContent only with [output] structured).
        env = result.get("structuredContent") or result["_meta"]["whalebox/envelope"]
        assert env["ok"], env
        return env

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=10)


def median_ms(fn, runs):
    fn()  # warm up
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)
