"""The catalog of installed environments (``openenv-mcp discover``, the playground's landing page).

Each entry: name, description, tools, task count, boundaries, and the last conformance verdict, cached
by ``openenv-mcp conformance``/``publish``. One JSON file per environment under ``$OPENENV_MCP_CACHE``
(default ``$XDG_CACHE_HOME/openenv-mcp`` or ``~/.cache/openenv-mcp``), ``conformance/NAME.json``. An entry
holds a digest of the environment's files: a verdict for files that changed since is reported as stale, never as current.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from openenv_mcp.definitions.spec import EnvSpec

__all__ = ["cache_dir", "cached_status", "catalog", "describe", "env_digest", "save_report"]

_SKIP_DIRS = {"__pycache__", ".git", "dist", "build"}


def cache_dir() -> Path:
    """Where verdicts are cached (``$OPENENV_MCP_CACHE``, else the XDG cache folder)."""
    if os.environ.get("OPENENV_MCP_CACHE"):
        return Path(os.environ["OPENENV_MCP_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "openenv-mcp"


def env_digest(spec: EnvSpec, limit: int = 2000) -> str:
    """A digest of the environment's folder (names and contents of up to ``limit`` small files)."""
    h = hashlib.sha256(spec.model_dump_json().encode())
    root = Path(spec.base_dir)
    count = 0
    for path in sorted(root.rglob("*")):
        if count >= limit:
            break
        if any(part in _SKIP_DIRS for part in path.relative_to(root).parts) or not path.is_file():
            continue
        try:
            if path.stat().st_size > 1_000_000:
                continue
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
        except OSError:
            continue
        count += 1
    return h.hexdigest()


def _file(name: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return cache_dir() / "conformance" / f"{safe}.json"


def save_report(spec: EnvSpec, report: Any) -> Path:
    """Cache ``report`` as the verdict of ``spec`` (atomically; the folder is created)."""
    path = _file(spec.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {
        "env": spec.name,
        "digest": env_digest(spec),
        "ok": report.ok,
        "summary": report.summary(),
        "errors": [f"{r.rule}: {r.message}" for r in report.errors],
        "checked_at": time.time(),
    }
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(entry, indent=2) + "\n")
    tmp.replace(path)
    return path


def cached_status(spec: EnvSpec) -> dict[str, Any]:
    """``{"status": "conformant" | "not conformant" | "stale" | "unknown", ...}`` for ``spec``."""
    path = _file(spec.name)
    try:
        entry = json.loads(path.read_text())
    except (OSError, ValueError):
        return {"status": "unknown"}
    if not isinstance(entry, dict) or entry.get("digest") != env_digest(spec):
        return {"status": "stale", "checked_at": entry.get("checked_at") if isinstance(entry, dict) else None}
    return {
        "status": "conformant" if entry.get("ok") else "not conformant",
        "summary": entry.get("summary"),
        "errors": entry.get("errors", []),
        "checked_at": entry.get("checked_at"),
    }


async def describe(spec: EnvSpec, tools: bool = True, timeout: float = 30.0) -> dict[str, Any]:
    """One catalog entry. With ``tools``, an episode is started to list them (its failure is reported)."""
    import anyio

    from openenv_mcp.core.environment import Environment

    entry: dict[str, Any] = {
        "name": spec.name,
        "description": spec.description,
        "boundaries": sorted({s.isolation or "" for s in spec.tool_servers}),
        "tool_servers": [s.name for s in spec.tool_servers],
        "tasks": None,
        "tools": None,
        "conformance": cached_status(spec),
        "error": None,
    }
    try:
        environment = Environment(spec)
        entry["tasks"] = len(environment.tasks)
        if tools:
            episode = None
            try:
                with anyio.fail_after(timeout):
                    episode = await environment.new_episode(seed=0)
                    entry["tools"] = [
                        {"name": t.name, "description": " ".join((t.description or "").split())} for t in episode.tools
                    ]
            finally:
                if episode is not None:
                    with anyio.CancelScope(shield=True):
                        await episode.close()
                await environment.aclose()
    except TimeoutError:
        entry["error"] = f"its tool servers did not start within {timeout:g} s"
    except Exception as e:  # one broken environment never hides the others
        entry["error"] = f"{type(e).__name__}: {e}"
    return entry


def _matches(entry: dict[str, Any], query: str) -> bool:
    words = [entry["name"], entry["description"], *(t["name"] + " " + t["description"] for t in entry["tools"] or [])]
    text = " ".join(words).lower()
    return all(q in text for q in query.lower().split())


async def catalog(query: str | None = None, tools: bool = True, timeout: float = 30.0) -> list[dict[str, Any]]:
    """Entries for every environment found by name (see :func:`describe`), filtered by ``query``'s words."""
    from openenv_mcp.client.registry import list_envs

    entries = [await describe(spec, tools=tools, timeout=timeout) for spec in list_envs()]
    return [e for e in entries if not query or _matches(e, query)]
