"""Harbor and Terminal-Bench 1 task folders written by the tests (shared by tests/worlds/harbor)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from openenv_mcp.testing import need

from support import docker_problem

__all__ = ["BASE_DOCKERFILE", "need_engine", "write_harbor_task", "write_tb1_task"]

BASE_DOCKERFILE = "ARG BASE_IMAGE=debian:bookworm-slim\nFROM ${BASE_IMAGE}\nWORKDIR /app\n"
"""A task image with nothing added: builds in seconds from the local base."""

TASK_TOML = """\
schema_version = "1.1"

[task]
name = "tests/{name}"

[metadata]
category = "testing"
difficulty = "easy"

[verifier]
timeout_sec = {verifier_timeout}

[agent]
timeout_sec = {agent_timeout}

[environment]
memory_mb = 512
cpus = 1
{extra}"""

CHECK_HELLO = """\
#!/bin/sh
if [ "$(cat /app/hello.txt 2>/dev/null)" = "Hello, world!" ]; then echo 1 > /logs/verifier/reward.txt
else echo 0 > /logs/verifier/reward.txt; fi
"""
SOLVE_HELLO = "#!/bin/sh\nprintf 'Hello, world!\\n' > /app/hello.txt\n"


def need_engine() -> None:
    """Skip (or fail under OPENENV_MCP_REQUIRE_ALL=1) without a Docker engine."""
    problem = docker_problem()
    need(problem is None, problem or "")


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def write_harbor_task(
    root: Path,
    name: str = "hello",
    *,
    instruction: str = "Create the file /app/hello.txt containing exactly: Hello, world!",
    dockerfile: str = BASE_DOCKERFILE,
    test_sh: str = CHECK_HELLO,
    solve_sh: str | None = SOLVE_HELLO,
    toml_extra: str = "",
    agent_timeout: float = 300.0,
    verifier_timeout: float = 60.0,
    files: dict[str, str] | None = None,
    raw_toml: str | None = None,
) -> Path:
    """A Harbor task folder ``root/name``; ``files``: more files by path relative to the task."""
    folder = root / name
    toml = (
        raw_toml
        if raw_toml is not None
        else TASK_TOML.format(
            name=name, agent_timeout=agent_timeout, verifier_timeout=verifier_timeout, extra=textwrap.dedent(toml_extra)
        )
    )
    _write(folder / "task.toml", toml)
    _write(folder / "instruction.md", instruction + "\n")
    _write(folder / "environment" / "Dockerfile", dockerfile)
    _write(folder / "tests" / "test.sh", test_sh, 0o755)
    if solve_sh is not None:
        _write(folder / "solution" / "solve.sh", solve_sh, 0o755)
    for rel, text in (files or {}).items():
        _write(folder / rel, text, 0o755 if rel.endswith(".sh") else 0o644)
    return folder


def write_tb1_task(
    root: Path,
    name: str,
    *,
    task_yaml: str,
    dockerfile: str,
    run_tests: str,
    tests: dict[str, str],
    solution: str | None,
    compose: str | None = None,
) -> Path:
    """A Terminal-Bench 1 task folder: task.yaml, Dockerfile, docker-compose.yaml, run-tests.sh,
    tests/, solution.sh, at the top of the folder."""
    folder = root / name
    _write(folder / "task.yaml", task_yaml)
    _write(folder / "Dockerfile", dockerfile)
    _write(folder / "run-tests.sh", run_tests, 0o755)
    for rel, text in tests.items():
        _write(folder / "tests" / rel, text)
    if solution is not None:
        _write(folder / "solution.sh", solution, 0o755)
    if compose is not None:
        _write(folder / "docker-compose.yaml", compose)
    return folder
