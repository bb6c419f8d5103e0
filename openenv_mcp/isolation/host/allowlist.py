"""What a sandbox may bind from the host: its runtime and imports, never grader data or a checkout.

A sandbox (tool servers, fast-start zygotes and their forks, CodeAct interpreters, reward runners)
shows the system folders, the workspace and the host paths its command needs
(:func:`openenv_mcp.isolation.host.runtime.command_paths`). :func:`allowlisted` turns that list into
what is bound, by construction rather than by masking:

* **sealed** paths (:func:`sealed_paths`) are never inside a bound folder: every bundled
  environment's folder (tasks, hidden tests, solutions, rewards' data; in a checkout ``envs/NAME``,
  in a wheel ``site-packages/openenv_mcp/envs/NAME``) and the checkout's ``.git``. A needed folder
  that holds one (a virtualenv whose site-packages holds the installed package, the package's
  ``envs/`` folder) is bound child by child, leaving the sealed ones out; the one exception is
  what the sandbox's own env file names inside its own folder (``{env_dir}/node_modules/...``);
* a **checkout** (the folder an editable install maps the package from) is never bound whole, nor
  any folder above it (that would show what lies beside it): only its package folders
  (``openenv_mcp/``, ``tool_servers/``), its virtualenv and the files a command names are.

An env file's ``hide`` paths are still masked on top: an extra for an environment's own folder,
not the defense.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Iterable

__all__ = ["allowlisted", "checkout_roots", "env_folders", "inside", "sealed_paths"]

_SPLIT_LIMIT = 4096
"""Bind mounts one split may add (a needed folder holding a sealed one is bound child by child)."""


def inside(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or lies below it (plain string paths, already resolved)."""
    folder = folder.rstrip("/") or "/"
    return path == folder or path.startswith(folder + "/") or folder == "/"


def _search_locations(name: str) -> list[str]:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return []
    return [os.path.realpath(p) for p in (spec.submodule_search_locations or [])] if spec else []


@functools.cache
def env_folders() -> tuple[str, ...]:
    """Every bundled environment's folder (the packages under ``openenv_mcp.envs``), resolved."""
    out: list[str] = []
    for location in _search_locations("openenv_mcp.envs"):
        try:
            names = sorted(os.listdir(location))
        except OSError:
            continue
        out += [
            os.path.join(location, n) for n in names if n != "__pycache__" and os.path.isdir(os.path.join(location, n))
        ]
    return tuple(out)


@functools.cache
def checkout_roots() -> tuple[str, ...]:
    """The checkouts the package is imported from (an editable install): the folder above the
    ``openenv_mcp`` package folder when it holds a ``pyproject.toml`` or ``.git``; none for a wheel."""
    out: list[str] = []
    for name in ("openenv_mcp", "openenv_mcp.tool_servers", "openenv_mcp.envs"):
        for folder in _search_locations(name):
            parent = os.path.dirname(folder)
            marked = any(os.path.lexists(os.path.join(parent, m)) for m in ("pyproject.toml", ".git"))
            if marked and parent not in out:
                out.append(parent)
    return tuple(out)


def sealed_paths() -> list[str]:
    """Paths no sandbox binds nor shows inside a bound folder (see the module docstring)."""
    return [*env_folders(), *(os.path.join(root, ".git") for root in checkout_roots())]


def _split(path: str, sealed: list[str], budget: list[int]) -> list[str]:
    """``path`` as folders and files to bind, without any sealed path inside them."""
    if not any(inside(s, path) for s in sealed):
        return [path]
    if os.path.islink(path) or not os.path.isdir(path):
        return []
    out: list[str] = []
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return []
    for name in names:
        child = os.path.join(path, name)
        if any(inside(child, s) for s in sealed) or not os.path.exists(child):
            continue
        budget[0] -= 1
        if budget[0] < 0:
            return out
        out += _split(child, sealed, budget)
    return out


def allowlisted(
    paths: Iterable[str],
    own_env: str | None = None,
    *,
    sealed: Iterable[str] | None = None,
    checkouts: Iterable[str] | None = None,
) -> list[str]:
    """The host paths to bind for ``paths`` (resolved, existing): sealed paths and what lies in them
    left out (except paths strictly inside ``own_env``, the sandbox's own environment folder when its
    env file names it), checkouts and the folders above them left out, a folder holding a sealed path
    split into its children. The result may hold a path inside another one (see ``outermost``).
    ``sealed`` and ``checkouts`` default to this installation's (:func:`sealed_paths`, :func:`checkout_roots`)."""
    sealed = sealed_paths() if sealed is None else list(sealed)
    roots = checkout_roots() if checkouts is None else tuple(checkouts)
    budget = [_SPLIT_LIMIT]
    out: list[str] = []
    for path in paths:
        own = own_env is not None and inside(path, own_env) and path != own_env
        if not own and any(inside(path, s) for s in sealed):
            continue
        if any(inside(root, path) for root in roots):
            continue  # a checkout, or a folder above one: shows the checkout or what lies beside it
        for part in [path] if own else _split(path, sealed, budget):
            if part not in out:
                out.append(part)
    return out
