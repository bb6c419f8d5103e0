"""The hostile agent against the ``sql`` environment: one test per attack, through its tools.

Attacks that could crash or bloat the server run the agent in a child process
(``openenv_mcp.make("sql")``), so a segfault shows as the child's exit status
and memory as its peak RSS; the responsiveness attack runs against a real
``openenv-mcp serve sql``. Every test asserts a clear error result, that the
server keeps answering, that the host is untouched, and that the reward is not
forged.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time

import httpx

from openenv_mcp.serve.manager import EPISODE_KEY_HEADER
from openenv_mcp.testing import running_server

from support import ROOT

AGENT = textwrap.dedent("""
    import json, resource, sys
    from openenv_mcp.client.registry import make
    from openenv_mcp.types import CallTool

    def call(env, name, **arguments):
        obs = env.step(CallTool(name=name, arguments=arguments))
        return {"error": obs.result.is_error, "text": obs.result.content[0].text,
                "data": obs.result.structured_content, "reward": obs.reward, "done": obs.done, "info": obs.info}

    out = []
    with make("sql") as env:
        env.reset(task_id=sys.argv[1])
        for name, arguments in json.loads(sys.argv[2]):
            out.append(call(env, name, **arguments))
        if out and out[-1]["done"]:
            env.reset(task_id=sys.argv[1])
        out.append(call(env, "query", sql="SELECT COUNT(*) AS n FROM departments"))  # still answering
    print(json.dumps({"results": out, "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
""")

GIB = 1024**3
PEAK_BOUND = 512 * 1024**2
"""What an agent process (the interpreter, the framework, the sql env and the refused payload's bounded share) may
peak at while its amplification is refused: 402-403 MB measured on this tree, just over the 400 MB bound these
tests had; an unbounded payload (200 MB and more per value) still goes far past it."""


def create_episode(http: httpx.Client, task_id: str = "q01-customer-count") -> tuple[str, str]:
    """A new episode over the HTTP control plane: its id and the trainer key that steps it."""
    body = http.post("/episodes", json={"task_id": task_id}).json()
    return body["episode_id"], body["episode_key"]


def agent(calls: list[tuple[str, dict]], task_id: str = "q01-customer-count", memory_cap: int = 3 * GIB):
    """Run ``calls`` as an agent in a child process; returns (exit status, results, peak RSS in bytes)."""

    def cap() -> None:  # a safety net for the machine if memory is not bounded
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_cap, memory_cap))

    proc = subprocess.run(
        [sys.executable, "-c", AGENT, task_id, json.dumps(calls)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        preexec_fn=cap,
    )
    if proc.returncode != 0:
        return proc.returncode, proc.stderr[-3000:], 0
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    return 0, report["results"], report["peak_rss"]


def assert_still_answering(results: list[dict]) -> None:
    last = results[-1]
    assert not last["error"] and last["data"]["rows"] == [[6]], last


def test_fts3_tokenizer_with_a_forged_pointer_cannot_segfault_the_server():
    status, results, _ = agent(
        [
            (
                "execute",
                {
                    "sql": "SELECT fts3_tokenizer('evil', x'4141414141414141'); "
                    "CREATE VIRTUAL TABLE ft USING fts3(a, tokenize=evil)"
                },
            )
        ]
    )
    assert status == 0, f"the environment server died: exit {status}: {results}"
    first = results[0]
    assert first["error"] and first["data"]["error"] == {
        "kind": "not_allowed",
        "statement": 1,
        "message": "the function fts3_tokenizer() is not allowed through this tool",
    }
    assert_still_answering(results)


def test_fts3_tokenizer_cannot_leak_a_heap_pointer_through_query():
    status, results, _ = agent(
        [
            ("query", {"sql": "SELECT fts3_tokenizer('simple') AS p"}),
            ("query", {"sql": "SELECT hex(FTS3_TOKENIZER('porter')) AS p"}),
        ]
    )
    assert status == 0, results
    for r in results[:2]:
        assert r["error"] and r["text"] == (
            "SQL error (not_allowed): the function fts3_tokenizer() is not allowed through this tool"
        ), r
    assert_still_answering(results)


def test_load_extension_is_refused():
    status, results, _ = agent(
        [
            ("query", {"sql": "SELECT load_extension('/lib/x86_64-linux-gnu/libc.so.6')"}),
            ("execute", {"sql": "SELECT load_extension('libc.so.6', 'system')"}),
        ]
    )
    assert status == 0, results
    for r in results[:2]:
        assert r["error"] and r["data"]["error"]["kind"] == "not_allowed"
        assert "the function load_extension() is not allowed through this tool" in r["text"]
    assert_still_answering(results)


def test_zeroblob_of_200_mb_over_three_rows_is_refused_with_bounded_memory():
    status, results, peak = agent(
        [
            ("query", {"sql": "SELECT zeroblob(200000000) AS b FROM (VALUES (1), (2), (3))"}),
            ("execute", {"sql": "SELECT zeroblob(200000000) AS b FROM (VALUES (1), (2), (3))"}),
        ]
    )
    assert status == 0, results
    for r in results[:2]:
        assert r["error"] and r["data"]["error"]["kind"] == "too_large", r
        assert "string or blob too big" in r["text"]
    assert_still_answering(results)
    assert peak < PEAK_BOUND, f"peak RSS {peak / 1024**2:.0f} MB"


def test_many_just_under_limit_values_are_refused_by_the_result_cap_with_bounded_memory():
    wide = ", ".join(f"zeroblob(900000) AS c{i}" for i in range(20))
    status, results, peak = agent([("query", {"sql": f"SELECT {wide} FROM (VALUES (1), (2), (3))"})])
    assert status == 0, results
    assert results[0]["error"] and results[0]["data"]["error"]["kind"] == "too_large"
    assert results[0]["text"] == (
        "SQL error (too_large): the result is larger than 1000000 bytes, the limit of one "
        "result: select fewer or shorter columns, aggregate, or add LIMIT"
    )
    assert_still_answering(results)
    assert peak < PEAK_BOUND, f"peak RSS {peak / 1024**2:.0f} MB"


def test_printf_replace_and_randomblob_amplification_is_refused():
    calls = [
        ("query", {"sql": "SELECT length(replace(hex(zeroblob(400000)), '0', 'aaaaaaaaaa')) AS n"}),
        ("query", {"sql": "SELECT length(randomblob(300000000)) AS n"}),
        (
            "execute",
            {"sql": "CREATE TABLE big AS SELECT printf('%.*c', 900000, 'x') || printf('%.*c', 900000, 'y') AS v"},
        ),
    ]
    status, results, peak = agent(calls)
    assert status == 0, results
    for r in results[:3]:
        assert r["error"] and r["data"]["error"]["kind"] == "too_large", r
    assert_still_answering(results)
    assert peak < PEAK_BOUND, f"peak RSS {peak / 1024**2:.0f} MB"


def test_attach_a_host_file_or_another_database_is_refused(tmp_path):
    other = tmp_path / "other.db"
    calls = [
        ("query", {"sql": "ATTACH DATABASE '/etc/passwd' AS p"}),
        ("execute", {"sql": f"ATTACH DATABASE '{other}' AS o"}),
        ("query", {"sql": f"SELECT * FROM pragma_table_list WHERE schema = 'o' AND '{other}' <> ''"}),
    ]
    status, results, _ = agent(calls)
    assert status == 0, results
    assert results[0]["error"]
    assert results[0]["text"] == "SQL error (not_allowed): ATTACH is not allowed through this tool"
    assert results[1]["error"] and results[1]["data"]["error"]["kind"] == "not_allowed"
    assert not other.exists()
    assert_still_answering(results)


def test_vacuum_into_a_host_path_writes_nothing(tmp_path):
    target = tmp_path / "stolen.db"
    calls = [
        ("query", {"sql": f"VACUUM INTO '{target}'"}),
        ("execute", {"sql": f"VACUUM INTO '{target}'"}),
        ("execute", {"sql": f"SELECT 1; /* */ VACUUM main INTO '{target}'"}),
    ]
    status, results, _ = agent(calls)
    assert status == 0, results
    for r in results[:3]:
        assert r["error"] and r["data"]["error"]["kind"] == "not_allowed", r
    assert not target.exists()
    assert_still_answering(results)


def test_writable_schema_cannot_be_switched_on_to_rewrite_the_schema():
    calls = [
        (
            "execute",
            {
                "sql": "PRAGMA writable_schema = ON; "
                "UPDATE sqlite_master SET sql = 'CREATE TABLE departments (id)' "
                "WHERE name = 'departments'"
            },
        ),
        ("query", {"sql": "SELECT * FROM pragma_writable_schema"}),
        ("execute", {"sql": "PRAGMA writable_schema"}),
    ]
    status, results, _ = agent(calls)
    assert status == 0, results
    assert results[0]["error"] and results[0]["data"]["error"] == {
        "kind": "not_allowed",
        "statement": 1,
        "message": "setting PRAGMA writable_schema is not allowed through this tool",
    }
    for r in results[1:3]:
        assert r["error"] and r["data"]["error"]["kind"] == "not_allowed"
    assert_still_answering(results)


def test_table_swapped_for_a_filtering_view_cannot_forge_a_maintenance_reward():
    # m04 asks to fix the negative quantities; hiding them behind a view would pass the check
    swap = (
        "ALTER TABLE order_items RENAME TO order_items_raw; "
        "CREATE VIEW order_items AS SELECT * FROM order_items_raw WHERE quantity > 0"
    )
    status, results, _ = agent([("execute", {"sql": swap})], task_id="m04-negative-quantities")
    assert status == 0, results
    swapped = results[0]
    assert not swapped["error"], swapped  # a legal change; what matters is the grade
    assert swapped["reward"] == 0.0 and swapped["done"]
    assert swapped["info"]["destructive"] == ["order_items (no longer a table)"]


def test_runaway_recursive_cte_times_out_while_health_and_other_episodes_answer():
    runaway = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) AS n FROM c"
    with running_server("sql") as url, httpx.Client(base_url=url, timeout=60) as http:
        slow_ep, slow_ep_key = create_episode(http)
        other_ep, other_ep_key = create_episode(http)
        slow: dict = {}

        def run_slow() -> None:
            action = {"type": "call_tool", "name": "query", "arguments": {"sql": runaway}}
            slow["obs"] = http.post(
                f"/episodes/{slow_ep}/step", headers={EPISODE_KEY_HEADER: slow_ep_key}, json={"action": action}
            ).json()["observation"]
            slow["end"] = time.monotonic()

        thread = threading.Thread(target=run_slow)
        start = time.monotonic()
        thread.start()
        time.sleep(0.5)
        latencies = []
        for _ in range(5):
            t0 = time.monotonic()
            assert http.get("/health", timeout=2).status_code == 200
            latencies.append(time.monotonic() - t0)
            action = {
                "type": "call_tool",
                "name": "query",
                "arguments": {"sql": "SELECT COUNT(*) AS n FROM departments"},
            }
            obs = http.post(
                f"/episodes/{other_ep}/step",
                headers={EPISODE_KEY_HEADER: other_ep_key},
                json={"action": action},
                timeout=5,
            ).json()["observation"]
            assert obs["result"]["structuredContent"]["rows"] == [[6]]
            time.sleep(0.3)
        thread.join(60)
        assert "end" in slow, "the runaway query never returned"
        assert max(latencies) < 1.0, latencies
        assert slow["end"] - start < 30
        result = slow["obs"]["result"]
        assert result["isError"] and result["structuredContent"]["error"]["kind"] == "timeout"
        assert result["content"][0]["text"] == (
            "SQL error (timeout): statement cancelled: it ran longer than the time limit"
        )
        assert http.get("/health").status_code == 200


def test_fts3_tokenizer_payload_through_a_served_episode_leaves_the_server_alive():
    payload = "SELECT fts3_tokenizer('evil', x'4141414141414141'); CREATE VIRTUAL TABLE ft USING fts3(a, tokenize=evil)"
    with running_server("sql") as url, httpx.Client(base_url=url, timeout=30) as http:
        victim, victim_key = create_episode(http)
        attacker, attacker_key = create_episode(http)
        action = {"type": "call_tool", "name": "execute", "arguments": {"sql": payload}}
        try:
            obs = http.post(
                f"/episodes/{attacker}/step", headers={EPISODE_KEY_HEADER: attacker_key}, json={"action": action}
            ).json()["observation"]
        except httpx.TransportError as e:
            raise AssertionError(f"the server died under the payload: {e!r}") from None
        assert obs["result"]["isError"] and obs["result"]["structuredContent"]["error"]["kind"] == "not_allowed"
        probe = {"type": "call_tool", "name": "query", "arguments": {"sql": "SELECT COUNT(*) AS n FROM departments"}}
        obs = http.post(
            f"/episodes/{victim}/step", headers={EPISODE_KEY_HEADER: victim_key}, json={"action": probe}
        ).json()["observation"]
        assert obs["result"]["structuredContent"]["rows"] == [[6]]
        assert http.get("/health").status_code == 200


def test_partial_unique_index_that_covers_no_rows_cannot_forge_a_maintenance_reward():
    # m07 asks for a unique constraint on employees.email; "WHERE 0" would enforce nothing
    status, results, _ = agent(
        [
            ("execute", {"sql": "CREATE UNIQUE INDEX ux_email ON employees(email) WHERE 0"}),
            ("describe_table", {"table": "employees"}),
        ],
        task_id="m07-unique-employee-email",
    )
    assert status == 0, results
    assert not results[0]["error"] and results[0]["reward"] == 0.0 and not results[0]["done"]
    assert {"name": "ux_email", "columns": ["email"], "unique": True, "partial": True} in results[1]["data"]["indexes"]
    assert "  PARTIAL UNIQUE INDEX ux_email (email)" in results[1]["text"]
    assert_still_answering(results)


def test_expression_index_neither_breaks_describe_table_nor_the_reward():
    status, results, _ = agent(
        [
            ("execute", {"sql": "CREATE UNIQUE INDEX ux_email ON employees(lower(email))"}),
            ("describe_table", {"table": "employees"}),
        ],
        task_id="m07-unique-employee-email",
    )
    assert status == 0, results
    assert not results[0]["error"] and results[0]["reward"] == 0.0 and not results[0]["done"]
    assert not results[1]["error"], results[1]
    assert {"name": "ux_email", "columns": ["(expression)"], "unique": True, "partial": False} in results[1]["data"][
        "indexes"
    ]


def test_table_snapshot_in_place_of_the_asked_view_cannot_forge_a_maintenance_reward():
    # m11 asks for a view; a table filled with today's numbers reads the same but never updates
    snapshot = (
        "CREATE TABLE customer_order_totals AS SELECT o.customer_id AS customer_id, "
        "COUNT(DISTINCT o.id) AS order_count, SUM(oi.quantity * oi.unit_price) AS total_spent "
        "FROM orders o JOIN order_items oi ON oi.order_id = o.id WHERE o.status = 'delivered' "
        "GROUP BY o.customer_id"
    )
    status, results, _ = agent([("execute", {"sql": snapshot})], task_id="m11-customer-totals-view")
    assert status == 0, results
    assert not results[0]["error"] and results[0]["reward"] == 0.0 and not results[0]["done"]
    assert results[0]["info"]["checks_passed"] == 1 and results[0]["info"]["checks"] == 2
