"""Fast sandboxed starts: one fork server (zygote) per sandboxed tool server, forking each episode's server.

A sandboxed tool server normally costs a ``bwrap`` and a Python interpreter importing the
server, per episode. With fast starts, the first episode starts a *zygote* (:mod:`._zygote`)
inside a template of that server's sandbox (the same ``bwrap`` command minus the episode's
workspace and uid: same read-only host, masks, binds, network policy); it imports the tool
server once. Every episode then gets a child forked from it, which makes its own mount, PID,
IPC, UTS, cgroup (and network) namespaces, mounts the episode's workspace at ``/workspace``
and fresh ``/tmp``, ``/var/tmp``, ``/run``, ``/dev/shm``, ``/dev/pts`` and ``/proc``, sets the
server's limits, drops every capability and becomes the episode's unprivileged uid (the one
leased by :data:`~.process.UIDS`, whose guard kills all its processes at close) before any
episode code runs. What episodes share is read-only: the host files the template shows and
the imported code's pages (copy-on-write). See ``docs/env-file.md``, "Fast starts".

Used only where it changes nothing the boundary guarantees: ``isolation = "sandbox"``, the
environment server running as root, a command ``python -m openenv_mcp.tool_servers.<name>``
(the framework's own servers: their import runs as root in the zygote, so third-party code is
never imported there), no ``PYTHON*`` variables, ``fast_start`` not turned off (env file) and
``OPENENV_MCP_FAST_START`` not ``0``. A zygote that cannot start or dies is replaced on the next
episode; if it cannot be started the episode starts the ordinary way (a warning says why).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
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

from ..errors import BoundaryError
from .launch import Launch, rlimits_for
from .proctree import kill_uid
from .stdio import StdioProcess

__all__ = [
    "ZYGOTE_CAPS",
    "Zygote",
    "ZygoteProcess",
    "close_zygotes",
    "fast_starts_enabled",
    "shared_processes",
    "zygote_count",
]

log = logging.getLogger("openenv_mcp.isolation.zygote")

ZYGOTE_SCRIPT = str(Path(__file__).with_name("_zygote.py"))
ZYGOTE_CAPS = "CAP_SYS_ADMIN,CAP_SETUID,CAP_SETGID,CAP_SETPCAP,CAP_NET_ADMIN"
"""What the zygote keeps (to build a child's namespaces and drop it to its uid); children keep nothing."""
MODULE_PREFIX = "openenv_mcp.tool_servers."
START_TIMEOUT = 30.0


def fast_starts_enabled() -> bool:
    """``OPENENV_MCP_FAST_START=0`` turns fast starts off for the whole process."""
    return os.environ.get("OPENENV_MCP_FAST_START", "1").strip().lower() not in ("0", "false", "no", "off")


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
        try:
            async with asyncio.timeout(START_TIMEOUT):
                first = await asyncio.get_running_loop().sock_recv(ours, 65536)
        except (TimeoutError, OSError):
            first = b""
        try:
            message = json.loads(first) if first else {}
        except ValueError:
            message = {"error": f"it wrote {first[:100]!r}"}
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
        finally:
            theirs.close()
        try:
            async with asyncio.timeout(START_TIMEOUT):
                reply = await asyncio.get_running_loop().sock_recv(mine, 4096)
        except (TimeoutError, OSError):
            reply = b""
        except BaseException:  # cancelled (the episode is closing): closing our end makes the zygote kill it
            mine.close()
            raise
        answer = json.loads(reply) if reply else {}
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


class _Proc:
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
        proc = _Proc(pid, report)
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


_TEMPLATES: dict[tuple[int, tuple[str, ...]], tuple[Any, list[str] | None]] = {}


def template_for(conn: Any, argv: list[str]) -> list[str] | None:
    """The zygote's sandbox: the server's own ``bwrap`` command without the episode's workspace, uid
    (``setpriv``) and PID namespace (each child makes its own), keeping the capabilities a child's
    set-up needs (:data:`ZYGOTE_CAPS`). The same for every episode of a spec, so built once per spec."""
    key = (id(conn.spec), tuple(argv))
    cached = _TEMPLATES.get(key)
    if cached is not None and cached[0] is conn.spec:
        return cached[1]
    args = conn.bwrap_args(argv)
    template: list[str] | None = None
    try:
        cut = args.index("--remount-ro")
        ws = args.index("--bind", args.index("--hostname"))
        while args[ws + 2] != "/workspace":
            ws = args.index("--bind", ws + 1)
    except (ValueError, IndexError):
        pass
    else:
        head = [a for a in args[:ws] if a not in ("--unshare-pid", "--die-with-parent")]  # its socket ties it to us
        head = [ZYGOTE_CAPS if a == "CAP_SETUID,CAP_SETGID" else a for a in head]
        rest = [a for i, a in enumerate(args[ws + 3 : cut]) if a != "--chdir" and args[ws + 2 + i] != "--chdir"]
        template = [*head, "--dir", "/workspace", *rest, "--remount-ro", "/", "--", sys.executable, "-I"]
    _TEMPLATES[key] = (conn.spec, template)
    return template


def fast_process(conn: Any, argv: list[str], plain: Any, line_limit: int, output_limit: int,
                 kill_uid: bool) -> ZygoteProcess | None:  # fmt: skip
    """A :class:`ZygoteProcess` for a sandbox connection's server, or ``None`` where fast starts do not apply.
    ``plain()`` makes the ordinary :class:`Launch` (used when no zygote can start)."""
    spec = conn.spec
    if not (fast_starts_enabled() and getattr(spec, "fast_start", True) and conn.privileged):
        return None
    if conn.expose is not None or len(argv) < 3 or argv[1] != "-m" or not argv[2].startswith(MODULE_PREFIX):
        return None
    if os.path.realpath(argv[0]) != os.path.realpath(sys.executable):
        return None
    env = conn.child_env(argv[0])
    if any(k.startswith("PYTHON") for k in env):
        return None
    template = template_for(conn, argv)
    if template is None:
        return None
    template = [*template, ZYGOTE_SCRIPT]
    child = {
        "module": argv[2],
        "args": argv[3:],
        "uid": conn.uid,
        "env": env,
        "rlimits": [[w, s, h] for w, (s, h) in rlimits_for(spec, True)],
        "net": spec.network != "host",
        "hostname": "openenv-sandbox",
        "cgroup_path": conn.group(),  # the server's cgroup (see .cgroup), or None where cgroup v2 is unusable
    }
    zygote_env = {k: v for k, v in env.items() if k in ("PATH", "LANG")}
    return ZygoteProcess(
        spec.name,
        plain,
        (template, zygote_env, argv[2]),
        child,
        str(conn.ctx.workspace),
        line_limit,
        output_limit,
        kill_uid,
    )
