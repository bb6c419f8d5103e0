"""Planted bugs that leak state between episodes, each through one channel (conformance/corpus/planted/):
caught by env.episode_isolation (and env.reset_restores) with a message naming the channel and the
leaked value; each fixed twin passes. The table: conformance/corpus/planted/expected.toml."""

import pytest

from support.planted import check_planted


@pytest.mark.parametrize("name", ["file_leak", "resource_leak", "prompt_leak", "reward_leak"])
@pytest.mark.timeout(400)  # two conformance runs (bug and twin) on a shared machine
def test_planted_state_leak_is_caught_on_its_channel_and_the_twin_passes(name: str) -> None:
    check_planted(name)
