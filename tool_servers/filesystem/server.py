"""The filesystem tool server as a FastMCP server (standalone stdio/HTTP and in-process use).

The behaviour lives in :mod:`.core` (shared with the lean stdio mode); see its
docstring. The tools are plain functions: FastMCP runs them in a worker thread,
and the in-process boundary runs them off its event loop with ``call_timeout``
enforced.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from pydantic import Field

from .core import ANNOTATIONS, DEFAULT_LIMITS, INSTRUCTIONS, NOT_REGULAR, OUTSIDE, Refused, make_tools

__all__ = ["DEFAULT_LIMITS", "NOT_REGULAR", "OUTSIDE", "create_server"]


def _tool(server: FastMCP, name: str, body: Callable[..., str]) -> Callable[[Callable[..., str]], Any]:
    """Register the decorated signature (types and descriptions) as tool ``name`` running ``body``."""

    def register(signature: Callable[..., str]) -> Any:
        @functools.wraps(signature)
        def run(*args: Any, **kwargs: Any) -> str:
            try:
                return body(*args, **kwargs)
            except Refused as e:
                raise ToolError(str(e)) from None

        hinted = ANNOTATIONS[name]
        return server.tool(
            name=name,
            title=hinted["title"],
            description=inspect.cleandoc(body.__doc__ or ""),
            output_schema=None,
            annotations=hinted,
        )(run)

    return register


def create_server(ctx: Any, *, owner: tuple[int, int] | str | None = None, **limits: int) -> FastMCP:
    """A FastMCP filesystem server rooted at ``ctx.workspace``.

    Args:
        ctx: an :class:`openenv_mcp.isolation.ServerContext` (its ``workspace``
            is the root) or a plain path (``str`` / ``Path``).
        owner: ``(uid, gid)`` to give every file and folder the tools create (by
            ``fchown`` on the new descriptor, never by name); ``"root"`` for the
            workspace folder's owner at that moment (e.g. the uid sandboxed
            servers of the same workspace run as); ``None`` leaves them to the
            server's user.
        **limits: overrides of :data:`DEFAULT_LIMITS` (e.g. ``max_read_chars=1000``).
    """
    tools = make_tools(ctx, owner=owner, **limits)
    server = FastMCP("filesystem", instructions=INSTRUCTIONS)

    @_tool(server, "list", tools["list"])
    def list_(
        path: Annotated[
            str, Field(description="Folder to list, relative to the workspace root ('.' for the root).")
        ] = ".",
        recursive: Annotated[bool, Field(description="Also list every sub-folder's contents (depth first).")] = False,
    ) -> str: ...

    @_tool(server, "read", tools["read"])
    def read(
        path: Annotated[str, Field(description="File to read, relative to the workspace root.")],
        start_line: Annotated[int, Field(ge=1, description="First line to return (1-based).")] = 1,
        max_lines: Annotated[
            int | None, Field(ge=1, description="Return at most this many lines (default: to the end).")
        ] = None,
    ) -> str: ...

    @_tool(server, "write", tools["write"])
    def write(
        path: Annotated[
            str,
            Field(
                description="File to create or overwrite, relative to the workspace root. Missing parent folders are created."
            ),
        ],
        content: Annotated[str, Field(description="The complete new content of the file (UTF-8 text).")],
    ) -> str: ...

    @_tool(server, "edit", tools["edit"])
    def edit(
        path: Annotated[str, Field(description="File to change, relative to the workspace root.")],
        old_text: Annotated[
            str,
            Field(
                description="Exact text to replace (whitespace and newlines included). Must occur exactly once unless replace_all is true; include surrounding lines to make it unique."
            ),
        ],
        new_text: Annotated[str, Field(description="Text to put in its place (may be empty to delete).")],
        replace_all: Annotated[
            bool, Field(description="Replace every occurrence instead of requiring exactly one.")
        ] = False,
    ) -> str: ...

    @_tool(server, "move", tools["move"])
    def move(
        source: Annotated[str, Field(description="File or folder to move or rename, relative to the workspace root.")],
        destination: Annotated[
            str,
            Field(
                description="Its new path (including the new name), relative to the workspace root. Missing parent folders are created."
            ),
        ],
        overwrite: Annotated[bool, Field(description="Replace an existing destination file.")] = False,
    ) -> str: ...

    @_tool(server, "delete", tools["delete"])
    def delete(
        path: Annotated[str, Field(description="File or folder to delete, relative to the workspace root.")],
        recursive: Annotated[
            bool, Field(description="Required to delete a folder that is not empty (deletes everything in it).")
        ] = False,
    ) -> str: ...

    @_tool(server, "search", tools["search"])
    def search(
        pattern: Annotated[
            str, Field(description="Text to look for in file contents (a regular expression when regex is true).")
        ],
        path: Annotated[
            str, Field(description="File or folder to search, relative to the workspace root ('.' for everything).")
        ] = ".",
        glob: Annotated[
            str | None, Field(description="Only search files whose name matches this glob, e.g. '*.py'.")
        ] = None,
        regex: Annotated[
            bool,
            Field(
                description="Treat pattern as a regular expression (Python syntax without backreferences or look-around; matched in linear time)."
            ),
        ] = False,
        case_sensitive: Annotated[bool, Field(description="Match letter case exactly.")] = True,
        max_results: Annotated[int, Field(ge=1, le=1000, description="Most matching lines to return.")] = 100,
    ) -> str: ...

    return server
