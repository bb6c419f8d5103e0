"""The warm pool: reset swaps in a pre-started world; a new episode never sees the last one's state.

Each test sets its options where a user does: in ``make()`` (``warm_pool``, ``tasks``) or in the spec.
"""

from __future__ import annotations

import json

import pytest

import openenv_mcp
from openenv_mcp import BoundaryError, Task

from support.containment import assert_no_leak, call, hostile_env, hostile_spec, marked_processes


def _pooled(env) -> bool:
    return env.unwrapped.episode.connections[0].ctx.episode_id.startswith("warm-")


def test_reset_takes_a_warm_world_with_fresh_state_and_workspace(tmp_path):
    (tmp_path / "seed").mkdir()
    (tmp_path / "seed" / "a.txt").write_text("seed")
    env, marker = hostile_env("process", workspace="seed", base_dir=tmp_path, options={"warm_pool": 1})
    with env:
        env.reset(seed=0)
        assert not _pooled(env)  # the first episode starts cold, the pool fills behind it
        assert call(env, "counter") == ("1", False)
        assert call(env, "write_file", path="a.txt", text="changed") == ("written", False)
        assert call(env, "write_file", path="new.txt", text="x") == ("written", False)
        first = json.loads(call(env, "whoami")[0])
        assert env.run_async(env.unwrapped.environment.warm_up) is True
        assert len(marked_processes(marker)) == 2  # the episode's server and a warm spare
        for seed in (1, 2):
            env.reset(seed=seed)
            assert _pooled(env)
            assert call(env, "counter") == ("1", False)
            assert call(env, "list_dir", path=".") == ('["a.txt"]', False)
            assert call(env, "read_file", path="a.txt") == ("seed", False)
            second = json.loads(call(env, "whoami")[0])
            assert second["pid"] != first["pid"] and second["cwd"] != first["cwd"]
            call(env, "write_file", path="a.txt", text="changed again")
            assert env.run_async(env.unwrapped.environment.warm_up) is True
    assert (tmp_path / "seed" / "a.txt").read_text() == "seed"
    assert_no_leak(marker)


def test_a_task_with_its_own_workspace_starts_cold(tmp_path):
    (tmp_path / "task-seed").mkdir()
    (tmp_path / "task-seed" / "t.txt").write_text("task")
    tasks = [Task(id="t", prompt="p", workspace="task-seed")]
    env, marker = hostile_env("process", base_dir=tmp_path, options={"warm_pool": 1, "tasks": tasks})
    with env:
        env.reset(seed=0)
        assert env.run_async(env.unwrapped.environment.warm_up) is True
        env.reset(seed=1)
        assert not _pooled(env)
        assert call(env, "read_file", path="t.txt") == ("task", False)
    assert_no_leak(marker)


def test_servers_start_together_and_one_failing_stops_the_others(tmp_path):
    spec, marker = hostile_spec("process", base_dir=tmp_path)
    good = spec.tool_servers[0]
    bad = good.model_copy(update={"name": "bad", "namespace": "bad", "command": [*good.command, "--garbage-init"]})
    spec = spec.model_copy(
        update={"tool_servers": [good, bad, good.model_copy(update={"name": "h2", "namespace": "two"})]}
    )
    with openenv_mcp.make(spec) as env, pytest.raises(BoundaryError) as info:
        env.reset(seed=0)
    assert str(info.value) == (
        "tool server 'bad' wrote non-JSON-RPC output to stdout: 'Welcome to my server!' before answering initialize"
    )
    assert_no_leak(marker)  # the servers that did start were stopped
