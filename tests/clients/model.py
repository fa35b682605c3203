"""A scripted stand-in for the Anthropic and OpenAI model APIs, served on 127.0.0.1.

The real clients (Claude Code, Codex CLI) talk to it as they would to their vendor's API, so a
test can make them call whalebox's tools in a fixed order without an LLM, and then see exactly
what each client handed the model as each tool's result. It is stdlib only on purpose: it runs
in the test venv and needs nothing from any registry.

It is also every client's HTTP(S) proxy: whatever a client tries to reach besides this server
is refused and recorded (`stray_hosts`), so "the test sent nothing off this machine" is an
assertion instead of a hope.

A script is a list of steps. Each step is either a list of tool calls
(`{"tool": "read_file", "args": {...}}`, whalebox's bare tool names), a string (the model's
final text), or a function of the results so far that returns one of those. Which step a request gets is decided from the conversation in that request (which
of this server's tool calls already have results), never from how many requests came before:
clients also send side requests (titles, quota probes, summaries) that must get a harmless
answer without advancing or breaking the script.
"""

from __future__ import annotations

import dataclasses
import http.server
import itertools
import json
import threading
import time
import urllib.parse
from typing import Any

# The MCP server name the harness registers whalebox under, in both clients.
SERVER = "whalebox"
# A model slug neither client has metadata for. For Codex this matters: an unknown slug gets MCP
# tools inline as a namespace; known slugs get them behind tool_search or "code mode".
MODEL = "whalebox-scripted-model"
# The count_tokens estimate: about right for English and source code.
CHARS_PER_TOKEN = 4
SIDE_TEXT = "OK"  # what side requests get
DONE_TEXT = "Done."  # what a main request past the end of the script gets


@dataclasses.dataclass
class ToolResult:
    """One tool result exactly as the client put it into a model request."""

    call_id: str
    tool: str  # whalebox's bare tool name, as scripted
    args: dict
    step: int
    is_error: bool | None  # Anthropic's tool_result.is_error; None where the API has no flag
    content: Any  # the raw `content` (Anthropic) or `output` (Responses) value, as sent
    raw: dict  # the whole block/item

    @property
    def text(self) -> str:
        """The text parts of `content`, joined with newlines (a plain string as is)."""
        return _text_of(self.content)


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "\n".join(parts)


@dataclasses.dataclass
class Request:
    method: str
    path: str
    body: Any  # parsed JSON, or the raw text if it was not JSON
    kind: str  # "main", "side", "other"
    step: int | None  # the script step answered (main requests)


class ModelServer:
    """Serve `script` on 127.0.0.1 (random port) until `close()`. Use as a context manager."""

    def __init__(self, script: list, *, model: str = MODEL, server: str = SERVER):
        self.script = list(script)
        self.model = model
        self.server_name = server
        self.requests: list[Request] = []
        self.tool_results: list[ToolResult] = []
        self.stray_hosts: list[str] = []
        self._lock = threading.RLock()  # held while answering, so steps are handed out in order
        self._ids = itertools.count(1)
        # call id -> (step, bare tool name, args); step None = a call the server added on its
        # own (Claude Code's ToolSearch to load deferred tools)
        self._calls: dict[str, tuple[int | None, str, dict]] = {}
        self._seen_results: set[str] = set()
        owner = self

        class Handler(_Handler):
            srv = owner

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> "ModelServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- script bookkeeping ---------------------------------------------------------------

    def _new_call(self, prefix: str, step: int | None, tool: str, args: dict) -> str:
        call_id = f"{prefix}{next(self._ids):04d}"
        self._calls[call_id] = (step, tool, args)
        return call_id

    def _next_step(self, result_ids: list[str]) -> int:
        """The step after the last one whose calls have results in this conversation."""
        steps = [self._calls[i][0] for i in result_ids if i in self._calls]
        steps = [s for s in steps if s is not None]
        return max(steps) + 1 if steps else 0

    def _record_results(self, results: list[tuple[str, bool | None, Any, dict]]) -> None:
        for call_id, is_error, content, raw in results:
            if call_id in self._seen_results or call_id not in self._calls:
                continue
            self._seen_results.add(call_id)
            step, tool, args = self._calls[call_id]
            if step is None:
                continue  # the server's own ToolSearch, not a scripted call
            self.tool_results.append(
                ToolResult(call_id, tool, args, step, is_error, content, raw)
            )

    def step_for(self, step: int) -> Any:
        """The step's calls or text; a callable step is given the results so far (for
        arguments only known then, such as a task id)."""
        todo = self.script[step] if step < len(self.script) else DONE_TEXT
        return todo(list(self.tool_results)) if callable(todo) else todo

    # ---- Anthropic Messages ---------------------------------------------------------------

    def anthropic(self, body: dict) -> tuple[int, list[dict], str]:
        """Answer a /v1/messages body: (step or -1, content blocks, stop_reason)."""
        tools = [t.get("name") for t in body.get("tools") or []]
        results = []
        for msg in body.get("messages") or []:
            if msg.get("role") != "user" or not isinstance(msg.get("content"), list):
                continue
            for block in msg["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    results.append(
                        (block.get("tool_use_id"), block.get("is_error"), block.get("content"), block)
                    )
        # The agent loop is the request that offers tools; titles, quota probes and the like
        # offer none (or ask for a single token).
        if not tools or (body.get("max_tokens") or 0) <= 1:
            return -1, [{"type": "text", "text": SIDE_TEXT}], "end_turn"
        self._record_results(results)
        step = self._next_step([r[0] for r in results])
        todo = self.step_for(step)
        if isinstance(todo, str):
            return step, [{"type": "text", "text": todo}], "end_turn"
        names = [f"mcp__{self.server_name}__{c['tool']}" for c in todo]
        # Without "alwaysLoad", Claude Code defers MCP tools behind its ToolSearch tool: a model
        # must search before it may call them. Do what a model would, then resume the step.
        missing = [n for n in names if n not in tools]
        if missing and "ToolSearch" in tools:
            query = "select:" + ",".join(dict.fromkeys(missing))
            call_id = self._new_call("toolu_wbsearch", None, "ToolSearch", {"query": query})
            block = {"type": "tool_use", "id": call_id, "name": "ToolSearch",
                     "input": {"query": query, "max_results": len(missing)}}
            return step, [block], "tool_use"
        blocks = []
        for name, call in zip(names, todo):
            args = call.get("args", {})
            call_id = self._new_call("toolu_wb", step, call["tool"], args)
            blocks.append({"type": "tool_use", "id": call_id, "name": name, "input": args})
        return step, blocks, "tool_use"

    # ---- OpenAI Responses (Codex) ---------------------------------------------------------

    def responses(self, body: dict) -> tuple[int, list[dict]]:
        """Answer a /v1/responses body: (step or -1, output items)."""
        results = []
        for item in body.get("input") or []:
            if isinstance(item, dict) and item.get("type") in (
                "function_call_output", "custom_tool_call_output"
            ):
                results.append((item.get("call_id"), None, item.get("output"), item))
        if not body.get("tools"):
            return -1, [_message_item(SIDE_TEXT)]
        self._record_results(results)
        step = self._next_step([r[0] for r in results])
        todo = self.step_for(step)
        if isinstance(todo, str):
            return step, [_message_item(todo)]
        namespaced = _offers_namespace(body.get("tools"), f"mcp__{self.server_name}")
        items = []
        for call in todo:
            args = call.get("args", {})
            call_id = self._new_call("call_wb", step, call["tool"], args)
            item = {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id,
                    "arguments": json.dumps(args), "status": "completed"}
            if namespaced:
                # Codex offers an unknown model's MCP tools as {"type": "namespace"}; a call
                # names the namespace and the bare tool.
                item.update(namespace=f"mcp__{self.server_name}", name=call["tool"])
            else:
                item["name"] = f"mcp__{self.server_name}__{call['tool']}"
            items.append(item)
        return step, items


def _text_chars(body: Any) -> int:
    """How many characters of text (every string value) a request body holds."""
    if isinstance(body, str):
        return len(body)
    if isinstance(body, dict):
        return sum(_text_chars(v) for v in body.values())
    if isinstance(body, list):
        return sum(_text_chars(v) for v in body)
    return 0


def _offers_namespace(tools: list, namespace: str) -> bool:
    return any(isinstance(t, dict) and t.get("type") == "namespace" and t.get("name") == namespace
               for t in tools or [])


def _message_item(text: str) -> dict:
    return {"type": "message", "id": f"msg_{time.monotonic_ns()}", "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


class _Handler(http.server.BaseHTTPRequestHandler):
    srv: ModelServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # keep pytest output clean
        pass

    # ---- proxy side -----------------------------------------------------------------------

    def do_CONNECT(self) -> None:
        self._refuse(self.path)

    def _stray(self) -> bool:
        """An absolute-URI request (plain-HTTP proxying) to another host: refuse it."""
        if not self.path.startswith(("http://", "https://")):
            return False
        url = urllib.parse.urlsplit(self.path)
        if url.hostname in ("127.0.0.1", "localhost") and url.port == self.srv.port:
            self.path = url.path + (f"?{url.query}" if url.query else "")
            return False
        self._refuse(url.netloc)
        return True

    def _refuse(self, host: str) -> None:
        with self.srv._lock:
            self.srv.stray_hosts.append(host)
        self._send(403, b"whalebox test model server: no traffic leaves 127.0.0.1\n",
                   "text/plain", close=True)

    # ---- API side -------------------------------------------------------------------------

    def do_GET(self) -> None:
        if self._stray():
            return
        path = self.path.split("?")[0]
        self._log(None, "other")
        if path.rstrip("/").endswith("/v1/models"):
            now = "2025-01-01T00:00:00Z"
            self._json(200, {"data": [{"type": "model", "id": self.srv.model,
                                       "display_name": self.srv.model, "created_at": now,
                                       "object": "model", "owned_by": "test"}],
                             "has_more": False, "first_id": self.srv.model,
                             "last_id": self.srv.model, "object": "list"})
        else:
            self._json(404, {"error": {"type": "not_found_error", "message": path}})

    def do_HEAD(self) -> None:
        if not self._stray():
            self._send(404, b"", "text/plain")

    def do_POST(self) -> None:
        if self._stray():
            return
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("Content-Encoding") == "zstd":
            # Not expected from either client; keep the raw bytes rather than fail silently.
            body: Any = raw.decode("latin-1")
        else:
            try:
                body = json.loads(raw or b"null")
            except ValueError:
                body = raw.decode("utf-8", "replace")
        path = self.path.split("?")[0]
        if path.endswith("/v1/messages/count_tokens"):
            # Claude Code asks this before passing a large MCP result on: above its limit
            # (25,000 tokens by default) it saves the result to a file and tells the model to
            # read it there. So this answer decides where it spills; count the text as a real
            # tokenizer roughly would for code and prose.
            self._log(body, "other")
            self._json(200, {"input_tokens": max(1, _text_chars(body) // CHARS_PER_TOKEN)})
        elif path.endswith("/v1/messages") and isinstance(body, dict):
            with self.srv._lock:
                step, blocks, stop = self.srv.anthropic(body)
                self._log(body, "main" if step >= 0 else "side", step if step >= 0 else None)
            if body.get("stream"):
                self._anthropic_sse(body, blocks, stop)
            else:
                self._json(200, self._anthropic_message(body, blocks, stop))
        elif path.endswith("/v1/responses") and isinstance(body, dict):
            with self.srv._lock:
                step, items = self.srv.responses(body)
                self._log(body, "main" if step >= 0 else "side", step if step >= 0 else None)
            self._responses_sse(body, items)
        else:
            self._log(body, "other")
            self._json(404, {"error": {"type": "not_found_error", "message": path}})

    def _log(self, body: Any, kind: str, step: int | None = None) -> None:
        with self.srv._lock:
            self.srv.requests.append(Request(self.command, self.path, body, kind, step))

    # ---- Anthropic wire format ------------------------------------------------------------

    def _anthropic_message(self, body: dict, blocks: list, stop: str) -> dict:
        return {"id": f"msg_wb{time.monotonic_ns()}", "type": "message", "role": "assistant",
                "model": body.get("model") or self.srv.model, "content": blocks,
                "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 10,
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}

    def _anthropic_sse(self, body: dict, blocks: list, stop: str) -> None:
        msg = self._anthropic_message(body, [], None)
        msg["usage"]["output_tokens"] = 1
        events = [("message_start", {"type": "message_start", "message": msg})]
        for i, block in enumerate(blocks):
            if block["type"] == "text":
                start = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                start = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            events += [
                ("content_block_start", {"type": "content_block_start", "index": i,
                                         "content_block": start}),
                ("content_block_delta", {"type": "content_block_delta", "index": i,
                                         "delta": delta}),
                ("content_block_stop", {"type": "content_block_stop", "index": i}),
            ]
        events += [
            ("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": 10}}),
            ("message_stop", {"type": "message_stop"}),
        ]
        self._sse(events)

    # ---- Responses wire format ------------------------------------------------------------

    def _responses_sse(self, body: dict, items: list) -> None:
        resp_id = f"resp_wb{time.monotonic_ns()}"
        base = {"id": resp_id, "object": "response", "created_at": int(time.time()),
                "model": body.get("model") or self.srv.model, "output": []}
        events = [("response.created", {"type": "response.created",
                                        "response": {**base, "status": "in_progress"}})]
        for i, item in enumerate(items):
            if item["type"] == "function_call":
                events += [
                    ("response.output_item.added", {"type": "response.output_item.added",
                                                    "output_index": i,
                                                    "item": {**item, "arguments": "",
                                                             "status": "in_progress"}}),
                    ("response.function_call_arguments.delta",
                     {"type": "response.function_call_arguments.delta", "item_id": item["id"],
                      "output_index": i, "delta": item["arguments"]}),
                    ("response.function_call_arguments.done",
                     {"type": "response.function_call_arguments.done", "item_id": item["id"],
                      "output_index": i, "arguments": item["arguments"]}),
                ]
            else:
                text = item["content"][0]["text"]
                events += [
                    ("response.output_item.added", {"type": "response.output_item.added",
                                                    "output_index": i,
                                                    "item": {**item, "content": [],
                                                             "status": "in_progress"}}),
                    ("response.output_text.delta", {"type": "response.output_text.delta",
                                                    "item_id": item["id"], "output_index": i,
                                                    "content_index": 0, "delta": text}),
                    ("response.output_text.done", {"type": "response.output_text.done",
                                                   "item_id": item["id"], "output_index": i,
                                                   "content_index": 0, "text": text}),
                ]
            events.append(("response.output_item.done", {"type": "response.output_item.done",
                                                          "output_index": i, "item": item}))
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 20}
        events.append(("response.completed", {"type": "response.completed",
                                              "response": {**base, "status": "completed",
                                                           "output": items, "usage": usage}}))
        for n, (_, data) in enumerate(events):
            data["sequence_number"] = n
        self._sse(events)

    # ---- plumbing -------------------------------------------------------------------------

    def _sse(self, events: list[tuple[str, dict]]) -> None:
        payload = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
        self._send(200, payload.encode(), "text/event-stream")

    def _json(self, code: int, obj: Any) -> None:
        self._send(code, json.dumps(obj).encode(), "application/json")

    def _send(self, code: int, payload: bytes, ctype: str, close: bool = False) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(payload)
