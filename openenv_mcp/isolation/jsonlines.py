"""MCP's stdio framing, shared by both stdio transports (a child's pipes, a container's attach socket).

One JSON-RPC message per line each way. A server's line that is not JSON-RPC ends its session;
how long a line may grow (``2 * limits.output_bytes +`` :data:`LINE_SLACK`) and how much stderr is
kept for error messages (:data:`STDERR_TAIL`) are the same behind every boundary.
"""

from __future__ import annotations

import mcp_types
from mcp.shared.message import SessionMessage

__all__ = ["LINE_SLACK", "STDERR_TAIL", "decode", "encode", "keep_tail"]

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
