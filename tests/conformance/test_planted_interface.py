"""Planted bugs of the interface (a tool list that changes silently, output that violates its outputSchema,
a control-plane name as a tool, a leak only reachable with arguments matching the input schema's pattern):
caught by the rule that names the cause; each fixed twin passes. And what the wrapper must pass on faithfully
for those rules to see it. The table: conformance/corpus/planted/expected.toml."""

import anyio
import pytest
from mcp.client.client import Client

import openenv_mcp
from openenv_mcp.client.registry import load_environment
from openenv_mcp.serve.mcp_server import episode_server
from openenv_mcp.types import CallTool

from support.planted import PLANTED, check_planted


@pytest.mark.parametrize("name", ["tools_change", "output_schema", "control_plane", "pattern_leak"])
@pytest.mark.timeout(400)  # two conformance runs (bug and twin) on a shared machine
def test_planted_interface_bug_is_caught_by_its_rule_and_the_twin_passes(name: str) -> None:
    check_planted(name)


def test_planted_tools_change_announced_by_the_fixed_twin_reaches_the_episode() -> None:
    """The fixed twin declares tools.listChanged and notifies after its first call: the episode's tool
    list then offers the new tool, while the silent variant's new tool stays unknown."""
    seen = {}
    for variant in ("", "fixed"):
        with openenv_mcp.make(str(PLANTED / "tools_change" / variant)) as env:
            env.reset(seed=0)
            env.step(CallTool(name="hello", arguments={}))
            obs = env.step(CallTool(name="bonus", arguments={}))
            assert obs.result is not None
            seen[variant or "bug"] = (obs.result.is_error, obs.result.content[0].text)
    assert seen["fixed"] == (False, "bonus!"), seen
    assert seen["bug"][0] is True, seen


def test_a_wrapped_servers_structured_content_reaches_step_as_sent_even_when_it_violates_its_output_schema():
    """The wrapper's own SDK client validated structuredContent against the outputSchema and turned the
    server's answer into an error result ("Invalid structured content returned by tool ..."), so no face
    showed what the server sent and call.content passed on an error."""
    with openenv_mcp.make(str(PLANTED / "output_schema")) as env:
        env.reset(seed=0)
        obs = env.step(CallTool(name="count_words", arguments={"text": "one two three"}))
    assert obs.result is not None
    assert obs.result.is_error is False, obs.result.content
    assert obs.result.structured_content == {"count": "3"}
    assert obs.result.content[0].text == "3"


def test_a_prompt_a_server_adds_after_the_episode_started_is_listed_and_served() -> None:
    """The episode composed its prompt routes once at start and filtered every later prompts/list by
    them, so a prompt the server added afterwards was never listed nor served (and a leak through
    prompts was invisible to episodes already running)."""

    async def main() -> tuple[list[str], str]:
        env = load_environment(PLANTED / "prompt_leak" / "fixed")
        episode = await env.new_episode(seed=0)
        try:
            obs = await episode.act(CallTool(name="save_note", arguments={"key": "k1", "text": "remember me"}))
            assert obs.result is not None and obs.result.is_error is False
            async with Client(episode_server(episode)) as client:
                names = [p.name for p in (await client.list_prompts()).prompts]
                got = await client.get_prompt("recall-k1")
            return names, got.messages[0].content.text  # type: ignore[union-attr]
        finally:
            await episode.close()

    names, text = anyio.run(main)
    assert "recall-k1" in names, names
    assert text == "remember me"
