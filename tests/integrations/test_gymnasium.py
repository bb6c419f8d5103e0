"""Gymnasium: GymEnv passes check_env for every built-in env, registration, vector envs (local and remote)."""

from __future__ import annotations

import importlib.util
import json
import multiprocessing
import shutil
import warnings

import pytest

from openenv_mcp.testing import REQUIRE_ALL

MISSING = "the gymnasium extra is missing: pip install 'openenv-mcp[gymnasium]'"
if importlib.util.find_spec("gymnasium") is None:  # an optional extra; CI (OPENENV_MCP_REQUIRE_ALL=1) must have it
    if REQUIRE_ALL:
        pytest.fail(MISSING + " (OPENENV_MCP_REQUIRE_ALL=1)", pytrace=False)
    pytest.skip(MISSING, allow_module_level=True)

import gymnasium
import numpy as np
from gymnasium.utils.env_checker import check_env

import openenv_mcp
import openenv_mcp.gym
from openenv_mcp import CallTool
from openenv_mcp.gym import GymEnv, GymVectorEnv
from openenv_mcp.testing import need, running_server

MOVE = json.dumps({"name": "fs_move", "arguments": {"source": "notes.txt", "destination": "meeting-notes.txt"}})


@pytest.mark.parametrize("name", ["echo", "files", "sql", "coding"])
def test_check_env_passes_for_every_builtin_env(name: str) -> None:
    if name == "coding":
        need(shutil.which("bwrap") is not None, "bubblewrap (bwrap) is not installed: the coding env sandboxes tools")
    env = gymnasium.make(f"openenv_mcp/{name}-v0")
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*render fps.*")
            check_env(env.unwrapped)
    finally:
        env.close()


def test_every_registered_environment_has_a_gymnasium_id() -> None:
    ids = {spec.id for spec in gymnasium.registry.values() if spec.namespace == "openenv_mcp"}
    assert ids == {f"openenv_mcp/{s.name}-v0" for s in openenv_mcp.list_envs()}
    assert gymnasium.spec("openenv_mcp/files-v0").max_episode_steps == 20


def test_files_through_gymnasium_make_solves_a_task_with_a_json_tool_call() -> None:
    env = gymnasium.make("openenv_mcp/files-v0")
    try:
        obs, info = env.reset(seed=3, options={"task_id": "rename-notes"})
        assert obs["task"].startswith("Rename the file `notes.txt`") and obs["result"] == ""
        assert {t["name"] for t in json.loads(obs["tools"])} >= {"fs_move", "fs_read"}
        assert info == {"task_id": "rename-notes", "step": 0, "score": 0.0, "is_error": False}
        obs, reward, terminated, truncated, info = env.step("not json")
        assert obs["result"] == 'Error: the action is not a JSON tool call: expected {"name": TOOL, "arguments": {...}}'
        assert (reward, terminated, truncated, info["invalid_action"]) == (0.0, False, False, True)
        obs, reward, terminated, _, info = env.step(
            CallTool(name="fs_read", arguments={"path": "missing.txt"})
        )  # the structured action works too
        assert obs["result"].startswith("Error") and info["is_error"] is True and reward == 0.0
        obs, reward, terminated, truncated, info = env.step(MOVE)
        assert (obs["result"], reward, terminated, truncated) == (
            "Moved notes.txt -> meeting-notes.txt.",
            1.0,
            True,
            False,
        )
        assert info["step"] == 2 and info["score"] == 1.0
    finally:
        env.close()


def test_repeat_gives_groups_of_one_task_with_distinct_seeds() -> None:
    env = GymEnv("files", repeat=3)
    try:
        tasks, seeds = [], []
        for i in range(6):
            _, info = env.reset(seed=100 + i if i == 0 else None)
            tasks.append(info["task_id"])
            seeds.append(env.state().seed)
        assert tasks[0] == tasks[1] == tasks[2] and tasks[3] == tasks[4] == tasks[5]
        assert len(set(seeds)) == 6
    finally:
        env.close()


@pytest.mark.timeout(120)
def test_async_vector_env_with_shared_memory_after_the_parent_ran_a_sync_env_before_forking() -> None:
    # Regressions: a forked child reused the parent's event-loop thread, which does not survive a fork (hang);
    # Text observations in shared memory were read once and never refreshed (empty strings).
    with openenv_mcp.make("echo") as warm:
        warm.reset(seed=0)
    venv = gymnasium.vector.AsyncVectorEnv(
        [lambda: gymnasium.make("openenv_mcp/files-v0")] * 2,
        context="fork" if "fork" in multiprocessing.get_all_start_methods() else None,
    )
    try:
        obs, info = venv.reset(seed=3, options={"task_id": "rename-notes"})
        assert obs["task"][0] == obs["task"][1] and obs["task"][0].startswith("Rename the file")
        assert list(info["task_id"]) == ["rename-notes", "rename-notes"]
        obs, rewards, terminated, _, info = venv.step((MOVE, "garbage"))
        assert obs["result"] == (
            "Moved notes.txt -> meeting-notes.txt.",
            'Error: the action is not a JSON tool call: expected {"name": TOOL, "arguments": {...}}',
        )
        assert list(rewards) == [1.0, 0.0] and list(terminated) == [True, False]
        obs, rewards, *_ = venv.step(("{}", MOVE))  # NEXT_STEP autoreset: the finished one starts over
        assert obs["result"][0] == "" and rewards[1] == 1.0
    finally:
        venv.close()


def test_remote_vector_env_as_gymnasium_vector_env_with_groups() -> None:
    with running_server("files") as url:
        venv = GymVectorEnv(url, num_envs=4, repeat=2)
        try:
            assert isinstance(venv, gymnasium.vector.VectorEnv)
            obs, info = venv.reset(seed=11)
            assert info["task_id"][0] == info["task_id"][1] and info["task_id"][2] == info["task_id"][3]
            assert obs["task"][0] == obs["task"][1]
            assert obs in venv.observation_space
            obs, info = venv.reset(seed=11, options={"task_id": "rename-notes"})
            obs, rewards, terminated, truncated, info = venv.step([MOVE, "x", MOVE, '{"type": "list_tools"}'])
            assert list(rewards) == [1.0, 0.0, 1.0, 0.0] and list(terminated) == [True, False, True, False]
            assert obs["result"][1].startswith("Error: the action is not a JSON tool call")
            assert "fs_move" in obs["result"][3]
            obs, rewards, terminated, truncated, info = venv.step([MOVE] * 4)  # 0 and 2 autoreset
            assert obs["result"][0] == "" and obs["result"][2] == "" and list(rewards) == [0.0, 1.0, 0.0, 1.0]
            assert isinstance(rewards, np.ndarray)
        finally:
            venv.close()


def test_remote_vector_env_reset_takes_one_seed_per_episode() -> None:
    # Regression: a list of seeds (Gymnasium's vector convention) went on to VectorEnv.reset, which seeds
    # np_random from an int only: "Seed must be a python integer".
    expected = []
    for seed in (5, 9):
        with openenv_mcp.make("files") as env:
            expected.append(env.reset(seed=seed).task.id)
    with running_server("files") as url:
        venv = GymVectorEnv(url, num_envs=2)
        try:
            _, info = venv.reset(seed=[5, 9])
            assert list(info["task_id"]) == expected
        finally:
            venv.close()


def test_gymnasium_vector_module_imports_first() -> None:
    # Regression: gymnasium.py imported gymnasium_vector at its end and gymnasium_vector imports gymnasium,
    # so importing gymnasium_vector first failed ("partially initialized module").
    import subprocess
    import sys

    code = "import openenv_mcp.integrations.gymnasium_vector as m; print(m.GymVectorEnv.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "GymVectorEnv", out.stderr[-2000:]
