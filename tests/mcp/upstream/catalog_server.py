"""A real upstream MCP server (PyPI `mcp`, MCPServer) for whalebox's mcp group tests:
several dozen tools with realistic descriptions, plus tools that misbehave on purpose
(hang, crash the server, fail, write files). Started by whalebox, over stdio.

Usage: catalog_server.py NAME [--collide] [--garbage] [--exit]
($UPSTREAM_STARTS: a file that gets a line at each start.)"""

import os
import sys
import time

from mcp.server.mcpserver import Context, MCPServer

name = sys.argv[1] if len(sys.argv) > 1 else "demo"
if os.environ.get("UPSTREAM_STARTS"):
    # One line per start, to count them.
    with open(os.environ["UPSTREAM_STARTS"], "a") as starts:
        starts.write(f"{os.getpid()}\n")
if "--garbage" in sys.argv:
    # Not MCP at all on stdout.
    print("this is not JSON-RPC", flush=True)
    time.sleep(60)
    sys.exit(1)
if "--exit" in sys.argv:
    print("upstream: giving up at once", file=sys.stderr, flush=True)
    sys.exit(3)

server = MCPServer(name)

TOPICS = {
    "issue": "an issue in the tracker",
    "pull_request": "a pull request under review",
    "release": "a tagged release with notes",
    "branch": "a git branch of the repository",
    "workflow": "a CI workflow run",
    "comment": "a comment on an issue or pull request",
    "label": "a label used to sort issues",
    "milestone": "a milestone grouping issues",
}
VERBS = {
    "create": "Create {a}.",
    "get": "Get the details of {a} by its number or name.",
    "list": "List every {a} matching a filter, newest first.",
    "update": "Change the fields of {a}.",
    "delete": "Delete {a} permanently.",
}


def make(verb, topic, what):
    def tool(repository: str, query: str = "") -> str:
        return f"{verb} {topic} in {repository} ({query})"

    tool.__name__ = f"{verb}_{topic}"
    tool.__doc__ = VERBS[verb].format(a=what) + " Needs the repository as owner/name."
    server.tool()(tool)


for verb in VERBS:
    for topic, what in TOPICS.items():
        make(verb, topic, what)


if "--many" in sys.argv:
    # A large catalog (for bench/mcp.sh): N more tools over made-up services.
    count = int(sys.argv[sys.argv.index("--many") + 1])
    nouns = ["invoice", "customer", "ticket", "alert", "deployment", "bucket", "dashboard",
             "incident", "order", "payment", "schedule", "document", "metric", "user", "team"]
    for i in range(count):
        noun = nouns[i % len(nouns)]
        verb = list(VERBS)[i // len(nouns) % len(VERBS)]

        def generated(id: str = "") -> str:
            return id

        server.add_tool(generated, name=f"{verb}_{noun}_{i}",
                        description=f"{VERBS[verb].format(a='a ' + noun)} Service number {i}.")


@server.tool()
def post_message(channel: str, text: str) -> str:
    """Post a chat message to a channel (by its name, like #general)."""
    return f"posted to {channel}: {text}"


@server.tool()
def query_database(sql: str) -> str:
    """Run a read-only SQL query on the analytics database and return rows as CSV."""
    return "id,name\n1,whalebox"


@server.tool()
def fail_always(reason: str) -> str:
    """A tool that reports an error."""
    raise ValueError(f"refused: {reason}")


@server.tool()
def hang(seconds: int) -> str:
    """Sleep for a while before answering."""
    time.sleep(seconds)
    return "woke"


@server.tool()
def crash() -> str:
    """Make the server exit."""
    print("upstream: crashing on purpose", file=sys.stderr, flush=True)
    os._exit(7)


@server.tool()
def write_file(path: str, text: str) -> str:
    """Write text to a file."""
    with open(path, "w") as f:
        f.write(text)
    return f"wrote {path}"


@server.tool()
async def count_slowly(n: int, ctx: Context) -> str:
    """Count to n, reporting progress at each step."""
    import anyio
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"step {i}")
        await anyio.sleep(0.05)
    return f"counted to {n}"


@server.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Add a tool at run time and announce it (notifications/tools/list_changed)."""
    def added() -> str:
        return f"{name} answers"

    server.add_tool(added, name=name, description=f"A tool added at run time, {name}.")
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


if "--collide" in sys.argv:
    @server.tool(name="get.status")
    def status_dot() -> str:
        """Status, dotted name."""
        return "dot"

    @server.tool(name="get_status")
    def status_underscore() -> str:
        """Status, underscored name."""
        return "underscore"

print(f"upstream {name}: serving", file=sys.stderr, flush=True)
server.run("stdio")
