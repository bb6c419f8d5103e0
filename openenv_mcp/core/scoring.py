"""Scoring an episode's steps: the :class:`RewardContext` a reward function sees, how its value is
read as a score (a number or a :class:`~openenv_mcp.types.Score`), and what a reward that raises
does to the step (see ``docs/protocol.md``)."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp.types import CallToolResult

from openenv_mcp.errors import OpenEnvError
from openenv_mcp.types import CallTool, Score, Task

if TYPE_CHECKING:
    from openenv_mcp.core.episode import Episode

__all__ = ["RewardContext", "evaluate", "reward_failed"]

log = logging.getLogger("openenv_mcp.core.episode")  # the name docs/protocol.md gives for reward errors

MAX_ERROR_CHARS = 2000
"""Characters of a raising reward's error kept in ``info["reward_error"]``."""


@dataclass
class RewardContext:
    """What a reward function sees after each step."""

    task: Task
    """The episode's task."""
    step: int
    """Tool calls made so far, this one included."""
    action: CallTool | None
    """The step's action (``None`` when scoring the initial state)."""
    result: CallToolResult | None
    """The step's MCP result."""
    history: list[tuple[CallTool, CallToolResult]] = field(default_factory=list)
    """Every (action, result) of the episode so far."""
    episode: Episode | None = None
    """The episode, for :meth:`call_tool` (uncounted, unrewarded calls)."""
    world: Any = None
    """What the environment's ``setup`` returned for this episode (``None`` without a setup)."""

    @property
    def seed(self) -> int | None:
        """The episode's seed (``None``: the task was picked by id without one)."""
        return None if self.episode is None else self.episode.seed

    @property
    def workspace(self) -> Path:
        """The episode's workspace folder (host path)."""
        assert self.episode is not None
        return self.episode.workspace.path

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        """Call a tool to inspect the world; not a step, not seen by the agent."""
        assert self.episode is not None
        return await self.episode.call_tool(name, arguments or {})


async def evaluate(
    reward_fn: Callable[[RewardContext], Any], ctx: RewardContext, env_name: str, extra: dict[str, Any] | None
) -> tuple[float, bool | None]:
    """Run ``reward_fn`` (sync or async) on ``ctx``: the score and whether the reward says the episode is
    done (``None``: it does not say). A :class:`Score`'s ``info`` goes into ``extra``."""
    value = reward_fn(ctx)
    if inspect.isawaitable(value):
        value = await value
    done = None
    if isinstance(value, Score):
        done = value.done
        if extra is not None:
            extra.update(value.info)
        value = value.score
    if not isinstance(value, (int, float)):
        raise OpenEnvError(f"reward function of {env_name!r} returned {value!r}, expected a number")
    return float(value), done


def reward_failed(error: Exception, env_name: str, step: int, episode_id: str) -> str:
    """A reward that raised on a step: logged, and the ``info["reward_error"]`` text saying that the
    step's reward is 0.0, the score is unchanged and the episode goes on."""
    text = f"{type(error).__name__}: {error}"
    if len(text) > MAX_ERROR_CHARS:
        text = text[:MAX_ERROR_CHARS] + f"... ({len(text) - MAX_ERROR_CHARS} more characters)"
    log.warning("reward of %s raised at step %d of episode %s: %s", env_name, step, episode_id, text)
    return (
        f"the reward function raised {text}; this step's reward is 0.0 (the score is unchanged) and the episode goes on"
    )
