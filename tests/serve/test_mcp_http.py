"""Parity over the wire: every built-in environment's scripted trajectories give identical tools,
results, final state and reward through ``/mcp`` (the official client on the episode's MCP address)
and through the control plane's ``step`` (WebSocket) of a real server."""

from __future__ import annotations

import json

import pytest
from mcp.client.client import Client
from websockets.asyncio.client import connect

from openenv_mcp.client.registry import list_envs, load_environment
from openenv_mcp.serve.app import create_app
from openenv_mcp.testing import serving
from openenv_mcp.types import canonical_json

from support import env_params, need_boundaries, representative_tasks, scripted_actions

ENVS = [spec.name for spec in list_envs() if spec.solutions]

pytestmark = pytest.mark.anyio


class Trainer:
    def __init__(self, ws):
        self.ws, self.n = ws, 0

    async def ask(self, **msg):
        self.n += 1
        msg["id"] = self.n
        await self.ws.send(json.dumps(msg))
        reply = json.loads(await self.ws.recv())
        assert reply["ok"], reply
        return reply["result"]


def _tools(tools):
    return canonical_json(
        [t if isinstance(t, dict) else t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
    )


async def _via_control(trainer, seed, task_id, actions):
    created = await trainer.ask(op="create", seed=seed, task_id=task_id)
    eid = created["episode_id"]
    results, done = [], False
    for action in actions:
        if done:
            break
        obs = (await trainer.ask(op="step", episode_id=eid, action=action.model_dump(mode="json")))["observation"]
        results.append(canonical_json(obs["result"]))
        done = obs["done"] or obs["truncated"]
    state = (await trainer.ask(op="state", episode_id=eid))["state"]
    await trainer.ask(op="close", episode_id=eid)
    return _tools(created["observation"]["tools"]), results, state


async def _via_mcp(trainer, seed, task_id, actions):
    created = await trainer.ask(op="create", seed=seed, task_id=task_id)
    eid = created["episode_id"]
    results = []
    async with Client(created["mcp_url"], mode="legacy") as client:
        tools = _tools((await client.list_tools()).tools)
        for action in actions:
            state = (await trainer.ask(op="state", episode_id=eid))["state"]
            if state["done"] or state["truncated"]:
                break
            results.append(canonical_json(await client.call_tool(action.name, action.arguments)))
    state = (await trainer.ask(op="state", episode_id=eid))["state"]
    await trainer.ask(op="close", episode_id=eid)
    return tools, results, state


async def _covering_tasks(environment):
    """Tasks whose scripted trajectories together call every tool (the in-memory parity test runs all
    tasks; over the wire a covering few keep the suite fast). At least two, both kinds each."""
    chosen, called = [], set()
    for seed, task in enumerate(environment.tasks.tasks):
        played = {kind: await scripted_actions(environment, task, kind, seed) for kind in ("reference", "wrong")}
        if samples := environment.samples(task):  # the fixed calls of an env whose solutions are interactive
            played["samples"] = samples
        names = {a.name for actions in played.values() for a in actions}
        if len(chosen) < 2 or not names <= called:
            chosen.append((seed, task, played))
            called |= names
    return chosen, called


@pytest.mark.parametrize("name", env_params(ENVS))
async def test_scripted_trajectories_agree_over_mcp_and_the_control_plane(name):
    spec = next(s for s in list_envs() if s.name == name)
    environment = load_environment(name, tasks=representative_tasks(spec))
    need_boundaries(environment.spec)
    app = create_app(environment)
    async with serving(app) as url, connect(url.replace("http", "ws") + "/ws", max_size=None) as ws:
        trainer = Trainer(ws)
        chosen, called = await _covering_tasks(environment)
        all_tools = {t["name"] for t in (await trainer.ask(op="create", seed=0))["observation"]["tools"]}
        assert all_tools <= called, f"{name}: scripted trajectories never call {sorted(all_tools - called)}"
        await trainer.ask(op="close", episode_id=(await trainer.ask(op="list"))["episodes"][0])
        for seed, task, played in chosen:
            for kind, actions in played.items():
                tools_a, results_a, state_a = await _via_control(trainer, seed, task.id, actions)
                tools_b, results_b, state_b = await _via_mcp(trainer, seed, task.id, actions)
                assert tools_a == tools_b, f"{name}/{task.id}: tool lists differ"
                assert results_a == results_b, f"{name}/{task.id}/{kind}: results differ"
                del state_a["episode_id"], state_b["episode_id"]
                assert state_a == state_b, f"{name}/{task.id}/{kind}: final state differs"
                if kind != "samples":
                    expected = 1.0 if kind == "reference" else 0.0
                    assert state_a["cumulative_reward"] == expected, f"{name}/{task.id}/{kind}"
    assert len(app.state.manager) == 0
