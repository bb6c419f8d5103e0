"""``openenv-mcp init``: a ready environment package from templates (``templates/``).

Three starting points:

* plain: a FastMCP tool-server skeleton with one tool, one worked task, its reward and solutions;
* ``from_command``: wrap a stdio MCP server in any language: ``npx``/``uvx`` packages are installed
  into the environment's folder first (:mod:`openenv_mcp.scaffold.runtime`), and the tools are read
  from the server started behind the boundary the environment uses (:mod:`openenv_mcp.scaffold.probe`);
* ``from_url``: wrap a remote streamable-HTTP MCP server (same).

The package registers its environment in the ``openenv_mcp.envs`` entry-point group, so after
``pip install ./NAME`` the environment is found by name everywhere (``make``, ``list``, ``run``...).
"""

from __future__ import annotations

import json
import random
import re
import shlex
import sys
import tempfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from openenv_mcp.errors import ConfigError

__all__ = ["ISOLATIONS", "Scaffold", "create", "package_name", "read_tools", "tool_server_spec", "wrap_command"]

ISOLATIONS = ("inprocess", "process", "sandbox", "docker")
_NAME = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")


def package_name(name: str) -> str:
    """The import name of environment ``name`` (``my-env`` -> ``my_env``)."""
    return name.replace("-", "_")


@dataclass
class Scaffold:
    """What ``init`` writes: the environment's name, where, and the tools it wraps (if any)."""

    name: str
    root: Path
    from_command: list[str] | None = None
    from_url: str | None = None
    isolation: str | None = None
    tools: list[Any] = field(default_factory=list)  # mcp.types.Tool read from the wrapped server
    env: dict[str, str] = field(default_factory=dict)
    """Variables for the wrapped server (``{workspace}`` and ``{env_dir}`` expand), e.g. where it keeps state."""
    command: list[str] | None = None
    """The env file's command: ``from_command``, or the local install's (``{env_dir}/runtime/...``)."""
    installed: str | None = None
    """What was installed locally (``npm @scope/name@1.2.3``), if anything."""
    worked: tuple[str, dict[str, Any]] | None = None
    """A call that succeeded behind the boundary: the worked task's tool and arguments."""
    failures: list[str] = field(default_factory=list)
    """The tried calls that failed (what each answered)."""

    @property
    def pkg(self) -> str:
        return package_name(self.name)

    @property
    def target(self) -> Path:
        return self.root / self.name

    @property
    def env_dir(self) -> Path:
        return self.target / self.pkg


def _template(kind: str, file: str) -> str:
    return resources.files(__name__).joinpath("templates", kind, file).read_text()


def _render(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace(f"__{key}__", value)
    return text


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


async def read_tools(
    from_command: list[str] | None = None, from_url: str | None = None, timeout: float = 30.0
) -> list[Any]:
    """The tools of a running MCP server (a stdio command, or a streamable-HTTP URL), read with the SDK."""
    import anyio
    from mcp import ClientSession
    from mcp.types import PaginatedRequestParams

    async def listing(read: Any, write: Any) -> list[Any]:
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools, cursor = [], None
            while True:
                page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    return tools

    where = shlex.join(from_command) if from_command else str(from_url)
    errlog = tempfile.TemporaryFile(mode="w+")  # the server's stderr: quoted when it fails, else dropped
    try:
        with anyio.fail_after(timeout):
            if from_command:
                from mcp.client.stdio import StdioServerParameters, stdio_client

                # `python` means the interpreter running openenv-mcp, as in env.toml's `command`
                program = sys.executable if from_command[0] in ("python", "python3") else from_command[0]
                params = StdioServerParameters(command=program, args=from_command[1:])
                async with stdio_client(params, errlog=errlog) as (read, write):
                    return await listing(read, write)
            from mcp.client.streamable_http import streamable_http_client

            async with streamable_http_client(str(from_url)) as (read, write):
                return await listing(read, write)
    except TimeoutError:
        raise ConfigError(
            f"the MCP server {where!r} did not list its tools within {timeout:g} s{_stderr_tail(errlog)}"
        ) from None
    except Exception as e:  # OSError, an ExceptionGroup from the transport, an MCP error...
        while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
            e = e.exceptions[0]
        raise ConfigError(
            f"cannot read the tools of the MCP server {where!r}: {type(e).__name__}: {e}{_stderr_tail(errlog)}"
        ) from None
    finally:
        errlog.close()


def _stderr_tail(errlog: Any, lines: int = 10) -> str:
    try:
        errlog.seek(0)
        tail = errlog.read()[-4000:].strip().splitlines()[-lines:]
    except (OSError, ValueError):
        return ""
    return ("; its stderr ends with:\n" + "\n".join(tail)) if tail else ""


def _stub_arguments(tool: Any, seed: int = 0) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Valid arguments for ``tool`` (from its input schema), and arguments that violate it (None if none do)."""
    from openenv_mcp.conformance.argsgen import generate_arguments, violations

    args = generate_arguments(tool, random.Random(seed))
    bad = violations(tool)
    return args, (bad[0][1] if bad else None)


def _tool_server_toml(s: Scaffold) -> str:
    if s.from_url:
        return f"url = {_toml_str(s.from_url)}\n"
    if s.from_command:  # a wrapped third-party server is untrusted: sandboxed unless told otherwise
        command = s.command or s.from_command
        lines = f"command = [{', '.join(_toml_str(a) for a in command)}]\n"
        lines += f'isolation = "{s.isolation or "sandbox"}"\n'
        if s.env:
            lines += f"env = {{ {', '.join(f'{_toml_str(k)} = {_toml_str(v)}' for k, v in s.env.items())} }}\n"
        return lines

    if s.isolation in (None, "inprocess"):
        return f'object = "{s.pkg}.server:server"\n'
    return f'command = ["python", "-m", "{s.pkg}.server"]\nisolation = "{s.isolation}"\n'


def _env_toml(s: Scaffold, description: str) -> str:
    return (
        f"# The {s.name} environment (format: docs/env-file.md of openenv-mcp).\n"
        f"[env]\nname = {_toml_str(s.name)}\ndescription = {_toml_str(description)}\nmax_steps = 20\n"
        'tasks = "tasks.jsonl"\nreward = "reward:score"\nsolutions = "solutions"\n\n'
        f"[[tool_servers]]\n{_tool_server_table(s)}"
    )


def _tool_server_table(s: Scaffold) -> str:
    limits = "{ call_timeout = 30, start_timeout = 60 }" if s.from_command else "{ call_timeout = 30 }"
    return f'name = "main"\nnamespace = ""\n{_tool_server_toml(s)}limits = {limits}\n'


def tool_server_spec(s: Scaffold) -> Any:
    """The wrapped tool server exactly as the env file will declare it (its boundary, variables, limits)."""
    import tomllib

    from openenv_mcp.definitions.spec import ToolServerSpec

    return ToolServerSpec.model_validate(tomllib.loads(_tool_server_table(s)))


def wrap_command(s: Scaffold, progress: Any = None) -> None:
    """For ``--from-command``: install an ``npx``/``uvx`` package into the env folder (``runtime/``), then
    start the server behind the boundary the env file declares, read its tools and try calls for the
    worked task. The folder is removed again if any of it fails."""
    import shutil

    import anyio

    from openenv_mcp.scaffold.probe import survey
    from openenv_mcp.scaffold.runtime import install, plan

    assert s.from_command
    if s.target.exists():
        raise ConfigError(f"{str(s.target)!r} already exists: choose another name or remove it")
    say = progress or (lambda text: None)
    try:
        job = plan(s.from_command)
        if job is not None:
            say(f"installing {job.spec} into {s.env_dir}/runtime ({job.manager})")
            s.env_dir.mkdir(parents=True)
            install(job, s.env_dir)
            s.command = list(job.command)
            s.installed = f"{job.manager} {job.name} {job.version}".strip()
        spec = tool_server_spec(s)
        say(f"reading the tools of {shlex.join(s.command or s.from_command)} behind {spec.isolation}")
        s.env_dir.mkdir(parents=True, exist_ok=True)
        found = anyio.run(survey, spec, s.env_dir)
    except BaseException:
        shutil.rmtree(s.target, ignore_errors=True)
        raise
    s.tools, s.worked, s.failures = found.tools, found.worked, found.failures


def _wrapped_tasks(s: Scaffold) -> tuple[str, str]:
    """tasks.jsonl (one worked task: call the first tool) and a commented stub per tool (for solutions.py)."""
    tasks, stubs = [], []
    first = _worked_tool(s)
    for tool in s.tools:
        args, bad = _stub_arguments(tool)
        if s.worked is not None and tool.name == s.worked[0]:
            args = s.worked[1]
        if bad is None:  # a tool that accepts anything: the wrong call names a tool that does not exist
            bad = {}
        row: dict[str, Any] = {
            "id": f"{tool.name}-00",
            "prompt": f"Call the {tool.name} tool with the arguments {json.dumps(args)}.",
            "data": {"tool": tool.name, "arguments": args, "wrong_arguments": bad},
        }
        if tool is first:
            if s.from_command and s.worked is None:
                row["data"]["needs_task"] = needs_task_message(s)
            tasks.append(json.dumps(row))
        desc = " ".join((tool.description or "").split())[:100]
        stubs.append(
            f"# - {tool.name}: {desc or '(no description)'}{' (the worked task)' if tool is first else ''}\n"
            f"#   input schema: {json.dumps(tool.input_schema, sort_keys=True)[:300]}\n"
            f"#   {json.dumps(row)}\n"
        )
    return "\n".join(tasks) + "\n", "".join(stubs)


def _worked_tool(s: Scaffold) -> Any:
    """The tool of the worked task: the one whose tried call succeeded, else the first."""
    if s.worked is not None:
        for tool in s.tools:
            if tool.name == s.worked[0]:
                return tool
    return s.tools[0]


def needs_task_message(s: Scaffold) -> str:
    """Why the generated task cannot be solved: no tried call of the wrapped server succeeded."""
    tried = "; ".join(s.failures[:3]) or "no call was tried"
    return (
        f"environment {s.name!r} still needs a task: no call init tried behind the "
        f"{s.isolation or 'sandbox'} boundary succeeded ({tried}). Write a task in tasks.jsonl "
        "and its reference in solutions.py (a server that writes next to its own files, read-only in "
        "the sandbox, needs its state path in the workspace: init --env VAR={workspace}/FILE)"
    )


def _runtime_row(s: Scaffold) -> str:
    if not s.installed:
        return ""
    return (
        f"| `{s.pkg}/runtime/` | {s.installed}, installed by init (versions pinned in its package.json or "
        "requirements.txt): the env runs this copy, offline; keep the package installed editable "
        "(`pip install -e`) |\n"
    )


def _wrong_for_schemaless(s: Scaffold) -> bool:
    return bool(s.tools) and _stub_arguments(_worked_tool(s))[1] is None


def create(s: Scaffold, description: str | None = None) -> Path:
    """Write the package ``s.name`` under ``s.root``; return its folder. An existing folder is an error."""
    if not _NAME.match(s.name):
        raise ConfigError(
            f"environment name {s.name!r} is not valid: use lower-case letters, digits, '-' "
            "or '_', starting with a letter (e.g. my-env)"
        )
    if s.isolation is not None and s.isolation not in ISOLATIONS:
        raise ConfigError(f"--isolation {s.isolation!r}: choose one of {', '.join(ISOLATIONS)}")
    if s.from_url and s.isolation not in (None, "remote"):
        raise ConfigError("--isolation does not apply to --from-url: a remote server owns its own isolation")
    if s.from_command and s.isolation == "inprocess":
        raise ConfigError("--isolation inprocess needs a Python object; a command runs in a process or sandbox")
    if (s.from_command or s.from_url) and not s.tools:
        raise ConfigError("the wrapped MCP server lists no tools: an environment needs at least one")
    target = s.target
    if target.exists() and not (s.from_command and s.env_dir.is_dir()):  # wrap_command made it
        raise ConfigError(f"{str(target)!r} already exists: choose another name or remove it")
    wrapped = bool(s.from_command or s.from_url)
    where = shlex.join(s.from_command) if s.from_command else s.from_url
    if s.installed:
        where = f"{where} ({s.installed}, installed in {s.pkg}/runtime/)"
    description = description or (
        f"Tools of the MCP server {where}."
        if wrapped
        else f"The {s.name} environment: reverse a text with the reverse tool."
    )
    runs = (
        "in-process (trusted Python, the fastest)"
        if s.isolation in (None, "inprocess")
        else f"behind the {s.isolation} boundary (`python -m {s.pkg}.server` over stdio)"
    )
    layout = (
        f"| (wrapped) | the tool server `{where}`: its tools are read from it at start |\n" + _runtime_row(s)
        if wrapped
        else f"| `{s.pkg}/server.py` | the tool server: a FastMCP server; add tools with `@server.tool` |\n"
    )
    values = {
        "NAME": s.name,
        "PKG": s.pkg,
        "DESCRIPTION": description.replace('"', "'"),
        "RUNS": runs,
        "LAYOUT_ROWS": layout,
    }
    kind = "wrap" if wrapped else "plain"
    files: dict[str, str] = {
        "pyproject.toml": _template("common", "pyproject.toml.tmpl"),
        "README.md": _template("common", "README.md.tmpl"),
        "Dockerfile": _template("common", "Dockerfile.tmpl"),
        ".gitignore": _template("common", "gitignore.tmpl"),
        "tests/client/test_env.py": _template("common", "test_env.py.tmpl"),
        f"{s.pkg}/__init__.py": _template("common", "__init__.py.tmpl"),
        f"{s.pkg}/reward.py": _template(kind, "reward.py.tmpl"),
        f"{s.pkg}/solutions.py": _template(kind, "solutions.py.tmpl"),
        f"{s.pkg}/env.toml": _env_toml(s, description),
    }
    if wrapped:
        tasks, stubs = _wrapped_tasks(s)
        files[f"{s.pkg}/tasks.jsonl"] = tasks
        if _wrong_for_schemaless(s):
            files[f"{s.pkg}/solutions.py"] = files[f"{s.pkg}/solutions.py"].replace(
                'task.data["tool"], "arguments": task.data["wrong_arguments"]',
                'task.data["tool"] + "_no_such_tool", "arguments": {}',
            )
        files[f"{s.pkg}/solutions.py"] += (
            "\n\n# Task stubs, one per tool of the wrapped server. To add one: write a real prompt, put the line\n"
            "# into tasks.jsonl (one JSON object a line), and make reward.py check what the task asks for.\n" + stubs
        )
    else:
        files[f"{s.pkg}/tasks.jsonl"] = _template("plain", "tasks.jsonl.tmpl")
        files[f"{s.pkg}/server.py"] = _template("plain", "server.py.tmpl")
    for rel, text in files.items():
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_render(text, values))
    return target
