"""Loopback ports: the one helper that picks a free one (tests, the conformance runner's subject
servers, the official suite's fixture server). No dependencies, so every layer may import it."""

from __future__ import annotations

import socket

__all__ = ["free_port"]


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (free now; bind it soon)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
