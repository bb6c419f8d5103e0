"""The reward of a Harbor episode: 0 while the agent works, the verifier's reward at the end.

The task is graded once (:func:`~.verifier.grade`), when the episode ends: on ``submit``, on the
step that spends the step budget (``max_steps``), or on the first step after the task's agent
timeout (``[agent] timeout_sec``). The score is then the verifier's reward (a number, not only 0
or 1: Harbor's rewards may be partial) and the episode is done; ``info["verifier"]`` says how it
was reached (the reward file's values, the reason for a 0, what was tampered with, the seconds
the tests took and the end of their output). Before that every step scores 0: the tests are not
in the container, and running them after every step would show them.
"""

from __future__ import annotations

from typing import Any

from openenv_mcp.types import Score
from openenv_mcp.worlds.harbor.tools import SUBMIT
from openenv_mcp.worlds.harbor.verifier import grade
from openenv_mcp.worlds.harbor.world import world_of

__all__ = ["score"]


async def score(ctx: Any) -> Score:
    """The reward function of every Harbor environment (``reward = "...harbor.reward:score"``)."""
    episode = ctx.episode
    world = world_of(episode.id) if episode is not None else None
    if episode is None or world is None or ctx.action is None:
        return Score(score=0.0, done=False)
    max_steps = episode.env.max_steps
    ending = ctx.action.name == SUBMIT or (max_steps is not None and ctx.step >= max_steps) or world.remaining() <= 0
    if not ending:
        return Score(score=0.0, done=False)
    verdict = await grade(world)
    return Score(score=verdict.score, done=True, info={"verifier": verdict.info()})
