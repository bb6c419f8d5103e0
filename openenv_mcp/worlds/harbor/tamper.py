"""What the agent changed that the verifier depends on: the container's diff against its image.

A shared verifier (Harbor's default) runs ``tests/test.sh`` in the container the agent worked in,
with its binaries, libraries and shell startup files. The engine's diff (computed by the engine,
nothing run inside) lists every path the agent added, changed or deleted; any under these is a
finding (:data:`PROTECTED`):

* the system's programs and libraries: ``/bin``, ``/sbin``, ``/lib*``, all of ``/usr`` (a fake
  ``pytest`` or ``python3`` on ``PATH``, a patched library, a ``.pth`` or ``sitecustomize`` in a
  site folder), ``/etc/alternatives``, the dynamic loader's configuration (``/etc/ld.so.*``);
* what a shell or Python reads at start: ``/etc/profile*``, ``/etc/bash.bashrc``,
  ``/etc/environment``, ``/etc/python3*``, root's ``.bashrc``/``.profile``...;
* the verifier's own folders, ``/tests`` and ``/logs/verifier`` (the agent may not create them:
  they are made fresh for the tests);
* configuration pytest reads from the root folder (``/conftest.py``, ``/pytest.ini``, ...).

Not findings: ``__pycache__`` (the verifier's Python reads no bytecode cache: it runs with
``PYTHONPYCACHEPREFIX`` pointing at a fresh folder), a folder whose only change is a child that is
itself allowed, and paths the task lets the agent change (``[openenv_mcp] agent_may_change``, globs:
a package the task asks to install into ``/usr/local``).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable

__all__ = ["PROTECTED", "findings"]

PROTECTED = (
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/usr",
    "/etc/alternatives",
    "/etc/ld.so.preload",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/profile",
    "/etc/profile.d",
    "/etc/bash.bashrc",
    "/etc/environment",
    "/etc/python3",
    "/etc/python3.*",
    "/root/.bashrc",
    "/root/.profile",
    "/root/.bash_profile",
    "/root/.bash_login",
    "/root/.pydistutils.cfg",
    "/root/.config/pip",
    "/root/.local",
    "/tests",
    "/logs/verifier",
)
ROOT_CONFIG = (
    "conftest.py",
    "pytest.ini",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
    "sitecustomize.py",
    "usercustomize.py",
)
"""Files in ``/`` pytest or Python would read (rootdir configuration, a ``conftest.py`` above ``/tests``)."""


def _protected(path: str) -> bool:
    for prefix in PROTECTED:
        if "*" in prefix:
            head = path.split("/")[: prefix.count("/") + 1]
            if fnmatch.fnmatchcase("/".join(head), prefix):
                return True
        elif path == prefix or path.startswith(prefix + "/"):
            return True
    parent, _, name = path.rpartition("/")
    return parent == "" and (name in ROOT_CONFIG or name.endswith(".pth"))


def findings(changes: Iterable[tuple[str, str]], allowed: Iterable[str] = ()) -> list[str]:
    """The changes (``(path, kind)`` from the engine's diff) the verifier must not run with, as
    ``"added /usr/local/bin/pytest"`` lines (sorted)."""
    changes = list(changes)
    allowed = tuple(allowed)
    paths = {p for p, _ in changes}

    def ok(path: str) -> bool:
        return "/__pycache__" in path or any(fnmatch.fnmatchcase(path, pattern) for pattern in allowed)

    out = []
    for path, kind in changes:
        if ok(path) or not _protected(path):
            continue
        if kind == "changed" and any(other.startswith(path + "/") for other in paths):
            # a folder listed because something below it changed: judged by its children, unless
            # none of them is a finding either way (then the folder itself only changed contents)
            continue
        out.append(f"{kind} {path}")
    return sorted(out)
