"""Episode.fork: new episodes equal to the original at the fork, independent afterwards.

Snapshot (files, sql: the workspace cloned, SQLite through the backup API, the answer server's
hook), replay (a stdio server with in-memory state: the recorded calls re-run and checked),
divergence named with its step and both values, refusals that leave nothing behind.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

import openenv_mcp
from openenv_mcp import CallTool, EnvSpec, ToolServerSpec
from openenv_mcp.errors import ConfigError, EpisodeEnded, ForkDiverged, ForkError

from support.containment import call, hostile_spec, marked_processes


def text(obs) -> str:
    return "".join(getattr(c, "text", "") for c in obs.result.content)


def fs(env, name: str, **arguments):
    return env.step(CallTool(name=f"fs_{name}", arguments=arguments))


def test_snapshot_fork_copies_state_and_progress_then_goes_its_own_way():
    with openenv_mcp.make("files") as env:
        env.reset(seed=3)
        fs(env, "write", path="notes/a.txt", content="one")
        fs(env, "write", path="b.txt", content="two")
        before = env.state()
        (forked,) = env.fork()
        with forked:
            state = forked.state()
            assert state.episode_id != before.episode_id
            assert (state.step_count, state.task_id, state.seed, state.cumulative_reward) == (
                before.step_count,
                before.task_id,
                before.seed,
                before.cumulative_reward,
            )
            ep, orig = forked.unwrapped.episode, env.unwrapped.episode
            assert ep.forked_from == (orig.id, 2)
            assert [a for a, _ in ep.history] == [a for a, _ in orig.history]
            assert ep.workspace.path != orig.workspace.path
            assert text(fs(forked, "read", path="notes/a.txt")) == text(fs(env, "read", path="notes/a.txt"))
            fs(forked, "write", path="b.txt", content="fork only")
            fs(env, "delete", path="notes/a.txt")
            assert "fork only" not in text(fs(env, "read", path="b.txt"))
            assert "one" in text(fs(forked, "read", path="notes/a.txt"))
            assert forked.state().step_count == env.state().step_count  # both took 2 more steps


def test_fork_n_gives_independent_forks_with_their_own_ids():
    with openenv_mcp.make("files") as env:
        env.reset(seed=0)
        fs(env, "write", path="x.txt", content="base")
        forks = env.fork(3)
        try:
            assert len({f.state().episode_id for f in forks} | {env.state().episode_id}) == 4
            for i, f in enumerate(forks):
                fs(f, "write", path="x.txt", content=f"fork {i}")
            for i, f in enumerate(forks):
                assert f"fork {i}" in text(fs(f, "read", path="x.txt"))
            assert "base" in text(fs(env, "read", path="x.txt"))
        finally:
            for f in forks:
                f.close()


def test_sql_fork_copies_the_database_and_the_submission():
    with openenv_mcp.make("sql") as env:
        env.reset(seed=1)
        env.step(CallTool(name="execute", arguments={"sql": "CREATE TABLE fork_probe (v TEXT)"}))
        env.step(CallTool(name="execute", arguments={"sql": "INSERT INTO fork_probe VALUES ('parent')"}))
        env.step(CallTool(name="submit_answer", arguments={"answer": "42"}))
        (forked,) = env.fork(strategy="snapshot")
        with forked:
            rows = forked.step(CallTool(name="query", arguments={"sql": "SELECT v FROM fork_probe"}))
            assert "parent" in text(rows)
            again = forked.step(CallTool(name="submit_answer", arguments={"answer": "43"}))
            assert again.result.is_error and "already submitted" in text(again)
            forked.step(CallTool(name="execute", arguments={"sql": "INSERT INTO fork_probe VALUES ('fork')"}))
            rows = env.step(CallTool(name="query", arguments={"sql": "SELECT count(*) AS n FROM fork_probe"}))
            assert rows.result.structured_content["rows"] == [[1]]


def test_replay_fork_rebuilds_a_servers_memory_by_re_running_the_calls():
    spec, _ = hostile_spec("process")  # a stdio server with an in-memory counter: fork defaults to replay
    with openenv_mcp.make(spec) as env:
        env.reset()
        assert [call(env, "counter")[0] for _ in range(3)] == ["1", "2", "3"]
        assert env.unwrapped.episode.env.servers[0].fork_strategy == "replay"
        with pytest.raises(ForkError, match=r"cannot fork by snapshot: tool server\(s\) h do not declare"):
            env.fork(strategy="snapshot")
        (forked,) = env.fork()
        with forked:
            assert forked.state().step_count == 3
            assert call(forked, "counter")[0] == "4"
            assert call(forked, "counter")[0] == "5"
            assert call(env, "counter")[0] == "4"  # the original never saw the fork's calls


def test_replay_divergence_names_the_step_and_both_values():
    spec, _ = hostile_spec("process")
    with openenv_mcp.make(spec) as env:
        env.reset()
        call(env, "counter")
        call(env, "whoami")  # its pid differs in every episode: a replay cannot reproduce it
        with pytest.raises(
            ForkDiverged, match=r"at step 2 \(whoami\): recorded \{.*pid.*\}, replayed \{.*pid"
        ) as caught:
            env.fork()
        assert caught.value.step == 2
        assert caught.value.recorded != caught.value.replayed
        assert env.state().step_count == 2  # the original goes on
        assert call(env, "counter")[0] == "2"


def test_a_refusing_server_refuses_and_leaves_nothing_behind():
    spec, marker = hostile_spec("process")
    spec = spec.model_copy(update={"tool_servers": [spec.tool_servers[0].model_copy(update={"fork": "refuse"})]})
    with openenv_mcp.make(spec) as env:
        env.reset()
        call(env, "counter")
        with pytest.raises(ForkError, match=r"tool server\(s\) h .* cannot fork"):
            env.fork()
        assert len(marked_processes(marker)) == 1


def test_a_failed_replay_closes_every_fork_it_started():
    spec, marker = hostile_spec("process")
    with openenv_mcp.make(spec) as env:
        env.reset()
        call(env, "whoami")
        with pytest.raises(ForkDiverged):
            env.fork(3)
        assert len(marked_processes(marker)) == 1


def test_remote_servers_refuse_by_default():
    server = ToolServerSpec(name="r", url="http://127.0.0.1:9/mcp")
    assert server.fork_strategy == "refuse"
    assert server.model_copy(update={"fork": "replay"}).fork_strategy == "replay"


def test_bad_requests_are_named_errors():
    with openenv_mcp.make("echo") as env:
        env.reset()
        with pytest.raises(ConfigError, match="between 1 and"):
            env.fork(0)
        with pytest.raises(ConfigError, match="fork strategy must be one of"):
            env.fork(strategy="magic")
        episode = env.unwrapped.episode
        env.run_async(episode.close)
        with pytest.raises(EpisodeEnded, match="only a live episode can be forked"):
            env.run_async(episode.fork)


def test_an_episode_that_ran_code_refuses_to_fork(tmp_path: Path):
    spec = EnvSpec(
        name="codeact-echo",
        codeact=True,
        tool_servers=[ToolServerSpec(name="echo", namespace="", object="openenv_mcp.tool_servers.echo:server")],
        base_dir=tmp_path,
    )
    with openenv_mcp.make(spec) as env:
        env.reset()
        env.step({"type": "run_code", "code": "print(echo(text='hi'))"})
        with pytest.raises(ForkError, match=r"ran code \(run_code\)"):
            env.fork()


def test_a_fork_keeps_the_originals_limits():
    with openenv_mcp.make("echo", max_steps=3) as env:
        env.reset()
        env.step(CallTool(name="echo", arguments={"text": "a"}))
        (forked,) = env.fork()
        with forked:
            assert forked.state().max_steps == 3
            forked.step(CallTool(name="echo", arguments={"text": "b"}))
            obs = forked.step(CallTool(name="echo", arguments={"text": "c"}))
            assert obs.truncated
            assert not env.step(CallTool(name="echo", arguments={"text": "b"})).truncated


def test_fork_on_the_async_env():
    async def main():
        async with openenv_mcp.make_async("files") as env:
            await env.reset(seed=0)
            await env.step(CallTool(name="fs_write", arguments={"path": "a.txt", "content": "x"}))
            forks = await env.fork(2)
            states = [await f.state() for f in forks]
            for f in forks:
                await f.close()
            return states, await env.state()

    states, original = anyio.run(main)
    assert all(s.step_count == original.step_count == 1 for s in states)
    assert json.dumps(sorted(s.episode_id for s in states)) != json.dumps([original.episode_id] * 2)
