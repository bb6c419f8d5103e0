"""The hostile agent against the ``files`` reward: what the agent writes through the ``fs`` tools is
graded, so a graded file shaped to crash the checker must leave the reward at its honest
value and the episode answering, never raise out of ``step()``."""

from __future__ import annotations

import openenv_mcp


def call(env, name: str, **arguments):
    return env.step({"type": "call_tool", "name": name, "arguments": arguments})


def test_a_json_bomb_in_a_graded_file_never_makes_the_reward_raise():
    with openenv_mcp.make("files") as env:
        env.reset(seed=0, task_id="json-port-and-debug")
        obs = call(env, "fs_write", path="config/app.json", content="[" * 100000)
        assert not obs.result.is_error
        assert obs.reward == 0.0 and obs.info["goals_met"] == 0
        obs = call(env, "fs_read", path="config/app.json", max_lines=1)  # the episode still answers
        assert not obs.result.is_error and env.state().cumulative_reward == 0.0
