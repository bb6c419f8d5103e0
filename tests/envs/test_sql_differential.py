"""Simulation and production behave the same: the sql env on SQLite vs a real PostgreSQL server.

Every task's reference AND wrong trajectory runs twice: on the embedded SQLite
copy (simulation) and on PostgreSQL (a per-episode database created from a
template filled from the same seed). Compared step by step: the tool result,
reward, done and info; then the end state through every check and guard of
the task. Results go through ``openenv_mcp.tool_servers.sql.normalize.comparable`` (the one
documented place where the engines may differ: an error's wording); nothing
else is skipped.
"""

from __future__ import annotations

import uuid

import psycopg
import pytest

from openenv_mcp.client.registry import load_environment
from openenv_mcp.core.environment import Environment
from openenv_mcp.definitions.spec import load_module
from openenv_mcp.tool_servers.sql.normalize import comparable
from openenv_mcp.tool_servers.sql.postgres import drop_database
from openenv_mcp.types import canonical_json


@pytest.fixture(scope="module")
def template(postgres_server):
    env = load_environment("sql")
    seed = load_module("seed", env.spec.base_dir)
    name = "shop_tpl_" + uuid.uuid4().hex[:8]
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    with psycopg.connect(postgres_server.url_for(name)) as conn:
        seed.load_postgres(conn)
    yield name
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _postgres_env(postgres_server, template) -> Environment:
    """The sql env in simulation mode, its sql server on PostgreSQL (per-episode template copies)."""
    base = load_environment("sql")
    servers = []
    for server in base.spec.tool_servers:
        if server.name == "sql":
            server = server.model_copy(
                update={
                    "env": {"SQL_BACKEND": "postgres", "DATABASE_URL": postgres_server.url, "SQL_PG_TEMPLATE": template}
                }
            )
        servers.append(server)
    return Environment(base.spec.model_copy(update={"tool_servers": servers}))


def _wire(result) -> dict:
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def _run(environment, task, kind):
    episode = await environment.new_episode(seed=0, task_id=task.id)
    try:
        steps = []
        for action in environment.trajectory(task, kind):
            if episode.done or episode.truncated:
                break
            obs = await episode.act(action)
            info = {k: v for k, v in obs.info.items() if k not in ("episode_id", "elapsed_ms")}
            steps.append(
                {
                    "action": action.name,
                    "result": comparable(_wire(obs.result)),
                    "reward": obs.reward,
                    "done": obs.done,
                    "info": info,
                }
            )
        end = []
        for check in task.data.get("guards", []) + task.data.get("checks", []):
            if "sql" in check:
                end.append(comparable(_wire(await episode.call_tool("query", {"sql": check["sql"]}))))
            elif "index" in check:
                table = check["index"]["table"]
                end.append(comparable(_wire(await episode.call_tool("describe_table", {"table": table}))))
            else:  # {"object": {"name", "kind"}}: the listing says what each name is
                end.append(comparable(_wire(await episode.call_tool("list_tables", {}))))
        return steps, end, episode.state()
    finally:
        await episode.close()  # on PostgreSQL this drops the episode's database


@pytest.mark.anyio
async def test_every_trajectory_gives_the_same_results_on_sqlite_and_postgres(postgres_server, template):
    sqlite_env = load_environment("sql")
    pg_env = _postgres_env(postgres_server, template)
    assert [s.env for s in pg_env.servers if s.name == "sql"][0]["SQL_BACKEND"] == "postgres"
    compared = 0
    for task in sqlite_env.tasks.tasks:
        for kind in ("reference", "wrong"):
            steps_a, end_a, state_a = await _run(sqlite_env, task, kind)
            steps_b, end_b, state_b = await _run(pg_env, task, kind)
            assert len(steps_a) == len(steps_b), f"{task.id}/{kind}: step counts differ"
            for i, (a, b) in enumerate(zip(steps_a, steps_b, strict=True)):
                assert canonical_json(a) == canonical_json(b), f"{task.id}/{kind} step {i}: {a} != {b}"
            assert canonical_json(end_a) == canonical_json(end_b), f"{task.id}/{kind}: end states differ"
            assert state_a.model_dump(exclude={"episode_id"}) == state_b.model_dump(exclude={"episode_id"})
            assert state_b.cumulative_reward == (1.0 if kind == "reference" else 0.0), f"{task.id}/{kind} on postgres"
            compared += len(steps_a)
    assert compared > 100
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:  # closing each episode dropped its database
        left = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'openenv_%'").fetchall()
        roles = conn.execute("SELECT rolname FROM pg_roles WHERE rolname LIKE 'openenv_%'").fetchall()
    assert left == [] and roles == []  # ... and its role


@pytest.mark.anyio
async def test_the_production_variant_talks_to_postgres(postgres_server, template):
    """``--mode prod``: the spec's ``prod`` variant reads DATABASE_URL from the host (pass_env)."""
    import os

    env = load_environment("sql")
    prod = [s.variant("prod") for s in env.spec.tool_servers if s.name == "sql"][0]
    assert prod.pass_env == ["DATABASE_URL"] and prod.env == {"SQL_BACKEND": "postgres"}
    name = "shop_prod_" + uuid.uuid4().hex[:8]
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {template}")
    old = os.environ.get("DATABASE_URL")
    os.environ["DATABASE_URL"] = postgres_server.url_for(name)
    try:
        production = Environment(env.spec, mode="prod")
        episode = await production.new_episode()
        try:
            result = await episode.call_tool("query", {"sql": "SELECT COUNT(*) FROM customers"})
            assert result.structured_content["rows"] == [[600]]
            result = await episode.call_tool("execute", {"sql": "UPDATE customers SET tier = 'gold' WHERE id = 1"})
            assert not result.is_error
        finally:
            await episode.close()
        with psycopg.connect(postgres_server.url_for(name)) as conn:
            assert conn.execute("SELECT tier FROM customers WHERE id = 1").fetchone() == ("gold",)
    finally:
        if old is None:
            os.environ.pop("DATABASE_URL", None)
        else:
            os.environ["DATABASE_URL"] = old
        await drop_database(postgres_server.url, name)
