"""The ``submit_answer`` tool of the ``sql`` environment (its second, in-process tool server).

Query tasks are scored on the answer the agent submits here. Only the FIRST
submission of an episode counts (a second one is refused), and the tool never
says whether the answer is right: it is not an oracle.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from pydantic import Field

Answer = str | int | float | None | list[Any]

ANNOTATIONS = {
    "title": "Submit the answer",
    "readOnlyHint": False,
    "destructiveHint": False,  # it records the answer, changes nothing else
    "idempotentHint": False,  # a second submission is refused
    "openWorldHint": False,
}
"""The tool's MCP annotations (every hint explicit: a harness running unattended trusts only those)."""


def create_server(ctx: Any) -> FastMCP:
    """A fresh ``submit_answer`` server for one episode."""
    server = FastMCP("answer", instructions="Submit the final answer of a question task (once).")
    state = {"submitted": False}
    # the fork hook (docs/fork.md): a fork's server starts with the original's submission state
    server.openenv_snapshot = lambda: dict(state)  # type: ignore[attr-defined]
    server.openenv_restore = state.update  # type: ignore[attr-defined]

    @server.tool(title=ANNOTATIONS["title"], annotations=ANNOTATIONS)
    async def submit_answer(
        answer: Annotated[
            Answer,
            Field(
                description=(
                    "The answer: a single value (number or text), a list of values (one column or one row), "
                    "or a list of rows (each a list of values)."
                )
            ),
        ],
    ) -> str:
        """Submit the final answer to the question. Only the first submission counts."""
        if state["submitted"]:
            raise ToolError("An answer was already submitted in this episode; only the first one counts.")
        state["submitted"] = True
        return "Answer recorded."

    return server
