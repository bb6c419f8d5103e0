"""The served app with real clients: the official MCP client over streamable HTTP (each protocol
generation) and stdio, episode addressing, attach, security at the edge, production mode."""

from __future__ import annotations

import json
import sys

import httpx
import pytest
from mcp import StdioServerParameters
from mcp.client.client import Client
from mcp.shared.exceptions import MCPDeprecationWarning
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from openenv_mcp.client.registry import load_environment
from openenv_mcp.serve.app import create_app
from openenv_mcp.serve.mcp_http import EPISODE_KEY_META_KEY, EPISODE_META_KEY
from openenv_mcp.testing import serving, wait_for

from support import ROOT

pytestmark = pytest.mark.anyio

MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
GENERATIONS = ["legacy", "2026-07-28"]


def echo_app(mode="sim", **options):
    return create_app(load_environment("echo", mode=mode), mode=mode, **options)


# -- the MCP face over streamable HTTP ---------------------------------------------------
@pytest.mark.parametrize("generation", GENERATIONS)
async def test_official_client_lists_and_calls_tools(generation):
    app = echo_app()
    async with serving(app) as url:
        async with Client(f"{url}/mcp", mode=generation) as client:
            assert [t.name for t in (await client.list_tools()).tools] == ["echo"]
            result = await client.call_tool("echo", {"text": "hello"})
            assert (result.is_error, result.content[0].text, result.structured_content) == (
                False,
                "hello",
                {"result": "hello"},
            )
            bad = await client.call_tool("echo", {})
            assert bad.is_error is True
            assert bad.content[0].text == "Invalid arguments for tool 'echo': 'text' is a required property"


async def test_a_2025_session_is_one_fresh_episode_closed_with_the_session():
    app = echo_app()
    manager = app.state.manager
    async with serving(app) as url:
        async with Client(f"{url}/mcp", mode="legacy") as client:
            await client.call_tool("echo", {"text": "a"})
            await client.call_tool("echo", {"text": "b"})
            assert len(manager) == 1
            (episode_id,) = manager.ids()
            assert manager.get(episode_id).state().step_count == 2
            with pytest.warns(MCPDeprecationWarning):
                await client.send_ping()
        await wait_for(lambda: len(manager) == 0)  # DELETE ended the session and its episode


async def test_stateless_requests_on_mcp_get_a_fresh_episode_each():
    app = echo_app()
    manager = app.state.manager
    async with serving(app) as url:
        async with Client(f"{url}/mcp", mode="2026-07-28") as client:
            for _ in range(3):
                assert (await client.call_tool("echo", {"text": "x"})).is_error is False
        assert len(manager) == 0
        metrics = app.state.metrics
        assert metrics.steps == {"mcp": 3}
        assert metrics.episodes_created == metrics.episodes_closed["closed"] >= 3


async def test_two_sessions_never_see_each_others_state():
    app = echo_app()
    manager = app.state.manager
    async with serving(app) as url:
        async with Client(f"{url}/mcp", mode="legacy") as a, Client(f"{url}/mcp", mode="legacy") as b:
            await a.call_tool("echo", {"text": "only in a"})
            (id_a,) = manager.ids()
            await b.call_tool("echo", {"text": "only in b"})
            (id_b,) = set(manager.ids()) - {id_a}
            assert [x.arguments["text"] for x, _ in manager.get(id_a).history] == ["only in a"]
            assert [x.arguments["text"] for x, _ in manager.get(id_b).history] == ["only in b"]
            done = await a.call_tool("echo", {"text": manager.get(id_a).task.data["phrase"]})
            assert done.is_error is False and manager.get(id_a).state().done is True
            ended = await a.call_tool("echo", {"text": "more"})
            assert ended.is_error is True
            assert ended.content[0].text == "This episode has ended; no further tool calls are accepted."
            still = await b.call_tool("echo", {"text": "more"})
            assert still.is_error is False and still.content[0].text == "more"
            assert (manager.get(id_b).state().step_count, manager.get(id_b).state().done) == (2, False)


@pytest.mark.parametrize("generation", GENERATIONS)
async def test_episode_address_and_meta_key_reach_a_control_plane_episode(generation):
    app = echo_app()
    manager = app.state.manager
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as http:
        created = (await http.post("/episodes", json={"seed": 3})).json()
        episode_id, key = created["episode_id"], created["episode_key"]
        agent_key = created["mcp_path"].split("/")[3]
        assert created["mcp_url"] == f"{url}/episodes/{episode_id}/{agent_key}/mcp" and agent_key != key
        async with Client(created["mcp_url"], mode=generation) as client:
            await client.call_tool("echo", {"text": "via address"})
        async with Client(f"{url}/mcp", mode=generation) as client:
            meta = {EPISODE_META_KEY: episode_id, EPISODE_KEY_META_KEY: agent_key}
            await client.call_tool("echo", {"text": "via meta"}, meta=meta)
            listed = await client.list_tools(meta=meta)
            assert [t.name for t in listed.tools] == ["echo"]
            with pytest.raises(Exception, match="unknown episode 'nope'"):
                await client.call_tool("echo", {"text": "x"}, meta={EPISODE_META_KEY: "nope"})
        state = (await http.get(f"/episodes/{episode_id}/state", headers={"OpenEnv-Episode-Key": key})).json()["state"]
        assert state["step_count"] == 2
        assert [a.arguments["text"] for a, _ in manager.get(episode_id).history] == ["via address", "via meta"]


async def test_attach_control_plane_episode_driven_by_the_official_client():
    """Trainer creates an episode on /ws, an MCP client drives its tools, the trainer reads the reward."""
    app = echo_app()
    async with serving(app) as url:
        async with connect(url.replace("http", "ws") + "/ws") as ws:
            await ws.send(json.dumps({"id": 1, "op": "create", "seed": 5}))
            created = json.loads(await ws.recv())
            assert created["id"] == 1 and created["ok"] is True
            result = created["result"]
            phrase = result["observation"]["task"]["data"]["phrase"]
            async with Client(result["mcp_url"], mode="legacy") as agent:
                tools = (await agent.list_tools()).tools
                assert [t.name for t in tools] == ["echo"]
                answer = await agent.call_tool("echo", {"text": phrase})
                assert answer.content[0].text == phrase
            await ws.send(json.dumps({"id": 2, "op": "state", "episode_id": result["episode_id"]}))
            state = json.loads(await ws.recv())["result"]["state"]
            assert (state["step_count"], state["cumulative_reward"], state["done"]) == (1, 1.0, True)
        # The MCP client's session ending did not close the trainer's episode; the WebSocket's did.
        await wait_for(lambda: len(app.state.manager) == 0)


async def test_stdio_face_serves_one_episode():
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "openenv_mcp.cli", "stdio", "echo", "--seed", "1"], cwd=ROOT
    )
    async with Client(params, mode="legacy") as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["echo"]
        result = await client.call_tool("echo", {"text": "over stdio"})
        assert result.content[0].text == "over stdio"


# -- safe by default ------------------------------------------------------------------------
async def test_host_and_origin_are_validated_loopback_allowed():
    app = echo_app()
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as http:
        port = url.rsplit(":", 1)[1]
        ok = await http.post(
            "/mcp",
            headers={**MCP_HEADERS, "host": f"localhost:{port}", "origin": f"http://localhost:{port}"},
            json=INIT,
        )
        assert ok.status_code == 200 and "mcp-session-id" in ok.headers
        evil = await http.post(
            "/mcp", headers={**MCP_HEADERS, "host": "evil.example.com", "origin": "http://evil.example.com"}, json=INIT
        )
        assert evil.status_code == 421
        assert evil.json()["error"]["code"] == "invalid_host"
        assert "--allowed-host" in evil.json()["error"]["message"]
        bad_origin = await http.post("/mcp", headers={**MCP_HEADERS, "origin": "http://evil.example.com"}, json=INIT)
        assert bad_origin.status_code == 403 and bad_origin.json()["error"]["code"] == "invalid_origin"
        control = await http.post("/episodes", headers={"host": "evil.example.com"}, json={})
        assert control.status_code == 421
        assert len(app.state.manager) == 0
        assert (await http.get("/health", headers={"host": "evil.example.com"})).status_code == 200


async def test_allowed_host_and_origin_options():
    app = echo_app(allowed_hosts=["env.example.com"], allowed_origins=["https://app.example.com"])
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as http:
        r = await http.post(
            "/mcp",
            headers={**MCP_HEADERS, "host": "env.example.com:8000", "origin": "https://app.example.com"},
            json=INIT,
        )
        assert r.status_code == 200
        r = await http.post("/mcp", headers={**MCP_HEADERS, "origin": "https://other.example.com"}, json=INIT)
        assert r.status_code == 403


async def test_token_required_everywhere_but_health():
    app = echo_app(token="s3cret")
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as http:
        assert (await http.get("/health")).status_code == 200
        for method, path in [("POST", "/mcp"), ("POST", "/episodes"), ("GET", "/metrics"), ("GET", "/episodes")]:
            r = await http.request(method, path, headers=MCP_HEADERS, json=INIT)
            assert r.status_code == 401, path
            assert r.json()["error"]["code"] == "unauthorized"
            assert r.headers["www-authenticate"].startswith("Bearer")
        wrong = await http.post("/episodes", headers={"authorization": "Bearer nope"}, json={})
        assert wrong.status_code == 401
        good = await http.post("/episodes", headers={"authorization": "Bearer s3cret"}, json={})
        assert good.status_code == 201
        with pytest.raises(InvalidStatus):
            async with connect(url.replace("http", "ws") + "/ws"):
                pass
        async with connect(
            url.replace("http", "ws") + "/ws", additional_headers={"authorization": "Bearer s3cret"}
        ) as ws:
            await ws.send(json.dumps({"id": 1, "op": "list"}))
            assert json.loads(await ws.recv())["ok"] is True


async def test_official_client_with_token():
    app = echo_app(token="s3cret")
    async with serving(app) as url:
        from mcp.client.streamable_http import streamable_http_client

        async with httpx.AsyncClient(headers={"authorization": "Bearer s3cret"}) as http_client:
            transport = streamable_http_client(f"{url}/mcp", http_client=http_client)
            async with Client(transport, mode="legacy") as client:
                assert (await client.call_tool("echo", {"text": "t"})).content[0].text == "t"


async def test_request_size_cap_is_a_clear_error():
    app = echo_app(max_request_bytes=2048)
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as http:
        big = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "x" * 5000}},
        }
        r = await http.post("/mcp", headers=MCP_HEADERS, json=big)
        assert r.status_code == 413
        assert r.json()["error"] == {
            "code": "request_too_large",
            "message": (
                f"request body of {len(r.request.content)} bytes exceeds the limit of 2048 bytes (--max-request-bytes)"
            ),
        }
        r = await http.post("/episodes", json={"seed": 1, "pad": "y" * 5000})
        assert r.status_code == 413

        async def chunks():
            for _ in range(5):
                yield b" " * 1000

        for path in ("/episodes", "/mcp"):
            r = await http.post(path, content=chunks(), headers=MCP_HEADERS)
            assert r.status_code == 413, path
            assert r.json()["error"] == {
                "code": "request_too_large",
                "message": "request body exceeds the limit of 2048 bytes (--max-request-bytes)",
            }
        assert (await http.post("/episodes", json={"seed": 1})).status_code == 201  # still answers
        async with connect(url.replace("http", "ws") + "/ws") as ws:
            await ws.send(json.dumps({"id": 1, "op": "list", "pad": "z" * 5000}))
            reply = json.loads(await ws.recv())
            assert reply["ok"] is False and reply["error"]["code"] == "request_too_large"


async def test_malformed_json_rpc_gets_a_clean_error_and_the_server_still_answers():
    app = echo_app()
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as http:
        for body in (b"{not json", b"[]", b'{"jsonrpc": "2.0", "id": 1}', b'{"jsonrpc": "1.0", "method": 5}'):
            r = await http.post("/mcp", headers=MCP_HEADERS, content=body)
            assert 400 <= r.status_code < 500, (body, r.status_code, r.text)
            assert r.json()["error"]["code"] < 0 or "error" in r.json()
        modern = {**MCP_HEADERS, "mcp-protocol-version": "2026-07-28"}
        r = await http.post("/mcp", headers=modern, content=b"{not json")
        assert r.status_code == 400 and r.json()["error"]["code"] == -32700
        r = await http.post("/mcp", headers=MCP_HEADERS, json=INIT)
        assert r.status_code == 200
        async with Client(f"{url}/mcp", mode="legacy") as client:
            assert (await client.call_tool("echo", {"text": "alive"})).content[0].text == "alive"


# -- production mode ------------------------------------------------------------------------
async def test_prod_mode_has_no_control_plane_and_no_reward():
    app = echo_app(mode="prod")
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as http:
        for method, path in [
            ("POST", "/episodes"),
            ("GET", "/episodes"),
            ("POST", "/episodes/x/step"),
            ("GET", "/episodes/x/state"),
            ("DELETE", "/episodes/x"),
            ("POST", "/episodes/x/reset"),
            ("POST", "/episodes/x/mcp"),
            ("GET", "/ws"),
        ]:
            assert (await http.request(method, path, json={})).status_code == 404, path
        with pytest.raises(InvalidStatus):
            async with connect(url.replace("http", "ws") + "/ws"):
                pass
        assert (await http.get("/health")).json()["mode"] == "prod"
        assert (await http.get("/metrics")).status_code == 200
        async with Client(f"{url}/mcp", mode="legacy") as client:
            result = await client.call_tool("echo", {"text": "prod"})
            assert result.content[0].text == "prod"
            (episode_id,) = app.state.manager.ids()
            episode = app.state.manager.get(episode_id)
            phrase = episode.task.data["phrase"]
            await client.call_tool("echo", {"text": phrase})
            assert (episode.state().cumulative_reward, episode.state().done) == (0.0, False)


RESOURCE_SERVER = '''
from fastmcp import FastMCP

server = FastMCP("notes")


@server.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@server.resource("notes://readme", mime_type="text/plain")
def readme() -> str:
    """The readme."""
    return "read me first"


@server.prompt
def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello, {name}!"
'''


@pytest.mark.parametrize("generation", GENERATIONS)
async def test_resources_and_prompts_of_a_tool_server_are_served(tmp_path, generation):
    (tmp_path / "openenv_test_notes_server.py").write_text(RESOURCE_SERVER)
    (tmp_path / "tasks.jsonl").write_text('{"id": "t", "prompt": "add"}\n')
    (tmp_path / "env.toml").write_text(
        '[env]\nname = "notes"\ntasks = "tasks.jsonl"\n\n'
        '[[tool_servers]]\nname = "notes"\nnamespace = ""\nobject = "openenv_test_notes_server:server"\n'
    )
    app = create_app(load_environment(str(tmp_path / "env.toml")))
    async with serving(app) as url:
        async with Client(f"{url}/mcp", mode=generation) as client:
            assert (await client.call_tool("add", {"a": 2, "b": 3})).structured_content == {"result": 5}
            resources = (await client.list_resources()).resources
            assert [str(r.uri) for r in resources] == ["openenv://episode/task", "notes://readme"]  # task first (sim)
            read = await client.read_resource("notes://readme")
            assert read.contents[0].text == "read me first"
            prompts = (await client.list_prompts()).prompts
            assert [p.name for p in prompts] == ["task", "greet"]
            got = await client.get_prompt("greet", {"name": "Ada"})
            assert got.messages[0].content.text == "Hello, Ada!"
            with pytest.raises(Exception, match="Resource not found: notes://nope"):
                await client.read_resource("notes://nope")
