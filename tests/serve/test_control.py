"""The control plane over a real server: WebSocket (ids, many episodes, batch) and the HTTP equivalents."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest
from websockets.asyncio.client import connect

from openenv_mcp.client.registry import load_environment
from openenv_mcp.serve.app import create_app
from openenv_mcp.testing import serving

pytestmark = pytest.mark.anyio


def echo_app(**options):
    return create_app(load_environment("echo"), **options)


def call(text):
    return {"type": "call_tool", "name": "echo", "arguments": {"text": text}}


class WS:
    """A raw WebSocket client: send a message with an id, read replies by id."""

    def __init__(self, ws):
        self.ws = ws
        self.next_id = 0

    async def ask(self, **msg):
        self.next_id += 1
        msg["id"] = self.next_id
        await self.ws.send(json.dumps(msg))
        reply = json.loads(await self.ws.recv())
        assert reply["id"] == self.next_id
        return reply


async def test_ws_drives_many_episodes_on_one_connection():
    app = echo_app()
    async with serving(app) as url, connect(url.replace("http", "ws") + "/ws") as raw:
        ws = WS(raw)
        a = (await ws.ask(op="create", seed=1))["result"]
        b = (await ws.ask(op="create", seed=2, task_id="echo-05"))["result"]
        assert a["episode_id"] != b["episode_id"]
        agent_key = a["mcp_path"].split("/")[3]
        assert a["env"] == "echo" and a["mcp_path"] == f"/episodes/{a['episode_id']}/{agent_key}/mcp"
        assert len(agent_key) >= 32 and a["episode_key"] not in (agent_key, b["episode_key"])
        assert [t["name"] for t in a["observation"]["tools"]] == ["echo"]
        assert "inputSchema" in a["observation"]["tools"][0]
        assert b["observation"]["task"]["id"] == "echo-05"
        step = await ws.ask(op="step", episode_id=a["episode_id"], action=call("hi"))
        obs = step["result"]["observation"]
        assert obs["result"]["structuredContent"] == {"result": "hi"} and obs["result"]["isError"] is False
        phrase = b["observation"]["task"]["data"]["phrase"]
        obs_b = (await ws.ask(op="step", episode_id=b["episode_id"], action=call(phrase)))["result"]["observation"]
        assert (obs_b["reward"], obs_b["done"]) == (1.0, True)
        state_a = (await ws.ask(op="state", episode_id=a["episode_id"]))["result"]["state"]
        assert (state_a["step_count"], state_a["seed"], state_a["done"]) == (1, 1, False)
        listed = (await ws.ask(op="step", episode_id=a["episode_id"], action={"type": "list_tools"}))["result"]
        assert [t["name"] for t in listed["observation"]["tools"]] == ["echo"]
        reset = (await ws.ask(op="reset", episode_id=a["episode_id"], seed=9))["result"]
        assert reset["episode_id"] == a["episode_id"]
        state_a = (await ws.ask(op="state", episode_id=a["episode_id"]))["result"]["state"]
        assert (state_a["step_count"], state_a["seed"]) == (0, 9)
        assert sorted((await ws.ask(op="list"))["result"]["episodes"]) == sorted([a["episode_id"], b["episode_id"]])
        assert (await ws.ask(op="close", episode_id=a["episode_id"]))["result"] == {"closed": True}
        assert (await ws.ask(op="close", episode_id=a["episode_id"]))["result"] == {"closed": False}
        assert app.state.manager.ids() == [b["episode_id"]]


async def test_ws_errors_are_named_and_the_connection_goes_on():
    app = echo_app()
    async with serving(app) as url, connect(url.replace("http", "ws") + "/ws") as raw:
        ws = WS(raw)
        unknown = await ws.ask(op="step", episode_id="nope", action=call("x"))
        assert unknown["ok"] is False
        assert unknown["error"] == {
            "code": "unknown_episode",
            "message": (
                "unknown episode 'nope': never created, closed, or reaped; create one first (op 'create' or POST /episodes)"
            ),
        }
        bad_op = await ws.ask(op="fly")
        assert bad_op["error"] == {
            "code": "bad_request",
            "message": "unknown op 'fly'; expected one of: create, reset, step, state, close, fork, batch, list",
        }
        created = (await ws.ask(op="create", seed=1))["result"]
        eid = created["episode_id"]
        no_action = await ws.ask(op="step", episode_id=eid)
        assert (
            no_action["error"]["code"] == "bad_request"
            and "'action' (an object) is required" in no_action["error"]["message"]
        )
        bad_action = await ws.ask(op="step", episode_id=eid, action={"type": "dance"})
        assert bad_action["error"]["code"] == "bad_request" and bad_action["error"]["message"].startswith(
            "invalid action"
        )
        bad_seed = await ws.ask(op="create", seed="seven")
        assert bad_seed["error"] == {"code": "bad_request", "message": "'seed' must be an integer or null, got 'seven'"}
        await raw.send("{not json")
        reply = json.loads(await raw.recv())
        assert reply["id"] is None and reply["ok"] is False and reply["error"]["code"] == "bad_request"
        phrase = created["observation"]["task"]["data"]["phrase"]
        assert (await ws.ask(op="step", episode_id=eid, action=call(phrase)))["result"]["observation"]["done"] is True
        ended = await ws.ask(op="step", episode_id=eid, action=call("again"))
        assert ended["error"]["code"] == "episode_ended"
        assert "has ended (done); call reset() to start a new one" in ended["error"]["message"]
        assert (await ws.ask(op="state", episode_id=eid))["ok"] is True


async def test_batch_steps_many_episodes_in_one_message():
    app = echo_app()
    async with serving(app) as url, connect(url.replace("http", "ws") + "/ws") as raw:
        ws = WS(raw)
        created = (await ws.ask(op="batch", items=[{"op": "create", "seed": s} for s in range(8)]))["result"]["results"]
        assert all(item["ok"] for item in created) and len(created) == 8
        ids = [item["result"]["episode_id"] for item in created]
        assert len(set(ids)) == 8
        items = [{"episode_id": e, "action": call(f"n{i}")} for i, e in enumerate(ids)]
        items.append({"episode_id": "nope", "action": call("x")})
        items.append({"episode_id": ids[0], "action": call("second")})  # same episode: after its first step
        reply = await ws.ask(op="batch", items=items)
        results = reply["result"]["results"]
        assert len(results) == 10
        assert [r["result"]["observation"]["result"]["content"][0]["text"] for r in results[:8]] == [
            f"n{i}" for i in range(8)
        ]
        assert results[8] == {
            "ok": False,
            "error": {
                "code": "unknown_episode",
                "message": (
                    "unknown episode 'nope': never created, closed, or reaped; create one first (op 'create' or POST /episodes)"
                ),
            },
        }
        assert results[9]["result"]["observation"]["info"]["step"] == 2
        states = (await ws.ask(op="batch", items=[{"op": "state", "episode_id": e} for e in ids]))["result"]["results"]
        assert [s["result"]["state"]["step_count"] for s in states] == [2] + [1] * 7
        nested = await ws.ask(op="batch", items=[{"op": "batch", "items": []}])
        assert nested["result"]["results"][0]["error"]["message"] == "a batch cannot contain another batch"
        assert (await ws.ask(op="batch"))["error"]["code"] == "bad_request"


async def test_ws_requests_run_concurrently_across_episodes():
    """A slow step of one episode does not hold up another episode's step on the same connection."""
    app = echo_app()
    async with serving(app) as url, connect(url.replace("http", "ws") + "/ws") as raw:
        ws = WS(raw)
        ids = [(await ws.ask(op="create", seed=s))["result"]["episode_id"] for s in range(2)]
        episode = app.state.manager.get(ids[0])
        gate = anyio.Event()
        original = episode.call_tool

        async def slow(name, arguments):
            await gate.wait()
            return await original(name, arguments)

        episode.call_tool = slow
        await raw.send(json.dumps({"id": 100, "op": "step", "episode_id": ids[0], "action": call("slow")}))
        await raw.send(json.dumps({"id": 101, "op": "step", "episode_id": ids[1], "action": call("fast")}))
        first = json.loads(await raw.recv())
        assert first["id"] == 101
        gate.set()
        second = json.loads(await raw.recv())
        assert second["id"] == 100 and second["ok"] is True


async def test_disconnecting_client_frees_its_episodes():
    app = echo_app()
    manager = app.state.manager
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as http:
        kept = (await http.post("/episodes", json={})).json()["episode_id"]
        async with connect(url.replace("http", "ws") + "/ws") as raw:
            ws = WS(raw)
            for s in range(3):
                await ws.ask(op="create", seed=s)
            assert len(manager) == 4
        with anyio.fail_after(10):
            while len(manager) != 1:
                await anyio.sleep(0.01)
        assert manager.ids() == [kept]
        assert app.state.metrics.episodes_closed == {"disconnect": 3}


async def test_http_equivalents():
    app = echo_app()
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as http:
        created = await http.post("/episodes", json={"seed": 4})
        assert created.status_code == 201
        eid = created.json()["episode_id"]
        http.headers["OpenEnv-Episode-Key"] = created.json()[
            "episode_key"
        ]  # HTTP has no connection: the key says whose
        assert (await http.get("/episodes")).json() == {"episodes": [eid]}
        step = await http.post(f"/episodes/{eid}/step", json={"action": call("over http")})
        assert step.status_code == 200
        assert step.json()["observation"]["result"]["content"][0]["text"] == "over http"
        state = await http.get(f"/episodes/{eid}/state")
        assert state.json()["state"]["step_count"] == 1 and state.json()["state"]["seed"] == 4
        reset = await http.post(f"/episodes/{eid}/reset", json={"task_id": "echo-03"})
        assert reset.status_code == 200 and reset.json()["observation"]["task"]["id"] == "echo-03"
        phrase = reset.json()["observation"]["task"]["data"]["phrase"]
        done = (await http.post(f"/episodes/{eid}/step", json={"action": call(phrase)})).json()["observation"]
        assert (done["reward"], done["done"]) == (1.0, True)
        ended = await http.post(f"/episodes/{eid}/step", json={"action": call(phrase)})
        assert ended.status_code == 409 and ended.json()["error"]["code"] == "episode_ended"
        bad = await http.post(f"/episodes/{eid}/step", content=b"{oops")
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "bad_request"
        unknown_task = await http.post("/episodes", json={"task_id": "nope"})
        assert unknown_task.status_code == 400 and unknown_task.json()["error"]["code"] == "config_error"
        assert (await http.delete(f"/episodes/{eid}")).json() == {"closed": True}
        gone = await http.get(f"/episodes/{eid}/state")
        assert gone.status_code == 404 and gone.json()["error"]["code"] == "unknown_episode"
        assert (await http.post("/episodes/nope/step", json={"action": call("x")})).status_code == 404


async def test_fork_over_ws_and_http_makes_new_episodes_with_their_own_keys():
    app = echo_app()
    async with serving(app) as url, connect(url.replace("http", "ws") + "/ws") as raw:
        ws = WS(raw)
        a = (await ws.ask(op="create", seed=1))["result"]
        await ws.ask(op="step", episode_id=a["episode_id"], action=call("before"))
        forks = (await ws.ask(op="fork", episode_id=a["episode_id"], n=2))["result"]["forks"]
        assert len(forks) == 2
        ids = {f["episode_id"] for f in forks}
        assert a["episode_id"] not in ids and len(ids) == 2
        keys = {f["episode_key"] for f in forks} | {f["mcp_path"].split("/")[3] for f in forks}
        assert len(keys) == 4 and a["episode_key"] not in keys
        for f in forks:
            state = (await ws.ask(op="state", episode_id=f["episode_id"]))["result"]["state"]
            assert (state["step_count"], state["seed"], state["task_id"]) == (1, 1, a["observation"]["task"]["id"])
        assert sorted(app.state.manager.ids()) == sorted([a["episode_id"], *ids])
        bad = await ws.ask(op="fork", episode_id=a["episode_id"], strategy="magic")
        assert bad["error"]["code"] == "config_error"
    assert app.state.manager.ids() == []  # the forks were the connection's: closed with it

    async with serving(echo_app()) as url, httpx.AsyncClient(base_url=url) as http:
        created = (await http.post("/episodes", json={"seed": 2})).json()
        eid = created["episode_id"]
        http.headers["OpenEnv-Episode-Key"] = created["episode_key"]
        forked = await http.post(f"/episodes/{eid}/fork", json={"n": 1})
        assert forked.status_code == 201
        (fork,) = forked.json()["forks"]
        key = {"OpenEnv-Episode-Key": fork["episode_key"]}
        state = await http.get(f"/episodes/{fork['episode_id']}/state", headers=key)
        assert state.json()["state"]["seed"] == 2


async def test_an_agent_key_can_never_fork():
    app = echo_app()
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as http:
        created = (await http.post("/episodes", json={"seed": 2})).json()
        eid, agent_key = created["episode_id"], created["mcp_path"].split("/")[3]
        for attempt in (
            http.post(f"/episodes/{eid}/fork", headers={"OpenEnv-Episode-Key": agent_key}),
            http.post(f"/episodes/{eid}/fork", json={"episode_key": agent_key}),
            http.post(f"/episodes/{eid}/{agent_key}/fork"),
        ):
            answer = await attempt
            assert answer.status_code in (404, 405), answer.text
        assert app.state.manager.ids() == [eid]  # no fork was made


async def test_forks_count_against_the_episode_cap():
    app = echo_app(max_episodes=2)
    async with serving(app) as url, connect(url.replace("http", "ws") + "/ws") as raw:
        ws = WS(raw)
        a = (await ws.ask(op="create"))["result"]
        full = await ws.ask(op="fork", episode_id=a["episode_id"], n=2)
        assert full["error"]["code"] == "episode_limit"
        assert app.state.manager.ids() == [a["episode_id"]]
        assert len((await ws.ask(op="fork", episode_id=a["episode_id"]))["result"]["forks"]) == 1
        assert (await ws.ask(op="create"))["error"]["code"] == "episode_limit"
