"""What a sandbox binds: never a sealed path (an environment's folder, a checkout's ``.git``) nor a
checkout or a folder above it, even when a needed folder holds them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from openenv_mcp.isolation.host.allowlist import allowlisted, checkout_roots, env_folders, inside, sealed_paths
from openenv_mcp.isolation.host.runtime import command_paths


def tree(root: Path, *files: str) -> None:
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)


def test_a_virtualenv_holding_the_installed_envs_is_bound_without_them(tmp_path):
    """A wheel install: the venv (needed whole) holds ``site-packages/openenv_mcp/envs/coding/hidden``."""
    site = tmp_path / "venv" / "lib" / "python3" / "site-packages"
    tree(site, "rich/__init__.py", "openenv_mcp/core/x.py", "openenv_mcp/envs/__init__.py",
         "openenv_mcp/envs/coding/hidden/t.py", "openenv_mcp/envs/sql/tasks.jsonl")  # fmt: skip
    tree(tmp_path / "venv", "bin/python", "pyvenv.cfg")
    envs = site / "openenv_mcp" / "envs"
    got = allowlisted([str(tmp_path / "venv")], sealed=[str(envs / "coding"), str(envs / "sql")], checkouts=[])
    assert str(site / "rich") in got and str(site / "openenv_mcp" / "core") in got
    assert str(envs / "__init__.py") in got and str(tmp_path / "venv" / "bin") in got
    assert not [p for p in got if inside(p, str(envs / "coding")) or inside(p, str(envs / "sql"))], got
    assert not [p for p in got if inside(str(envs), p)], "a folder holding the envs is bound whole"


def test_a_checkout_and_the_folders_above_it_are_never_bound_only_what_is_named_in_it(tmp_path):
    checkout = tmp_path / "work" / "checkout"
    tree(checkout, "pyproject.toml", "openenv_mcp/__init__.py", ".venv/bin/python", "tests/fixtures/s.py")
    tree(tmp_path / "work", "beside/secret.txt")
    named = [str(checkout / "openenv_mcp"), str(checkout / ".venv"), str(checkout / "tests/fixtures/s.py")]
    got = allowlisted([str(checkout), str(tmp_path / "work"), str(tmp_path), *named], checkouts=[str(checkout)],
                      sealed=[str(checkout / ".git")])  # fmt: skip
    assert got == named


def test_only_the_named_paths_of_a_bundled_envs_own_folder_are_bound(tmp_path):
    own = tmp_path / "envs" / "browser"
    tree(own, "tasks.jsonl", "apps/shop/index.html", "node_modules/x/cli.js")
    sealed = [str(own), str(tmp_path / "envs" / "coding")]
    paths = [str(own), str(own / "apps"), str(own / "node_modules"), str(tmp_path / "envs" / "coding" / "hidden")]
    assert allowlisted(paths, own_env=str(own), sealed=sealed, checkouts=[]) == paths[1:3]


def test_this_installations_sandbox_runtime_holds_no_env_folder_checkout_or_git():
    """The paths a sandboxed Python tool server of this installation binds (editable or a wheel)."""
    needed = allowlisted(command_paths([sys.executable, "-m", "openenv_mcp.tool_servers.shell"], Path("/")))
    assert env_folders(), "no bundled environment found"
    for path in needed:
        assert not any(inside(path, s) or inside(s, path) for s in sealed_paths()), path
        assert not any(inside(root, path) for root in checkout_roots()), path
    assert os.path.realpath(sys.prefix) in [os.path.realpath(p) for p in needed] or any(
        inside(os.path.realpath(sys.prefix), p) for p in needed
    )
