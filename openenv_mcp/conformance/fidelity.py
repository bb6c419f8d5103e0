"""Wrapper fidelity: a tool server's raw answers vs the same requests through an environment.

:func:`fidelity_diff` starts the environment's tool server on its own over stdio (the
official SDK's stdio client), serves the environment (the official SDK's streamable-HTTP
client on ``/mcp``) and drives an episode with ``step()``; it sends each face the same
requests and compares the answers field by field. Every field that legitimately differs
is listed, with the reason, in :data:`LEGITIMATE_DIFFERENCES` (the one place), and the
comparison normalizes exactly those; anything else that differs is a :class:`Difference`.

Used by ``tests/conformance/test_fidelity.py`` (the kitchen-sink fixture) and by the conformance
corpus (each third-party server). ``openenv_mcp.testing.fidelity_diff`` is this function.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp.types import PromptReference

from openenv_mcp.core.environment import Environment
from openenv_mcp.definitions.spec import EnvSpec, ToolServerSpec
from openenv_mcp.definitions.surface import compose_instructions, name_tools
from openenv_mcp.errors import ConfigError
from openenv_mcp.isolation.host.workspace import copy_seed

__all__ = ["LEGITIMATE_DIFFERENCES", "Difference", "FidelityReport", "fidelity_diff"]

LEGITIMATE_DIFFERENCES: dict[str, str] = {
    "initialize.serverInfo": "the MCP face is the environment: its name and version, not the wrapped server's",
    "initialize.instructions": "composed with the environment's description and, with several servers, each "
    "server's name (openenv_mcp.definitions.surface.compose_instructions): compared with that composition",
    "initialize.instructions.names": "a namespaced server's tool names in backticks in its instructions (`list`) "
    "are the names the face offers (`fs_list`; openenv_mcp.definitions.surface.name_tools)",
    "initialize.capabilities.logging": "not passed through: the face does not forward a server's log messages "
    "(and logging is deprecated as of MCP 2026-07-28)",
    "initialize.capabilities.resources": "always declared (a simulation episode offers its task resource); "
    "subscribe and listChanged are not passed through",
    "initialize.capabilities.prompts": "always declared (a simulation episode offers its task prompt); "
    "listChanged is not passed through",
    "initialize.capabilities.experimental": "not passed through (nor tasks, extensions)",
    "in-process.meta": "an in-process FastMCP server's own bookkeeping (_meta.fastmcp: tags, version) is not its "
    "wire and is not shown by the faces; run standalone, FastMCP adds it to every listed item",
    "tools/list.name": "a namespaced server's tools are named '<namespace>_<name>'",
    "resources/list.task": "a simulation episode adds its task resource (openenv://episode/task)",
    "prompts/list.task": "a simulation episode adds its task prompt ('task')",
    "tools/call.unknown-or-invalid": "an unknown tool or arguments that fail the input schema are answered by the "
    "environment (an error result with its own message) before the server sees them",
    "tools/call.task-required": "a tool with execution.taskSupport 'required' is listed but its call is an error "
    "result naming the reason (openenv-mcp does not run MCP tasks)",
    "tools/call.truncated": "output over the server's output_bytes limit is cut with a visible marker",
    "step.resources-prompts": "step() has tool actions only: resources, prompts and completions are compared "
    "on the MCP face",
    "several.servers": "with several tool servers the faces list every server's entries: lists are compared on "
    "this server's (tools and prompts by namespace, resources by URI), instructions on its '## <name>' section",
    "errors.data": "a server error's data is passed through only when its JSON is at most 1 KiB",
}
"""Every field where an environment's faces legitimately differ from the raw server, and why."""


@dataclass
class Difference:
    """One field that differs between the raw server and a face."""

    request: str
    """The request, e.g. ``tools/call echo`` or ``resources/read kitchen://item/x``."""
    face: str
    """``mcp`` (served ``/mcp``) or ``step`` (``step()``)."""
    path: str
    """The field, e.g. ``result.structuredContent.text`` or ``error.message``."""
    raw: Any
    got: Any

    def __str__(self) -> str:
        return f"{self.request} [{self.face}] {self.path}: raw {self.raw!r} != {self.got!r}"


@dataclass
class FidelityReport:
    """What :func:`fidelity_diff` compared, and every difference it found."""

    env: str
    server: str
    requests: list[str] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)
    normalized: set[str] = field(default_factory=set)
    """Keys of :data:`LEGITIMATE_DIFFERENCES` that were applied."""

    @property
    def ok(self) -> bool:
        return not self.differences

    def text(self) -> str:
        lines = [f"fidelity of {self.env} (server {self.server!r}): {len(self.requests)} requests compared"]
        lines += [f"  DIFF {d}" for d in self.differences]
        lines += [f"  normalized {k}: {LEGITIMATE_DIFFERENCES[k]}" for k in sorted(self.normalized)]
        return "\n".join(lines)


Call = tuple[str, dict[str, Any]]


def _wire(obj: Any) -> Any:
    return obj.model_dump(mode="json", by_alias=True, exclude_none=True)


async def _answer(make: Callable[[], Any]) -> dict[str, Any]:
    """``{"result": wire}``, ``{"error": {"code", "message"[, "data"]}}``, or ``{"refused": why}``
    when the official client rejects the answer itself."""
    try:
        return {"result": _wire(await make())}
    except MCPError as e:
        error = {"code": e.code, "message": e.message}
        if e.error.data is not None:
            error["data"] = e.error.data
        return {"error": error}
    except Exception as e:  # the official client refused the answer (e.g. it breaks the tool's outputSchema)
        return {"refused": f"{type(e).__name__}: {e}"}


def _diff(a: Any, b: Any, path: str, out: list[tuple[str, Any, Any]]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            _diff(a.get(key), b.get(key), f"{path}.{key}" if path else str(key), out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, f"{path}[{i}]", out)
    elif a != b:
        out.append((path, a, b))


def _pick_server(spec: EnvSpec, name: str | None) -> ToolServerSpec:
    servers = spec.tool_servers
    if name is not None:
        for server in servers:
            if server.name == name:
                return server
        raise ConfigError(f"{spec.name} has no tool server {name!r} (it has {[s.name for s in servers]})")
    if len(servers) != 1:
        raise ConfigError(f"{spec.name} has {len(servers)} tool servers: name the one to compare (server=...)")
    return servers[0]


def _drop_library_meta(items: list[dict[str, Any]]) -> bool:
    """Remove FastMCP's ``_meta.fastmcp`` from listed ``items`` (in place); whether any had it."""
    found = False
    for item in items:
        meta = item.get("_meta")
        if isinstance(meta, dict) and "fastmcp" in meta:
            found = True
            rest = {k: v for k, v in meta.items() if k != "fastmcp"}
            if rest:
                item["_meta"] = rest
            else:
                del item["_meta"]
    return found


def _stdio_params(spec: EnvSpec, server: ToolServerSpec, workspace: Path) -> Any:
    from mcp.client.stdio import StdioServerParameters

    values = {"workspace": str(workspace), "env_dir": str(spec.base_dir)}
    if server.command:
        argv = [_expand(a, values) for a in server.command]
        program = sys.executable if argv[0] in ("python", "python3") else argv[0]
        env = {k: _expand(v, values) for k, v in server.env.items()}  # placeholders expand in env too
        return StdioServerParameters(command=program, args=argv[1:], env=env, cwd=str(workspace))
    if isinstance(server.object, str):  # a FastMCP object: run it over stdio in its own interpreter
        code = (
            "import sys; from openenv_mcp.definitions.spec import load_object; "
            "load_object(sys.argv[1], __import__('pathlib').Path(sys.argv[2])).run('stdio')"
        )
        return StdioServerParameters(
            command=sys.executable, args=["-c", code, server.object, str(spec.base_dir)], cwd=str(workspace)
        )
    raise ConfigError(f"fidelity compares a stdio server: {server.name!r} is neither a command nor a 'module:attr'")


def _expand(arg: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        arg = arg.replace("{" + key + "}", value)
    return arg


async def fidelity_diff(
    target: str | Path | EnvSpec | Environment,
    *,
    calls: Sequence[Call] = (),
    resources: Sequence[str] = (),
    prompts: Sequence[Call] = (),
    completions: Sequence[tuple[Any, dict[str, str]]] = (),
    server: str | None = None,
    normalize: Callable[[Any], Any] | None = None,
) -> FidelityReport:
    """Compare one tool server's raw answers with the environment's ``/mcp`` and ``step()``.

    Args:
        target: a ``make()``-able name, an env file or folder, a spec or a loaded environment.
        calls: ``(tool, arguments)`` called in order on each face (each face has its own fresh
            server, so stateful servers line up); the names are the server's own.
        resources: URIs read besides every listed resource (e.g. template URIs, missing ones).
        prompts: ``(name, arguments)`` rendered (an unknown prompt is always tried too).
        completions: ``(ref, argument)`` for ``completion/complete``.
        server: which tool server (needed when the environment has several).
        normalize: applied to every answer before comparing (e.g. to mask workspace paths).

    Returns a :class:`FidelityReport`: ``report.ok``, ``report.differences``, ``report.text()``.
    """
    from openenv_mcp.client.registry import load_environment

    environment = target if isinstance(target, Environment) else load_environment(target)
    spec = environment.spec
    tool_server = _pick_server(spec, server)
    report = FidelityReport(env=spec.name, server=tool_server.name)
    tmp = Path(tempfile.mkdtemp(prefix="openenv-fidelity-"))
    try:
        if tool_server.workspace:
            copy_seed(spec.path(tool_server.workspace), tmp)
        async with AsyncExitStack() as stack:
            faces = await _open_faces(stack, environment, tool_server, tmp, report, normalize or (lambda v: v))
            await faces.initialize()
            await faces.list_tools()
            await faces.call_tools(calls)
            report.normalized.add("step.resources-prompts")
            listed = await faces.list_resources()
            await faces.list_resource_templates()
            await faces.read_resources([*listed[:20], *resources])
            await faces.prompts(prompts)
            await faces.completions(completions)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return report


async def _open_faces(
    stack: AsyncExitStack,
    environment: Environment,
    tool_server: ToolServerSpec,
    workspace: Path,
    report: FidelityReport,
    norm: Callable[[Any], Any],
) -> _Faces:
    """The raw server over stdio in ``workspace``, the served environment's ``/mcp`` and a reset
    ``step()`` episode, all closed with ``stack``."""
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client

    from openenv_mcp.asgi import serving
    from openenv_mcp.client.env import AsyncEnv
    from openenv_mcp.serve.app import create_app

    read, write = await stack.enter_async_context(stdio_client(_stdio_params(environment.spec, tool_server, workspace)))
    raw = await stack.enter_async_context(ClientSession(read, write))
    raw_init = await raw.initialize()
    url = await stack.enter_async_context(serving(create_app(environment)))
    read, write, *_ = await stack.enter_async_context(streamable_http_client(f"{url}/mcp"))
    mcp = await stack.enter_async_context(ClientSession(read, write))
    mcp_init = await mcp.initialize()
    step_env = AsyncEnv(environment)
    stack.push_async_callback(step_env.close)
    await step_env.reset()
    return _Faces(raw, mcp, step_env, raw_init, mcp_init, environment, tool_server, report, norm)


@dataclass
class _Faces:
    """The raw server and the environment's two faces, sent the same requests; each method compares
    one kind of request and records what differs (and which legitimate differences it normalized)."""

    raw: ClientSession
    mcp: ClientSession
    step: Any
    raw_init: Any
    mcp_init: Any
    environment: Environment
    tool_server: ToolServerSpec
    report: FidelityReport
    norm: Callable[[Any], Any]

    @property
    def prefix(self) -> str:
        return self.tool_server.prefix or ""

    @property
    def several(self) -> bool:
        return len(self.environment.spec.tool_servers) > 1

    @property
    def sim(self) -> bool:
        return self.environment.mode == "sim"

    def face_name(self, name: str) -> str:
        return f"{self.prefix}_{name}" if self.prefix else name

    def record(self, request: str, face: str, a: Any, b: Any) -> None:
        found: list[tuple[str, Any, Any]] = []
        _diff(self.norm(a), self.norm(b), "", found)
        self.report.differences.extend(Difference(request, face, p, x, y) for p, x, y in found)

    def library_meta(self, items: list[dict[str, Any]]) -> None:
        if self.tool_server.object is not None and _drop_library_meta(items):
            self.report.normalized.add("in-process.meta")

    async def initialize(self) -> None:
        """Instructions (as the face composes them) and capabilities (as the face honours them)."""
        report, raw_init = self.report, self.raw_init
        report.requests.append("initialize")
        report.normalized.add("initialize.serverInfo")
        face_instructions = self.mcp_init.instructions
        own_names = [t.name for t in (await self.raw.list_tools()).tools]
        raw_instructions = name_tools(raw_init.instructions, self.prefix, own_names)
        if raw_instructions != raw_init.instructions:
            report.normalized.add("initialize.instructions.names")
        if self.several:
            report.normalized.add("several.servers")
            expected = f"## {self.tool_server.name}\n{raw_instructions}" if raw_instructions else None
            if expected and face_instructions and f"\n\n{expected}" in f"\n\n{face_instructions}":
                face_instructions = expected  # this server's section is there, whole
        else:
            expected = compose_instructions(
                self.environment.spec.description, [(self.tool_server.name, raw_instructions)]
            )
        if expected != raw_init.instructions:
            report.normalized.add("initialize.instructions")
        self.record("initialize", "mcp", {"instructions": expected}, {"instructions": face_instructions})
        self.record(
            "initialize", "mcp", _honoured(raw_init.capabilities, report), _face_caps(self.mcp_init.capabilities)
        )

    async def list_tools(self) -> None:
        """``tools/list`` on both faces: the server's tools under their namespaced names."""
        from openenv_mcp.types import ListTools

        self.report.requests.append("tools/list")
        raw_tools = [_wire(t) for t in (await self.raw.list_tools()).tools]
        self.library_meta(raw_tools)
        if self.prefix:
            self.report.normalized.add("tools/list.name")
            for t in raw_tools:
                t["name"] = f"{self.prefix}_{t['name']}"
        mine = {t["name"] for t in raw_tools}
        mcp_tools = [_wire(t) for t in (await self.mcp.list_tools()).tools]
        step_tools = [_wire(t) for t in (await self.step.step(ListTools())).tools or []]
        if self.several:
            mcp_tools = [t for t in mcp_tools if t["name"] in mine]
            step_tools = [t for t in step_tools if t["name"] in mine]
        self.record("tools/list", "mcp", raw_tools, mcp_tools)
        self.record("tools/list", "step", raw_tools, step_tools)

    async def call_tools(self, calls: Sequence[Call]) -> None:
        """Each call on the raw server, the MCP face and ``step()``, in order."""
        from openenv_mcp.types import CallTool

        for name, arguments in calls:
            request = f"tools/call {name}"
            self.report.requests.append(request)
            want = await _answer(lambda n=name, a=arguments: self.raw.call_tool(n, a))
            face_name = self.face_name(name)
            got_mcp = await _answer(lambda n=face_name, a=arguments: self.mcp.call_tool(n, a))
            obs = await self.step.step(CallTool(name=face_name, arguments=arguments))
            got_step = {"result": _wire(obs.result)} if obs.result is not None else {}
            self.record(request, "mcp", want, got_mcp)
            self.record(request, "step", want, got_step)

    async def list_resources(self) -> list[str]:
        """``resources/list`` (a simulation's task resource set aside); the URIs the raw server listed."""
        self.report.requests.append("resources/list")
        raw_res = await _answer(self.raw.list_resources)
        self.library_meta(raw_res.get("result", {}).get("resources", []))
        got_res = await _answer(self.mcp.list_resources)
        if "result" in got_res and self.sim:
            self.report.normalized.add("resources/list.task")
            got_res["result"]["resources"] = [
                r for r in got_res["result"]["resources"] if r["uri"] != "openenv://episode/task"
            ]
        if "error" in raw_res and self.raw_init.capabilities.resources is None:
            raw_res, got_res = _none_listed(got_res, "resources")
        if self.several:
            _only_mine(raw_res, got_res, "resources", "uri")
        self.record("resources/list", "mcp", raw_res, got_res)
        return [r["uri"] for r in raw_res.get("result", {}).get("resources", [])]

    async def list_resource_templates(self) -> None:
        self.report.requests.append("resources/templates/list")
        raw_tpl = await _answer(self.raw.list_resource_templates)
        self.library_meta(raw_tpl.get("result", {}).get("resourceTemplates", []))
        got_tpl = await _answer(self.mcp.list_resource_templates)
        if "error" in raw_tpl:
            raw_tpl, got_tpl = _none_listed(got_tpl, "resourceTemplates")
        if self.several:
            _only_mine(raw_tpl, got_tpl, "resourceTemplates", "uriTemplate")
        self.record("resources/templates/list", "mcp", raw_tpl, got_tpl)

    async def read_resources(self, uris: Sequence[str]) -> None:
        for uri in uris:
            request = f"resources/read {uri}"
            self.report.requests.append(request)
            self.record(
                request,
                "mcp",
                await _answer(lambda u=uri: self.raw.read_resource(u)),
                await _answer(lambda u=uri: self.mcp.read_resource(u)),
            )

    async def prompts(self, prompts: Sequence[Call]) -> None:
        """``prompts/list`` (a simulation's task prompt set aside), then ``prompts/get`` of each of
        ``prompts`` and, when the server has prompts and no namespace, of an unknown one."""
        raw_pr, got_pr = await self._listed_prompts()
        if self.several:
            _only_mine(raw_pr, got_pr, "prompts", "name")
        self.record("prompts/list", "mcp", raw_pr, got_pr)
        if self.raw_init.capabilities.prompts is not None and not self.prefix:
            prompts = [*prompts, ("openenv-fidelity-no-such-prompt", {})]
        for name, arguments in prompts:
            request = f"prompts/get {name}"
            self.report.requests.append(request)
            face_name = self.face_name(name)
            self.record(
                request,
                "mcp",
                await _answer(lambda n=name, a=arguments: self.raw.get_prompt(n, a)),
                await _answer(lambda n=face_name, a=arguments: self.mcp.get_prompt(n, a)),
            )

    async def _listed_prompts(self) -> tuple[dict[str, Any], dict[str, Any]]:
        self.report.requests.append("prompts/list")
        raw_pr = await _answer(self.raw.list_prompts)
        self.library_meta(raw_pr.get("result", {}).get("prompts", []))
        got_pr = await _answer(self.mcp.list_prompts)
        if "result" in got_pr and self.sim:
            self.report.normalized.add("prompts/list.task")
            got_pr["result"]["prompts"] = [p for p in got_pr["result"]["prompts"] if p["name"] != "task"]
        if "error" in raw_pr and self.raw_init.capabilities.prompts is None:
            raw_pr, got_pr = _none_listed(got_pr, "prompts")
        if self.prefix and "result" in raw_pr:
            for p in raw_pr["result"]["prompts"]:
                p["name"] = f"{self.prefix}_{p['name']}"
        return raw_pr, got_pr

    async def completions(self, completions: Sequence[tuple[Any, dict[str, str]]]) -> None:
        """``completion/complete`` for each ``(ref, argument)`` (a prompt reference namespaced on the face)."""
        for ref, argument in completions:
            label = ref.name if isinstance(ref, PromptReference) else ref.uri
            request = f"completion/complete {label}"
            self.report.requests.append(request)
            face_ref = ref
            if self.prefix and isinstance(ref, PromptReference):
                face_ref = ref.model_copy(update={"name": f"{self.prefix}_{ref.name}"})
            self.record(
                request,
                "mcp",
                await _answer(lambda r=ref, a=argument: self.raw.complete(r, a)),
                await _answer(lambda r=face_ref, a=argument: self.mcp.complete(r, a)),
            )


def _none_listed(got: dict[str, Any], key: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A server without the capability lists nothing: compare the face's ``key`` items with none
    (the face's own result fields, e.g. ``ttlMs``, are the face's, not the server's)."""
    if "result" in got:
        got = {"result": {key: got["result"].get(key, [])}}
    return {"result": {key: []}}, got


def _only_mine(raw: dict[str, Any], got: dict[str, Any], key: str, ident: str) -> None:
    """Keep in ``got`` the first entry of each identity the raw server listed (several servers)."""
    if "result" not in raw or "result" not in got:
        return
    wanted = {item[ident] for item in raw["result"].get(key, [])}
    seen: set[str] = set()
    kept = []
    for item in got["result"].get(key, []):
        if item[ident] in wanted and item[ident] not in seen:
            seen.add(item[ident])
            kept.append(item)
    got["result"][key] = kept


def _honoured(caps: Any, report: FidelityReport) -> dict[str, Any]:
    """The raw server's capabilities as the face should declare them (see LEGITIMATE_DIFFERENCES)."""
    wire = _wire(caps)
    out: dict[str, Any] = {"tools": {"listChanged": bool(wire.get("tools", {}).get("listChanged"))}}
    if "completions" in wire:
        out["completions"] = {}
    for key in ("logging", "experimental", "tasks", "extensions"):
        if key in wire:
            report.normalized.add(f"initialize.capabilities.{'logging' if key == 'logging' else 'experimental'}")
    for key in ("resources", "prompts"):
        if wire.get(key) != _FACE_FIXED[key]:
            report.normalized.add(f"initialize.capabilities.{key}")
    return out


_FACE_FIXED = {"resources": {"subscribe": False, "listChanged": False}, "prompts": {"listChanged": False}}


def _face_caps(caps: Any) -> dict[str, Any]:
    wire = _wire(caps)
    out: dict[str, Any] = {"tools": {"listChanged": bool(wire.get("tools", {}).get("listChanged"))}}
    if "completions" in wire:
        out["completions"] = {}
    for key in ("logging", "experimental", "tasks", "extensions"):  # the face must not claim these
        if key in wire:
            out[key] = wire[key]
    for key, fixed in _FACE_FIXED.items():
        if wire.get(key) != fixed:
            out[key] = wire.get(key)
    return out
