"""Corpus: the third-party 'memory' server behind process, sandbox and docker gives the verdicts written in
conformance/corpus/expected.toml, the same on two consecutive runs."""

import pytest
from corpus import BOUNDARIES, check_corpus


@pytest.mark.parametrize("boundary", BOUNDARIES)
@pytest.mark.timeout(900)  # two conformance runs of a third-party server (Docker starts are slow under load)
def test_corpus_memory_verdicts_match_the_expected_table_twice(boundary: str) -> None:
    check_corpus("memory", boundary)
