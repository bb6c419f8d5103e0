"""Forking an episode: several independent worlds equal to one live episode at one moment.

:meth:`Episode.fork <openenv_mcp.core.episode.Episode.fork>` calls :func:`fork_episode`. Each
fork is a new episode (its own id, workspace and tool servers) with the original's task, seed,
step count, score, cumulative reward and trajectory so far; the original goes on unchanged.
Two ways to copy a world, per tool server (``fork`` in ``[[tool_servers]]``, docs/fork.md):

* **snapshot** (when every server says ``snapshot``): under the original's step lock (no call
  in flight) each server's own hook is asked for its state (:meth:`Connection.snapshot
  <openenv_mcp.isolation.base.Connection.snapshot>`; SQLite through its backup API) and the
  workspace is cloned (:func:`~openenv_mcp.isolation.host.clone.clone_tree`: reflinks where
  the filesystem has them, new inodes always); then each fork's servers start on their copy
  and get the state back (:meth:`~openenv_mcp.isolation.base.Connection.restore`).
* **replay** (the default): a fresh episode with the same task and seed re-runs the recorded
  calls and checks each result against the recorded one; the first difference fails the fork
  with :class:`~openenv_mcp.errors.ForkDiverged` naming the step and both values.

A server with ``fork = "refuse"`` (the default of a ``remote`` one), an episode that ran code
(the interpreter's state cannot be copied) or a production episode refuses with
:class:`~openenv_mcp.errors.ForkError`. A failed fork closes what it started: never a half copy.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from mcp.types import CallToolResult

from openenv_mcp.errors import ConfigError, EpisodeEnded, ForkDiverged, ForkError
from openenv_mcp.isolation.host.clone import CloneError, clone_tree
from openenv_mcp.types import CallTool

if TYPE_CHECKING:
    from openenv_mcp.core.episode import Episode

__all__ = ["STRATEGIES", "Counters", "choose_strategy", "fork_episode"]

STRATEGIES = ("snapshot", "replay")
"""What a caller may ask for (``None``: snapshot when every server allows it, else replay)."""

MAX_FORKS = 64
"""Forks one call may ask for (the episode cap bounds the total on a server)."""


@dataclass
class Counters:
    """An episode's progress, copied onto its forks."""

    step_count: int
    score: float
    cumulative_reward: float
    reward_errors: int
    done: bool
    truncated: bool
    history: list[tuple[CallTool, CallToolResult]] = field(default_factory=list)

    @classmethod
    def of(cls, episode: Episode) -> Counters:
        return cls(
            episode.step_count,
            episode.score,
            episode.cumulative_reward,
            episode.reward_errors,
            episode.done,
            episode.truncated,
            [(a.model_copy(deep=True), r.model_copy(deep=True)) for a, r in episode.history],
        )

    def apply(self, episode: Episode, parent_id: str) -> None:
        episode.step_count = self.step_count
        episode.score = self.score
        episode.cumulative_reward = self.cumulative_reward
        episode.reward_errors = self.reward_errors
        episode.done = self.done
        episode.truncated = self.truncated
        episode.history = [(a.model_copy(deep=True), r.model_copy(deep=True)) for a, r in self.history]
        episode.forked_from = (parent_id, self.step_count)


def choose_strategy(episode: Episode, requested: str | None = None) -> str:
    """``snapshot`` or ``replay`` for forking ``episode`` now, or a :class:`ForkError` saying why not."""
    env = episode.env
    if requested is not None and requested not in STRATEGIES:
        raise ConfigError(f"fork strategy must be one of {', '.join(STRATEGIES)} (or none), got {requested!r}")
    if episode.closed:
        raise EpisodeEnded(f"episode {episode.id} is closed: only a live episode can be forked")
    if env.mode != "sim":
        raise ForkError("forking is for simulation episodes (a production episode is the user's world)")
    if episode.interpreter is not None:
        raise ForkError(
            f"episode {episode.id} ran code (run_code): the interpreter's state cannot be copied; "
            "fork before the first run_code, or play tool calls only"
        )
    kinds = {s.name: s.fork_strategy for s in env.servers}
    refused = [name for name, kind in kinds.items() if kind == "refuse"]
    if refused:
        raise ForkError(
            f'tool server(s) {", ".join(refused)} of {env.name!r} cannot fork (fork = "refuse", the '
            "default of a remote server): their state is neither copied nor rebuilt; set fork = "
            '"replay" in [[tool_servers]] if re-running the calls rebuilds it'
        )
    no_snapshot = [name for name, kind in kinds.items() if kind != "snapshot"]
    if requested == "snapshot" and (no_snapshot or env.setup_fn is not None):
        why = (
            f'tool server(s) {", ".join(no_snapshot)} do not declare fork = "snapshot"'
            if no_snapshot
            else "the environment's setup prepares a world a snapshot does not copy"
        )
        raise ForkError(f"{env.name!r} cannot fork by snapshot: {why}; fork by replay instead")
    if requested is not None:
        return requested
    return "snapshot" if not no_snapshot and env.setup_fn is None else "replay"


async def fork_episode(parent: Episode, n: int, strategy: str | None, make: Callable[[], Episode]) -> list[Episode]:
    """``n`` started forks of ``parent`` (``make`` creates an unstarted episode of its task and seed)."""
    if not 1 <= n <= MAX_FORKS:
        raise ConfigError(f"n must be between 1 and {MAX_FORKS} forks per call, got {n}")
    how = choose_strategy(parent, strategy)
    children: list[Episode] = []
    try:
        if how == "snapshot":
            await _by_snapshot(parent, n, make, children)
        else:
            await _by_replay(parent, n, make, children)
    except BaseException as e:
        with anyio.CancelScope(shield=True):
            for child in children:
                await child.close()
        if isinstance(e, CloneError):
            raise ForkError(f"episode {parent.id} cannot be forked: {e.strerror or e}") from e
        raise
    return children


async def _by_snapshot(parent: Episode, n: int, make: Callable[[], Episode], children: list[Episode]) -> None:
    async with parent.step_lock:  # no call in flight: the servers' states and the files agree
        choose_strategy(parent, "snapshot")  # closed meanwhile?
        states = [await conn.snapshot() for conn in parent.connections]
        counters = Counters.of(parent)
        for _ in range(n):
            children.append(make())
        if parent.workspace.created:
            for child in children:
                await anyio.to_thread.run_sync(clone_tree, parent.workspace.path, child.workspace.path)

    async def start(child: Episode) -> None:
        await child.start(cloned=True)
        for conn, state in zip(child.connections, states, strict=True):
            await conn.restore(copy.deepcopy(state))  # never one mutable state for two forks
        counters.apply(child, parent.id)

    await _each(children, start)


async def _by_replay(parent: Episode, n: int, make: Callable[[], Episode], children: list[Episode]) -> None:
    async with parent.step_lock:
        choose_strategy(parent, "replay")
        counters = Counters.of(parent)
        values = parent.per_episode_values()
    for _ in range(n):
        children.append(make())

    async def start(child: Episode) -> None:
        await child.start()
        for step, (action, recorded) in enumerate(counters.history, 1):
            obs = await child.act(action)
            replayed = obs.result if obs.result is not None else CallToolResult(content=[])
            _same_result(step, action, recorded, replayed, values, child.per_episode_values())
        if child.score != counters.score or child.cumulative_reward != counters.cumulative_reward:
            raise ForkDiverged(
                f"replaying episode {parent.id} diverged after step {counters.step_count}: the score is "
                f"{child.score!r} (recorded {counters.score!r}), the cumulative reward "
                f"{child.cumulative_reward!r} (recorded {counters.cumulative_reward!r})",
                counters.step_count,
                counters.score,
                child.score,
            )
        counters.apply(child, parent.id)

    await _each(children, start)


async def _each(children: list[Episode], start: Callable[[Episode], Any]) -> None:
    """Run ``start`` on every child at once; the first failure is raised as itself."""
    errors: list[BaseException] = []

    async def one(child: Episode) -> None:
        try:
            await start(child)
        except Exception as e:  # noqa: BLE001 - re-raised below, unwrapped
            errors.append(e)

    async with anyio.create_task_group() as tg:
        for child in children:
            tg.start_soon(one, child)
    if errors:
        raise errors[0]


def _wire(result: CallToolResult) -> str:
    return json.dumps(result.model_dump(mode="json", by_alias=True, exclude_none=True), sort_keys=True)


def _same_result(
    step: int,
    action: CallTool,
    recorded: CallToolResult,
    replayed: CallToolResult,
    parent_values: dict[str, str],
    child_values: dict[str, str],
) -> None:
    """Raise :class:`ForkDiverged` unless ``replayed`` equals ``recorded`` once the per-episode values
    (ids, workspace paths, uids) of the replaying episode are written as the original's."""
    got = _wire(replayed)
    # longest first: a workspace path must not be cut by the id it contains
    for label, value in sorted(child_values.items(), key=lambda kv: -len(kv[1])):
        original = parent_values.get(label)
        if value and original and value != original:
            got = got.replace(json.dumps(value)[1:-1], json.dumps(original)[1:-1])
    want = _wire(recorded)
    if got != want:
        raise ForkDiverged(
            f"replay diverged at step {step} ({action.name}): recorded {_cut(want)}, replayed {_cut(got)}; "
            "the environment is not deterministic for this call, or a server keeps state a replay does "
            "not rebuild",
            step,
            json.loads(want),
            json.loads(got),
        )


def _cut(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} chars)"
