"""Drive a command line the way a user's client would, for tests/nix/run and the client
snippet tests:

  mcp_check.py initialize [--cwd DIR] [--env K=V]... -- CMD ARGS...
      start CMD as an MCP server on stdio with the real Python `mcp` client, run the
      `initialize` handshake and list the tools; exit 1 unless whalebox's tools are there.
  mcp_check.py interactive -- CMD ARGS...
      run CMD on a real terminal (a PTY), expect whalebox's sandbox shell prompt, check
      from inside that execs are gated, and leave with `exit`.
"""

import argparse
import asyncio
import os
import pty
import select
import signal
import sys
import time

from mcp import Client, StdioServerParameters

EXPECTED_TOOLS = {"read_file", "grep", "edit", "shell_run"}


async def initialize(command: list[str], cwd: str | None, env: dict[str, str]) -> None:
    params = StdioServerParameters(
        command=command[0],
        args=command[1:],
        cwd=cwd,
        env={**os.environ, **env},
    )
    # Generous: `nix run` may still be evaluating the flake.
    async with Client(params, mode="legacy", read_timeout_seconds=300) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
    missing = EXPECTED_TOOLS - tools
    if missing:
        sys.exit(f"mcp_check: {' '.join(command)}: tools missing: {sorted(missing)}; got {sorted(tools)}")
    print(f"mcp_check: {command[0]} …: initialized, {len(tools)} tools")


def interactive(command: list[str], timeout: float = 300.0) -> None:
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(command[0], command)
    seen = b""

    def read_until(marker: bytes) -> None:
        nonlocal seen
        deadline = time.monotonic() + timeout
        while marker not in seen:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                sys.exit(f"mcp_check: no {marker!r} within {timeout:.0f} s; the terminal showed:\n"
                         + seen.decode(errors="replace")[-3000:])
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    chunk = b""
                if not chunk:
                    sys.exit("mcp_check: the terminal closed; it showed:\n"
                             + seen.decode(errors="replace")[-3000:])
                seen += chunk

    read_until(b"[whalebox]")
    # Inside the sandbox's zsh the gate's socket is set and read-only (builtins only:
    # an external command could be an `ask` waiting on this terminal).
    os.write(fd, b"print -r -- gate-${+WHALEBOX_GATE_SOCKET}\n")
    read_until(b"gate-1")
    os.write(fd, b"unset WHALEBOX_GATE_SOCKET\n")
    read_until(b"read-only variable")
    os.write(fd, b"print -r -- still-${+WHALEBOX_GATE_SOCKET}\n")
    read_until(b"still-1")
    os.write(fd, b"exit\n")
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"mcp_check: the shell exited with {os.waitstatus_to_exitcode(status)}")
    print("mcp_check: the devShell landed in whalebox's gated shell")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["initialize", "interactive"])
    parser.add_argument("--cwd")
    parser.add_argument("--env", action="append", default=[])
    parser.add_argument("command", nargs="+")
    args = parser.parse_args()
    if args.mode == "initialize":
        env = dict(kv.split("=", 1) for kv in args.env)
        asyncio.run(initialize(args.command, args.cwd, env))
    else:
        interactive(args.command)


if __name__ == "__main__":
    main()
