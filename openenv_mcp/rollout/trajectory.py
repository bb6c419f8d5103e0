"""Trajectories: one episode played by a policy (a JSON line of ``openenv-mcp rollout``'s
output, see ``docs/rollout.md``), and the summary of many."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

__all__ = ["TRAJECTORY_FORMAT", "Trajectory", "summarize"]

TRAJECTORY_FORMAT = "openenv-mcp.trajectory/1"
"""Value of the ``format`` field of every trajectory line."""


@dataclass
class Trajectory:
    """One episode played by a policy. ``to_json()`` is one line of the JSONL file."""

    episode: int
    env: str
    seed: int | None
    task_id: str | None
    prompt: str
    episode_id: str | None = None
    model: str | None = None
    messages: list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None
    steps: list[dict[str, Any]] | None = None
    reward: float = 0.0
    done: bool = False
    truncated: bool = False
    stop_reason: str = "running"
    turns: int = 0
    usage: dict[str, int] | None = None
    timings: dict[str, Any] | None = None
    key: str | None = None
    sample: int = 0
    completions: list[dict[str, Any]] | None = None

    @property
    def rewards(self) -> list[float]:
        return [s["reward"] for s in self.steps or []]

    @property
    def num_steps(self) -> int:
        return sum(1 for s in self.steps or [] if not s.get("skipped"))

    @property
    def tool_errors(self) -> int:
        return sum(1 for s in self.steps or [] if s["is_error"] and not s.get("skipped"))

    @property
    def success(self) -> bool:
        return self.done

    def to_json(self) -> dict[str, Any]:
        """The JSON line (see ``docs/rollout.md``)."""
        return {
            "format": TRAJECTORY_FORMAT,
            "env": self.env,
            "episode": self.episode,
            "episode_id": self.episode_id,
            "task_id": self.task_id,
            "seed": self.seed,
            "model": self.model,
            "prompt": self.prompt,
            "messages": self.messages or [],
            "tools": self.tools or [],
            "steps": self.steps or [],
            "rewards": self.rewards,
            "reward": self.reward,
            "success": self.success,
            "done": self.done,
            "truncated": self.truncated,
            "stop_reason": self.stop_reason,
            "num_steps": self.num_steps,
            "turns": self.turns,
            "tool_errors": self.tool_errors,
            "usage": self.usage or {},
            "timings": self.timings or {},
            "key": self.key,
            "sample": self.sample,
            "completions": self.completions or [],
        }


def summarize(trajectories: list[Trajectory]) -> dict[str, float]:
    """Reward mean and std, success rate, mean steps and tool-error rate."""
    if not trajectories:
        return {
            "episodes": 0,
            "reward_mean": 0.0,
            "reward_std": 0.0,
            "success_rate": 0.0,
            "mean_steps": 0.0,
            "tool_error_rate": 0.0,
        }
    rewards = [t.reward for t in trajectories]
    calls = sum(t.num_steps for t in trajectories)
    return {
        "episodes": len(trajectories),
        "reward_mean": statistics.fmean(rewards),
        "reward_std": statistics.pstdev(rewards) if len(rewards) > 1 else 0.0,
        "success_rate": sum(t.success for t in trajectories) / len(trajectories),
        "mean_steps": statistics.fmean(t.num_steps for t in trajectories),
        "tool_error_rate": (sum(t.tool_errors for t in trajectories) / calls) if calls else 0.0,
    }
