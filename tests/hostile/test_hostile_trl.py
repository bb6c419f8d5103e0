"""Hostile policy under TRL: what a model can reach through the tools TRL builds from an environment."""

from __future__ import annotations

import importlib.util
import inspect

import pytest

from openenv_mcp.testing import REQUIRE_ALL

MISSING = "the trl extra is not installed: pip install 'openenv-mcp[trl]'"
if importlib.util.find_spec("trl") is None:  # an optional extra; CI (OPENENV_MCP_REQUIRE_ALL=1) must have it
    if REQUIRE_ALL:
        pytest.fail(MISSING + " (OPENENV_MCP_REQUIRE_ALL=1)", pytrace=False)
    pytest.skip(MISSING, allow_module_level=True)

from openenv_mcp.integrations.trl import environment_factory


def _trl_tool_dict(instance):
    # exactly how GRPOTrainer 1.16 builds the tools a rollout may call (_generate_and_score_completions)
    return {
        name: getattr(instance, name)
        for name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }


def test_hostile_trl_model_cannot_reach_reset_reward_or_close_as_tools() -> None:
    with environment_factory("echo") as factory:
        env = factory()
        env.reset(task_id="echo-02")
        tools = _trl_tool_dict(env)
        assert set(tools) == {"echo"}  # no reset, get_reward, close, step, state or _call for the model
        # a model smuggling the receiver or extra keys gets an error it reads; nothing else happens
        assert tools["echo"](self="x", text="reinforcement learning").startswith("Error: ")
        assert tools["echo"](text="reinforcement learning", reward=1.0).startswith("Error: ")
        assert env.get_reward() == 0.0
        assert factory.state(env).step_count == 2  # both were tool calls the environment answered


def test_hostile_trl_calls_after_the_episode_ended_do_not_restart_it_or_change_the_reward() -> None:
    with environment_factory("echo", max_steps=1) as factory:
        env = factory()
        env.reset(task_id="echo-02")
        tools = _trl_tool_dict(env)
        assert tools["echo"](text="wrong") == "wrong"  # the one allowed step, truncated after it
        before = factory.state(env)
        answer = tools["echo"](text="reinforcement learning")
        assert answer.startswith("Error: episode ") and "has ended (truncated)" in answer
        after = factory.state(env)
        assert (after.episode_id, after.step_count, env.get_reward()) == (before.episode_id, 1, 0.0)
