"""The shell tool server as a FastMCP server (standalone stdio/HTTP and in-process use).

The behaviour lives in :mod:`.core` (shared with the lean stdio mode); see its docstring.
"""

from pathlib import Path
from typing import Annotated, Any

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.tools.base import ToolResult
from pydantic import Field

from .core import (
    ANNOTATIONS,
    COMMAND_HELP,
    DEFAULT_LIMITS,
    INSTRUCTIONS,
    OUTPUT_SCHEMA,
    RUN_DESCRIPTION,
    STDIN_HELP,
    Refused,
    call,
    limits,
    root_of,
    run_command,
    timeout_help,
)

__all__ = ["DEFAULT_LIMITS", "OUTPUT_SCHEMA", "create_server", "run_command"]


def create_server(ctx: Any, **overrides: float) -> FastMCP:
    """A FastMCP shell server whose commands run in ``ctx.workspace``.

    Args:
        ctx: an :class:`openenv_mcp.isolation.ServerContext` (its ``workspace``
            is the working folder) or a plain path.
        **overrides: overrides of :data:`DEFAULT_LIMITS`.
    """
    cap = limits(overrides)
    root: Path = root_of(ctx)
    server = FastMCP("shell", instructions=INSTRUCTIONS)

    @server.tool(
        name="run",
        title=ANNOTATIONS["run"]["title"],
        description=RUN_DESCRIPTION,
        output_schema=OUTPUT_SCHEMA,
        annotations=ANNOTATIONS["run"],
    )
    async def run(
        command: Annotated[str, Field(description=COMMAND_HELP)],
        timeout: Annotated[float | None, Field(gt=0, description=timeout_help(cap))] = None,
        stdin: Annotated[str | None, Field(description=STDIN_HELP)] = None,
    ) -> ToolResult:
        try:
            text, structured, is_error = await call(root, cap, command, timeout, stdin)
        except Refused as e:
            raise ToolError(str(e)) from None
        return ToolResult(content=text, structured_content=structured, is_error=is_error)

    return server
