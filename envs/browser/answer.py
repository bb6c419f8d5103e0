"""The ``submit`` tool of the ``browser`` environment (its second, in-process tool server).

Question tasks ("find ... and answer") are scored on the answer given here. Only the FIRST submission
of an episode counts (a second one is refused), and the tool never says whether it is right.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from pydantic import Field

SUBMIT_TOOL = "submit"

ANNOTATIONS = {
    "title": "Submit the answer",
    "readOnlyHint": False,
    "destructiveHint": False,  # it records the answer, changes nothing else
    "idempotentHint": False,  # a second submission is refused
    "openWorldHint": False,
}
"""The tool's MCP annotations (every hint explicit: a harness running unattended trusts only those)."""


def create_server(ctx: Any) -> FastMCP:
    """A fresh ``submit`` server for one episode."""
    server = FastMCP("answer", instructions="Submit the final answer of a question task (once).")
    state = {"submitted": False}
    # the fork hook (docs/fork.md): a fork's server starts with the original's submission state
    server.openenv_snapshot = lambda: dict(state)  # type: ignore[attr-defined]
    server.openenv_restore = state.update  # type: ignore[attr-defined]

    @server.tool(name=SUBMIT_TOOL, title=ANNOTATIONS["title"], annotations=ANNOTATIONS)
    async def submit(
        answer: Annotated[
            str, Field(description="The answer, as text (a name, a number, a date...).", max_length=2000)
        ],
    ) -> str:
        """Submit the final answer of the task. Only the first submission counts."""
        if state["submitted"]:
            raise ToolError("An answer was already submitted in this episode; only the first one counts.")
        state["submitted"] = True
        return "Answer recorded."

    return server
