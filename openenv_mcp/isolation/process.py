"""Process boundary: a stdio MCP server in any language, as a limited child process.

What the boundary enforces (see ``docs/env-file.md``, "Isolation"):

* **One persistent MCP session** per episode and tool server, through the
  official SDK ``ClientSession`` over our own stdio transport (below).
* **Resource limits** (``setrlimit`` in the child): memory (``RLIMIT_DATA``,
  ``limits.memory_mb``), CPU time (``RLIMIT_CPU``, ``limits.cpu_seconds``),
  open files (``RLIMIT_NOFILE``, ``limits.open_files``), no core dumps.
* **Process count** (``RLIMIT_NPROC``, ``limits.processes``): the kernel
  ignores it for root, so when the environment server runs as root each
  episode's servers run as an unprivileged uid of their own
  (:data:`UID_BASE` + n, no supplementary groups). That also keeps episodes
  from signalling or reading each other. As a non-root user the server runs
  as that user and the process count is not limited (use ``sandbox``).
* **A scrubbed environment**: only the spec's ``env`` and the declared
  ``pass_env`` variables, plus ``PATH`` (the command's folder and the system
  folders), ``HOME`` and ``TMPDIR`` (a private folder per server), ``LANG``
  (``C.UTF-8``).
* **A private workspace** (the episode's; the server's working directory,
  owned by the server's uid) and a private home/tmp folder.
* **Its own session and process group; the whole tree is killed on close**
  (the process group, and every process of the server's uid), and the child
  gets ``PR_SET_PDEATHSIG``: nothing outlives the environment server.
* **Bounded reads**: one stdout message may take at most
  ``2 * limits.output_bytes + 64 KiB``; a longer one is cut, never buffered
  whole, and the call gets the start of its text and a visible marker.
  stderr keeps only its last 4 KiB (shown in error messages).

A server that cannot start, exits, writes something that is not JSON-RPC to
stdout or never answers ``initialize`` raises :class:`BoundaryError` with the
reason (exit status, stderr tail, offending line); the episode turns it into
an error result and the next call starts the server again.

What it does not do: hide the host's files or network (every world-readable
file can be read, loopback reached). Use ``sandbox`` for that.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import re
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp_types
from mcp.shared.message import SessionMessage

from ..core.spec import ToolServerSpec
from ..core.workspace import owner_tag, remove_tree
from ..errors import BoundaryError, ConfigError
from . import cgroup
from .base import ServerContext
from .cgroup import Group
from .mcpsession import TRUNCATED_META, McpConnection, SessionHost, describe, truncation_marker
from .runtime import runtime_paths, too_wide

__all__ = ["SYSTEM_PATH", "UID_BASE", "ProcessConnection", "StdioProcess", "Launch"]

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""System folders on every server's ``PATH`` (after the command's own folder)."""

UID_BASE = int(os.environ.get("OPENENV_MCP_UID_BASE", "1640000000"))
"""First uid given to episodes when running as root (``$OPENENV_MCP_UID_BASE``)."""

STDERR_TAIL = 4096
LINE_SLACK = 65536


# -- uids ----------------------------------------------------------------------------
_GUARD = """import os, sys
sys.stdin.buffer.read()
os.setgroups([]); os.setgid({uid}); os.setuid({uid})
try:
    os.kill(-1, 9)
except OSError:
    pass
"""


LEASE_DIRS = ("/run/openenv-mcp/uids", os.path.join(tempfile.gettempdir(), "openenv-mcp-uids"))
"""Where uid leases live: one lock file per uid in use on this host, ``flock``-ed for the episode's life."""
UID_SPAN = 10_000_000


def lease_dir() -> Path:
    """The host-wide folder of uid leases (``/run/openenv-mcp/uids``, else under the temp folder)."""
    for folder in LEASE_DIRS:
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            if os.access(folder, os.W_OK):
                return Path(folder)
        except OSError:
            continue
    raise BoundaryError(f"no writable folder for uid leases (tried {', '.join(LEASE_DIRS)})")


def lease_uid(start: int | None = None) -> tuple[int, int]:
    """Take a uid no other episode on this host holds: ``(uid, fd)``, the ``fd`` holding its lease.

    The lease is an exclusive ``flock`` on ``<lease_dir>/<uid>``: it lasts while the fd is open (in
    this process or in the uid's guard), so a crashed server's leases free themselves."""
    folder = lease_dir()
    offset = secrets.randbelow(UID_SPAN) if start is None else start
    for i in range(4096):
        uid = UID_BASE + (offset + i) % UID_SPAN
        fd = os.open(folder / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.fstat(fd).st_ino != os.stat(folder / str(uid), follow_symlinks=False).st_ino:
                raise OSError("the lease file was swept while we locked it")
        except OSError:
            os.close(fd)
            continue
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} {_start_time(os.getpid())}\n".encode())
        return uid, fd
    raise BoundaryError(f"no free episode uid on this host (4096 leases in {folder} are held)")


def _start_time(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return "?"


class _Uids:
    """Unprivileged uids, one per episode (shared by that episode's servers), unique on the host.

    Each uid is leased host-wide (:func:`lease_uid`), so two environment servers never
    hand out the same one. Each uid in use has a *guard*: a tiny root process that
    waits on a pipe from us and, when it closes (the episode ended, or the environment
    server died, even by SIGKILL), kills every process of the uid. That is what catches
    double-forked, ``setsid`` descendants that ``PR_SET_PDEATHSIG`` (which only reaches
    the direct child) would miss. The guard holds the uid's lease too, so the uid is
    not handed out again before its processes are gone.
    """

    def __init__(self) -> None:
        self._by_episode: dict[str, tuple[int, int]] = {}
        self._guards: dict[int, subprocess.Popen[bytes]] = {}
        self._leases: dict[int, int] = {}
        self._lock = threading.Lock()

    def acquire(self, episode: str) -> int | None:
        if os.geteuid() != 0:
            return None
        with self._lock:
            uid, refs = self._by_episode.get(episode, (0, 0))
            if not refs:
                uid, fd = lease_uid()
                self._leases[uid] = fd
                self._guards[uid] = subprocess.Popen(
                    [sys.executable, "-S", "-I", "-c", _GUARD.format(uid=uid)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                    env={},
                    pass_fds=(fd,),
                )
            self._by_episode[episode] = (uid, refs + 1)
            return uid

    def exclusive(self, episode: str) -> bool:
        """Whether one server alone runs as the episode's uid (then a restart may kill the uid)."""
        return self._by_episode.get(episode, (0, 0))[1] == 1

    def release(self, episode: str) -> None:
        """Drop one reference; the last one kills every process of the uid (via its guard)."""
        with self._lock:
            uid, refs = self._by_episode.get(episode, (0, 0))
            if refs > 1:
                self._by_episode[episode] = (uid, refs - 1)
                return
            self._by_episode.pop(episode, None)
            guard = self._guards.pop(uid, None)
            fd = self._leases.pop(uid, None)
        if guard is not None:
            with contextlib.suppress(OSError):
                guard.stdin.close()  # type: ignore[union-attr]
            try:
                guard.wait(timeout=5)
            except subprocess.TimeoutExpired:
                guard.kill()
                guard.wait()
                kill_uid(uid)
        if fd is not None:
            os.close(fd)  # the guard's copy closed when it exited: the uid is free again


UIDS = _Uids()


def kill_uid(uid: int) -> None:
    """SIGKILL every process running as ``uid`` (atomically, by ``kill(-1)`` as that uid)."""
    kill = shutil.which("kill", path=SYSTEM_PATH) or "/bin/kill"
    with contextlib.suppress(OSError):
        subprocess.run(
            [kill, "-KILL", "-1"],
            user=uid,
            group=uid,
            extra_groups=[],
            env={},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=5,
            check=False,
        )


def descendants(pid: int) -> list[int]:
    """``pid``'s descendants (by parent links in ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def uid_processes(uid: int) -> list[int]:
    """Live (non-zombie) processes whose real uid is ``uid``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("State", "").strip().startswith("Z"):
            continue
        if int(fields.get("Uid", "-1").split()[0]) == uid:
            found.append(int(entry))
    return found


def chown_tree(path: Path, uid: int) -> None:
    """Give ``path`` and everything under it to ``uid`` (links are not followed)."""
    os.chown(path, uid, uid, follow_symlinks=False)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            with contextlib.suppress(OSError):
                os.chown(os.path.join(root, name), uid, uid, follow_symlinks=False)


# -- launching -----------------------------------------------------------------------
_LAUNCHER = """import ctypes, json, os, resource, sys
cfg = json.loads(sys.argv[1])
for which, soft, hard in cfg["rlimits"]:
    resource.setrlimit(which, (soft, hard))
if cfg.get("cgroup"):
    try:
        with open(cfg["cgroup"], "w") as f:
            f.write("0")
    except OSError as e:
        sys.stderr.write("could not join the server's cgroup %s: %s\\n" % (cfg["cgroup"], e.strerror)); os._exit(126)
if cfg["uid"] is not None:
    os.setgroups([]); os.setgid(cfg["uid"]); os.setuid(cfg["uid"])
    if os.getuid() != cfg["uid"] or os.geteuid() != cfg["uid"] or os.getgroups():
        sys.stderr.write("could not drop to uid %d\\n" % cfg["uid"]); os._exit(126)
ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)
if cfg["parent"] and os.getppid() != cfg["parent"]:
    os._exit(1)
try:
    os.execv(sys.argv[2], sys.argv[2:])
except OSError as e:
    sys.stderr.write("could not start %s: %s\\n" % (sys.argv[2], e.strerror)); os._exit(127)
"""
"""Run as root between spawn and the server: limits, drop to the uid (no groups), parent-death
signal, then exec. A separate program rather than ``preexec_fn``/``user=`` (which uvloop rejects)."""


class Launch:
    """Everything needed to spawn one server: argv, environment, cwd, uid, limits."""

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: str,
        uid: int | None,
        rlimits: list[tuple[int, tuple[int, int]]],
        wrap: list[str] | None = None,
        cgroup: str | None = None,
    ) -> None:
        self.argv, self.env, self.cwd, self.uid, self.rlimits = argv, env, cwd, uid, rlimits
        self.wrap = wrap or []
        """A command the launcher runs inside (as root), e.g. a mount namespace exposing the runtime."""
        self.cgroup = cgroup
        """A ``cgroup.procs`` file the launcher joins first (see :mod:`.cgroup`)."""

    def command(self) -> list[str]:
        """The argv actually spawned: the launcher (limits, uid, parent-death signal), then ``argv``."""
        config = {
            "rlimits": [[w, s, h] for w, (s, h) in self.rlimits],
            "uid": self.uid,
            "parent": 0 if self.wrap else os.getpid(),
            "cgroup": self.cgroup,
        }
        return [*self.wrap, sys.executable, "-S", "-I", "-c", _LAUNCHER, json.dumps(config), *self.argv]


def rlimits_for(spec: ToolServerSpec, limit_processes: bool) -> list[tuple[int, tuple[int, int]]]:
    """The ``setrlimit`` calls for ``spec.limits``."""
    limits = spec.limits
    out: list[tuple[int, tuple[int, int]]] = [(resource.RLIMIT_CORE, (0, 0))]
    if limits.memory_mb:
        size = limits.memory_mb * 1024 * 1024
        out.append((resource.RLIMIT_DATA, (size, size)))
    if limits.cpu_seconds:
        out.append((resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1)))
    open_files = getattr(limits, "open_files", None) or 1024
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY:
        open_files = min(open_files, hard)
    out.append((resource.RLIMIT_NOFILE, (open_files, open_files)))
    if limit_processes and limits.processes:
        out.append((resource.RLIMIT_NPROC, (limits.processes, limits.processes)))
    return out


def resolve_executable(name: str, server: str) -> str:
    """``python``/``python3`` -> this interpreter; a bare name -> found on the host's ``PATH``."""
    if name in ("python", "python3"):
        return sys.executable
    if os.sep in name:
        return name
    found = shutil.which(name)
    if found is None:
        raise BoundaryError(f"tool server {server!r} could not start: command {name!r} not found on PATH")
    return found


def reachable_by_others(path: str) -> bool:
    """Whether an unprivileged uid can run ``path``: every folder on its real path
    searchable by others, the file readable and executable by others."""
    real = Path(os.path.realpath(path))
    try:
        if real.stat().st_mode & 0o005 != 0o005:
            return False
        return all(parent.stat().st_mode & 0o001 for parent in real.parents)
    except OSError:
        return False


def command_paths(argv: list[str], base_dir: Path) -> list[str]:
    """Host paths a command needs to run: its program and prefix, absolute paths in it, the
    environment's folder and, for this interpreter, its prefixes, ``sys.path`` and this package."""
    program = os.path.realpath(argv[0])
    prefix = os.path.dirname(os.path.dirname(program))
    paths = [str(base_dir), program, argv[0], *([] if too_wide(prefix) else [prefix])]
    paths += [a for a in argv[1:] if a.startswith("/") and os.path.exists(a)]
    paths += runtime_paths(argv, f"{os.path.dirname(argv[0])}:{SYSTEM_PATH}")
    if argv[0] == sys.executable or program == os.path.realpath(sys.executable):
        paths += [sys.prefix, sys.base_prefix, os.path.realpath(sys.base_prefix), *package_dirs()]
        paths += [p for p in sys.path if p.startswith("/") and os.path.exists(p)]
    out: list[str] = []
    for path in paths:
        if path and os.path.exists(path) and path not in out:
            out.append(path)
    return out


def package_dirs() -> list[str]:
    """The folders the import system loads ``openenv_mcp`` and its tool servers and environments from.

    Found through the import system, not assumed: in a wheel they are one folder in site-packages; in
    an editable install ``openenv_mcp.tool_servers`` and ``openenv_mcp.envs`` map to the checkout's
    top-level ``tool_servers/`` and ``envs/`` (the rest of the checkout is not needed, so not bound).
    """
    import importlib.util

    out: list[str] = []
    for name in ("openenv_mcp", "openenv_mcp.tool_servers", "openenv_mcp.envs"):
        spec = importlib.util.find_spec(name)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            if os.path.realpath(folder) not in out:
                out.append(os.path.realpath(folder))
    return out


def private_ancestor(path: str) -> str | None:
    """The outermost folder above ``path`` that others cannot search (e.g. ``/root``), if any."""
    for parent in reversed(Path(path).parents):
        try:
            if not parent.stat().st_mode & 0o001:
                return str(parent)
        except OSError:
            return None
    return None


def outermost(paths: list[str]) -> list[str]:
    """``paths`` without those inside another folder of the list (binding those again fails)."""
    out: list[str] = []
    for path in sorted(set(paths), key=lambda p: (p.count("/"), p)):
        if not any(path.startswith(o.rstrip("/") + "/") for o in out if os.path.isdir(o)):
            out.append(path)
    return out


def exposing_wrap(bwrap: str, read_only: list[str], writable: list[str]) -> list[str]:
    """A bwrap mount namespace (as root) that is the host's tree except that each private folder
    holding a needed path (``/root``...) becomes an empty searchable one with just those paths
    bound back in: an unprivileged uid then reaches its runtime and nothing else there."""
    masks = sorted({m for p in read_only + writable if (m := private_ancestor(p)) is not None})
    args = [bwrap, "--dev-bind", "/", "/", "--die-with-parent"]
    for mask in masks:
        args += ["--perms", "0755", "--tmpfs", mask]
    made: set[str] = set()
    hidden = [p for p in read_only + writable if private_ancestor(p) is not None]
    for path in outermost(hidden):
        mask = private_ancestor(path)
        for parent in reversed(Path(path).parents):
            if mask is not None and str(parent).startswith(mask + "/") and str(parent) not in made:
                made.add(str(parent))
                args += ["--perms", "0755", "--dir", str(parent)]
        args += ["--bind" if path in writable else "--ro-bind", path, path]
    return args + ["--"]


_warned: set[str] = set()


def warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        logging.getLogger("openenv_mcp.isolation").warning(message)


def expand(argv: list[str], values: dict[str, str]) -> list[str]:
    """Replace ``{workspace}`` and ``{env_dir}`` placeholders in ``argv``."""
    out = []
    for arg in argv:
        for key, value in values.items():
            arg = arg.replace("{" + key + "}", value)
        out.append(arg)
    return out


def expand_env(env: dict[str, str], values: dict[str, str]) -> dict[str, str]:
    """Replace ``{workspace}`` and ``{env_dir}`` placeholders in the values of ``env``."""
    return dict(zip(env, expand(list(env.values()), values), strict=True))


# -- the stdio transport ---------------------------------------------------------------
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
        """SIGKILL the whole tree: the process group, and every process of the uid."""
        proc = self.proc
        if proc is None:
            return
        tree = [] if proc.returncode is not None else descendants(proc.pid)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in [proc.pid, *tree]:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if self.kill_uid and self.launch.uid is not None:
            kill_uid(self.launch.uid)

    async def stop(self) -> None:
        self.kill()
        proc = self.proc
        if proc is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                await proc.wait()
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
        read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](16)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._pump_stdout, read_writer)
                tg.start_soon(self._pump_stdin, write_reader)
                tg.start_soon(self._pump_stderr)
                tg.start_soon(self._watch, read_writer)
                try:
                    yield read_stream, write_stream
                finally:
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self.stop()
                for stream in (read_writer, read_stream, write_stream, write_reader):
                    await stream.aclose()

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
                stdin.write(msg.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n")
                await stdin.drain()
        except (ConnectionError, OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    async def _pump_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        with contextlib.suppress(ConnectionError, OSError):
            while chunk := await self.proc.stderr.read(65536):
                self.stderr_tail += chunk
                del self.stderr_tail[:-STDERR_TAIL]

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
        if not raw.strip():
            return None
        try:
            message = mcp_types.jsonrpc_message_adapter.validate_json(raw, by_name=False)
        except ValueError:
            shown = raw[:200].decode(errors="replace")
            return f"wrote non-JSON-RPC output to stdout: {shown!r}"
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
            text = _text_prefix(head.decode(errors="ignore"), self.output_limit)
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


def _text_prefix(head: str, limit: int) -> str:
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


# -- one-shot commands (command rewards) ------------------------------------------------------
COMMAND_OUTPUT = 65536


async def run_launch(launch: Launch, timeout: float, kill_all_of_uid: bool = False) -> tuple[int, str, str]:
    """Run a :class:`Launch` to completion: ``(code, stdout, stderr)``, outputs cut to 64 KiB.
    Past ``timeout`` the whole tree is killed and :class:`BoundaryError` raised."""
    process = StdioProcess(launch.argv[0], launch, COMMAND_OUTPUT, COMMAND_OUTPUT, kill_uid=kill_all_of_uid)
    await process.spawn()
    proc = process.proc
    assert proc is not None and proc.stdin is not None
    proc.stdin.close()
    out, err = bytearray(), bytearray()

    async def drain(stream: Any, into: bytearray) -> None:
        while chunk := await stream.read(65536):
            into += chunk[: max(0, COMMAND_OUTPUT - len(into))]

    try:
        with anyio.fail_after(timeout):
            async with anyio.create_task_group() as tg:
                tg.start_soon(drain, proc.stdout, out)
                tg.start_soon(drain, proc.stderr, err)
            await proc.wait()
    except TimeoutError:
        raise BoundaryError(f"command {launch.argv[0]!r} did not finish within {timeout:g} s") from None
    finally:
        await process.stop()
    return proc.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")


async def run_plain(argv: list[str], env: dict[str, str], cwd: str, timeout: float) -> tuple[int, str, str]:
    """Run ``argv`` as a plain child (own session, killed with its tree on timeout)."""
    executable = resolve_executable(argv[0], argv[0])
    folder = os.path.dirname(executable)
    base = {"PATH": f"{folder}:{SYSTEM_PATH}", "HOME": cwd, "LANG": "C.UTF-8"}
    return await run_launch(Launch([executable, *argv[1:]], {**base, **env}, cwd, None, []), timeout)


# -- the connection -----------------------------------------------------------------------
MISSING_RUNTIME = re.compile(
    r"Cannot find module|ERR_MODULE_NOT_FOUND|No module named|ModuleNotFoundError|No such file or directory"
    r"|error while loading shared libraries|can't open file"
)
"""What a server's stderr says when part of its runtime is not there (a boundary adds how to bind it)."""


class _ProcessHost(SessionHost):
    def __init__(self, name: str, process: StdioProcess, hint: str | None = None) -> None:
        super().__init__(name, process.streams)
        self.process = process
        self.hint = hint
        """Appended to the stderr tail when it says a module or file is missing."""

    def why(self) -> str | None:
        process = self.process
        if process.problem:
            return process.problem
        if process.proc is not None and process.proc.returncode is not None:
            return process.status()
        return None

    def stderr(self) -> str:
        text = self.process.stderr_text()
        hint = self.hint if self.hint and MISSING_RUNTIME.search(text) else ""
        return text[-500:] + hint


class ProcessConnection(McpConnection):
    """A stdio MCP server (``command``) as a limited child process of its own."""

    boundary = "process"

    def __init__(self, spec: ToolServerSpec, ctx: ServerContext, base_dir: Path | None = None) -> None:
        super().__init__(spec, ctx)
        if not spec.command:
            raise ConfigError(f"tool server {spec.name!r}: isolation {self.boundary!r} needs a command")
        self.base_dir = Path(base_dir or Path.cwd()).resolve()
        self.executable = resolve_executable(self.named()[0], spec.name)
        self.uid: int | None = None
        self.expose: str | None = None
        """``bwrap``, when the runtime sits in a private folder and a mount namespace exposes it."""
        if os.geteuid() == 0:
            if spec.run_as_root:
                warn_once(
                    self.executable,
                    (
                        f"tool server {spec.name!r} runs as root (run_as_root = true): nothing holds its process "
                        "count, and it can read, write and kill anything on the host"
                    ),
                )
            elif not self.can_drop_to_uid():
                self.expose = shutil.which("bwrap")
                if self.expose is None:
                    private = self.unreachable() or self.executable
                    raise ConfigError(
                        f"tool server {spec.name!r}: {private} is not reachable by an unprivileged uid (a "
                        f"parent folder is private: {private_ancestor(private) or private}) and bubblewrap is "
                        "not installed to expose it, so the server would run as root: install its runtime in a "
                        "world-readable place, install bubblewrap (`apt-get install bubblewrap`), use isolation = "
                        '"sandbox", or set run_as_root = true in the env file to run it as root on purpose'
                    )
            if not spec.run_as_root:
                self.uid = UIDS.acquire(ctx.episode_id)
        self._private: Path | None = None
        self.cgroup: Group | None = None
        """This server's cgroup (every process it starts, killed on close), where cgroup v2 is usable."""

    def named(self) -> list[str]:
        """The command with ``{env_dir}`` expanded (``{workspace}`` needs the workspace: see :meth:`command`)."""
        return expand(list(self.spec.command or []), {"env_dir": str(self.base_dir)})

    def can_drop_to_uid(self) -> bool:
        """Whether the server can run as an unprivileged uid (it must reach its program)."""
        return self.unreachable() is None

    def unreachable(self, argv: list[str] | None = None) -> str | None:
        """The first path a command (the server's by default) needs (its program, the files it names,
        their runtime: a virtualenv, a script's interpreter, a Node package) that an unprivileged uid
        cannot reach."""
        full = argv or [self.executable, *self.named()[1:]]
        for path in [full[0], *command_paths(full, self.base_dir)]:
            if path != str(self.base_dir) and private_ancestor(path) is not None:
                return path
        return None if reachable_by_others(full[0]) else full[0]

    # -- hooks for the sandbox
    def workspace_path(self) -> str:
        """The workspace as the server sees it."""
        return str(self.ctx.workspace)

    def private_dir(self) -> Path:
        """A folder only this server may use (its ``HOME`` and ``TMPDIR``)."""
        if self._private is None:
            self._private = Path(
                tempfile.mkdtemp(prefix=f"openenv-mcp-home-{owner_tag()}-", dir=self.ctx.workspace.parent)
            )
            if self.uid is not None:
                os.chown(self._private, self.uid, self.uid)
        return self._private

    def per_episode_values(self) -> dict[str, str]:
        values = {"the workspace path": self.workspace_path()}
        if self._private is not None:
            values["HOME/TMPDIR"] = str(self._private)
        if self.uid is not None:
            values["the episode's uid"] = str(self.uid)
        return values

    def child_env(self, executable: str) -> dict[str, str]:
        home = str(self.private_dir())
        folder = os.path.dirname(executable)
        env = {
            "PATH": f"{folder}:{SYSTEM_PATH}" if folder else SYSTEM_PATH,
            "HOME": home,
            "TMPDIR": home,
            "LANG": "C.UTF-8",
        }
        env.update(self.placeholders(self.ctx.env))
        return env

    def placeholders(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` with ``{workspace}`` and ``{env_dir}`` expanded as the server sees them."""
        return expand_env(env, {"workspace": self.workspace_path(), "env_dir": str(self.base_dir)})

    def launch(self, argv: list[str], executable: str | None = None) -> Launch:
        """Turn a command into a :class:`Launch` (the sandbox wraps it)."""
        executable = executable or self.executable
        full = [executable, *argv[1:]]
        wrap = None
        expose = self.expose
        if expose is None and self.uid is not None and self.unreachable(full) is not None:
            expose = shutil.which("bwrap")  # e.g. a reward command under a private env folder
        if expose is not None:
            wrap = exposing_wrap(
                expose,
                command_paths(full, self.base_dir) + command_paths([sys.executable], self.base_dir),
                [str(self.ctx.workspace), str(self.private_dir())],
            )
        return Launch(
            full,
            self.child_env(executable),
            str(self.ctx.workspace),
            self.uid,
            rlimits_for(self.spec, self.uid is not None),
            wrap,
            self.group(),
        )

    def group(self) -> str | None:
        """The ``cgroup.procs`` of this server's cgroup (made on first use), if cgroups are usable."""
        if self.cgroup is None:
            self.cgroup = cgroup.create()
        return None if self.cgroup is None else self.cgroup.procs

    async def run_command(self, argv: list[str], env: dict[str, str], timeout: float) -> tuple[int, str, str]:
        """Run ``argv`` as the server runs: same uid, limits and (sandbox) namespaces."""
        argv = expand(argv, {"workspace": self.workspace_path(), "env_dir": str(self.base_dir)})
        launch = self.launch(argv, resolve_executable(argv[0], self.spec.name))
        launch.env.update(env)  # as given: task data in it is never rewritten
        return await run_launch(launch, timeout)

    def command(self) -> list[str]:
        values = {"workspace": self.workspace_path(), "env_dir": str(self.base_dir)}
        return expand(list(self.spec.command or []), values)

    async def start(self) -> None:
        if self.uid is not None:  # the workspace becomes the server's (off the event loop: it may be large)
            await anyio.to_thread.run_sync(chown_tree, self.ctx.workspace, self.uid)
        await super().start()

    def _new_host(self) -> SessionHost:
        launch = self.launch(self.command())
        limit = self.spec.limits.output_bytes
        process = StdioProcess(
            self.spec.name, launch, 2 * limit + LINE_SLACK, limit, kill_uid=UIDS.exclusive(self.ctx.episode_id)
        )
        return _ProcessHost(self.spec.name, process, self.missing_hint())

    def missing_hint(self) -> str | None:
        """What to do when the server's runtime is missing (the sandbox says how to bind it)."""
        return None

    async def close(self) -> None:
        if self.closed:
            return
        host = self.host
        if isinstance(host, _ProcessHost) and self.uid is not None:
            host.process.kill_uid = False  # the uid's guard kills every process of it on release, below
        try:
            await super().close()
        finally:
            if self.cgroup is not None:  # every process the server started, however it detached
                await anyio.to_thread.run_sync(self.cgroup.remove)
            if self.uid is not None:
                UIDS.release(self.ctx.episode_id)  # the last server of the episode kills the whole uid
                self.uid = None
            if self._private is not None:
                remove_tree(self._private)
                self._private = None
