"""CodeAct inside an episode: the ``run_code`` tool, and how a run becomes an MCP result.

The rules (see ``docs/codeact.md``):

* every tool call made from code goes through :meth:`Episode._step`, the very
  function a :class:`~openenv_mcp.types.CallTool` step runs: validation,
  routing, boundary, time limit, history, reward, ``max_steps``. Each inner
  call is one step; a run that calls no tool counts as one step (so code alone
  cannot run forever within a step budget);
* once the episode is done or truncated, further calls from the same run fail
  with :data:`ENDED` (a ``ToolError`` inside the code);
* the observation of a run carries ``reward`` = the sum of its inner calls'
  rewards (= the score change over the run) and a ``CallToolResult`` whose
  ``structuredContent`` is ``{stdout, stderr, value, exception, traceback,
  calls}``; ``isError`` is set when the code raised.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp.types import CallToolResult, TextContent, Tool

from openenv_mcp.types import CallTool, error_result

if TYPE_CHECKING:
    from openenv_mcp.definitions.spec import EnvSpec
    from openenv_mcp.isolation.codeact.interpreter import CodeInterpreter

__all__ = [
    "ENDED",
    "MAX_RECORDED_CALLS",
    "RUN_CODE",
    "RUN_CODE_TOOL",
    "code_result",
    "grader_files",
    "reply_for",
    "result_text",
    "run_code",
]

RUN_CODE = "run_code"
"""The MCP tool name of CodeAct (reserved when an environment sets ``codeact = true``)."""

ENDED = "This episode has ended; no further tool calls are accepted."

MAX_RECORDED_CALLS = 1000
"""Inner calls listed in one run's observation; past it only ``calls_omitted`` counts them."""

RUN_CODE_TOOL = Tool(  # pyright: ignore[reportCallIssue]  # built by its wire alias inputSchema
    name=RUN_CODE,
    description=(
        "Run Python code in this episode's persistent sandboxed interpreter. Every other tool is a "
        "Python function there (`from tools import <name>`; `help(tools)` lists them): a call returns "
        "the tool's structured result (or its text) and raises tools.ToolError on a tool error. "
        "Variables persist between runs. The value of a final expression is reported, with stdout, "
        "stderr and any exception."
    ),
    inputSchema={  # pyright: ignore[reportCallIssue]  # the SDK model accepts its wire alias
        "type": "object",
        "properties": {"code": {"type": "string", "description": "Python source"}},
        "required": ["code"],
        "additionalProperties": False,
    },
)


def result_text(result: CallToolResult) -> str:
    """The text parts of a result, joined by newlines."""
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def reply_for(result: CallToolResult) -> dict[str, Any]:
    """What the interpreter's ``tools`` function receives for one result."""
    return {
        "is_error": bool(result.is_error),
        "text": result_text(result),
        "structured": None if result.is_error else result.structured_content,
    }


def code_result(outcome: dict[str, Any], calls: list[dict[str, Any]], made: int | None = None) -> CallToolResult:
    """The MCP result of one run: readable text, and everything in ``structuredContent``."""
    parts = []
    for key in ("stdout", "stderr"):
        if outcome.get(key):
            parts.append(f"[{key}]\n{outcome[key].rstrip()}")
    if outcome.get("value") is not None:
        parts.append(f"[value]\n{outcome['value']}")
    if outcome.get("exception"):
        parts.append(f"[exception]\n{(outcome.get('traceback') or outcome['exception']).rstrip()}")
    made = len(calls) if made is None else made
    parts.append(f"[{made} tool call{'s' if made != 1 else ''}]")
    structured = {**outcome, "calls": calls}
    if made > len(calls):
        structured["calls_omitted"] = made - len(calls)
    return CallToolResult(
        content=[TextContent(type="text", text="\n".join(parts))],
        structured_content=structured,
        is_error=bool(outcome.get("exception")),
    )


Step = Callable[[CallTool], Awaitable[tuple[CallToolResult, float, dict[str, Any]]]]
"""The episode's one tool-call step: ``(result, reward, info)``."""


async def run_code(
    interpreter: CodeInterpreter, code: str, step: Step, ended: Callable[[], bool]
) -> tuple[CallToolResult, float, dict[str, Any], int]:
    """One :class:`~openenv_mcp.types.RunCode` in ``interpreter`` (the episode's step lock held): each
    tool call from the code is one ``step``, and fails with :data:`ENDED` once ``ended()``. Returns the
    run's result, its reward (the sum of its calls'), the calls' ``info`` and how many calls it made."""
    calls: list[dict[str, Any]] = []
    reward, extra, made = 0.0, {}, 0

    def record(
        name: str, arguments: dict[str, Any], result: CallToolResult, step_reward: float, started: float
    ) -> dict[str, Any]:
        nonlocal made
        made += 1
        if len(calls) < MAX_RECORDED_CALLS:  # a loop of calls must not grow the observation without bound
            calls.append(
                {
                    "name": name,
                    "arguments": arguments,
                    "result": result.model_dump(mode="json", by_alias=True, exclude_none=True),
                    "reward": step_reward,
                    "elapsed_ms": round((time.perf_counter() - started) * 1000, 3),
                }
            )
        return reply_for(result)

    async def dispatch(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        nonlocal reward
        started = time.perf_counter()
        if ended():
            return record(name, arguments, error_result(ENDED), 0.0, started)
        result, step_reward, step_extra = await step(CallTool.model_construct(name=name, arguments=arguments))
        reward += step_reward
        extra.update(step_extra)
        return record(name, arguments, result, step_reward, started)

    outcome = await interpreter.run(code, dispatch)
    return code_result(outcome, calls, made), reward, extra, made


def grader_files(spec: EnvSpec) -> list[Path]:
    """The env's files a grader reads (tasks, solutions, reward module): masked from code when the
    whole env folder cannot be (see :mod:`openenv_mcp.isolation.codeact.interpreter`)."""
    out = []
    if isinstance(spec.tasks, str):
        out.append(spec.path(spec.tasks))
    for ref in (spec.solutions, spec.reward if isinstance(spec.reward, str) else None):
        if ref:
            module = ref.split(":", 1)[0]
            if module.endswith((".json", ".py")):
                out.append(spec.path(module))
            else:
                out += [spec.path(module.replace(".", "/") + ".py"), spec.path(module.replace(".", "/"))]
    return out
