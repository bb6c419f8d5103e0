"""The benchmark's tool server: ``echo`` (trivial) and ``sleep`` (waits, then answers).

The same two tools are served by every peer in the benchmarks: openenv-mcp (this folder's
env.toml), plain FastMCP (``bench/_fastmcp_server.py``) and OpenEnv 0.10
(``bench/_openenv_server.py``, which imports this file in its own virtualenv).
"""

from __future__ import annotations

import asyncio

from fastmcp import FastMCP

server = FastMCP("bench", instructions="Benchmark tools.")


@server.tool
async def echo(text: str) -> str:
    """Return ``text`` unchanged."""
    return text


@server.tool
async def sleep(seconds: float) -> str:
    """Wait ``seconds`` (at most 5), then answer ``slept``."""
    await asyncio.sleep(min(max(seconds, 0.0), 5.0))
    return "slept"
