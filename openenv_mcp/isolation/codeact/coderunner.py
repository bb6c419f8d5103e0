"""The CodeAct runner: a persistent Python interpreter for one episode's agent code.

Run as a program (``python coderunner.py``) inside the ``sandbox`` boundary, as
the episode's unprivileged code uid; standard library only, so it imports
nothing of the host package. It speaks JSON lines on its original stdin/stdout
(the *channel*); agent code never sees those descriptors' numbers: fd 0 is
``/dev/null`` and fds 1/2 are private, size-limited files read back after each
run.

Channel (one JSON object per line):

* host -> runner: ``{"op": "init", "tools": [...], "output_bytes": N}`` once;
  ``{"op": "run", "id": ..., "code": "..."}``; ``{"op": "result", "is_error": b, "text": s,
  "structured": ...}`` answering a call.
* runner -> host: ``{"op": "call", "id", "name": ..., "arguments": {...}}`` (one
  at a time: the runner waits for its result); ``{"op": "done", "id", "stdout",
  "stderr", "value", "exception", "traceback", "threads", "stuck"}`` ending a run (``threads``: how
  many threads the code left running, ``stuck``: how many of them outlived being stopped). ``id`` is
  the run's.

Inside, ``import tools`` gives one function per episode tool (see :func:`make_function`);
they, ``ToolError`` and ``tools`` are also ready in the code's globals.
Nothing the code does here is trusted by the host: the channel is the only way
out, and the host dispatches each call to its own episode only.
"""

from __future__ import annotations

import ast
import builtins
import ctypes
import inspect
import json
import keyword
import linecache
import os
import resource
import signal
import sys
import threading
import time
import traceback
import types
from functools import reduce
from operator import or_
from typing import Any

FILE_LIMIT = 64 * 1024 * 1024
"""RLIMIT_FSIZE when none was inherited: no single file (stdout/stderr capture included) grows past this.
The interpreter's launcher sets ``code_limits.file_mb``; a lower inherited limit is kept."""

REAP_SECONDS = 5.0
"""How long a run's end waits for the processes it killed to be gone (a process stuck in the kernel
is left to the episode's cgroup and uid cleanup)."""

THREAD_GRACE = 0.5
"""How long a run's end waits for the threads the code started to end by themselves, and again for
those told to stop (see :func:`_stop_threads`)."""

PR_SET_CHILD_SUBREAPER = 36

_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
    "null": type(None),
}


class ToolError(Exception):
    """A tool answered with an error result (``isError``); the message is its text."""


class _Channel:
    def __init__(self) -> None:
        self.rx = os.fdopen(os.dup(0), "rb")
        self.tx = os.fdopen(os.dup(1), "wb")

    def send(self, message: dict[str, Any]) -> None:
        self.tx.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        self.tx.flush()

    def receive(self) -> dict[str, Any]:
        line = self.rx.readline()
        if not line:
            os._exit(0)  # the host went away
        return json.loads(line)


CHANNEL: _Channel | None = None
RUN_ID = ""
"""The current run's id (from the host); every message of the run carries it, so a stale or
stray line from an earlier run is recognised and dropped by the host."""
OWNER = os.getpid()
"""The interpreter's own process: the only one whose tool functions work (see :func:`call`)."""
MAIN_THREAD = threading.get_native_id()
"""The interpreter's own thread (the runner's loop)."""


def _annotation(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return inspect.Parameter.empty
    kind = schema.get("type")
    if isinstance(kind, list):
        parts = [_JSON_TYPES[k] for k in kind if k in _JSON_TYPES]
        return reduce(or_, parts) if parts else inspect.Parameter.empty
    if kind == "array":
        item = _annotation(schema.get("items"))
        return list if item is inspect.Parameter.empty else list[item]
    if kind in _JSON_TYPES:
        return _JSON_TYPES[kind]
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list):
        parts = [a for a in (_annotation(o) for o in options) if a is not inspect.Parameter.empty]
        return reduce(or_, parts) if parts else inspect.Parameter.empty
    return inspect.Parameter.empty


def python_name(name: str) -> str:
    """A tool or argument name as a Python identifier (other characters become ``_``)."""
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "_"
    if out[0].isdigit():
        out = "_" + out
    return out + "_" if keyword.iskeyword(out) else out


def call(name: str, arguments: dict[str, Any] | None = None) -> Any:
    """Call the tool ``name`` with ``arguments``; what every generated function does."""
    assert CHANNEL is not None
    if os.getpid() != OWNER:
        raise RuntimeError("tools can only be called from the interpreter's own process, not a forked child")
    try:
        CHANNEL.send({"op": "call", "id": RUN_ID, "name": name, "arguments": dict(arguments or {})})
    except (TypeError, ValueError) as e:
        raise TypeError(f"arguments of {name}() must be JSON values: {e}") from None
    reply = CHANNEL.receive()
    if reply.get("is_error"):
        raise ToolError(reply.get("text") or f"tool {name!r} failed")
    if reply.get("structured") is not None:
        return reply["structured"]
    return reply.get("text", "")


def make_function(tool: dict[str, Any]) -> Any:
    """A Python function for one tool: signature and docstring from its ``inputSchema``.

    Required arguments come first, without defaults; optional ones default to the
    schema's ``default`` (or ``None``) and are only sent when given (``None`` = unset).
    """
    name = tool["name"]
    schema = tool.get("inputSchema") or {}
    props = schema.get("properties") or {}
    required = [r for r in schema.get("required") or [] if r in props]
    params, wire = [], {}
    for prop in [*required, *(p for p in props if p not in required)]:
        pname = python_name(prop)
        if pname in wire:
            continue
        wire[pname] = prop
        spec = props[prop] if isinstance(props[prop], dict) else {}
        default = inspect.Parameter.empty if prop in required else spec.get("default")
        params.append(
            inspect.Parameter(
                pname, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=_annotation(spec)
            )
        )
    signature = inspect.Signature(params)

    def function(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        arguments = {wire[k]: v for k, v in bound.arguments.items() if v is not None or wire[k] in required}
        return call(name, arguments)

    lines = [tool.get("description") or f"The {name!r} tool."]
    described = [(python_name(p), props[p].get("description")) for p in props if isinstance(props[p], dict)]
    if any(d for _, d in described):
        lines += ["", "Args:"] + [f"    {p}: {d or ''}".rstrip() for p, d in described]
    lines += [
        "",
        "Returns the result's structuredContent when the tool gives one, else its text;",
        "raises ToolError(message) when the tool reports an error.",
    ]
    function.__name__ = function.__qualname__ = python_name(name)
    function.__signature__ = signature  # type: ignore[attr-defined]
    function.__doc__ = "\n".join(lines)
    function.__module__ = "tools"
    return function


def tools_module(tools: list[dict[str, Any]]) -> types.ModuleType:
    module = types.ModuleType("tools", "The episode's tools, one function each (see help() of each).")
    module.ToolError = ToolError  # type: ignore[attr-defined]
    module.call = call  # type: ignore[attr-defined]
    names = []
    for tool in tools:
        function = make_function(tool)
        setattr(module, function.__name__, function)
        names.append(function.__name__)
    ToolError.__module__ = call.__module__ = "tools"
    module.__all__ = [*names, "ToolError", "call"]  # type: ignore[attr-defined]
    return module


def _capture(fd: int, name: str) -> int:
    """Point ``fd`` at a fresh unlinked file in the private /tmp (appending: truncating it resets it)."""
    path = f"/tmp/.codeact-{name}-{os.getpid()}"
    new = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
    os.unlink(path)
    os.dup2(new, fd)
    os.close(new)
    return fd


def _take(fd: int, limit: int) -> str:
    size = os.fstat(fd).st_size
    data = os.pread(fd, limit, 0)
    os.ftruncate(fd, 0)
    text = data.decode(errors="replace")
    if size > limit:
        text += f"\n... [output cut: {size} bytes, limit {limit}]"
    return text


def _reap() -> None:
    """Kill every process the code started and wait until they are gone (nothing outlives a run).

    ``kill(-1)`` reaches exactly this uid's processes in the sandbox's PID namespace, which are the
    interpreter's descendants; the interpreter is their subreaper, so each one is reaped here and
    none is still dying when the run's result is sent. The kill is repeated until no child is left:
    a process forking while the first signal went out is caught by the next one."""
    deadline = time.monotonic() + REAP_SECONDS
    while time.monotonic() < deadline:
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        try:
            while (pid := os.waitpid(-1, os.WNOHANG)[0]) > 0:
                pass
        except ChildProcessError:
            return  # no child left
        if pid == 0:
            time.sleep(0.001)  # children still dying: re-kill and reap


def _other_threads() -> list[str]:
    """The threads of this process other than the runner's own (native ids)."""
    try:
        return [t for t in os.listdir("/proc/self/task") if t != str(MAIN_THREAD)]
    except OSError:  # no /proc: the threads Python knows of
        return [str(i) for i in sys._current_frames() if i != threading.get_ident()]


def _stop_threads() -> tuple[int, int]:
    """Stop the threads the code left running; ``(how many were left, how many outlived being stopped)``.

    They get :data:`THREAD_GRACE` s to end; then each Python thread is sent ``SystemExit`` (raised at its
    next bytecode, again every 10 ms) for as long again. A thread that swallows it, sits in a blocking call
    or has no Python state outlives this: the host then restarts the interpreter. Between runs the host
    freezes the interpreter anyway, so nothing computes outside a run whatever this finds."""
    deadline = time.monotonic() + THREAD_GRACE
    while (left := _other_threads()) and time.monotonic() < deadline:
        time.sleep(0.005)
    if not left:
        return 0, 0
    deadline = time.monotonic() + THREAD_GRACE
    while (stuck := _other_threads()) and time.monotonic() < deadline:
        for ident in sys._current_frames():
            if ident != threading.get_ident():
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(SystemExit))
        time.sleep(0.01)
    return len(left), len(stuck)


def _subreaper() -> None:
    """Orphans of the code's processes are re-parented to the interpreter, so :func:`_reap` waits for them."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: kill(-1) still reaches them


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [cut: {len(text)} characters, limit {limit}]"


def run(code: str, namespace: dict[str, Any], limit: int) -> dict[str, Any]:
    value = exception = trace = None
    filename = f"<code {run.count}>"  # type: ignore[attr-defined]
    run.count += 1  # type: ignore[attr-defined]
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    try:
        tree = ast.parse(code, filename, "exec")
        last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        if last is not None:
            tree.body.pop()
        exec(compile(tree, filename, "exec"), namespace)
        if last is not None:
            result = eval(compile(ast.Expression(last.value), filename, "eval"), namespace)
            if result is not None:
                namespace["_"] = result
                value = _cut(repr(result), limit)
    except BaseException as e:  # noqa: BLE001 - SystemExit/KeyboardInterrupt too: the interpreter lives on
        exception = _cut(f"{type(e).__name__}: {e}" if str(e) else type(e).__name__, limit)
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
            tb = tb.tb_next  # the runner's own frames are not the agent's business
        trace = _cut("".join(traceback.format_exception(type(e), e, tb)), limit)
    if os.getpid() != OWNER:  # a forked child that ran off the end of the code: it never reports
        os._exit(0)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed or broken stream is the code's doing
            pass
    _reap()  # first the processes (a thread waiting for one is then free to end)
    threads, stuck = _stop_threads()
    _reap()  # and what a thread started meanwhile
    return {
        "op": "done",
        "id": RUN_ID,
        "stdout": _take(1, limit),
        "stderr": _take(2, limit),
        "value": value,
        "exception": exception,
        "traceback": trace,
        "threads": threads,
        "stuck": stuck,
    }


run.count = 1  # type: ignore[attr-defined]


def _limit_file_size() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    size = min(x for x in (FILE_LIMIT, soft, hard) if x != resource.RLIM_INFINITY)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


def main() -> None:
    global CHANNEL, MAIN_THREAD, OWNER, RUN_ID
    OWNER = os.getpid()
    MAIN_THREAD = threading.get_native_id()
    _subreaper()
    if sys.path and os.path.dirname(os.path.abspath(__file__)) == os.path.abspath(sys.path[0] or "."):
        del sys.path[0]  # the package folder is not the agent's import path
    CHANNEL = _Channel()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    _capture(1, "stdout")
    _capture(2, "stderr")
    _limit_file_size()
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an over-long write raises OSError(EFBIG)
    sys.stdin = open(0, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    init = CHANNEL.receive()
    limit = int(init.get("output_bytes") or 65536)
    module = sys.modules["tools"] = tools_module(init.get("tools") or [])
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins, "tools": module}
    namespace.update((name, getattr(module, name)) for name in module.__all__)  # as after `from tools import *`
    CHANNEL.send({"op": "ready"})
    while True:
        message = CHANNEL.receive()
        if message.get("op") == "run":
            RUN_ID = str(message.get("id", ""))
            CHANNEL.send(run(str(message.get("code", "")), namespace, limit))


if __name__ == "__main__":
    main()
