"""What an unprivileged uid can reach on the host, and the mount namespace that exposes the rest.

A server dropped to an episode's uid must reach its program and runtime. When they sit under a
private folder (``/root``...), :func:`exposing_wrap` builds a ``bwrap`` mount namespace (as root)
that is the host's tree except that each such folder becomes an empty searchable one with just the
needed paths bound back in.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["exposing_wrap", "outermost", "private_ancestor", "reachable_by_others"]


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
        args += ["--size", "65536", "--perms", "0755", "--tmpfs", mask]  # root's: the server cannot write it
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
