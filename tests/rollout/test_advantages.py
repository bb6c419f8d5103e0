"""Step-level advantages from a tree: V(prefix) = mean continuation return, A = V(after) - V(before)."""

from __future__ import annotations

import runpy

import pytest

from openenv_mcp.errors import ConfigError
from openenv_mcp.rollout.advantages import advantages, values

from support import ROOT


def node(name, parent, step, actions, reward):
    return {"node": name, "parent": parent, "step": step, "actions": [{"name": a} for a in actions], "reward": reward}


# The root played a, b, c for 1.0; from step 0 two continuations got 0.0 and 0.5 (V = 0.25), from step 2
# three got 1.0, 0.0 and 0.5 (V = 0.5); no branch at step 1. A continuation of its own (x.1) branched once.
TREE = [
    node("r.0a", "r", 0, ["x", "y"], 0.0),
    node("r.0b", "r", 0, ["a", "z"], 0.5),
    node("r.2a", "r", 2, ["a", "b", "c"], 1.0),
    node("r.2b", "r", 2, ["a", "b"], 0.0),
    node("r.2c", "r", 2, ["a", "b", "d"], 0.5),
    node("r", None, 0, ["a", "b", "c"], 1.0),
]


def test_values_are_the_mean_continuation_return_and_the_whole_episode_its_own_return():
    v = values(TREE)
    assert v[("r", 0)] == (0.25, 2)
    assert v[("r", 2)] == (0.5, 3)
    assert v[("r", 3)] == (1.0, 0)
    assert ("r", 1) not in v  # no continuation from there


def test_each_segment_between_branch_points_gets_the_value_after_minus_the_value_before():
    got = [(a.node, a.start, a.end, [x["name"] for x in a.actions], a.advantage) for a in advantages(TREE)]
    assert got == [
        ("r", 0, 2, ["a", "b"], 0.5 - 0.25),  # V(r, 2) - V(r, 0)
        ("r", 2, 3, ["c"], 1.0 - 0.5),  # V(r, 3) = R(r) - V(r, 2)
    ]
    first = advantages(TREE)[0]
    assert (first.value_before, first.value_after, first.continuations) == (0.25, 0.5, 3)


def test_every_step_branched_gives_one_advantage_per_call():
    tree = [
        node("c0", "r", 0, ["p"], 0.0),
        node("c1", "r", 1, ["a", "q"], 0.0),
        node("c1b", "r", 1, ["a", "b"], 1.0),
        node("r", None, 0, ["a", "b"], 1.0),
    ]
    assert [(a.start, a.end, a.advantage) for a in advantages(tree)] == [(0, 1, 0.5), (1, 2, 0.5)]


def test_a_line_that_is_not_a_tree_node_is_a_config_error():
    with pytest.raises(ConfigError, match="not a tree node line"):
        advantages([{"format": "openenv-mcp.trajectory/1", "reward": 1.0}])


def test_the_branch_advantages_example_prints_each_call_s_advantage_on_files(capsys):
    example = runpy.run_path(str(ROOT / "examples" / "branch_advantages.py"), run_name="example")
    assert example["main"](["--task", "json-port-and-debug"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    # (step, V before, V after, A): the read changes nothing, each edit earns its half of the reward
    assert [(r[1], *r[-3:]) for r in rows] == [
        ("0", "0.500", "0.500", "+0.00"),
        ("1", "0.500", "0.750", "+0.25"),
        ("2", "0.750", "1.000", "+0.25"),
    ]
