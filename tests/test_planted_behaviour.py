"""Planted bugs of behaviour (nondeterminism, daemons, tool lists, output schemas, control-plane names):
caught by the rule named in conformance/corpus/planted/expected.toml; each fixed twin passes."""

import pytest
from corpus import check_planted


@pytest.mark.parametrize(
    "name",
    ["random_unseeded", "clock", "hash_order", "daemon_escape", "tools_change", "output_schema", "control_plane"],
)
@pytest.mark.timeout(600)  # two conformance runs (bug and twin)
def test_planted_bug_is_caught_by_its_rule_and_the_twin_passes(name: str) -> None:
    check_planted(name)


def test_planted_tools_change_announced_by_the_fixed_twin_reaches_the_episode() -> None:
    """The fixed twin of tools_change declares tools.listChanged and notifies after its first call: the
    episode's composed tool list must then offer the new tool (c-wrapper's list_changed refresh), while the
    silent variant's new tool stays unknown."""
    from corpus import PLANTED

    import openenv_mcp

    seen = {}
    for variant in ("", "fixed"):
        with openenv_mcp.make(str(PLANTED / "tools_change" / variant)) as env:
            env.reset(seed=0)
            env.step({"type": "call_tool", "name": "hello", "arguments": {}})
            obs = env.step({"type": "call_tool", "name": "bonus", "arguments": {}})
            assert obs.result is not None
            seen[variant or "bug"] = (obs.result.is_error, obs.result.content[0].text)
    assert seen["fixed"] == (False, "bonus!"), seen
    assert seen["bug"][0] is True, seen
