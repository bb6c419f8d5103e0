"""Containment rules: a tool server behind process, sandbox or docker cannot read a host file
outside its workspace, nor reach the host loopback when its network is ``none``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread

from openenv_mcp.conformance.base import Context, Failed, Skipped, fail_if, rule


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
    from outside (:func:`~openenv_mcp.conformance.containment_probe.probe_from_outside`)."""
    import uuid

    from openenv_mcp.conformance.containment_probe import probe_from_outside
    from openenv_mcp.isolation import ServerContext, connect
    from openenv_mcp.isolation.host.workspace import Workspace

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

    from openenv_mcp.conformance.containment_probe import PROBE_SOURCE
    from openenv_mcp.definitions.spec import ToolServerSpec
    from openenv_mcp.isolation import ServerContext, connect
    from openenv_mcp.isolation.host.workspace import Workspace

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
