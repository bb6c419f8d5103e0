"""The canary walk: plant canaries where no sandbox may look, then walk the whole visible
filesystem from inside every kind of sandbox of the built-in environments and report what was found.

Run by the tests in-process (editable install) and as a program by another installation's interpreter
(a wheel in a fresh virtualenv, a checkout under ``/tmp``): ``python canary_walk.py [CHECKOUT]`` prints one
JSON object ``{"control": {...}, "walks": {"ENV/SANDBOX": report}}`` (see :mod:`walker`). Needs
bubblewrap, root (fast starts) and only what the installation under test imports.

Canaries: a file in every bundled environment's folder, in the checkout, beside it and under ``/opt``; a
loose git object and a packed one in the checkout's ``.git``. ``control`` is the walker's scan of each
planted file on the host (each must find its canary: the walk can fail); every walk must find none, and
list no path inside a sealed one (an env folder, ``.git``, anything of the checkout but its runtime).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio

WALKER = Path(__file__).with_name("walker.py")
ENVS = ("coding", "files", "sql")


def program(canaries: list[str], sealed: list[str]) -> str:
    """The walker as one Python program with its arguments built in."""
    return WALKER.read_text() + f"\nprint(json.dumps(walk({canaries!r}, {sealed!r})))\n"


def _git(checkout: Path, *args: str, stdin: str = "") -> str:
    done = subprocess.run(["git", "-C", str(checkout), *args], input=stdin, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"git {args}: {done.stderr}")
    return done.stdout.strip()


@contextlib.contextmanager
def planted(checkout: Path | None) -> Iterator[dict[str, Path]]:
    """Canary text -> the file holding it (removed afterwards)."""
    from openenv_mcp.isolation.host.allowlist import env_folders

    token = secrets.token_hex(8)
    folders = {f"env-{Path(f).name}-{i}": Path(f) for i, f in enumerate(env_folders())}
    if checkout is not None:
        folders |= {f"checkout-env-{p.name}": p for p in sorted((checkout / "envs").iterdir()) if p.is_dir()}
        folders |= {"checkout": checkout, "beside-checkout": checkout.parent}
    folders["opt"] = Path("/opt")
    made: dict[str, Path] = {}
    try:
        for label, folder in folders.items():
            canary = f"OPENENV-CANARY-{label}-{token}"
            path = folder / f".openenv-canary-{token}-{label}"
            if folder.is_dir():
                path.write_text(f"hidden test body / answer / secret: {canary}\n")
                made[canary] = path
        git = None if checkout is None else checkout / ".git"
        if git is not None and git.is_dir():
            loose = f"OPENENV-CANARY-git-loose-{token}"
            sha = _git(checkout, "hash-object", "-w", "--stdin", stdin=f"def test_hidden():\n    assert '{loose}'\n")
            made[loose] = git / "objects" / sha[:2] / sha[2:]
            packed = f"OPENENV-CANARY-git-pack-{token}"
            sha = _git(checkout, "hash-object", "-w", "--stdin", stdin=f"expected = {packed!r}\n")
            name = _git(checkout, "pack-objects", "-q", str(git / "objects" / "pack" / f"pack-canary-{token}"),
                        stdin=sha + "\n")  # fmt: skip
            (git / "objects" / sha[:2] / sha[2:]).unlink()  # only the pack holds it now
            pack = git / "objects" / "pack" / f"pack-canary-{token}-{name}.pack"
            made[packed] = pack
            made[f"{packed}-idx"] = pack.with_suffix(".idx")
        yield made
    finally:
        for path in made.values():
            with contextlib.suppress(OSError):
                path.unlink()


def sealed_for_walk(checkout: Path | None) -> list[str]:
    """What no walk may list: sealed paths, and everything of the checkout (and beside it) but its runtime."""
    from openenv_mcp.isolation.host.allowlist import checkout_roots, inside, sealed_paths
    from openenv_mcp.isolation.host.runtime import package_dirs

    runtime = [os.path.realpath(p) for p in [sys.prefix, *package_dirs()]]
    out = list(sealed_paths())
    for root in {*checkout_roots(), *([str(checkout)] if checkout else [])}:
        for folder in (root, os.path.dirname(root)):
            for name in os.listdir(folder):
                child = os.path.join(folder, name)
                if not any(inside(r, child) for r in runtime) and child != root:
                    out.append(child)
    out += [str(checkout / "envs")] if checkout else []
    return sorted(set(out))


def _output(obs: Any, key: str) -> dict[str, Any]:
    result = obs.result.structured_content or {}
    text = result.get(key) or ""
    try:
        return json.loads(text.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": json.dumps(result)[:2000]}


def _in_connection(conn_of: Any, code: str) -> dict[str, Any]:
    """Run the walker as ``sys.executable -I -c CODE`` in the sandbox ``conn_of(argv, workspace)`` makes."""

    async def go() -> dict[str, Any]:
        with tempfile.TemporaryDirectory() as ws:
            argv = [sys.executable, "-I", "-c", code]
            conn = conn_of(argv, Path(ws))
            try:
                status, out, err = await conn.run_command(argv, {}, 300)
            finally:
                await conn.close()
        try:
            return json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return {"error": f"exit {status}: {out[-500:]} {err[-1500:]}"}

    return anyio.run(go)


def _shell(env: Any, command: str) -> dict[str, Any]:
    from openenv_mcp import CallTool

    return _output(env.step(CallTool(name="shell_run", arguments={"command": command, "timeout": 120})), "stdout")


def _coding_servers(spec: Any, code: str, shell: str) -> dict[str, dict[str, Any]]:
    """The coding env's sandboxes that are not an agent tool: the fs server's and the reward runner's;
    and the shell without fast starts."""
    import importlib.util

    import openenv_mcp
    from openenv_mcp.isolation.base import ServerContext
    from openenv_mcp.isolation.boundaries.sandbox import SandboxConnection

    out: dict[str, dict[str, Any]] = {}
    fs = next(s for s in spec.tool_servers if s.name == "fs")
    out["coding/fs server"] = _in_connection(
        lambda argv, ws: SandboxConnection(fs, ServerContext(f"walk-{secrets.token_hex(4)}", ws), spec.base_dir), code
    )
    loader = importlib.util.spec_from_file_location("coding_reward_walk", Path(spec.base_dir) / "reward.py")
    assert loader is not None and loader.loader is not None
    reward = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(reward)
    out["coding/reward runner"] = _in_connection(
        lambda argv, ws: reward.runner_connection(argv, ws, reward.Limits()), code
    )
    previous = os.environ.get("OPENENV_MCP_FAST_START")
    os.environ["OPENENV_MCP_FAST_START"] = "0"
    try:
        with openenv_mcp.make(spec) as env:
            env.reset(seed=0)
            out["coding/shell (plain start)"] = _shell(env, shell)
    finally:
        if previous is None:
            os.environ.pop("OPENENV_MCP_FAST_START", None)
        else:
            os.environ["OPENENV_MCP_FAST_START"] = previous
    return out


def walks(canaries: list[str], sealed: list[str], brief: bool = False) -> dict[str, dict[str, Any]]:
    """``ENV/SANDBOX`` -> the walker's report from inside that sandbox (``brief``: only the coding env's
    agent-facing sandboxes: CodeAct, the shell and python forks)."""
    import openenv_mcp
    from openenv_mcp import CallTool, RunCode
    from openenv_mcp.client.registry import find_env

    code = program(canaries, sealed)
    shell = f"printf %s {code.encode().hex()} | python3 -c 'import sys; exec(bytes.fromhex(sys.stdin.read()))'"
    out: dict[str, dict[str, Any]] = {}
    for name in ENVS[:1] if brief else ENVS:
        spec = find_env(name)
        with openenv_mcp.make(spec) as env:
            env.reset(seed=0)
            out[f"{name}/codeact"] = _output(env.step(RunCode(code=code)), "stdout")
            if name == "coding":
                out["coding/shell (fast-start fork)"] = _shell(env, shell)
                python = CallTool(name="python_run", arguments={"code": code, "timeout": 120})
                out["coding/python (fast-start fork)"] = _output(env.step(python), "stdout")
        if name == "coding" and not brief:
            out |= _coding_servers(spec, code, shell)
    return out


def control(made: dict[str, Path]) -> dict[str, list[str]]:
    """The walker's scan of each planted file on the host: canary -> what it found there."""
    sys.path.insert(0, str(WALKER.parent))
    try:
        import walker  # pyright: ignore[reportMissingImports]
    finally:
        sys.path.pop(0)
    canaries = [c for c in made if not c.endswith("-idx")]
    return {c: walker.scan(str(made[c]), canaries) or [] for c in canaries}


def run(checkout: Path | None, brief: bool = False) -> dict[str, Any]:
    with planted(checkout) as made:
        canaries = [c for c in made if not c.endswith("-idx")]
        return {"control": control(made), "walks": walks(canaries, sealed_for_walk(checkout), brief)}


def problems(report: dict[str, Any]) -> list[str]:
    """What is wrong with a :func:`run` report: a canary the control missed, a walk that failed, walked
    too little, or found a canary or a sealed path."""
    out = [f"control: the walker missed {c}" for c, found in report["control"].items() if c not in found]
    for label, walk in report["walks"].items():
        if "error" in walk or walk.get("files", 0) < 500:
            out.append(f"{label}: the walk did not run: {walk}")
        out += [f"{label}: {path} holds {canary}" for path, canary in walk.get("hits", [])]
        out += [f"{label}: {path} is visible (sealed)" for path in walk.get("sealed", [])]
    return out


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--brief"]
    print(json.dumps(run(Path(args[0]).resolve() if args else None, "--brief" in sys.argv)))
