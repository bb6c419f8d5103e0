"""The pinned Playwright MCP server of a browser environment: where it is, whether it is installed,
and installing it (``npm ci`` from the environment's ``package-lock.json``; Chromium is Debian's,
never downloaded).

``python -m openenv_mcp.worlds.browser install [ENV_DIR]`` (``make browser`` in a checkout, a step of
``.ci/run``) installs it into ``ENV_DIR/node_modules``; it does nothing when the pinned version is
already there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from openenv_mcp.errors import ConfigError

__all__ = ["PACKAGE", "cli_path", "install", "installed_version", "missing_message", "pinned_version"]

PACKAGE = "@playwright/mcp"
CHROMIUM = "/usr/bin/chromium"


def pinned_version(env_dir: Path) -> str:
    """The version ``package.json`` pins."""
    data = json.loads((env_dir / "package.json").read_text())
    return data["dependencies"][PACKAGE]


def installed_version(env_dir: Path) -> str | None:
    try:
        return json.loads((env_dir / "node_modules" / PACKAGE / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def cli_path(env_dir: Path) -> Path:
    return env_dir / "node_modules" / PACKAGE / "cli.js"


def missing_message(env_dir: Path) -> str | None:
    """What is missing to run the browser world (``None``: nothing), with the command that fixes it."""
    if shutil.which("node") is None:
        return "Node.js is not installed: apt-get install nodejs npm"
    if not os.path.exists(CHROMIUM):
        return f"Chromium is not installed at {CHROMIUM}: apt-get install chromium"
    if installed_version(env_dir) != pinned_version(env_dir):
        return (
            f"the Playwright MCP server ({PACKAGE} {pinned_version(env_dir)}) is not installed in {env_dir}: "
            f"run `python -m openenv_mcp.worlds.browser install {env_dir}` (in a checkout: `make browser`)"
        )
    return None


def install(env_dir: Path, *, quiet: bool = False) -> bool:
    """``npm ci`` in ``env_dir`` unless the pinned version is installed; ``True`` if it ran."""
    if installed_version(env_dir) == pinned_version(env_dir):
        return False
    npm = shutil.which("npm")
    if npm is None:
        raise ConfigError("npm is not installed (apt-get install npm): it installs the Playwright MCP server")
    env = dict(os.environ, PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD="1")  # Debian's Chromium, never a download
    cmd = [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"]
    done = subprocess.run(cmd, cwd=env_dir, env=env, capture_output=quiet, text=True)
    if done.returncode != 0:
        raise ConfigError(f"`npm ci` in {env_dir} failed ({done.returncode}): {(done.stderr or '')[-800:]}")
    return True
