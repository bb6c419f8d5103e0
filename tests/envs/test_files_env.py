"""The ``files`` environment: every task solvable (reference -> 1.0), wrong stays 0, resets restore the seed."""

from __future__ import annotations

import re

import pytest

import openenv_mcp
from openenv_mcp import CallTool
from openenv_mcp.client.registry import load_environment

from support import ROOT

ENVIRONMENT = load_environment("files")
TASKS = ENVIRONMENT.tasks.tasks


def test_the_environment_is_declared_as_documented():
    spec = ENVIRONMENT.spec
    assert spec.description and spec.max_steps == 20
    assert [(s.name, s.object) for s in spec.tool_servers] == [
        ("fs", "openenv_mcp.tool_servers.filesystem:create_server")
    ]
    assert len(TASKS) >= 20
    for task in TASKS:
        assert task.workspace == f"seeds/{task.id}" and (spec.base_dir / task.workspace).is_dir(), task.id
        assert task.data["goals"] and all(task.data["goals"]), task.id


async def _run(task, kind):
    episode = await ENVIRONMENT.new_episode(seed=0, task_id=task.id)
    try:
        rewards = []
        for action in ENVIRONMENT.trajectory(task, kind):
            if episode.done or episode.truncated:
                break
            rewards.append((await episode.act(action)).reward)
        return episode.state(), rewards
    finally:
        await episode.close()


@pytest.mark.anyio
@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
async def test_reference_solves_and_wrong_scores_zero(task):
    state, rewards = await _run(task, "reference")
    assert state.cumulative_reward == 1.0 and state.done and not state.truncated, (task.id, state)
    assert all(r >= 0 for r in rewards), rewards  # no step of the reference undoes progress
    state, rewards = await _run(task, "wrong")
    assert state.cumulative_reward == 0.0 and not state.done, (task.id, state)
    assert rewards and all(r == 0.0 for r in rewards), (task.id, rewards)  # never above 0, not even midway


@pytest.mark.anyio
async def test_partial_credit_per_goal_and_guards_zero_it():
    episode = await ENVIRONMENT.new_episode(seed=0, task_id="json-port-and-debug")
    try:
        obs = await episode.act(
            CallTool(
                name="fs_edit",
                arguments={"path": "config/app.json", "old_text": '"port": 8080', "new_text": '"port": 8081'},
            )
        )
        assert obs.reward == 0.5 and not obs.done and obs.info["goals_met"] == 1 and obs.info["goals"] == 2
        assert obs.info["unmet"] == ["goal 2: config/app.json (json_at debug)"] and "broken" not in obs.info
        obs = await episode.act(
            CallTool(
                name="fs_edit",
                arguments={"path": "config/app.json", "old_text": '"workers": 4', "new_text": '"workers": 8'},
            )
        )
        assert obs.reward == -0.5 and obs.info["guards_broken"] == 1  # a setting it had to keep changed
        assert obs.info["broken"] == ["config/app.json (json_at server.workers)"]  # which one, not its value
        assert episode.state().cumulative_reward == 0.0
    finally:
        await episode.close()


def test_reset_restores_the_seed_workspace():
    with openenv_mcp.make("files") as env:
        obs = env.reset(task_id="rename-notes", seed=1)
        original = env.step(CallTool(name="fs_read", arguments={"path": "notes.txt"})).result.content[0].text
        obs = env.step(CallTool(name="fs_delete", arguments={"path": "notes.txt"}))
        assert not obs.result.is_error
        obs = env.step(CallTool(name="fs_write", arguments={"path": "extra.txt", "content": "left over"}))
        assert env.step(CallTool(name="fs_read", arguments={"path": "notes.txt"})).result.is_error
        env.reset(task_id="rename-notes", seed=1)
        obs = env.step(CallTool(name="fs_read", arguments={"path": "notes.txt"}))
        assert not obs.result.is_error and obs.result.content[0].text == original
        listing = env.step(CallTool(name="fs_list", arguments={"path": "."})).result.content[0].text
        assert listing == "notes.txt (79 bytes)\ntodo.md (54 bytes)"
        assert env.state().step_count == 2 and env.state().cumulative_reward == 0.0


def test_two_episodes_never_share_a_workspace():
    with openenv_mcp.make("files") as a, openenv_mcp.make("files") as b:
        a.reset(task_id="rename-notes")
        b.reset(task_id="rename-notes")
        a.step(CallTool(name="fs_delete", arguments={"path": "notes.txt"}))
        assert not b.step(CallTool(name="fs_read", arguments={"path": "notes.txt"})).result.is_error


def test_the_readme_example_runs_verbatim(capsys):
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"## Python in ten lines\s+```python\n(.*?)```", readme, re.S)
    assert block, "README.md lost its 'Python in ten lines' example"
    exec(compile(block.group(1), "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "fs_list" in out and "cumulative_reward" in out
