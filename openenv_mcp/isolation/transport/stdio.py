"""The stdio transport of a child process: spawned from a :class:`openenv_mcp.isolation.host.launch.Launch`, pumped, killed.

:class:`StdioProcess` is what the process boundaries (``process``, ``sandbox``) hand the official SDK's
``ClientSession`` as its transport. ``stdout`` is read in chunks and split into lines by hand, so a
line is never buffered past its limit: an over-long answer to a pending request is cut and returned
with a visible marker (the rest is dropped on the pipe). stderr keeps its last
:data:`openenv_mcp.isolation.transport.jsonlines.STDERR_TAIL` bytes. Stopping kills the whole tree: the process group, every
descendant, and (when the server alone holds its uid) every process of the uid.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.abc
import mcp_types
from mcp.shared.message import SessionMessage

from openenv_mcp.errors import BoundaryError
from openenv_mcp.isolation.host.launch import Launch
from openenv_mcp.isolation.host.proctree import kill_tree, kill_uid
from openenv_mcp.isolation.transport.jsonlines import decode, encode, keep_tail, pumped
from openenv_mcp.isolation.transport.mcpsession import TRUNCATED_META, describe, truncation_marker

__all__ = ["StdioProcess"]


class StdioProcess:
    """A spawned server and the pumps between its pipes and the SDK's streams.

    ``stdout`` is read in chunks and split into lines by hand so that no line
    is ever buffered past ``line_limit`` bytes. A line that is not JSON-RPC
    ends the connection (:attr:`problem` says why).
    """

    def __init__(self, name: str, launch: Launch, line_limit: int, output_limit: int, kill_uid: bool = False) -> None:
        self.name = name
        self.kill_uid = kill_uid
        self.launch = launch
        self.line_limit = line_limit
        self.output_limit = output_limit
        self.proc: asyncio.subprocess.Process | None = None
        self.stderr_tail = bytearray()
        self.problem: str | None = None
        self._pending: dict[Any, str] = {}

    # -- lifecycle
    async def spawn(self) -> None:
        launch = self.launch
        program = launch.argv[0]
        if not os.access(program, os.X_OK) or os.path.isdir(program):
            raise BoundaryError(f"tool server {self.name!r} could not start: {program} is not an executable file")
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *launch.command(),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=launch.env,
                cwd=launch.cwd,
                start_new_session=True,
            )
        except (OSError, ValueError, subprocess.SubprocessError) as e:
            raise BoundaryError(f"tool server {self.name!r} could not start: {describe(e)}") from e

    def kill(self) -> None:
        """SIGKILL the whole tree: the process group, every descendant (stopped as found, so a tree still
        growing is caught whole), and every process of the uid."""
        proc = self.proc
        if proc is None:
            return
        if proc.returncode is None:  # not reaped yet, so its pid is still its own; first, while its children are its
            kill_tree(proc.pid)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        if self.kill_uid and self.launch.uid is not None:
            kill_uid(self.launch.uid)

    async def stop(self) -> None:
        self.kill()
        proc = self.proc
        if proc is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                # the exit status, not ``proc.wait()``: that also waits until every pipe closes, which a
                # descendant holding the server's stdout (a daemon not yet killed by its uid or cgroup) delays
                while proc.returncode is None:
                    await anyio.sleep(0.01)
            transport = getattr(proc, "_transport", None)
            if transport is not None:
                with contextlib.suppress(Exception):
                    transport.close()

    def status(self) -> str:
        """``exited with code N`` / ``was killed by SIGKILL`` / ``is running``."""
        proc = self.proc
        code = None if proc is None else proc.returncode
        if code is None:
            return "is running"
        if code < 0:
            try:
                return f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"was killed by signal {-code}"
        return f"exited with code {code}"

    def stderr_text(self) -> str:
        text = self.stderr_tail.decode(errors="replace").strip()
        return text[-1000:]

    # -- the transport as the SDK expects it
    @contextlib.asynccontextmanager
    async def streams(self) -> AsyncIterator[tuple[Any, Any]]:
        await self.spawn()
        try:
            async with pumped(self._start_pumps) as streams:
                yield streams
        finally:
            with anyio.CancelScope(shield=True):
                await self.stop()

    def _start_pumps(self, tg: anyio.abc.TaskGroup, read_writer: Any, write_reader: Any) -> None:
        tg.start_soon(self._pump_stdout, read_writer)
        tg.start_soon(self._pump_stdin, write_reader)
        tg.start_soon(self._pump_stderr)
        tg.start_soon(self._watch, read_writer)

    async def _watch(self, read_writer: Any) -> None:
        """When the server process exits, kill what it left behind and end the session."""
        assert self.proc is not None
        await self.proc.wait()
        self.kill()
        with anyio.move_on_after(0.5):  # let the last messages through
            while self.proc.stdout is not None and not self.proc.stdout.at_eof():
                await anyio.sleep(0.01)
        await read_writer.aclose()

    async def _pump_stdin(self, write_reader: Any) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        stdin = self.proc.stdin
        try:
            async for message in write_reader:
                msg = message.message
                if isinstance(msg, mcp_types.JSONRPCRequest):
                    self._pending[msg.id] = msg.method
                stdin.write(encode(message))
                await stdin.drain()
        except (ConnectionError, OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    async def _pump_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        with contextlib.suppress(ConnectionError, OSError):
            while chunk := await self.proc.stderr.read(65536):
                keep_tail(self.stderr_tail, chunk)

    async def _pump_stdout(self, read_writer: Any) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        stdout = self.proc.stdout
        line = bytearray()
        dropped = 0
        tail = bytearray()
        try:
            while chunk := await stdout.read(262144):
                start = 0
                while start < len(chunk):
                    newline = chunk.find(b"\n", start)
                    end = len(chunk) if newline < 0 else newline
                    piece = chunk[start:end]
                    room = self.line_limit - len(line)
                    if len(piece) <= room and not dropped:
                        line += piece
                    else:
                        line += piece[: max(room, 0)]
                        dropped += len(piece) - max(room, 0)
                        tail += piece[-512:]
                        del tail[:-512]
                    if newline < 0:
                        break
                    start = newline + 1
                    if dropped:
                        item = self._salvage(bytes(line), bytes(tail), len(line) + dropped)
                    else:
                        item = self._parse(bytes(line))
                    line.clear()
                    tail.clear()
                    dropped = 0
                    if item is None:
                        continue
                    if isinstance(item, str):
                        self.problem = item
                        self.kill()
                        return
                    await read_writer.send(item)
        except (ConnectionError, OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    def _parse(self, raw: bytes) -> SessionMessage | str | None:
        message = decode(raw)
        if message is None or isinstance(message, str):
            return message
        if isinstance(message, (mcp_types.JSONRPCResponse, mcp_types.JSONRPCError)):
            self._pending.pop(message.id, None)
        return SessionMessage(message)

    def _salvage(self, head: bytes, tail: bytes, size: int) -> SessionMessage | str:
        """An over-long line: answer its request with the start of its text and a marker."""
        request_id = self._guess_id(head, tail)
        if request_id is None:
            return f"wrote a {size}-byte message to stdout (limit {self.line_limit}) that answers no pending request"
        method = self._pending.pop(request_id)
        marker = truncation_marker(self.output_limit, size)
        if method == "tools/call":
            text = text_prefix(head.decode(errors="ignore"), self.output_limit)
            result = {
                "content": [{"type": "text", "text": text + marker}],
                "isError": False,
                "_meta": {TRUNCATED_META: size},
            }
            message = mcp_types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result)
        else:
            message = mcp_types.JSONRPCError(
                jsonrpc="2.0",
                id=request_id,
                error=mcp_types.ErrorData(
                    code=mcp_types.INTERNAL_ERROR, message=f"{method} response too large:{marker}"
                ),
            )
        return SessionMessage(message)

    def _guess_id(self, head: bytes, tail: bytes) -> Any:
        if len(self._pending) == 1:
            return next(iter(self._pending))
        for pattern, text in (
            (rb'^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d+|"[^"]*")', head),
            (rb'"id"\s*:\s*(-?\d+|"[^"]*")\s*\}\s*$', tail),
        ):
            match = re.search(pattern, text)
            if match:
                value = json.loads(match.group(1))
                if value in self._pending:
                    return value
        return None


def text_prefix(head: str, limit: int) -> str:
    """The decoded start of the first ``"text"`` string in a cut JSON message."""
    at = head.find('"text"')
    if at < 0:
        return ""
    quote = head.find('"', head.find(":", at) + 1)
    body = head[quote + 1 :]
    end = re.search(r'(?<!\\)(?:\\\\)*"', body)
    if end:
        body = body[: end.end() - 1]
    for cut in range(min(len(body), 8)):  # drop a trailing partial escape
        try:
            text = json.loads('"' + body[: len(body) - cut] + '"')
            break
        except ValueError:
            continue
    else:
        text = ""
    return text.encode()[:limit].decode(errors="ignore")
