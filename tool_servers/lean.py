"""A dependency-free MCP stdio loop for tool servers started once per episode.

Importing FastMCP and the MCP SDK takes about a second; a sandboxed tool server
is started for every episode, so that second is paid on every ``reset()``.
:func:`serve` speaks the part of MCP an environment's boundary uses over stdio
(``initialize`` on the handshake protocol revisions, ``ping``,
``tools/list``, ``tools/call``, notifications ignored) with the standard
library only, and starts in tens of milliseconds.

A server using it declares its tools as MCP ``Tool`` dicts (the same JSON its
FastMCP twin lists: tests compare the two) and one async handler per tool
returning a :class:`Reply`. Requests are handled concurrently; replies are one
JSON line each, as the stdio transport requires. Standalone and HTTP use keeps
FastMCP (``--transport stdio|http`` without ``--lean``).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["HANDSHAKE_VERSIONS", "Reply", "ToolFailure", "hints", "serve"]

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""Protocol revisions negotiated by ``initialize`` (the newest is offered when the client's is unknown)."""


def hints(title: str, *, read_only: bool, destructive: bool, idempotent: bool, open_world: bool) -> dict[str, Any]:
    """A tool's MCP ``annotations`` with every hint explicit.

    MCP's defaults are the cautious ones (``destructiveHint`` and ``openWorldHint`` true), and a harness
    running unattended (Codex with ``approval_policy = "never"``) refuses what it cannot tell is safe, so
    every reference tool says all four. ``title`` is the tool's display name (also its ``title``)."""
    return {
        "title": title,
        "readOnlyHint": read_only,
        "destructiveHint": destructive,
        "idempotentHint": idempotent,
        "openWorldHint": open_world,
    }


@dataclass
class Reply:
    """A tool's result: its text, structured content (or ``None``) and whether it is an error."""

    text: str
    structured: dict[str, Any] | None = None
    is_error: bool = False

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"content": [{"type": "text", "text": self.text}]}
        if self.structured is not None:
            out["structuredContent"] = self.structured
        out["isError"] = self.is_error
        return out


class ToolFailure(Exception):
    """Raised by a handler for an error result with just a message (FastMCP's ToolError twin)."""


Handler = Callable[[dict[str, Any]], Awaitable[Reply]]


def _error(code: int, message: str) -> dict[str, Any]:
    return {"code": code, "message": message}


async def _answer(
    message: dict[str, Any], info: dict[str, Any], tools: list[dict[str, Any]], handlers: dict[str, Handler]
) -> dict[str, Any] | None:
    method = message.get("method")
    params = message.get("params") or {}
    if method == "initialize":
        asked = params.get("protocolVersion")
        version = asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": info["name"], "version": info.get("version", "1.0.0")},
        }
        if info.get("instructions"):
            result["instructions"] = info["instructions"]
        return {"result": result}
    if method == "ping":
        return {"result": {}}
    if method == "tools/list":
        return {"result": {"tools": tools}}
    if method == "tools/call":
        name = params.get("name")
        handler = handlers.get(name) if isinstance(name, str) else None
        if handler is None:
            return {"result": Reply(f"Unknown tool: {name!r}", is_error=True).wire()}
        try:
            reply = await handler(params.get("arguments") or {})
        except ToolFailure as e:
            reply = Reply(str(e), is_error=True)
        except Exception as e:  # a tool bug is an error result, never a dead server
            reply = Reply(f"Error calling tool {name!r}: {e}", is_error=True)
        return {"result": reply.wire()}
    return {"error": _error(-32601, f"Method not found: {method}")}


async def serve(info: dict[str, Any], tools: list[dict[str, Any]], handlers: dict[str, Handler]) -> None:
    """Serve MCP on this process's stdin/stdout until stdin closes."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=64 * 1024 * 1024, loop=loop)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), sys.stdin)
    out = sys.stdout.buffer
    lock = asyncio.Lock()
    running: set[asyncio.Task[None]] = set()

    async def send(payload: dict[str, Any]) -> None:
        data = json.dumps({"jsonrpc": "2.0", **payload}, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        async with lock:
            out.write(data)
            out.flush()

    async def handle(message: dict[str, Any]) -> None:
        try:
            answer = await _answer(message, info, tools, handlers)
        except Exception as e:
            answer = {"error": _error(-32603, f"Internal error: {e}")}
        if answer is not None and "id" in message:
            await send({"id": message["id"], **answer})

    while line := await reader.readline():
        try:
            message = json.loads(line)
        except ValueError:
            await send({"id": None, "error": _error(-32700, "Parse error: not JSON")})
            continue
        if not isinstance(message, dict) or "method" not in message:
            continue  # a response or batch: nothing we asked for
        if "id" not in message:
            continue  # notifications (initialized, cancelled, ...) need no answer
        task = asyncio.ensure_future(handle(message))
        running.add(task)
        task.add_done_callback(running.discard)
    if running:  # stdin closed: answer what was asked before exiting (a client kills us if it cannot wait)
        await asyncio.gather(*running, return_exceptions=True)
