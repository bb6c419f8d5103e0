"""Grader-only task fields never reach a face (``env.answer_hidden``).

A task's ``answer`` and the ``data`` keys marked private (``[tasks] private``, the task's
own ``private``) are for the reward. For every task of the environment this rule opens
an episode and reads every channel a trainer, an agent or a person sees:

* observations: ``reset``, ``list_tools``, a step (an unknown tool: it changes nothing),
  ``state()``;
* the MCP face: ``tools/list``, ``prompts/list`` and ``prompts/get`` of every prompt,
  ``resources/list`` and ``resources/read`` of every resource;
* the control plane over real HTTP (``POST /episodes``, ``step``, ``state``, ``GET /episodes``);
* the playground's ``/playground/info``;
* a rollout line (:meth:`Trajectory.to_json`) of an episode whose policy answers at once.

A channel fails when a task object in it carries ``answer`` or a private key, or when
its text holds a grader-only value that is *distinctive* (at least 6 characters as
text, and not already part of the public task: a goal the prompt itself states is no
secret).
"""

from __future__ import annotations

import json
from typing import Any

from openenv_mcp.conformance.base import Context, Skipped, fail_if, rule
from openenv_mcp.types import CallTool, ListTools, Task, canonical_json

MIN_SECRET = 6
"""Shortest grader-only value (as text) looked for in free text; shorter ones (``4``, ``true``)
appear everywhere by chance and are checked only where a task object is."""

PROBE_TOOL = "openenv_answer_hidden_probe"
"""An unknown tool name: the step it makes is an error result that changes nothing."""


def _secrets(full: Task, public: Task) -> list[tuple[str, list[str]]]:
    """(label, its text forms) of every distinctive grader-only value of ``full``."""
    values: list[tuple[str, Any]] = []
    if full.answer is not None:
        values.append(("answer", full.answer))
    values += [(f"data.{k}", v) for k, v in full.data.items() if k not in public.data]
    shown = canonical_json(public) + json.dumps(public.model_dump(mode="json"), ensure_ascii=False)
    out = []
    for label, value in values:
        forms = [value] if isinstance(value, str) else [json.dumps(value, ensure_ascii=False), canonical_json(value)]
        forms = list(dict.fromkeys(forms + [json.dumps(f, ensure_ascii=False)[1:-1] for f in forms]))
        if len(forms[0]) >= MIN_SECRET and not any(f in shown for f in forms):
            out.append((label, forms))
    return out


def _task_objects(value: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every ``task`` object (a dict with ``id`` and ``prompt``) inside ``value``, with its path."""
    found = []
    if isinstance(value, dict):
        if path.endswith("task") and "id" in value and "prompt" in value:
            found.append((path, value))
        for k, v in value.items():
            found += _task_objects(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += _task_objects(v, f"{path}[{i}]")
    return found


class _Audit:
    """Collects what every channel showed for one task, and the problems found."""

    def __init__(self, full: Task, public: Task, private: frozenset[str]) -> None:
        self.full, self.private = full, private | set(full.private)
        self.secrets = _secrets(full, public)
        self.problems: list[str] = []

    def check(self, channel: str, payload: Any) -> None:
        """``payload`` (JSON-able or text) as shown on ``channel``."""
        if isinstance(payload, (bytes, str)):
            text = payload.decode(errors="replace") if isinstance(payload, bytes) else payload
            try:
                payload = json.loads(text)
            except ValueError:
                payload = None
        else:
            text = json.dumps(payload, ensure_ascii=False, default=str)
        for path, task in _task_objects(payload):
            if task.get("answer") is not None:
                self.problems.append(
                    f"task {self.full.id!r}: {channel} carries {path}.answer = {_short(canonical_json(task['answer']))}"
                )
            shown = sorted(self.private & set(task.get("data") or {}))
            if shown:
                self.problems.append(f"task {self.full.id!r}: {channel} carries grader-only {path}.data keys {shown}")
        for label, forms in self.secrets:
            if any(f in text for f in forms):
                self.problems.append(
                    f"task {self.full.id!r}: {channel} shows the grader-only {label} {_short(forms[0])}"
                )


def _short(text: str, limit: int = 80) -> str:
    text = json.dumps(text, ensure_ascii=False) if not text.startswith(("[", "{", '"')) else text
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def _local_channels(audit: _Audit, episode: Any) -> None:
    from mcp.client.client import Client

    from openenv_mcp.rollout import Turn, play_episode
    from openenv_mcp.serve.mcp_server import episode_server

    audit.check("reset observation", episode.first_observation().to_json())
    audit.check("list_tools observation", (await episode.act(ListTools())).to_json())
    async with Client(episode_server(episode)) as client:
        audit.check(
            "MCP tools/list", [t.model_dump(mode="json", by_alias=True) for t in (await client.list_tools()).tools]
        )
        for prompt in (await client.list_prompts()).prompts:
            audit.check("MCP prompts/list", prompt.model_dump(mode="json", by_alias=True))
            args = {a.name: "x" for a in prompt.arguments or []}
            try:
                got = await client.get_prompt(prompt.name, args)
            except Exception:  # a prompt that wants other arguments: its listing was checked
                continue
            audit.check(f"MCP prompts/get {prompt.name!r}", got.model_dump(mode="json", by_alias=True))
        for resource in (await client.list_resources()).resources:
            audit.check("MCP resources/list", resource.model_dump(mode="json", by_alias=True))
            got = await client.read_resource(str(resource.uri))
            audit.check(f"MCP resources/read {str(resource.uri)!r}", got.model_dump(mode="json", by_alias=True))

    class _Same:  # the episode as play_episode drives an env (no step: the policy answers at once)
        async def reset(self, seed: Any = None, task_id: Any = None) -> Any:
            return episode.first_observation()

        async def state(self) -> Any:
            return episode.state()

        async def close(self) -> None:
            pass

    traj = await play_episode(
        lambda: _Same(),
        lambda m, t: Turn(message={"role": "assistant", "content": "ok"}),
        index=0,
        env_name=episode.env.name,
        seed=episode.seed,
        task_id=episode.task.id,
        close=False,
    )
    audit.check("rollout line", traj.to_json())
    obs = await episode.act(CallTool(name=PROBE_TOOL))
    audit.check("step observation", obs.to_json())
    audit.check("state()", episode.state().model_dump(mode="json"))


async def _served_channels(audits: dict[str, _Audit], base: str) -> None:
    import httpx

    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        for task_id, audit in audits.items():
            created = await http.post("/episodes", json={"task_id": task_id, "seed": 0})
            audit.check("control plane POST /episodes", created.content)
            if created.status_code != 201:
                continue
            body = created.json()
            headers = {"OpenEnv-Episode-Key": body.get("episode_key", "")}
            path, shown = f"/episodes/{body['episode_id']}", "/episodes/{id}"
            try:
                for action in ({"type": "list_tools"}, {"type": "call_tool", "name": PROBE_TOOL, "arguments": {}}):
                    got = await http.post(f"{path}/step", json={"action": action}, headers=headers)
                    audit.check(f"control plane POST {shown}/step {action['type']}", got.content)
                audit.check(
                    f"control plane GET {shown}/state", (await http.get(f"{path}/state", headers=headers)).content
                )
                audit.check("control plane GET /episodes", (await http.get("/episodes", headers=headers)).content)
            finally:
                await http.delete(path, headers=headers)


async def _playground_info(environment: Any) -> bytes | None:
    """The body of the playground's ``/playground/info`` for ``environment`` (``None``: no playground)."""
    try:
        from openenv_mcp.serve.playground import playground_routes
    except ImportError:
        return None
    from starlette.requests import Request
    from starlette.routing import Route

    route = next(r for r in playground_routes(environment) if isinstance(r, Route) and r.path == "/playground/info")
    response = await route.endpoint(
        Request({"type": "http", "method": "GET", "path": "/playground/info", "headers": []})
    )
    return bytes(response.body)


@rule(
    "env.answer_hidden",
    "error",
    "a task's answer and private data fields reach no face: observations, "
    "control plane, MCP prompts and resources, playground, rollout lines",
    needs=("episodes", "local"),
    timeout=600,
)
async def check_answer_hidden(ctx: Context) -> None:
    environment = ctx.subject.environment
    if environment is None:
        raise Skipped("needs the environment's full tasks (loaded locally)")
    tasks = environment.tasks.tasks
    audits = {t.id: _Audit(t, t.public(environment.private_fields), environment.private_fields) for t in tasks}
    if not any(t.answer is not None or a.private & t.data.keys() for t, a in zip(tasks, audits.values(), strict=True)):
        raise Skipped("no task has an answer or a private data field")
    for task in tasks:
        handle = await ctx.subject.new_episode(seed=environment.tasks.seed_for(task.id), task_id=task.id)
        try:
            await _local_channels(audits[task.id], handle.episode)
        finally:
            await handle.close()
    page = await _playground_info(environment)
    if page is not None:
        for audit in audits.values():
            audit.check("playground /playground/info", page)
    if "http" in ctx.subject.capabilities:
        async with ctx.subject.http() as url:
            await _served_channels(audits, url[: -len("/mcp")])
    problems = [p for a in audits.values() for p in a.problems]
    fail_if(problems, limit=8)
