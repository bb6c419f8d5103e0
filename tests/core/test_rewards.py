"""Command rewards from an env file: run inside the boundary, print a number or a score object."""

from __future__ import annotations

import re
import shutil

import pytest

import openenv_mcp
from openenv_mcp.testing import need

from support.containment import FIXTURE, PYTHON, world_dir

CHECK = """
import json, os, sys
here = os.getcwd()
if os.environ["OPENENV_STEP"] == "99":
    sys.exit("never")
if os.path.exists("fail.txt"):
    sys.stderr.write("the checker failed on purpose\\n")
    sys.exit(3)
if os.path.exists("garbage.txt"):
    print("not a number")
elif os.path.exists("bomb.txt"):
    print("[" * 50000)
elif os.path.exists("json.txt"):
    print(json.dumps({"score": 0.5, "done": True, "info": {"cwd": here, "task": os.environ["OPENENV_TASK_ID"]}}))
else:
    print("noise first")
    print(1 if os.path.exists("done.txt") else 0)
"""


@pytest.fixture
def folder():
    """The env folder: reachable by the servers' unprivileged uid (pytest's tmp_path is private)."""
    with world_dir() as path:
        yield path


def _write_env(tmp_path, isolation: str) -> openenv_mcp.Env:
    (tmp_path / "check.py").write_text(CHECK)
    (tmp_path / "check.py").chmod(0o644)
    tmp_path.chmod(0o755)
    (tmp_path / "env.toml").write_text(f"""
[env]
name = "wrapped-hostile"
description = "the hostile fixture, rewarded by a command"
max_steps = 10
reward = {{ command = ["{PYTHON}", "{{env_dir}}/check.py"], timeout = 20 }}
tasks = [{{ id = "make-done", prompt = "create done.txt" }}]

[[tool_servers]]
name = "h"
namespace = ""
command = ["{PYTHON}", "{FIXTURE}"]
isolation = "{isolation}"
""")
    return openenv_mcp.make(str(tmp_path / "env.toml"))


@pytest.mark.parametrize("isolation", ["process", "sandbox"])
def test_command_reward_scores_the_workspace_inside_the_boundary(folder, isolation):
    if isolation == "sandbox":
        need(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    with _write_env(folder, isolation) as env:
        obs = env.reset(seed=0)
        assert obs.info["score"] == 0.0
        obs = env.step({"type": "call_tool", "name": "write_file", "arguments": {"path": "other.txt", "text": "x"}})
        assert (obs.reward, obs.done) == (0.0, False)
        obs = env.step({"type": "call_tool", "name": "write_file", "arguments": {"path": "done.txt", "text": "x"}})
        assert (obs.reward, obs.done) == (1.0, True)
        env.reset(seed=0)
        obs = env.step({"type": "call_tool", "name": "write_file", "arguments": {"path": "json.txt", "text": "x"}})
        expected_cwd = "/workspace" if isolation == "sandbox" else str(env.unwrapped.episode.workspace.path)
        assert (obs.reward, obs.done) == (0.5, True)
        assert obs.info["cwd"] == expected_cwd and obs.info["task"] == "make-done"


def reward_error(obs) -> str:
    """The reward command's own message, from a step whose reward failed (reward 0.0, episode goes on)."""
    assert obs.reward == 0.0 and not obs.done, obs
    match = re.fullmatch(
        r"the reward function raised \w+: (.*); this step's reward is 0.0 "
        r"\(the score is unchanged\) and the episode goes on",
        obs.info["reward_error"],
        re.S,
    )
    assert match, obs.info["reward_error"]
    return match.group(1)


def test_a_failing_or_silent_reward_command_is_a_clear_error(folder):
    with _write_env(folder, "process") as env:
        env.reset(seed=0)
        obs = env.step({"type": "call_tool", "name": "write_file", "arguments": {"path": "garbage.txt", "text": "x"}})
        assert reward_error(obs) == (
            f"reward command `{PYTHON} {{env_dir}}/check.py` printed 'not a number' last, "
            'expected a number or {"score": ..., "done": ...}'
        )
        env.reset(seed=0)
        # nested too deep for the JSON parser: the same clear error
        obs = env.step({"type": "call_tool", "name": "write_file", "arguments": {"path": "bomb.txt", "text": "x"}})
        assert reward_error(obs) == (
            f"reward command `{PYTHON} {{env_dir}}/check.py` printed "
            f"'{'[' * 100}... (50000 characters)' last, "
            'expected a number or {"score": ..., "done": ...}'
        )
        env.reset(seed=0)
        obs = env.step({"type": "call_tool", "name": "write_file", "arguments": {"path": "fail.txt", "text": "x"}})
        assert reward_error(obs) == (
            f"reward command `{PYTHON} {{env_dir}}/check.py` exited with code 3; stderr: the checker failed on purpose"
        )


def test_reward_table_must_name_a_known_server(tmp_path):
    from openenv_mcp import ConfigError

    (tmp_path / "env.toml").write_text("""
[env]
name = "bad"
reward = { command = ["true"], server = "nope" }
[[tool_servers]]
name = "h"
command = ["true"]
""")
    with pytest.raises(ConfigError, match=r"^bad: reward.server 'nope' is not a tool server \(known: h\)$"):
        openenv_mcp.make(str(tmp_path / "env.toml"))
