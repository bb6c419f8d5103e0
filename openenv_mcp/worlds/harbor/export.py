"""Any openenv-mcp environment's tasks as Harbor task folders, where the mapping holds.

``openenv-mcp export harbor ENV --out DIR`` writes one folder per task: ``task.toml``,
``instruction.md`` (the prompt), ``environment/`` (a Dockerfile whose ``/app`` holds the task's
workspace seed), ``tests/`` (``test.sh`` running the environment's own reward function on the
final ``/app``, with the task's grader-only data, writing ``reward.json``) and ``solution/solve.sh``
(the reference trajectory, each tool call as the shell commands that do the same). Harbor,
NeMo Gym and verifiers run them; loading the folder back (``harbor:DIR``) gives the same tasks, and
the oracle the same reward as the reference trajectory (the round-trip test holds it).

A task maps when:

* its tools are the workspace servers (``filesystem``, ``shell``, ``python``): the agent of a task
  folder works in a container, with its own tools, on the same files;
* its reward is a Python function of the workspace's end state and the task (``ctx.workspace``,
  ``ctx.task``), importing only the standard library, ``openenv_mcp.types`` and modules of its own
  folder: it runs in the container as the verifier;
* its reference trajectory calls only those servers' tools.

What does not map is skipped with the reason (``ExportReport.skipped``): rewards that read the
episode's tool calls (``ctx.history``, ``ctx.action``, ``ctx.result``: ``echo``, ``sql``'s answers),
rewards that need the framework (``coding``'s sandboxed runner), tool servers other than the
workspace ones (``sql``'s database tools), and fields Harbor has no place for (``max_steps``,
``success_score``, named task sets, a rubric, prod variants). Harbor-sourced tasks are copied as
they are.
"""

from __future__ import annotations

import ast
import base64
import json
import re
import shlex
import shutil
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openenv_mcp.client.registry import load_environment
from openenv_mcp.core.environment import Environment
from openenv_mcp.definitions.spec import ToolServerSpec
from openenv_mcp.errors import ConfigError
from openenv_mcp.types import CallTool, Task
from openenv_mcp.worlds.harbor.dataset import PRIVATE

__all__ = ["ExportReport", "export_harbor"]

WORKSPACE = "/app"
SERVERS = {"filesystem", "shell", "python"}
HISTORY_READS = ("ctx.history", "ctx.action", "ctx.result", "call_tool(", ".episode")
DOCKERFILE = """\
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}
# Python's standard library for the verifier (python:3.11-slim has it; a Debian base gets it from apt).
RUN python3 -c "import json, configparser" 2>/dev/null || (apt-get update && apt-get install -y \\
    --no-install-recommends python3 && apt-get clean && rm -rf /var/lib/apt/lists/*)
COPY workspace/ /app/
WORKDIR /app
"""


@dataclass
class ExportReport:
    """What an export wrote, and what it could not map (with why)."""

    out: Path
    exported: list[tuple[str, Path]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def export_harbor(target: Any, out: str | Path, task_ids: list[str] | None = None, force: bool = False) -> ExportReport:
    """Write ``target``'s tasks as Harbor task folders under ``out`` (see the module doc)."""
    environment = target if isinstance(target, Environment) else load_environment(target)
    root = Path(out)
    if root.exists() and any(root.iterdir()) and not force:
        raise ConfigError(f"{root} is not empty: give an empty or new folder (or force=True to write into it)")
    root.mkdir(parents=True, exist_ok=True)
    report = ExportReport(out=root)
    tasks = environment.tasks.tasks if task_ids is None else [environment.tasks.get(t) for t in task_ids]
    problem = _environment_problem(environment)
    for task in tasks:
        folder = root / _slug(task.id)
        if PRIVATE in task.data and isinstance(task.data[PRIVATE], dict):
            shutil.copytree(task.data[PRIVATE]["dir"], folder, symlinks=True, dirs_exist_ok=force)
            report.exported.append((task.id, folder))
            continue
        if problem:
            report.skipped.append((task.id, problem))
            continue
        try:
            solve = _solution(environment, task)
        except _Unmappable as e:
            report.skipped.append((task.id, str(e)))
            continue
        _write_task(environment, task, folder, solve)
        report.exported.append((task.id, folder))
    return report


class _Unmappable(Exception):
    pass


def _slug(task_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", task_id).strip("-.") or "task"


# -- does the environment map? ------------------------------------------------------------------
def _server_kind(spec: ToolServerSpec) -> str | None:
    text = " ".join([str(spec.object or ""), *(spec.command or [])])
    m = re.search(r"openenv_mcp\.tool_servers\.(\w+)", text)
    return m.group(1) if m else None


def _environment_problem(environment: Environment) -> str | None:
    spec = environment.spec
    for server in spec.tool_servers:
        kind = _server_kind(server)
        if kind not in SERVERS:
            return f"tool server {server.name!r} is not a workspace server (filesystem, shell, python): a task folder's agent has its own tools"
    if not isinstance(spec.reward, str) or ":" not in spec.reward:
        return "the reward is not a `module:function` of the environment's folder (a rubric or a command reward does not map)"
    module = spec.reward.partition(":")[0]
    try:
        _reward_files(spec.base_dir, module)
    except _Unmappable as e:
        return str(e)
    return None


def _reward_files(base_dir: Path, module: str, seen: set[str] | None = None) -> list[Path]:
    """The reward module's file and those of the sibling modules it imports (checked: standard
    library, ``openenv_mcp.types`` and siblings only; no read of the episode's calls)."""
    seen = seen if seen is not None else set()
    path = base_dir / (module.replace(".", "/") + ".py")
    if not path.is_file():
        raise _Unmappable(f"the reward module {module!r} is not a file of the environment's folder")
    seen.add(module)
    source = path.read_text()
    files = [path]
    for name in _imports(source):
        top = name.split(".")[0]
        if name == "openenv_mcp.types" or top == "__future__" or top in sys.stdlib_module_names:
            continue
        if (base_dir / (top + ".py")).is_file():
            if top not in seen:
                files += _reward_files(base_dir, top, seen)
            continue
        raise _Unmappable(f"the reward imports {name!r}, which a task container does not have")
    for marker in HISTORY_READS:
        if marker in source:
            raise _Unmappable(
                f"the reward reads the episode ({marker.rstrip('(')}), which a task folder's verifier cannot see"
            )
    return files


def _imports(source: str) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.append(node.module)
    return out


# -- the reference trajectory as shell commands ---------------------------------------------------
def _solution(environment: Environment, task: Task) -> str:
    routes = {}
    for server in environment.spec.tool_servers:
        kind = _server_kind(server)
        for tool in ("list", "read", "write", "edit", "move", "delete", "search", "run", "restart"):
            routes[f"{server.prefix}_{tool}" if server.prefix else tool] = (kind, tool)
    try:
        actions = environment.trajectory(task, "reference")
    except ConfigError as e:
        raise _Unmappable(f"no reference trajectory: {e}") from None
    lines = [
        "#!/bin/bash",
        "# The reference trajectory, each tool call as shell commands.",
        "set -e",
        f"cd {WORKSPACE}",
    ]
    for action in actions:
        if action.name not in routes:
            raise _Unmappable(f"the reference calls {action.name!r}, which has no shell equivalent")
        lines += _commands(*routes[action.name], action)
    return "\n".join(lines) + "\n"


def _path(value: Any) -> str:
    rel = str(value or ".").lstrip("/")
    return shlex.quote(f"{WORKSPACE}/{rel}" if rel not in ("", ".") else WORKSPACE)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _commands(kind: str | None, tool: str, action: CallTool) -> list[str]:
    a = action.arguments
    if kind == "filesystem":
        if tool in ("list", "read", "search"):
            return []
        if tool == "write":
            p = _path(a["path"])
            return [f'mkdir -p "$(dirname {p})"', f"echo {_b64(a['content'])} | base64 -d > {p}"]
        if tool == "move":
            src, dst = _path(a["source"]), _path(a["destination"])
            return [f'mkdir -p "$(dirname {dst})"', f"mv -f {src} {dst}"]
        if tool == "delete":
            return [f"rm -rf {_path(a['path'])}"]
        if tool == "edit":
            code = (
                "import base64, sys; p, o, n, a = sys.argv[1], *(base64.b64decode(x).decode() for x in sys.argv[2:4]), sys.argv[4]; "
                "t = open(p).read(); t = t.replace(o, n) if a == '1' else t.replace(o, n, 1); open(p, 'w').write(t)"
            )
            flag = "1" if a.get("replace_all") else "0"
            return [
                f"python3 -c {shlex.quote(code)} {_path(a['path'])} {_b64(a['old_text'])} {_b64(a['new_text'])} {flag}"
            ]
    if kind == "shell" and tool == "run":
        stdin = f"echo {_b64(a['stdin'])} | base64 -d | " if a.get("stdin") else ""
        return [f"{stdin}bash -c {shlex.quote(a['command'])} || true"]
    if kind == "python" and tool == "run":
        return [f"echo {_b64(a['code'])} | base64 -d | python3 - || true"]
    if kind == "python" and tool == "restart":
        return []
    raise _Unmappable(f"{action.name} has no shell equivalent")


# -- writing the folder -------------------------------------------------------------------------------
GRADE = '''\
"""Runs the openenv-mcp environment's own reward on /app and writes /logs/verifier/reward.json."""
import asyncio
import importlib
import inspect
import json
import sys
import types
from pathlib import Path

sys.path[:0] = ["/tests/shim", "/tests/env"]
from openenv_mcp.types import Score, Task  # noqa: E402  (the shim: tests/shim)

task = Task(**json.load(open("/tests/task.json")))
ctx = types.SimpleNamespace(task=task, workspace=Path("/app"), step=0, action=None, result=None, history=[], episode=None)
module, _, name = {reward!r}.partition(":")
value = getattr(importlib.import_module(module), name)(ctx)
if inspect.isawaitable(value):
    value = asyncio.run(value)
info = {{}}
if isinstance(value, Score):
    value, info = value.score, value.info
rewards = {{k: v for k, v in info.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}}
rewards["reward"] = float(value)
json.dump(rewards, open("/logs/verifier/reward.json", "w"))
print(json.dumps(rewards))
'''
SHIM = '''\
"""The two types an environment's reward module may import from openenv_mcp, for running it alone."""


class Score:
    def __init__(self, score, done=None, info=None):
        self.score, self.done, self.info = float(score), done, dict(info or {})


class Task:
    def __init__(self, id, prompt, data=None, workspace=None, answer=None, private=None):
        self.id, self.prompt, self.data, self.workspace, self.answer = id, prompt, data or {}, workspace, answer
'''


def _write_task(environment: Environment, task: Task, folder: Path, solve: str) -> None:
    spec = environment.spec
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "instruction.md").write_text(task.prompt.rstrip() + "\n")
    (folder / "task.toml").write_text(_task_toml(spec.name, task, spec.description))
    seed = folder / "environment" / "workspace"
    seed.mkdir(parents=True, exist_ok=True)
    for server in spec.tool_servers:
        if server.workspace:
            shutil.copytree(spec.path(server.workspace), seed, symlinks=True, dirs_exist_ok=True)
    if task.workspace:
        shutil.copytree(spec.path(task.workspace), seed, symlinks=True, dirs_exist_ok=True)
    (folder / "environment" / "Dockerfile").write_text(DOCKERFILE)
    tests = folder / "tests"
    (tests / "shim" / "openenv_mcp").mkdir(parents=True, exist_ok=True)
    (tests / "shim" / "openenv_mcp" / "__init__.py").write_text("")
    (tests / "shim" / "openenv_mcp" / "types.py").write_text(SHIM)
    env_copy = tests / "env"
    env_copy.mkdir(exist_ok=True)
    module = str(spec.reward).partition(":")[0]
    for path in _reward_files(spec.base_dir, module):
        shutil.copy2(path, env_copy / path.name)
    if task.workspace:  # a reward comparing with the seed (``same_as_seed``) reads it next to its module
        shutil.copytree(spec.path(task.workspace), env_copy / task.workspace, symlinks=True, dirs_exist_ok=True)
    full = environment.tasks.full(task)
    data = {"id": full.id, "prompt": full.prompt, "data": full.data, "workspace": full.workspace, "answer": full.answer}
    (tests / "task.json").write_text(json.dumps(data, indent=2, default=str) + "\n")
    (tests / "grade.py").write_text(GRADE.format(reward=str(spec.reward)))
    (tests / "test.sh").write_text("#!/bin/sh\nexec python3 /tests/grade.py\n")
    (tests / "test.sh").chmod(0o755)
    (folder / "solution").mkdir(exist_ok=True)
    (folder / "solution" / "solve.sh").write_text(solve)
    (folder / "solution" / "solve.sh").chmod(0o755)


def _task_toml(env_name: str, task: Task, description: str) -> str:
    first = task.prompt.strip().splitlines()[0][:200] if task.prompt.strip() else task.id
    return textwrap.dedent(
        f"""\
        schema_version = "1.1"

        [task]
        name = {json.dumps("openenv-mcp/" + _slug(env_name + "-" + task.id))}
        description = {json.dumps(first)}

        [metadata]
        source = {json.dumps("openenv-mcp:" + env_name)}
        openenv_task_id = {json.dumps(task.id)}
        environment_description = {json.dumps(description)}

        [verifier]
        timeout_sec = 120.0

        [agent]
        timeout_sec = 600.0

        [environment]
        cpus = 1
        memory_mb = 1024
        """
    )
