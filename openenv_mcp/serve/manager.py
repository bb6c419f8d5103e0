"""The episode manager of a server: live episodes by id, owners, a cap, idle reaping.

Every face of ``openenv-mcp serve`` finds its episodes here: the control plane
(WebSocket and HTTP), ``/episodes/{id}/mcp``, the ``openenv/episode`` ``_meta``
key and the episode of each 2025-11-25 MCP session. Lookups, creation and
closing are O(1) dict operations; the reaper scans once per interval.

* **Cap.** ``max_episodes`` bounds live episodes (those being created
  included); one more raises :class:`~openenv_mcp.errors.EpisodeLimit` with a
  message that says what to do. Episodes that bare ``/mcp`` sessions create
  (``via_mcp``) count against it and against ``max_mcp_episodes`` too, so MCP
  clients can hold at most that many and the trainer always has the rest.
* **Owners.** An episode may belong to an owner (a WebSocket connection, an
  MCP session): :meth:`close_owner` closes all of an owner's episodes when it
  goes away.
* **Capabilities.** Every episode has two secrets, made at creation:
  the *trainer key* (``episode_key``: control-plane operations, any MCP face)
  and the *agent key* (only the episode's MCP address, see
  :meth:`agent_episode`). :meth:`authorize` lets a caller reach an episode only
  as its owner (the connection that created it), with its trainer key, or as
  admin; anyone else is told the id is unknown (no oracle for live ids).
* **Default cap.** :func:`default_max_episodes` sizes the cap from the machine.
* **Idle reaping.** With ``idle_timeout`` set, an episode unused for that long
  (no step, no state read) and not in the middle of a call is closed.
"""

from __future__ import annotations

import copy
import hmac
import logging
import os
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio

from openenv_mcp.errors import ConfigError, EpisodeLimit, UnknownEpisode

if TYPE_CHECKING:
    from openenv_mcp.core.environment import Environment
    from openenv_mcp.core.episode import Episode
    from openenv_mcp.serve.metrics import Metrics

__all__ = [
    "ADMIN_SCOPE_KEY",
    "EPISODE_KEY_HEADER",
    "TRUSTED_SCOPE_KEY",
    "EpisodeManager",
    "default_max_episodes",
    "default_max_mcp_episodes",
]

ADMIN_SCOPE_KEY = "openenv.admin"
"""ASGI scope key the edge sets to ``True`` for a request carrying the admin token."""

TRUSTED_SCOPE_KEY = "openenv.trusted"
"""ASGI scope key the edge sets to ``True`` for the trainer: a token holder, or a trusted local peer
(:mod:`openenv_mcp.serve.peer`). Without it a request may only use an episode's MCP address or ``/mcp``."""

EPISODE_KEY_HEADER = "openenv-episode-key"
"""HTTP header carrying an episode's key (``episode_key`` in a message body does the same)."""

log = logging.getLogger("openenv_mcp.serve.manager")


def default_max_episodes(cpus: int | None = None, memory_bytes: int | None = None) -> int:
    """The default ``--max-episodes``: ``clamp(min(32 * CPUs, RAM / 64 MiB), 16, 4096)``.

    An episode holds a workspace and one or more tool-server processes (tens of MiB
    each when sandboxed); 32 per core and one per 64 MiB of memory keep a full server
    responsive, and the cap keeps the state of a server bounded whatever clients do.
    """
    if cpus is None:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if memory_bytes is None:
        try:
            memory_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            memory_bytes = 4 << 30
    return max(16, min(4096, 32 * cpus, memory_bytes // (64 << 20)))


def default_max_mcp_episodes(max_episodes: int | None) -> int | None:
    """The default ``--max-mcp-episodes``: a quarter of ``max_episodes``, at least 1 (``None``: no cap)."""
    return None if max_episodes is None else max(1, max_episodes // 4)


def _same(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and hmac.compare_digest(a.encode(), b.encode())


class EpisodeManager:
    """Live episodes of one environment, by id.

    Args:
        environment: the served environment.
        max_episodes: cap on live episodes (``None``: no cap).
        max_mcp_episodes: cap on live episodes created through bare ``/mcp`` (``None``: only ``max_episodes``).
        idle_timeout: seconds after which an unused episode is closed (``None``: never).
        metrics: where creations and closings are counted.
    """

    def __init__(
        self,
        environment: Environment,
        *,
        max_episodes: int | None = None,
        max_mcp_episodes: int | None = None,
        idle_timeout: float | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        if max_episodes is not None and max_episodes < 1:
            raise ValueError("max_episodes must be at least 1 (or None for no cap)")
        if max_mcp_episodes is not None and max_mcp_episodes < 1:
            raise ValueError("max_mcp_episodes must be at least 1 (or None for no cap of its own)")
        if idle_timeout is not None and not idle_timeout > 0:
            raise ValueError("idle_timeout must be a positive number of seconds (or None)")
        self.environment = environment
        self.max_episodes = max_episodes
        self.max_mcp_episodes = max_mcp_episodes
        self.idle_timeout = idle_timeout
        self.metrics = metrics
        self._episodes: dict[str, Episode] = {}
        self._owner_of: dict[str, str] = {}
        self._owned: dict[str, set[str]] = {}
        self._creating = 0
        self._mcp_ids: set[str] = set()  # live episodes created through bare /mcp
        self._creating_mcp = 0
        self._keys: dict[str, tuple[str, str]] = {}  # episode id -> (trainer key, agent key)
        self._variants: dict[tuple[int | None, float | None], Environment] = {}
        self.reaped: dict[str, float] = {}
        """Recently reaped episode ids (id -> when), so lookups can say why an id is gone."""

    # -- queries -------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._episodes)

    def __contains__(self, episode_id: str) -> bool:
        return episode_id in self._episodes

    def ids(self) -> list[str]:
        return list(self._episodes)

    def peek(self, episode_id: str) -> Episode | None:
        """The live episode ``episode_id`` or ``None``, without counting as a use."""
        return self._episodes.get(episode_id)

    def get(self, episode_id: str) -> Episode:
        """The live episode ``episode_id`` (raises :class:`UnknownEpisode`)."""
        episode = self._episodes.get(episode_id)
        if episode is None:
            raise self.unknown(episode_id)
        episode.last_used = time.monotonic()
        return episode

    def unknown(self, episode_id: str) -> UnknownEpisode:
        """The error for an id that names no live episode, saying why when known."""
        if episode_id in self.reaped:
            return UnknownEpisode(
                f"episode {episode_id!r} was closed after {self.idle_timeout:g} s idle (--idle-timeout); "
                "create a new episode"
            )
        return UnknownEpisode(
            f"unknown episode {episode_id!r}: never created, closed, or reaped; "
            "create one first (op 'create' or POST /episodes)"
        )

    # -- capabilities ------------------------------------------------------------
    def keys(self, episode_id: str) -> tuple[str, str]:
        """``(trainer key, agent key)`` of a live episode."""
        return self._keys[episode_id]

    def authorize(
        self, episode_id: str, *, owner: str | None = None, key: str | None = None, admin: bool = False
    ) -> Episode:
        """The live episode ``episode_id`` for a trainer: its owner, a holder of its trainer key,
        or the admin. Anyone else gets :class:`UnknownEpisode`, as for an id that does not exist."""
        episode = self.get(episode_id)
        if admin or (owner is not None and self._owner_of.get(episode_id) == owner):
            return episode
        keys = self._keys.get(episode_id)
        if keys is not None and _same(key, keys[0]):
            return episode
        raise self.unknown(episode_id)

    def agent_episode(self, episode_id: str, key: str | None, *, admin: bool = False) -> Episode:
        """The live episode for an MCP client holding its agent (or trainer) key."""
        keys = self._keys.get(episode_id)
        if admin or (keys is not None and (_same(key, keys[1]) or _same(key, keys[0]))):
            return self.get(episode_id)
        raise self.unknown(episode_id)

    def capability_ok(self, episode_id: str, key: str) -> bool:
        """Whether ``key`` is a live episode's agent or trainer key (the edge lets its MCP address through)."""
        keys = self._keys.get(episode_id)
        return keys is not None and (_same(key, keys[1]) or _same(key, keys[0]))

    def visible(self, *, owner: str | None = None, key: str | None = None, admin: bool = False) -> list[str]:
        """Ids a caller may list: all for the admin, else those it owns or holds the trainer key of."""
        if admin:
            return list(self._episodes)
        ids = sorted(self._owned.get(owner, ())) if owner is not None else []
        if key is not None:
            ids += [i for i, (k, _) in self._keys.items() if _same(key, k) and i not in ids]
        return ids

    # -- lifecycle -----------------------------------------------------------
    def _reserve(self, via_mcp: bool = False) -> None:
        mcp_cap = self.max_mcp_episodes
        if via_mcp and mcp_cap is not None and len(self._mcp_ids) + self._creating_mcp >= mcp_cap:
            if self.metrics is not None:
                self.metrics.rejected_request("mcp_episode_limit")
            raise EpisodeLimit(
                f"too many episodes from bare /mcp sessions: {len(self._mcp_ids) + self._creating_mcp} live, "
                f"the cap is {mcp_cap} (--max-mcp-episodes); end an MCP session you no longer need, or connect "
                "to an episode's own address (mcp_url, which the trainer's create returns)"
            )
        cap = self.max_episodes
        if cap is not None and len(self._episodes) + self._creating >= cap:
            if self.metrics is not None:
                self.metrics.rejected_request("episode_limit")
            raise EpisodeLimit(
                f"the server is full: {len(self._episodes) + self._creating} live episodes, the cap is {cap} "
                "(--max-episodes); close episodes you no longer need, or retry later"
            )
        self._creating += 1
        if via_mcp:
            self._creating_mcp += 1

    def variant(self, max_steps: int | None = None, call_timeout: float | None = None) -> Environment:
        """The environment with a per-episode step budget / call time limit (``None``: the server's)."""
        if max_steps is None and call_timeout is None:
            return self.environment
        if max_steps is not None and max_steps < 0:
            raise ConfigError(f"max_steps must be >= 0 (0: no budget), got {max_steps}")
        if call_timeout is not None and not call_timeout > 0:
            raise ConfigError(f"call_timeout must be a positive number of seconds, got {call_timeout}")
        key = (max_steps, call_timeout)
        env = self._variants.get(key)
        if env is None:
            env = copy.copy(self.environment)
            if self.environment.mode == "sim" and max_steps is not None:
                env.max_steps = max_steps or None
            if call_timeout is not None:
                env.call_timeout = call_timeout
            if hasattr(env, "warm_pool_size"):
                env.warm_pool_size = 0  # the server's pool stays the server's
            self._variants[key] = env
        return env

    async def create(
        self,
        seed: int | None = None,
        task_id: str | None = None,
        *,
        episode_id: str | None = None,
        owner: str | None = None,
        max_steps: int | None = None,
        call_timeout: float | None = None,
        trainer_key: str | None = None,
        via_mcp: bool = False,
    ) -> Episode:
        """Create and start an episode (counted against the cap while it starts) with fresh keys
        (``trainer_key`` keeps a reset episode's trainer key); ``via_mcp``: for a bare ``/mcp``
        session or request, counted against ``max_mcp_episodes`` too."""
        environment = self.variant(max_steps, call_timeout)
        self._reserve(via_mcp)
        try:
            episode = await environment.new_episode(seed=seed, task_id=task_id, episode_id=episode_id)
        finally:
            self._creating -= 1
            if via_mcp:
                self._creating_mcp -= 1
        self._add(episode, owner, trainer_key)
        if via_mcp:
            self._mcp_ids.add(episode.id)
        return episode

    async def fork(self, episode_id: str, n: int = 1, strategy: str | None = None) -> list[Episode]:
        """``n`` forks of a live episode (see :meth:`Episode.fork <openenv_mcp.core.episode.Episode.fork>`),
        each counted against the cap, owned by the original's owner, with fresh keys of its own.
        Only a trainer reaches this (the control plane authorizes by owner, trainer key or admin:
        an agent key never forks)."""
        episode = self.get(episode_id)
        reserved = 0
        try:
            for _ in range(max(n, 0)):
                self._reserve()
                reserved += 1
            forks = await episode.fork(n, strategy)
        finally:
            self._creating -= reserved
        owner = self._owner_of.get(episode_id)
        for forked in forks:
            self._add(forked, owner)
        return forks

    def _add(self, episode: Episode, owner: str | None, trainer_key: str | None = None) -> None:
        self._episodes[episode.id] = episode
        self._keys[episode.id] = (trainer_key or secrets.token_urlsafe(24), secrets.token_urlsafe(24))
        if owner is not None:
            self._owner_of[episode.id] = owner
            self._owned.setdefault(owner, set()).add(episode.id)
        if self.metrics is not None:
            self.metrics.episode_created()

    async def reset(
        self,
        episode_id: str,
        seed: int | None = None,
        task_id: str | None = None,
        *,
        max_steps: int | None = None,
        call_timeout: float | None = None,
    ) -> Episode:
        """A fresh world under the same id (and owner): the old one is closed first."""
        self.get(episode_id)
        self.variant(max_steps, call_timeout)  # bad options fail before the old world is closed
        owner = self._owner_of.get(episode_id)
        trainer_key = self._keys[episode_id][0]  # the trainer's handle survives; the agent key is new
        via_mcp = episode_id in self._mcp_ids
        await self.close(episode_id, reason="reset")
        return await self.create(
            seed,
            task_id,
            episode_id=episode_id,
            owner=owner,
            max_steps=max_steps,
            call_timeout=call_timeout,
            trainer_key=trainer_key,
            via_mcp=via_mcp,
        )

    def _forget(self, episode_id: str) -> Episode | None:
        episode = self._episodes.pop(episode_id, None)
        self._keys.pop(episode_id, None)
        self._mcp_ids.discard(episode_id)
        owner = self._owner_of.pop(episode_id, None)
        if owner is not None:
            owned = self._owned.get(owner)
            if owned is not None:
                owned.discard(episode_id)
                if not owned:
                    del self._owned[owner]
        return episode

    async def close(self, episode_id: str, reason: str = "closed") -> bool:
        """Close one episode; ``False`` when it was not live."""
        episode = self._forget(episode_id)
        if episode is None:
            return False
        if self.metrics is not None:
            self.metrics.episode_closed(reason)
        with anyio.CancelScope(shield=True):
            await episode.close()
        return True

    async def close_owner(self, owner: str, reason: str = "disconnect") -> int:
        """Close every episode of ``owner`` (a connection that went away)."""
        ids = list(self._owned.pop(owner, ()))
        for episode_id in ids:
            self._owner_of.pop(episode_id, None)
        for episode_id in ids:
            await self.close(episode_id, reason)
        return len(ids)

    def owned(self, owner: str) -> set[str]:
        return set(self._owned.get(owner, ()))

    async def close_all(self) -> None:
        for episode_id in list(self._episodes):
            await self.close(episode_id, "shutdown")

    # -- reaping ---------------------------------------------------------------
    async def reap(self, now: float | None = None) -> int:
        """Close episodes idle for longer than ``idle_timeout``; how many were closed."""
        if self.idle_timeout is None:
            return 0
        now = time.monotonic() if now is None else now
        limit = now - self.idle_timeout
        idle = [e.id for e in self._episodes.values() if e.last_used < limit and not e.busy]
        for episode_id in idle:
            self.reaped[episode_id] = now
            await self.close(episode_id, "idle")
        if len(self.reaped) > 10_000:  # remember recent ones only
            for key in list(self.reaped)[: len(self.reaped) - 5_000]:
                del self.reaped[key]
        return len(idle)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[EpisodeManager]:
        """Reap idle episodes in the background; close every episode on exit."""
        async with anyio.create_task_group() as tg:
            if self.idle_timeout is not None:
                tg.start_soon(self._reaper)
            try:
                yield self
            finally:
                tg.cancel_scope.cancel()
                with anyio.CancelScope(shield=True):
                    await self.close_all()

    async def _reaper(self) -> None:
        assert self.idle_timeout is not None
        interval = min(max(self.idle_timeout / 4, 0.05), 30.0)
        while True:
            await anyio.sleep(interval)
            try:
                await self.reap()
            except Exception:  # the reaper must survive one bad close
                log.exception("reaping idle episodes failed")
