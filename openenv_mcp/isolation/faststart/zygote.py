"""The fork servers (zygotes) of fast sandboxed starts (see :mod:`openenv_mcp.isolation.faststart.template`): starting one, asking it for a child.

A :class:`Zygote` is one running fork server and the socket to it; :func:`zygote_for` keeps one per
sandbox template in this process (restarting one that died, not retrying one that could not start
for :data:`RETRY_AFTER` seconds), and :func:`shared_processes` names the processes they share.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from openenv_mcp.errors import BoundaryError

__all__ = [
    "RETRY_AFTER",
    "Zygote",
    "close_zygotes",
    "shared_processes",
    "zygote_count",
    "zygote_for",
    "zygote_pids",
]

log = logging.getLogger("openenv_mcp.isolation.faststart.template")

START_TIMEOUT = 30.0


async def _receive(sock: socket.socket, size: int) -> dict[str, Any]:
    """The zygote's next JSON message on ``sock`` (``{}`` when none came within START_TIMEOUT or the
    socket closed; ``{"error": ...}`` when it is not JSON)."""
    try:
        async with asyncio.timeout(START_TIMEOUT):
            data = await asyncio.get_running_loop().sock_recv(sock, size)
    except (TimeoutError, OSError):
        data = b""
    try:
        return json.loads(data) if data else {}
    except ValueError:
        return {"error": f"it wrote {data[:100]!r}"}


class Zygote:
    """One running fork server and the socket to it. Usable from any event loop of the process (the socket
    is not bound to one). It is detached (not a descendant of this process: it is shared by episodes, none
    of which owns it) and lives as long as its socket: when this process closes it or dies, the zygote
    exits, and every child it forked dies with it (parent-death signals)."""

    def __init__(self, command: list[str], env: dict[str, str], module: str) -> None:
        self.command, self.env, self.module = command, env, module
        self.proc: subprocess.Popen[bytes] | None = None
        self.control: socket.socket | None = None
        self.pid: int | None = None
        self.error: str | None = None
        self.ready = threading.Event()
        self._lock = threading.Lock()
        self._starting = False

    @property
    def alive(self) -> bool:
        """Its socket is open at both ends (the zygote never writes after ``ready``: anything readable
        there, or a hang-up, means it is gone). Safe against pid reuse."""
        control = self.control
        if control is None:
            return False
        poller = select.poll()
        poller.register(control.fileno(), select.POLLIN | select.POLLHUP | select.POLLERR)
        return not poller.poll(0)

    async def ensure(self) -> None:
        """Start the zygote once (concurrent callers, from any loop, wait for the same start)."""
        with self._lock:
            first = not self._starting
            self._starting = True
        if first:
            try:
                await self._start()
            except BoundaryError as e:
                self.error = str(e)
                raise
            finally:
                self.ready.set()
        while not self.ready.is_set():
            await asyncio.sleep(0.01)
        if self.error is not None:
            raise BoundaryError(self.error)

    async def _start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-S", "-I", "-c", _DETACH, *self.command, str(theirs.fileno()), self.module],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=self.env,
                cwd="/",
                start_new_session=True,
                pass_fds=(theirs.fileno(),),
            )
        except OSError as e:
            ours.close()
            raise BoundaryError(f"the fast-start zygote of {self.module} could not start: {e}") from e
        finally:
            theirs.close()
        ours.setblocking(False)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)  # the detaching parent exits at once
        message = await _receive(ours, 65536)
        if "ready" not in message:
            self.kill()
            ours.close()
            why = message.get("error") or self._stderr() or "it exited before it was ready"
            raise BoundaryError(f"the fast-start zygote of {self.module} could not start: {why}")
        self.control, self.pid = ours, int(message["ready"])
        if self.proc.stderr is not None:
            self.proc.stderr.close()  # nothing more comes there: children write to their own pipes

    def _stderr(self) -> str:
        if self.proc is None or self.proc.stderr is None:
            return ""
        os.set_blocking(self.proc.stderr.fileno(), False)
        try:
            return (self.proc.stderr.read(4000) or b"").decode(errors="replace").strip()
        except OSError:
            return ""
        finally:
            self.proc.stderr.close()

    def kill(self) -> None:
        if self.pid is not None and self.alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)

    async def fork(self, config: dict[str, Any], fds: list[int]) -> tuple[int, socket.socket]:
        """Ask for one child: ``(its pid on the host, the socket its exit status comes on)``."""
        control = self.control
        if control is None or not self.alive:
            raise BoundaryError(f"the fast-start zygote of {self.module} is not running")
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        mine.setblocking(False)
        try:
            data = json.dumps(config).encode()
            for _ in range(2000):
                try:
                    socket.send_fds(control, [data], [theirs.fileno(), *fds])
                    break
                except BlockingIOError:
                    await asyncio.sleep(0.005)
            else:
                raise BoundaryError(f"the fast-start zygote of {self.module} does not take requests")
        except OSError as e:
            mine.close()
            raise BoundaryError(f"the fast-start zygote of {self.module} died ({e.strerror or e})") from e
        except BaseException:
            mine.close()
            raise
        finally:
            theirs.close()
        try:
            answer = await _receive(mine, 4096)
        except BaseException:  # cancelled (the episode is closing): closing our end makes the zygote kill it
            mine.close()
            raise
        if "pid" not in answer:
            mine.close()
            why = answer.get("error") or "it died"
            raise BoundaryError(f"the fast-start zygote of {self.module} could not fork a server: {why}")
        return int(answer["pid"]), mine

    def close(self) -> None:
        if self.control is not None:
            self.control.close()
            self.control = None
        self.kill()


_DETACH = "import os, sys\nif os.fork():\n    os._exit(0)\nos.execv(sys.argv[1], sys.argv[1:])"
"""Started in between: forks the zygote's bubblewrap and exits, so the zygote is no descendant of ours."""

_ZYGOTES: dict[tuple[str, ...], Zygote] = {}
_ZYGOTES_LOCK = threading.Lock()
_FAILED: dict[tuple[str, ...], tuple[float, str]] = {}
RETRY_AFTER = 60.0
"""Seconds a zygote that could not start is not tried again (episodes start the ordinary way meanwhile)."""


def zygote_count() -> int:
    """Zygotes running in this process (tests and benchmarks)."""
    return sum(1 for z in list(_ZYGOTES.values()) if z.alive)


def zygote_pids() -> list[int]:
    """The host pids of this process's running zygotes (tests)."""
    return [z.pid for z in list(_ZYGOTES.values()) if z.alive and z.pid is not None]


def shared_processes() -> set[int]:
    """Host pids of this process's running zygotes and of the ``bwrap`` above each: processes shared by the
    episodes of a server, owned by none (a check counting what an episode left behind leaves these out;
    the children forked for an episode are not among them)."""
    out: set[int] = set()
    for z in list(_ZYGOTES.values()):
        if not z.alive or z.pid is None:
            continue
        out.add(z.pid)
        bwrap = os.path.realpath(z.command[0])
        pid = _parent(z.pid)
        while pid > 1 and pid != os.getpid():
            try:
                if os.readlink(f"/proc/{pid}/exe") != bwrap:
                    break
            except OSError:
                break
            out.add(pid)
            pid = _parent(pid)
    return out


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def close_zygotes() -> None:
    """Stop every zygote (their running children die with them)."""
    with _ZYGOTES_LOCK:
        zygotes = list(_ZYGOTES.values())
        _ZYGOTES.clear()
    for zygote in zygotes:
        zygote.close()


atexit.register(close_zygotes)  # the registry owns the zygotes' sockets: close them, not the garbage collector


async def zygote_for(command: list[str], env: dict[str, str], module: str) -> Zygote:
    """The running zygote for a template, (re)started if it died."""
    key = (*command, module, *sorted(f"{k}={v}" for k, v in env.items()))
    with _ZYGOTES_LOCK:
        failed = _FAILED.get(key)
        if failed is not None and time.monotonic() - failed[0] < RETRY_AFTER:
            raise BoundaryError(failed[1])
        zygote = _ZYGOTES.get(key)
        if zygote is not None and zygote.ready.is_set() and not zygote.alive:
            if zygote.error is None:
                log.warning("the fast-start zygote of %s (pid %s) died; starting a new one", module, zygote.pid)
            zygote.close()
            zygote = None
        if zygote is None:
            zygote = _ZYGOTES[key] = Zygote(command, env, module)
    try:
        await zygote.ensure()
    except BoundaryError as e:
        with _ZYGOTES_LOCK:
            if _ZYGOTES.get(key) is zygote:
                del _ZYGOTES[key]
                _FAILED[key] = (time.monotonic(), str(e))
                log.warning(
                    "%s; sandboxed servers of %s start the ordinary way (next try in %g s)", e, module, RETRY_AFTER
                )
        raise
    return zygote
