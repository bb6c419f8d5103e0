"""One dispatch path, proven: step() and an MCP client give the same tools, results, state and reward.

Every built-in environment's scripted trajectories (reference and wrong, every
task) run twice on fresh episodes with the same seed: once through ``step()``
(the in-process fast path) and once through the official SDK client over the
in-memory MCP transport. Together they must call every tool of the environment.
"""

from __future__ import annotations

import pytest
from mcp.client.client import Client

from openenv_mcp.client.registry import list_envs, load_environment
from openenv_mcp.core.scripts import Script
from openenv_mcp.serve.mcp_server import episode_server
from openenv_mcp.types import canonical_json

from support import env_params, need_boundaries, representative_tasks

ENVS = [spec.name for spec in list_envs() if spec.solutions]


async def _via_step(environment, seed, task_id, script):
    """Play ``script`` (fixed, or interactive: it reads each observation) through ``act``; what it
    played is ``script.played``, which the MCP side then replays."""
    episode = await environment.new_episode(seed=seed, task_id=task_id)
    try:
        tools = canonical_json([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in episode.tools])
        results, observation = [], None
        while not (episode.done or episode.truncated) and (action := script.next(observation)) is not None:
            observation = await episode.act(action)
            results.append(canonical_json(observation.result))
        return tools, results, episode.state()
    finally:
        script.close()
        await episode.close()


async def _via_mcp(environment, seed, task_id, actions):
    episode = await environment.new_episode(seed=seed, task_id=task_id)
    try:
        async with Client(episode_server(episode)) as client:
            listed = (await client.list_tools()).tools
            tools = canonical_json([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed])
            results = []
            for action in actions:
                if episode.done or episode.truncated:
                    break
                results.append(canonical_json(await client.call_tool(action.name, action.arguments)))
        return tools, results, episode.state()
    finally:
        await episode.close()


@pytest.mark.anyio
@pytest.mark.parametrize("name", env_params(ENVS))
async def test_step_and_mcp_client_agree_on_every_scripted_trajectory(name):
    spec = next(s for s in list_envs() if s.name == name)
    environment = load_environment(name, tasks=representative_tasks(spec))
    need_boundaries(environment.spec)
    called: set[str] = set()
    for seed, task in enumerate(environment.tasks.tasks):
        kinds = ["reference", "wrong"] + (["samples"] if environment.samples(task) else [])
        for kind in kinds:  # samples: the fixed calls of an env whose solutions are interactive scripts
            script = Script(environment.samples(task)) if kind == "samples" else environment.script(task, kind, seed)
            tools_a, results_a, state_a = await _via_step(environment, seed, task.id, script)
            actions = script.played
            called.update(a.name for a in actions)
            tools_b, results_b, state_b = await _via_mcp(environment, seed, task.id, actions)
            assert tools_a == tools_b, f"{name}/{task.id}: tool lists differ"
            assert results_a == results_b, f"{name}/{task.id}/{kind}: results differ"
            assert state_a.model_dump(exclude={"episode_id"}) == state_b.model_dump(exclude={"episode_id"}), (
                f"{name}/{task.id}/{kind}: final state differs: {state_a} != {state_b}"
            )
            if kind == "samples":
                continue
            expected = 1.0 if kind == "reference" else 0.0
            assert state_a.cumulative_reward == expected, f"{name}/{task.id}/{kind}: reward {state_a.cumulative_reward}"
    probe = await environment.new_episode(seed=0)
    all_tools = {t.name for t in probe.tools}
    await probe.close()
    assert all_tools <= called, f"{name}: scripted trajectories never call {sorted(all_tools - called)}"


def test_every_builtin_environment_with_tools_has_scripted_trajectories():
    names = [spec.name for spec in list_envs()]
    assert "echo" in names and "files" in names
    assert set(ENVS) == set(names)
