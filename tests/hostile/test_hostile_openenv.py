"""An agent holding only its episode's MCP address (the agent key) abuses OpenEnv's session forms.

OpenEnv's ``session_id`` (``/ws?session_id=``, ``openenv/session/close``, ``tools/*`` with
``params.session_id``) carries the episode's trainer key; the agent key inside ``mcp_url`` opens the
MCP face only. The agent tries to reset its episode to a task it likes, close it, and reach it or
another episode with made-up sessions: every attempt is refused as an unknown session, the
episode keeps its task, steps and score, and the server keeps answering.
"""

from __future__ import annotations

import json

import anyio
import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from openenv_mcp.client.registry import load_environment
from openenv_mcp.serve.app import create_app
from openenv_mcp.testing import serving

pytestmark = pytest.mark.anyio


def _rpc(method: str, **params) -> dict:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


async def test_an_agent_key_in_an_openenv_session_id_cannot_reset_close_or_reach_other_episodes():
    app = create_app(load_environment("echo"))
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=30) as http:
        mine = (await http.post("/episodes", json={"task_id": "echo-00"})).json()
        other = (await http.post("/episodes", json={"task_id": "echo-01"})).json()
        eid, trainer = mine["episode_id"], {"OpenEnv-Episode-Key": mine["episode_key"]}
        agent_key = mine["mcp_path"].split("/")[3]
        as_agent = f"{eid}.{agent_key}"

        # 1. attach the OpenEnv socket with the agent key, to reset to a task it likes: refused, socket closed
        async with connect(url.replace("http", "ws") + f"/ws?session_id={as_agent}") as ws:
            with anyio.fail_after(10):
                refused = json.loads(await ws.recv())
            assert refused["type"] == "error" and refused["data"]["code"] == "SESSION_ERROR"
            assert refused["data"]["message"] == (
                f"unknown episode {eid!r}: never created, closed, or reaped; "
                "create one first (op 'create' or POST /episodes)"
            )
            assert agent_key not in json.dumps(refused)
            with anyio.fail_after(10), pytest.raises(ConnectionClosed):
                await ws.send(json.dumps({"type": "reset", "data": {"task_id": "echo-03"}}))
                await ws.recv()

        # 2. close it through OpenEnv's session close: refused, still live
        closed = (await http.post("/mcp", json=_rpc("openenv/session/close", session_id=as_agent))).json()
        assert closed["error"]["code"] == -32001 and closed["error"]["data"] == {"code": "unknown_episode"}

        # 3. a bare id, another episode's id with this key, a made-up key: no tools, no calls
        for forged in (eid, f"{other['episode_id']}.{agent_key}", f"{eid}.{'A' * 32}"):
            for method, params in (("tools/list", {}), ("tools/call", {"name": "echo", "arguments": {"text": "x"}})):
                answer = (await http.post("/mcp", json=_rpc(method, session_id=forged, **params))).json()
                assert answer["error"]["data"] == {"code": "unknown_episode"}, (forged, method)

        # the agent's own key still works where it is meant to (the MCP face of its episode)
        listed = (await http.post("/mcp", json=_rpc("tools/list", session_id=as_agent))).json()
        assert [t["name"] for t in listed["result"]["tools"]] == ["echo"]

        # the episode kept its task, steps and score; the other episode was never touched; the server answers
        state = (await http.get(f"/episodes/{eid}/state", headers=trainer)).json()["state"]
        assert (state["task_id"], state["step_count"], state["cumulative_reward"]) == ("echo-00", 0, 0.0)
        other_state = (
            await http.get(
                f"/episodes/{other['episode_id']}/state", headers={"OpenEnv-Episode-Key": other["episode_key"]}
            )
        ).json()["state"]
        assert (other_state["task_id"], other_state["step_count"]) == ("echo-01", 0)
        assert len(app.state.manager) == 2
        assert (await http.get("/health")).json()["status"] == "healthy"
