"""The error tree: every error class of the package lives in openenv_mcp/errors.py, the docstring's drawing is
the real hierarchy, and every error is rebuilt from its wire code as its own class."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

import openenv_mcp
from openenv_mcp import errors
from openenv_mcp.errors import ERRORS, OpenEnvError, from_wire


def _all_subclasses(cls: type) -> set[type]:
    out: set[type] = set()
    for sub in cls.__subclasses__():
        out |= {sub} | _all_subclasses(sub)
    return out


def _import_every_module() -> list[str]:
    """Import every module of the package that imports here (an optional extra may be missing)."""
    skipped = []
    for info in pkgutil.walk_packages(openenv_mcp.__path__, "openenv_mcp."):
        name = info.name
        if name.endswith("__main__") or name.startswith(("openenv_mcp.envs.", "openenv_mcp.tool_servers.")):
            continue  # programs, and the environments' and tool servers' own code (no framework errors)
        try:
            importlib.import_module(name)
        except ImportError:
            skipped.append(name)
    return skipped


def test_every_error_class_of_the_package_is_defined_in_errors_py():
    _import_every_module()
    elsewhere = sorted(
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in _all_subclasses(OpenEnvError)
        if cls.__module__ != "openenv_mcp.errors"
        and not cls.__name__.startswith("_")
        and cls.__module__.startswith("openenv_mcp.")
    )
    assert not elsewhere, f"error classes outside openenv_mcp/errors.py: {elsewhere}"


def test_the_docstrings_tree_is_the_class_hierarchy():
    drawn: dict[str, str] = {}
    parents: list[str] = []
    for line in (errors.__doc__ or "").splitlines():
        m = re.match(r"^    ((?:[│ ]   )*)(?:[├└]── )?([A-Z]\w+)(?: |$)", line)
        if not m or not (m.group(2) == "OpenEnvError" or "──" in line):
            continue
        depth = len(m.group(1)) // 4 + (1 if "──" in line else 0)
        del parents[depth:]
        if parents:
            drawn[m.group(2)] = parents[-1]
        parents.append(m.group(2))
    actual = {cls.__name__: cls.__bases__[0].__name__ for cls in ERRORS.values() if cls is not OpenEnvError}
    assert drawn == actual


def test_every_code_is_one_class_and_every_class_has_its_own_code():
    tree = {OpenEnvError} | {c for c in _all_subclasses(OpenEnvError) if c.__module__ == "openenv_mcp.errors"}
    assert set(ERRORS.values()) == tree
    assert len({cls.code for cls in tree}) == len(tree), "two classes share a code"
    assert all(name in errors.__all__ for name in (cls.__name__ for cls in tree))


@pytest.mark.parametrize("code", sorted(ERRORS))
def test_an_error_is_rebuilt_from_its_wire_code_as_its_class(code):
    err = from_wire(code, "what went wrong")
    assert type(err) is ERRORS[code]
    assert str(err) == "what went wrong"
    assert err.code == code


def test_an_unknown_code_from_a_newer_server_is_an_openenv_error_that_keeps_the_code():
    err = from_wire("quota_exceeded", "over quota")
    assert type(err) is OpenEnvError
    assert (err.code, str(err)) == ("quota_exceeded", "over quota")
    assert OpenEnvError.code == "openenv_error"  # the class's code is not changed by one instance


def test_the_catchable_bases():
    assert issubclass(errors.ResetNeeded, errors.UsageError)
    assert issubclass(errors.UnknownEpisode, errors.UsageError)
    assert issubclass(errors.ToolSchemaError, errors.ConfigError)
    assert issubclass(errors.BadRequest, errors.RequestError)
    assert issubclass(errors.EpisodeLost, errors.ServiceError)
    assert issubclass(errors.ConformanceError, AssertionError)  # assert_conformant fails a pytest test
