"""Corpus: the third-party network 'fetch' server behind sandbox gives the verdicts written in
conformance/corpus/expected.toml.
(One file per server and boundary: test files are what the xdist runner spreads over workers.)"""

import pytest
from corpus import check_corpus


@pytest.mark.timeout(900)  # a conformance run of a third-party server (slow under load)
def test_corpus_fetch_sandbox_verdicts_match_the_expected_table() -> None:
    check_corpus("fetch", "sandbox")
