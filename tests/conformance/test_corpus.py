"""The third-party conformance corpus (conformance/corpus/, installed by ``make corpus``).

* Verdicts: each server behind its ``ci`` boundary (every boundary with ``OPENENV_MCP_FULL_CORPUS=1``, as
  ``make test-corpus`` sets) gives the verdicts written in conformance/corpus/expected.toml; behind ``process``
  a second run of the rules whose verdict could vary gives the same verdicts.
* Fidelity: each server answers the same raw over stdio, through ``/mcp`` and through ``step()``
  (``openenv_mcp.testing.fidelity_diff`` on its ``process`` env file), field by field. The only values
  normalized besides what fidelity_diff itself names are the workspace folders: the raw server works in a
  temporary folder of the test, each face's episode in its own workspace.

Every test here is slow (a conformance run of a third-party server), so xdist spreads them one per worker
(tests/conftest.py, ``SPREAD``), not one file per worker as elsewhere.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from mcp.types import PromptReference

from openenv_mcp.testing import fidelity_diff

from support.corpus import BOUNDARIES, CORPUS, check_corpus, corpus_pairs, expected, need_corpus

SERVERS = sorted(server for server, entry in expected().items() if "kind" in entry)
"""The corpus servers: every table of expected.toml with a ``kind`` (the others hold shared entries)."""


@pytest.mark.parametrize(("server", "boundary"), corpus_pairs())
@pytest.mark.timeout(900)  # one or two conformance runs of a third-party server (slow under load)
def test_corpus_verdicts_match_the_expected_table(server: str, boundary: str) -> None:
    check_corpus(server, boundary)


def test_the_ci_subset_checks_every_server_and_every_boundary_twice() -> None:
    """The subset ``make test`` runs: each server once, each boundary behind two servers (expected.toml's ``ci``)."""
    table = expected()
    chosen = {server: table[server]["ci"] for server in SERVERS}
    assert set(chosen.values()) == set(BOUNDARIES), chosen
    assert all(list(chosen.values()).count(b) == 2 for b in BOUNDARIES), chosen


_WORKSPACE = re.compile(r"/tmp/openenv-(?:fidelity|mcp)-[A-Za-z0-9._-]+")


def _mask_workspace(value: Any) -> Any:
    return json.loads(_WORKSPACE.sub("<workspace>", json.dumps(value)))


CASES: dict[str, dict[str, Any]] = {
    "filesystem": {
        "calls": [
            ("write_file", {"path": "draft.txt", "content": "first\nsecond\n"}),
            ("read_text_file", {"path": "draft.txt"}),
            ("edit_file", {"path": "draft.txt", "edits": [{"oldText": "second", "newText": "2nd"}]}),
            ("list_directory", {"path": "."}),
            ("directory_tree", {"path": "notes"}),
            ("read_text_file", {"path": "missing.txt"}),
            ("list_allowed_directories", {}),
        ]
    },
    "memory": {
        "calls": [
            ("create_entities", {"entities": [{"name": "ann", "entityType": "person", "observations": ["tea"]}]}),
            ("add_observations", {"observations": [{"entityName": "ann", "contents": ["cake"]}]}),
            ("search_nodes", {"query": "tea"}),
            ("read_graph", {}),
            ("open_nodes", {"names": ["nobody"]}),
        ]
    },
    "everything": {
        "calls": [("echo", {"message": "hi"}), ("get-sum", {"a": 2, "b": 3})],
        "prompts": [("simple-prompt", {}), ("args-prompt", {"city": "Paris"}), ("args-prompt", {})],
        "completions": [(PromptReference(type="ref/prompt", name="args-prompt"), {"name": "city", "value": "Pa"})],
    },
    "time": {
        "calls": [
            ("convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
            ("get_current_time", {"timezone": "Nowhere/Atlantis"}),
        ]
    },
    "fetch": {"calls": [("fetch", {"url": "http://127.0.0.1:9/"}), ("fetch", {"url": "not a url"})]},
    "sqlite": {
        "calls": [
            ("create_table", {"query": "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"}),
            ("write_query", {"query": "INSERT INTO notes (body) VALUES ('one'), ('two')"}),
            ("read_query", {"query": "SELECT id, body FROM notes ORDER BY id"}),
            ("list_tables", {}),
            ("describe_table", {"table_name": "notes"}),
            ("read_query", {"query": "SELECT nothing FROM nowhere"}),
        ]
    },
}


@pytest.mark.parametrize("server", sorted(CASES))
@pytest.mark.timeout(300)
@pytest.mark.anyio
async def test_corpus_server_answers_the_same_raw_through_mcp_and_through_step(server: str) -> None:
    need_corpus(server, "process")
    case = CASES[server]
    report = await fidelity_diff(
        CORPUS / server / "process",
        calls=case["calls"],
        prompts=case.get("prompts", ()),
        completions=case.get("completions", ()),
        normalize=_mask_workspace,
    )
    assert report.ok, report.text()
    assert {f"tools/call {name}" for name, _ in case["calls"]} <= set(report.requests)
