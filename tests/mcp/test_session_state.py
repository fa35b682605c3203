"""The plan, todo and input groups through the real MCP client on both lifecycles: the
server holds the plan and the todo list per session (or in a file), shows them as
resources with live updates, and asks the person through elicitation (classic), an
input_required round (2026-07-28) or not at all, saying so."""

import asyncio
import json
import os
import subprocess

import pytest

from test_mcp import MODES, client, envelope
from test_shell import call, gated_client, gated_profile

pytestmark = pytest.mark.anyio


def profile_client(whalebox_bin, workspace, profile, mode, callback=None, handler=None):
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=whalebox_bin,
        args=["serve", "--profile", str(profile), "--workspace", str(workspace)],
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(workspace.parent), "RUST_LOG": "warn"},
    )
    return Client(params, mode=mode, read_timeout_seconds=60, elicitation_callback=callback,
                  message_handler=handler)


async def read_json(c, uri):
    result = await c.read_resource(uri)
    return json.loads(result.contents[0].text)


@pytest.mark.parametrize("mode", MODES)
async def test_plan_is_enforced_and_kept(whalebox_bin, workspace, mode):
    async with client(whalebox_bin, workspace, mode) as c:
        tools = {t.name for t in (await c.list_tools()).tools}
        assert {"update_plan", "todo_add", "todo_list", "todo_update", "todo_remove",
                "request_user_input"} <= tools
        plan = [{"step": "read the code", "status": "completed"},
                {"step": "write the fix", "status": "in_progress"},
                {"step": "run the tests", "status": "pending"}]
        env = await call(c, "update_plan", {"explanation": "found the bug", "plan": plan})
        assert env["ok"], env
        assert env["text"].startswith("found the bug\n\nPlan (1/3 done):\n[x] read the code\n[>] write the fix\n[ ] run the tests")
        assert env["data"]["plan"]["plan"] == plan
        # Refused updates leave the plan as it was.
        for bad in ([{"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}],
                    [{"step": "  ", "status": "pending"}],
                    [],
                    [{"step": "a", "status": "started"}]):
            env = await call(c, "update_plan", {"plan": bad})
            assert env["code"] == "invalid_input", env
        # A stringified plan is repaired.
        assert (await read_json(c, "whalebox://session/plan"))["plan"]["plan"] == plan
        env = await call(c, "update_plan", {"plan": json.dumps(plan[:1])})
        assert env["ok"] and env["repairs"][0]["kind"] == "stringified_array", env
        state = await read_json(c, "whalebox://session/plan")
        assert state["plan"]["plan"] == plan[:1] and "[x] read the code" in state["text"]


@pytest.mark.parametrize("mode", MODES)
async def test_todos_change_one_item_at_a_time(whalebox_bin, workspace, mode):
    async with client(whalebox_bin, workspace, mode) as c:
        a = await call(c, "todo_add", {"content": "write the parser", "priority": "high"})
        b = await call(c, "todo_add", {"content": "document it"})
        assert a["data"]["id"] == "t1" and b["data"]["id"] == "t2"
        assert [t["id"] for t in b["data"]["todos"]] == ["t1", "t2"]
        assert b["data"]["todos"][1] == {"id": "t2", "content": "document it", "status": "pending",
                                         "priority": "medium"}
        env = await call(c, "todo_update", {"id": "t1", "status": "completed"})
        assert "t1 [x] (high) write the parser" in env["text"], env["text"]
        env = await call(c, "todo_list", {"status": "pending"})
        assert [t["id"] for t in env["data"]["todos"]] == ["t2"]
        env = await call(c, "todo_update", {"id": "t7", "status": "completed"})
        assert env["code"] == "not_found" and env["data"]["ids"] == ["t1", "t2"], env
        assert "t1, t2" in env["text"]
        for bad in ({"content": "  "}, {"content": "x", "priority": "urgent"}):
            assert (await call(c, "todo_add", bad))["code"] == "invalid_input"
        assert (await call(c, "todo_update", {"id": "t2"}))["code"] == "invalid_input"
        env = await call(c, "todo_clear_completed", {})
        assert [t["id"] for t in env["data"]["todos"]] == ["t2"]
        env = await call(c, "todo_remove", {"id": "t2"})
        assert env["data"]["todos"] == [] and "empty" in env["text"]
        # Ids are never reused.
        assert (await call(c, "todo_add", {"content": "next"}))["data"]["id"] == "t3"


async def test_sessions_are_separate_unless_they_share_a_file(whalebox_bin, workspace, tmp_path):
    async with client(whalebox_bin, workspace, "legacy") as one, \
            client(whalebox_bin, workspace, "2026-07-28") as two:
        await call(one, "todo_add", {"content": "only in one"})
        assert (await call(two, "todo_list", {}))["data"]["todos"] == []
        await call(one, "update_plan", {"plan": [{"step": "one's", "status": "pending"}]})
        assert (await read_json(two, "whalebox://session/plan"))["plan"] is None

    profile = tmp_path / "todo.toml"
    # Relative to the profile's directory; inside the workspace, which the server's own
    # Landlock fence lets it write.
    profile.write_text('[todo]\nfile = "ws/.whalebox/todos.json"\n')
    todos = workspace / ".whalebox" / "todos.json"
    async with profile_client(whalebox_bin, workspace, profile, "legacy") as c:
        await call(c, "todo_add", {"content": "survive a restart"})
        await call(c, "todo_update", {"id": "t1", "status": "in_progress"})
    kept = json.loads(todos.read_text())
    assert kept["todos"][0]["content"] == "survive a restart"
    async with profile_client(whalebox_bin, workspace, profile, "2026-07-28") as c:
        env = await call(c, "todo_list", {})
        assert env["data"]["todos"][0]["status"] == "in_progress", env
        assert (await call(c, "todo_add", {"content": "after"}))["data"]["id"] == "t2"
    # A file that is not a todo list is reported, not overwritten.
    todos.write_text("not json")
    async with profile_client(whalebox_bin, workspace, profile, "legacy") as c:
        env = await call(c, "todo_add", {"content": "x"})
        assert not env["ok"] and "not a whalebox todo list" in env["text"], env
    assert todos.read_text() == "not json"


async def test_resource_updates_reach_subscribers_on_both_lifecycles(whalebox_bin, workspace, tmp_path):
    from mcp import types

    updates = []

    async def handler(message):
        if isinstance(message, types.ServerNotification) and \
                isinstance(message, types.ResourceUpdatedNotification):
            updates.append(message.params.uri)
        elif hasattr(message, "root") and isinstance(message.root, types.ResourceUpdatedNotification):
            updates.append(message.root.params.uri)
        elif isinstance(message, types.ResourceUpdatedNotification):
            updates.append(message.params.uri)

    profile = tmp_path / "p.toml"
    profile.write_text("")
    async with profile_client(whalebox_bin, workspace, profile, "legacy", handler=handler) as c:
        listed = {str(r.uri) for r in (await c.list_resources()).resources}
        assert listed == {"whalebox://session/plan", "whalebox://session/todos",
                          "whalebox://session/checkpoints"}
        await c.session.subscribe_resource("whalebox://session/todos")
        await call(c, "update_plan", {"plan": [{"step": "s", "status": "pending"}]})
        await call(c, "todo_add", {"content": "seen live"})
        for _ in range(50):
            if updates:
                break
            await asyncio.sleep(0.1)
        assert updates == ["whalebox://session/todos"], "only the subscribed URI, once per change"

    from mcp.shared.subscriptions import ResourceUpdated

    async with profile_client(whalebox_bin, workspace, profile, "2026-07-28") as c:
        async with c.listen(resource_subscriptions=["whalebox://session/plan"]) as sub:
            await call(c, "todo_add", {"content": "not subscribed"})
            await call(c, "update_plan", {"plan": [{"step": "s", "status": "in_progress"}]})
            event = await asyncio.wait_for(sub.__aiter__().__anext__(), 10)
            assert isinstance(event, ResourceUpdated) and event.uri == "whalebox://session/plan", event


QUESTIONS = {"questions": [
    {"id": "db", "header": "Database", "question": "Which database should the demo use?",
     "options": [{"label": "sqlite", "description": "a file"}, {"label": "postgres"}]},
    {"id": "features", "question": "Which features?", "multi_select": True,
     "options": [{"label": "auth"}, {"label": "search"}, {"label": "export"}]},
    {"id": "name", "question": "What should the project be called?"},
]}


@pytest.mark.parametrize("mode", MODES)
async def test_request_user_input_answered_declined_cancelled(whalebox_bin, workspace, tmp_path, mode):
    from mcp import types

    seen = []
    reply = {}

    async def on_elicit(context, params):
        seen.append(params)
        # A person takes time to read the question; a client with nobody at it does not.
        await asyncio.sleep(reply.get("delay", 0))
        return reply["result"]

    profile = tmp_path / "p.toml"
    profile.write_text("")
    async with profile_client(whalebox_bin, workspace, profile, mode, on_elicit) as c:
        reply["result"] = types.ElicitResult(action="accept", content={
            "db": "", "db_other": "mysql", "features": ["auth", "export"], "name": "demo"})
        env = await call(c, "request_user_input", QUESTIONS)
        assert env["ok"], env
        assert env["data"]["answers"] == {"db": "mysql", "features": ["auth", "export"], "name": "demo"}
        assert "Which features?\n  → auth, export" in env["text"]
        schema = seen[0].requested_schema
        props = schema["properties"]
        assert [o["const"] for o in props["db"]["oneOf"]] == ["sqlite", "postgres"]
        assert props["features"]["type"] == "array" and "db_other" in props
        assert schema["required"] == ["name"]

        reply["result"] = types.ElicitResult(action="accept", content={"answer": "pg"})
        env = await call(c, "request_user_input", {"question": "Which db?", "options": ["sqlite", "pg"]})
        assert env["data"]["answers"] == {"answer": "pg"}, env
        assert env["repairs"][0]["kind"] == "question_shorthand"

        # Stringified questions are repaired, as every array is.
        env = await call(c, "request_user_input", {"questions": json.dumps(QUESTIONS["questions"][2:])})
        assert env["ok"] and env["repairs"][0]["kind"] == "stringified_array", env

        reply["delay"] = 1.2
        reply["result"] = types.ElicitResult(action="decline")
        assert (await call(c, "request_user_input", QUESTIONS))["code"] == "declined"
        reply["result"] = types.ElicitResult(action="cancel")
        assert (await call(c, "request_user_input", QUESTIONS))["code"] == "cancelled"

        # Dismissed at once (claude -p cancels, codex exec declines): nobody answered.
        reply["delay"] = 0
        for action, said in (("decline", "declined"), ("cancel", "cancelled")):
            reply["result"] = types.ElicitResult(action=action)
            env = await call(c, "request_user_input", QUESTIONS)
            assert env["code"] == "unsupported", env
            assert env["text"].startswith(f"no one answered: the client {said} the question itself"), env
            assert "Which features?" in env["text"], "the questions, to put in the reply"

        asked = len(seen)
        for bad in ({"questions": QUESTIONS["questions"] + [{"id": "x", "question": "?"}]},
                    {"questions": [{"id": "a", "header": "a header too long", "question": "?"}]},
                    {"questions": [{"id": "a", "question": "?", "options": [{"label": "x"}, {"label": "x"}]}]},
                    {"question": "Paste your GitHub token here"},
                    {"question": "What is the database password?"}):
            env = await call(c, "request_user_input", bad)
            assert env["code"] == "invalid_input", (bad, env)
        assert len(seen) == asked, "nothing invalid reaches the person"


@pytest.mark.parametrize("mode", MODES)
async def test_request_user_input_without_a_way_to_ask(whalebox_bin, workspace, mode):
    async with client(whalebox_bin, workspace, mode) as c:
        env = await call(c, "request_user_input", {"question": "Ship it?", "options": ["yes", "no"]})
        assert env["code"] == "unsupported", env
        assert "ask the user in your reply" in env["text"] and "Ship it? (yes / no)" in env["text"]


def test_cli_without_a_terminal_says_to_ask_in_the_reply(whalebox_bin, workspace):
    out = subprocess.run([whalebox_bin, "call", "request_user_input", "--workspace", str(workspace),
                          "--args", json.dumps({"question": "Ship it?"})],
                         capture_output=True, text=True, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    env = json.loads(out.stdout)
    assert out.returncode != 0 and env["code"] == "unsupported", out.stdout
    assert "without a terminal" in env["text"]


async def test_input_required_round_and_forged_state(whalebox_bin, workspace, tmp_path):
    from mcp import types

    async def on_elicit(context, params):
        return types.ElicitResult(action="accept", content={"answer": "yes"})

    profile = tmp_path / "p.toml"
    profile.write_text("")
    args = {"question": "Ship it?", "options": ["yes", "no"]}
    async with profile_client(whalebox_bin, workspace, profile, "2026-07-28", on_elicit) as c:
        first = await c.session.call_tool("request_user_input", args, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult), first
        assert first.request_state and len(first.input_requests) == 1
        answer = {key: {"action": "accept", "content": {"answer": "no"}}
                  for key in first.input_requests}
        done = await c.session.call_tool("request_user_input", args, input_responses=answer,
                                         request_state=first.request_state, allow_input_required=True)
        assert envelope(done)["data"]["answers"] == {"answer": "no"}
        # A state altered, or moved to other arguments, is refused and nothing is answered.
        forged = first.request_state[:-4] + ("AAAA" if not first.request_state.endswith("AAAA") else "BBBB")
        for state, call_args in ((forged, args), (first.request_state, {"question": "Other?"})):
            bad = await c.session.call_tool("request_user_input", call_args, input_responses=answer,
                                            request_state=state, allow_input_required=True)
            env = envelope(bad)
            assert env["code"] == "invalid_input" and "nothing was answered" in env["text"], env
        # The high-level client drives the round itself.
        env = envelope(await c.call_tool("request_user_input", args))
        assert env["data"]["answers"] == {"answer": "yes"}


async def test_exec_approval_on_the_2026_lifecycle(whalebox_bin, workspace, tmp_path):
    from mcp import types

    asked = []

    async def on_elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": "allow_once"})

    profile = gated_profile(tmp_path, workspace)
    async with gated_client(whalebox_bin, workspace, profile, "2026-07-28", on_elicit) as c:
        env = await call(c, "shell_run", {"command": "touch via-retry && echo made"})
        assert env["ok"], env
        assert (workspace / "via-retry").exists()
        assert "made" in env["text"] and len(asked) == 1 and "touch via-retry" in asked[0]

        async def deny(context, params):
            return types.ElicitResult(action="accept", content={"decision": "deny"})

    async with gated_client(whalebox_bin, workspace, profile, "2026-07-28", deny) as c:
        env = await call(c, "shell_run", {"command": "mkdir refused-dir"})
        assert env["code"] == "denied_by_policy", env
        assert not (workspace / "refused-dir").exists()
    audit = [json.loads(l) for l in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert any(r.get("approved_by") == "the user (MCP input_required)" for r in audit), audit


async def test_an_unanswered_question_times_out(whalebox_bin, workspace, tmp_path):
    from mcp import types

    async def never(context, params):
        await asyncio.sleep(30)
        return types.ElicitResult(action="cancel")

    profile = tmp_path / "p.toml"
    profile.write_text("[input]\ntimeout_ms = 500\n")
    async with profile_client(whalebox_bin, workspace, profile, "legacy", never) as c:
        env = await call(c, "request_user_input", {"question": "Anyone there?"})
        assert env["code"] == "timeout" and "[input] timeout_ms" in env["text"], env
        # The server keeps serving.
        assert (await call(c, "todo_list", {}))["ok"]
