"""The openenv-mcp contract: actions, observations, state and tasks.

This one module is the wire contract shared by every face of an environment
(the Python API, the control plane, the remote client). Every field is
documented here; the JSON form of each model is what travels on the wire.

* An **action** is what a trainer (or an agent, through MCP) does in one step:
  :class:`ListTools`, :class:`CallTool` or :class:`RunCode`.
* An **observation** is what comes back: the MCP tool list or the MCP
  ``CallToolResult`` of the step, plus task, reward and episode-end flags.
  ``Observation.model_dump(mode="json", by_alias=True)`` uses the MCP wire
  names (``inputSchema``, ``structuredContent``, ``isError``).
* **State** is the trainer's view of the episode: id, step count, task, seed
  and cumulative reward.
* The **episode API** is :class:`AsyncEpisodeAPI` (and its sync twin
  :class:`EpisodeAPI`): ``reset``/``step``/``state``/``close``, what every
  episode a trainer holds offers, local (``make("files")``), remote
  (``make("http://...")``) or from a Ray pool (``make("ray://...")``).
  :class:`MakeOptions` lists the options ``make()`` takes; :data:`Mode`
  the two modes.

Rewards. An environment's reward function returns the *score* of the episode
as it stands (a float, usually in ``[0, 1]``). The reward of a step is the
change of that score, so the cumulative reward of an episode always equals its
current score, whatever path the agent took. ``info["score"]`` carries the
score itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol, TypedDict, runtime_checkable

from mcp.types import CallToolResult, TextContent, Tool
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

__all__ = [
    "Action",
    "AsyncEpisodeAPI",
    "CallTool",
    "EpisodeAPI",
    "ForkStrategy",
    "ListTools",
    "MakeOptions",
    "Mode",
    "Observation",
    "RunCode",
    "Score",
    "State",
    "Task",
    "action_from_json",
    "canonical_json",
    "error_result",
]


class _Model(BaseModel):
    # use_attribute_docstrings: each field's docstring below is its JSON-schema description (``/schema``,
    # ``/openapi.json``), so what a field means is written once, here.
    model_config = ConfigDict(populate_by_name=True, extra="forbid", use_attribute_docstrings=True)


class ListTools(_Model):
    """Ask for the environment's tool list (MCP ``tools/list``).

    Listing tools does not advance the step counter and earns no reward: MCP
    clients list tools whenever they like, and the two faces must agree.
    """

    type: Literal["list_tools"] = "list_tools"
    """Discriminator on the wire."""


class CallTool(_Model):
    """Call one tool (MCP ``tools/call``). One call is one step."""

    type: Literal["call_tool"] = "call_tool"
    """Discriminator on the wire."""
    name: str
    """The tool's name as listed by the environment (namespace included)."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The tool's arguments; validated against the tool's ``inputSchema``."""


class RunCode(_Model):
    """Run Python code in the episode's sandboxed interpreter (CodeAct; see ``docs/codeact.md``).

    Inside, every tool is a function (``from tools import fs_read``); each call
    goes through the same dispatch as :class:`CallTool` and counts as one step
    (a run that calls no tool counts as one step). The observation's ``result``
    has ``structuredContent`` = ``{stdout, stderr, value, exception, traceback,
    calls}`` and its ``reward`` is the sum of the inner calls' rewards.
    """

    type: Literal["run_code"] = "run_code"
    """Discriminator on the wire."""
    code: str = Field(max_length=1_000_000)
    """Python source; the value of a final expression is reported."""


Action = Annotated[ListTools | CallTool | RunCode, Field(discriminator="type")]
"""Any action: :class:`ListTools`, :class:`CallTool` or :class:`RunCode`."""

_ACTION = TypeAdapter(Action)


def action_from_json(data: dict[str, Any] | str | bytes) -> ListTools | CallTool | RunCode:
    """Parse an action from its JSON form (a dict or a JSON text)."""
    if isinstance(data, (str, bytes)):
        return _ACTION.validate_json(data)
    return _ACTION.validate_python(data)


class Task(_Model):
    """One task an episode can be about.

    Tasks come from a list or a JSONL file (one object per line).
    """

    id: str
    """Stable identifier, unique within the environment."""
    prompt: str
    """What the agent is asked to do, in plain words."""
    data: dict[str, Any] = Field(default_factory=dict)
    """Anything the reward function or reference solution needs. Keys marked
    private (:attr:`private`, the env file's ``private_task_fields``) are
    grader-only; the rest is shown with the task."""
    workspace: str | None = None
    """Optional folder (relative to the environment's folder) copied into the
    episode's workspace on reset, after the tool servers' own seed folders."""
    answer: Any = None
    """Grader-only: the expected answer. Rewards read it; it is never sent on
    any face (observations, control plane, MCP, playground, rollout files)."""
    private: list[str] = Field(default_factory=list, exclude=True)
    """Grader-only keys of :attr:`data` for this task (added to the env file's
    ``private_task_fields``); stripped like :attr:`answer`."""

    def public(self, private: Iterable[str] = ()) -> Task:
        """The task as every face shows it: without :attr:`answer` and without the
        ``data`` keys marked private (here, in :attr:`private`, or by the env file)."""
        hidden = {*private, *self.private}
        if self.answer is None and not self.private and not hidden & self.data.keys():
            return self
        data = {k: v for k, v in self.data.items() if k not in hidden}
        return Task.model_construct(
            id=self.id, prompt=self.prompt, data=data, workspace=self.workspace, answer=None, private=[]
        )


class Score(_Model):
    """What a reward function may return instead of a bare float."""

    score: float
    """The episode's score as it stands now."""
    done: bool | None = None
    """Force the episode's end (``True``) or keep it open (``False``) whatever
    the score; ``None`` ends it when ``score >= success_score``."""
    info: dict[str, Any] = Field(default_factory=dict)
    """Extra diagnostics, merged into ``Observation.info``."""


class Observation(_Model):
    """What the environment answers to ``reset()`` and ``step()``."""

    tools: list[Tool] | None = None
    """The MCP tool list (wire form), given on reset and for :class:`ListTools`."""
    result: CallToolResult | None = None
    """The MCP ``CallToolResult`` of a :class:`CallTool` step, exactly as an
    MCP client receives it. Errors the agent causes (unknown tool, bad
    arguments, a tool that raises or times out) are results with
    ``isError: true``, never exceptions."""
    task: Task | None = None
    """The episode's task; the agent should be shown ``task.prompt``."""
    reward: float = 0.0
    """Reward of this step: the change of the episode's score (see module doc).
    Always ``0.0`` in production mode."""
    done: bool = False
    """The task is finished (solved, or ended by the reward function)."""
    truncated: bool = False
    """The episode hit ``max_steps`` before the task was done."""
    info: dict[str, Any] = Field(default_factory=dict)
    """Diagnostics: ``score``, ``step``, ``episode_id``, ``elapsed_ms``..."""

    def to_json(self) -> dict[str, Any]:
        """The wire form (MCP names, ``None`` fields of MCP objects dropped)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class State(_Model):
    """The trainer's view of one episode (``state()``)."""

    episode_id: str
    """Identifier of the episode (also its address on the control plane)."""
    step_count: int = 0
    """Tool calls made so far (``ListTools`` does not count)."""
    task_id: str | None = None
    """The task chosen at reset."""
    seed: int | None = None
    """The seed given to (or drawn by) reset; the same seed picks the same task."""
    cumulative_reward: float = 0.0
    """Sum of step rewards so far; equals the current score."""
    done: bool = False
    """The episode has ended because the task is finished."""
    truncated: bool = False
    """The episode has ended because ``max_steps`` was reached."""
    max_steps: int | None = None
    """The step budget of the episode, if any."""
    reward_errors: int = 0
    """Steps whose reward function raised (each one's ``info["reward_error"]`` says why)."""


Mode = Literal["sim", "prod"]
"""How an environment runs. ``"sim"`` (simulation, for training and evaluation): a task per episode, rewards,
the control plane. ``"prod"`` (production, deployment): the same tools with no task, no reward and no control
plane, optionally on the user's own folder (``workspace``)."""

ForkStrategy = Literal["snapshot", "replay"]
"""How ``fork()`` copies a world (docs/fork.md): copy the state, or re-run the recorded calls in a fresh episode."""


class MakeOptions(TypedDict, total=False):
    """The keyword options of ``openenv_mcp.make()`` / ``make_async()`` (all optional).

    Local environments take every option but ``token``; a served one (``http(s)://``, ``ws(s)://``) takes
    ``max_steps``, ``call_timeout`` and ``token``; a Ray pool (``ray://``) ``max_steps`` and
    ``call_timeout`` (its pool options ride in the URL's query).
    """

    mode: Mode
    """``"sim"`` (default) or ``"prod"``, see :data:`Mode`."""
    call_timeout: float | None
    """Time limit of one tool call, seconds (default: the env file's)."""
    max_steps: int | None
    """Step budget of an episode (default: the env file's; ``0``: none)."""
    workdir: str | Path | None
    """Folder under which episodes' workspaces are made (default: ``OPENENV_MCP_WORKDIR`` or the temp folder)."""
    warm_pool: int | None
    """Episodes kept started ahead of ``reset()`` (default: the env file's)."""
    tasks: Any
    """The task source: a named set of the env file (``"eval"``), a path, a list of tasks or a dataset."""
    split: str | None
    """A dataset split, when ``tasks`` is a dataset."""
    workspace: str | Path | None
    """Production only: the user's folder the tools work on (instead of a fresh workspace per episode)."""
    read_only: bool
    """Production only: mount ``workspace`` read-only."""
    token: str | None
    """A served environment's ``--token``."""


MAKE_OPTIONS = frozenset(MakeOptions.__annotations__)
"""The names :class:`MakeOptions` documents (what ``make()`` checks its keywords against)."""


@runtime_checkable
class AsyncEpisodeAPI(Protocol):
    """What every episode a trainer holds offers (async): local, remote and Ray-pool episodes all satisfy it.

    One episode at a time: ``reset()`` ends the current one and starts the next.
    """

    @property
    def name(self) -> str:
        """The environment's name."""
        ...

    async def reset(self, seed: int | None = None, task_id: str | None = None) -> Observation:
        """Start an episode: the task (``task_id``, or one drawn by ``seed``) and the tool list."""
        ...

    async def step(self, action: ListTools | CallTool | RunCode | dict[str, Any]) -> Observation:
        """Do one action (an action model or its JSON form) and return what came back, with its reward."""
        ...

    async def state(self) -> State:
        """The trainer's view of the episode."""
        ...

    async def close(self) -> None:
        """End the episode and release everything it holds (idempotent)."""
        ...


@runtime_checkable
class EpisodeAPI(Protocol):
    """The sync twin of :class:`AsyncEpisodeAPI` (``openenv_mcp.make()`` returns one)."""

    @property
    def name(self) -> str:
        """The environment's name."""
        ...

    def reset(self, seed: int | None = None, task_id: str | None = None) -> Observation:
        """Start an episode: the task (``task_id``, or one drawn by ``seed``) and the tool list."""
        ...

    def step(self, action: ListTools | CallTool | RunCode | dict[str, Any]) -> Observation:
        """Do one action (an action model or its JSON form) and return what came back, with its reward."""
        ...

    def state(self) -> State:
        """The trainer's view of the episode."""
        ...

    def close(self) -> None:
        """End the episode and release everything it holds (idempotent)."""
        ...


def error_result(message: str) -> CallToolResult:
    """An MCP error result carrying ``message`` (what the agent sees of a step that failed)."""
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def canonical_json(value: Any) -> str:
    """Canonical JSON text of a model or JSON value: sorted keys, no spaces.

    MCP objects are dumped in wire form. Protocol stamps a transport adds to
    ``_meta`` (keys under ``io.modelcontextprotocol/``) are not part of a tool's
    result and are dropped, so a result read off the wire and the same result
    from ``step()`` compare equal. This is the one place that rule lives.
    """
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return json.dumps(_strip_stamps(value), sort_keys=True, separators=(",", ":"))


def _strip_stamps(value: Any) -> Any:
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key == "_meta" and isinstance(item, dict):
                item = {k: v for k, v in item.items() if not k.startswith("io.modelcontextprotocol/")}
                if not item:
                    continue
            out[key] = _strip_stamps(item)
        return out
    if isinstance(value, list):
        return [_strip_stamps(v) for v in value]
    return value
