"""Scripted trajectories for ``coding``: ``reference`` fixes the bug (reward 1.0), ``wrong`` does not (0.0).

Each is a list of ``{"name": TOOL, "arguments": {...}}`` calls, as an agent would
make them: look around, run the visible tests in the shell, poke at the code in
the persistent Python interpreter, then edit. The reference edit is the real
fix; the wrong ones are the classic mistakes (a plausible but wrong fix, making
the visible test expect the bug, deleting or disabling the failing test) that
leave every hidden test failing. Together they call every tool.
"""

from __future__ import annotations

PYTEST = "set -o pipefail; python -m pytest -q -p no:cacheprovider 2>&1 | tail -n 1 | sed -E 's/ in [0-9.]+s.*//'"
"""The visible tests' summary line without its timing (results stay byte-identical between runs)."""

FIX: dict[str, tuple[str, str, str]] = {
    "paginate-off-by-one": ("pager/core.py", "start = page * size", "start = (page - 1) * size"),
    "slugify-lowercase": ("slugs/text.py", "    words = title.split()", "    words = title.lower().split()"),
    "leap-century": (
        "dates/calendar.py",
        "    return year % 4 == 0\n",
        "    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)\n",
    ),
    "celsius-formula": ("units/temperature.py", "    return celsius * 9 / 5 - 32", "    return celsius * 9 / 5 + 32"),
    "word-count-whitespace": (
        "wordstats/count.py",
        '    for word in text.split(" "):',
        "    for word in text.split():",
    ),
    "binary-search-last": ("search/bisect.py", "    while lo < hi:", "    while lo <= hi:"),
    "unique-keep-order": ("listutil/dedupe.py", "    return list(set(items))", "    return list(dict.fromkeys(items))"),
    "chunks-last-partial": ("batching/chunks.py", "range(0, len(seq) - n + 1, n)", "range(0, len(seq), n)"),
    "roman-subtractive": (
        "numerals/roman.py",
        'TABLE = [(1000, "M"), (500, "D"), (100, "C"), (50, "L"), (10, "X"), (5, "V"), (1, "I")]',
        'TABLE = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"), (40, "XL"),\n         (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]',
    ),
    "duration-minutes": ("timeparse/duration.py", '"m": 100', '"m": 60'),
    "flatten-deep": ("nested/flat.py", "            out.extend(item)", "            out.extend(flatten(item))"),
    "parse-bool-words": (
        "settings/values.py",
        '    return text == "true"',
        '    return text.strip().lower() in {"true", "yes", "on", "1"}',
    ),
    "discount-percent": ("shop/pricing.py", "    return price - percent\n", "    return price * (1 - percent / 100)\n"),
    "fizzbuzz-order": (
        "games/fizz.py",
        '    if n % 3 == 0:\n        return "Fizz"\n    if n % 5 == 0:\n        return "Buzz"\n    if n % 15 == 0:\n        return "FizzBuzz"\n',
        '    if n % 15 == 0:\n        return "FizzBuzz"\n    if n % 3 == 0:\n        return "Fizz"\n    if n % 5 == 0:\n        return "Buzz"\n',
    ),
    "deep-merge": (
        "configs/merge.py",
        "        out[key] = value\n",
        "        if isinstance(out.get(key), dict) and isinstance(value, dict):\n            out[key] = deep_merge(out[key], value)\n        else:\n            out[key] = value\n",
    ),
    "csv-skip-header": ("reports/csvsum.py", "for line in lines)", "for line in lines[1:])"),
}
"""task id -> (file, old text, new text) of the real fix."""

WRONG: dict[str, tuple[str, str, str]] = {
    "paginate-off-by-one": ("pager/core.py", "start = page * size", "start = page * size - 1"),
    "slugify-lowercase": ("slugs/text.py", "    words = title.split()", "    words = title.upper().split()"),
    "leap-century": ("tests/test_calendar.py", "assert is_leap(1900) is False", "assert is_leap(1900) is True"),
    "celsius-formula": ("units/temperature.py", "    return celsius * 9 / 5 - 32", "    return (celsius + 32) * 9 / 5"),
    "word-count-whitespace": (
        "wordstats/count.py",
        '    for word in text.split(" "):',
        '    for word in text.strip().split(" "):',
    ),
    "binary-search-last": (
        "tests/test_bisect.py",
        "    assert find([1, 3, 5, 7], 7) == 3",
        "    assert find([1, 3, 5, 7], 7) == -1",
    ),
    "unique-keep-order": ("listutil/dedupe.py", "    return list(set(items))", "    return sorted(set(items))"),
    "chunks-last-partial": ("tests/test_chunks.py", "[[1, 2], [3, 4], [5]]", "[[1, 2], [3, 4]]"),
    "roman-subtractive": ("tests/test_roman.py", 'assert to_roman(4) == "IV"', 'assert to_roman(4) == "IIII"'),
    "duration-minutes": ("timeparse/duration.py", '"m": 100', '"m": 3600'),
    "flatten-deep": (
        "tests/test_flat.py",
        "assert flatten([1, [2, [3]]]) == [1, 2, 3]",
        "assert flatten([1, [2, [3]]]) == [1, 2, [3]]",
    ),
    "parse-bool-words": ("settings/values.py", '    return text == "true"', '    return text.strip() == "true"'),
    "discount-percent": ("shop/pricing.py", "    return price - percent\n", "    return price * (1 - percent)\n"),
    "fizzbuzz-order": ("tests/test_fizz.py", 'assert fizzbuzz(15) == "FizzBuzz"', 'assert fizzbuzz(15) == "Fizz"'),
    "deep-merge": ("configs/merge.py", "    out = dict(a)\n", "    out = dict(b)\n"),
    "csv-skip-header": ("tests/test_csvsum.py", "== 3.0", "!= 3.0"),
}
"""task id -> (file, old text, new text) of a wrong change (a bad fix, or the visible test bent to the bug)."""


def _c(name: str, **arguments) -> dict:
    return {"name": name, "arguments": arguments}


def _index(task) -> int:
    return list(FIX).index(task.id)


def reference(task) -> list[dict]:
    data = task.data
    module = data["module"]
    package = module.split("/")[0]
    dotted = module[:-3].replace("/", ".")
    i = _index(task)
    steps = []
    if i % 3 == 0:
        steps.append(_c("fs_list", path=".", recursive=True))
    elif i % 3 == 1:
        steps.append(_c("fs_search", pattern="def ", path=package))
    steps += [
        _c("fs_read", path=module),
        _c("shell_run", command=PYTEST if i in (1, 6) else f"grep -rn 'def ' {package} tests | head -n 20"),
        _c("python_run", code=f"import {dotted} as m\nsorted(n for n in dir(m) if not n.startswith('_'))"),
        _c("python_run", code="len(_), m.__name__"),  # state from the previous call
    ]
    if i == 0:
        steps += [_c("python_restart"), _c("python_run", code="'m' in dir()")]
    path, old, new = FIX[task.id]
    steps.append(_c("fs_edit", path=path, old_text=old, new_text=new))
    return steps


def wrong(task) -> list[dict]:
    data = task.data
    visible = data["visible"]
    i = _index(task)
    steps = [_c("fs_read", path=visible)]
    if i == 0:  # disable the failing test file
        steps.append(_c("fs_move", source=visible, destination=visible + ".disabled"))
    elif i == 1:  # delete it
        steps.append(_c("fs_delete", path=visible))
    elif i == 2:  # replace it with a test that always passes
        steps.append(_c("fs_write", path=visible, content="def test_nothing():\n    assert True\n"))
    else:
        path, old, new = WRONG[task.id]
        steps.append(_c("fs_edit", path=path, old_text=old, new_text=new))
    if i == 0:
        steps.append(_c("shell_run", command=PYTEST))
    elif i < 3:
        steps.append(_c("shell_run", command="ls tests"))
    else:  # run the visible tests by hand in the interpreter
        dotted = visible[:-3].replace("/", ".")
        steps.append(
            _c(
                "python_run",
                code=f"import {dotted} as t\n[f() for n, f in sorted(vars(t).items()) if n.startswith('test_')]",
            )
        )
    return steps
