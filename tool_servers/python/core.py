"""The python tool server's core (no MCP imports): a stateful interpreter (variables persist across calls).

Design: the MCP server runs user code in a **child interpreter process** it
controls (``worker.py``), never in itself. The child keeps the ``__main__``
namespace between calls, so ``x = 1`` in one call and ``x + 1`` in the next
gives ``2``. One server has one interpreter: in openenv-mcp every episode
starts its own server (behind the ``sandbox`` boundary), so state persists
within an episode and never crosses episodes.

Limits, enforced here (and again by the boundary around the server):

* **time**: a call past its ``timeout`` gets ``SIGINT`` (a ``KeyboardInterrupt``
  in the user's code, variables kept); if the child does not answer within
  :data:`INTERRUPT_GRACE` seconds it is killed (its whole process group) and a
  fresh one starts on the next call, and the result says that variables were lost;
* **memory**: the child runs under ``RLIMIT_AS`` = ``memory_mb``: a large
  allocation raises ``MemoryError`` in the user's code; a child that dies
  anyway (or calls ``os._exit``) is reported, and restarted on the next call;
* **CPU time**: with ``cpu_seconds`` the child runs under ``RLIMIT_CPU``; a child
  that uses it up is killed by ``SIGXCPU``, reported as such, and restarted on the
  next call (``0``, the default, leaves CPU time to the boundary's ``cpu_seconds``,
  which covers the whole server);
* **output**: stdout, stderr, the result's ``repr`` and the traceback are each
  cut at ``max_output_chars`` with a visible marker.

Captured output is what Python code writes to ``sys.stdout``/``sys.stderr``
(``print``); programs started with ``os.system`` write to ``/dev/null`` (use
``subprocess.run(..., capture_output=True)`` and print, or the shell tool).
"""

import asyncio
import contextlib
import json
import os
import resource
import signal
import sys
import weakref
from pathlib import Path
from typing import Any

from ..lean import hints

__all__ = ["DEFAULT_LIMITS", "OUTPUT_SCHEMA", "Interpreter", "render", "tool_definitions"]

WORKER = str(Path(__file__).resolve().with_name("worker.py"))
INTERRUPT_GRACE = 2.0
"""Seconds a timed-out call has to end after ``SIGINT`` before the child is killed."""

DEFAULT_LIMITS: dict[str, float] = {
    "default_timeout": 30.0,  # seconds, when the call gives none
    "max_timeout": 120.0,  # largest timeout a call may ask for
    "memory_mb": 512,  # the child's address-space limit
    "cpu_seconds": 0,  # the child's CPU-time limit (RLIMIT_CPU); 0: none beyond the boundary's
    "max_output_chars": 50_000,  # per stream / result / traceback
    "max_code_chars": 200_000,  # longest code accepted
}

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "stdout": {
            "type": "string",
            "description": "What the code printed (sys.stdout), cut with a marker past the cap.",
        },
        "stderr": {"type": "string", "description": "What the code wrote to sys.stderr (warnings included)."},
        "result": {
            "type": ["string", "null"],
            "description": "repr() of the last line's value when it is an expression (null when None or a statement).",
        },
        "error": {"type": ["string", "null"], "description": "The traceback when the code raised (null otherwise)."},
        "timed_out": {"type": "boolean", "description": "Whether the code was stopped at its timeout."},
        "restarted": {
            "type": "boolean",
            "description": "Whether the interpreter was (or will be) restarted: all variables were lost.",
        },
    },
    "required": ["stdout", "stderr", "result", "error", "timed_out", "restarted"],
}

_LOST = "all variables were lost"


def _kill(proc: asyncio.subprocess.Process | None) -> None:
    """SIGKILL the child's process group and release its pipes (safe to repeat)."""
    if proc is None:
        return
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        with contextlib.suppress(Exception):  # the loop may already be closed
            transport.close()


def _status(code: int | None) -> str:
    if code is None:
        return "stopped"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


class Interpreter:
    """One child interpreter process: started on first use, restarted after a crash or kill."""

    def __init__(self, root: Path, memory_mb: int | None, max_output: int, cpu_seconds: int | None = None) -> None:
        """``memory_mb`` and ``cpu_seconds`` (``None``: no limit) bound each child it starts;
        ``max_output`` is the characters kept per stream, result and traceback."""
        self.root, self.memory_mb, self.max_output = root, memory_mb, max_output
        self.cpu_seconds = cpu_seconds
        self.proc: asyncio.subprocess.Process | None = None
        self.cell = 0
        self.lost: str | None = None  # why the next call starts a fresh child
        self._lock = asyncio.Lock()
        self._finalizer = weakref.finalize(self, _kill, None)

    def _limits(self) -> Any:
        memory = None if not self.memory_mb else int(self.memory_mb) * 1024 * 1024
        cpu = int(self.cpu_seconds) if self.cpu_seconds else None

        def child() -> None:
            if cpu:  # SIGXCPU at the soft limit, SIGKILL one second later
                hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
                soft = cpu if hard == resource.RLIM_INFINITY else min(cpu, hard)
                resource.setrlimit(resource.RLIMIT_CPU, (soft, hard if hard != resource.RLIM_INFINITY else soft + 1))
            if memory:
                hard = resource.getrlimit(resource.RLIMIT_AS)[1]
                value = memory if hard == resource.RLIM_INFINITY else min(memory, hard)
                resource.setrlimit(resource.RLIMIT_AS, (value, hard))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            with contextlib.suppress(Exception):  # die with the server (Linux)
                import ctypes

                ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)

        return child

    async def _start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            WORKER,
            str(self.root),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            cwd=str(self.root),
            start_new_session=True,
            preexec_fn=self._limits(),
            limit=16 * self.max_output + 1_000_000,
        )
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _kill, self.proc)
        self.cell = 0

    def stop(self, why: str | None = None) -> None:
        """Kill the child; the next call starts a fresh one (``why`` is reported then)."""
        _kill(self.proc)
        self.proc = None
        self.lost = why

    async def close(self) -> None:
        """Kill the child and wait (at most 5 s) until it is gone."""
        proc = self.proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(proc.wait(), 5)
        self.stop()

    async def prestart(self) -> None:
        """Start the child now (in the background of a server's start) so the first call does not wait."""
        async with self._lock:
            if self.proc is None:
                with contextlib.suppress(OSError):  # the first call retries and reports
                    await self._start()

    async def restart(self) -> None:
        async with self._lock:
            self.stop()
            self.lost = None

    async def run(self, code: str, timeout: float) -> dict[str, Any]:
        async with self._lock:
            notes: list[str] = []
            if self.lost:
                notes.append(self.lost)
                self.lost = None
            restarted = bool(notes)
            if self.proc is None or self.proc.returncode is not None:
                if self.proc is not None:
                    notes.append(
                        f"The interpreter {_status(self.proc.returncode)} since the last call and was "
                        f"restarted: {_LOST}."
                    )
                    restarted = True
                await self._start()
            proc = self.proc
            assert proc is not None and proc.stdin is not None and proc.stdout is not None
            self.cell += 1
            request = {"code": code, "cell": self.cell, "max_output": self.max_output}
            timed_out = False
            try:
                proc.stdin.write(json.dumps(request).encode() + b"\n")
                await proc.stdin.drain()
                try:
                    line = await asyncio.wait_for(proc.stdout.readline(), timeout)
                except TimeoutError:
                    timed_out = True
                    with contextlib.suppress(ProcessLookupError):
                        proc.send_signal(signal.SIGINT)
                    try:
                        line = await asyncio.wait_for(proc.stdout.readline(), INTERRUPT_GRACE)
                    except TimeoutError:
                        line = b""
            except (ConnectionError, OSError, ValueError):
                line = b""
            except BaseException:  # cancelled: the child's state is unknown
                self.stop(f"The previous call was cancelled and the interpreter was restarted: {_LOST}.")
                raise
            reply = None
            if line:
                with contextlib.suppress(ValueError):
                    reply = json.loads(line)
            if reply is None:  # no answer: it died, or ignored the interrupt
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(proc.wait(), 5)
                _kill(proc)
                self.proc = None
                if timed_out:
                    why = (
                        f"Timed out after {timeout:g} s; the code did not stop on interrupt, so the interpreter "
                        f"was killed and will restart on the next call: {_LOST}."
                    )
                elif proc.returncode == -signal.SIGXCPU:
                    why = (
                        f"The interpreter {_status(proc.returncode)}: it used up its CPU time limit. It will "
                        f"restart on the next call: {_LOST}."
                    )
                else:
                    why = (
                        f"The interpreter {_status(proc.returncode)} while running this code (out of memory? "
                        f"the limit is {self.memory_mb} MB; or os._exit) and will restart on the next call: "
                        f"{_LOST}."
                    )
                return {
                    "stdout": "",
                    "stderr": "",
                    "result": None,
                    "error": why,
                    "timed_out": timed_out,
                    "restarted": True,
                    "notes": notes,
                }
            if timed_out:
                reply["error"] = f"Timed out after {timeout:g} s: interrupted (variables are kept).\n" + (
                    reply.get("error") or ""
                )
            return {
                "stdout": reply["stdout"],
                "stderr": reply["stderr"],
                "result": reply["result"],
                "error": reply["error"],
                "timed_out": timed_out,
                "restarted": restarted,
                "notes": notes,
            }


def render(result: dict[str, Any], notes: list[str]) -> str:
    """The text form: notes, then the non-empty sections."""
    parts = [f"[{n}]" for n in notes]
    for key in ("stdout", "stderr", "result", "error"):
        if result[key]:
            parts.append(f"--- {key} ---\n{result[key].rstrip(chr(10))}")
    if len(parts) == len(notes):
        parts.append("(no output)")
    return "\n".join(parts)


INSTRUCTIONS = (
    "A persistent Python interpreter working in the workspace folder: `run` executes code; variables, "
    "imports and functions stay defined across calls until `restart`. The value of a final expression is "
    "returned as result, like in a notebook. Print to see intermediate values."
)
RUN_DESCRIPTION = """Run Python code in the persistent interpreter; returns stdout, stderr, result and error (traceback).

Variables persist across calls. The working folder is the workspace, which is also on sys.path."""
RESTART_DESCRIPTION = "Restart the interpreter: every variable, import and function defined so far is forgotten."
RESTARTED = "The interpreter was restarted; no variables are defined."
CODE_HELP = (
    "Python source to execute, e.g. 'import json\\nx = 2\\nx * 21'. The last line's value (if an expression) "
    "is returned as result."
)


def timeout_help(cap: dict[str, float]) -> str:
    return (
        f"Seconds before the code is interrupted (default {cap['default_timeout']:g}, at most {cap['max_timeout']:g})."
    )


def limits(overrides: dict[str, float]) -> dict[str, float]:
    """:data:`DEFAULT_LIMITS` with ``overrides`` (unknown names refused)."""
    unknown = set(overrides) - set(DEFAULT_LIMITS)
    if unknown:
        raise TypeError(f"unknown limit(s) {sorted(unknown)}; known: {sorted(DEFAULT_LIMITS)}")
    return {**DEFAULT_LIMITS, **overrides}


def new_interpreter(ctx: Any, cap: dict[str, float]) -> Interpreter:
    root = Path(os.path.realpath(Path(getattr(ctx, "workspace", ctx)).expanduser()))
    if not root.is_dir():
        raise NotADirectoryError(f"python root {str(root)!r} is not a directory; create it or pass another --root")
    return Interpreter(
        root,
        int(cap["memory_mb"]) if cap["memory_mb"] else None,
        int(cap["max_output_chars"]),
        int(cap["cpu_seconds"]) if cap["cpu_seconds"] else None,
    )


class Refused(Exception):
    """A call the tool refuses (its message says why): an error result."""


async def call(
    interpreter: Interpreter, cap: dict[str, float], code: str, timeout: float | None
) -> tuple[str, dict[str, Any], bool]:
    """One ``run`` call: (text, structured, is_error); :class:`Refused` for bad input."""
    if not code.strip():
        raise Refused("code is empty; give Python source such as 'print(1 + 1)'.")
    if len(code) > cap["max_code_chars"]:
        raise Refused(
            f"code is {len(code)} characters; the limit is {int(cap['max_code_chars'])}. "
            "Write it to a file and import or exec it."
        )
    seconds = cap["default_timeout"] if timeout is None else timeout
    if seconds > cap["max_timeout"]:
        raise Refused(f"timeout {seconds:g} s is above this server's limit of {cap['max_timeout']:g} s.")
    try:
        result = await interpreter.run(code, seconds)
    except OSError as e:
        raise Refused(f"could not start the Python interpreter: {e.strerror or e}.") from None
    notes = result.pop("notes")
    return render(result, notes), result, result["error"] is not None


ANNOTATIONS: dict[str, dict[str, Any]] = {
    "run": hints("Run Python code", read_only=False, destructive=True, idempotent=False, open_world=True),
    "restart": hints("Restart the interpreter", read_only=False, destructive=True, idempotent=True, open_world=False),
}
"""Each tool's MCP annotations: arbitrary code may change or remove anything it can reach and, where the
boundary allows a network, reach out of the workspace (open world). Restarting forgets the interpreter's state.
"""


def tool_definitions(cap: dict[str, float]) -> list[dict[str, Any]]:
    """The tools as MCP lists them (what the FastMCP server lists, without its ``_meta``)."""
    return [
        {
            "name": "run",
            "title": ANNOTATIONS["run"]["title"],
            "description": RUN_DESCRIPTION,
            "inputSchema": {
                "additionalProperties": False,
                "properties": {
                    "code": {"description": CODE_HELP, "type": "string"},
                    "timeout": {
                        "anyOf": [{"exclusiveMinimum": 0, "type": "number"}, {"type": "null"}],
                        "default": None,
                        "description": timeout_help(cap),
                    },
                },
                "required": ["code"],
                "type": "object",
            },
            "outputSchema": OUTPUT_SCHEMA,
            "annotations": ANNOTATIONS["run"],
        },
        {
            "name": "restart",
            "title": ANNOTATIONS["restart"]["title"],
            "description": RESTART_DESCRIPTION,
            "inputSchema": {"additionalProperties": False, "properties": {}, "type": "object"},
            "annotations": ANNOTATIONS["restart"],
        },
    ]


async def serve_lean(ctx: Any, **overrides: float) -> None:
    """Serve the tools over stdio with :mod:`openenv_mcp.tool_servers.lean` (no MCP imports: fast start)."""
    from ..lean import Reply, ToolFailure, serve

    cap = limits(overrides)
    interpreter = new_interpreter(ctx, cap)

    async def run(arguments: dict[str, Any]) -> Reply:
        try:
            text, structured, is_error = await call(interpreter, cap, arguments["code"], arguments.get("timeout"))
        except Refused as e:
            raise ToolFailure(str(e)) from None
        return Reply(text, structured, is_error)

    async def restart(arguments: dict[str, Any]) -> Reply:
        await interpreter.restart()
        return Reply(RESTARTED)

    warm = asyncio.ensure_future(interpreter.prestart())
    try:
        await serve(
            {"name": "python", "instructions": INSTRUCTIONS}, tool_definitions(cap), {"run": run, "restart": restart}
        )
    finally:
        warm.cancel()
        interpreter.stop()
