"""The tour (``make demo``): serve an environment, show where to plug in, play one episode over MCP.

It starts the same server as ``openenv-mcp serve`` (MCP face, control plane,
playground), prints the MCP URL, the stdio command and an ``mcpServers``
snippet, then plays one reference episode the way a trainer with an external
agent would: the episode is created on the control plane, its tools are driven
by the official MCP client over streamable HTTP, and the reward is read back on
the control plane. Then it keeps serving until Ctrl-C (``--once`` stops).
"""

from __future__ import annotations

import json
import shutil
import socket
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
from rich.console import Console
from rich.panel import Panel

from openenv_mcp.cli.mcp_config import render
from openenv_mcp.client.registry import load_environment
from openenv_mcp.serve.app import create_app
from openenv_mcp.serve.playground import PUBLIC_PATHS, playground_routes

__all__ = ["tour"]

console = Console()


def _free_port(host: str, preferred: int) -> int:
    for port in (preferred, 0):
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise OSError(f"no free port on {host}")


def _text(result: Any) -> str:
    text = " ".join(getattr(c, "text", f"<{c.type}>") for c in result.content).replace("\n", "⏎")
    return text if len(text) <= 100 else text[:99] + "…"


def cli_command() -> str:
    """How to type ``openenv-mcp`` here: the bare name when PATH finds this one, else its path
    (``.venv/bin/openenv-mcp`` after ``make demo``), so a copied next step works as printed."""
    script = Path(sys.executable).parent / "openenv-mcp"
    found = shutil.which("openenv-mcp")
    if found and Path(found).resolve() == script.resolve():
        return "openenv-mcp"
    try:
        return str(script.absolute().relative_to(Path.cwd()))
    except ValueError:
        return str(script)


async def _episode(base: str, target: str, seed: int) -> None:
    from mcp.client.client import Client

    environment = load_environment(target)
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        created = (await http.post("/episodes", json={"seed": seed})).raise_for_status().json()
        episode_id = created["episode_id"]
        http.headers["OpenEnv-Episode-Key"] = created["episode_key"]  # the trainer's capability for this episode
        task = created["observation"]["task"]
        console.rule(f"one episode · task {task['id']} · seed {seed}")
        console.print(f"[bold]task:[/bold] {task['prompt']}")
        console.print(
            f"[dim]trainer: POST /episodes -> episode {episode_id[:12]}…; "
            f"agent: MCP client on {created['mcp_url']}[/dim]"
        )
        from openenv_mcp.types import Task

        actions = environment.trajectory(Task.model_validate(task), "reference")  # full task looked up by id
        async with Client(created["mcp_url"]) as client:
            for action in actions:
                result = await client.call_tool(action.name, action.arguments)
                flag = "[red]error[/red] " if result.is_error else ""
                args = ", ".join(f"{k}={json.dumps(v)[:40]}" for k, v in action.arguments.items())
                console.print(f"[cyan]{action.name}[/cyan]({args})\n  -> {flag}{_text(result)}")
        state = (await http.get(f"/episodes/{episode_id}/state")).raise_for_status().json()["state"]
        console.print(
            f"[bold]trainer reads state:[/bold] steps {state['step_count']}, "
            f"reward [green]{state['cumulative_reward']:.2f}[/green], done {state['done']}"
        )
        await http.delete(f"/episodes/{episode_id}")


async def tour(
    target: str = "files", *, host: str = "127.0.0.1", port: int = 8000, seed: int = 0, once: bool = False
) -> None:
    """Serve ``target``, print how to connect, play one reference episode over MCP."""
    import uvicorn

    environment = load_environment(target)
    app = create_app(
        environment,
        mode="sim",
        host=host,
        extra_routes=playground_routes(environment, "sim", None),
        public_paths=("/health", *PUBLIC_PATHS),
    )
    port = _free_port(host, port)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False))
    base = f"http://{host}:{port}"
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(30):
            while not server.started:
                await anyio.sleep(0.02)
        snippet = render("claude", f"openenv-{environment.name}", {"url": f"{base}/mcp"})
        console.print(
            Panel.fit(
                f"[bold]openenv-mcp[/bold] serving [cyan]{environment.name}[/cyan]: {environment.spec.description}\n\n"
                f"MCP (streamable HTTP)  [bold]{base}/mcp[/bold]\n"
                f"playground (browser)   {base}/\n"
                f"control plane          {base}/ws  ·  {base}/episodes\n"
                f"health / metrics       {base}/health  ·  {base}/metrics\n"
                f"MCP over stdio         {cli_command()} stdio {environment.name}\n\n"
                f"mcpServers entry (Claude Code, Claude Desktop; other clients: {cli_command()} mcp-config {environment.name} --url {base}/mcp --client vscode|cursor|codex|opencode|gemini):\n{snippet}",
                title="the tour",
            )
        )
        await _episode(base, target, seed)
        cli = cli_command()
        console.print(
            f"\n[bold]next:[/bold] {cli} list · {cli} run files --episodes 5 · "
            f"{cli} conformance files · {cli} mcp-config files (an IDE's mcpServers entry) · "
            'python: openenv_mcp.make("files") (see README)'
        )
        if once:
            server.should_exit = True
        else:
            console.print(f"[dim]serving {base} until Ctrl-C[/dim]")
