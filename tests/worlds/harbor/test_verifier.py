"""Grading as Harbor does, and safer: every attack a policy would try on the verifier scores 0, and
says why (Docker engine)."""

from __future__ import annotations

from pathlib import Path

import pytest

import openenv_mcp
from openenv_mcp import CallTool
from openenv_mcp.client.registry import load_environment

from support.harbor import BASE_DOCKERFILE, SOLVE_HELLO, need_engine, write_harbor_task

pytestmark = [pytest.mark.docker, pytest.mark.anyio]


@pytest.fixture(autouse=True)
def _engine() -> None:
    need_engine()


async def _play(target: str, actions: list[CallTool]):
    env = openenv_mcp.make_async(target)
    try:
        await env.reset(seed=0)
        obs = None
        for action in actions:
            obs = await env.step(action)
            if obs.done or obs.truncated:
                break
        return obs
    finally:
        await env.close()


def _probe(folder: Path, name: str) -> list[CallTool]:
    environment = load_environment(f"harbor:{folder}")
    return environment.probes(environment.tasks.tasks[0])[name].actions()


SOLVE = CallTool(name="shell_run", arguments={"command": SOLVE_HELLO.split("\n", 1)[1]})
SUBMIT = CallTool(name="submit", arguments={})


@pytest.fixture(scope="module")
def hello(tmp_path_factory) -> Path:
    return write_harbor_task(tmp_path_factory.mktemp("harbor"))


@pytest.mark.parametrize(
    ("probe", "finding"),
    [
        ("reward-file", "added /logs/verifier"),
        ("fake-tooling", "added /usr/local/bin/pytest"),
        ("shell-startup", "changed /etc/bash.bashrc"),
        ("pytest-config", "added /conftest.py"),
    ],
)
async def test_tampering_with_the_verifiers_tooling_scores_0(hello: Path, probe: str, finding: str) -> None:
    obs = await _play(f"harbor:{hello}", [SOLVE, *_probe(hello, probe)])
    assert obs.done and obs.reward == 0.0  # even with the task solved
    verdict = obs.info["verifier"]
    assert verdict["reason"] == "tampered" and any(f.startswith(finding) for f in verdict["tampered"]), verdict


async def test_a_reward_file_written_in_advance_scores_0_even_when_tampering_is_only_reported(tmp_path: Path) -> None:
    write_harbor_task(tmp_path / "set")
    env_file = tmp_path / "env.toml"
    env_file.write_text(
        '[env]\nname = "reported"\nreward = "openenv_mcp.worlds.harbor.reward:score"\n'
        'solutions = "openenv_mcp.worlds.harbor.oracle"\n[tasks]\nharbor = { path = "set", tamper = "report" }\n'
        '[[tool_servers]]\nname = "terminal"\nnamespace = ""\nobject = "openenv_mcp.worlds.harbor.tools:create_server"\n'
    )
    obs = await _play(str(env_file), _probe(tmp_path / "set" / "hello", "reward-file"))
    assert obs.reward == 0.0 and "existed before the tests ran" in obs.info["verifier"]["reason"]
    assert obs.info["verifier"]["tampered"]  # reported
    solved = await _play(
        str(env_file),
        [SOLVE, CallTool(name="fs_write", arguments={"path": "/usr/local/bin/x", "content": "x"}), SUBMIT],
    )
    assert solved.reward == 1.0 and solved.info["verifier"]["tampered"] == ["added /usr/local/bin/x"]


async def test_a_background_process_that_kills_the_verifier_is_stopped_first(hello: Path) -> None:
    killer = _probe(hello, "kill-verifier")
    solved = await _play(f"harbor:{hello}", [SOLVE, *killer])
    assert solved.reward == 1.0 and solved.info["verifier"]["reason"] == "graded"  # the tests ran, untouched
    unsolved = await _play(f"harbor:{hello}", killer)
    assert unsolved.reward == 0.0 and unsolved.info["verifier"]["reason"] == "graded"


async def test_a_service_the_agent_started_survives_only_with_processes_keep(tmp_path: Path) -> None:
    test_sh = (
        "#!/bin/sh\nfor p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -q '^[h]eartbeat-loop' "
        "&& echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n"
    )
    dockerfile = BASE_DOCKERFILE
    keep = write_harbor_task(
        tmp_path, "keep", test_sh=test_sh, dockerfile=dockerfile, toml_extra='[openenv_mcp]\nprocesses = "keep"\n'
    )
    stop = write_harbor_task(tmp_path, "stop", test_sh=test_sh, dockerfile=dockerfile)
    start = CallTool(
        name="shell_run", arguments={"command": "nohup bash -c 'exec -a heartbeat-loop sleep 600' >/dev/null 2>&1 &"}
    )
    assert (await _play(f"harbor:{keep}", [start, SUBMIT])).reward == 1.0
    assert (await _play(f"harbor:{stop}", [start, SUBMIT])).reward == 0.0


async def test_what_the_image_or_the_tests_get_wrong_scores_0_with_the_reason(tmp_path: Path) -> None:
    baked = write_harbor_task(
        tmp_path,
        "baked",
        dockerfile=BASE_DOCKERFILE + "RUN mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt\n",
    )
    obs = await _play(f"harbor:{baked}", [SUBMIT])
    assert obs.reward == 0.0 and "existed before the tests ran" in obs.info["verifier"]["reason"]
    slow = write_harbor_task(
        tmp_path, "slow", verifier_timeout=2.0, test_sh="#!/bin/sh\nsleep 30\necho 1 > /logs/verifier/reward.txt\n"
    )
    obs = await _play(f"harbor:{slow}", [SUBMIT])
    assert obs.reward == 0.0 and obs.info["verifier"]["reason"] == "timed out after 2 s"
    silent = write_harbor_task(tmp_path, "silent", test_sh="#!/bin/sh\necho checked\nexit 1\n")
    obs = await _play(f"harbor:{silent}", [SUBMIT])
    assert obs.reward == 0.0 and "no reward file" in obs.info["verifier"]["reason"]
    assert obs.info["verifier"]["exit_code"] == 1 and "checked" in obs.info["verifier"]["output"]
    garbage = write_harbor_task(tmp_path, "garbage", test_sh="#!/bin/sh\necho lots > /logs/verifier/reward.txt\n")
    obs = await _play(f"harbor:{garbage}", [SUBMIT])
    assert obs.reward == 0.0 and "not a number" in obs.info["verifier"]["reason"]
    linked = write_harbor_task(
        tmp_path, "linked", test_sh="#!/bin/sh\necho 1 > /tmp/r; ln -s /tmp/r /logs/verifier/reward.txt\n"
    )
    obs = await _play(f"harbor:{linked}", [SUBMIT])
    assert obs.reward == 0.0 and "not a regular file" in obs.info["verifier"]["reason"]


async def test_the_verifier_runs_as_its_user_with_its_env_and_tests_copied_fresh(tmp_path: Path) -> None:
    test_sh = (
        '#!/bin/sh\n[ "$(id -u)" = 65534 ] && [ "$MODE" = strict ] && [ -f /tests/data/expected.txt ] '
        '&& [ "$(cat /app/hello.txt)" = "$(cat /tests/data/expected.txt)" ] && echo 1 > /logs/verifier/reward.txt\n'
    )
    folder = write_harbor_task(
        tmp_path,
        test_sh=test_sh,
        toml_extra="",
        raw_toml='schema_version = "1.2"\n[verifier]\ntimeout_sec = 60\nuser = "nobody"\nenv = { MODE = "strict" }\n',
        files={"tests/data/expected.txt": "Hello, world!\n"},
    )
    assert (await _play(f"harbor:{folder}", [SOLVE, SUBMIT])).reward == 1.0


SEPARATE = """\
schema_version = "1.4"
artifacts = ["/app/out"]
[verifier]
timeout_sec = 60
environment_mode = "separate"
[environment]
memory_mb = 512
"""
CHECK_SEPARATE = (
    "#!/bin/sh\n# runs in a fresh container of the task's image, with /app/out restored\n"
    'if [ "$(cat /app/out/answer.txt)" = 42 ] && [ ! -e /app/scratch.txt ] && [ ! -e /usr/local/bin/pytest ]; '
    "then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
)


async def test_a_separate_verifier_gets_the_artifacts_only_and_pristine_tooling(tmp_path: Path) -> None:
    folder = write_harbor_task(
        tmp_path,
        raw_toml=SEPARATE,
        test_sh=CHECK_SEPARATE,
        solve_sh="#!/bin/sh\nmkdir -p /app/out && echo 42 > /app/out/answer.txt\n",
    )
    work = CallTool(
        name="shell_run",
        arguments={"command": "mkdir -p /app/out && echo 42 > /app/out/answer.txt && echo x > /app/scratch.txt"},
    )
    fake = CallTool(
        name="fs_write", arguments={"path": "/usr/local/bin/pytest", "content": "#!/bin/sh\nexit 0\n", "mode": "755"}
    )
    obs = await _play(f"harbor:{folder}", [work, fake, SUBMIT])
    assert obs.reward == 1.0, obs.info  # the agent's fake pytest stayed in its own (stopped) container
    assert (await _play(f"harbor:{folder}", [SUBMIT])).reward == 0.0
    forged = await _play(f"harbor:{folder}", _probe(folder, "reward-file"))
    assert forged.reward == 0.0
