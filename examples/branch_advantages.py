"""Step-level advantage estimates on ``files`` from forked continuations (no model server: a few seconds).

    python examples/branch_advantages.py [--task json-port-and-debug --task archive-old-reports] [--k 2]

A scripted policy plays each task's reference solution (the root). Just before every tool call the
episode is forked ``K`` times (``rollout --branch every:K``); continuation ``k`` plays the task's
``k mod 2``-th alternative from there on: the reference solution, or the ``wrong`` one (plausible
calls that score 0). The value of a prefix is the mean return of its continuations, and each call's
advantage is the value after it minus the value before it (:mod:`openenv_mcp.rollout.advantages`):
which calls of the reference solution earned the reward.
"""

from __future__ import annotations

import argparse

import anyio

from openenv_mcp.client.registry import load_environment
from openenv_mcp.rollout import Branching, ScriptedPolicy, rollout_trees
from openenv_mcp.rollout.advantages import advantages

TASKS = ["json-port-and-debug", "archive-old-reports"]


async def estimate(tasks: list[str], k: int) -> list[tuple[str, int, str, float, float, float, int]]:
    """One row per call of each root: (task, step, call, value before, value after, advantage, continuations)."""
    environment = load_environment("files")
    policy = ScriptedPolicy.from_solutions(environment, ["reference", "wrong"])
    rows = []
    for task in tasks:
        (tree,) = await rollout_trees("files", policy, Branching("every", k), task_id=task, seed=0)
        for a in advantages(tree):
            call = ", ".join(f"{x['name']}({_brief(x['arguments'])})" for x in a.actions)
            rows.append((task, a.start, call, a.value_before, a.value_after, a.advantage, a.continuations))
    return rows


def _brief(arguments: dict) -> str:
    return ", ".join(f"{key}={value!r}" for key, value in arguments.items() if key in ("path", "source"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", action="append", default=None, help=f"a files task id (default {', '.join(TASKS)})")
    parser.add_argument("--k", type=int, default=2, help="continuations per step (default 2: one per alternative)")
    args = parser.parse_args(argv)
    rows = anyio.run(estimate, args.task or TASKS, args.k)
    print(f"{'task':<22} {'step':>4}  {'call':<36} {'V before':>8} {'V after':>8} {'A':>6}")
    for task, step, call, before, after, advantage, _ in rows:
        print(f"{task:<22} {step:>4}  {call:<36} {before:>8.3f} {after:>8.3f} {advantage:>+6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
