"""The ``coding`` environment: scripted trajectories score 1 / 0 on every task, hidden tests stay
hidden from every tool, interpreter state is per episode, runaway code is contained.

Every test runs real episodes: the filesystem server in-process, the shell and
python servers behind the real ``sandbox`` boundary (bubblewrap), the reward
running the hidden tests in bubblewrap too.
"""

from __future__ import annotations

import json
import shutil

import anyio
import pytest

from openenv_mcp.client.registry import load_environment
from openenv_mcp.testing import need
from openenv_mcp.types import CallTool

from support import ROOT

ENV_DIR = ROOT / "envs" / "coding"
REPO = ENV_DIR.parent.parent

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def coding():
    need(
        shutil.which("bwrap") is not None,
        "bubblewrap (bwrap) is not installed: the coding env sandboxes shell and python",
    )
    return load_environment("coding")


async def act(episode, name, **arguments):
    return await episode.act(CallTool(name=name, arguments=arguments))


def test_tasks_and_hidden_tests_are_consistent():
    tasks = [json.loads(line) for line in (ENV_DIR / "tasks.jsonl").read_text().splitlines()]
    assert len(tasks) >= 15
    assert len({t["id"] for t in tasks}) == len(tasks)
    for task in tasks:
        project = ENV_DIR / task["workspace"]
        hidden = ENV_DIR / task["data"]["hidden"]
        assert (project / task["data"]["module"]).is_file(), task["id"]
        assert (project / task["data"]["visible"]).is_file(), task["id"]
        assert hidden.is_file() and not hidden.is_relative_to(project), task["id"]
        assert hidden.read_text().count("\ndef test_") == task["data"]["hidden_tests"], task["id"]
        assert not list(project.rglob("test_hidden*")), task["id"]  # never in the workspace
        split = _reward().parse_hidden(hidden)  # the expected sides stay with the reward
        assert len(split.tests) == task["data"]["hidden_tests"], task["id"]
        assert all(kind != "eval" or "==" not in code for t in split.tests for kind, code in t.steps)


def _reward():
    import importlib.util

    spec = importlib.util.spec_from_file_location("coding_reward_under_test", ENV_DIR / "reward.py")
    reward = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reward)
    return reward


def test_a_hidden_test_whose_expected_side_is_not_a_literal_is_refused(tmp_path):
    from openenv_mcp import ConfigError

    hidden = tmp_path / "test_hidden.py"
    hidden.write_text("from m import f\n\n\ndef test_a():\n    assert f(1) == f(2)\n")
    with pytest.raises(ConfigError) as info:
        _reward().parse_hidden(hidden)
    assert str(info.value) == (
        f"{hidden}: line 5: unsupported assertion 'f(1) == f(2)'; a hidden test asserts `assert ACTUAL == "
        "LITERAL`, `assert ACTUAL is True|False|None`, `assert not ACTUAL` or `assert math.isclose(ACTUAL, "
        "NUMBER)`, so that the expected side stays with the reward"
    )
    hidden.write_text("import m\nm.setup()\n")
    with pytest.raises(ConfigError, match="line 2: a hidden test file holds only imports and argument-less"):
        _reward().parse_hidden(hidden)


async def test_every_task_reference_scores_one_and_wrong_scores_zero(coding):
    for seed, task in enumerate(coding.tasks.tasks):
        for kind, expected in (("reference", 1.0), ("wrong", 0.0)):
            episode = await coding.new_episode(seed=seed, task_id=task.id)
            try:
                assert episode.score == 0.0, f"{task.id}: the seed project already passes hidden tests"
                observation = None
                for action in coding.trajectory(task, kind):
                    if episode.done:
                        break
                    observation = await episode.act(action)
                    if action.name.startswith("fs_") or kind == "reference":  # wrong code may fail its tests
                        assert not observation.result.is_error, (task.id, kind, action, observation.result)
                state = episode.state()
                assert state.cumulative_reward == expected, (task.id, kind, observation.info)
                assert state.done is (expected == 1.0)
                assert observation.info["hidden_tests"] == task.data["hidden_tests"]
            finally:
                await episode.close()


async def test_hidden_tests_cannot_be_read_through_any_tool(coding):
    task = coding.tasks.tasks[0]
    hidden = ENV_DIR / task.data["hidden"]
    assert hidden.read_text().startswith("from ")  # it exists on the host
    episode = await coding.new_episode(seed=0, task_id=task.id)
    try:
        with anyio.fail_after(60):
            obs = await act(episode, "shell_run", command=f"cat {hidden}")
            out = obs.result.structured_content
            assert out["exit_code"] == 1 and out["stdout"] == ""
            assert out["stderr"].endswith("No such file or directory\n")
            obs = await act(episode, "shell_run", command=f"ls -A {ENV_DIR}; ls {ENV_DIR / 'hidden'}")
            assert obs.result.structured_content["stdout"] == ""  # the env folder is not there
            obs = await act(
                episode,
                "shell_run",
                command=f"grep -r 'def test_' {REPO}/envs/coding {REPO}/.git 2>/dev/null | head -n 3",
            )
            assert obs.result.structured_content["stdout"] == ""
            obs = await act(episode, "shell_run", command=f"git -C {REPO} log --oneline -1")
            assert obs.result.structured_content["exit_code"] != 0
            obs = await act(episode, "python_run", code=f"open({str(hidden)!r}).read()")
            assert obs.result.structured_content["error"].splitlines()[-1].startswith("FileNotFoundError")
            obs = await act(episode, "python_run", code=f"import os\nos.path.exists({str(ENV_DIR)!r})")
            assert obs.result.structured_content["result"] == "False"  # the env folder is not bound at all
            obs = await act(episode, "fs_read", path=str(hidden))
            assert obs.result.is_error and "outside the workspace" in obs.result.content[0].text
            obs = await act(episode, "fs_read", path="../" * 12 + str(hidden).lstrip("/"))
            assert obs.result.is_error and "outside the workspace" in obs.result.content[0].text
            # a link made in the shell does not lead the filesystem tool out either
            await act(episode, "shell_run", command=f"ln -s {hidden} peek.py")
            obs = await act(episode, "fs_read", path="peek.py")
            assert obs.result.is_error and "outside the workspace" in obs.result.content[0].text
        assert episode.score == 0.0
    finally:
        await episode.close()


async def test_tools_share_the_workspace_and_python_state_is_per_episode(coding):
    task = coding.tasks.tasks[1]
    first = await coding.new_episode(seed=1, task_id=task.id)
    second = await coding.new_episode(seed=1, task_id=task.id)
    try:
        with anyio.fail_after(60):
            await act(first, "fs_write", path="note.txt", content="from fs\n")
            obs = await act(first, "shell_run", command="cat note.txt && echo from shell >> note.txt")
            assert obs.result.structured_content["stdout"] == "from fs\n"
            obs = await act(first, "python_run", code="secret = open('note.txt').read()\nsecret")
            assert obs.result.structured_content["result"] == repr("from fs\nfrom shell\n")
            obs = await act(first, "python_run", code="secret.upper()")
            assert obs.result.structured_content["result"] == repr("FROM FS\nFROM SHELL\n")
            obs = await act(second, "python_run", code="'secret' in dir()")
            assert obs.result.structured_content["result"] == "False"
            obs = await act(second, "shell_run", command="ls note.txt")
            assert obs.result.structured_content["exit_code"] == 2  # a separate workspace
    finally:
        await first.close()
        await second.close()
    third = await coding.new_episode(seed=1, task_id=task.id)  # a new episode starts clean
    try:
        obs = await act(third, "python_run", code="'secret' in dir()")
        assert obs.result.structured_content["result"] == "False"
    finally:
        await third.close()


async def test_files_the_fs_tools_create_belong_to_the_sandboxed_servers_uid(coding):
    """fs runs behind the same sandbox as python: what fs_write / fs_move create, python_run can change."""
    episode = await coding.new_episode(seed=0, task_id=coding.tasks.tasks[0].id)
    try:
        with anyio.fail_after(60):
            assert not (await act(episode, "fs_write", path="new/deep/file.py", content="print(1)\n")).result.is_error
            assert not (await act(episode, "fs_move", source="new/deep", destination="moved/deep")).result.is_error
            obs = await act(
                episode,
                "python_run",
                code=(
                    "import os\nopen('moved/deep/file.py', 'a').write('print(2)\\n')\n"
                    "os.rename('moved', 'renamed')\nsorted({os.stat(p).st_uid == os.getuid() "
                    "for p in ('new', 'renamed', 'renamed/deep', 'renamed/deep/file.py')})"
                ),
            )
            assert obs.result.structured_content["result"] == "[True]", obs.result
            obs = await act(episode, "fs_read", path="renamed/deep/file.py")
            assert obs.result.content[0].text == "print(1)\nprint(2)\n"
            obs = await act(episode, "fs_write", path="../outside.txt", content="x")
            assert obs.result.is_error and obs.result.content[0].text.startswith(
                "Access denied: path '../outside.txt' is outside the workspace"
            )
    finally:
        await episode.close()


async def test_runaway_code_is_contained_and_the_episode_goes_on(coding):
    task = coding.tasks.tasks[2]
    episode = await coding.new_episode(seed=2, task_id=task.id)
    try:
        with anyio.fail_after(90):
            await act(episode, "python_run", code="kept = 1")
            obs = await act(episode, "python_run", code="while True:\n    pass", timeout=1)
            assert obs.result.is_error and obs.result.structured_content["timed_out"] is True
            obs = await act(episode, "python_run", code="blob = bytearray(8 * 1024 ** 3)")
            assert obs.result.structured_content["error"].endswith("MemoryError\n")
            obs = await act(episode, "python_run", code="kept")
            assert obs.result.structured_content["result"] == "1"
            obs = await act(episode, "shell_run", command="sleep 60", timeout=1)
            assert obs.result.is_error and obs.result.structured_content["timed_out"] is True
            obs = await act(
                episode,
                "shell_run",
                command="(exec 3<>/dev/tcp/1.1.1.1/80) 2>/dev/null && echo connected || echo no network",
            )
            assert obs.result.structured_content["stdout"].endswith("no network\n")
            obs = await act(episode, "shell_run", command="echo still here")
            assert obs.result.structured_content["stdout"] == "still here\n"
    finally:
        await episode.close()


async def test_a_broken_project_scores_zero_with_the_reason(coding):
    task = coding.tasks.tasks[3]
    episode = await coding.new_episode(seed=3, task_id=task.id)
    try:
        obs = await act(episode, "fs_write", path=task.data["module"], content="def broken(:\n")
        assert obs.reward == 0.0 and episode.score == 0.0
        assert obs.info["hidden_passed"] == 0
        assert obs.info["hidden_error"].startswith("importing the tests failed: SyntaxError")
    finally:
        await episode.close()


async def test_special_files_in_the_workspace_never_block_the_reward(coding):
    task = coding.tasks.tasks[4]
    episode = await coding.new_episode(seed=4, task_id=task.id)
    try:
        with anyio.fail_after(60):
            obs = await act(
                episode,
                "shell_run",
                command="mkfifo pipe && python -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"sock\")' && ls",
            )
            assert obs.result.structured_content["stdout"].split() == [
                "README.md",
                "pipe",
                "pyproject.toml",
                "sock",
                "tests",
                "wordstats",
            ]
            path, old, new = coding.trajectory(task, "reference")[-1].arguments.values()
            obs = await act(episode, "fs_edit", path=path, old_text=old, new_text=new)
            assert obs.reward == 1.0 and episode.done
    finally:
        await episode.close()


async def test_the_reward_ignores_caches_and_scores_partial_fixes(coding, tmp_path):
    reward = _reward()
    task = next(t for t in coding.tasks.tasks if t.id == "roman-subtractive")
    ws = tmp_path / "ws"
    shutil.copytree(ENV_DIR / task.workspace, ws)
    before = reward.fingerprint(ws)
    (ws / "numerals" / "__pycache__").mkdir()
    (ws / "numerals" / "__pycache__" / "roman.cpython-311.pyc").write_bytes(b"junk")
    assert reward.fingerprint(ws) == before
    module = ws / task.data["module"]
    # only IV and IX: two of the four hidden tests (4, 9) pass, 40 and 1994 still fail
    module.write_text(module.read_text().replace('(5, "V"), (1, "I")', '(9, "IX"), (5, "V"), (4, "IV"), (1, "I")'))
    passed, info = await reward.evaluate(task.data, ws, task.id)
    assert (passed, info["hidden_tests"]) == (2, 4)


async def test_fresh_episodes_checking_the_same_files_at_once_run_the_hidden_tests_once(coding, tmp_path):
    """64 fresh episodes of a GRPO group start on the same task: their first scores are one sandboxed run."""
    need(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    reward = _reward()
    task = next(t for t in coding.tasks.tasks if t.id == "roman-subtractive")
    runs = []
    run_hidden = reward.run_hidden

    async def counted(*args, **kwargs):
        runs.append(args[0])
        return await run_hidden(*args, **kwargs)

    reward.run_hidden = counted
    workspaces = []
    for i in range(4):
        ws = tmp_path / f"ws{i}"
        shutil.copytree(ENV_DIR / task.workspace, ws)
        workspaces.append(ws)
    results = [None] * 4

    async def one(i):
        results[i] = await reward.evaluate(task.data, workspaces[i], task.id)

    async with anyio.create_task_group() as tg:
        for i in range(4):
            tg.start_soon(one, i)
    assert len(runs) == 1, runs
    assert len({json.dumps(r, sort_keys=True) for r in results}) == 1 and results[0][1]["hidden_tests"] == 4
    (workspaces[1] / task.data["module"]).write_text("raise SystemExit(3)\n")  # other files: a check of their own
    passed, info = await reward.evaluate(task.data, workspaces[1], task.id)
    assert len(runs) == 2 and passed == 0, info
