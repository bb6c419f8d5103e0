"""The shell tool server's core (no MCP imports): ``run`` one command in the workspace.

A command runs as ``bash -c COMMAND`` (``sh`` where bash is missing) in the
root folder, in a process group of its own, with stdin from the ``stdin``
argument (or empty). It ends when it exits or when its ``timeout`` passes; then
the whole group is killed. Background processes (``cmd &``) end with the
command: nothing a call starts outlives the call. The command starts with
``SIGXFSZ`` ignored: past a file-size limit a write fails with ``EFBIG``.

stdout and stderr are each kept up to ``max_output_bytes``; the rest is read
and dropped, and the kept text ends with a visible marker saying how much was
cut. The result is structured (:data:`OUTPUT_SCHEMA`) and also text for
clients that only show content. A non-zero exit status is a normal result (the
agent reads ``exit_code``); a timeout is an error result (``isError``) that
still carries the structured fields.

This server does not confine what a command may touch: standalone it has the
rights of the user running it. Inside an environment it runs behind the
``sandbox`` boundary, which is what keeps commands away from the host.
"""

import asyncio
import contextlib
import functools
import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

from ..lean import hints

__all__ = ["DEFAULT_LIMITS", "OUTPUT_SCHEMA", "TRUNCATED", "render", "run_command", "tool_definitions"]

DEFAULT_LIMITS: dict[str, float] = {
    "max_output_bytes": 50_000,  # per stream: bytes kept before the cut marker
    "default_timeout": 30.0,  # seconds, when the call gives none
    "max_timeout": 120.0,  # largest timeout a call may ask for
    "max_command_chars": 100_000,  # longest command accepted
    "max_stdin_bytes": 1_000_000,  # largest stdin accepted
}

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "exit_code": {
            "type": ["integer", "null"],
            "description": "The command's exit status; a negative number -N when killed by signal N; null when it timed out.",
        },
        "stdout": {
            "type": "string",
            "description": "Standard output (UTF-8, undecodable bytes replaced), cut with a marker past the cap.",
        },
        "stderr": {"type": "string", "description": "Standard error, same rules."},
        "timed_out": {"type": "boolean", "description": "Whether the command was killed at its timeout."},
        "truncated": {"type": "boolean", "description": "Whether stdout or stderr was cut."},
    },
    "required": ["exit_code", "stdout", "stderr", "timed_out", "truncated"],
}

TRUNCATED = "[... truncated: {n} more bytes of {stream} not shown; redirect to a file and read parts of it, or filter with grep/head/tail ...]\n"
"""The visible marker ending a cut stream (``.format(n=..., stream=...)``)."""

_SHELL = shutil.which("bash") or "/bin/sh"


@functools.cache
def _ignoring_xfsz() -> tuple[str, ...]:
    """A prefix starting the shell with ``SIGXFSZ`` ignored (GNU ``env --ignore-signal``), or ``()``.

    Under a file-size limit (``RLIMIT_FSIZE``) a write past it then fails with ``EFBIG`` and the
    program says "File too large", instead of being killed by the signal without a word."""
    env = shutil.which("env")
    if env is None:
        return ()
    prefix = (env, "--ignore-signal=XFSZ")
    try:
        done = subprocess.run([*prefix, "true"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return ()
    return prefix if done.returncode == 0 else ()


_GRACE = 2.0  # seconds to finish reading the pipes once the command has ended


class _Capped:
    """Keeps the first ``cap`` bytes of a stream and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.cap, self.data, self.dropped = cap, bytearray(), 0

    async def pump(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            room = self.cap - len(self.data)
            if room > 0:
                self.data += chunk[:room]
            self.dropped += max(0, len(chunk) - max(room, 0))

    def text(self, name: str) -> str:
        out = self.data.decode("utf-8", errors="replace")
        if self.dropped:
            kept = self.data.decode("utf-8", errors="ignore")
            out = (
                kept + ("" if kept.endswith("\n") or not kept else "\n") + TRUNCATED.format(n=self.dropped, stream=name)
            )
        return out


class _Protocol(asyncio.subprocess.SubprocessStreamProtocol):
    """Signals the command's exit itself: ``Process.wait()`` also waits for the pipes,
    which a background job may hold open."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=65536, loop=loop)
        self.exited = asyncio.Event()

    def process_exited(self) -> None:
        super().process_exited()
        self.exited.set()


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


async def run_command(
    command: str, cwd: Path, timeout: float, max_output_bytes: int, stdin: str | None = None
) -> dict[str, Any]:
    """Run ``command`` in ``cwd``; the structured result (see :data:`OUTPUT_SCHEMA`)."""
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.subprocess_exec(
        lambda: _Protocol(loop),
        *_ignoring_xfsz(),
        _SHELL,
        "-c",
        command,
        cwd=str(cwd),
        start_new_session=True,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    proc = asyncio.subprocess.Process(transport, protocol, loop)
    assert proc.stdout is not None and proc.stderr is not None  # both are pipes (above)
    out, err = _Capped(max_output_bytes), _Capped(max_output_bytes)
    readers = [asyncio.ensure_future(out.pump(proc.stdout)), asyncio.ensure_future(err.pump(proc.stderr))]
    timed_out = False
    try:
        if stdin is not None and proc.stdin is not None:  # a pipe when stdin is given (above)
            with contextlib.suppress(ConnectionError, OSError):
                proc.stdin.write(stdin.encode())
                await proc.stdin.drain()
            with contextlib.suppress(ConnectionError, OSError):
                proc.stdin.close()
        try:
            await asyncio.wait_for(protocol.exited.wait(), timeout)
        except TimeoutError:
            timed_out = True
    finally:
        _kill_group(proc)  # the command's leftovers (background jobs) too
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await protocol.exited.wait()
        done, pending = await asyncio.wait(readers, timeout=_GRACE)
        for task in pending:  # a pipe held open by a process that left the group
            task.cancel()
        transport.close()
    return {
        "exit_code": None if timed_out else transport.get_returncode(),
        "stdout": out.text("stdout"),
        "stderr": err.text("stderr"),
        "timed_out": timed_out,
        "truncated": bool(out.dropped or err.dropped),
    }


def render(result: dict[str, Any], timeout: float) -> str:
    """The text form of a result: status line, then the non-empty streams."""
    if result["timed_out"]:
        head = f"timed out after {timeout:g} s: the command was killed (exit_code null)"
    elif result["exit_code"] == -signal.SIGXFSZ:
        head = f"exit_code: {result['exit_code']} (killed by SIGXFSZ: a file reached the file-size limit)"
    else:
        head = f"exit_code: {result['exit_code']}"
    parts = [head]
    for name in ("stdout", "stderr"):
        if result[name]:
            parts.append(f"--- {name} ---\n{result[name]}")
    if not result["stdout"] and not result["stderr"]:
        parts.append("(no output)")
    return "\n".join(parts)


INSTRUCTIONS = (
    "`run` runs a shell command (bash) in the workspace folder, which is the working directory. "
    "Each call is a fresh shell: `cd` and variables do not carry over (chain with && instead). "
    "Long outputs are cut with a marker; redirect to a file and read it in parts."
)
RUN_DESCRIPTION = """Run a shell command in the workspace; returns exit_code, stdout, stderr.

Each call starts a new shell in the workspace folder. The command and anything it started are
killed at the timeout or when it exits. Output beyond the cap is cut with a visible marker."""
COMMAND_HELP = "The command line, run with bash -c in the workspace folder, e.g. 'ls -la' or 'python -m pytest -q'."
STDIN_HELP = "Text given to the command on standard input (default: none)."


def timeout_help(cap: dict[str, float]) -> str:
    return f"Seconds before the command is killed (default {cap['default_timeout']:g}, at most {cap['max_timeout']:g})."


def limits(overrides: dict[str, float]) -> dict[str, float]:
    """:data:`DEFAULT_LIMITS` with ``overrides`` (unknown names refused)."""
    unknown = set(overrides) - set(DEFAULT_LIMITS)
    if unknown:
        raise TypeError(f"unknown limit(s) {sorted(unknown)}; known: {sorted(DEFAULT_LIMITS)}")
    return {**DEFAULT_LIMITS, **overrides}


def root_of(ctx: Any) -> Path:
    root = Path(os.path.realpath(Path(getattr(ctx, "workspace", ctx)).expanduser()))
    if not root.is_dir():
        raise NotADirectoryError(f"shell root {str(root)!r} is not a directory; create it or pass another --root")
    return root


class Refused(Exception):
    """A call the tool refuses (its message says why): an error result."""


async def call(
    root: Path, cap: dict[str, float], command: str, timeout: float | None, stdin: str | None
) -> tuple[str, dict[str, Any], bool]:
    """One ``run`` call: (text, structured, is_error); :class:`Refused` for bad input."""
    if not command.strip():
        raise Refused("command is empty; give a shell command such as 'ls'.")
    if len(command) > cap["max_command_chars"]:
        raise Refused(
            f"command is {len(command)} characters; the limit is {int(cap['max_command_chars'])}. "
            "Write a script file and run it instead."
        )
    if stdin is not None and len(stdin.encode()) > cap["max_stdin_bytes"]:
        raise Refused(
            f"stdin is {len(stdin.encode())} bytes; the limit is {int(cap['max_stdin_bytes'])}. "
            "Write it to a file instead."
        )
    seconds = cap["default_timeout"] if timeout is None else timeout
    if seconds > cap["max_timeout"]:
        raise Refused(f"timeout {seconds:g} s is above this server's limit of {cap['max_timeout']:g} s.")
    if not root.is_dir():
        raise Refused("the workspace folder no longer exists; it cannot be used as the working directory.")
    try:
        result = await run_command(command, root, seconds, int(cap["max_output_bytes"]), stdin)
    except OSError as e:
        raise Refused(f"could not start the shell: {e.strerror or e}.") from None
    return render(result, seconds), result, result["timed_out"]


ANNOTATIONS: dict[str, dict[str, Any]] = {
    "run": hints("Run a shell command", read_only=False, destructive=True, idempotent=False, open_world=True),
}
"""Each tool's MCP annotations: arbitrary commands may change or remove anything it can reach and, where the
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
                    "command": {"description": COMMAND_HELP, "type": "string"},
                    "timeout": {
                        "anyOf": [{"exclusiveMinimum": 0, "type": "number"}, {"type": "null"}],
                        "default": None,
                        "description": timeout_help(cap),
                    },
                    "stdin": {
                        "anyOf": [{"type": "string"}, {"type": "null"}],
                        "default": None,
                        "description": STDIN_HELP,
                    },
                },
                "required": ["command"],
                "type": "object",
            },
            "outputSchema": OUTPUT_SCHEMA,
            "annotations": ANNOTATIONS["run"],
        }
    ]


async def serve_lean(ctx: Any, **overrides: float) -> None:
    """Serve the tools over stdio with :mod:`openenv_mcp.tool_servers.lean` (no MCP imports: fast start)."""
    from ..lean import Reply, ToolFailure, serve

    cap = limits(overrides)
    root = root_of(ctx)

    async def run(arguments: dict[str, Any]) -> Reply:
        try:
            text, structured, is_error = await call(
                root, cap, arguments["command"], arguments.get("timeout"), arguments.get("stdin")
            )
        except Refused as e:
            raise ToolFailure(str(e)) from None
        return Reply(text, structured, is_error)

    await serve({"name": "shell", "instructions": INSTRUCTIONS}, tool_definitions(cap), {"run": run})
