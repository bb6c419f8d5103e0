"""`openenv-mcp build`: the wheel of a package straight out of init, and its Docker image, which
`docker run` serves (the MCP tools answer over HTTP from the container)."""

from __future__ import annotations

import re
import subprocess
import uuid

import anyio
import pytest

from openenv_mcp.testing import free_port, need, wait_for_port

from support import docker_problem
from support.envpkg import init_packages

pytestmark = pytest.mark.timeout(1800)

BASE_IMAGE = "openenv-mcp/base:bookworm"


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    problem = docker_problem()
    need(problem is None, problem or "")
    need(
        subprocess.run(["docker", "image", "inspect", BASE_IMAGE], capture_output=True).returncode == 0,
        f"no {BASE_IMAGE} image: run .ci/docker-setup.sh",
    )
    return init_packages(tmp_path_factory)


async def _call_reverse(url: str) -> tuple[list[str], str]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = [t.name for t in (await session.list_tools()).tools]
        result = await session.call_tool("reverse", {"text": "stressed"})
        return tools, result.content[0].text


def test_build_makes_a_wheel_and_an_image_that_docker_run_serves(packages):
    venv = packages.venv
    tag = f"openenv-mcp-test/plain-env:{uuid.uuid4().hex[:10]}"
    container = f"openenv-mcp-test-build-{uuid.uuid4().hex[:10]}"
    try:
        out = venv.cli(
            "build",
            "plain-env",
            "--base-image",
            BASE_IMAGE,
            "--tag",
            tag,
            timeout=1500,
            env=venv.env() | {"COLUMNS": "300"},
        ).stdout
        wheel = packages.plain / "dist" / "plain_env-0.1.0-py3-none-any.whl"
        assert wheel.is_file()
        assert f"wheel {wheel}" in out and f"image {tag}" in out, out
        assert f"pip install {wheel}" in out and f"docker run --rm -p 8000:8000 {tag}" in out, out
        port = free_port()
        subprocess.run(
            ["docker", "run", "-d", "--name", container, "-p", f"127.0.0.1:{port}:8000", tag],
            check=True,
            capture_output=True,
            timeout=120,
        )
        wait_for_port(port, timeout=60)
        for _ in range(100):  # the port is published before the server inside listens
            try:
                tools, text = anyio.run(_call_reverse, f"http://127.0.0.1:{port}/mcp")
                break
            except Exception:
                anyio.run(anyio.sleep, 0.3)
        else:
            logs = subprocess.run(["docker", "logs", container], capture_output=True, text=True).stderr
            raise AssertionError(f"the container never answered MCP; its logs:\n{logs}")
        assert (tools, text) == (["reverse"], "desserts")
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True)
        subprocess.run(["docker", "image", "rm", "-f", tag], capture_output=True)


def test_build_of_an_env_without_package_source_says_what_to_give(packages):
    proc = packages.venv.cli("build", "echo", "--no-image", check=False)
    assert proc.returncode == 2
    err = " ".join(proc.stderr.split())
    assert re.search(
        r"environment 'echo' at '.*' has no package source \(no pyproject\.toml above it\): give "
        r"the path of its package folder, e\.g\. `openenv-mcp build \./my-env`",
        err,
    ), err
