"""A compose task (a ``main`` service and a sidecar, docker-compose v1) and a Terminal-Bench 1 task
(task.yaml, run-tests.sh, pytest): both load, run, grade, and leave nothing behind."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

import openenv_mcp
from openenv_mcp import CallTool
from openenv_mcp.client.registry import load_environment
from openenv_mcp.testing import need

from support.harbor import need_engine, write_harbor_task, write_tb1_task

pytestmark = [pytest.mark.docker, pytest.mark.anyio]

CORE = """\
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
# The layer every terminal task shares (Python's standard library for the checks, ps/pkill).
RUN apt-get update && apt-get install -y --no-install-recommends python3 procps \\
    && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
"""
"""The same first layers as the terminal tasks' (so the engine's cache shares them)."""

COMPOSE = """\
services:
  main:
    build:
      context: .
    depends_on: [api]
  api:
    build:
      context: ./api
"""
FETCH = "python3 -c \"import urllib.request; print(urllib.request.urlopen('http://api:8000/value.txt', timeout=5).read().decode().strip())\""


async def _play(target: str, actions: list[CallTool]):
    env = openenv_mcp.make_async(target)
    try:
        obs = await env.reset(seed=0)
        for action in actions:
            obs = await env.step(action)
            if obs.done:
                break
        return obs, (await env.state()).episode_id
    finally:
        await env.close()


def test_a_compose_task_with_a_main_service_and_a_sidecar(tmp_path: Path) -> None:
    need_engine()
    need(
        shutil.which("docker-compose") is not None,
        "no docker-compose: apt-get install docker-compose (or .ci/docker-setup.sh)",
    )
    folder = write_harbor_task(
        tmp_path,
        "sidecar",
        instruction="The service `api` (http://api:8000/value.txt) holds a number: write it to /app/value.txt.",
        dockerfile=CORE + "WORKDIR /app\n",
        test_sh='#!/bin/sh\n[ "$(cat /app/value.txt)" = 4242 ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n',
        solve_sh=f"#!/bin/sh\n{FETCH} > /app/value.txt\n",
        files={
            "environment/docker-compose.yaml": COMPOSE,
            "environment/api/Dockerfile": CORE + "RUN mkdir /srv/www && echo 4242 > /srv/www/value.txt\n"
            'CMD ["python3", "-m", "http.server", "8000", "--directory", "/srv/www"]\n',
        },
    )
    environment = load_environment(f"harbor:{folder}")
    task = environment.tasks.tasks[0]
    probe = CallTool(
        name="shell_run",
        arguments={
            "command": f"for i in 1 2 3 4 5 6 7 8 9 10; do {FETCH} && break; sleep 1; done; "
            "for host in deb.debian.org 151.101.2.132; do python3 -c \"import socket; socket.create_connection(('$host', 80), 3); "
            "print('REACHED')\" 2>&1 | tail -1; done",
            "timeout": 60,
        },
    )
    import anyio

    async def main() -> None:
        env = openenv_mcp.make_async(f"harbor:{folder}")
        try:
            await env.reset(seed=0)
            obs = await env.step(probe)
            out = obs.result.structured_content["stdout"]
            assert "4242" in out, out  # the sidecar answers on the project's network
            assert "REACHED" not in out and len(out.strip().splitlines()) == 3, (
                out
            )  # nothing outside answers (internal network)
            for action in environment.trajectory(task, "reference"):
                obs = await env.step(action)
            assert obs.done and obs.reward == 1.0, obs.info
            project = f"openenv-harbor-{(await env.state()).episode_id[:12]}"
        finally:
            await env.close()
        import docker

        client = docker.from_env()
        assert client.containers.list(all=True, filters={"label": f"com.docker.compose.project={project}"}) == []
        assert client.networks.list(filters={"label": f"com.docker.compose.project={project}"}) == []
        nothing, _ = await _play(f"harbor:{folder}", [CallTool(name="submit", arguments={})])
        assert nothing.reward == 0.0

    anyio.run(main)


TB1_YAML = """\
instruction: |-
  Write the word hello (and a newline) to /app/out.txt.
author_email: tests@example.com
difficulty: easy
category: testing
tags: [files]
parser_name: pytest
max_agent_timeout_sec: 300
max_test_timeout_sec: 120
"""
TB1_TESTS = """\
from pathlib import Path


def test_out_exists():
    assert Path("/app/out.txt").exists()


def test_out_says_hello():
    assert Path("/app/out.txt").read_text() == "hello\\n"
"""
TB1_COMPOSE = """\
services:
  client:
    build:
      dockerfile: Dockerfile
    image: ${T_BENCH_TASK_DOCKER_CLIENT_IMAGE_NAME}
    container_name: ${T_BENCH_TASK_DOCKER_CLIENT_CONTAINER_NAME}
    command: [ "sh", "-c", "sleep infinity" ]
    environment:
      - TEST_DIR=${T_BENCH_TEST_DIR}
    volumes:
      - ${T_BENCH_TASK_LOGS_PATH}:${T_BENCH_CONTAINER_LOGS_PATH}
"""


@pytest.fixture(scope="module")
def tb1(tmp_path_factory) -> Path:
    marker = uuid.uuid4().hex
    return write_tb1_task(
        tmp_path_factory.mktemp("tb1"),
        "hello-tb1",
        task_yaml=TB1_YAML,
        dockerfile=CORE + "RUN apt-get update && apt-get install -y --no-install-recommends python3-pytest \\\n"
        "    && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin\nWORKDIR /app\nCOPY . /app/context/\n",
        run_tests=f"#!/bin/bash\n# {marker}\ncd $TEST_DIR\npython3 -m pytest test_outputs.py -rA\n",
        tests={"test_outputs.py": TB1_TESTS},
        solution="#!/bin/bash\necho hello > /app/out.txt\n",
        compose=TB1_COMPOSE,
    )


async def test_a_terminal_bench_1_task_runs_and_grades_with_pytest(tb1: Path) -> None:
    need_engine()
    environment = load_environment(f"harbor:{tb1}")
    task = environment.tasks.tasks[0]
    assert task.prompt.startswith("Write the word hello")
    solved, _ = await _play(f"harbor:{tb1}", environment.trajectory(task, "reference"))
    assert solved.reward == 1.0 and solved.info["verifier"]["rewards"] == {"reward": 1.0, "passed": 2.0, "tests": 2.0}
    half, _ = await _play(
        f"harbor:{tb1}",
        [
            CallTool(name="fs_write", arguments={"path": "/app/out.txt", "content": "bye\n"}),
            CallTool(name="submit", arguments={}),
        ],
    )
    assert half.reward == 0.0 and half.info["verifier"]["rewards"]["passed"] == 1.0
    nothing, _ = await _play(f"harbor:{tb1}", environment.trajectory(task, "wrong"))
    assert nothing.reward == 0.0


async def test_a_terminal_bench_1_image_holds_neither_its_tests_nor_its_solution(tb1: Path) -> None:
    """The task's Dockerfile copies its whole build context (``COPY . /app/context/``): the context we
    send the engine has no tests, run-tests.sh, solution.sh or task.yaml in it."""
    need_engine()
    listing, _ = await _play(
        f"harbor:{tb1}",
        [
            CallTool(
                name="shell_run",
                arguments={
                    "command": "ls -a /app/context; grep -rl test_out_says_hello / --exclude-dir=proc --exclude-dir=sys 2>/dev/null; echo END"
                },
            )
        ],
    )
    out = listing.result.structured_content["stdout"]
    assert "Dockerfile" in out and out.rstrip().endswith("END")
    for leaked in ("tests", "run-tests.sh", "solution.sh", "task.yaml", "docker-compose.yaml", "test_outputs"):
        assert leaked not in out.replace("grep -rl", ""), out
