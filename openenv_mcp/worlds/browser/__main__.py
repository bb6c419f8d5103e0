"""``python -m openenv_mcp.worlds.browser install [ENV_DIR]`` / ``check [ENV_DIR]`` (default: the
built-in ``browser`` environment)."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console

from openenv_mcp.worlds.browser.install import PACKAGE, install, missing_message, pinned_version


def _env_dir(args: list[str]) -> Path:
    if args:
        return Path(args[0]).resolve()
    import importlib.util

    spec = importlib.util.find_spec("openenv_mcp.envs")  # the built-in environments (a data package)
    folders = list(spec.submodule_search_locations or []) if spec else []
    if not folders:
        raise SystemExit("the built-in environments are not installed: give the browser environment's folder")
    return Path(folders[0]).resolve() / "browser"


def main(argv: list[str]) -> int:
    console = Console(stderr=True)
    if not argv or argv[0] not in ("install", "check"):
        console.print("usage: python -m openenv_mcp.worlds.browser install|check [ENV_DIR]")
        return 2
    env_dir = _env_dir(argv[1:])
    if argv[0] == "install":
        with console.status(f"npm ci: {PACKAGE} {pinned_version(env_dir)} into {env_dir}/node_modules"):
            ran = install(env_dir, quiet=True)
        console.print(f"{PACKAGE} {pinned_version(env_dir)}: {'installed' if ran else 'already installed'}")
    problem = missing_message(env_dir)
    if problem:
        console.print(f"[red]browser world not ready:[/red] {problem}")
        return 1
    console.print("browser world ready: Node.js, Chromium and the pinned Playwright MCP server are there")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
