"""Scripted policies: an environment's ``reference`` and ``wrong`` solutions (and its own probes).

A solution function gets the full task (and the episode's ``seed`` if it takes a second parameter)
and returns either

* a **list** of actions (a fixed trajectory), or
* a **generator**: an interactive script that yields one action at a time and receives that
  action's observation as the value of the ``yield`` (``obs = yield action``), so it can read what
  the tools answered before choosing the next call (a browser's element refs, a server's ids).

:class:`Script` plays both the same way; :attr:`Script.played` is what it actually did.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Generator
from typing import Any

from openenv_mcp.errors import ConfigError
from openenv_mcp.types import CallTool, Observation, action_from_json

__all__ = ["Script", "call_solution"]


def _action(item: Any) -> CallTool:
    if isinstance(item, dict):
        item = action_from_json({"type": "call_tool", **item})
    if not isinstance(item, CallTool):
        raise ConfigError(f"a scripted solution produced {item!r}, not a tool call")
    return item


def call_solution(fn: Callable[..., Any], task: Any, seed: int | None) -> Any:
    """``fn(task, seed)`` if it takes two parameters, else ``fn(task)``."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return fn(task)
    return fn(task, seed) if len(params) >= 2 else fn(task)


class Script:
    """One scripted episode's actions: ``action = script.next(last_observation)`` until ``None``."""

    def __init__(self, produced: Any) -> None:
        self.interactive = inspect.isgenerator(produced)
        self._gen: Generator[Any, Any, Any] | None = produced if self.interactive else None
        self._items = [] if self.interactive else list(produced or [])
        self._started = False
        self.played: list[CallTool] = []
        """The actions handed out so far."""

    def next(self, observation: Observation | None = None) -> CallTool | None:
        """The next action (``observation``: what the previous one returned), ``None`` when done."""
        if self._gen is None:
            if len(self.played) >= len(self._items):
                return None
            action = _action(self._items[len(self.played)])
        else:
            try:
                item = self._gen.send(observation) if self._started else next(self._gen)
            except StopIteration:
                return None
            self._started = True
            action = _action(item)
        self.played.append(action)
        return action

    def close(self) -> None:
        if self._gen is not None:
            self._gen.close()

    def actions(self) -> list[CallTool]:
        """All actions of a fixed trajectory (a :class:`ConfigError` for an interactive script)."""
        if self.interactive:
            raise ConfigError("this solution is an interactive script: it needs the observations (play it)")
        return [_action(i) for i in self._items]
