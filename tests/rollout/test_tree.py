"""rollout --branch: a tree of forked continuations of one episode, on ``files`` in process.

Its shape and parent links, where each WHERE branches, forks that fail (recorded, not fatal), and
the issue's "done": every node's rewards equal an independent replay of its actions from reset.
"""

from __future__ import annotations

from unittest.mock import ANY

import anyio
import pytest

from openenv_mcp.client.env import AsyncEnv
from openenv_mcp.client.registry import find_env, load_environment
from openenv_mcp.errors import UsageError
from openenv_mcp.rollout import TREE_FORMAT, Branching, OpenAIPolicy, ScriptedPolicy, rollout_trees
from openenv_mcp.serve.app import create_app
from openenv_mcp.testing import serving
from openenv_mcp.types import CallTool

from support.scripted_model import ScriptedModel, call

pytestmark = pytest.mark.anyio

TASK = "json-port-and-debug"  # reference: read, edit port (+0.5), edit debug (+0.5); wrong: one bad edit
READ = {"name": "fs_read", "arguments": {"path": "config/app.json"}}
PORT = {
    "name": "fs_edit",
    "arguments": {"path": "config/app.json", "old_text": '"port": 8080', "new_text": '"port": 8081'},
}
LIST = {"name": "fs_list", "arguments": {"path": "."}}


@pytest.fixture(scope="module")
def files():
    return load_environment("files")


@pytest.fixture(scope="module")
def policy(files):
    return ScriptedPolicy.from_solutions(files, ["reference", "wrong"])


async def tree(env, policy, where: str, task: str = TASK):
    (nodes,) = await rollout_trees(env, policy, Branching.parse(where), task_id=task, seed=5)
    return [n.to_json() for n in nodes]


async def test_every_step_gets_k_continuations_whose_parent_is_the_root_and_which_share_its_prefix(files, policy):
    lines = await tree("files", policy, "every:2")
    root = lines[-1]
    assert root["parent"] is None and root["step"] == 0 and root["format"] == TREE_FORMAT
    assert [a["name"] for a in root["actions"]] == ["fs_read", "fs_edit", "fs_edit"]
    assert root["action_rewards"] == [0.0, 0.5, 0.5] and root["reward"] == 1.0
    children = lines[:-1]
    assert [(c["step"], c["branch"]) for c in children] == [(s, k) for s in range(3) for k in range(2)]
    assert len({line["node"] for line in lines}) == len(lines)  # every node its own episode
    for child in children:
        assert child["parent"] == root["node"]
        assert child["actions"][: child["step"]] == root["actions"][: child["step"]]
        assert child["seed"] == root["seed"] and child["task_id"] == root["task_id"] == TASK
        assert child["key"] is None and child["fork_errors"] == []
    assert root["key"] == f"seed=5 task={TASK} sample=0"
    # continuation 0 plays the reference again (the root's own choice), continuation 1 the wrong one from there
    assert all(c["actions"] == root["actions"] for c in children if c["branch"] == 0)
    assert {c["step"]: c["reward"] for c in children if c["branch"] == 1} == {0: 0.0, 1: 0.0, 2: 0.5}


async def test_every_node_s_rewards_equal_an_independent_replay_of_its_actions_from_reset(files, policy):
    lines = await tree("files", policy, "every:2")
    for line in lines:
        async with AsyncEnv(load_environment("files")) as env:
            await env.reset(seed=line["seed"], task_id=line["task_id"])
            rewards = [(await env.step(CallTool(**a))).reward for a in line["actions"]]
            state = await env.state()
        assert rewards == line["action_rewards"], line["node"]
        assert state.cumulative_reward == line["reward"], line["node"]
        assert state.step_count == len(line["actions"])


async def test_a_model_server_policy_branches_and_a_fork_inside_a_turn_keeps_only_the_calls_answered(files):
    task = next(t for t in files.tasks.tasks if t.id == TASK)
    read, port, debug = [call(a.name, a.arguments) for a in files.trajectory(task, "reference")]
    with ScriptedModel({task.prompt: [[read, port], [debug]]}) as server:  # two calls in the first turn
        async with OpenAIPolicy(server.url, "scripted", backoff=0.01, logprobs=True) as policy:
            lines = await tree("files", policy, "every:2")
    assert [(c["step"], c["reward"]) for c in lines[:-1]] == [
        (s, r) for s, r in ((0, 1.0), (1, 0.5), (2, 1.0)) for _ in "ab"
    ]
    # the two continuations' first turn at each of the 3 branch points: one request for 2 choices
    assert [r.get("n") for r in server.requests].count(2) == 3
    inside = lines[2]  # forked between the read and the port edit: the model plays its next turn from there
    assert [a["name"] for a in inside["actions"]] == ["fs_read", "fs_edit"]
    assert inside["actions"][1]["arguments"]["new_text"] == '"debug": false' and inside["action_rewards"] == [0.0, 0.5]
    first = next(m for m in inside["messages"] if m["role"] == "assistant")
    assert [c["function"]["name"] for c in first["tool_calls"]] == ["fs_read"]
    assert inside["messages"][3] == {"role": "tool", "tool_call_id": first["tool_calls"][0]["id"], "content": ANY}
    # the root's first turn generated both calls: its token record is not the trimmed message's
    assert [c["message_index"] for c in lines[-1]["completions"]] == [2, 5]
    assert [c["message_index"] for c in inside["completions"]] == [4, 6]


async def test_a_served_env_forks_over_the_control_plane_into_the_same_tree(files):
    prompt = next(t.prompt for t in files.tasks.tasks if t.id == TASK)
    policy = ScriptedPolicy({prompt: [[READ, PORT], [LIST, LIST]]})  # a server's tasks are known by their prompt
    async with serving(create_app(load_environment("files"))) as url:
        lines = await tree(url, policy, "1:2")
    assert [(n["step"], n["branch"], n["action_rewards"]) for n in lines] == [
        (1, 0, [0.0, 0.5]),
        (1, 1, [0.0, 0.0]),
        (0, 0, [0.0, 0.5]),
    ]
    assert len({n["node"] for n in lines}) == 3 and lines[-1]["fork_errors"] == []


async def test_reward_branches_just_before_the_call_that_first_changed_the_reward(policy):
    lines = await tree("files", policy, "reward:3")
    root, children = lines[-1], lines[:-1]
    assert root["action_rewards"].index(0.5) == 1  # the first edit changed it
    assert [(c["step"], c["branch"]) for c in children] == [(1, 0), (1, 1), (1, 2)]
    assert [c["reward"] for c in children] == [1.0, 0.0, 1.0]  # alternatives reference, wrong, reference


async def test_listed_steps_branch_and_a_step_never_reached_is_recorded(policy):
    lines = await tree("files", policy, "2,0,9:1")
    root = lines[-1]
    assert [(c["step"], c["branch"]) for c in lines[:-1]] == [(0, 0), (2, 0)]
    assert [(e["step"], e["code"]) for e in root["fork_errors"]] == [(9, "not_reached")]


async def test_a_fork_the_env_refuses_is_recorded_in_fork_errors_and_the_root_plays_on(policy):
    spec = find_env("files")
    spec = spec.model_copy(update={"tool_servers": [spec.tool_servers[0].model_copy(update={"fork": "refuse"})]})
    lines = await tree(spec, policy, "every:2")
    (root,) = lines
    assert root["reward"] == 1.0 and root["stop_reason"] == "done"
    assert [(e["step"], e["branch"], e["code"]) for e in root["fork_errors"]] == [
        (s, None, "fork_error") for s in range(3)
    ]
    assert "cannot fork" in root["fork_errors"][0]["error"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("every", "WHERE:K"),
        ("every:0", "must be 1..64, got 0"),
        ("every:65", "must be 1..64, got 65"),
        ("every:two", "K must be a whole number"),
        ("sometimes:2", "WHERE must be every, reward or step numbers"),
        ("1,-2:2", "WHERE must be every, reward or step numbers"),
        (":3", "WHERE:K"),
    ],
)
def test_a_branching_that_is_not_where_k_is_a_usage_error_saying_what_it_takes(text, message):
    with pytest.raises(UsageError, match=message):
        Branching.parse(text)


def test_branchings_parse_to_what_they_say():
    assert Branching.parse("every:4") == Branching("every", 4)
    assert Branching.parse("reward:64") == Branching("reward", 64)
    assert Branching.parse(" 3,1,3:2") == Branching("steps", 2, (1, 3))
    assert str(Branching.parse("3,1:2")) == "1,3:2"


def test_trees_of_several_episodes_come_back_in_episode_order(files, policy):
    async def main():
        return await rollout_trees("files", policy, Branching.parse("1:1"), episodes=3, concurrency=2, seed=0)

    trees = anyio.run(main)
    assert [len(t) for t in trees] == [2, 2, 2]
    assert [t[-1].trajectory.episode for t in trees] == [0, 1, 2]
    assert all(t[0].parent == t[-1].id for t in trees)
