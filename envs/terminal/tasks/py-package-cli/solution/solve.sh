#!/bin/sh
set -e
cd /app/wordfreq
cat > pyproject.toml <<'TOML'
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "wordfreq"
version = "0.3.1"
description = "Count words, skipping stop words"
requires-python = ">=3.9"

[project.scripts]
wordfreq = "wordfreq.cli:main"

[tool.setuptools.packages.find]
where = ["src"]
include = ["wordfreq*"]

[tool.setuptools.package-data]
wordfreq = ["data/*.txt"]
TOML
python3 -m venv --system-site-packages /tmp/try
/tmp/try/bin/pip install -q --no-index --no-build-isolation /app/wordfreq
echo "the cat and the cat" | /tmp/try/bin/wordfreq -n 1
rm -rf /tmp/try /app/wordfreq/build /app/wordfreq/src/*.egg-info
