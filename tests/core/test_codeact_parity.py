"""CodeAct parity: a reference solution written as code ends where the tool-call version ends.

For every task of ``files``, ``sql`` and ``coding`` with a reference trajectory,
the reference runs twice on fresh episodes with the same seed: once as
``CallTool`` steps, once as ONE ``RunCode`` whose Python calls the same tools
(generated from the trajectory). The inner calls' results, the final state
(steps, reward, done) and the workspace must be the same.
"""

from __future__ import annotations

import hashlib
import os
import shutil

import pytest

from openenv_mcp.client.registry import load_environment
from openenv_mcp.isolation.codeact.coderunner import python_name
from openenv_mcp.types import RunCode, canonical_json

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None and not os.environ.get("OPENENV_MCP_REQUIRE_ALL"),
    reason="CodeAct runs code in the sandbox boundary: apt-get install bubblewrap",
)

ENVS = ["files", "sql", "coding"]


def as_code(actions) -> str:
    """One Python program making the trajectory's calls, in order, through the generated functions."""
    lines = ["from tools import *", "import tools", "out = []"]
    for action in actions:
        kwargs = ", ".join(f"{python_name(k)}={v!r}" for k, v in action.arguments.items())
        lines += [
            "try:",
            f"    out.append({python_name(action.name)}({kwargs}))",
            "except ToolError as e:",
            "    out.append(e)",
        ]
    lines.append("len(out)")
    return "\n".join(lines)


def snapshot(root) -> dict[str, str]:
    out = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, "rb") as f:
                out[os.path.relpath(path, root)] = hashlib.sha256(f.read()).hexdigest()
    return out


async def _via_steps(environment, seed, task_id, actions):
    episode = await environment.new_episode(seed=seed, task_id=task_id)
    try:
        results = []
        for action in actions:
            if episode.done or episode.truncated:
                break
            results.append(canonical_json((await episode.act(action)).result))
        return results, episode.state(), snapshot(episode.workspace.path)
    finally:
        await episode.close()


async def _via_code(environment, seed, task_id, actions):
    episode = await environment.new_episode(seed=seed, task_id=task_id)
    try:
        obs = await episode.act(RunCode(code=as_code(actions)))
        run = obs.result.structured_content
        assert run["exception"] is None, run["traceback"]
        results = [canonical_json(c["result"]) for c in run["calls"]]
        return results, episode.state(), snapshot(episode.workspace.path), obs
    finally:
        await episode.close()


@pytest.mark.anyio
@pytest.mark.parametrize("name", ENVS)
async def test_one_run_code_of_the_reference_reaches_the_tool_call_end_state_and_reward(name):
    environment = load_environment(name)
    for seed, task in enumerate(environment.tasks.tasks):
        actions = environment.trajectory(task, "reference")
        results_a, state_a, files_a = await _via_steps(environment, seed, task.id, actions)
        results_b, state_b, files_b, obs = await _via_code(environment, seed, task.id, actions)
        where = f"{name}/{task.id}"
        assert results_b[: len(results_a)] == results_a, f"{where}: inner call results differ"
        assert len(results_b) == len(results_a), f"{where}: the code made {len(results_b)} calls"
        assert state_b.model_dump(exclude={"episode_id"}) == state_a.model_dump(exclude={"episode_id"}), where
        assert state_b.cumulative_reward == 1.0, f"{where}: reward {state_b.cumulative_reward}"
        assert obs.reward == pytest.approx(state_b.cumulative_reward), f"{where}: the run's reward"
        assert obs.done and files_b == files_a, f"{where}: workspace differs"
