"""An episode's tool server forked by its zygote (see :mod:`openenv_mcp.isolation.faststart.template`): :class:`ZygoteProcess`.

The child gets the episode's workspace as a detached bind mount (:func:`clone_mount`) and the
server's cgroup (:func:`open_procs`) with its stdio pipes; its exit status comes on its own socket
from the zygote (:class:`ForkedChild`). When no zygote can start, the server starts the ordinary way.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import signal
import socket
from typing import Any

from openenv_mcp.errors import BoundaryError
from openenv_mcp.isolation.faststart.zygote import zygote_for
from openenv_mcp.isolation.host.launch import Launch
from openenv_mcp.isolation.host.proctree import kill_uid
from openenv_mcp.isolation.transport.stdio import StdioProcess

__all__ = ["ForkedChild", "ZygoteProcess", "clone_mount", "open_procs"]


_libc = ctypes.CDLL(None, use_errno=True)
SYS_OPEN_TREE, OPEN_TREE_CLONE, AT_SYMLINK_NOFOLLOW = 428, 0x1, 0x100


def clone_mount(path: str) -> int:
    """A detached bind mount of the folder ``path`` (``open_tree(OPEN_TREE_CLONE)``): the one thing of the
    host's file tree a forked child attaches (at ``/workspace``); the zygote never sees the host's folders."""
    if not os.path.isdir(path) or os.path.islink(path):
        raise BoundaryError(f"workspace {path} is not a folder")
    flags = OPEN_TREE_CLONE | os.O_CLOEXEC | AT_SYMLINK_NOFOLLOW
    fd = _libc.syscall(SYS_OPEN_TREE, -100, path.encode(), flags)
    if fd < 0:
        code = ctypes.get_errno()
        raise BoundaryError(f"could not clone the workspace mount {path}: {os.strerror(code)}")
    return fd


def open_procs(path: str) -> int:
    """The server's cgroup's ``cgroup.procs`` opened for writing, for the forked child to join through it."""
    try:
        return os.open(path, os.O_WRONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError as e:
        raise BoundaryError(f"could not open the server's cgroup {path}: {e.strerror}") from e


class ForkedChild:
    """What :class:`StdioProcess` needs of an ``asyncio.subprocess.Process``, for a forked child."""

    def __init__(self, pid: int, report: socket.socket) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self.stdin: asyncio.StreamWriter | None = None
        self.stdout: asyncio.StreamReader | None = None
        self.stderr: asyncio.StreamReader | None = None
        self._report = report
        self._transports: list[asyncio.BaseTransport] = []
        self._exited = asyncio.get_running_loop().create_future()
        self._watcher = asyncio.ensure_future(self._watch())
        self._transport = self  # StdioProcess.stop() closes it

    async def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        code = -9  # the zygote died: the child died with it (parent-death signals)
        with contextlib.suppress(OSError):
            while True:
                data = await loop.sock_recv(self._report, 4096)
                if not data:
                    break
                message = json.loads(data)
                if "exit" in message:
                    code = os.waitstatus_to_exitcode(int(message["exit"]))
                    if code > 128:  # A and B pass a signal on as 128 + N (as bwrap does)
                        code = 128 - code
                    break
        self._report.close()
        self.returncode = code
        if not self._exited.done():
            self._exited.set_result(code)

    async def wait(self) -> int:
        return await asyncio.shield(self._exited)

    def close(self) -> None:
        for transport in self._transports:
            transport.close()
        if self.returncode is None:
            self._watcher.cancel()
            # off the event loop before it closes (the watcher's own cleanup would run later, when the
            # number may belong to a new socket or pipe, and unwatch that one instead)
            with contextlib.suppress(RuntimeError, ValueError, OSError):
                asyncio.get_running_loop().remove_reader(self._report.fileno())
            self._report.close()


class ZygoteProcess(StdioProcess):
    """A :class:`StdioProcess` whose server is forked by a zygote (falls back to ``plain`` when none can start)."""

    def __init__(self, name: str, plain: Any, zygote: tuple[list[str], dict[str, str], str], child: dict[str, Any],
                 workspace: str, line_limit: int, output_limit: int, kill_uid: bool = False) -> None:  # fmt: skip
        super().__init__(name, Launch([], {}, workspace, child["uid"], []), line_limit, output_limit, kill_uid)
        self.plain = plain
        self.template, self.child, self.workspace = zygote, child, workspace
        self.forked = False

    def kill(self) -> None:
        """SIGKILL the child's first process: its parent-death signal kills the PID namespace's init, and with
        it the kernel kills every process of the namespace (no ``/proc`` scan); then the uid, if asked."""
        if not self.forked:
            super().kill()
            return
        proc = self.proc
        if proc is None:
            return
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(proc.pid, signal.SIGKILL)
        if self.kill_uid and self.child["uid"] is not None:
            kill_uid(self.child["uid"])

    async def spawn(self) -> None:
        command, env, module = self.template
        try:
            zygote = await zygote_for(command, env, module)
        except BoundaryError:
            self.launch = self.plain()
            await super().spawn()
            return
        loop = asyncio.get_running_loop()
        stdin_r, stdin_w = os.pipe2(os.O_CLOEXEC)
        stdout_r, stdout_w = os.pipe2(os.O_CLOEXEC)
        stderr_r, stderr_w = os.pipe2(os.O_CLOEXEC)
        sent = [stdin_r, stdout_w, stderr_w]
        try:
            sent.append(clone_mount(self.workspace))
            if self.child.get("cgroup_path"):  # the child joins it first, as the launcher does
                sent.append(open_procs(self.child["cgroup_path"]))
            pid, report = await zygote.fork(self.child, sent)
        except BaseException:
            for fd in (stdin_w, stdout_r, stderr_r):
                os.close(fd)
            raise
        finally:
            for fd in sent:
                os.close(fd)
        proc = ForkedChild(pid, report)
        self.proc, self.forked = proc, True  # type: ignore[assignment]
        files = [open(fd, mode, 0) for fd, mode in ((stdout_r, "rb"), (stderr_r, "rb"), (stdin_w, "wb"))]  # noqa: SIM115
        try:
            out = asyncio.StreamReader(limit=2**20, loop=loop)
            err = asyncio.StreamReader(limit=2**20, loop=loop)
            t_out, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(out, loop=loop), files[0])
            proc._transports.append(t_out)
            t_err, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(err, loop=loop), files[1])
            proc._transports.append(t_err)
            t_in, p_in = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, files[2])
            proc._transports.append(t_in)
        except BaseException:  # cancelled half-way (the episode is closing): the child must not outlive it
            self.kill()
            proc.close()
            for file in files:
                file.close()
            raise
        proc.stdin = asyncio.StreamWriter(t_in, p_in, None, loop)  # type: ignore[arg-type]
        proc.stdout, proc.stderr = out, err
