"""Finding environments by name or path, and ``make()``.

Environments are found by name in two places:

* the folders in ``$OPENENV_MCP_ENVS`` (``:``-separated; each holds ``NAME/env.toml`` folders), first;
* the entry-point group ``openenv_mcp.envs``, where the built-in environments are registered and any
  installed package can register its own (the way Gymnasium registers environments)::

      # pyproject.toml of a package that ships an environment
      [project.entry-points."openenv_mcp.envs"]
      my-env = "my_package:ENV_DIR"      # a folder holding env.toml (a Path or str)

  The object an entry point names may be an env folder or ``env.toml`` path, an :class:`EnvSpec`,
  or a function of no arguments returning one of those.
"""

from __future__ import annotations

import os
import warnings
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard, Unpack, cast

from openenv_mcp.client.env import AsyncEnv, Env
from openenv_mcp.client.schemes import scheme_for
from openenv_mcp.core.environment import Environment
from openenv_mcp.definitions.spec import EnvSpec, load_env_file
from openenv_mcp.errors import ConfigError, UnknownEnvironment
from openenv_mcp.types import MAKE_OPTIONS, MakeOptions

if TYPE_CHECKING:
    from openenv_mcp.client.remote import RemoteAsyncEnv

__all__ = [
    "ENTRY_POINT_GROUP",
    "env_dirs",
    "find_env",
    "is_url",
    "list_envs",
    "load_environment",
    "make",
    "make_async",
    "registered",
]

ENTRY_POINT_GROUP = "openenv_mcp.envs"
"""The entry-point group environments are registered in (built-in and third-party)."""


def env_dirs() -> list[Path]:
    """Folders searched for environments by name before the registry: ``$OPENENV_MCP_ENVS`` (``:``-separated)."""
    return [Path(p) for p in os.environ.get("OPENENV_MCP_ENVS", "").split(os.pathsep) if p]


def registered() -> dict[str, EntryPoint]:
    """Name -> entry point, for every environment registered in :data:`ENTRY_POINT_GROUP`."""
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep)
    return found


def load_entry_point(ep: EntryPoint) -> EnvSpec:
    """The :class:`EnvSpec` an entry point names (a folder, an env file, a spec, or a function returning one)."""
    where = f"environment {ep.name!r} (entry point {ep.value!r} in group {ENTRY_POINT_GROUP!r})"
    try:
        obj = ep.load()
    except Exception as e:  # a broken third-party package: say which one
        raise ConfigError(f"{where} cannot be loaded: {type(e).__name__}: {e}") from e
    if callable(obj) and not isinstance(obj, EnvSpec):
        obj = obj()
    if isinstance(obj, EnvSpec):
        return obj
    if isinstance(obj, (str, os.PathLike)) and Path(obj).exists():
        return load_env_file(Path(obj))
    raise ConfigError(f"{where} names {obj!r}: expected an env folder, an env.toml path or an EnvSpec")


def list_envs() -> list[EnvSpec]:
    """Every environment found by name, sorted (one that cannot be loaded is skipped with a warning)."""
    seen: dict[str, EnvSpec] = {}
    for root in env_dirs():
        if root.is_dir():
            for file in sorted(root.glob("*/env.toml")):
                spec = load_env_file(file)
                seen.setdefault(spec.name, spec)
    for name, ep in sorted(registered().items()):
        if name in seen:
            continue
        try:
            seen[name] = load_entry_point(ep)
        except ConfigError as e:
            warnings.warn(str(e), stacklevel=2)
    return sorted(seen.values(), key=lambda s: s.name)


def find_env(target: str | Path | EnvSpec) -> EnvSpec:
    """An :class:`EnvSpec` from a spec, a name, an env file, a folder holding one, or a target of a scheme that
    loads environment definitions (:mod:`openenv_mcp.client.schemes`)."""
    if isinstance(target, EnvSpec):
        return target
    scheme = scheme_for(target)
    if scheme is not None and scheme.load is not None:
        return scheme.load(cast(str, target))
    path = Path(target)
    is_path = path.suffix == ".toml" or os.sep in str(target) or (path / "env.toml").is_file()
    if not is_path and path.is_dir():
        # a folder without env.toml is still a name when one is registered by it: e.g. the package folder
        # `openenv-mcp init NAME` just created, next to which the user runs `openenv-mcp run NAME`
        is_path = str(target) not in registered() and not any(
            (root / str(target) / "env.toml").is_file() for root in env_dirs()
        )
    if is_path:
        if path.exists():
            return load_env_file(path)
        raise UnknownEnvironment(f"no environment file or folder at {str(target)!r}")
    for root in env_dirs():
        if (root / str(target) / "env.toml").is_file():
            return load_env_file(root / str(target))
    eps = registered()
    if str(target) in eps:
        return load_entry_point(eps[str(target)])
    names = ", ".join(sorted(eps)) or "none (is openenv-mcp installed? its metadata registers them)"
    raise UnknownEnvironment(
        f"unknown environment {str(target)!r}; registered: {names}. "
        "Give a name, a path to an env.toml, or a server URL (http://HOST:PORT)"
    )


def load_environment(target: str | Path | EnvSpec, **options: Any) -> Environment:
    """A loaded :class:`Environment` (no episode started yet)."""
    return Environment(find_env(target), **options)


def is_url(target: Any) -> TypeGuard[str]:
    """Whether ``target`` names a running server (``http(s)://`` or ``ws(s)://``) rather than an
    environment name, env file or folder: what :func:`make` connects to instead of loading."""
    return isinstance(target, str) and target.split("://", 1)[0] in ("http", "https", "ws", "wss")


def _check_options(options: dict[str, Any]) -> None:
    unknown = sorted(set(options) - MAKE_OPTIONS)
    if unknown:
        raise ConfigError(
            f"make() got unknown option(s) {', '.join(map(repr, unknown))}; "
            f"it takes {', '.join(sorted(MAKE_OPTIONS))} (openenv_mcp.types.MakeOptions documents each)"
        )


def make_async(target: str | Path | EnvSpec, **options: Unpack[MakeOptions]) -> AsyncEnv | RemoteAsyncEnv:
    """An :class:`AsyncEnv` for a built-in name, an env file/folder, or a target with a scheme.

    Options: :class:`~openenv_mcp.types.MakeOptions` (``mode``, ``call_timeout``, ``max_steps``, ``workdir``,
    ``tasks``...; an unknown one is a :class:`~openenv_mcp.errors.ConfigError` naming the accepted ones).
    A target with a scheme is resolved by the scheme registered for it (:mod:`openenv_mcp.client.schemes`):
    ``http(s)://HOST:PORT`` or ``ws(s)://`` connects to a served environment, ``ray://HOST:PORT/ENV`` gives an
    episode from a pool of ``ENV`` servers on that Ray cluster (the ``ray`` extra).
    """
    _check_options(dict(options))
    scheme = scheme_for(target)
    if scheme is not None and scheme.connect is not None:
        return cast(Any, scheme.connect(target, **options))
    if options.get("token") is not None:
        raise ConfigError("token is for a served environment (make('http://HOST:PORT', token=...)), not a local one")
    local = {k: v for k, v in options.items() if k != "token"}
    return AsyncEnv(load_environment(target, **local))


def make(target: str | Path | EnvSpec, **options: Unpack[MakeOptions]) -> Env:
    """The sync twin of :func:`make_async`."""
    return Env(make_async(target, **options))
