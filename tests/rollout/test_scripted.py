"""ScriptedPolicy: fixed tool calls per task, read off the conversation; alternatives for branches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openenv_mcp.client.registry import load_environment
from openenv_mcp.errors import ConfigError, PolicyError
from openenv_mcp.rollout import ScriptedPolicy, rollout
from openenv_mcp.rollout.scripted import DONE
from openenv_mcp.types import Task

TASKS = [Task(id="a", prompt="do a"), Task(id="b", prompt="do b")]
READ = {"name": "fs_read", "arguments": {"path": "x"}}
LIST = {"name": "fs_list", "arguments": {"path": "."}}


def conversation(prompt: str, calls: int = 0) -> list[dict]:
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": prompt}]
    for i in range(calls):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "fs_read", "arguments": "{}"}}
        messages += [{"role": "assistant", "content": None, "tool_calls": [call]}, {"role": "tool", "content": "ok"}]
    return messages


def called(turn) -> tuple[str, dict] | str:
    calls = turn.message.get("tool_calls")
    if not calls:
        return turn.message["content"]
    return calls[0]["function"]["name"], json.loads(calls[0]["function"]["arguments"])


def test_the_task_picks_the_script_and_the_calls_so_far_pick_the_next_one():
    policy = ScriptedPolicy({"a": [READ, LIST], "b": [LIST]}, tasks=TASKS)
    assert called(policy(conversation("do a"), [])) == ("fs_read", {"path": "x"})
    assert called(policy(conversation("do a", 1), [])) == ("fs_list", {"path": "."})
    assert called(policy(conversation("do a", 2), [])) == DONE  # past the end: no tool call, the episode stops
    assert called(policy(conversation("do b"), [])) == ("fs_list", {"path": "."})


def test_one_list_plays_every_task_and_star_covers_the_tasks_not_named():
    assert called(ScriptedPolicy([LIST])(conversation("anything"), [])) == ("fs_list", {"path": "."})
    policy = ScriptedPolicy({"a": [READ], "*": [LIST]}, tasks=TASKS)
    assert called(policy(conversation("do b"), [])) == ("fs_list", {"path": "."})


def test_branch_k_plays_alternative_k_mod_n_from_where_it_starts():
    policy = ScriptedPolicy({"a": [[READ, READ], [LIST, LIST]]}, tasks=TASKS)
    assert called(policy(conversation("do a", 1), [])) == ("fs_read", {"path": "x"})
    assert called(policy.branch(1)(conversation("do a", 1), [])) == ("fs_list", {"path": "."})
    assert called(policy.branch(2)(conversation("do a", 1), [])) == ("fs_read", {"path": "x"})
    assert policy.choice == 0  # branch() leaves the policy itself as it was


def test_a_task_without_a_script_stops_the_rollout_with_a_policy_error():
    with pytest.raises(PolicyError, match="no script for the task 'do b'"):
        ScriptedPolicy({"a": [READ]}, tasks=TASKS)(conversation("do b"), [])


def test_a_tool_name_the_model_server_would_refuse_is_called_by_its_function_name():
    policy = ScriptedPolicy([{"name": "db.query", "arguments": {}}])
    offered = [{"type": "function", "function": {"name": "db_query"}}]
    assert called(policy(conversation("x"), offered)) == ("db_query", {})


@pytest.mark.parametrize(
    ("scripts", "message"),
    [
        ("read", "a list of actions or an object keyed by task id"),
        ({"a": "read"}, "must be a list of actions"),
        ({"a": [{"arguments": {}}]}, "action 0 must be"),
        ({"a": [READ], "do a": [LIST]}, "same prompt"),
    ],
)
def test_malformed_scripts_are_config_errors_naming_what_is_wrong(scripts, message):
    with pytest.raises(ConfigError, match=message):
        ScriptedPolicy(scripts, tasks=TASKS)


def test_a_file_that_is_not_json_is_a_config_error_naming_it(tmp_path: Path):
    bad = tmp_path / "s.json"
    bad.write_text("{nope")
    with pytest.raises(ConfigError, match="s.json"):
        ScriptedPolicy.from_file(bad)


@pytest.mark.anyio
async def test_the_reference_solutions_as_a_scripted_policy_solve_files_tasks_through_rollout():
    environment = load_environment("files")
    policy = ScriptedPolicy.from_solutions(environment, ["reference"])
    (traj,) = await rollout("files", policy, task_id="rename-notes")
    assert traj.done and traj.reward == 1.0 and traj.model == "scripted"
