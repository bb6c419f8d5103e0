"""Target schemes: what ``make("SCHEME://...")`` or ``make("SCHEME:...")`` resolves through.

A target with a scheme is resolved by the :class:`Scheme` registered under that name in the entry-point
group :data:`SCHEME_GROUP`; the built-in ones are in openenv-mcp's own ``pyproject.toml``:

* ``http``, ``https``, ``ws``, ``wss`` — a served environment (:class:`~openenv_mcp.client.remote.RemoteAsyncEnv`);
* ``ray`` — an episode from a pool of environment servers on a Ray cluster (:mod:`openenv_mcp.ray`).

Any installed package can add a scheme the same way, without this package importing it (the registry
is why a lower layer never names a higher one)::

    # pyproject.toml of a package that adds a scheme
    [project.entry-points."openenv_mcp.schemes"]
    myhub = "my_package.hub:SCHEME"

    # my_package/hub.py
    from openenv_mcp.client.schemes import Scheme
    SCHEME = Scheme(load=load_spec)          # "myhub:NAME" -> an EnvSpec, run here like a built-in name
    # or Scheme(connect=connect)             # "myhub://..." -> an episode client of a running server

A scheme that ``load``\\ s gives an environment definition (an :class:`~openenv_mcp.definitions.spec.EnvSpec`),
so ``run``, ``serve``, ``conformance`` and ``validate`` take its targets as they take a name; one that
``connect``\\ s gives an episode client with ``reset/step/state/close`` (what :func:`make_async` returns).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from openenv_mcp.definitions.spec import EnvSpec
from openenv_mcp.errors import ConfigError

__all__ = ["SCHEME_GROUP", "Scheme", "registered_schemes", "scheme_for"]

SCHEME_GROUP = "openenv_mcp.schemes"
"""The entry-point group target schemes are registered in (built-in and third-party)."""

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")
"""A target's scheme: two characters or more before the first ``:`` (so ``C:\\env`` is a path)."""


@dataclass(frozen=True)
class Scheme:
    """How the targets of one scheme are resolved: exactly one of ``load`` and ``connect``."""

    load: Callable[[str], EnvSpec] | None = None
    """``target -> EnvSpec``: the target names an environment definition, run in this process."""
    connect: Callable[..., Any] | None = None
    """``(target, **options) -> episode client``: the target names a running server."""

    def __post_init__(self) -> None:
        if (self.load is None) == (self.connect is None):
            raise ValueError("a Scheme has exactly one of load= and connect=")


def registered_schemes() -> dict[str, Any]:
    """Scheme name -> entry point, for every scheme registered in :data:`SCHEME_GROUP` (first one wins)."""
    found: dict[str, Any] = {}
    for ep in entry_points(group=SCHEME_GROUP):
        found.setdefault(ep.name.lower(), ep)
    return found


def scheme_for(target: Any) -> Scheme | None:
    """The registered :class:`Scheme` of ``target``'s scheme, or None (no scheme, or none registered)."""
    if not isinstance(target, str) or not (match := _SCHEME.match(target)):
        return None
    ep = registered_schemes().get(match.group(1).lower())
    if ep is None:
        return None
    where = f"scheme {ep.name!r} (entry point {ep.value!r} in group {SCHEME_GROUP!r})"
    try:
        scheme = ep.load()
    except Exception as e:  # a broken third-party package: say which one
        raise ConfigError(f"{where} cannot be loaded: {type(e).__name__}: {e}") from e
    if not isinstance(scheme, Scheme):
        raise ConfigError(f"{where} names {scheme!r}: expected an openenv_mcp.client.schemes.Scheme")
    return scheme
