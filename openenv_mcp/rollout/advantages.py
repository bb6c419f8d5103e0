"""Step-level advantage estimates from a tree of trajectories (``rollout --branch``).

A node's *prefix* of length ``s`` is its first ``s`` tool calls; the continuations of that prefix
are its children with ``step == s``. With ``R(c)`` a trajectory's return (its cumulative reward,
the line's ``reward``):

    V(p, s) = mean of R(c) over the children c of p with step s          (a branch point s)
    V(p, T) = R(p)                          (T = len(p.actions): the whole episode, nothing left)

The branch points of ``p`` in order, ``s_1 < s_2 < ... < s_m``, then ``T`` (when ``s_m < T``),
cut its calls into segments; the calls ``p.actions[s_i:s_(i+1)]`` get

    A(p, s_i) = V(p, s_(i+1)) - V(p, s_i)

the value of the longer prefix minus the value of its parent prefix (the one it extends). With
``--branch every:K`` every segment is one call: ``A_t = V(p, t+1) - V(p, t)``, the step-level
advantage of call ``t`` (Monte-Carlo values from ``K`` continuations; undiscounted returns).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from openenv_mcp.errors import ConfigError

__all__ = ["StepAdvantage", "advantages", "values"]


@dataclass(frozen=True)
class StepAdvantage:
    """The advantage of the calls ``node``'s ``actions[start:end]`` (see the module docstring)."""

    node: str
    start: int
    end: int
    actions: list[dict[str, Any]]
    value_before: float
    """V(node, start): the parent prefix's value."""
    value_after: float
    """V(node, end)."""
    continuations: int
    """Continuations behind ``value_after`` (0 when ``end`` is the whole episode: its own return)."""

    @property
    def advantage(self) -> float:
        return self.value_after - self.value_before


def _lines(nodes: Iterable[Any]) -> list[dict[str, Any]]:
    out = [n.to_json() if hasattr(n, "to_json") else n for n in nodes]
    for line in out:
        if not isinstance(line, dict) or not {"node", "parent", "step", "actions", "reward"} <= line.keys():
            raise ConfigError(f"not a tree node line (node, parent, step, actions, reward): {str(line)[:120]}")
    return out


def values(nodes: Iterable[Any]) -> dict[tuple[str, int], tuple[float, int]]:
    """``(node, s) -> (V(node, s), continuations behind it)`` for every branch point and every
    node's whole episode (``s = len(actions)``, 0 continuations). ``nodes``: node lines or :class:`Node`s."""
    lines = _lines(nodes)
    groups: dict[tuple[str, int], list[float]] = {}
    for line in lines:
        if line["parent"] is not None:
            groups.setdefault((line["parent"], int(line["step"])), []).append(float(line["reward"]))
    out = {k: (statistics.fmean(v), len(v)) for k, v in groups.items()}
    for line in lines:
        out.setdefault((line["node"], len(line["actions"])), (float(line["reward"]), 0))
    return out


def advantages(nodes: Iterable[Any]) -> list[StepAdvantage]:
    """The advantage of each segment of calls between two branch points of every node that has
    continuations (module docstring), in node then step order."""
    lines = _lines(nodes)
    value = values(lines)
    out: list[StepAdvantage] = []
    for line in lines:
        node, actions = line["node"], line["actions"]
        points = sorted(s for (n, s) in value if n == node and s < len(actions))
        if not points:
            continue
        cuts = [*points, len(actions)]
        for start, end in zip(cuts, cuts[1:], strict=False):
            out.append(
                StepAdvantage(
                    node=node,
                    start=start,
                    end=end,
                    actions=actions[start:end],
                    value_before=value[(node, start)][0],
                    value_after=value[(node, end)][0],
                    continuations=value[(node, end)][1],
                )
            )
    return out
