"""Planted bugs of behaviour (nondeterminism, daemons, tool lists, output schemas, control-plane names):
caught by the rule named in conformance/corpus/planted/expected.toml; each fixed twin passes."""

import pytest
from corpus import check_planted


@pytest.mark.parametrize(
    "name",
    ["random_unseeded", "clock", "hash_order", "daemon_escape", "tools_change", "output_schema", "control_plane"],
)
def test_planted_bug_is_caught_by_its_rule_and_the_twin_passes(name: str) -> None:
    check_planted(name)
