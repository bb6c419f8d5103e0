"""Wire and system rules: robustness over real HTTP, containment probes, clean shutdown."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
import httpx
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from ..argsgen import violations
from ..base import Context, Failed, Skipped, fail_if, rule

LATEST = HANDSHAKE_PROTOCOL_VERSIONS[-1]
OVERSIZED_BYTES = 8 * 1024 * 1024
"""Size of the oversized-arguments probe (larger than any sane request cap)."""
HTTP_TIMEOUT = 20.0
SHUTDOWN_GRACE = 5.0
"""Seconds a closed episode's processes and containers have to disappear."""
PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER = 36, 37


# -- robustness ----------------------------------------------------------------------
def _parse_body(response: httpx.Response) -> list[dict[str, Any]]:
    """JSON-RPC messages in a streamable-HTTP answer (JSON or SSE)."""
    ctype = response.headers.get("content-type", "")
    text = response.text
    messages: list[Any] = []
    if "text/event-stream" in ctype:
        for line in text.splitlines():
            if line.startswith("data:"):
                data = line[5:].strip()
                if data:
                    try:
                        messages.append(json.loads(data))
                    except json.JSONDecodeError:
                        messages.append({"unparsable": data[:80]})
    elif text.strip():
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            return [{"unparsable": text[:80]}]
        messages.extend(parsed if isinstance(parsed, list) else [parsed])
    return [m for m in messages if isinstance(m, dict)]


class _Wire:
    """A raw streamable-HTTP client: bytes in, status and JSON-RPC messages out."""

    def __init__(self, client: httpx.AsyncClient, url: str, extra: dict[str, str] | None = None) -> None:
        self.client, self.url, self.extra = client, url, extra or {}
        self.session: str | None = None
        self.next_id = 100

    def headers(self) -> dict[str, str]:
        h = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": LATEST,
            **self.extra,
        }
        if self.session:
            h["Mcp-Session-Id"] = self.session
        return h

    async def post(self, body: bytes) -> tuple[int, list[dict[str, Any]]]:
        response = await self.client.post(self.url, content=body, headers=self.headers())
        return response.status_code, _parse_body(response)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> tuple[int, list[dict[str, Any]]]:
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}}
        return await self.post(json.dumps(msg).encode())

    async def initialize(self) -> None:
        self.session = None
        params = {
            "protocolVersion": LATEST,
            "capabilities": {},
            "clientInfo": {"name": "openenv-mcp-conformance", "version": "1"},
        }
        self.next_id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": "initialize", "params": params})
        response = await self.client.post(self.url, content=body.encode(), headers=self.headers())
        if response.status_code != 200:
            raise Failed(f"POST initialize answered HTTP {response.status_code}: {response.text[:200]!r}")
        self.session = response.headers.get("mcp-session-id")
        await self.post(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())

    async def ping(self) -> str | None:
        """None when ping is answered with a result, else what happened."""
        try:
            status, messages = await self.request("ping")
        except httpx.HTTPError as e:
            return f"ping got no answer ({type(e).__name__}: {e})"
        if status != 200 or not any("result" in m or "error" in m for m in messages):
            return f"ping answered HTTP {status} {messages[:1]}"
        return None  # a result, or a JSON-RPC error: either way the server answers


def _verdict(
    status: int, messages: list[dict[str, Any]], *, want_error: bool = True, want_code: int | None = None
) -> str | None:
    """None when the answer is a clean error (4xx, a JSON-RPC error or an isError result)."""
    if status >= 500:
        return f"answered HTTP {status} (a server error, expected a 4xx or a JSON-RPC error)"
    if 400 <= status < 500:
        return None
    errors = [m["error"] for m in messages if isinstance(m.get("error"), dict)]
    results = [m["result"] for m in messages if "result" in m]
    if errors:
        code = errors[0].get("code")
        if want_code is not None and code != want_code:
            return f"answered JSON-RPC error code {code}, expected {want_code}"
        return None
    if results and isinstance(results[0], dict) and results[0].get("isError"):
        return None
    if not want_error and (results or status in (200, 202)):
        return None
    return f"answered HTTP {status} with {json.dumps(messages[:1])[:160]}, expected an error"


def _violable(tools: list[Any]) -> tuple[Any, str, dict[str, Any]] | None:
    """The first tool with a typed parameter, what is wrong, and arguments giving it a value of the
    wrong type (a tool without typed parameters may rightly accept anything)."""
    for tool in tools:
        for what, args in violations(tool):
            if what.startswith("property "):
                return tool, what, args
    return None


@rule(
    "wire.robustness",
    "error",
    "malformed JSON-RPC, wrong types, oversized arguments and unknown methods get "
    "clean errors over HTTP, and the server still answers",
    needs=("http",),
    timeout=120,
)
async def check_robustness(ctx: Context) -> None:
    tools = await ctx.tools()
    target = _violable(tools)
    first = target[0] if target else tools[0] if tools else None
    props = list(((first.input_schema or {}).get("properties") or {}).keys()) if first else []
    big_key = props[0] if props else "data"
    if target is None:
        ctx.note(
            "no tool declares a typed parameter, so no call could violate a schema: the wrong-type probe "
            "was not run (the other probes were)"
        )
    probes: list[tuple[str, bytes, dict[str, Any]]] = [
        ("a malformed JSON body", b'{"jsonrpc": "2.0", "id": 1, "method": ', {"want_code": None}),
        ("a JSON value that is not JSON-RPC", b'{"hello": "world"}', {}),
        (
            "an unknown method 'openenv/no_such_method'",
            json.dumps({"jsonrpc": "2.0", "id": 2, "method": "openenv/no_such_method", "params": {}}).encode(),
            {"want_code": -32601},
        ),
        (
            "tools/call with name=42 and arguments='oops'",
            json.dumps(
                {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": 42, "arguments": "oops"}}
            ).encode(),
            {},
        ),
    ]
    if target is not None:
        tool, what, args = target
        probes.append(
            (
                f"tools/call {tool.name!r} with {what}",
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": 4,
                        "method": "tools/call",
                        "params": {"name": tool.name, "arguments": args},
                    }
                ).encode(),
                {},
            )
        )
    if first is not None:
        probes.append(
            (
                f"tools/call {first.name!r} with an {OVERSIZED_BYTES // 2**20} MiB argument",
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": 5,
                        "method": "tools/call",
                        "params": {"name": first.name, "arguments": {big_key: "x" * OVERSIZED_BYTES}},
                    }
                ).encode(),
                {"want_error": False},
            )
        )
    problems: list[str] = []
    async with ctx.subject.http() as url, httpx.AsyncClient(timeout=HTTP_TIMEOUT) as client:
        wire = _Wire(client, url, getattr(ctx.subject, "headers", None))
        await wire.initialize()
        for what, body, expect in probes:
            try:
                status, messages = await wire.post(body)
                bad = _verdict(status, messages, **expect)
            except httpx.HTTPError as e:
                bad = f"got no answer ({type(e).__name__}: {e or 'connection closed'})"
            if bad:
                problems.append(f"POST {what}: {bad}")
            alive = await wire.ping()
            if alive is not None:
                problems.append(f"after POST {what}: {alive}: the server stopped answering")
                break
        else:
            try:
                await wire.initialize()
            except (Failed, httpx.HTTPError) as e:
                problems.append(f"a new initialize after the probes failed: {e}")
    fail_if(problems)


# -- clean shutdown -------------------------------------------------------------------
def _children() -> dict[int, int]:
    """pid -> ppid of every process (Linux /proc)."""
    out: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                out[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    return out


def _descendants(root: int) -> set[int]:
    table = _children()
    found, frontier = set(), [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in table.items():
            if ppid == parent and pid not in found:
                found.add(pid)
                frontier.append(pid)
    return found


def _uid_members(uids: set[int]) -> set[int]:
    """Live processes of the episode's uids (each episode's servers run as a uid of their own)."""
    from ...isolation.process import uid_processes

    return {pid for uid in uids for pid in uid_processes(uid)}


@contextlib.contextmanager
def _subreaper() -> Iterator[None]:
    """Make this process the child subreaper while the episode runs: a daemon that a server (even
    an in-process one) double-forks away, ``setsid`` and ``chdir /`` included, is re-parented to us
    rather than to init, so it stays a descendant. Survivors are killed and reaped by the rule."""
    libc = ctypes.CDLL(None, use_errno=True)
    was = ctypes.c_int(0)
    libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(was), 0, 0, 0)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    try:
        yield
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, was.value, 0, 0, 0)


def _kill_and_reap(pids: set[int]) -> None:
    """Stop what a failed shutdown left behind (the check itself must leak nothing)."""
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    for pid in pids:  # re-parented to us by the subreaper: ours to reap
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, 0)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _describe(pid: int) -> str:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        cmd = "?"
    return f"pid {pid} ({cmd[:200]})"


def _docker_containers(label: str) -> set[str] | None:
    try:
        import docker  # type: ignore[import-not-found]

        client = docker.from_env()
        return {c.name for c in client.containers.list(all=True, filters={"label": label}) if c.name}
    except Exception:
        return None


@rule(
    "shutdown.clean",
    "error",
    "closing an episode leaves no process or container behind",
    needs=("episodes", "local"),
    timeout=60,
)
async def check_shutdown(ctx: Context) -> None:
    from ...isolation.zygote import shared_processes

    with _subreaper():
        before = _descendants(os.getpid())
        handle = await ctx.subject.new_episode(seed=ctx.seed)
        episode_id = getattr(handle.episode, "id", "")
        # membership: every process of the episode's uids and of its servers' cgroups (process,
        # sandbox), the container label (docker), and every descendant of this process (the
        # subreaper keeps escaped daemons ours)
        connections = getattr(handle.episode, "connections", []) or []
        groups: list[Any] = []
        uids = {uid for conn in connections if isinstance(uid := getattr(conn, "uid", None), int)}
        try:
            from ..replay import actions_for, replay

            await replay(handle, (await actions_for(ctx, handle))[:4])
            uids |= {uid for conn in connections if isinstance(uid := getattr(conn, "uid", None), int)}
            groups = [g for conn in connections if (g := getattr(conn, "cgroup", None)) is not None]
        finally:
            await handle.close()
        label = f"openenv-mcp.episode={episode_id}"
        uses_docker = ctx.subject.environment is not None and any(
            s.isolation == "docker" for s in ctx.subject.environment.servers
        )
        leaked: set[int] = set()
        containers: set[str] | None = None
        with anyio.move_on_after(SHUTDOWN_GRACE):  # removal may finish just after close() returns
            while True:
                members = (_descendants(os.getpid()) - before) | _uid_members(uids)
                members |= {pid for group in groups for pid in group.members()}
                members -= shared_processes()  # fast-start zygotes: shared by the server's episodes, owned by none
                leaked = {p for p in members if p != os.getpid() and _alive(p)}
                containers = await anyio.to_thread.run_sync(_docker_containers, label) if uses_docker else None
                if not leaked and not containers:
                    break
                await anyio.sleep(0.1)
        problems = [f"{_describe(p)} still running {SHUTDOWN_GRACE:g} s after close()" for p in sorted(leaked)]
        if leaked:
            await anyio.to_thread.run_sync(_kill_and_reap, leaked)
    if containers:
        problems.append(f"containers {sorted(containers)} still exist {SHUTDOWN_GRACE:g} s after close()")
    fail_if(problems)


# -- containment ------------------------------------------------------------------------
def _walled(ctx: Context, kinds: tuple[str, ...]) -> list[Any]:
    environment = ctx.subject.environment
    if environment is None:
        raise Skipped("needs the environment's definition")
    servers = [s for s in environment.servers if s.isolation in kinds]
    if not servers:
        have = sorted({str(s.isolation) for s in environment.servers})
        raise Skipped(
            f"no tool server runs behind {', '.join(kinds)}; this environment uses {', '.join(have)} "
            "(in-process servers share the environment's process: nothing to probe)"
        )
    return servers


async def _docker_probe(ctx: Context, spec: Any, tool: str, arguments: dict[str, Any]) -> str:
    """Start the server itself (its own image, command, network, limits) and probe its container
    from outside (:func:`~openenv_mcp.conformance.probe.probe_from_outside`)."""
    import uuid

    from ...core.workspace import Workspace
    from ...isolation import ServerContext, connect
    from ..probe import probe_from_outside

    environment = ctx.subject.environment
    workspace = Workspace(environment.workdir if environment is not None else None)
    server_env = environment.server_env(spec) if environment is not None else dict(spec.env)
    conn = connect(
        spec,
        ServerContext(episode_id=f"conformance-{uuid.uuid4().hex[:12]}", workspace=workspace.path, env=server_env),
        environment.spec.base_dir if environment is not None else None,
    )
    try:
        await conn.start()
        container = getattr(conn, "container", None)
        if container is None:
            raise Failed(f"tool server {spec.name!r} (docker): no running container to probe after start")
        await anyio.to_thread.run_sync(container.reload)
        pid = int(container.attrs["State"]["Pid"])
        if not pid:
            raise Failed(f"tool server {spec.name!r} (docker): its container {container.name} is not running")
        return await anyio.to_thread.run_sync(probe_from_outside, pid, tool, arguments)
    finally:
        await conn.close()
        workspace.remove()


async def _probe_call(ctx: Context, spec: Any, tool: str, arguments: dict[str, Any]) -> str:
    """Start the probe behind ``spec``'s boundary (same isolation, network, limits, hide) and call ``tool``.
    A docker server is probed in its own container, from outside (:func:`_docker_probe`)."""
    import uuid

    if spec.isolation == "docker":
        return await _docker_probe(ctx, spec, tool, arguments)

    from ...core.spec import ToolServerSpec
    from ...core.workspace import Workspace
    from ...isolation import ServerContext, connect
    from ..probe import PROBE_SOURCE

    probe = ToolServerSpec(
        name=f"{spec.name}-probe",
        command=["python3", "-c", PROBE_SOURCE],
        isolation=spec.isolation,
        network=spec.network,
        limits=spec.limits,
        hide=list(getattr(spec, "hide", []) or []),
    )
    environment = ctx.subject.environment
    workspace = Workspace(environment.workdir if environment is not None else None)
    conn = connect(
        probe,
        ServerContext(episode_id=f"conformance-{uuid.uuid4().hex[:12]}", workspace=workspace.path),
        environment.spec.base_dir if environment is not None else None,
    )
    try:
        await conn.start()
        result = await conn.call_tool(tool, arguments, tool)
        return " ".join(getattr(c, "text", "") for c in result.content)
    finally:
        await conn.close()
        workspace.remove()


WALLED = ("process", "sandbox", "docker")
"""Boundaries the containment probes run behind (``inprocess`` shares the process; ``remote`` is elsewhere)."""


def _hint(spec: Any) -> str:
    if spec.isolation == "process":
        return (
            ' (the process boundary is no filesystem or network wall: use isolation = "sandbox" or '
            '"docker", or accept it in a known-failures file if you trust this server)'
        )
    return ""


@rule(
    "containment.host_file",
    "error",
    "a tool server behind process, sandbox or docker cannot read a host file outside its workspace",
    needs=("local",),
    timeout=120,
)
async def check_containment_file(ctx: Context) -> None:
    import secrets
    import tempfile

    servers = _walled(ctx, WALLED)
    token = secrets.token_hex(16)
    folder = Path(tempfile.mkdtemp(prefix="openenv-conformance-secret-"))
    secret = folder / "secret.txt"
    secret.write_text(token)
    secret.chmod(0o644)
    folder.chmod(0o755)
    problems = []
    try:
        for spec in servers:
            answer = await _probe_call(ctx, spec, "read_file", {"path": str(secret)})
            ctx.cache[f"probe.file.{spec.name}"] = answer
            if token in answer:
                problems.append(
                    f"tool server {spec.name!r} ({spec.isolation}): the probe read the host file "
                    f"{str(secret)!r}: {answer[:50]!r}{_hint(spec)}"
                )
    finally:
        secret.unlink(missing_ok=True)
        folder.rmdir()
    fail_if(problems)


@rule(
    "containment.network",
    "error",
    'a tool server behind process, sandbox or docker with network = "none" '
    "cannot reach a listener on the host loopback",
    needs=("local",),
    timeout=120,
)
async def check_containment_network(ctx: Context) -> None:
    import secrets

    servers = _walled(ctx, WALLED)
    servers = [s for s in servers if s.network == "none" or s.isolation == "docker"]
    if not servers:
        raise Skipped('every contained tool server declares network = "host" (egress allowed by policy)')
    token = secrets.token_hex(16)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)

    async def serve(stream: Any) -> None:
        async with stream:
            await stream.send(token.encode() + b"\n")

    problems = []
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, serve)
            try:
                for spec in servers:
                    answer = await _probe_call(ctx, spec, "connect", {"host": "127.0.0.1", "port": port})
                    ctx.cache[f"probe.network.{spec.name}"] = answer
                    if token in answer:
                        problems.append(
                            f"tool server {spec.name!r} ({spec.isolation}, network {spec.network!r}): "
                            f"the probe connected to a host loopback listener 127.0.0.1:{port}: "
                            f"{answer[:50]!r}{_hint(spec)}"
                        )
            finally:
                tg.cancel_scope.cancel()
    finally:
        await listener.aclose()
    fail_if(problems)
