"""Corpus: the third-party clock-dependent 'time' server behind process gives the verdicts written in
conformance/corpus/expected.toml, the same on a second run of the rules that could vary.
(One file per server and boundary: test files are what the xdist runner spreads over workers.)"""

import pytest
from corpus import check_corpus


@pytest.mark.timeout(900)  # two conformance runs of a third-party server (slow under load)
def test_corpus_time_process_verdicts_match_the_expected_table_twice() -> None:
    check_corpus("time", "process")
