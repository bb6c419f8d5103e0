"""Helpers for tests: this project's and environment authors' (see ``docs/testing.md``).

* :func:`free_port` — a free TCP port on 127.0.0.1.
* :func:`wait_for_port` — block until a server a test started listens on its port.
* :func:`serving` — serve an ASGI app (e.g. ``openenv_mcp.serve.app.create_app(env)``) with uvicorn in
  this event loop; yields its base URL (:func:`openenv_mcp.asgi.serving`).
* :func:`running_server` — ``openenv-mcp serve ENV`` as a child process on a free port, waited for
  until ``/health`` answers, stopped (killed if it must be) however the test ends.
* :func:`http_tool_server` — a tool server (``python -m MODULE``) over streamable HTTP; yields its URL.
* :func:`wait_for` — wait until a condition holds (async).
* :func:`fidelity_diff` — compare a tool server's raw stdio answers with the same requests through
  an environment's ``/mcp`` and ``step()``, field by field (see :mod:`openenv_mcp.conformance.fidelity`).
* :func:`need` — skip a test whose engine is missing, with a reason that says what to install
  (fail instead when ``OPENENV_MCP_REQUIRE_ALL=1``, as in CI).

pytest, uvicorn and anyio are imported when used, not by ``import openenv_mcp.testing``.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

from openenv_mcp.asgi import serving
from openenv_mcp.ports import free_port

__all__ = [
    "REQUIRE_ALL",
    "fidelity_diff",
    "free_port",
    "http_tool_server",
    "need",
    "running_server",
    "serving",
    "wait_for",
    "wait_for_port",
]

REQUIRE_ALL = os.environ.get("OPENENV_MCP_REQUIRE_ALL") == "1"
"""``OPENENV_MCP_REQUIRE_ALL=1``: a missing engine fails the test instead of skipping it (CI)."""


def need(condition: bool, reason: str) -> None:
    """Skip the calling test when ``condition`` is false (``reason`` says what to install), or fail it
    under ``OPENENV_MCP_REQUIRE_ALL=1``."""
    if condition:
        return
    import pytest

    if REQUIRE_ALL:
        pytest.fail(f"required engine missing (OPENENV_MCP_REQUIRE_ALL=1): {reason}")
    pytest.skip(reason)


async def wait_for(
    predicate: Callable[[], Any | Awaitable[Any]],
    timeout: float = 10.0,
    interval: float = 0.02,
    what: str = "the condition",
) -> Any:
    """Wait until ``predicate()`` (sync or async) is truthy; its value. ``TimeoutError`` naming ``what``."""
    import inspect

    import anyio

    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not hold within {timeout:g} s")
        await anyio.sleep(interval)


def wait_for_port(port: int, proc: subprocess.Popen[Any] | None = None, timeout: float = 60.0) -> None:
    """Block until something accepts connections on ``127.0.0.1:port`` (a server a test started as a
    child process). ``AssertionError`` if ``proc`` exits first or nothing listens within ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the server exited with {proc.returncode} before listening on {port}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port} after {timeout:g} s")


def _stop(proc: subprocess.Popen[Any]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stderr is not None:
        proc.stderr.close()


@contextlib.contextmanager
def running_server(
    env: str = "echo", *args: str, token: str | None = None, timeout: float = 60.0, cwd: str | None = None
) -> Iterator[str]:
    """``openenv-mcp serve ENV ARGS`` in a child process on a free loopback port; yields
    ``http://127.0.0.1:PORT`` once ``/health`` answers. Stopped (killed if it must be) however the block ends."""
    import httpx

    port = free_port()
    cmd = [sys.executable, "-m", "openenv_mcp.cli", "serve", env, "--port", str(port), *args]
    if token:
        cmd += ["--token", token]
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace")[-2000:] if proc.stderr else ""
                raise RuntimeError(f"openenv-mcp serve {env} exited with {proc.returncode}: {err}")
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"openenv-mcp serve {env} did not answer /health within {timeout:g} s")
            time.sleep(0.05)
        yield url
    finally:
        _stop(proc)


@contextlib.asynccontextmanager
async def http_tool_server(
    module: str, *args: str, env: dict[str, str] | None = None, timeout: float = 60.0, cwd: str | None = None
) -> AsyncIterator[str]:
    """``python -m MODULE ARGS --transport http --port PORT`` (a module name without dots is one of
    ``openenv_mcp.tool_servers``); yields its ``/mcp`` URL once it accepts connections."""
    import anyio

    name = module if "." in module else f"openenv_mcp.tool_servers.{module}"
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", name, *args, "--transport", "http", "--port", str(port)],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        with anyio.fail_after(timeout):
            while True:  # wait until it accepts connections
                if proc.poll() is not None:
                    err = proc.stderr.read().decode(errors="replace")[-2000:] if proc.stderr else ""
                    raise RuntimeError(f"{name} exited with {proc.returncode}: {err}")
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1):
                        break
                except OSError:
                    await anyio.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        _stop(proc)


async def fidelity_diff(target: Any, **options: Any) -> Any:
    """:func:`openenv_mcp.conformance.fidelity.fidelity_diff`: a :class:`~openenv_mcp.conformance.fidelity.FidelityReport`
    comparing a tool server's raw answers with the environment's ``/mcp`` and ``step()``."""
    from openenv_mcp.conformance.fidelity import fidelity_diff as diff

    return await diff(target, **options)
