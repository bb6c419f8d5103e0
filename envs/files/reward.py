"""Reward for ``files``: checks of the workspace's end state, declared per task.

A task's ``data`` holds

* ``goals``: a list of goals, each a list of checks that must *all* hold;
* ``keep``: guard checks (things the agent must not break).

score = (goals fully met) / (number of goals), and 0 if any guard fails.

The workspace is the agent's, so every check treats it as untrusted input and
never raises on it: files are opened without following a link at any component
and without blocking (only regular files of at most :data:`MAX_READ` bytes are
read; anything else counts as absent), JSON nested too deep or a folder tree
too deep for a glob makes that check fail, and a glob stops counting past
what it must match.
So partial credit comes per goal (e.g. two of three files fixed scores 2/3),
1.0 only when every goal holds and nothing guarded was damaged.

Checks (each a dict; ``file``/paths are relative to the workspace):

==========================================  ======================================================
``{"absent": P}``                           nothing exists at P
``{"file": P, "equals": TEXT}``             P's text equals TEXT (trailing whitespace ignored)
``{"file": P, "same_as_seed": S}``          P's bytes equal the seed file S of the task
``{"unchanged": P}``                        P's bytes equal the seed's P
``{"file": P, "answer": TEXT}``             P's text, stripped, equals TEXT (lines stripped too)
``{"file": P, "json": VALUE}``              P parses as JSON equal to VALUE
``{"file": P, "json_at": "a.b", "value": V}``  P parses as JSON and ``P[a][b] == V`` (type included)
``{"file": P, "ini": {SEC: {KEY: VAL}}}``   P parses as INI and every listed key has that value
``{"file": P, "lines_include": [L, ...]}``  every L is one of P's stripped lines
``{"glob": PATTERN, "count": N}``           exactly N paths match PATTERN
==========================================  ======================================================
"""

from __future__ import annotations

import configparser
import itertools
import json
import os
import stat
from pathlib import Path
from typing import Any

from openenv_mcp.types import Score

ENV_DIR = Path(__file__).resolve().parent
MAX_READ = 8 * 1024 * 1024
"""Largest graded file read; a larger one fails its checks."""


def _read(workspace: Path, rel: str) -> bytes | None:
    """The bytes of the regular file ``rel`` (no link followed, nothing blocking), or None."""
    parts = [p for p in Path(rel).parts if p not in ("", ".")]
    if not parts or ".." in parts or Path(rel).is_absolute():
        return None
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(workspace, flags | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            child = os.open(part, flags if last else flags | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_READ:
            return None
        chunks, left = [], st.st_size
        while left > 0 and (chunk := os.read(fd, left)):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _text(workspace: Path, rel: str) -> str | None:
    raw = _read(workspace, rel)
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _same_type_equal(a: Any, b: Any) -> bool:
    # JSON true must not pass for 1, nor "8081" for 8081.
    if type(a) is not type(b) and not (
        isinstance(a, (int, float))
        and isinstance(b, (int, float))
        and not isinstance(a, bool)
        and not isinstance(b, bool)
    ):
        return False
    return a == b


def check(item: dict[str, Any], workspace: Path, seed: Path) -> bool:
    """Whether one check holds in ``workspace`` (``seed``: the task's seed folder)."""
    if "absent" in item:
        return not (workspace / item["absent"]).exists() and not (workspace / item["absent"]).is_symlink()
    if "unchanged" in item:
        now = _read(workspace, item["unchanged"])
        return now is not None and now == (seed / item["unchanged"]).read_bytes()
    if "glob" in item:
        try:  # stop past one more match than needed: an agent's huge tree costs no more than that
            found = sum(1 for _ in itertools.islice(workspace.glob(item["glob"]), item["count"] + 1))
        except (OSError, RecursionError):
            return False
        return found == item["count"]
    rel = item["file"]
    if "same_as_seed" in item:
        now = _read(workspace, rel)
        return now is not None and now == (seed / item["same_as_seed"]).read_bytes()
    text = _text(workspace, rel)
    if text is None:
        return False
    if "equals" in item:
        return text.rstrip() == item["equals"].rstrip()
    if "answer" in item:
        got = "\n".join(line.strip() for line in text.strip().splitlines())
        return got == item["answer"]
    if "lines_include" in item:
        lines = {line.strip() for line in text.splitlines()}
        return all(want in lines for want in item["lines_include"])
    if "ini" in item:
        return _ini_holds(text, item["ini"])
    if "json" in item or "json_at" in item:
        return _json_holds(text, item)
    raise ValueError(f"unknown check {item!r}")


def _ini_holds(text: str, want: dict[str, dict[str, str]]) -> bool:
    """Whether ``text`` parses as INI with every ``{section: {key: value}}`` of ``want``."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return False
    return all(
        parser.has_option(sec, key) and parser.get(sec, key) == val
        for sec, keys in want.items()
        for key, val in keys.items()
    )


def _json_holds(text: str, item: dict[str, Any]) -> bool:
    """A ``json`` check (the whole document equals) or a ``json_at`` one (the value at a dotted path,
    of the same JSON type)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
        return False
    if "json" in item:
        return value == item["json"]
    for part in item["json_at"].split("."):
        if not isinstance(value, dict) or part not in value:
            return False
        value = value[part]
    return _same_type_equal(value, item["value"])


_KINDS = ("equals", "same_as_seed", "answer", "json", "json_at", "ini", "lines_include")


def describe(item: dict[str, Any]) -> str:
    """A check named by its kind and path, never by what it expects (``info`` shows it)."""
    for kind in ("absent", "unchanged", "glob"):
        if kind in item:
            return f"{kind} {item[kind]}"
    kind = next((k for k in _KINDS if k in item), "?")
    return f"{item.get('file')} ({kind} {item[kind]})" if kind == "json_at" else f"{item.get('file')} ({kind})"


def evaluate(data: dict[str, Any], workspace: Path, seed: Path) -> tuple[float, dict[str, Any]]:
    """(score, info) for a task's ``data`` against a workspace; ``info`` names the first failing check of
    each goal not met (``unmet``) and each guard broken (``broken``)."""
    goals = data["goals"]
    failing = [next((c for c in goal if not check(c, workspace, seed)), None) for goal in goals]
    broken = [c for c in data.get("keep", []) if not check(c, workspace, seed)]
    met = sum(c is None for c in failing)
    score = 0.0 if broken else met / len(goals)
    info: dict[str, Any] = {"goals_met": met, "goals": len(goals)}
    if met < len(goals):
        info["unmet"] = [f"goal {i}: {describe(c)}" for i, c in enumerate(failing, 1) if c is not None]
    if broken:
        info["guards_broken"] = len(broken)
        info["broken"] = [describe(c) for c in broken]
    return score, info


def score(ctx) -> Score:
    seed = ENV_DIR / ctx.task.workspace
    value, info = evaluate(ctx.task.data, ctx.workspace, seed)
    return Score(score=value, info=info)
