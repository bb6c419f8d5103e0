"""One environment server (the served app of ``openenv-mcp serve``) inside a Ray actor, on its node.

The actor loads the environment, binds the app on the node's cluster address (an ephemeral
port) and serves it with uvicorn in a thread of the actor's worker process, so the server
lives and dies with the actor (and with its node). It requires the pool's cluster token on
every route but an episode's own MCP address, whose agent key is its credential: the same
rule as a single ``openenv-mcp serve --token``; see ``docs/scale.md``.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from typing import Any

__all__ = ["Replica"]


class Replica:
    """The actor body (the pool wraps it with ``ray.remote`` and the replica's resources)."""

    def __init__(
        self,
        target: str,
        *,
        token: str,
        admin_token: str,
        host: str | None = None,
        max_episodes: int | None = None,
        idle_timeout: float | None = 1800.0,
        start_timeout: float = 60.0,
    ) -> None:
        import ray
        import uvicorn

        from openenv_mcp.client.registry import load_environment
        from openenv_mcp.serve.app import create_app

        self.host = host or ray.util.get_node_ip_address()
        environment = load_environment(target, mode="sim")
        app = create_app(
            environment,
            mode="sim",
            token=token,
            admin_token=admin_token,
            host=self.host,
            max_episodes=max_episodes,
            idle_timeout=idle_timeout,
        )
        self.manager = app.state.manager
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            app,
            log_level="warning",
            ws_per_message_deflate=False,
            access_log=False,
            server_header=False,
            timeout_keep_alive=30,
            backlog=4096,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=lambda: asyncio.run(self.server.serve(sockets=[sock])), name="openenv-replica", daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + start_timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the environment server for {target!r} did not start on {self.host}")
            time.sleep(0.01)
        context = ray.get_runtime_context()
        self.node_id = context.get_node_id()
        self.resources = {k: float(v) for k, v in context.get_assigned_resources().items()}

    def info(self) -> dict[str, Any]:
        """Where this replica serves: its URL on the node, the node id, the process, its live episodes."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return {
            "url": f"http://{host}:{self.port}",
            "node_id": self.node_id,
            "pid": os.getpid(),
            "resources": self.resources,
            "episodes": len(self.manager),
        }

    def ping(self) -> int:
        """The number of live episodes (the pool's health check and load figure)."""
        if not self.thread.is_alive():
            raise RuntimeError("the environment server thread has stopped")
        return len(self.manager)

    def shutdown(self) -> None:
        """Stop the server (its episodes close through the app's lifespan)."""
        self.server.should_exit = True
        self.thread.join(timeout=30)
