"""The python tool server as a FastMCP server (standalone stdio/HTTP and in-process use).

The behaviour lives in :mod:`.core` (shared with the lean stdio mode); see its docstring.
"""

from typing import Annotated, Any

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.tools.base import ToolResult
from pydantic import Field

from .core import (
    ANNOTATIONS,
    CODE_HELP,
    DEFAULT_LIMITS,
    INSTRUCTIONS,
    OUTPUT_SCHEMA,
    RESTART_DESCRIPTION,
    RESTARTED,
    RUN_DESCRIPTION,
    Refused,
    call,
    limits,
    new_interpreter,
    timeout_help,
)

__all__ = ["DEFAULT_LIMITS", "OUTPUT_SCHEMA", "create_server"]


def create_server(ctx: Any, **overrides: float) -> FastMCP:
    """A FastMCP python server whose interpreter runs in ``ctx.workspace``.

    Args:
        ctx: an :class:`openenv_mcp.isolation.ServerContext` (its ``workspace`` is
            the interpreter's working folder and first ``sys.path`` entry) or a plain path.
        **overrides: overrides of :data:`DEFAULT_LIMITS`.
    """
    cap = limits(overrides)
    interpreter = new_interpreter(ctx, cap)
    server = FastMCP("python", instructions=INSTRUCTIONS)
    server.interpreter = interpreter  # type: ignore[attr-defined]  # for tests and embedding
    server.openenv_close = interpreter.close  # type: ignore[attr-defined]  # an in-process episode's close ends the child

    @server.tool(
        name="run",
        title=ANNOTATIONS["run"]["title"],
        description=RUN_DESCRIPTION,
        output_schema=OUTPUT_SCHEMA,
        annotations=ANNOTATIONS["run"],
    )
    async def run(
        code: Annotated[str, Field(description=CODE_HELP)],
        timeout: Annotated[float | None, Field(gt=0, description=timeout_help(cap))] = None,
    ) -> ToolResult:
        try:
            text, structured, is_error = await call(interpreter, cap, code, timeout)
        except Refused as e:
            raise ToolError(str(e)) from None
        return ToolResult(content=text, structured_content=structured, is_error=is_error)

    @server.tool(
        name="restart",
        title=ANNOTATIONS["restart"]["title"],
        description=RESTART_DESCRIPTION,
        output_schema=None,
        annotations=ANNOTATIONS["restart"],
    )
    async def restart() -> str:
        await interpreter.restart()
        return RESTARTED

    return server
