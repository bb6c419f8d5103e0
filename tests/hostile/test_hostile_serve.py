"""Hostile agents and hostile co-tenants against ``openenv-mcp serve`` (issue 10, items 6, 9, 13, 14, 16).

Each test is one attack run the way an agent (holding only its episode's MCP address) or another
trainer (holding the server's token) would run it, over the real served app: HTTP, the WebSocket
control plane, and MCP through the official SDK client. Each asserts the attack fails with a clear
result, the victim episode is untouched, the server keeps answering and no reward is forged.
"""

from __future__ import annotations

import json

import anyio
import httpx
import pytest
from fastmcp import FastMCP
from mcp.client.client import Client
from websockets.asyncio.client import connect

from openenv_mcp import EnvSpec, ToolServerSpec
from openenv_mcp.client.registry import load_environment
from openenv_mcp.core.environment import Environment
from openenv_mcp.serve.app import create_app
from openenv_mcp.serve.manager import default_max_episodes
from openenv_mcp.serve.mcp_http import EPISODE_KEY_META_KEY, EPISODE_META_KEY
from openenv_mcp.testing import running_server, serving

pytestmark = pytest.mark.anyio

TOKEN, ADMIN = "trainer-token", "admin-token"
KEY = "OpenEnv-Episode-Key"


def echo(text: str) -> dict:
    return {"type": "call_tool", "name": "echo", "arguments": {"text": text}}


def echo_env(reward=None, **spec) -> Environment:
    server = ToolServerSpec(name="echo", namespace="", object="tool_servers.echo:server")
    tasks = [{"id": "t", "prompt": "say hi", "data": {"phrase": "hi"}}]
    return Environment(EnvSpec(name="echo-x", tool_servers=[server], tasks=tasks, reward=reward, **spec))


# -- item 6: max_steps ------------------------------------------------------------------------
def io_server() -> FastMCP:
    """A tool that does I/O (it awaits), like any real tool: the window the race needs."""
    server = FastMCP("io")

    @server.tool
    async def fetch(ms: int = 5) -> str:
        await anyio.sleep(ms / 1000)
        return "fetched"

    return server


async def test_sixty_concurrent_http_steps_cannot_exceed_a_thirty_step_budget():
    spec = EnvSpec(
        name="io", tool_servers=[ToolServerSpec(name="io", namespace="", object=io_server())], reward=lambda ctx: 0.0
    )
    app = create_app(Environment(spec))
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        created = (await http.post("/episodes", json={"seed": 0, "max_steps": 30})).json()
        eid, headers = created["episode_id"], {KEY: created["episode_key"]}
        action = {"type": "call_tool", "name": "fetch", "arguments": {"ms": 20}}
        codes: list[int] = []

        async def step() -> None:
            r = await http.post(f"/episodes/{eid}/step", headers=headers, json={"action": action})
            codes.append(r.status_code)

        async with anyio.create_task_group() as tg:
            for _ in range(60):
                tg.start_soon(step)
        assert sorted(codes) == [200] * 30 + [409] * 30
        state = (await http.get(f"/episodes/{eid}/state", headers=headers)).json()["state"]
        assert (state["step_count"], state["truncated"]) == (30, True)
        assert len(app.state.manager.peek(eid).history) == 30
        assert (await http.get("/health")).status_code == 200


# -- item 9: authorization between parties ------------------------------------------------------
async def test_a_token_holder_cannot_list_step_reset_or_close_another_trainers_episode():
    app = create_app(load_environment("echo"), token=TOKEN, admin_token=ADMIN)
    async with (
        serving(app) as url,
        connect(url.replace("http", "ws") + "/ws", additional_headers={"Authorization": f"Bearer {TOKEN}"}) as victim,
    ):
        await victim.send(json.dumps({"id": 1, "op": "create", "seed": 1}))
        created = json.loads(await victim.recv())["result"]
        eid = created["episode_id"]
        async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}) as other:
            assert (await other.get("/episodes")).json() == {"episodes": []}
            unknown = {
                "code": "unknown_episode",
                "message": (
                    f"unknown episode {eid!r}: never created, closed, or reaped; create one first "
                    "(op 'create' or POST /episodes)"
                ),
            }
            step = await other.post(f"/episodes/{eid}/step", json={"action": echo("hi")})
            assert (step.status_code, step.json()["error"]) == (404, unknown)
            reset = await other.post(f"/episodes/{eid}/reset", json={"task_id": "echo-00"})
            assert (reset.status_code, reset.json()["error"]) == (404, unknown)
            assert (await other.get(f"/episodes/{eid}/state")).status_code == 404
            assert (await other.delete(f"/episodes/{eid}")).json() == {"closed": False}
            wrong_key = await other.post(f"/episodes/{eid}/step", headers={KEY: "guess"}, json={"action": echo("x")})
            assert wrong_key.status_code == 404
        async with connect(
            url.replace("http", "ws") + "/ws", additional_headers={"Authorization": f"Bearer {TOKEN}"}
        ) as thief:
            await thief.send(json.dumps({"id": 1, "op": "list"}))
            assert json.loads(await thief.recv())["result"] == {"episodes": []}
            await thief.send(
                json.dumps(
                    {
                        "id": 2,
                        "op": "batch",
                        "items": [{"episode_id": eid, "action": echo("hi")}, {"op": "close", "episode_id": eid}],
                    }
                )
            )
            results = json.loads(await thief.recv())["result"]["results"]
            assert results[0]["error"]["code"] == "unknown_episode" and results[1]["result"] == {"closed": False}
        # The victim's episode is untouched; the admin sees and drives every episode.
        await victim.send(json.dumps({"id": 2, "op": "state", "episode_id": eid}))
        state = json.loads(await victim.recv())["result"]["state"]
        assert (state["step_count"], state["seed"]) == (0, 1)
        async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {ADMIN}"}) as admin:
            assert (await admin.get("/episodes")).json() == {"episodes": [eid]}
            assert (await admin.get(f"/episodes/{eid}/state")).status_code == 200


async def test_an_agent_on_its_episode_address_cannot_act_on_another_episode_through_meta():
    app = create_app(load_environment("echo"))
    manager = app.state.manager
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as http:
        e1 = (await http.post("/episodes", json={"seed": 1})).json()
        e2 = (await http.post("/episodes", json={"seed": 2})).json()
        async with Client(e1["mcp_url"], mode="legacy") as agent:
            with pytest.raises(
                Exception,
                match="this address serves episode .* only; "
                r"_meta\['openenv/episode'\] cannot name another episode",
            ):
                await agent.call_tool("echo", {"text": "x"}, meta={EPISODE_META_KEY: e2["episode_id"]})
            agent_key = e1["mcp_path"].split("/")[3]
            with pytest.raises(Exception, match="this address serves episode"):  # its key opens no other episode
                await agent.call_tool(
                    "echo", {"text": "x"}, meta={EPISODE_META_KEY: e2["episode_id"], EPISODE_KEY_META_KEY: agent_key}
                )
            assert (await agent.call_tool("echo", {"text": "mine"})).is_error is False
        async with Client(f"{url}/mcp", mode="legacy") as stranger:
            with pytest.raises(Exception, match="unknown episode"):
                await stranger.call_tool("echo", {"text": "x"}, meta={EPISODE_META_KEY: e2["episode_id"]})
        async with Client(f"{url}/episodes/{e2['episode_id']}/mcp", mode="legacy") as keyless:
            with pytest.raises(Exception, match="unknown episode"):
                await keyless.call_tool("echo", {"text": "x"})
        assert manager.get(e2["episode_id"]).step_count == 0
        assert manager.get(e1["episode_id"]).step_count == 1


async def test_an_agent_capability_cannot_reset_close_or_read_the_trainer_view():
    app = create_app(load_environment("echo"), token=TOKEN)
    async with serving(app) as url:
        async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}) as trainer:
            created = (await trainer.post("/episodes", json={"seed": 1})).json()
        eid, agent_key = created["episode_id"], created["mcp_path"].split("/")[3]
        # The address works as handed out (no server token needed: the key is the credential)...
        async with Client(created["mcp_url"], mode="legacy") as agent:
            assert [t.name for t in (await agent.list_tools()).tools] == ["echo"]
        # ...but the agent's key opens nothing on the control plane, with or without the token.
        for auth in ({}, {"Authorization": f"Bearer {TOKEN}"}):
            async with httpx.AsyncClient(base_url=url, headers={**auth, KEY: agent_key}) as agent_http:
                reset = await agent_http.post(f"/episodes/{eid}/reset", json={"task_id": "echo-00"})
                assert reset.status_code in (401, 404)
                assert (await agent_http.get(f"/episodes/{eid}/state")).status_code in (401, 404)
                closed = await agent_http.delete(f"/episodes/{eid}")
                assert closed.status_code == 401 or closed.json() == {"closed": False}
                assert (await agent_http.get("/episodes")).status_code == 401 or (
                    await agent_http.get("/episodes")
                ).json() == {"episodes": []}
                body_key = await agent_http.post(f"/episodes/{eid}/reset", json={"episode_key": agent_key})
                assert body_key.status_code in (401, 404)
        # A made-up key is no address at all.
        refused = await httpx.AsyncClient(base_url=url).post(f"/episodes/{eid}/not-the-key/mcp", json={})
        assert refused.status_code == 401
        episode = app.state.manager.get(eid)
        assert (episode.seed, episode.step_count, episode.closed) == (1, 0, False)


async def test_grading_data_never_reaches_an_agent_facing_channel_and_the_reward_still_sees_it():
    environment = load_environment("files")
    app = create_app(environment)
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        created = (await http.post("/episodes", json={"seed": 0})).json()
        eid, headers = created["episode_id"], {KEY: created["episode_key"]}
        full = app.state.manager.get(eid).task
        assert full.data["goals"]  # what the reward reads
        secrets = [json.dumps(full.data["goals"]), json.dumps(full.data.get("keep", []))]
        seen = [json.dumps(created)]
        async with Client(created["mcp_url"], mode="legacy") as agent:
            seen.append((await agent.list_tools()).model_dump_json())
            seen.append((await agent.list_resources()).model_dump_json())
            seen.append((await agent.list_prompts()).model_dump_json())
            steps = environment.trajectory(full, "reference")
            for action in steps[:-1]:
                seen.append((await agent.call_tool(action.name, action.arguments)).model_dump_json())
        last = steps[-1]
        obs = (
            await http.post(
                f"/episodes/{eid}/step",
                headers=headers,
                json={"action": {"type": "call_tool", "name": last.name, "arguments": last.arguments}},
            )
        ).json()["observation"]
        seen.append(json.dumps(obs))
        seen.append((await http.get(f"/episodes/{eid}/state", headers=headers)).text)
        seen.append((await http.get("/")).text)
        for text in seen:
            assert '"goals": [' not in text and '"goals":[' not in text and '"keep": [' not in text
            assert not any(s in text for s in secrets if len(s) > 4)
        assert obs["task"]["data"] == {} and obs["reward"] > 0 and obs["done"] is True  # graded all the same


# -- item 13: a reward that raises ----------------------------------------------------------------
async def test_an_agent_that_makes_the_reward_raise_does_not_break_the_episode_or_the_server():
    def reward(ctx):
        for action, _ in ctx.history:
            if action.arguments.get("text", "").startswith("["):
                json.loads(action.arguments["text"])  # the agent's input, parsed by the grader
        return 1.0 if any(a.arguments.get("text") == "hi" for a, _ in ctx.history[-1:]) else 0.0

    app = create_app(echo_env(reward))
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as http:
        created = (await http.post("/episodes", json={})).json()
        eid, headers = created["episode_id"], {KEY: created["episode_key"]}
        bomb = await http.post(f"/episodes/{eid}/step", headers=headers, json={"action": echo("[" * 100000)})
        assert bomb.status_code == 200
        obs = bomb.json()["observation"]
        assert obs["reward"] == 0.0 and obs["done"] is False and obs["info"]["score"] == 0.0
        assert obs["info"]["reward_error"].startswith(
            "the reward function raised RecursionError: maximum recursion depth exceeded"
        )
        assert obs["info"]["reward_error"].endswith(
            "this step's reward is 0.0 (the score is unchanged) and the episode goes on"
        )
        # Every later step still answers (the reward keeps raising on the history: reported each time).
        for _ in range(2):
            later = await http.post(f"/episodes/{eid}/step", headers=headers, json={"action": echo("hi")})
            assert later.status_code == 200 and "reward_error" in later.json()["observation"]["info"]
        state = (await http.get(f"/episodes/{eid}/state", headers=headers)).json()["state"]
        assert (state["step_count"], state["reward_errors"], state["cumulative_reward"]) == (3, 3, 0.0)
        assert (await http.get("/health")).json()["status"] == "healthy"


# -- item 14: /metrics bounded ----------------------------------------------------------------------
async def test_unique_tool_names_do_not_grow_metrics_without_bound():
    app = create_app(load_environment("echo"))
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as http:
        created = (await http.post("/episodes", json={"seed": 1, "max_steps": 0})).json()
        eid, headers = created["episode_id"], {KEY: created["episode_key"]}
        before = len((await http.get("/metrics")).text)
        async with connect(url.replace("http", "ws") + "/ws") as ws:
            items = [
                {
                    "episode_id": eid,
                    "episode_key": created["episode_key"],
                    "action": {"type": "call_tool", "name": f"tool-{i:05d}-{'x' * 50}"},
                }
                for i in range(2000)
            ]
            await ws.send(json.dumps({"id": 1, "op": "batch", "items": items}))
            assert len(json.loads(await ws.recv())["result"]["results"]) == 2000
        phrase = created["observation"]["task"]["data"]["phrase"]
        done = await http.post(f"/episodes/{eid}/step", headers=headers, json={"action": echo(phrase)})
        assert done.json()["observation"]["done"] is True
        async with Client(created["mcp_url"], mode="legacy") as agent:
            for i in range(200):
                await agent.call_tool(f"ended-{i}-{'y' * 50}", {})
        text = (await http.get("/metrics")).text
        assert "tool-0" not in text and "ended-" not in text
        labelled = [line for line in text.splitlines() if line.startswith("openenv_mcp_tool_calls_total{")]
        assert labelled == [
            'openenv_mcp_tool_calls_total{tool="(unknown)",outcome="error"} 2200',
            'openenv_mcp_tool_calls_total{tool="echo",outcome="ok"} 1',
        ]
        assert len(text) < before + 2000


# -- item 16: abandoned creates, default cap ---------------------------------------------------------
async def test_a_create_whose_client_timed_out_leaves_no_live_episode():
    async def slow_reward(ctx):
        if ctx.action is None:  # scoring the initial state: part of every create
            await anyio.sleep(1.5)
        return 0.0

    app = create_app(echo_env(slow_reward))
    manager = app.state.manager
    async with serving(app) as url:
        async with httpx.AsyncClient(base_url=url, timeout=0.3) as impatient:
            for _ in range(5):
                with pytest.raises(httpx.ReadTimeout):
                    await impatient.post("/episodes", json={})
        async with connect(url.replace("http", "ws") + "/ws") as ws:
            await ws.send(json.dumps({"id": 1, "op": "create"}))
            await anyio.sleep(0.3)
        await anyio.sleep(2.5)  # longer than a create takes: nothing may show up late
        assert len(manager) == 0 and manager.visible(admin=True) == []
        metrics = app.state.metrics  # every episode that got created was closed again
        assert metrics.episodes_created == sum(metrics.episodes_closed.values())


def test_serve_caps_live_episodes_by_default():
    cap = default_max_episodes()
    assert cap == max(16, min(4096, 32 * default_cpus(), default_memory() // (64 << 20)))
    with running_server("echo") as url:
        with httpx.Client(base_url=url, timeout=60) as http:
            codes = [http.post("/episodes", json={}).status_code for _ in range(cap + 1)]
            assert codes == [201] * cap + [503]
            full = http.post("/episodes", json={}).json()["error"]
            assert full["code"] == "episode_limit" and f"the cap is {cap} (--max-episodes)" in full["message"]


def default_cpus() -> int:
    import os

    return len(os.sched_getaffinity(0))


def default_memory() -> int:
    import os

    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
