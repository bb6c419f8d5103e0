"""The contract (openenv_mcp/types.py): the episode API every episode a trainer holds satisfies, the options
``make()`` takes, and the field docs that reach ``/schema``."""

from __future__ import annotations

import importlib.util
import inspect
from typing import Any

import pytest

import openenv_mcp
from openenv_mcp.client.env import AsyncEnv, Env
from openenv_mcp.client.remote import RemoteAsyncEnv
from openenv_mcp.core.environment import Environment
from openenv_mcp.errors import ConfigError
from openenv_mcp.serve.openapi import schemas
from openenv_mcp.testing import need
from openenv_mcp.types import MAKE_OPTIONS, AsyncEpisodeAPI, EpisodeAPI, MakeOptions, State


def _protocol_methods(protocol: type) -> dict[str, Any]:
    return {
        name: member
        for name, member in vars(protocol).items()
        if not name.startswith("_") and (inspect.isfunction(member) or isinstance(member, property))
    }


def mismatches(cls: type, protocol: type) -> list[str]:
    """How ``cls`` differs from ``protocol``: a missing member, a sync/async mix-up, other parameters."""
    wrong = []
    for name, want in _protocol_methods(protocol).items():
        got = inspect.getattr_static(cls, name, None)
        if got is None:
            wrong.append(f"{cls.__name__}.{name} is missing")
        elif isinstance(want, property):
            if not isinstance(got, property):
                wrong.append(f"{cls.__name__}.{name} is not a property")
        elif inspect.iscoroutinefunction(got) != inspect.iscoroutinefunction(want):
            wrong.append(f"{cls.__name__}.{name}: async is {inspect.iscoroutinefunction(got)}, the protocol's is not")
        else:
            params = [(p.name, p.default) for p in inspect.signature(got).parameters.values()]
            expected = [(p.name, p.default) for p in inspect.signature(want).parameters.values()]
            if params != expected:
                wrong.append(f"{cls.__name__}.{name}{inspect.signature(got)} != protocol {inspect.signature(want)}")
    return wrong


@pytest.mark.parametrize("cls", [AsyncEnv, RemoteAsyncEnv], ids=lambda c: c.__name__)
def test_the_local_and_remote_episodes_satisfy_the_async_episode_api(cls):
    assert mismatches(cls, AsyncEpisodeAPI) == []


def test_the_ray_pool_episode_satisfies_the_async_episode_api():
    need(importlib.util.find_spec("ray") is not None, "Ray is not installed (pip install 'openenv-mcp[ray]')")
    from openenv_mcp.ray.episode import PoolEpisode

    assert mismatches(PoolEpisode, AsyncEpisodeAPI) == []


def test_the_sync_env_satisfies_the_sync_episode_api_and_make_returns_one():
    assert mismatches(Env, EpisodeAPI) == []
    with openenv_mcp.make("echo") as env:
        assert isinstance(env, EpisodeAPI) and isinstance(env.unwrapped, AsyncEpisodeAPI)


def test_the_checker_sees_a_class_that_drifted_from_the_protocol():
    class Drifted:
        name = "not a property"

        def reset(self, seed=None):  # sync, and task_id dropped
            return None

    wrong = mismatches(Drifted, AsyncEpisodeAPI)
    assert "Drifted.name is not a property" in wrong
    assert any(w.startswith("Drifted.reset: async is False") for w in wrong)
    assert "Drifted.step is missing" in wrong and "Drifted.close is missing" in wrong


def test_make_options_document_every_keyword_the_environment_takes_plus_the_token():
    taken = {p.name for p in inspect.signature(Environment.__init__).parameters.values() if p.kind is p.KEYWORD_ONLY}
    assert MAKE_OPTIONS == taken | {"token"}
    assert MAKE_OPTIONS == set(MakeOptions.__annotations__)


def test_make_with_an_unknown_option_names_the_accepted_ones():
    with pytest.raises(ConfigError, match=r"unknown option\(s\) 'max_step'; it takes call_timeout, max_steps, mode"):
        openenv_mcp.make("echo", max_step=3)  # type: ignore[call-arg]


def test_a_token_for_a_local_environment_is_refused_with_what_it_is_for():
    with pytest.raises(ConfigError, match=r"token is for a served environment"):
        openenv_mcp.make("echo", token="secret")


def test_the_field_docs_of_the_contract_reach_the_schema_route():
    state = schemas()["state"]["properties"]
    assert state["step_count"]["description"] == "Tool calls made so far (``ListTools`` does not count)."
    action = schemas()["action"]["$defs"]["CallTool"]["properties"]
    assert action["name"]["description"].startswith("The tool's name as listed by the environment")
    undocumented = [name for name, field in State.model_fields.items() if not field.description]
    assert undocumented == []
