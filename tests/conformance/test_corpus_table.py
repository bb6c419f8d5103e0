"""docs/conformance.md shows the corpus table exactly as conformance/corpus/expected.toml (which the corpus
tests assert) has it: no stale row."""

from support.corpus import BOUNDARIES, ROOT, corpus_table, expected


def test_the_docs_corpus_table_is_the_expected_table() -> None:
    docs = (ROOT / "docs" / "conformance.md").read_text()
    assert corpus_table() in docs, 're-render the table: python -c \'import sys; sys.path.insert(0, "tests"); '
    "from support.corpus import corpus_table; print(corpus_table())'"


def test_every_corpus_server_has_a_verdict_and_reason_per_boundary() -> None:
    servers = {name: entry for name, entry in expected().items() if "kind" in entry}
    assert len(servers) >= 6
    for name, entry in servers.items():
        for boundary in BOUNDARIES:
            row = entry[boundary]
            assert row["verdict"] and row["reason"], f"{name} behind {boundary}"
            for rule, value in row.get("rules", {}).items():
                assert value["status"] in ("passed", "failed", "inconclusive", "skipped"), (name, boundary, rule)
                assert value["reason"], (name, boundary, rule)
