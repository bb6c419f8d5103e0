"""Evaluate the *actual* side of a hidden test file's checks against a project (plain Python).

``python -I -S -B -c "$(cat runner.py)" PLAN PROJECT``, inside the reward's sandbox, as an
unprivileged uid. ``PLAN`` (JSON, written by ``reward.py``) holds what the
project must compute and nothing of what it should be: the hidden test file's
imports, and per test its statements and the source of each assertion's
*actual* expression (``fizzbuzz(15)``), as JSON; the expected values never
leave the reward. This runner imports the project, evaluates every expression and
prints one JSON line on stdout::

    {"error": null | str, "tests": [{"values": [VALUE, ...]} | {"error": str}, ...]}

``VALUE`` is plain tagged JSON (see :func:`encode`); the reward decodes it and
compares it with the expected value itself. The project's code runs in this
process and can rewrite anything here, report included: it gains nothing by
that, because a forged report still has to carry the right values, which only
a correct project computes. Each test gets :data:`PER_TEST_SECONDS`.
"""

import builtins
import json
import math
import os
import signal
import sys

PER_TEST_SECONDS = 5
MAX_DEPTH = 40
MAX_VALUE_CHARS = 4096
MAX_MESSAGE = 300


class TestTimeout(BaseException):
    pass


def _alarm(signum, frame):
    raise TestTimeout(f"took longer than {PER_TEST_SECONDS} s")


def encode(value, depth=0):
    """A plain, tagged JSON form of ``value``: ``null``/bools/ints/floats/strings as themselves
    (non-finite floats as ``{"float": "nan"}``), and ``{"list"|"tuple"|"set": [...]}``,
    ``{"dict": [[k, v], ...]}``, ``{"bytes": hex}``; anything else ``{"other": type name}``."""
    if depth > MAX_DEPTH:
        return {"other": "too deep"}
    if value is None or value is True or value is False:
        return value
    if isinstance(value, int):
        return int.__index__(value)
    if isinstance(value, float):
        number = float.__float__(value)
        return number if math.isfinite(number) else {"float": repr(number)}
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": bytes(value).hex()}
    if isinstance(value, dict):
        return {"dict": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in dict.items(value)]}
    for kind, name in ((list, "list"), (tuple, "tuple"), (set, "set"), (frozenset, "set")):
        if isinstance(value, kind):
            return {name: [encode(item, depth + 1) for item in kind.__iter__(value)]}
    return {"other": type(value).__name__[:50]}


def _message(e):
    return f"{type(e).__name__}: {e}"[:MAX_MESSAGE]


def _value(code, namespace):
    signal.alarm(PER_TEST_SECONDS)
    try:
        value = encode(eval(code, namespace))
    finally:
        signal.alarm(0)
    if len(json.dumps(value)) > MAX_VALUE_CHARS:
        return {"other": "too large"}
    return value


def run(plan):
    report = {"error": None, "tests": []}
    module = {"__name__": "hidden_tests", "__builtins__": builtins}
    try:
        signal.alarm(PER_TEST_SECONDS)
        try:
            exec(compile(plan["setup"], "<hidden tests>", "exec"), module)
        finally:
            signal.alarm(0)
    except BaseException as e:  # the project does not even import
        report["error"] = "importing the tests failed: " + _message(e)
        return report
    for test in plan["tests"]:
        namespace = dict(module)
        values = []
        try:
            for kind, code in test["steps"]:
                if kind == "exec":
                    signal.alarm(PER_TEST_SECONDS)
                    try:
                        exec(compile(code, "<hidden test>", "exec"), namespace)
                    finally:
                        signal.alarm(0)
                else:
                    values.append(_value(compile(code, "<hidden test>", "eval"), namespace))
        except BaseException as e:
            report["tests"].append({"error": _message(e)})
        else:
            report["tests"].append({"values": values})
    return report


def main():
    plan, project = json.loads(sys.argv[1]), sys.argv[2]
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)  # what the project prints goes nowhere
    os.chdir(project)
    sys.path.insert(0, project)
    signal.signal(signal.SIGALRM, _alarm)
    report = run(plan)
    out.write(json.dumps(report) + "\n")
    out.flush()


if __name__ == "__main__":
    main()
