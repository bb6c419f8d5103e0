"""A Harbor task folder as an environment: the episode is the task's container (Docker engine)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import openenv_mcp
from openenv_mcp import CallTool
from openenv_mcp.errors import EpisodeEnded

from support.harbor import BASE_DOCKERFILE, need_engine, write_harbor_task

pytestmark = [pytest.mark.docker, pytest.mark.anyio]


@pytest.fixture(autouse=True)
def _engine() -> None:
    need_engine()


def _text(obs) -> str:
    return "\n".join(getattr(c, "text", "") for c in obs.result.content)


def _labelled(episode_id: str) -> list:
    from openenv_mcp.isolation.containers.engine import list_containers

    return list_containers(episode_id)


async def _call(env, name: str, **arguments):
    return await env.step(CallTool(name=name, arguments=arguments))


async def test_a_harbor_task_runs_as_the_tasks_container_and_the_oracle_scores_1(tmp_path: Path) -> None:
    folder = write_harbor_task(tmp_path)
    env = openenv_mcp.make_async(f"harbor:{folder}")
    try:
        obs = await env.reset(seed=0)
        assert [t.name for t in obs.tools] == ["shell_run", "fs_read", "fs_write", "fs_edit", "fs_list", "submit"]
        assert obs.task.prompt.startswith("Create the file /app/hello.txt") and "submit" in obs.task.prompt
        assert "harbor" not in obs.task.data  # the folder's location is grader-only
        episode_id = (await env.state()).episode_id
        assert len(_labelled(episode_id)) == 1
        environment = openenv_mcp.client.registry.load_environment(f"harbor:{folder}")
        for action in environment.trajectory(obs.task, "reference"):
            obs = await env.step(action)
        assert obs.done and obs.reward == 1.0
        assert obs.info["verifier"]["reason"] == "graded" and obs.info["verifier"]["rewards"] == {"reward": 1.0}
        with pytest.raises(EpisodeEnded):
            await _call(env, "shell_run", command="true")
    finally:
        await env.close()
    from openenv_mcp.isolation.containers.engine import wait_removed

    assert wait_removed(60) and _labelled(episode_id) == []


async def test_the_tests_and_the_solution_are_nowhere_before_grading_and_nothing_scores_0(tmp_path: Path) -> None:
    folder = write_harbor_task(
        tmp_path, test_sh="#!/bin/sh\n# MARKER-7f3a: the tests\necho 0 > /logs/verifier/reward.txt\n"
    )
    env = openenv_mcp.make_async(f"harbor:{folder}")
    try:
        await env.reset(seed=0)
        search = await _call(
            env,
            "shell_run",
            command="ls -la / /tests /solution /logs 2>&1; find / -xdev \\( -name test.sh -o -name solve.sh \\) "
            "2>/dev/null; grep -rl MARKER-7f3a / --exclude-dir=proc --exclude-dir=sys 2>/dev/null; echo END",
            timeout=120,
        )
        out = search.result.structured_content["stdout"]
        assert out.rstrip().endswith("END")
        assert (
            "test.sh" not in out
            and "solve.sh" not in out
            and "MARKER-7f3a" not in out.replace("grep -rl MARKER-7f3a", "")
        )
        assert "cannot access '/tests'" in out and "cannot access '/solution'" in out
        read = await _call(env, "fs_read", path="/tests/test.sh")
        assert read.result.is_error and "no such file" in _text(read)
        listing = await _call(env, "fs_list", path="/", depth=1)
        assert "tests/" not in _text(listing) and "solution/" not in _text(listing)
        obs = await _call(env, "submit")
        assert obs.done and obs.reward == 0.0 and obs.info["verifier"]["reason"] == "graded"
    finally:
        await env.close()


async def test_partial_rewards_from_reward_json(tmp_path: Path) -> None:
    test_sh = '#!/bin/sh\necho \'{"reward": 0.5, "style": 1, "note": "half"}\' > /logs/verifier/reward.json\n'
    folder = write_harbor_task(tmp_path, test_sh=test_sh)
    env = openenv_mcp.make_async(f"harbor:{folder}")
    try:
        await env.reset(seed=0)
        obs = await _call(env, "submit")
        assert obs.reward == 0.5 and obs.done
        assert obs.info["verifier"]["rewards"] == {"reward": 0.5, "style": 1.0}
    finally:
        await env.close()


NO_PYTHON = BASE_DOCKERFILE + "RUN rm -rf /usr/bin/python3* /usr/lib/python3* /usr/bin/perl* && mkdir -p /app/data\n"


async def test_an_image_without_python_works_with_every_tool(tmp_path: Path) -> None:
    folder = write_harbor_task(tmp_path, dockerfile=NO_PYTHON)
    env = openenv_mcp.make_async(f"harbor:{folder}")
    try:
        await env.reset(seed=0)
        check = await _call(env, "shell_run", command="command -v python3 python perl || echo none")
        assert "none" in check.result.structured_content["stdout"]
        wrote = await _call(env, "fs_write", path="data/deep/new.txt", content="draft: Hello\n", mode="600")
        assert not wrote.result.is_error, _text(wrote)
        edited = await _call(env, "fs_edit", path="/app/data/deep/new.txt", old_text="draft: ", new_text="")
        assert not edited.result.is_error, _text(edited)
        assert _text(await _call(env, "fs_read", path="data/deep/new.txt")) == "Hello\n"
        listing = _text(await _call(env, "fs_list", path="data", depth=3))
        assert "d deep/" in listing and "f deep/new.txt (6 bytes, mode 600)" in listing
        binary = await _call(env, "fs_write", path="/app/blob.bin", content="AAEC/w==", encoding="base64")
        assert not binary.result.is_error
        assert _text(await _call(env, "fs_read", path="/app/blob.bin", encoding="base64")) == "AAEC/w=="
        assert "looks binary" in _text(await _call(env, "fs_read", path="/app/blob.bin"))
        await _call(env, "shell_run", command="printf 'Hello, world!\\n' > hello.txt && ln -s hello.txt link.txt")
        assert _text(await _call(env, "fs_read", path="link.txt")) == "Hello, world!\n"
        obs = await _call(env, "submit")
        assert obs.reward == 1.0
    finally:
        await env.close()


async def test_the_container_has_the_tasks_limits_no_network_and_fewer_privileges(tmp_path: Path) -> None:
    import docker

    folder = write_harbor_task(tmp_path)
    env = openenv_mcp.make_async(f"harbor:{folder}")
    try:
        await env.reset(seed=0)
        (container,) = _labelled((await env.state()).episode_id)
        host = docker.from_env().api.inspect_container(container.id)["HostConfig"]
        assert host["NetworkMode"] == "none" and host["Memory"] == 512 * 1024 * 1024
        assert host["MemorySwap"] == host["Memory"] and host["NanoCpus"] == 10**9 and host["PidsLimit"] == 512
        assert "no-new-privileges" in host["SecurityOpt"] and "NET_RAW" in host["CapDrop"]
        net = await _call(env, "shell_run", command="cat /proc/net/dev; hostname")
        out = net.result.structured_content["stdout"]
        assert "eth0" not in out and out.rstrip().endswith("openenv")
    finally:
        await env.close()


async def test_a_command_past_its_timeout_is_killed_and_the_episode_goes_on(tmp_path: Path) -> None:
    folder = write_harbor_task(tmp_path)
    env = openenv_mcp.make_async(f"harbor:{folder}")
    try:
        await env.reset(seed=0)
        started = time.monotonic()
        slow = await _call(env, "shell_run", command="sleep 30; echo late", timeout=1)
        assert slow.result.is_error and slow.result.structured_content["timed_out"]
        assert time.monotonic() - started < 20
        background = await _call(env, "shell_run", command="(sleep 300 &) ; echo started")
        assert background.result.structured_content["stdout"] == "started\n"
        assert not (await _call(env, "shell_run", command="pgrep -f 'sleep 300' >/dev/null || ps aux")).result.is_error
        loud = await _call(env, "shell_run", command="head -c 200000 /dev/zero | tr '\\0' x")
        assert loud.result.structured_content["truncated"] and "truncated" in loud.result.structured_content["stdout"]
        bad = await _call(env, "fs_write", path="/app/x", content="!!", encoding="base64")
        assert bad.result.is_error and "base64" in _text(bad)
    finally:
        await env.close()


async def test_the_agents_time_and_the_step_budget_end_the_episode_with_a_grade(tmp_path: Path) -> None:
    folder = write_harbor_task(tmp_path, "timed", agent_timeout=2.0)
    env = openenv_mcp.make_async(f"harbor:{folder}")
    try:
        await env.reset(seed=0)
        await _call(env, "fs_write", path="/app/hello.txt", content="Hello, world!\n")
        obs = await _call(env, "shell_run", command="sleep 10", timeout=30)
        assert obs.done and obs.reward == 1.0 and obs.info["verifier"]["reason"] == "graded"
    finally:
        await env.close()
    folder = write_harbor_task(tmp_path, "budget")
    env = openenv_mcp.make_async(f"harbor:{folder}", max_steps=2)
    try:
        await env.reset(seed=0)
        first = await _call(env, "fs_write", path="/app/hello.txt", content="Hello, world!\n")
        assert not first.done and first.reward == 0.0
        last = await _call(env, "fs_list", path="/app")
        assert last.done and last.reward == 1.0
    finally:
        await env.close()


async def test_two_episodes_never_share_a_container(tmp_path: Path) -> None:
    folder = write_harbor_task(tmp_path)
    a = openenv_mcp.make_async(f"harbor:{folder}")
    b = openenv_mcp.make_async(f"harbor:{folder}")
    try:
        await a.reset(seed=0)
        await b.reset(seed=0)
        await _call(a, "fs_write", path="/app/hello.txt", content="Hello, world!\n")
        seen = await _call(b, "fs_read", path="/app/hello.txt")
        assert seen.result.is_error
        assert (await _call(a, "submit")).reward == 1.0
        assert (await _call(b, "submit")).reward == 0.0
    finally:
        await a.close()
        await b.close()


async def test_a_broken_dockerfile_is_a_clear_error_and_nothing_is_left(tmp_path: Path) -> None:
    from openenv_mcp.errors import ImageBuildError

    folder = write_harbor_task(tmp_path, dockerfile=BASE_DOCKERFILE + "RUN echo building && exit 3\n")
    env = openenv_mcp.make_async(f"harbor:{folder}")
    try:
        with pytest.raises(ImageBuildError, match="did not build") as caught:
            await env.reset(seed=0)
        assert "building" in str(caught.value)
    finally:
        await env.close()


def test_the_sync_twin_and_the_cli_run_a_task_folder(tmp_path: Path) -> None:
    import subprocess
    import sys

    folder = write_harbor_task(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "openenv_mcp.cli", "run", f"harbor:{folder}", "--episodes", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "COLUMNS": "200"},
    )
    assert out.returncode == 0, out.stderr
    assert "hello" in out.stdout and "1.00" in out.stdout and "True" in out.stdout
    with openenv_mcp.make(f"harbor:{folder}") as env:
        env.reset(seed=0)
        assert env.step(CallTool(name="submit", arguments={})).reward == 0.0
