"""Rollout lines as Harbor trajectories (ATIF v1.4), validated against the schema written from Harbor's RFC."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from openenv_mcp.cli.app import main
from openenv_mcp.client.registry import load_environment
from openenv_mcp.rollout import OpenAIPolicy, rollout
from openenv_mcp.rollout.atif import ATIF_VERSION, to_atif

from support.scripted_model import ScriptedModel, plans_from_solutions

SCHEMA = json.loads((Path(__file__).parents[1] / "support" / "atif-v1.4.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def _errors(document: dict) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(document)]


@pytest.fixture(scope="module")
def lines() -> list[dict]:
    """Two `files` episodes played through the scripted model server, with token ids and logprobs."""
    import anyio

    environment = load_environment("files")

    async def play() -> list[dict]:
        with ScriptedModel(plans_from_solutions(environment)) as server:
            async with OpenAIPolicy(server.url, "scripted", logprobs=True, token_ids=True, backoff=0.01) as policy:
                return [t.to_json() for t in await rollout("files", policy, episodes=2, seed=3)]

    return anyio.run(play)


def test_a_rollout_line_becomes_a_valid_atif_trajectory_with_its_tool_calls_results_rewards_and_tokens(lines):
    for line in lines:
        document = to_atif(line)
        assert not _errors(document), _errors(document)
        assert document["schema_version"] == ATIF_VERSION and document["session_id"] == line["episode_id"]
        assert [s["step_id"] for s in document["steps"]] == list(range(1, len(document["steps"]) + 1))
        assert [s["source"] for s in document["steps"][:2]] == ["system", "user"]
        agent = [s for s in document["steps"] if s["source"] == "agent"]
        assert len(agent) == line["turns"]
        calls = [c for s in agent for c in s.get("tool_calls", [])]
        assert [(c["function_name"], c["arguments"]) for c in calls] == [
            (s["name"], s["arguments"]) for s in line["steps"]
        ]  # the files tools keep their names: the model saw fs_*
        results = {
            r["source_call_id"]: r["content"] for s in agent for r in s.get("observation", {}).get("results", [])
        }
        tool_messages = {m["tool_call_id"]: m["content"] for m in line["messages"] if m["role"] == "tool"}
        assert results == tool_messages
        assert sum(s["extra"]["reward"] for s in agent) == pytest.approx(line["reward"])
        assert document["final_metrics"]["extra"]["reward"] == line["reward"] == 1.0
        by_index = {c["message_index"]: c for c in line["completions"]}
        assert by_index, "the scripted server returned token ids and logprobs"
        for step in agent:
            recorded = by_index[step["extra"]["message_index"]]
            assert step["metrics"]["completion_token_ids"] == recorded["token_ids"]  # token-exact, not retokenized
            assert step["metrics"]["prompt_token_ids"] == recorded["prompt_token_ids"]
            assert step["metrics"]["logprobs"] == [lp["logprob"] for lp in recorded["logprobs"]]


def test_the_schema_refuses_what_atif_does_not_allow(lines):
    document = to_atif(lines[0])
    broken = json.loads(json.dumps(document))
    broken["steps"][1]["source"] = "tool"
    del broken["steps"][-1]["message"]
    broken["steps"][-1].setdefault("tool_calls", [{}])
    assert len(_errors(broken)) >= 2, _errors(broken)


def test_a_malformed_tool_call_keeps_its_raw_arguments_and_the_document_stays_valid():
    line = {
        "format": "openenv-mcp.trajectory/1",
        "env": "echo",
        "episode": 0,
        "key": "seed=0 task=* sample=0",
        "prompt": "say hi",
        "messages": [
            {"role": "user", "content": "say hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "echo", "arguments": "{not json"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "arguments are not JSON"},
        ],
        "steps": [{"tool_call_id": "c1", "name": "echo", "reward": 0.0, "is_error": True}],
        "reward": 0.0,
    }
    document = to_atif(line)
    assert not _errors(document), _errors(document)
    (agent,) = [s for s in document["steps"] if s["source"] == "agent"]
    assert agent["tool_calls"] == [{"tool_call_id": "c1", "function_name": "echo", "arguments": {}}]
    assert agent["extra"]["raw_arguments"] == {"c1": "{not json"}
    assert document["session_id"] == "echo:seed=0 task=* sample=0"


def test_export_atif_writes_one_valid_trajectory_per_line_and_refuses_other_files(lines, tmp_path, capsys):
    rollouts = tmp_path / "rollouts.jsonl"
    rollouts.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert main(["export", "atif", str(rollouts), "--out", str(tmp_path / "atif")]) == 0
    written = sorted((tmp_path / "atif").glob("*.json"))
    assert [p.name for p in written] == ["episode-0-sample-0.json", "episode-1-sample-0.json"]
    for path in written:
        assert not _errors(json.loads(path.read_text()))
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"format": "something-else"}) + "\n")
    assert main(["export", "atif", str(other), "--out", str(tmp_path / "none")]) == 2
    assert "is not a rollout line" in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "none").exists()


def test_export_atif_writes_one_valid_trajectory_per_node_of_a_branching_rollout(tmp_path):
    import anyio

    from openenv_mcp.rollout import Branching, ScriptedPolicy, rollout_trees

    environment = load_environment("files")
    policy = ScriptedPolicy.from_solutions(environment, ["reference", "wrong"])

    async def play() -> list[dict]:
        (tree,) = await rollout_trees("files", policy, Branching.parse("1:2"), task_id="json-port-and-debug")
        return [node.to_json() for node in tree]

    nodes = anyio.run(play)
    rollouts = tmp_path / "tree.jsonl"
    rollouts.write_text("".join(json.dumps(line) + "\n" for line in nodes))
    assert main(["export", "atif", str(rollouts), "--out", str(tmp_path / "atif")]) == 0
    written = sorted((tmp_path / "atif").glob("*.json"))
    assert sorted(p.name for p in written) == sorted(f"episode-0-node-{n['node']}.json" for n in nodes)
    for path in written:
        assert not _errors(json.loads(path.read_text()))
