"""MCP's stdio framing, shared by both stdio transports (a child's pipes, a container's attach socket).

One JSON-RPC message per line each way. A server's line that is not JSON-RPC ends its session;
how long a line may grow (``2 * limits.output_bytes +`` :data:`LINE_SLACK`) and how much stderr is
kept for error messages (:data:`STDERR_TAIL`) are the same behind every boundary. :func:`pumped`
is the stream pair both hand the SDK's ``ClientSession``, fed by their pumps.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import anyio.abc
import mcp_types
from mcp.shared.message import SessionMessage

__all__ = ["LINE_SLACK", "STDERR_TAIL", "decode", "encode", "keep_tail", "pumped"]

STDERR_TAIL = 4096
"""Bytes of a server's stderr kept (its end) for error messages."""
LINE_SLACK = 65536
"""What one stdout line may hold beyond twice the tool output limit (the JSON around the text)."""


def encode(message: SessionMessage) -> bytes:
    """``message`` as written to a server's stdin: its JSON on one line."""
    return message.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"


def decode(raw: bytes) -> mcp_types.JSONRPCMessage | str | None:
    """One line of a server's stdout: its message, ``None`` for a blank line, or what is wrong
    with it (a line that is not JSON-RPC ends the session)."""
    if not raw.strip():
        return None
    try:
        return mcp_types.jsonrpc_message_adapter.validate_json(raw, by_name=False)
    except ValueError:
        shown = raw[:200].decode(errors="replace")
        return f"wrote non-JSON-RPC output to stdout: {shown!r}"


def keep_tail(tail: bytearray, chunk: bytes) -> None:
    """Append ``chunk`` of a server's stderr to ``tail``, keeping its last :data:`STDERR_TAIL` bytes."""
    tail += chunk
    del tail[:-STDERR_TAIL]


@contextlib.asynccontextmanager
async def pumped(start: Callable[[anyio.abc.TaskGroup, Any, Any], None]) -> AsyncIterator[tuple[Any, Any]]:
    """The ``(read_stream, write_stream)`` pair the SDK's ``ClientSession`` takes, fed by a transport's
    pumps: ``start(task_group, read_writer, write_reader)`` starts them in the task group (messages
    for the SDK go to ``read_writer``, the SDK's come from ``write_reader``). On exit the pumps are
    cancelled and every stream is closed."""
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](16)
    try:
        async with anyio.create_task_group() as tg:
            start(tg, read_writer, write_reader)
            try:
                yield read_stream, write_stream
            finally:
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            for stream in (read_writer, read_stream, write_stream, write_reader):
                await stream.aclose()
