"""Helpers of the browser world's tests: what they need installed, and playing a script on an episode."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from openenv_mcp.testing import need
from openenv_mcp.types import CallTool

ENV_DIR = Path(__file__).resolve().parent.parent.parent / "envs" / "browser"


def need_browser() -> None:
    """Skip (or fail under OPENENV_MCP_REQUIRE_ALL=1) unless bubblewrap, Node, Chromium and the pinned
    Playwright MCP server are there (``make browser`` installs the last)."""
    from openenv_mcp.worlds.browser.install import missing_message

    need(shutil.which("bwrap") is not None, "bubblewrap is not installed: apt-get install bubblewrap")
    problem = missing_message(ENV_DIR)
    need(problem is None, problem or "")


def text_of(obs: Any) -> str:
    return "\n".join(getattr(c, "text", "") or "" for c in obs.result.content)


def result_of(text: str) -> str:
    """The ``### Result`` section of a Playwright MCP answer (not the code it echoes)."""
    return text.split("### Result", 1)[-1].split("\n### ", 1)[0]


async def call(episode: Any, name: str, **arguments: Any) -> Any:
    """One tool call as a step of ``episode`` (an :class:`~openenv_mcp.core.episode.Episode`)."""
    return await episode.act(CallTool(name=name, arguments=arguments))


async def play(episode: Any, script: Any) -> list[Any]:
    """Play a :class:`~openenv_mcp.core.scripts.Script` on ``episode`` until it ends; the observations."""
    observations: list[Any] = []
    obs = None
    while (action := script.next(obs)) is not None:
        obs = await episode.act(action)
        observations.append(obs)
        if obs.done or obs.truncated:
            break
    script.close()
    return observations
