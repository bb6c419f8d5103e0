"""Reward for ``coding``: the fraction of the task's hidden tests that pass.

The agent is hostile and the reward has to run its code, so the reward treats
everything the agent could touch (the workspace, and whatever its code prints)
as untrusted input, runs that code only behind the sandbox boundary, and never
lets it decide whether a test passed. After every step:

1. **Snapshot.** The workspace is walked by directory descriptors without
   following any symlink (links are recorded as links), opening nothing but
   regular files and never blocking on one (``O_NONBLOCK``; FIFOs, sockets and
   devices are skipped), caches (``__pycache__``, ``*.pyc``) left out. It may
   hold at most :data:`QUOTA_BYTES` (files counted at their *apparent* size, so
   a sparse file counts in full), :data:`MAX_ENTRIES` entries,
   :data:`MAX_DEPTH` levels; past that the hidden tests are not run and the
   score is 0. A digest of it keys a cache, so steps that change nothing cost
   one walk. A vanished or swapped entry is skipped, never an error.
2. **Hidden tests, split.** The task's hidden test file (``data.hidden``, in
   ``hidden/`` next to this file, never in the workspace) is parsed here: its
   imports, and per ``test_*`` function its statements and assertions. Each
   assertion has an *actual* side (``fizzbuzz(15)``) and an *expected* side
   that must be a literal (``== "FizzBuzz"``, ``is False``, ``not ...``,
   ``math.isclose(..., 98.6)``). Only the actual sides go to the sandbox; the
   expected values never leave this process.
3. **Run.** The snapshot is written to a private folder (mode 0700, next to the
   workspace; files owned by the server's user and made read-only to others,
   no set-id bits) and ``runner.py`` evaluates the actual sides there, behind
   the ``sandbox`` boundary (:class:`SandboxConnection`): an unprivileged uid of
   its own, no network, no env folder, checkout or ``.git`` bound, with the limits of the env's
   sandboxed tool servers (memory, processes, CPU) and :data:`TIMEOUT` s.
   The folder is removed afterwards and every process of that uid killed.
4. **Judge.** The runner prints the values as tagged JSON. This process
   decodes them (bounded: size, depth, shape) and compares them with the
   expected values itself. The project's code runs in the runner's process
   and can forge its report, but a forged report has to carry the right
   values, which only a correct project computes; a report with more or fewer
   tests than the hidden file, or one that does not parse, scores its missing
   tests as failed. ``info`` gets ``hidden_passed``, ``hidden_tests`` and, when
   the project did not import or no report came, a short printable
   ``hidden_error`` (at most :data:`MAX_MESSAGE` characters).

score = tests passed / ``data.hidden_tests``.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import math
import os
import re
import secrets
import shutil
import stat
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, NamedTuple

import anyio

from openenv_mcp.definitions.spec import Limits, ToolServerSpec
from openenv_mcp.errors import ConfigError
from openenv_mcp.isolation import ServerContext
from openenv_mcp.isolation.boundaries.sandbox import SANDBOX_WORKSPACE, SandboxConnection
from openenv_mcp.types import Score

ENV_DIR = Path(__file__).resolve().parent
RUNNER = ENV_DIR / "runner.py"
SKIP_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".git"}
TIMEOUT = 30.0
"""Seconds the sandboxed runner may take in all."""
QUOTA_BYTES = 64 * 1024 * 1024
"""The most the reward copies out of a workspace (files at their apparent size)."""
MAX_ENTRIES = 10_000
MAX_DEPTH = 32
WALK_SECONDS = 15.0
MAX_MESSAGE = 300
_CACHE: OrderedDict[tuple[str, str], tuple[int, dict[str, Any]]] = OrderedDict()
_CACHE_SIZE = 4096
_RUNNING: dict[tuple[int, tuple[str, str]], anyio.Event] = {}
"""Checks under way, by key: a concurrent check of the same task and files waits for it and reads the cache."""


# -- the hidden test file, split into what the sandbox computes and what it must equal ---------
class HiddenTest(NamedTuple):
    name: str
    steps: tuple[tuple[str, str], ...]
    """``("exec", statement)`` or ``("eval", actual expression)``, in order."""
    checks: tuple[tuple[str, Any], ...]
    """One ``(kind, expected)`` per ``eval`` step: ``eq``, ``is``, ``not``, ``isclose``."""


class Hidden(NamedTuple):
    setup: str
    tests: tuple[HiddenTest, ...]

    def plan(self) -> str:
        """What the runner gets: imports, statements and actual expressions; no expected value."""
        return json.dumps({"setup": self.setup, "tests": [{"steps": t.steps} for t in self.tests]})


_FORMS = (
    "`assert ACTUAL == LITERAL`, `assert ACTUAL is True|False|None`, `assert not ACTUAL` "
    "or `assert math.isclose(ACTUAL, NUMBER)`"
)


def _check(node: ast.Assert, where: str) -> tuple[ast.expr, str, Any]:
    test = node.test
    try:
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            op, right = test.ops[0], test.comparators[0]
            if isinstance(op, ast.Eq):
                return test.left, "eq", ast.literal_eval(right)
            if isinstance(op, ast.Is) and isinstance(right, ast.Constant) and right.value in (True, False, None):
                return test.left, "is", right.value
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return test.operand, "not", None
        if (
            isinstance(test, ast.Call)
            and ast.unparse(test.func) == "math.isclose"
            and len(test.args) == 2
            and not test.keywords
        ):
            expected = ast.literal_eval(test.args[1])
            if isinstance(expected, (int, float)) and not isinstance(expected, bool):
                return test.args[0], "isclose", expected
    except ValueError:
        pass
    raise ConfigError(
        f"{where}: line {node.lineno}: unsupported assertion {ast.unparse(test)!r}; "
        f"a hidden test asserts {_FORMS}, so that the expected side stays with the reward"
    )


@functools.lru_cache(maxsize=64)
def parse_hidden(path: Path) -> Hidden:
    """Split a hidden test file (imports and ``test_*`` functions only) into a :class:`Hidden`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    setup, tests = [], []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            setup.append(ast.unparse(node))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a docstring
        elif (
            isinstance(node, ast.FunctionDef)
            and node.name.startswith("test_")
            and not node.decorator_list
            and not (node.args.args or node.args.posonlyargs or node.args.kwonlyargs or node.args.vararg)
        ):
            steps, checks = [], []
            for stmt in node.body:
                if isinstance(stmt, ast.Assert):
                    actual, kind, expected = _check(stmt, str(path))
                    steps.append(("eval", ast.unparse(actual)))
                    checks.append((kind, expected))
                else:
                    steps.append(("exec", ast.unparse(stmt)))
            if not checks:
                raise ConfigError(f"{path}: {node.name} asserts nothing")
            tests.append(HiddenTest(node.name, tuple(steps), tuple(checks)))
        else:
            raise ConfigError(
                f"{path}: line {node.lineno}: a hidden test file holds only imports and "
                "argument-less, undecorated test_* functions"
            )
    return Hidden("\n".join(setup), tuple(tests))


# -- the workspace, walked without trusting it -----------------------------------------------
class Refused(Exception):
    """The workspace cannot be scored as it is (too big, too deep, too slow to read)."""


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def snapshot(workspace: Path, dest: Path | None = None) -> str:
    """A digest of the workspace's files (relative paths, bytes, link targets), copied to the new
    folder ``dest`` if given. Raises :class:`Refused` past the quota, entry, depth or time limits."""
    walk = _Walk()
    root = os.open(workspace, _DIR_FLAGS)
    try:
        walk.owner = os.fstat(root).st_uid
        out = None
        if dest is not None:
            os.mkdir(dest, 0o700)
            out = os.open(dest, _DIR_FLAGS)
            os.fchmod(out, 0o755)
        walk.stack.append((root, out, b"", 0))
        while walk.stack:
            src, out, rel, depth = walk.stack.pop()
            try:
                walk.folder(src, out, rel, depth)
            finally:
                os.close(src)
                if out is not None:
                    os.close(out)
    finally:
        for src, out, _, _ in walk.stack:
            os.close(src)
            if out is not None:
                os.close(out)
    return walk.digest.hexdigest()


class _Walk:
    """One walk of :func:`snapshot`: its digest, budget and the folders still to visit."""

    def __init__(self) -> None:
        self.digest = hashlib.sha256()
        self.deadline = time.monotonic() + WALK_SECONDS
        self.total = self.entries = 0
        self.owner = -1
        self.stack: list[tuple[int, int | None, bytes, int]] = []

    def folder(self, src: int, out: int | None, rel: bytes, depth: int) -> None:
        try:
            with os.scandir(src) as listing:
                names = sorted(os.fsencode(e.name) for e in listing)
        except OSError:
            return
        for name in names:
            text = os.fsdecode(name)
            if text in SKIP_DIRS or text.endswith((".pyc", ".pyo")):
                continue
            self.entries += 1
            if self.entries > MAX_ENTRIES:
                raise Refused(f"the workspace holds more than {MAX_ENTRIES} files and folders")
            if time.monotonic() > self.deadline:
                raise Refused(f"the workspace could not be read within {WALK_SECONDS:g} s")
            try:
                self.entry(src, out, rel + name, name, depth)
            except OSError:  # vanished, swapped for a link or a FIFO, unreadable: skipped
                continue

    def entry(self, src: int, out: int | None, path: bytes, name: bytes, depth: int) -> None:
        st = os.stat(name, dir_fd=src, follow_symlinks=False)
        if stat.S_ISLNK(st.st_mode):  # kept as a link, never followed
            target = os.readlink(name, dir_fd=src)
            self.digest.update(b"L" + path + b"\0" + target + b"\0")
            if out is not None:
                os.symlink(target, name, dir_fd=out)
        elif stat.S_ISDIR(st.st_mode):
            if depth + 1 > MAX_DEPTH:
                raise Refused(f"the workspace is nested deeper than {MAX_DEPTH} folders")
            child = os.open(name, _DIR_FLAGS, dir_fd=src)
            child_out = None
            try:
                if out is not None:
                    os.mkdir(name, 0o700, dir_fd=out)
                    child_out = os.open(name, _DIR_FLAGS, dir_fd=out)
                    os.fchmod(child_out, 0o755)
            except OSError:
                os.close(child)
                raise
            self.digest.update(b"D" + path + b"\0")
            self.stack.append((child, child_out, path + b"/", depth + 1))
        elif stat.S_ISREG(st.st_mode):
            self.file(src, out, path, name)

    def file(self, src: int, out: int | None, path: bytes, name: bytes) -> None:
        """Hash (and copy) one regular file, opened without following a link or blocking."""
        fd = os.open(name, _FILE_FLAGS, dir_fd=src)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):  # swapped for a FIFO or a device since the walk saw it
                return
            if st.st_uid != self.owner and not st.st_mode & 0o004:
                return  # what the workspace's owner could not read (a hard link to a host file) stays out
            self.total += st.st_size
            if self.total > QUOTA_BYTES:
                raise Refused(
                    f"the workspace holds more than {QUOTA_BYTES // 2**20} MiB (files counted at "
                    "their apparent size): the hidden tests were not run"
                )
            self.digest.update(b"F" + path + b"\0" + st.st_size.to_bytes(8, "little"))
            copy = None
            if out is not None:
                copy = os.open(
                    name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=out
                )
                os.fchmod(copy, 0o755 if st.st_mode & 0o100 else 0o644)  # never a set-id bit
            try:
                left = st.st_size  # never more than the size it had: a growing file cannot pass the quota
                while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
                    left -= len(chunk)
                    self.digest.update(chunk)
                    view = memoryview(chunk)
                    while copy is not None and view:
                        view = view[os.write(copy, view) :]
            finally:
                if copy is not None:
                    os.close(copy)
        finally:
            os.close(fd)


def fingerprint(workspace: Path) -> str:
    """The digest :func:`snapshot` keys its cache with (no copy)."""
    return snapshot(workspace)


# -- the runner's report, decoded without trusting it ------------------------------------------
class _Bad(Exception):
    pass


class _Opaque:
    """A value the runner could not express as plain data: equal to nothing."""


def decode(value: Any, depth: int = 0) -> Any:
    """The Python value of the runner's tagged JSON (see ``runner.encode``); :class:`_Bad` otherwise."""
    if depth > 60:
        raise _Bad
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((tag, body),) = value.items()
        try:
            if tag in ("list", "tuple", "set") and isinstance(body, list):
                items = [decode(item, depth + 1) for item in body]
                return items if tag == "list" else tuple(items) if tag == "tuple" else frozenset(items)
            if tag == "dict" and isinstance(body, list):
                pairs = [pair for pair in body if isinstance(pair, list) and len(pair) == 2]
                if len(pairs) != len(body):
                    raise _Bad
                return {decode(k, depth + 1): decode(v, depth + 1) for k, v in pairs}
            if tag == "bytes" and isinstance(body, str):
                return bytes.fromhex(body)
            if tag == "float" and body in ("nan", "inf", "-inf"):
                return float(body)
            if tag == "other":
                return _Opaque()
        except (TypeError, ValueError) as e:  # unhashable keys, bad hex
            raise _Bad from e
    raise _Bad


def holds(kind: str, expected: Any, actual: Any) -> bool:
    """Whether one check holds for a decoded ``actual`` value (compared here, never in the sandbox)."""
    if isinstance(actual, _Opaque):
        return False
    try:
        if kind == "eq":
            return bool(actual == expected)
        if kind == "is":
            return actual is expected
        if kind == "not":
            return not actual
        if kind == "isclose":
            return isinstance(actual, (int, float)) and not isinstance(actual, bool) and math.isclose(actual, expected)
    except (TypeError, ValueError, OverflowError, RecursionError):
        return False
    return False


def judge(hidden: Hidden, out: str) -> tuple[int, str | None] | None:
    """(tests passed, import error or None) from the runner's stdout, or None when it holds no
    readable report. Each hidden test is counted at most once, whatever the report claims."""
    lines = [line for line in out.splitlines() if line.strip()]
    try:
        report = json.loads(lines[-1]) if lines else None
    except (ValueError, RecursionError):
        return None
    if not isinstance(report, dict) or not isinstance(report.get("tests"), list):
        return None
    if report.get("error") is not None:
        return 0, clean(str(report["error"]))
    results = report["tests"]
    passed = 0
    for i, test in enumerate(hidden.tests):
        got = results[i] if i < len(results) else None
        if not isinstance(got, dict) or not isinstance(got.get("values"), list):
            continue
        if len(got["values"]) != len(test.checks):
            continue
        try:
            values = [decode(v) for v in got["values"]]
        except (_Bad, RecursionError):
            continue
        if all(holds(kind, expected, v) for (kind, expected), v in zip(test.checks, values, strict=True)):
            passed += 1
    return passed, None


def clean(text: str) -> str:
    """Agent-controlled text made fit for ``info``: printable, one line, at most :data:`MAX_MESSAGE`."""
    text = re.sub(r"[^\x20-\x7e]", "?", text[: MAX_MESSAGE * 4])
    return text[:MAX_MESSAGE]


# -- running the actual sides in the sandbox ------------------------------------------------------
def _limits(episode: Any) -> Limits:
    """The limits of the env's sandboxed code runners (the ``python`` server first)."""
    specs = [c.spec for c in getattr(episode, "connections", [])]
    for spec in sorted(specs, key=lambda s: s.name != "python"):
        if spec.isolation == "sandbox":
            return spec.limits
    return Limits()


def runner_connection(argv: list[str], project: Path, limits: Limits) -> SandboxConnection:
    """The sandbox the runner runs ``argv`` in, the folder ``project`` at ``/workspace``: a uid of its own,
    killed whole on close; this env folder (hidden tests, tasks, solutions) is not bound, nor the checkout."""
    spec = ToolServerSpec(
        name="coding-reward", command=argv, isolation="sandbox", hide=[".", "../../.git"], limits=limits
    )
    ctx = ServerContext(episode_id=f"coding-reward-{secrets.token_hex(8)}", workspace=project)
    return SandboxConnection(spec, ctx, base_dir=ENV_DIR)


async def run_hidden(project: Path, hidden: Hidden, limits: Limits) -> tuple[int, str | None, bool]:
    """Evaluate ``hidden`` against the folder ``project`` in the sandbox:
    (tests passed, error, whether that is a verdict on the project rather than a failed run)."""
    argv = [
        sys.executable,
        "-I",
        "-S",
        "-B",
        "-c",
        RUNNER.read_text(encoding="utf-8"),
        hidden.plan(),
        SANDBOX_WORKSPACE,
    ]
    conn = runner_connection(argv, project, limits)
    try:
        with anyio.move_on_after(TIMEOUT) as scope:
            code, out, err = await conn.run_command(argv, {}, TIMEOUT + 10)
    finally:
        await conn.close()
    if scope.cancelled_caught:
        return 0, f"the hidden tests took longer than {TIMEOUT:g} s", False
    verdict = judge(hidden, out)
    if verdict is None:
        tail = err.strip().splitlines()[-1] if err.strip() else "nothing on stderr"
        return 0, clean(f"the test runner sent no readable report (exit code {code}): {tail}"), False
    return verdict[0], verdict[1], True


async def evaluate(
    data: dict[str, Any], workspace: Path, task_id: str = "", limits: Limits | None = None
) -> tuple[int, dict[str, Any]]:
    """(tests passed, info) for a task's ``data`` against ``workspace`` (cached by snapshot digest)."""
    hidden = parse_hidden(ENV_DIR / data["hidden"])
    total = data["hidden_tests"]
    if len(hidden.tests) != total:
        raise ConfigError(f"{data['hidden']} has {len(hidden.tests)} test functions, the task says {total}")
    info: dict[str, Any] = {"hidden_passed": 0, "hidden_tests": total}
    task = task_id or data["hidden"]
    try:
        key = (task, await anyio.to_thread.run_sync(snapshot, workspace))
    except Refused as e:
        return 0, {**info, "hidden_error": str(e)}
    running = (threading.get_ident(), key)  # an event belongs to its loop: one loop per thread
    while running in _RUNNING:  # the same task and files are being checked (fresh episodes at once): share it
        await _RUNNING[running].wait()
        if key in _CACHE:
            break
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    done = _RUNNING[running] = anyio.Event()
    tmp = Path(tempfile.mkdtemp(prefix="openenv-coding-check-", dir=workspace.parent))  # 0700
    try:
        project = tmp / "project"
        try:  # the key is the digest of exactly what was copied (the workspace may change meanwhile)
            key = (task, await anyio.to_thread.run_sync(snapshot, workspace, project))
        except Refused as e:
            return 0, {**info, "hidden_error": str(e)}
        passed, error, verdict = await run_hidden(project, hidden, limits or Limits())
    finally:
        try:
            await anyio.to_thread.run_sync(shutil.rmtree, tmp, True)
        finally:
            del _RUNNING[running]
            done.set()
    info["hidden_passed"] = passed
    if error:
        info["hidden_error"] = error
    if verdict:
        _CACHE[key] = (passed, info)
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return passed, info


async def score(ctx: Any) -> Score:
    data = ctx.task.data
    passed, info = await evaluate(data, ctx.workspace, ctx.task.id, _limits(ctx.episode))
    return Score(score=min(passed, data["hidden_tests"]) / data["hidden_tests"], info=dict(info))
