"""One container run of the docker boundary: created, attached, started; its transports, exit and removal.

A fresh :class:`Container` per server start (the connection restarts by discarding its session host,
which removes the container). Its stdio transport splits the attach socket's multiplexed frames into
stdout (JSON-RPC lines, :mod:`openenv_mcp.isolation.transport.jsonlines`) and stderr (kept for error messages); its HTTP transport
waits for the image's entrypoint to serve ``/mcp`` and speaks streamable HTTP to it.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import AsyncIterator
from typing import Any, Protocol

import anyio
import anyio.abc
import anyio.to_thread
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp.shared.message import SessionMessage

from openenv_mcp.definitions.spec import ToolServerSpec
from openenv_mcp.errors import BoundaryError
from openenv_mcp.isolation.base import ServerContext
from openenv_mcp.isolation.containers.engine import (
    INTERNAL_NETWORK,
    docker_client,
    ensure_internal_network,
    reap_once,
    remove,
    remove_in_background,
)
from openenv_mcp.isolation.transport.jsonlines import LINE_SLACK, decode, encode, keep_tail, pumped

__all__ = ["Container", "ContainerOwner"]


class ContainerOwner(Protocol):
    """What a :class:`Container` needs of its connection (:class:`openenv_mcp.isolation.boundaries.docker.DockerConnection`)."""

    spec: ToolServerSpec
    ctx: ServerContext
    closed: bool

    @property
    def image(self) -> str: ...

    def prepare_workspace(self) -> None: ...

    def config(self, network: str) -> dict[str, Any]: ...


class Container:
    """One container run: created, attached, started; its stderr, exit and removal.

    A fresh one per server start (:class:`DockerConnection` restarts by
    discarding its session host, which removes the container).
    """

    def __init__(self, conn: ContainerOwner) -> None:
        self.conn = conn
        self.spec = conn.spec
        self.handle: Any = None
        self.stderr_tail = bytearray()
        self.exit: str | None = None
        self.problem: str | None = None

    # -- messages
    def why(self) -> str | None:
        return self.problem or self.exit

    def stderr_text(self) -> str:
        return self.stderr_tail.decode(errors="replace").strip()[-500:]

    # -- blocking Docker API calls (run in threads)
    def create(self, network: str) -> None:
        import docker.errors

        client = docker_client()
        reap_once()
        self.conn.prepare_workspace()
        try:
            self.handle = client.containers.create(**self.conn.config(network))
        except docker.errors.ImageNotFound:
            raise BoundaryError(
                f"tool server {self.spec.name!r}: image {self.conn.image!r} is not on this Docker engine (images "
                "are never pulled implicitly): build it, e.g. `docker build -f docker/tools.Dockerfile "
                f"-t openenv-mcp/tools .`, or `docker pull {self.conn.image}`"
            ) from None
        except docker.errors.APIError as e:
            raise BoundaryError(
                f"tool server {self.spec.name!r}: cannot create a container from {self.conn.image!r}: "
                f"{e.explanation or e}"
            ) from None

    def attach(self) -> socket.socket:
        wrapped = self.handle.attach_socket(params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
        raw = getattr(wrapped, "_sock", wrapped)
        sock = raw.dup()
        with contextlib.suppress(Exception):
            wrapped.close()
        return sock

    def start(self) -> None:
        import docker.errors

        try:
            self.handle.start()
        except docker.errors.APIError as e:
            raise BoundaryError(
                f"tool server {self.spec.name!r}: container from {self.conn.image!r} did not start: "
                f"{e.explanation or e}"
            ) from None

    def finish(self) -> None:
        """Record why the container ended, then remove it (killing it if running)."""
        import docker.errors

        handle = self.handle
        if handle is None:
            return
        with contextlib.suppress(docker.errors.APIError, docker.errors.NotFound):
            handle.reload()
            state = handle.attrs.get("State", {})
            if state.get("OOMKilled"):
                self.exit = f"was killed at its memory limit ({self.spec.limits.memory_mb} MB)"
            elif not state.get("Running") and not str(state.get("FinishedAt", "0001")).startswith("0001"):
                code = state.get("ExitCode")
                self.exit = "was killed by SIGKILL" if code == 137 else f"exited with code {code}"
        if self.conn.closed:
            remove_in_background(handle)  # the episode is over: keep its close off the reset path
        elif not remove(handle):  # a restart: the old server must be gone before the new one starts
            remove_in_background(handle)  # never left running: go on trying

    # -- the stdio transport as the SDK expects it
    @contextlib.asynccontextmanager
    async def stdio(self) -> AsyncIterator[tuple[Any, Any]]:
        network = "none" if self.spec.network == "none" else "bridge"
        stream: anyio.abc.ByteStream | None = None
        try:
            await anyio.to_thread.run_sync(self.create, network)
            sock = await anyio.to_thread.run_sync(self.attach)
            if sock.family == socket.AF_UNIX:
                stream = await anyio.abc.UNIXSocketStream.from_socket(sock)
            else:
                stream = await anyio.abc.SocketStream.from_socket(sock)
            await anyio.to_thread.run_sync(self.start)
            attached = stream

            def start_pumps(tg: anyio.abc.TaskGroup, read_writer: Any, write_reader: Any) -> None:
                tg.start_soon(self._pump_out, attached, read_writer)
                tg.start_soon(self._pump_in, attached, write_reader)

            async with pumped(start_pumps) as streams:
                yield streams
        finally:
            with anyio.CancelScope(shield=True):
                if stream is not None:
                    with contextlib.suppress(Exception):
                        await stream.aclose()
                await anyio.to_thread.run_sync(self.finish)

    async def _pump_in(self, stream: anyio.abc.ByteStream, write_reader: Any) -> None:
        try:
            async for message in write_reader:
                await stream.send(encode(message))
        except (OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    async def _pump_out(self, stream: anyio.abc.ByteStream, read_writer: Any) -> None:
        """Split Docker's multiplexed attach frames; stdout lines become messages.

        A line longer than ``2 * limits.output_bytes + 64 KiB`` or one that is
        not JSON-RPC ends the session (:attr:`problem` says why); the container
        pays for huge outputs, not the environment server.
        """
        limit = 2 * self.spec.limits.output_bytes + LINE_SLACK
        buffered = BufferedByteReceiveStream(stream)
        line = bytearray()
        try:
            while True:
                header = await buffered.receive_exactly(8)
                size = int.from_bytes(header[4:8], "big")
                payload = await buffered.receive_exactly(size) if size else b""
                if header[0] == 2:
                    keep_tail(self.stderr_tail, payload)
                    continue
                line += payload
                while (end := line.find(b"\n")) >= 0:
                    raw = bytes(line[:end])
                    del line[: end + 1]
                    message = decode(raw)
                    if message is None:
                        continue
                    if isinstance(message, str):
                        self.problem = message
                        return
                    await read_writer.send(SessionMessage(message))
                if len(line) > limit:
                    self.problem = f"wrote a message over {limit} bytes to stdout (limit: 2 x output_bytes + 64 KiB)"
                    return
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        finally:
            await read_writer.aclose()  # the session sees the end; its host removes the container

    # -- HTTP entrypoints
    @contextlib.asynccontextmanager
    async def http(self) -> AsyncIterator[tuple[Any, Any]]:
        from mcp.client.streamable_http import streamable_http_client

        internal = self.spec.network == "none"
        network = INTERNAL_NETWORK if internal else "bridge"
        try:
            if internal:
                await anyio.to_thread.run_sync(ensure_internal_network)
            await anyio.to_thread.run_sync(self.create, network)
            await anyio.to_thread.run_sync(self.start)
            await anyio.to_thread.run_sync(self.handle.reload)
            ip = self.handle.attrs["NetworkSettings"]["Networks"][network]["IPAddress"]
            port = int(self.conn.ctx.env.get("PORT", "8000"))
            await self._wait_port(ip, port)
            async with streamable_http_client(f"http://{ip}:{port}/mcp") as streams:
                yield streams[0], streams[1]
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.finish)

    async def _wait_port(self, ip: str, port: int) -> None:
        deadline = time.monotonic() + self.spec.limits.start_timeout
        while True:
            try:
                stream = await anyio.connect_tcp(ip, port)
                await stream.aclose()
                return
            except OSError:
                await anyio.to_thread.run_sync(self.handle.reload)
                if self.handle.status not in ("created", "running"):
                    logs = await anyio.to_thread.run_sync(lambda: self.handle.logs(tail=20))
                    self.stderr_tail += logs
                    raise BoundaryError(
                        f"tool server {self.spec.name!r}: the container stopped before serving HTTP on port {port}; "
                        f"output: {self.stderr_text()}"
                    ) from None
                if time.monotonic() > deadline:
                    raise BoundaryError(
                        f"tool server {self.spec.name!r}: nothing listens on port {port} in the container"
                    ) from None
                await anyio.sleep(0.05)
