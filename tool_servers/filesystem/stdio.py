"""The filesystem tools over stdio without MCP libraries (``--lean``): what sandboxed environments start.

Imports no FastMCP, MCP SDK or pydantic (starts in ~0.1 s instead of ~1 s);
the tools are listed from ``tools.json`` (what the FastMCP server lists, kept
equal by a test) and their arguments are the ones the environment already
validated against those schemas.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..lean import Reply, ToolFailure, serve
from .core import INSTRUCTIONS, Refused, make_tools

__all__ = ["TOOLS_FILE", "serve_lean"]


TOOLS_FILE = Path(__file__).with_name("tools.json")
"""The tools as MCP lists them (what the FastMCP server lists, without its ``_meta``); a test keeps them equal."""


async def serve_lean(ctx: Any, **limits: int) -> None:
    """Serve the tools over stdio with :mod:`openenv_mcp.tool_servers.lean` (no MCP imports: starts in ~0.1 s)."""
    tools = make_tools(ctx, owner=None, **limits)

    def handler(fn: Callable[..., str]) -> Any:
        async def run(arguments: dict[str, Any]) -> Reply:
            try:  # a worker thread: the loop keeps answering other requests meanwhile
                return Reply(await asyncio.to_thread(fn, **arguments))
            except Refused as e:
                raise ToolFailure(str(e)) from None

        return run

    definitions = json.loads(TOOLS_FILE.read_text())
    await serve(
        {"name": "filesystem", "instructions": INSTRUCTIONS},
        definitions,
        {name: handler(fn) for name, fn in tools.items()},
    )
