#!/bin/sh
set -e
cd /app/tempconv
rm -f setup.py
cat > pyproject.toml <<'TOML'
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "tempconv"
dynamic = ["version"]
description = "Convert temperatures"
readme = "README.rst"
requires-python = ">=3.9"
license = { file = "LICENSE" }

[tool.setuptools]
packages = ["tempconv"]

[tool.setuptools.dynamic]
version = { attr = "tempconv.__version__" }
TOML
mkdir -p dist
python3 - <<'PY'
from setuptools import build_meta
print(build_meta.build_sdist("dist"))
print(build_meta.build_wheel("dist"))
PY
rm -rf build tempconv.egg-info
ls dist
