"""Run a hidden test file's ``test_*`` functions against a project (plain Python, no pytest).

``python -I runner.py PROJECT TEST_FILE`` with a one-line token on stdin. The
token is read (and stdin closed) before any project code is imported, and the
report is written to a private copy of stdout as ``TOKEN{json}``; file
descriptor 1 then points at /dev/null, so prints of the code under test never
mix into the report. Each test gets :data:`PER_TEST_SECONDS`.

Report: ``{"passed": [names], "failed": [[name, reason]], "error": null | str}``.
"""

import importlib.util
import json
import os
import signal
import sys

PER_TEST_SECONDS = 5


class TestTimeout(BaseException):
    pass


def _alarm(signum, frame):
    raise TestTimeout(f"took longer than {PER_TEST_SECONDS} s")


def main() -> None:
    project, test_file = sys.argv[1], sys.argv[2]
    token = sys.stdin.readline().strip()
    sys.stdin.close()
    report_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)
    os.dup2(null, 0)
    os.chdir(project)
    sys.path.insert(0, project)
    signal.signal(signal.SIGALRM, _alarm)
    report = {"passed": [], "failed": [], "error": None}
    try:
        spec = importlib.util.spec_from_file_location("hidden_tests", test_file)
        module = importlib.util.module_from_spec(spec)
        signal.alarm(PER_TEST_SECONDS)
        try:
            spec.loader.exec_module(module)
        finally:
            signal.alarm(0)
    except BaseException as e:  # the project does not even import
        report["error"] = f"importing the tests failed: {type(e).__name__}: {e}"[:500]
    else:
        for name, fn in list(vars(module).items()):
            if not name.startswith("test_") or not callable(fn):
                continue
            signal.alarm(PER_TEST_SECONDS)
            try:
                fn()
            except BaseException as e:
                report["failed"].append([name, f"{type(e).__name__}: {e}"[:300]])
            else:
                report["passed"].append(name)
            finally:
                signal.alarm(0)
    report_out.write(token + json.dumps(report) + "\n")
    report_out.flush()


if __name__ == "__main__":
    main()
