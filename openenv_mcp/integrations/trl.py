"""Train with TRL: an ``environment_factory`` for ``GRPOTrainer`` (TRL >= 1.16).

    from trl import GRPOConfig, GRPOTrainer
    from openenv_mcp.integrations.trl import environment_factory

    with environment_factory("files", repeat=4) as factory:
        trainer = GRPOTrainer(model=..., args=GRPOConfig(num_generations=4, max_steps=100, ...),
                              environment_factory=factory, callbacks=[factory.callback()])
        trainer.train()

``env`` is a built-in name, an env file (or its folder) or a server URL, as for
:func:`openenv_mcp.make`; other keyword arguments go to ``make``.

TRL calls the factory once per concurrent rollout and keeps the instances,
calling ``reset(**row)`` before each rollout, the tool methods while the model
calls tools, and ``get_reward()`` once the rollout is complete. Each instance
holds one episode:

* its **tools** are methods generated from the episode's MCP tools, one
  function per tool on a class generated for the environment, so TRL's
  ``inspect.getmembers(type(env), inspect.isfunction)`` finds exactly the tools
  plus ``reset`` and ``get_reward``. Their annotations, defaults and docstrings
  make transformers' ``get_json_schema`` derive each tool's ``inputSchema``
  (the normal form: :mod:`openenv_mcp.integrations.toolschema`; checked when
  the class is generated). A call returns the MCP result's text (an error
  result reads ``Error: ...``; see :func:`~openenv_mcp.integrations.text.result_text`);
  arguments go to the environment exactly as the model wrote them, so its
  schema validation answers wrong ones;
* ``reset(**kwargs)`` ends the previous episode, starts a fresh one and returns
  the task prompt (TRL appends it to the prompt). A dataset row's ``task_id``
  and ``seed`` columns pick the task; other columns are ignored;
* ``get_reward()`` returns the episode's cumulative reward (its score).

Groups for GRPO: with ``repeat=K`` (set it to ``num_generations``) every K
consecutive resets without a ``task_id`` share one task, drawn by the first
reset of the group, each with its own seed. TRL resets the rollouts of a
batch in order and places a prompt's ``num_generations`` copies next to each
other, so each GRPO group is K episodes of one task (one training process;
with several, give the dataset a ``task_id`` column instead).

Episodes end when the next ``reset()`` starts, when :meth:`EnvironmentFactory.close`
runs (``factory.callback()`` does it when training ends, so does leaving the
``with`` block), or when TRL drops the instance (a weakref finalizer, which also
runs at interpreter exit). TRL never closes environments itself.
"""

from __future__ import annotations

import inspect
import random
import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Any, Unpack

from openenv_mcp.client.registry import make
from openenv_mcp.core.codeact import RUN_CODE, RUN_CODE_TOOL
from openenv_mcp.errors import ConfigError, EpisodeEnded, ResetNeeded, ToolSchemaError
from openenv_mcp.integrations.text import result_text
from openenv_mcp.integrations.toolschema import (
    NO_DEFAULT,
    Unsupported,
    check_parameter_name,
    collapse,
    normal_form,
    python_type,
)
from openenv_mcp.types import CallTool, MakeOptions, RunCode, State

__all__ = ["EnvironmentFactory", "ToolSchemaError", "environment_factory", "tool_function"]

_RESERVED = {"reset", "get_reward"}


def _docstring(description: str, params: list[tuple[str, str]]) -> str:
    lines = [description.strip()]
    if params:
        lines += ["", "Args:"] + [f"    {name}: {desc}".rstrip() for name, desc in params]
    return "\n".join(lines)


def tool_function(tool: Any, *, approximate: bool = False) -> Callable[..., str]:
    """A function ``(self, **arguments) -> str`` for one MCP tool, for a class whose ``self`` has ``_call``.

    Its ``__name__``, ``__signature__``, ``__annotations__`` and ``__doc__`` are
    what transformers' ``get_json_schema`` reads. Raises :class:`Unsupported`
    when the tool cannot be expressed; with ``approximate=True`` inexpressible
    parameter types become ``Any`` and missing descriptions the parameter's
    name instead (other problems still raise).
    """
    name, schema = tool.name, tool.input_schema or {}
    if name.startswith("_") or name in _RESERVED:
        raise Unsupported(f"the name {name!r} is reserved by TRL (underscore names, reset, get_reward)")
    if schema.get("type", "object") != "object":
        raise Unsupported("its inputSchema is not an object")
    required = set(schema.get("required") or [])
    props: dict[str, Any] = schema.get("properties") or {}
    params, annotations, docs, undocumented = [], {}, [], []
    for pname, prop in props.items():
        check_parameter_name(pname)
        if pname == "self":
            raise Unsupported("a parameter named 'self' (the receiver's name, which TRL's schema derivation skips)")
        try:
            hint = python_type(prop, schema)
        except Unsupported as e:
            if not approximate:
                raise Unsupported(f"parameter {pname!r}: {e}") from None
            hint = Any
        annotations[pname] = hint
        default = inspect.Parameter.empty if pname in required else prop.get("default", NO_DEFAULT)
        params.append(inspect.Parameter(pname, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint))
        desc = collapse(prop.get("description") if isinstance(prop, dict) else None)
        (docs if desc else undocumented).append((pname, desc))
    if len(undocumented) > 1:  # TRL's docstring parser reads an empty description only on the last line
        if not approximate:
            names = ", ".join(n for n, _ in undocumented)
            raise Unsupported(f"parameters {names} have no description (TRL needs one per parameter but the last)")
        docs += [(n, n) for n, _ in undocumented[:-1]]
        undocumented = undocumented[-1:]
    description = tool.description or ""
    if not description.strip() and not params:
        if not approximate:
            raise Unsupported("it has neither a description nor parameters (TRL needs a docstring)")
        description = name
    # Parameters: required first (Python wants no default before a default-less one; keyword-only allows any
    # order, but keep the schema's order within each group).
    ordered = [p for p in params if p.default is inspect.Parameter.empty] + [
        p for p in params if p.default is not inspect.Parameter.empty
    ]

    def call(*args: Any, **arguments: Any) -> str:  # the receiver is positional only: any keyword is an argument
        return args[0]._call(name, arguments)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = _docstring(description, docs + undocumented)
    call.__annotations__ = {**annotations, "return": str}
    call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD), *ordered], return_annotation=str
    )
    return call


def derived_normal_form(function: Callable[..., Any]) -> dict[str, Any]:
    """The normal form of the schema TRL derives from ``function`` (via transformers' ``get_json_schema``)."""
    from transformers.utils.chat_template_utils import get_json_schema

    spec = get_json_schema(function)["function"]
    defaults = {
        n: p.default
        for n, p in inspect.signature(function).parameters.items()
        if n != "self" and p.default is not inspect.Parameter.empty
    }
    return normal_form(spec.get("description"), spec["parameters"], defaults)


def _check(tool: Any, function: Callable[..., Any]) -> None:
    expected = normal_form(tool.description, tool.input_schema or {})
    try:
        got = derived_normal_form(function)
    except Exception as e:  # transformers' own parsing errors
        raise Unsupported(f"transformers cannot derive its schema: {e}") from None
    if got != expected:
        diff = [k for k in expected if expected[k] != got.get(k)]
        raise Unsupported(f"TRL would render a different schema ({', '.join(diff)} differ)")


def tool_class(env_name: str, tools: list[Any], *, strict: bool = True) -> type:
    """The class TRL sees for ``env_name``: one generated function per tool, plus ``reset`` and ``get_reward``."""
    functions: dict[str, Callable[..., Any]] = {}
    problems: list[str] = []
    for tool in tools:
        try:
            function = tool_function(tool)
            _check(tool, function)
        except Unsupported as e:
            problems.append(f"{tool.name}: {e}")
            if strict:
                continue
            try:
                function = tool_function(tool, approximate=True)
            except Unsupported:
                continue  # not callable from Python at all: left out
        functions[tool.name] = function
    if problems and strict:
        raise ToolSchemaError(
            f"environment {env_name!r}: {len(problems)} tool(s) cannot be given to TRL with their exact schema: "
            + "; ".join(problems)
            + ". Pass strict=False to offer them with an approximate schema (inexpressible types as any value, "
            "the environment still validating every call) and leave out those that cannot be called at all"
        )
    if problems:
        warnings.warn(
            f"environment {env_name!r}: tools offered to TRL with an approximate schema or left out: "
            + "; ".join(problems),
            stacklevel=3,
        )
    cls_name = "".join(part.capitalize() for part in _identifier(env_name).split("_")) + "Tools"
    return type(cls_name, (_EpisodeTools,), {"__module__": __name__, **functions})


def _identifier(name: str) -> str:
    out = "".join(c if c.isalnum() else "_" for c in name).strip("_") or "env"
    return out if not out[0].isdigit() else f"env_{out}"


def _close_env(env: Any) -> None:
    try:
        env.close()
    except Exception:  # at interpreter exit the loop thread may be gone already
        pass


class _EpisodeTools:
    """Base of the generated classes: one episode of one environment (tool methods added per environment)."""

    def __init__(self, factory: EnvironmentFactory) -> None:
        self._factory = factory
        self._env = factory._make()
        self._finalizer = weakref.finalize(self, _close_env, self._env)

    def reset(self, **kwargs: Any) -> str:
        """Start a fresh episode (the previous one ends) and return its task prompt."""
        observation = self._factory._reset(self._env, kwargs)
        return observation.task.prompt if observation.task is not None else ""

    def get_reward(self) -> float:
        """The episode's reward: its cumulative reward so far (the reward function's score)."""
        return float(self._env.state().cumulative_reward)

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        codeact = self._factory.action_style == "codeact" and name == RUN_CODE
        action = RunCode(code=arguments.get("code", "")) if codeact else CallTool(name=name, arguments=arguments)
        try:
            observation = self._env.step(action)
        except EpisodeEnded as e:
            return f"Error: {e}"
        assert observation.result is not None
        return result_text(observation.result)

    def _close(self) -> None:
        self._finalizer()


class EnvironmentFactory:
    """The callable TRL's ``environment_factory`` takes; see the module documentation."""

    def __init__(
        self,
        env: Any,
        *,
        repeat: int = 1,
        seed: int | None = None,
        strict: bool = True,
        action_style: str = "tools",
        **make_kwargs: Unpack[MakeOptions],
    ) -> None:
        if repeat < 1:
            raise ConfigError(f"repeat must be at least 1, got {repeat}")
        if action_style not in ("tools", "codeact"):
            raise ConfigError(f"action_style must be 'tools' or 'codeact', not {action_style!r}")
        self.action_style = action_style
        self.env, self.repeat, self.strict, self.make_kwargs = env, repeat, strict, make_kwargs
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._resets = 0
        self._group: tuple[str, set[int]] | None = None
        self._instances: weakref.WeakSet[_EpisodeTools] = weakref.WeakSet()
        self._cls: type | None = None

    def _make(self) -> Any:
        return make(self.env, **self.make_kwargs)

    @property
    def tool_class(self) -> type:
        """The generated class (its tools are read from one probe episode, closed right away)."""
        if self._cls is None:
            probe = self._make()
            try:
                observation = probe.reset(seed=0)
                name = probe.name
            finally:
                probe.close()
            tools = list(observation.tools or [])
            if self.action_style == "codeact":  # one tool, run_code; its description lists the functions
                tools = [codeact_tool(tools)]
            self._cls = tool_class(str(name), tools, strict=self.strict)
        return self._cls

    def __call__(self) -> Any:
        instance = self.tool_class(self)
        self._instances.add(instance)
        return instance

    def _reset(self, env: Any, kwargs: dict[str, Any]) -> Any:
        seed, task_id = kwargs.get("seed"), kwargs.get("task_id")
        if task_id is not None or self.repeat == 1:
            if seed is None:
                with self._lock:
                    seed = self._rng.randrange(2**31)
            return env.reset(seed=seed, task_id=task_id)
        with self._lock:  # one group at a time: its first reset draws the task the others repeat
            leader = self._resets % self.repeat == 0 or self._group is None
            self._resets += 1
            used = set() if leader else self._group[1]  # type: ignore[index]
            if seed is None:
                seed = self._rng.randrange(2**31)
                while seed in used:
                    seed = self._rng.randrange(2**31)
            if leader:
                observation = env.reset(seed=seed)
                self._group = (observation.task.id, {seed})
                return observation
            group_task, used = self._group  # type: ignore[misc]
            used.add(seed)
            return env.reset(seed=seed, task_id=group_task)

    def state(self, instance: Any) -> State | None:
        """The :class:`~openenv_mcp.types.State` of ``instance``'s episode (``None`` when it holds none)."""
        try:
            return instance._env.state()
        except ResetNeeded:
            return None

    def open_episodes(self) -> int:
        """How many of this factory's instances hold a running episode now."""
        return sum(self.state(instance) is not None for instance in list(self._instances))

    def close(self) -> None:
        """End every episode of every instance made so far (they can be reset again later)."""
        for instance in list(self._instances):
            instance._env.close()

    def callback(self) -> Any:
        """A ``transformers.TrainerCallback`` that calls :meth:`close` when training ends."""
        from transformers import TrainerCallback

        factory = self

        class CloseEpisodes(TrainerCallback):
            def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                factory.close()

        return CloseEpisodes()

    def __enter__(self) -> EnvironmentFactory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def environment_factory(
    env: Any,
    *,
    repeat: int = 1,
    seed: int | None = None,
    strict: bool = True,
    action_style: str = "tools",
    **make_kwargs: Unpack[MakeOptions],
) -> EnvironmentFactory:
    """A factory for ``GRPOTrainer(environment_factory=...)``.

    Args:
        env: a built-in name, an env file or folder, or a server URL (``http://HOST:PORT``).
        repeat: K consecutive resets share one task (GRPO groups; set it to ``num_generations``).
        seed: seeds the draw of episode seeds (reproducible task order).
        strict: raise :class:`ToolSchemaError` for tools whose schema TRL cannot be given exactly
            (``False``: offer them with an approximate schema, with a warning).
        action_style: ``tools`` (one method per tool) or ``codeact`` (one method, ``run_code(code)``, each
            call a ``RunCode``; its description lists the tools as Python functions; see docs/codeact.md).
        **make_kwargs: passed to :func:`openenv_mcp.make` (``max_steps``, ``call_timeout``, ``workdir``, ``token``...).
    """
    return EnvironmentFactory(env, repeat=repeat, seed=seed, strict=strict, action_style=action_style, **make_kwargs)


def codeact_tool(tools: list[Any]) -> Any:
    """The ``run_code`` tool offered to TRL: its description names every tool's Python signature."""
    from openenv_mcp.isolation.codeact.coderunner import make_function

    lines = []
    for tool in tools:
        fn = make_function(tool.model_dump(mode="json", by_alias=True, include={"name", "description", "input_schema"}))
        summary = collapse((tool.description or "").strip().splitlines()[0] if tool.description else "")
        lines.append(f"{fn.__name__}{fn.__signature__}" + (f": {summary}" if summary else ""))
    description = (RUN_CODE_TOOL.description or "") + " The functions: " + "; ".join(lines) + "."
    return RUN_CODE_TOOL.model_copy(update={"description": description})
