"""Rollouts a trainer can use: token ids and logprobs, n completions per prompt, every task
once, and an --out file that is appended to, resumed, and never emptied."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from openenv_mcp import ConfigError
from openenv_mcp.client.registry import load_environment
from openenv_mcp.rollout import OpenAIPolicy, Turn, rollout
from openenv_mcp.rollout.outfile import TrajectoryFile, episode_key

from support import ROOT
from support.scripted_model import ScriptedModel, plans_from_solutions

pytestmark = pytest.mark.anyio


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "openenv_mcp.cli", "rollout", *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "200"},
    )


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_token_ids_and_logprobs_are_recorded_per_turn():
    environment = load_environment("echo")
    with ScriptedModel(plans_from_solutions(environment)) as server:
        async with OpenAIPolicy(server.url, "m", logprobs=True, token_ids=True) as policy:
            (traj,) = await rollout("echo", policy, episodes=1, seed=0)
        body = server.requests[0]
    assert body["logprobs"] is True and body["return_token_ids"] is True
    line = traj.to_json()
    assert [c["turn"] for c in line["completions"]] == [1]  # one tool call solves it
    for completion in line["completions"]:
        message = line["messages"][completion["message_index"]]
        assert message["role"] == "assistant"
        assert len(completion["token_ids"]) == len(completion["logprobs"]) > 0
        assert completion["logprobs"][1] == {"token": completion["logprobs"][1]["token"], "logprob": -0.1}
        assert completion["prompt_token_ids"] == [ord(c) for c in line["prompt"]]
    assert line["completions"][0]["finish_reason"] == "tool_calls"


async def test_token_ids_written_as_token_id_strings_in_the_logprobs_are_read():
    choice = {
        "message": {"role": "assistant", "content": "hi"},
        "finish_reason": "stop",
        "logprobs": {"content": [{"token": "token_id:17", "logprob": -0.5}, {"token": "token_id:4", "logprob": 0.0}]},
    }
    turn = Turn.from_choice({"choices": [choice]}, choice)
    assert turn.token_ids == [17, 4] and turn.logprobs[0] == {"token": "token_id:17", "logprob": -0.5}
    plain = Turn.from_choice({}, {"message": {"role": "assistant", "content": "x"}})
    assert plain.record() is None  # nothing asked, nothing recorded


async def test_n_completions_per_prompt_are_one_request_and_a_group_of_episodes():
    environment = load_environment("echo")
    with ScriptedModel(plans_from_solutions(environment)) as server:
        async with OpenAIPolicy(server.url, "m") as policy:
            trajs = await rollout("echo", policy, episodes=2, seed=0, n=3, concurrency=3)
        first_turns = [r for r in server.requests if not any(m["role"] == "assistant" for m in r["messages"])]
    assert sorted(r.get("n") for r in first_turns) == [3, 3]  # one request per prompt, not per episode
    assert len(trajs) == 6 and all(t.reward == 1.0 for t in trajs)
    assert sorted((t.seed, t.sample) for t in trajs) == [(s, k) for s in (0, 1) for k in range(3)]
    assert len({t.key for t in trajs}) == 6


async def test_all_tasks_plays_every_task_once_and_repeat_gives_distinct_seeds():
    environment = load_environment("echo")
    with ScriptedModel(plans_from_solutions(environment)) as server:
        async with OpenAIPolicy(server.url, "m") as policy:
            once = await rollout("echo", policy, all_tasks=True, concurrency=4)
            twice = await rollout("echo", policy, all_tasks=True, repeat=2, concurrency=4)
    ids = [t.id for t in environment.tasks.tasks]
    assert [t.task_id for t in once] == ids
    assert [t.task_id for t in twice] == [i for i in ids for _ in range(2)]
    assert len({t.seed for t in twice}) == len(twice)
    for t in twice:  # each seed picks its own task: a replay needs only the seed
        assert environment.tasks.pick(t.seed)[0].id == t.task_id
    with pytest.raises(ConfigError, match="all_tasks/repeat need the environment's task list"):
        await rollout(lambda: None, policy, all_tasks=True)


def test_a_resumed_rollout_completes_an_interrupted_file_without_losing_a_line(tmp_path):
    environment = load_environment("echo")
    out = tmp_path / "t.jsonl"
    args = ["echo", "--model", "m", "--all-tasks", "--concurrency", "1", "--out", str(out)]
    with ScriptedModel(plans_from_solutions(environment), stop_after=3) as server:  # one request per episode
        proc = _cli(*args, "--base-url", server.url)
    assert proc.returncode == 2 and "the model server went away" in proc.stderr  # the run was interrupted
    assert len(_lines(out)) == 3
    finished = out.read_bytes()
    with out.open("ab") as fh:  # ... and killed while it wrote the fourth episode
        fh.write(partial := b'{"format": "openenv-mcp.trajectory/1", "env": "echo", "key": "seed=')
    with ScriptedModel(plans_from_solutions(environment)) as server:
        proc = _cli(*args, "--base-url", server.url)
    assert proc.returncode == 0, proc.stderr
    said = " ".join(proc.stdout.split())
    assert "wrote 5 trajectories" in said and "3 episodes already in the file were skipped" in said
    assert f"a truncated last line ({len(partial)} bytes) left by an interrupted run was cut off" in said
    assert out.read_bytes().startswith(finished)  # the finished lines are untouched
    lines = _lines(out)
    assert sorted(line["task_id"] for line in lines) == sorted(t.id for t in environment.tasks.tasks)
    assert len({line["key"] for line in lines}) == len(lines) == len(environment.tasks)
    with ScriptedModel(plans_from_solutions(environment)) as server:  # nothing left to do
        proc = _cli(*args, "--base-url", server.url)
        assert server.requests == []
    assert proc.returncode == 0 and out.read_bytes() == b"".join(
        line.encode() + b"\n" for line in out.read_text().splitlines()
    )
    assert len(_lines(out)) == len(environment.tasks)


def test_a_failed_rollout_never_empties_the_out_file(tmp_path):
    out = tmp_path / "t.jsonl"
    before = b'{"format": "openenv-mcp.trajectory/1", "env": "echo", "key": "seed=0 task=* sample=0"}\n' * 4
    out.write_bytes(before)
    with ScriptedModel({}, api_key="right") as server:
        proc = _cli("echo", "--base-url", server.url, "--model", "m", "--api-key", "wrong", "--out", str(out))
    assert proc.returncode == 2 and "refused the API key (401" in proc.stderr
    assert out.read_bytes() == before


def test_an_out_file_of_another_environment_or_with_a_broken_line_is_left_alone(tmp_path):
    other = tmp_path / "other.jsonl"
    other.write_text('{"format": "openenv-mcp.trajectory/1", "env": "files", "key": "k"}\n')
    with pytest.raises(
        ConfigError,
        match=r"other.jsonl:1 is a trajectory of environment 'files', not 'echo'; "
        r"give another --out",
    ):
        TrajectoryFile(other, "echo").open()
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"env": "echo", "key": "a"}\nnot json\n{"env": "echo", "key": "b"}\n')
    with pytest.raises(ConfigError, match=r"broken.jsonl:2 is not a JSON trajectory line; the file is left as it is"):
        TrajectoryFile(broken, "echo").open()
    assert other.read_text().count("\n") == 1 and broken.read_text().count("\n") == 3
    with TrajectoryFile(tmp_path / "new.jsonl", "echo") as fh:
        fh.append({"env": "echo", "key": episode_key(3, None, 1)})
    assert TrajectoryFile(tmp_path / "new.jsonl", "echo").open().finished == {"seed=3 task=* sample=1"}


def test_two_runs_never_append_to_one_file_at_once(tmp_path):
    with TrajectoryFile(tmp_path / "t.jsonl", "echo"):
        with pytest.raises(
            ConfigError,
            match=r"another rollout is writing '.*t.jsonl'; wait for it or give another "
            r"--out",
        ):
            TrajectoryFile(tmp_path / "t.jsonl", "echo").open()
    TrajectoryFile(tmp_path / "t.jsonl", "echo").open().close()  # free again once the first run is done
