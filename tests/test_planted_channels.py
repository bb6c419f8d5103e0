"""Planted bugs that leak state between episodes, each through one channel (conformance/corpus/planted/):
caught by the rule named in planted/expected.toml, with a message naming the channel; each fixed twin passes."""

import pytest
from corpus import check_planted


@pytest.mark.parametrize("name", ["file_leak", "resource_leak", "prompt_leak", "reward_leak", "pattern_leak"])
@pytest.mark.timeout(600)  # two conformance runs (bug and twin)
def test_planted_state_leak_is_caught_on_its_channel_and_the_twin_passes(name: str) -> None:
    check_planted(name)
