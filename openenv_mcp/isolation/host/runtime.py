"""What a command needs from the host to run: its program's runtime, found from the files themselves.

A boundary that shows only part of the host (``sandbox``, or ``process`` exposing a runtime under a
private folder such as ``/root``) binds these folders read-only:

* a **virtualenv** holding the program or a script (its ``pyvenv.cfg`` is found by walking up): the
  virtualenv's folder and its base interpreter's prefix (``home`` in ``pyvenv.cfg``);
* the **interpreter of a script** (its ``#!`` line; ``#!/usr/bin/env NAME`` is looked up on the
  server's ``PATH``), and that interpreter's own runtime;
* a **Node package**: for a JavaScript file, the folder its modules resolve from: the outermost
  ``node_modules`` in its path, else the nearest folder holding a ``package.json`` or
  ``node_modules`` (the package root, with its ``node_modules``).

Only what the files name is followed, and a folder found by walking up is never bound whole when it
is a home or a shared top-level folder (:func:`too_wide`): a runtime under ``/root`` never exposes
the rest of ``/root``.

:func:`command_paths` is the whole list for one command: its program and prefix, the absolute paths
it names, the environment's folder, the runtime above and, for this interpreter, its prefixes,
the folders ``.pth`` files add to its ``sys.path`` (:func:`site_paths`) and the folders ``openenv_mcp``
is imported from (:func:`package_dirs`). The rest of this process's ``sys.path`` (a script's folder,
what pytest inserts) is not the child's: it is not bound.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from openenv_mcp.isolation.host.launch import SYSTEM_PATH

__all__ = [
    "command_paths",
    "node_root_of",
    "package_dirs",
    "runtime_paths",
    "shebang_of",
    "site_paths",
    "too_wide",
    "virtualenv_of",
]

NODE_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".mts", ".cts")
_WALK = 6
"""Folders walked up from a program looking for its virtualenv."""


def too_wide(path: str) -> bool:
    """Whether a folder found by walking up is too wide to bind whole: ``/``, a home (``/root``,
    ``/home/NAME``) or a shared temporary folder would expose far more than a runtime (keys, other
    users' files). Such a folder is never bound for a runtime; list what is needed in ``ro_bind``."""
    real = os.path.realpath(path).rstrip("/") or "/"
    homes = {"/", "/root", "/home", "/tmp", "/var", "/var/tmp", "/usr", "/opt", "/srv", "/mnt", "/media", "/run"}
    return real in homes or os.path.dirname(real) == "/home" or real == os.path.realpath(os.path.expanduser("~"))


def virtualenv_of(path: str) -> list[str]:
    """The virtualenv holding ``path`` (by its ``pyvenv.cfg``) and its base interpreter's prefix."""
    folder = Path(os.path.abspath(path)).parent
    for candidate in [folder, *folder.parents][:_WALK]:
        cfg = candidate / "pyvenv.cfg"
        try:
            text = cfg.read_text(errors="replace")
        except OSError:
            continue
        if too_wide(str(candidate)):
            return []
        out = [str(candidate)]
        for line in text.splitlines():
            key, _, value = line.partition("=")
            if key.strip() in ("home", "base-prefix", "base-executable", "executable"):
                value = value.strip()
                if value.startswith("/"):
                    target = value if key.strip() in ("home", "base-prefix") else os.path.dirname(value)
                    for p in (target, os.path.realpath(target)):
                        # ``home`` is the base interpreter's bin folder: bind its prefix (lib/ is there)
                        prefix = os.path.dirname(p) if os.path.basename(p) == "bin" else p
                        if not too_wide(prefix):
                            out.append(prefix)
        return out
    return []


def shebang_of(path: str, search_path: str) -> str | None:
    """The interpreter a script's ``#!`` line names (``env NAME`` looked up on ``search_path``)."""
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode(errors="replace").split()
    if not words:
        return None
    if os.path.basename(words[0]) == "env":
        names = [w for w in words[1:] if not w.startswith("-")]
        return shutil.which(names[0], path=search_path) if names else None
    return words[0]


def node_root_of(path: str) -> str | None:
    """The folder a JavaScript file's modules resolve from: the outermost ``node_modules`` in its
    path, else the nearest folder with a ``package.json`` or ``node_modules`` (its package root,
    or only that ``node_modules`` when the package root is too wide to bind, e.g. ``/root``)."""
    parts = Path(os.path.abspath(path)).parts
    if "node_modules" in parts:
        return str(Path(*parts[: parts.index("node_modules") + 1]))
    for folder in Path(os.path.abspath(path)).parents:
        if (folder / "package.json").is_file() or (folder / "node_modules").is_dir():
            if not too_wide(str(folder)):
                return str(folder)
            modules = folder / "node_modules"
            return str(modules) if modules.is_dir() else None
    return None


def runtime_paths(argv: list[str], search_path: str) -> list[str]:
    """Host paths the command's runtime needs beyond the files it names (see the module docstring)."""
    out: list[str] = []
    todo = [argv[0], *[a for a in argv[1:] if a.startswith("/")]]
    seen: set[str] = set()
    while todo:
        path = todo.pop(0)
        if path in seen or not os.path.isfile(path):
            continue
        seen.add(path)
        found = virtualenv_of(path)
        real = os.path.realpath(path)
        if real != path:
            found += virtualenv_of(real)
            todo.append(real)
        interpreter = shebang_of(path, search_path)
        if interpreter is not None:
            found.append(interpreter)
            prefix = os.path.dirname(os.path.dirname(os.path.realpath(interpreter)))
            if not too_wide(prefix):
                found.append(prefix)
            todo.append(interpreter)
        node_like = real.endswith(NODE_SUFFIXES) or (
            interpreter is not None and "node" in os.path.basename(interpreter)
        )
        if node_like:  # where Node resolves the script's modules from: its real folder (and as named)
            roots = [node_root_of(real), node_root_of(os.path.normpath(path))]
            found += [r for i, r in enumerate(roots) if r is not None and r not in roots[:i]]
        out += [p for p in found if p not in out and os.path.exists(p)]
    return out


def command_paths(argv: list[str], base_dir: Path) -> list[str]:
    """Host paths a command needs to run: its program and prefix, absolute paths in it, the
    environment's folder and, for this interpreter, its prefixes, its ``.pth`` folders and this package."""
    program = os.path.realpath(argv[0])
    prefix = os.path.dirname(os.path.dirname(program))
    # as named, without ``..`` (``{env_dir}/../runtime/...`` is not inside ``{env_dir}``): a folder bound at
    # a named path that runs through links is found there again (the program is executed by that name)
    named = [os.path.normpath(a) for a in argv if a.startswith("/")]
    paths = [str(base_dir), program, *named, *([] if too_wide(prefix) else [prefix])]
    paths += [a for a in named if os.path.exists(a)]
    paths += runtime_paths(argv, f"{os.path.dirname(argv[0])}:{SYSTEM_PATH}")
    if argv[0] == sys.executable or program == os.path.realpath(sys.executable):
        paths += [sys.prefix, sys.base_prefix, os.path.realpath(sys.base_prefix), *package_dirs(), *site_paths()]
    out: list[str] = []
    for path in paths:
        if path and os.path.exists(path) and path not in out:
            out.append(path)
    return out


def site_paths() -> list[str]:
    """The folders this interpreter's ``.pth`` files (in its site-packages) add to ``sys.path``: a child
    interpreter of the same virtualenv adds them too (an editable install in compat mode, say)."""
    import site

    out: list[str] = []
    for folder in site.getsitepackages():
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(".pth"))
        except OSError:
            continue
        for name in names:
            try:
                lines = Path(folder, name).read_text(errors="replace").splitlines()
            except OSError:
                continue
            for line in lines:
                line = line.strip()
                if line and not line.startswith(("#", "import ", "import\t")):
                    path = os.path.realpath(os.path.join(folder, line))
                    if os.path.isdir(path) and path not in out:
                        out.append(path)
    return out


def package_dirs() -> list[str]:
    """The folders the import system loads ``openenv_mcp`` and its tool servers from.

    Found through the import system, not assumed: in a wheel they are one folder in site-packages; in
    an editable install ``openenv_mcp.tool_servers`` maps to the checkout's top-level ``tool_servers/``
    (the rest of the checkout is not needed, so not bound; nor is ``envs/``: no sandbox imports an
    environment, and their folders hold grader data, see :mod:`openenv_mcp.isolation.host.allowlist`).
    """
    import importlib.util

    out: list[str] = []
    for name in ("openenv_mcp", "openenv_mcp.tool_servers"):
        spec = importlib.util.find_spec(name)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            if os.path.realpath(folder) not in out:
                out.append(os.path.realpath(folder))
    return out
