"""How the filesystem tools read an agent's path and refuse a call: the messages, the
:class:`Refused` error, and the wrapper that turns an operating-system error into a tool error
naming the agent's path (never a host path)."""

from __future__ import annotations

import errno
import functools
from collections.abc import Callable
from typing import Any

from .fdops import Special
from .fdpath import Outside, split

__all__ = ["NOT_REGULAR", "OUTSIDE", "Refused", "parts_of", "rel", "safe", "size_text", "utf8_text"]

OUTSIDE = "Access denied: path {path!r} is outside the workspace. Use a path relative to the workspace root, such as 'notes.txt' or 'src/app.py'."
"""The refusal for any path that resolves outside the root (``.format(path=...)``)."""

NOT_REGULAR = "{path!r} is not a regular file (a pipe, socket or device); it cannot be opened."
"""The refusal for FIFOs, sockets and devices (``.format(path=...)``)."""


class Refused(Exception):
    """A tool call refused with a message for the agent (FastMCP's ``ToolError`` twin)."""


def parts_of(path: Any) -> tuple[str, ...]:
    if not isinstance(path, str):
        raise Refused(f"Path must be a string, got {type(path).__name__}.")
    try:
        return split(path)
    except Outside:
        raise Refused(OUTSIDE.format(path=path)) from None
    except ValueError as e:
        raise Refused(str(e)) from None


def rel(parts: tuple[str, ...]) -> str:
    """How the agent should name a path: relative to the root, ``/``-separated."""
    return "/".join(parts) or "."


def utf8_text(raw: bytes, size: int, path: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused(f"File {path!r} is not UTF-8 text ({size} bytes, binary); it cannot be read as text.") from None


def safe(fn: Callable[..., str]) -> Callable[..., str]:
    """Turn an operating-system error into a tool error naming the agent's path, never a host path."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> str:
        what = kwargs.get("path", kwargs.get("source", ""))
        try:
            return fn(*args, **kwargs)
        except Outside:
            raise Refused(OUTSIDE.format(path=what)) from None
        except Special:
            raise Refused(NOT_REGULAR.format(path=what)) from None
        except OSError as e:
            if e.errno == errno.ENXIO:  # a socket, a FIFO nobody reads, a device without a driver
                raise Refused(NOT_REGULAR.format(path=what)) from None
            reason = e.strerror or type(e).__name__
            raise Refused(f"{fn.__name__.rstrip('_')} failed for {what!r}: {reason}.") from None

    return wrapper


def size_text(n: int) -> str:
    return f"{n} byte" if n == 1 else f"{n} bytes"
