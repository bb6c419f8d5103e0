"""Planted bugs of behaviour (unseeded randomness, a clock, hash order, a daemon that escapes): caught by
the rule that names the cause, with a message naming the channel and the value; each fixed twin passes. The table: conformance/corpus/planted/expected.toml."""

import pytest

from support.planted import check_planted


@pytest.mark.parametrize("name", ["random_unseeded", "clock", "hash_order", "daemon_escape"])
@pytest.mark.timeout(400)  # two conformance runs (bug and twin) on a shared machine
def test_planted_bug_is_caught_by_its_rule_and_the_twin_passes(name: str) -> None:
    check_planted(name)
