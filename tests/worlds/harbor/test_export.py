"""The round trip: an environment exported as Harbor task folders, loaded back, gives the same tasks
and the same rewards (its reference trajectory's, and 0 for nothing)."""

from __future__ import annotations

import filecmp
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

import openenv_mcp
from openenv_mcp import CallTool
from openenv_mcp.client.registry import load_environment
from openenv_mcp.errors import ConfigError
from openenv_mcp.worlds.harbor.export import export_harbor
from openenv_mcp.worlds.harbor.taskformat import read_task

from support.harbor import need_engine, write_harbor_task

TASKS = ["rename-notes", "json-port-and-debug"]


async def _reward(target: str, task_id: str, kind: str) -> float:
    environment = load_environment(target)
    env = openenv_mcp.make_async(target)
    try:
        obs = await env.reset(task_id=task_id)
        for action in environment.trajectory(environment.tasks.get(task_id), kind):
            obs = await env.step(action)
            if obs.done:
                break
        if kind == "nothing":
            obs = await env.step(CallTool(name="submit", arguments={}))
        return (await env.state()).cumulative_reward
    finally:
        await env.close()


def test_the_files_environment_maps_and_round_trips(tmp_path: Path) -> None:
    out = tmp_path / "files-harbor"
    report = export_harbor("files", out, TASKS)
    assert [t for t, _ in report.exported] == TASKS and report.skipped == []
    original = load_environment("files")
    for task_id in TASKS:
        definition = read_task(out / task_id)
        assert definition.instruction == original.tasks.get(task_id).prompt
        assert (out / task_id / "solution" / "solve.sh").is_file()
        assert not (out / task_id / "environment" / "workspace" / "tests").exists()
    assert "goals" in (out / TASKS[0] / "tests" / "task.json").read_text()  # grader-only data, in tests/ only
    assert "goals" not in (out / TASKS[0] / "instruction.md").read_text()
    need_engine()
    reloaded = load_environment(f"harbor:{out}")
    assert sorted(t.id for t in reloaded.tasks.tasks) == sorted(TASKS)  # a dataset lists its folders in name order

    async def main() -> None:
        for task_id in TASKS:
            want = await _reward("files", task_id, "reference")
            assert want == 1.0
            assert await _reward(f"harbor:{out}", task_id, "reference") == want
            assert await _reward(f"harbor:{out}", task_id, "wrong") == 0.0
            assert await _reward("files", task_id, "wrong") == 0.0

    anyio.run(main)


@pytest.mark.parametrize(
    ("env", "why"),
    [
        ("echo", "not a workspace server"),
        ("sql", "not a workspace server"),
        ("coding", "the reward imports"),
    ],
)
def test_what_does_not_map_is_skipped_with_the_reason(tmp_path: Path, env: str, why: str) -> None:
    report = export_harbor(env, tmp_path / env)
    assert report.exported == [] and report.skipped
    assert all(why in reason for _, reason in report.skipped), report.skipped[0]


def test_a_harbor_dataset_exports_as_itself_and_refuses_a_full_folder(tmp_path: Path) -> None:
    source = write_harbor_task(tmp_path / "set", "copy-me").parent
    report = export_harbor(f"harbor:{source}", tmp_path / "out")
    ((task_id, folder),) = report.exported
    assert task_id == "copy-me"
    cmp = filecmp.dircmp(source / "copy-me", folder)
    assert not cmp.diff_files and not cmp.left_only and not cmp.right_only
    with pytest.raises(ConfigError, match="not empty"):
        export_harbor(f"harbor:{source}", tmp_path / "out")


def test_the_export_command(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "openenv_mcp.cli",
            "export",
            "harbor",
            "files",
            "--out",
            str(tmp_path / "x"),
            "--task",
            "rename-notes",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "x" / "rename-notes" / "task.toml").is_file() and "1 exported" in out.stdout
    echo = subprocess.run(
        [sys.executable, "-m", "openenv_mcp.cli", "export", "harbor", "echo", "--out", str(tmp_path / "y")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert echo.returncode == 1 and "skipped" in echo.stdout
