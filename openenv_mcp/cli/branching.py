"""``rollout``'s ``--policy`` and ``--branch`` flags (what plays; a tree of forks per episode)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from openenv_mcp.errors import UsageError

if TYPE_CHECKING:
    from openenv_mcp.rollout.branch import Branching

__all__ = ["add_arguments", "branching"]

MAX_BRANCHES = 64
"""``openenv_mcp.rollout.branch.MAX_BRANCHES`` (the parser does not load the rollout package)."""


def branching(text: str) -> Branching:
    """``--branch``'s value, or argparse's usage error (exit status 2) saying what it takes."""
    from openenv_mcp.rollout.branch import Branching

    try:
        return Branching.parse(text)
    except UsageError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--policy",
        default=None,
        metavar="POLICY",
        help="who plays: openai (default: the model at --base-url), scripted:FILE.json (fixed tool calls, "
        "per task id) or solutions:reference[,wrong] (the env's scripted solutions); docs/rollout.md",
    )
    p.add_argument(
        "--branch",
        type=branching,
        default=None,
        metavar="WHERE:K",
        help=f"fork each episode into K continuations (1..{MAX_BRANCHES}) at WHERE: every (step), reward (the "
        "step before the reward first changed) or step numbers S1,S2; writes a tree of trajectories (docs/rollout.md)",
    )
