"""The child interpreter of the python tool server (run as a script, never imported).

Protocol: one JSON object per line. The server writes
``{"code": str, "cell": int, "max_output": int}`` to our stdin; we answer on
our original stdout with ``{"stdout", "stderr", "result", "error",
"stdout_dropped", "stderr_dropped"}``. File descriptors 0, 1 and 2 are then
pointed at ``/dev/null`` so user code (or a program it starts) cannot write
into the protocol; Python-level ``print``/``sys.stdout``/``sys.stderr`` are
captured per call, each up to ``max_output`` characters.

State (the ``__main__`` namespace) lives as long as this process.
"""

import ast
import builtins
import io
import json
import linecache
import os
import sys
import traceback

_THIS = os.path.abspath(__file__)
CUT = "[... truncated: {n} more characters of {what} not shown ...]\n"


class Capped(io.TextIOBase):
    """A text stream keeping its first ``cap`` characters and counting the rest."""

    def __init__(self, cap: int) -> None:
        super().__init__()
        self.cap, self.parts, self.size, self.dropped = cap, [], 0, 0

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def write(self, s: str) -> int:
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        room = self.cap - self.size
        if room > 0:
            self.parts.append(s[:room])
            self.size += min(len(s), room)
        self.dropped += max(0, len(s) - max(room, 0))
        return len(s)

    def value(self, what: str) -> str:
        text = "".join(self.parts)
        if self.dropped:
            text += ("" if text.endswith("\n") or not text else "\n") + CUT.format(n=self.dropped, what=what)
        return clean(text)


def clean(text: str) -> str:
    """Valid UTF-8 text (lone surrogates replaced)."""
    return text.encode("utf-8", "replace").decode("utf-8")


def clip(text: str, cap: int, what: str) -> str:
    if len(text) <= cap:
        return clean(text)
    return clean(text[:cap]) + "\n" + CUT.format(n=len(text) - cap, what=what)


def user_traceback(error: BaseException) -> str:
    """The traceback without this file's frames."""
    if isinstance(error, SyntaxError):
        return "".join(traceback.format_exception_only(type(error), error))
    tb = error.__traceback__
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) == _THIS:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(error), error, tb))


def execute(code: str, cell: int, cap: int, namespace: dict) -> dict:
    name = f"<cell {cell}>"
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    out, err = Capped(cap), Capped(cap)
    result = error = None
    sys.stdout, sys.stderr = out, err
    try:
        tree = ast.parse(code, name, "exec")
        last = None
        if tree.body and isinstance(tail := tree.body[-1], ast.Expr):
            tree.body.pop()
            last = ast.Expression(tail.value)
        exec(compile(tree, name, "exec"), namespace)
        if last is not None:
            value = eval(compile(last, name, "eval"), namespace)
            if value is not None:
                namespace["_"] = value
                result = clip(repr(value), cap, "the result")
    except BaseException as e:  # SystemExit and KeyboardInterrupt (the timeout) included
        try:
            error = clip(user_traceback(e), cap, "the traceback")
        except BaseException:
            error = f"{type(e).__name__} (its traceback could not be formatted)\n"
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    return {
        "stdout": out.value("stdout"),
        "stderr": err.value("stderr"),
        "result": result,
        "error": error,
        "stdout_dropped": out.dropped,
        "stderr_dropped": err.dropped,
    }


def main() -> None:
    root = sys.argv[1]
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.chdir(root)
    sys.path[0] = root  # the workspace's modules are importable, as in `python` started there
    sys.stdin = open(os.devnull)  # noqa: SIM115
    sys.stdout = sys.__stdout__ = open(os.devnull, "w")  # noqa: SIM115
    sys.stderr = sys.__stderr__ = open(os.devnull, "w")  # noqa: SIM115
    main_module = type(sys)("__main__")
    sys.modules["__main__"] = main_module
    namespace = main_module.__dict__
    namespace["__builtins__"] = builtins
    while True:
        try:
            line = requests.readline()
        except KeyboardInterrupt:  # an interrupt that came after the code finished
            continue
        if not line:
            return
        try:
            request = json.loads(line)
            reply = execute(request["code"], request["cell"], request["max_output"], namespace)
        except KeyboardInterrupt:
            reply = {
                "stdout": "",
                "stderr": "",
                "result": None,
                "error": "KeyboardInterrupt\n",
                "stdout_dropped": 0,
                "stderr_dropped": 0,
            }
        replies.write(json.dumps(reply, ensure_ascii=False) + "\n")
        replies.flush()


if __name__ == "__main__":
    main()
