"""The wheel, installed as a new user installs it: into a fresh virtualenv outside the checkout.

One wheel and one virtualenv per session (module fixture): the dependencies come from the package
index as usual (pip's cache makes a rerun quick). Every command runs with the checkout nowhere on
``sys.path`` and the current folder a temporary one, so nothing the repository holds can help.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from support import BUILD_OUTPUT, ROOT, build_wheel

BUILTINS = ["browser", "coding", "echo", "files", "sql", "terminal"]
TOOL_SERVERS = ["filesystem", "python", "shell", "sql"]


def run(argv: list[str], cwd: Path, timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "OPENENV_MCP_", "VIRTUAL_ENV"))}
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{argv} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


THIRD_PARTY_ENV = {
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=77"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "tiny-openenv-env"
        version = "1.0"
        dependencies = ["openenv-mcp"]

        [project.entry-points."openenv_mcp.envs"]
        tiny = "tiny_env:ENV_DIR"

        [tool.setuptools]
        packages = ["tiny_env"]

        [tool.setuptools.package-data]
        tiny_env = ["env/*"]
    """,
    "tiny_env/__init__.py": """
        from pathlib import Path

        ENV_DIR = Path(__file__).resolve().parent / "env"
    """,
    "tiny_env/env/env.toml": """
        [env]
        name = "tiny"
        description = "A third-party environment: shout the phrase back."
        max_steps = 3
        tasks = "tasks.jsonl"
        reward = "reward:score"

        [[tool_servers]]
        name = "shout"
        namespace = ""
        object = "server:server"
    """,
    "tiny_env/env/tasks.jsonl": """
        {"id": "t0", "prompt": "Shout: hi", "data": {"phrase": "hi"}}
    """,
    "tiny_env/env/server.py": """
        from fastmcp import FastMCP

        server = FastMCP("shout")


        @server.tool
        def shout(text: str) -> str:
            return text.upper()
    """,
    "tiny_env/env/reward.py": """
        def score(ctx):
            return float(any(r.content and r.content[0].text == ctx.task.data["phrase"].upper()
                             for _, r in ctx.history))
    """,
}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(python, openenv-mcp, a scratch folder): the wheel and a third-party env installed in a fresh venv."""
    base = tmp_path_factory.mktemp("wheel")
    assert ROOT not in base.parents
    dist = base / "dist"
    dist.mkdir()
    wheel = build_wheel(ROOT, dist)
    venv = base / "venv"
    run([sys.executable, "-m", "venv", str(venv)], cwd=base)
    py = venv / "bin" / "python"
    run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)], cwd=base, timeout=900)
    tiny = base / "tiny-src"
    for name, text in THIRD_PARTY_ENV.items():
        (tiny / name).parent.mkdir(parents=True, exist_ok=True)
        (tiny / name).write_text(textwrap.dedent(text).lstrip())
    tiny_dist = base / "tiny-dist"
    tiny_dist.mkdir()
    run(
        [
            str(py),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--no-deps",
            "--no-build-isolation",
            str(build_wheel(tiny, tiny_dist)),
        ],
        cwd=base,
    )
    scratch = base / "scratch"
    scratch.mkdir()
    return py, venv / "bin" / "openenv-mcp", scratch, wheel


def test_wheel_installs_only_openenv_mcp_import_names(installed):
    *_, wheel = installed
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert {t for t in tops if not t.startswith("openenv_mcp")} == set()
    for data in (
        "openenv_mcp/envs/files/seeds/fix-typo/README.md",
        "openenv_mcp/envs/coding/hidden/deep-merge/test_hidden.py",
        "openenv_mcp/envs/coding/solutions.py",
        "openenv_mcp/envs/sql/workspace/shop.db",
        "openenv_mcp/conformance/data/official-not-applicable.toml",
        "openenv_mcp/conformance/data/node-tools.sh",
        "openenv_mcp/serve/static/index.html",
        "openenv_mcp/tool_servers/lean.py",
        "openenv_mcp/envs/terminal/env.toml",
        "openenv_mcp/envs/terminal/tasks/logs-top-ips/tests/check.py",
        "openenv_mcp/envs/terminal/tasks/logs-top-ips/environment/Dockerfile",
        "openenv_mcp/envs/terminal/tasks/logs-top-ips/solution/solve.sh",
    ):
        assert data in names


def test_the_installed_cli_lists_every_builtin_and_a_third_party_env(installed):
    py, cli, scratch, _ = installed
    out = run([str(cli), "list"], cwd=scratch).stdout
    for name in [*BUILTINS, "tiny"]:
        assert name in out, out
    where = run(
        [
            str(py),
            "-c",
            "import openenv_mcp, json; print(json.dumps([openenv_mcp.__file__, "
            "[s.name for s in openenv_mcp.list_envs()]]))",
        ],
        cwd=scratch,
    ).stdout
    file, names = json.loads(where)
    assert not Path(file).is_relative_to(ROOT)
    assert names == sorted([*BUILTINS, "tiny"])
    terminal = run(
        [
            str(py),
            "-c",
            "from openenv_mcp.client.registry import load_environment; from openenv_mcp.worlds.harbor.dataset import "
            "definition_of; e = load_environment('terminal'); d = definition_of(e.tasks.full(e.tasks.tasks[0])); "
            "print(len(e.tasks.tasks), d.dir.is_relative_to(__import__('openenv_mcp').__path__[0]), d.solution_script)",
        ],
        cwd=scratch,
    ).stdout.split()
    assert terminal == ["33", "True", "solve.sh"], terminal  # the tasks come from the installed package


def test_the_installed_cli_runs_and_checks_environments(installed):
    _, cli, scratch, _ = installed
    out = run([str(cli), "run", "files", "--episodes", "2"], cwd=scratch).stdout
    assert "2 episodes" in out
    proc = run([str(cli), "conformance", "echo"], cwd=scratch, timeout=600)
    assert "passed" in proc.stdout


# Where the checkout's data folders go in the wheel (pyproject's package-dir), and what never ships.
DATA = {"envs/": "openenv_mcp/envs/", "openenv_mcp/scaffold/templates/": "openenv_mcp/scaffold/templates/"}
NOT_SHIPPED = ("envs/browser/node_modules/",)  # `make browser` installs it; a user runs the install command


def checkout_data() -> dict[str, str]:
    """Every file of the checkout's data folders (``git ls-files`` in a git checkout, else the tree without
    bytecode caches), by its path in the wheel."""
    if (ROOT / ".git").exists():
        listed = subprocess.run(
            ["git", "ls-files", "-z", *DATA], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.split("\0")
        files = [f for f in listed if f and (ROOT / f).is_file()]
    else:
        files = [
            p.relative_to(ROOT).as_posix()
            for top in DATA
            for p in (ROOT / top).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
        ]
    out = {}
    for f in files:
        if f.startswith(NOT_SHIPPED):
            continue
        src = next(s for s in DATA if f.startswith(s))
        out[DATA[src] + f[len(src) :]] = f
    return out


def test_building_the_wheel_prints_no_setuptools_warning(installed):
    """With include-package-data on, setuptools printed a `!!` warning block ("Package 'openenv_mcp.envs.files'
    is absent from the `packages` configuration") for every data folder, on every build and install."""
    *_, wheel = installed
    output = BUILD_OUTPUT[wheel]
    warnings = [line.strip() for line in output.splitlines() if "Warning:" in line or line.strip() == "!!"]
    assert warnings == [], output[:4000]


def test_the_wheel_is_typed(installed):
    *_, wheel = installed
    assert "openenv_mcp/py.typed" in zipfile.ZipFile(wheel).namelist()


def test_the_wheel_holds_the_checkouts_envs_and_templates_byte_for_byte(installed):
    """Every file of every built-in env and template, dotfiles included (a seed's ``.env`` was dropped),
    with the same bytes; nothing else under those folders (no bytecode, no node_modules)."""
    *_, wheel = installed
    shipped = zipfile.ZipFile(wheel)
    expected = checkout_data()
    assert "openenv_mcp/envs/files/seeds/create-gitignore/.env" in expected
    in_wheel = {n for n in shipped.namelist() if n.startswith(tuple(DATA.values())) and not n.endswith("/")}
    assert sorted(set(expected) - in_wheel) == [] and sorted(in_wheel - set(expected)) == []
    assert [n for n in sorted(expected) if shipped.read(n) != (ROOT / expected[n]).read_bytes()] == []


def test_a_workspace_from_the_installed_wheel_holds_no_bytecode_pip_compiled(installed):
    """pip byte-compiles a seed's ``.py`` files where it installs them; an agent's workspace is the seed
    as the checkout holds it, without those ``__pycache__`` folders."""
    py, _, scratch, _ = installed
    code = textwrap.dedent("""
        import json, openenv_mcp
        from pathlib import Path
        from openenv_mcp import CallTool
        seed = Path(openenv_mcp.__file__).parent / "envs" / "files" / "seeds" / "bump-copyright"
        with openenv_mcp.make("files") as env:
            env.reset(seed=0, task_id="bump-copyright")
            obs = env.step(CallTool(name="fs_list", arguments={"path": ".", "recursive": True}))
        print(json.dumps([sorted(p.name for p in seed.rglob("__pycache__")), obs.result.content[0].text]))
    """)
    compiled, listing = json.loads(run([str(py), "-c", code], cwd=scratch).stdout)
    assert compiled == ["__pycache__"]  # pip did compile src/*.py next to the installed seed
    assert "a.py" in listing and "__pycache__" not in listing and ".pyc" not in listing, listing


# validate from the wheel: the fast envs whole, one task of the sandboxed ones; create-gitignore is the seed whose
# .env the wheel dropped, bump-copyright one whose .py files pip compiles. (terminal and browser: the data test
# above and their own validate tests in the checkout; `make validate-browser`, `make validate-terminal`.)
VALIDATED = {
    "echo": [],
    "files": ["create-gitignore", "bump-copyright"],
    "sql": ["q01-customer-count"],
    "coding": ["paginate-off-by-one"],
}


def test_validate_of_the_builtins_is_green_from_the_installed_wheel(installed):
    from openenv_mcp.isolation.boundaries.sandbox import bwrap_path

    py, _, scratch, _ = installed
    envs = dict(VALIDATED)
    try:
        bwrap_path()
    except Exception:  # noqa: BLE001 - coding's tools run in bubblewrap; the others do not need it
        envs.pop("coding")
    code = textwrap.dedent(f"""
        import anyio, json
        from openenv_mcp.validate import validate
        async def main():
            return {{env: (await validate(env, task_ids=ids or None)).findings() for env, ids in {envs!r}.items()}}
        print(json.dumps(anyio.run(main)))
    """)
    assert json.loads(run([str(py), "-c", code], cwd=scratch, timeout=600).stdout) == {env: [] for env in envs}
    from openenv_mcp.testing import need

    need("coding" in envs, "bubblewrap is not installed (apt-get install bubblewrap): coding not validated")


@pytest.mark.parametrize("server", TOOL_SERVERS)
def test_each_installed_tool_server_answers_help(installed, server):
    py, _, scratch, _ = installed
    out = run([str(py), "-m", f"openenv_mcp.tool_servers.{server}", "--help"], cwd=scratch).stdout
    assert out.startswith(f"usage: python -m openenv_mcp.tool_servers.{server}")


def test_a_third_party_env_registered_by_entry_point_is_made_by_name(installed):
    py, _, scratch, _ = installed
    code = textwrap.dedent("""
        import openenv_mcp
        from openenv_mcp import CallTool
        with openenv_mcp.make("tiny") as env:
            env.reset(seed=0)
            obs = env.step(CallTool(name="shout", arguments={"text": "hi"}))
            print(obs.result.content[0].text, obs.reward)
    """)
    assert run([str(py), "-c", code], cwd=scratch).stdout.split() == ["HI", "1.0"]


def test_the_installed_sandbox_starts_the_installed_tool_servers(installed):
    """The coding env's shell and python servers run in bubblewrap from the wheel (found by the import system)."""
    from openenv_mcp.errors import BoundaryError
    from openenv_mcp.isolation.boundaries.sandbox import bwrap_path
    from openenv_mcp.testing import need

    try:
        bwrap_path()
    except BoundaryError as e:
        need(False, str(e))
    _, cli, scratch, _ = installed
    out = run([str(cli), "run", "coding", "--episodes", "1"], cwd=scratch, timeout=600).stdout
    assert "1 episodes" in out and "reward mean 1.000" in out, out


def test_no_canary_nor_sealed_path_is_visible_from_any_sandbox_of_the_installed_wheel(installed):
    """No sandbox sees another environment's folder, installed from a wheel too: the envs sit in
    ``site-packages/openenv_mcp/envs`` inside the virtualenv every sandbox binds; the canary walk
    (tests/hostile/test_hostile_canary_walk.py) finds none of them."""
    import shutil

    from openenv_mcp.testing import need

    from support.canary_walk import problems

    need(shutil.which("bwrap") is not None and os.geteuid() == 0, "the canary walk needs bubblewrap and root")
    py, _, scratch, _ = installed
    out = run([str(py), str(ROOT / "tests" / "support" / "canary_walk.py"), str(ROOT)], cwd=scratch, timeout=600)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert problems(report) == [], json.dumps(report)[:4000]
    assert len(report["walks"]) == 8
