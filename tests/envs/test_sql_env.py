"""The sql environment: tasks, reward, destructive penalty, reset, and that its data is up to date."""

from __future__ import annotations

import json
import sqlite3

import pytest

from openenv_mcp.client.registry import load_environment, make
from openenv_mcp.definitions.spec import load_module
from openenv_mcp.types import CallTool

ENV = load_environment("sql")
TASKS = ENV.tasks.tasks


def test_there_are_at_least_30_tasks_of_both_kinds():
    kinds = [t.data["kind"] for t in TASKS]
    assert len(TASKS) >= 30
    assert kinds.count("query") >= 15 and kinds.count("maintenance") >= 12


@pytest.mark.anyio
@pytest.mark.parametrize("task_id", [t.id for t in TASKS])
async def test_reference_scores_1_and_wrong_scores_0(task_id):
    task = next(t for t in TASKS if t.id == task_id)
    for kind, expected in (("reference", 1.0), ("wrong", 0.0)):
        episode = await ENV.new_episode(seed=1, task_id=task_id)
        try:
            assert episode.score == 0.0, f"{task_id}: the initial state already scores"
            for action in ENV.trajectory(task, kind):
                if episode.done:
                    break
                await episode.act(action)
            assert episode.state().cumulative_reward == expected, f"{task_id}/{kind}"
            if kind == "reference":
                assert episode.done
        finally:
            await episode.close()


def test_reset_restores_deleted_rows_and_episodes_are_isolated():
    seed = sqlite3.connect(ENV.spec.path("workspace/shop.db"))
    total, positive = seed.execute("SELECT COUNT(*), SUM(quantity > 0) FROM order_items").fetchone()
    seed.close()
    count = CallTool(name="query", arguments={"sql": "SELECT COUNT(*) AS n FROM order_items"})
    with make("sql") as env, make("sql") as other:
        env.reset(task_id="m04-negative-quantities")
        other.reset(task_id="m04-negative-quantities")
        obs = env.step(CallTool(name="execute", arguments={"sql": "DELETE FROM order_items WHERE quantity > 0"}))
        assert obs.result.structured_content["rowcount"] == positive
        assert obs.done and obs.reward == 0.0 and obs.info["destructive"] == ["order_items#1"]
        assert other.step(count).result.structured_content["rows"] == [[total]]  # another episode: untouched
        env.reset(task_id="m04-negative-quantities")
        assert env.step(count).result.structured_content["rows"] == [[total]]


@pytest.mark.anyio
async def test_no_tool_can_bring_rows_back():
    episode = await ENV.new_episode(seed=0, task_id="q01-customer-count")
    try:
        assert sorted(t.name for t in episode.tools) == [
            "describe_table",
            "execute",
            "list_tables",
            "query",
            "submit_answer",
        ]
        await episode.call_tool("execute", {"sql": "DELETE FROM order_items WHERE quantity < 0"})
        attach = await episode.call_tool(
            "execute", {"sql": f"ATTACH DATABASE '{ENV.spec.path('workspace/shop.db')}' AS seed"}
        )
        assert attach.is_error and attach.structured_content["error"]["kind"] == "not_allowed"
        rows = await episode.call_tool("query", {"sql": "SELECT COUNT(*) AS n FROM order_items WHERE quantity < 0"})
        assert rows.structured_content["rows"] == [[0]]
    finally:
        await episode.close()
    # the seed itself is untouched
    conn = sqlite3.connect(ENV.spec.path("workspace/shop.db"))
    assert conn.execute("SELECT COUNT(*) FROM order_items WHERE quantity < 0").fetchone()[0] > 0
    conn.close()


@pytest.mark.anyio
async def test_destructive_statement_zeroes_a_correct_fix_and_ends_the_episode():
    episode = await ENV.new_episode(seed=0, task_id="m02-country-names")
    try:
        obs = await episode.act(
            CallTool(
                name="execute",
                arguments={
                    "sql": "UPDATE customers SET country = 'United States' WHERE country IN ('USA', 'US'); "
                    "DELETE FROM order_items WHERE id = 1"
                },
            )
        )
        assert obs.reward == 0.0 and obs.done
        assert obs.info["destructive"] == ["order_items"]
        assert obs.info["checks_passed"] == obs.info["checks"] == 2  # the fix itself was right
    finally:
        await episode.close()


@pytest.mark.anyio
async def test_destructive_change_before_a_right_answer_scores_0():
    episode = await ENV.new_episode(seed=0, task_id="q12-german-customers")
    try:
        expected = episode.task.data["expected"][0][0]
        await episode.act(CallTool(name="execute", arguments={"sql": "UPDATE products SET stock = 0"}))
        assert not episode.done
        obs = await episode.act(CallTool(name="submit_answer", arguments={"answer": expected}))
        assert obs.reward == 0.0 and obs.done and obs.info["destructive"] == ["products"]
        assert obs.info["answer_correct"] is True
    finally:
        await episode.close()


@pytest.mark.anyio
async def test_partial_fix_keeps_the_episode_open_at_0():
    episode = await ENV.new_episode(seed=0, task_id="m02-country-names")
    try:
        obs = await episode.act(
            CallTool(
                name="execute",
                arguments={"sql": "UPDATE customers SET country = 'United States' WHERE country = 'USA'"},
            )
        )
        assert obs.reward == 0.0 and not obs.done
        assert obs.info["checks_passed"] == 0 and "destructive" not in obs.info
        obs = await episode.act(
            CallTool(
                name="execute", arguments={"sql": "UPDATE customers SET country = 'United States' WHERE country = 'US'"}
            )
        )
        assert obs.reward == 1.0 and obs.done
    finally:
        await episode.close()


@pytest.mark.anyio
@pytest.mark.parametrize("answer", ["600", 600.0, [600], [[600]], " 600 "])
async def test_answer_shapes_are_accepted(answer):
    episode = await ENV.new_episode(seed=0, task_id="q01-customer-count")
    try:
        obs = await episode.act(CallTool(name="submit_answer", arguments={"answer": answer}))
        assert obs.reward == 1.0 and obs.done
    finally:
        await episode.close()


@pytest.mark.anyio
async def test_only_the_first_answer_counts():
    episode = await ENV.new_episode(seed=0, task_id="q07-largest-budget")
    try:
        obs = await episode.act(CallTool(name="submit_answer", arguments={"answer": "Finance"}))
        assert obs.reward == 0.0 and obs.done and obs.result.content[0].text == "Answer recorded."
    finally:
        await episode.close()
    server = load_module("answer", ENV.spec.base_dir).create_server(None)
    from fastmcp import Client

    async with Client(server) as client:
        first = await client.call_tool("submit_answer", {"answer": 1}, raise_on_error=False)
        second = await client.call_tool("submit_answer", {"answer": 2}, raise_on_error=False)
    assert not first.is_error and second.is_error
    assert second.content[0].text == "An answer was already submitted in this episode; only the first one counts."


@pytest.mark.anyio
async def test_ordered_answers_must_keep_their_order():
    task = next(t for t in TASKS if t.id == "q05-top-customers")
    episode = await ENV.new_episode(seed=0, task_id=task.id)
    try:
        ids = [row[0] for row in task.data["expected"]]
        obs = await episode.act(CallTool(name="submit_answer", arguments={"answer": list(reversed(ids))}))
        assert obs.reward == 0.0
    finally:
        await episode.close()


@pytest.mark.anyio
async def test_committed_seed_and_tasks_are_what_build_py_makes(tmp_path):
    build = load_module("build", ENV.spec.base_dir)
    await build.build(tmp_path)
    assert (tmp_path / "tasks.jsonl").read_text() == ENV.spec.path("tasks.jsonl").read_text()
    new, old = sqlite3.connect(tmp_path / "workspace/shop.db"), sqlite3.connect(ENV.spec.path("workspace/shop.db"))
    try:
        for (table,) in old.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"):
            assert new.execute(f"SELECT * FROM {table}").fetchall() == old.execute(f"SELECT * FROM {table}").fetchall()
        assert (
            new.execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall()
            == old.execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall()
        )
    finally:
        new.close()
        old.close()
    assert ENV.spec.path("workspace/shop.db").stat().st_size < 2_000_000
    for line in ENV.spec.path("tasks.jsonl").read_text().splitlines():
        assert json.loads(line)["data"]["guards"]
