"""Scripted trajectories for ``files``: ``reference`` solves each task, ``wrong`` is plausible but scores 0.

Each is a list of ``{"name": "fs_TOOL", "arguments": {...}}`` calls, as an agent
would make them (looking around first, then acting). Together they call every tool.
"""

from __future__ import annotations


def _c(tool: str, **arguments) -> dict:
    return {"name": f"fs_{tool}", "arguments": arguments}


REFERENCE: dict[str, list[dict]] = {
    "rename-notes": [
        _c("list", path="."),
        _c("move", source="notes.txt", destination="meeting-notes.txt"),
    ],
    "archive-old-reports": [
        _c("list", path="."),
        _c("move", source="report-2022.csv", destination="archive/report-2022.csv"),
        _c("move", source="report-2023.csv", destination="archive/report-2023.csv"),
    ],
    "json-port-and-debug": [
        _c("read", path="config/app.json"),
        _c("edit", path="config/app.json", old_text='"port": 8080', new_text='"port": 8081'),
        _c("edit", path="config/app.json", old_text='"debug": true', new_text='"debug": false'),
    ],
    "json-fix-syntax": [
        _c("read", path="package.json"),
        _c("edit", path="package.json", old_text='"vitest run",\n  }', new_text='"vitest run"\n  }'),
    ],
    "ini-database-host": [
        _c("read", path="settings.ini"),
        _c(
            "edit",
            path="settings.ini",
            old_text="[database]\nhost = localhost",
            new_text="[database]\nhost = db.internal",
        ),
    ],
    "yaml-scale-web": [
        _c("read", path="deploy.yaml"),
        _c(
            "edit",
            path="deploy.yaml",
            old_text="    replicas: 1\n    port: 8080",
            new_text="    replicas: 3\n    port: 8080",
        ),
    ],
    "count-todos": [
        _c("search", pattern="TODO", path="src"),
        _c("write", path="answer.txt", content="5\n"),
    ],
    "find-debug-env": [
        _c("search", pattern=r"^LOG_LEVEL=debug$", path="env", regex=True),
        _c("write", path="answer.txt", content="env/staging.env\n"),
    ],
    "largest-file": [
        _c("list", path="data"),
        _c("write", path="answer.txt", content="beta.log\n"),
    ],
    "delete-tmp-files": [
        _c("list", path=".", recursive=True),
        _c("delete", path="a.tmp"),
        _c("delete", path="out/cache.tmp"),
        _c("delete", path="out/deep/b.tmp"),
    ],
    "delete-old-folder": [
        _c("list", path="old", recursive=True),
        _c("delete", path="old", recursive=True),
    ],
    "bump-copyright": [
        _c("search", pattern="Copyright 2023", path="src"),
        _c("edit", path="src/a.py", old_text="Copyright 2023", new_text="Copyright 2024"),
        _c("edit", path="src/b.py", old_text="Copyright 2023", new_text="Copyright 2024"),
        _c("edit", path="src/c.py", old_text="Copyright 2023", new_text="Copyright 2024"),
    ],
    "rename-function": [
        _c("search", pattern="calc_total", path="."),
        _c("edit", path="shop/cart.py", old_text="def calc_total(", new_text="def compute_total("),
        _c("edit", path="shop/checkout.py", old_text="calc_total", new_text="compute_total", replace_all=True),
        _c("edit", path="tests/test_cart.py", old_text="calc_total", new_text="compute_total", replace_all=True),
    ],
    "create-gitignore": [
        _c("list", path="."),
        _c("write", path=".gitignore", content="__pycache__/\n*.pyc\n.env\n"),
    ],
    "changelog-entry": [
        _c("read", path="CHANGELOG.md"),
        _c(
            "edit",
            path="CHANGELOG.md",
            old_text="## Unreleased\n",
            new_text="## Unreleased\n- Fixed login timeout (#42)\n",
        ),
    ],
    "merge-lists": [
        _c("read", path="a.txt"),
        _c("read", path="b.txt"),
        _c("write", path="all.txt", content="apple\nbanana\ncherry\ndate\nelderberry\n"),
    ],
    "fix-typo": [
        _c("search", pattern="recieve", path="."),
        _c("edit", path="README.md", old_text="recieve", new_text="receive", replace_all=True),
    ],
    "version-bump": [
        _c("search", pattern="1.4.2", path="."),
        _c("edit", path="pyproject.toml", old_text='version = "1.4.2"', new_text='version = "1.5.0"'),
        _c("edit", path="src/pkg/__init__.py", old_text='"1.4.2"', new_text='"1.5.0"'),
    ],
    "find-definition-line": [
        _c("search", pattern="def parse_args", path="tool", glob="*.py"),
        _c("write", path="answer.txt", content="11\n"),
    ],
    "count-csv-rows": [
        _c("read", path="data/users.csv", start_line=1, max_lines=3),
        _c("search", pattern="@example.com", path="data/users.csv"),
        _c("write", path="answer.txt", content="37\n"),
    ],
    "move-images": [
        _c("list", path="."),
        _c("move", source="banner.png", destination="images/banner.png"),
        _c("move", source="icon.png", destination="images/icon.png"),
        _c("move", source="logo.png", destination="images/logo.png"),
    ],
    "disable-flag": [
        _c("read", path="flags.json"),
        _c("edit", path="flags.json", old_text='"beta_search": true', new_text='"beta_search": false'),
    ],
    "restore-backup": [
        _c("read", path="config.yaml.bak"),
        _c("move", source="config.yaml.bak", destination="config.yaml", overwrite=True),
    ],
    "dedupe-requirements": [
        _c("read", path="requirements.txt"),
        _c("write", path="requirements.txt", content="requests==2.32.3\nnumpy==2.1.0\npydantic==2.9.2\nrich==13.8.1\n"),
    ],
    "collect-emails": [
        _c("search", pattern=r"[\w.+-]+@[\w-]+\.[\w.]+", path="contacts", regex=True),
        _c("write", path="answer.txt", content="ana@example.org\nbo@example.org\ninfo@globex.test\nsales@acme.test\n"),
    ],
}

WRONG: dict[str, list[dict]] = {
    # underscore instead of hyphen
    "rename-notes": [_c("move", source="notes.txt", destination="meeting_notes.txt")],
    # moves the current report too (guard), and the old ones into the wrong folder
    "archive-old-reports": [
        _c("move", source="report-2022.csv", destination="archives/report-2022.csv"),
        _c("move", source="report-2023.csv", destination="archives/report-2023.csv"),
        _c("move", source="report-2024.csv", destination="archives/report-2024.csv"),
    ],
    # the port becomes a string, debug is left on
    "json-port-and-debug": [
        _c("edit", path="config/app.json", old_text='"port": 8080', new_text='"port": "8081"'),
    ],
    # drops a key to "fix" the comma
    "json-fix-syntax": [
        _c("edit", path="package.json", old_text=',\n    "test": "vitest run",\n', new_text="\n"),
    ],
    # the naive edit is ambiguous; then the cache host is changed instead
    "ini-database-host": [
        _c("edit", path="settings.ini", old_text="host = localhost", new_text="host = db.internal"),
        _c("edit", path="settings.ini", old_text="[cache]\nhost = localhost", new_text="[cache]\nhost = db.internal"),
    ],
    # scales the worker
    "yaml-scale-web": [
        _c(
            "edit",
            path="deploy.yaml",
            old_text="    image: shop/worker:1.8\n    replicas: 1",
            new_text="    image: shop/worker:1.8\n    replicas: 3",
        ),
    ],
    # case-insensitive count
    "count-todos": [
        _c("search", pattern="todo", path="src", case_sensitive=False),
        _c("write", path="answer.txt", content="6\n"),
    ],
    # the commented-out line fools a plain search
    "find-debug-env": [
        _c("search", pattern="LOG_LEVEL=debug", path="env"),
        _c("write", path="answer.txt", content="env/test.env\n"),
    ],
    # a near miss
    "largest-file": [_c("write", path="answer.txt", content="delta.log\n")],
    # removes the whole out/ folder (and what had to stay)
    "delete-tmp-files": [
        _c("delete", path="out", recursive=True),
    ],
    # empties the folder but leaves it there
    "delete-old-folder": [
        _c("delete", path="old/log1.txt"),
        _c("delete", path="old/log2.txt"),
    ],
    # replaces the wrong year
    "bump-copyright": [
        _c("edit", path="src/b.py", old_text="since 2023", new_text="since 2024"),
    ],
    # only the definition, with another name
    "rename-function": [
        _c("edit", path="shop/cart.py", old_text="def calc_total(", new_text="def calculate_total("),
    ],
    # wrong patterns
    "create-gitignore": [_c("write", path=".gitignore", content="pycache\n*.pyo\n")],
    # appended at the end, under the oldest release
    "changelog-entry": [
        _c(
            "edit",
            path="CHANGELOG.md",
            old_text="- First public release\n",
            new_text="- First public release\n- Fixed login timeout (#42)\n",
        ),
    ],
    # concatenated, not deduplicated nor sorted
    "merge-lists": [_c("write", path="all.txt", content="apple\nbanana\ncherry\nbanana\ndate\napple\nelderberry\n")],
    # only the first occurrence
    "fix-typo": [_c("edit", path="README.md", old_text="Users recieve", new_text="Users receive")],
    # a patch bump instead of a minor one
    "version-bump": [
        _c("edit", path="pyproject.toml", old_text='version = "1.4.2"', new_text='version = "1.4.3"'),
        _c("edit", path="src/pkg/__init__.py", old_text='"1.4.2"', new_text='"1.4.3"'),
    ],
    # off by one
    "find-definition-line": [_c("write", path="answer.txt", content="10\n")],
    # counts the header too
    "count-csv-rows": [_c("write", path="answer.txt", content="38\n")],
    # the wrong folder name
    "move-images": [
        _c("move", source="logo.png", destination="img/logo.png"),
        _c("move", source="icon.png", destination="img/icon.png"),
    ],
    # switches off the wrong flag
    "disable-flag": [
        _c("edit", path="flags.json", old_text='"new_ui": true', new_text='"new_ui": false'),
    ],
    # deletes the corrupted file and keeps the .bak
    "restore-backup": [_c("delete", path="config.yaml")],
    # sorted instead of keeping the order
    "dedupe-requirements": [
        _c("write", path="requirements.txt", content="numpy==2.1.0\npydantic==2.9.2\nrequests==2.32.3\nrich==13.8.1\n"),
    ],
    # misses the address in the middle of a line
    "collect-emails": [
        _c("write", path="answer.txt", content="ana@example.org\nbo@example.org\ninfo@globex.test\n"),
    ],
}


def reference(task):
    return REFERENCE[task.id]


def wrong(task):
    return WRONG[task.id]
