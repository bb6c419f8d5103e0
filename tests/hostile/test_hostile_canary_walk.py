"""No sandbox sees another environment's folder nor the checkout, proved from inside: canaries planted
in every bundled environment's folder, in the checkout, in its ``.git`` (a loose and a packed object),
beside the checkout and under ``/opt``; the whole visible filesystem walked from inside every kind of
sandbox (CodeAct in coding, files and sql; coding's shell and python fast-start forks, a plain-start
shell, the fs server's sandbox and the reward runner's), every readable file grepped, zlib streams
decompressed (:mod:`support.walker`, :mod:`support.canary_walk`).

On main before the allowlist each sandbox found 10 canaries (the other environments' folders) and showed
``.git`` and ``envs/``. Here: editable (this checkout), and a checkout under ``/tmp`` with its own editable
virtualenv; the wheel's run is in tests/test_wheel.py (it reuses that module's installed wheel).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from openenv_mcp.testing import need

from support import ROOT
from support.canary_walk import problems, run

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(autouse=True)
def _engines():
    need(shutil.which("bwrap") is not None, "the canary walk needs bubblewrap (apt-get install bubblewrap)")
    need(os.geteuid() == 0, "the canary walk runs the sandboxes as root does (fast starts, uid drops)")
    need(shutil.which("git") is not None, "the canary walk plants git objects: apt-get install git")


def test_no_canary_nor_sealed_path_is_visible_from_any_sandbox_of_the_editable_install():
    report = run(ROOT)
    assert problems(report) == [], json.dumps(report)[:4000]
    assert len(report["walks"]) == 8


def test_no_host_path_and_no_canary_is_visible_from_a_checkout_under_tmp(tmp_path_factory):
    """A clone of this checkout under /tmp, installed editable into its own virtualenv (dependencies from
    this one's site-packages through a ``.pth`` line): its sandboxes bind only its package and runtime."""
    base = Path(tmp_path_factory.mktemp("tmp-checkout", numbered=True))
    need(base.is_relative_to("/tmp"), "pytest's temp folder is not under /tmp")
    checkout = base / "checkout"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(checkout)], check=True, timeout=120)
    for rel in ("openenv_mcp", "tool_servers", "envs/coding"):  # this checkout's state, committed or not
        shutil.copytree(ROOT / rel, checkout / rel, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(checkout / ".venv")], check=True, timeout=120)
    python = checkout / ".venv" / "bin" / "python"
    site = next((checkout / ".venv" / "lib").glob("python3*/site-packages"))
    (site / "dev-deps.pth").write_text(next(p for p in sys.path if p.endswith("site-packages")) + "\n")
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-build-isolation"]
    subprocess.run([*pip, "-e", str(checkout)], check=True, timeout=600, cwd=base)
    done = subprocess.run(
        [str(python), str(ROOT / "tests" / "support" / "canary_walk.py"), str(checkout), "--brief"],
        capture_output=True, text=True, timeout=600, cwd=base,
        env={k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert problems(report) == [], json.dumps(report)[:4000]
    assert len(report["walks"]) == 3
