"""Finding environments by name or path, and ``make()``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .env import AsyncEnv, Env
from .. import envs
from ..core.environment import Environment
from ..errors import UnknownEnvironment
from ..core.spec import EnvSpec, load_env_file

__all__ = ["env_dirs", "find_env", "list_envs", "load_environment", "make", "make_async"]

BUILTIN_ENVS = Path(envs.__file__).resolve().parent
"""The reference environments (the repository's ``envs/`` folder, installed as ``openenv_mcp.envs``)."""


def env_dirs() -> list[Path]:
    """Folders searched for environments by name: ``$OPENENV_MCP_ENVS`` (``:``-separated), then built-ins."""
    extra = [Path(p) for p in os.environ.get("OPENENV_MCP_ENVS", "").split(os.pathsep) if p]
    return [*extra, BUILTIN_ENVS]


def list_envs() -> list[EnvSpec]:
    """Every environment found by name, sorted."""
    seen: dict[str, EnvSpec] = {}
    for root in env_dirs():
        if root.is_dir():
            for file in sorted(root.glob("*/env.toml")):
                spec = load_env_file(file)
                seen.setdefault(spec.name, spec)
    return sorted(seen.values(), key=lambda s: s.name)


def find_env(target: str | Path | EnvSpec) -> EnvSpec:
    """An :class:`EnvSpec` from a spec, a name, an env file or a folder holding one."""
    if isinstance(target, EnvSpec):
        return target
    path = Path(target)
    if path.suffix == ".toml" or path.is_dir() or os.sep in str(target):
        if path.exists():
            return load_env_file(path)
        raise UnknownEnvironment(f"no environment file or folder at {str(target)!r}")
    for root in env_dirs():
        if (root / str(target) / "env.toml").is_file():
            return load_env_file(root / str(target))
    names = ", ".join(s.name for s in list_envs()) or "none"
    raise UnknownEnvironment(
        f"unknown environment {str(target)!r}; built-in: {names}. "
        "Give a name, a path to an env.toml, or a server URL (http://HOST:PORT)"
    )


def load_environment(target: str | Path | EnvSpec, **options: Any) -> Environment:
    """A loaded :class:`Environment` (no episode started yet)."""
    return Environment(find_env(target), **options)


def _is_url(target: Any) -> bool:
    return isinstance(target, str) and target.split("://", 1)[0] in ("http", "https", "ws", "wss")


def make_async(target: str | Path | EnvSpec, **options: Any) -> AsyncEnv:
    """An :class:`AsyncEnv` for a built-in name, an env file/folder, or a server URL.

    Options: ``mode`` (``sim``/``prod``), ``call_timeout``, ``max_steps``, ``workdir``.
    """
    if _is_url(target):
        from .remote import RemoteAsyncEnv

        return RemoteAsyncEnv(target, **options)
    return AsyncEnv(load_environment(target, **options))


def make(target: str | Path | EnvSpec, **options: Any) -> Env:
    """The sync twin of :func:`make_async`."""
    return Env(make_async(target, **options))
