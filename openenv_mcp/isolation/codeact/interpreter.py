"""The host side of CodeAct: one episode's sandboxed Python interpreter.

:class:`CodeInterpreter` starts :mod:`openenv_mcp.isolation.codeact.coderunner` behind the ``sandbox``
boundary (bubblewrap, the same launcher as sandboxed tool servers: no network,
read-only root, private ``/tmp``, capped memory-backed folders, rlimits, whole-tree kill) as an unprivileged
uid of its own (not the tool servers' uid: code cannot signal them or touch
the files they own). Its ``/workspace`` is a private scratch folder, not the
episode's workspace: the world changes only through the tools. The
environment's folder, the bundled environments (tasks, solutions, hidden
tests) and the episode workspaces' parent are masked, so grader-only data on
disk stays unseen.

The interpreter lives across :meth:`run` calls (variables persist) until the
episode closes, a run times out, the code kills it or leaves a thread running that
will not stop; then the next run gets a fresh one and says so. Between runs it is
frozen (its cgroup's freezer, else SIGSTOP to each of its processes, SIGCONT when
the next run starts): nothing the code started computes outside a run's time
limit. Every tool call the code makes comes back over the runner's stdio to
``dispatch`` (the episode's one dispatch path); the channel is JSON lines, each
line bounded.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import sys
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp.types import Tool

from openenv_mcp.definitions.spec import Limits, ToolServerSpec
from openenv_mcp.errors import BoundaryError
from openenv_mcp.isolation.base import ServerContext
from openenv_mcp.isolation.boundaries.sandbox import SandboxConnection
from openenv_mcp.isolation.host.proctree import descendants
from openenv_mcp.isolation.host.runtime import package_dirs as sandbox_package_dirs
from openenv_mcp.isolation.host.uids import UIDS, chown_tree
from openenv_mcp.isolation.transport.stdio import StdioProcess

__all__ = ["CODE_LIMIT", "CodeInterpreter", "RunOutcome"]

CODE_LIMIT = 1_000_000
"""Characters of code one run may carry."""

Dispatch = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
"""``dispatch(name, arguments)`` -> ``{"is_error", "text", "structured"}`` for the runner."""

RunOutcome = dict[str, Any]
"""``{"stdout", "stderr", "value", "exception", "traceback"}`` of one run."""

RUNNER = str(Path(__file__).with_name("coderunner.py"))

ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
"""The interpreter's environment: numeric libraries start no worker threads of their own (``import
numpy`` would otherwise leave an OpenBLAS thread that cannot be stopped, restarting every run)."""

THREADS_LEFT = "ThreadsLeftRunning: {n} thread{s} still running at the end of the run {were} stopped"
"""What a run's exception says when the code left threads running (they never outlive the run)."""


def default_limits() -> Limits:
    """Limits of the interpreter: ``call_timeout`` bounds one whole run (its tool calls included);
    ``output_bytes`` bounds stdout, stderr, value and traceback each; CPU time is per interpreter;
    each memory-backed folder holds ``tmpfs_mb``, each file ``file_mb``."""
    return Limits(call_timeout=60.0, memory_mb=512, cpu_seconds=600, processes=64, output_bytes=65536, file_mb=64)


def code_limits(given: Limits | None) -> Limits:
    """The interpreter's limits: the keys an env file's ``code_limits`` sets, :func:`default_limits` for the rest."""
    base = default_limits()
    if given is None:
        return base
    return base.model_copy(update={key: getattr(given, key) for key in given.model_fields_set})


def _masked(env_dir: Path, workdir: Path | None, grader_files: list[Path]) -> list[str]:
    """What the code must not see: the env folder (or, when it holds the interpreter itself, e.g. a
    checkout with its virtualenv, the env's grader files), the bundled environments, the workspaces."""
    needed = [os.path.realpath(p) for p in (sys.prefix, os.path.dirname(sys.executable), RUNNER)]
    needed += sandbox_package_dirs()

    def holds_needed(path: str) -> bool:
        real = os.path.realpath(path).rstrip("/") + "/"
        return any((n.rstrip("/") + "/").startswith(real) for n in needed)

    out = [str(env_dir)] if not holds_needed(str(env_dir)) else [str(p) for p in grader_files]
    spec = importlib.util.find_spec("openenv_mcp.envs")
    out += [os.path.realpath(p) for p in (spec.submodule_search_locations or [])] if spec else []
    if workdir is not None:
        out.append(str(workdir))
    return [p for p in dict.fromkeys(out) if os.path.exists(p) and not holds_needed(p)]


class _StartFailed(BoundaryError):
    """The interpreter could not be started (bubblewrap missing, bad launch...)."""


class CodeInterpreter:
    """One episode's persistent interpreter (started on first :meth:`run`)."""

    def __init__(
        self,
        episode_id: str,
        tools: list[Tool],
        env_dir: Path,
        *,
        limits: Limits | None = None,
        workdir: Path | None = None,
        grader_files: list[Path] | None = None,
    ) -> None:
        self.episode_id = episode_id
        self.tools = [
            t.model_dump(mode="json", by_alias=True, include={"name", "description", "input_schema"}) for t in tools
        ]
        self.env_dir = Path(env_dir)
        self.limits = code_limits(limits)
        self.workdir = workdir
        self.grader_files = grader_files or []
        self.process: StdioProcess | None = None
        self.conn: SandboxConnection | None = None
        self.scratch: Path | None = None
        self.restarts = 0
        self._buffer = bytearray()
        self._stopped: list[int] = []
        """pidfds of the processes SIGSTOPped between runs (where no cgroup freezer is usable)."""
        self._frozen = False
        self.closed = False

    @property
    def line_limit(self) -> int:
        return 4 * self.limits.output_bytes + CODE_LIMIT + 65536

    # -- lifecycle ---------------------------------------------------------------------
    async def _start(self) -> StdioProcess:
        self.scratch = Path(tempfile.mkdtemp(prefix="openenv-mcp-code-", dir=self.workdir))
        spec = ToolServerSpec(
            name="codeact",
            command=[sys.executable, RUNNER],
            isolation="sandbox",
            limits=self.limits,
            hide=_masked(self.env_dir, self.workdir, self.grader_files),
        )
        ctx = ServerContext(f"{self.episode_id}/codeact", self.scratch, env=dict(ONE_THREAD))
        self.conn = conn = SandboxConnection(spec, ctx, self.scratch)  # the env folder is not bound
        if conn.uid is not None:
            chown_tree(self.scratch, conn.uid)
        process = StdioProcess(
            "codeact", conn.launch(conn.command()), self.line_limit, self.limits.output_bytes, kill_uid=True
        )
        self.process = process
        await process.spawn()
        with anyio.fail_after(self.limits.start_timeout):
            await self._send({"op": "init", "tools": self.tools, "output_bytes": self.limits.output_bytes})
            reply = await self._receive()
        if reply.get("op") != "ready":
            raise BoundaryError(f"it answered {reply!r:.200} instead of ready")
        return process

    def _tree(self) -> list[int]:
        """Every process of the interpreter: the members of its cgroup, else the launcher's tree."""
        proc = None if self.process is None else self.process.proc
        if proc is None or proc.returncode is not None:
            return []
        members = [] if self.conn is None or self.conn.cgroup is None else self.conn.cgroup.members()
        return members or [proc.pid, *descendants(proc.pid)]

    def _freeze(self) -> int:
        """Freeze the interpreter until the next run; how many threads beyond one per process it holds
        (counted from the host, frozen: what the code cannot hide or change)."""
        self._frozen = True
        group = None if self.conn is None else self.conn.cgroup
        tree = self._tree()
        if group is None or not group.freeze(True):
            for pid in tree:
                with contextlib.suppress(OSError):
                    fd = os.pidfd_open(pid)  # the pid cannot be reused while this is open
                    self._stopped.append(fd)
                    signal.pidfd_send_signal(fd, signal.SIGSTOP)
        extra = 0
        for pid in tree:
            with contextlib.suppress(OSError):
                extra += len(os.listdir(f"/proc/{pid}/task")) - 1
        return extra

    def _thaw(self) -> None:
        if not self._frozen:
            return
        self._frozen = False
        group = None if self.conn is None else self.conn.cgroup
        if group is not None:
            group.freeze(False, wait=0)
        stopped, self._stopped = self._stopped, []
        for fd in stopped:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(fd, signal.SIGCONT)
            os.close(fd)

    async def _stop(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            await process.stop()
        await anyio.to_thread.run_sync(self._thaw)  # after the kill: a frozen process dies without running
        conn, self.conn = self.conn, None
        if conn is not None and conn.cgroup is not None:
            await anyio.to_thread.run_sync(conn.cgroup.remove)  # every process the code started
        if conn is not None and conn.uid is not None:
            await anyio.to_thread.run_sync(UIDS.release, conn.ctx.episode_id)  # kills every process of the code uid
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None
        self._buffer.clear()

    async def close(self) -> None:
        self.closed = True
        with anyio.CancelScope(shield=True):
            await self._stop()

    # -- the channel ------------------------------------------------------------------
    async def _send(self, message: dict[str, Any]) -> None:
        assert self.process is not None and self.process.proc is not None
        stdin = self.process.proc.stdin
        assert stdin is not None
        stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        await stdin.drain()

    async def _receive(self) -> dict[str, Any]:
        assert self.process is not None and self.process.proc is not None
        stdout = self.process.proc.stdout
        assert stdout is not None
        while (newline := self._buffer.find(b"\n")) < 0:
            if len(self._buffer) > self.line_limit:
                raise BoundaryError(f"the code interpreter sent a message over {self.line_limit} bytes")
            chunk = await stdout.read(262144)
            if not chunk:
                await self.process.proc.wait()
                raise BoundaryError(f"the code interpreter {self.process.status()}")
            self._buffer += chunk
        line = bytes(self._buffer[:newline])
        del self._buffer[: newline + 1]
        try:
            message = json.loads(line)
        except ValueError:
            raise BoundaryError(f"the code interpreter sent a non-JSON message: {line[:200]!r}") from None
        if not isinstance(message, dict):
            raise BoundaryError(f"the code interpreter sent {line[:200]!r}, not a JSON object")
        return message

    # -- runs --------------------------------------------------------------------------
    async def run(self, code: str, dispatch: Dispatch) -> RunOutcome:
        """Run ``code``; each tool call it makes goes to ``dispatch``. Never raises for what the code does."""
        if self.closed:
            raise BoundaryError("the code interpreter is closed")
        note = ""
        if self.process is not None and (self.process.proc is None or self.process.proc.returncode is not None):
            await self._stop()
        if self.process is None and self.restarts:
            note = "(a new interpreter: variables of earlier runs are gone)\n"
        await anyio.to_thread.run_sync(self._thaw)
        timeout = self.limits.call_timeout
        try:
            with anyio.fail_after(timeout):
                if self.process is None:
                    try:
                        await self._start()
                    except BoundaryError as e:
                        raise _StartFailed(str(e)) from None
                run_id = uuid.uuid4().hex
                await self._send({"op": "run", "id": run_id, "code": code})
                while True:
                    message = await self._receive()
                    if message.get("id") != run_id:
                        continue  # a stale or stray line (e.g. one the code wrote onto the channel earlier)
                    if message.get("op") == "done":
                        return await self._end_run(self._outcome(message, note), message)
                    if message.get("op") != "call":
                        raise BoundaryError(f"the code interpreter sent an unknown message {message.get('op')!r:.60}")
                    name, arguments = message.get("name"), message.get("arguments")
                    if not isinstance(name, str) or not isinstance(arguments, dict):
                        reply = {"is_error": True, "text": "a tool call needs a name (string) and arguments (object)"}
                    else:
                        reply = await dispatch(name, arguments)
                    await self._send(reply)
        except TimeoutError:
            problem = (
                f"TimeoutError: the code ran longer than {timeout:g} s and was stopped; "
                "the interpreter was restarted (variables are gone)"
            )
        except (BoundaryError, OSError, ConnectionError) as e:
            problem = (
                f"InterpreterError: the code interpreter could not start: {e}"
                if isinstance(e, _StartFailed)
                else f"InterpreterDied: {e}; the interpreter was restarted (variables are gone)"
            )
            tail = await self._stderr_tail()
            if tail:
                problem += f"\n{tail}"
        with anyio.CancelScope(shield=True):
            await self._stop()
        self.restarts += 1
        return {"stdout": note, "stderr": "", "value": None, "exception": problem, "traceback": None}

    async def _end_run(self, outcome: RunOutcome, message: dict[str, Any]) -> RunOutcome:
        """Freeze the interpreter until the next run; threads the code left running are reported, and if
        any outlived being stopped (the runner's count, or the host's own of the frozen processes), the
        interpreter is restarted."""
        extra = await anyio.to_thread.run_sync(self._freeze)
        reported, stuck = (message.get(k) for k in ("threads", "stuck"))
        reported = reported if isinstance(reported, int) and reported > 0 else 0
        restart = extra > 0 or (isinstance(stuck, int) and stuck > 0)
        n = max(reported, extra)
        if n == 0:
            return outcome
        problem = THREADS_LEFT.format(n=n, s="" if n == 1 else "s", were="was" if n == 1 else "were")
        if restart:
            problem += "; the interpreter was restarted (variables are gone)"
            with anyio.CancelScope(shield=True):
                await self._stop()
            self.restarts += 1
        for key in ("exception", "traceback"):
            if outcome[key] is not None or key == "exception":
                outcome[key] = problem if outcome[key] is None else f"{outcome[key].rstrip()}\n{problem}"
        return outcome

    async def _stderr_tail(self) -> str:
        """What a dead interpreter (or bwrap) wrote to its stderr pipe before the capture took over."""
        proc = None if self.process is None else self.process.proc
        if proc is None or proc.returncode is None or proc.stderr is None:
            return ""
        with anyio.move_on_after(0.5):
            return (await proc.stderr.read(4096)).decode(errors="replace").strip()[-500:]
        return ""

    def _outcome(self, message: dict[str, Any], note: str) -> RunOutcome:
        out: RunOutcome = {}
        for key in ("stdout", "stderr", "value", "exception", "traceback"):
            value = message.get(key)
            out[key] = value if isinstance(value, str) else (None if key not in ("stdout", "stderr") else "")
        out["stdout"] = note + out["stdout"]
        return out
