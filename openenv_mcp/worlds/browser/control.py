"""The state channel between the grader (the environment server) and an episode's applications.

One Unix socket, ``<workspace>/.world/control.sock``, one JSON object per line each way, one request
per connection:

* ``{"op": "seed", "data": {app: {...}}}`` loads every application's data (once per episode);
* ``{"op": "state"}`` answers ``{"state": {app: {table: [rows]}}}``, the applications' server-side state;
* ``{"op": "ping"}`` answers ``{"ok": true}``.

**Who may talk.** The applications accept a connection only from a process *outside* their sandbox's
PID namespace (its ``SO_PEERCRED`` pid reads 0 inside): the environment server. Nothing inside the
sandbox can seed or read them this way, even with code execution there (the browser side does not
even see the folder: it is an empty one in its mount namespace). The other way round, the grader
**pins** the process that answered the seed (host pid and start time, from ``SO_PEERCRED``): a later
answer from any other process (the applications killed, another listener put at the path) is
refused with :class:`WorldTampered`, which the reward turns into a score of 0.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import struct
from pathlib import Path
from typing import Any

from openenv_mcp.errors import WorldTampered, WorldUnavailable
from openenv_mcp.worlds.browser import CONTROL_SOCKET, WORLD_DIR

__all__ = ["MAX_MESSAGE", "WorldClient", "WorldTampered", "WorldUnavailable", "peer_pid", "serve_control"]

MAX_MESSAGE = 32 * 1024 * 1024
"""Largest line either side reads (a whole state export)."""


def peer_pid(sock: socket.socket) -> int:
    """The peer's pid as this process's PID namespace sees it (0: the peer is outside it)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", raw)[0]


def _start_time(pid: int) -> str:
    """The process's start time (field 22 of ``/proc/PID/stat``): a pid reused later has another."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


# -- the applications' side -----------------------------------------------------------------------
async def serve_control(path: str, handle: Any) -> asyncio.AbstractServer:
    """Serve the state socket at ``path``: ``await handle(request) -> dict`` for each request made
    from outside this PID namespace; anyone else is disconnected unanswered."""

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            sock = writer.get_extra_info("socket")
            if sock is None or peer_pid(sock) != 0:
                return
            line = await reader.readline()
            try:
                request = json.loads(line)
                answer = await handle(request) if isinstance(request, dict) else {"error": "not an object"}
            except Exception as e:  # noqa: BLE001 - the grader gets the reason; the applications go on
                answer = {"error": f"{type(e).__name__}: {e}"}
            writer.write(json.dumps(answer, separators=(",", ":")).encode() + b"\n")
            await writer.drain()
        finally:
            writer.close()

    server = await asyncio.start_unix_server(connection, path, limit=MAX_MESSAGE)
    os.chmod(path, 0o600)
    return server


# -- the grader's side ----------------------------------------------------------------------------
class WorldClient:
    """The grader's handle on one episode's applications (lives in the environment server)."""

    def __init__(self, workspace: Path) -> None:
        self.folder = Path(workspace) / WORLD_DIR
        self.pinned: tuple[int, str] | None = None
        """Host pid and start time of the process that answered the seed."""

    def _connect(self) -> socket.socket:
        # connect through the folder's descriptor: a workspace path may be longer than a socket
        # address can be (108 bytes), /proc/self/fd/N/control.sock never is
        fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(f"/proc/self/fd/{fd}/{CONTROL_SOCKET}")
        except BaseException:
            sock.close()
            raise
        finally:
            os.close(fd)
        return sock

    def _check_peer(self, sock: socket.socket, pin: bool) -> None:
        pid = peer_pid(sock)
        who = (pid, _start_time(pid))
        if pin:
            self.pinned = who
        elif self.pinned is None:
            raise WorldTampered("the applications were never seeded in this episode")
        elif who != self.pinned:
            raise WorldTampered(
                f"the state socket is answered by process {pid}, not by the applications seeded at the "
                f"start of the episode (process {self.pinned[0]}): the applications were restarted or replaced"
            )

    @staticmethod
    def _exchange(sock: socket.socket, request: dict[str, Any]) -> list[bytes]:
        sock.sendall(json.dumps(request).encode() + b"\n")
        chunks: list[bytes] = []
        size = 0
        while not chunks or not chunks[-1].endswith(b"\n"):
            chunk = sock.recv(1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_MESSAGE:
                raise WorldUnavailable(f"the applications answered more than {MAX_MESSAGE} bytes")
            chunks.append(chunk)
        return chunks

    def _request(self, request: dict[str, Any], pin: bool = False) -> dict[str, Any]:
        try:
            sock = self._connect()
        except OSError as e:
            raise WorldUnavailable(f"the applications' state socket in {self.folder} does not answer: {e}") from e
        with sock:
            sock.settimeout(30)
            self._check_peer(sock, pin)
            try:
                chunks = self._exchange(sock, request)
            except OSError as e:
                raise WorldUnavailable(f"the applications closed the state socket without an answer ({e})") from e
        try:
            answer = json.loads(b"".join(chunks))
        except ValueError as e:
            raise WorldUnavailable(f"the applications closed the state socket without an answer ({e})") from e
        if not isinstance(answer, dict) or "error" in answer:
            raise WorldUnavailable(f"the applications refused {request.get('op')!r}: {answer.get('error', answer)}")
        return answer

    async def wait_ready(self, timeout: float = 30.0) -> None:
        """Wait until the applications answer (they start beside the browser)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            try:
                await asyncio.to_thread(self._request, {"op": "ping"}, True)
                return
            except WorldUnavailable:
                if loop.time() > deadline:
                    raise
                await asyncio.sleep(0.02)

    async def seed(self, data: dict[str, Any]) -> None:
        """Load every application's data, and pin the process that took it."""
        await asyncio.to_thread(self._request, {"op": "seed", "data": data}, True)

    async def state(self) -> dict[str, Any]:
        """The applications' server-side state (from the pinned process only)."""
        answer = await asyncio.to_thread(self._request, {"op": "state"})
        return answer["state"]
