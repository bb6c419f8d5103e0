"""py-build-dist: dist/ holds a wheel and an sdist of tempconv 2.4.0 with the right metadata; the
wheel installs (as nobody, in a fresh virtualenv) and the version is dynamic in pyproject.toml."""

import email.parser
import glob
import os
import sys
import tarfile
import tomllib
import zipfile

sys.path.insert(0, "/tests")
from harness import Checks, read, run_as_nobody  # noqa: E402

checks = Checks()
checks.guard(
    "tempconv/__init__.py is unchanged", read("/app/tempconv/tempconv/__init__.py") == read("/tests/init_py.txt")
)
project = {}
try:
    project = tomllib.loads(read("/app/tempconv/pyproject.toml") or "").get("project", {})
except tomllib.TOMLDecodeError:
    pass
checks.goal(
    "pyproject.toml reads the version dynamically", "version" not in project and "version" in project.get("dynamic", [])
)
checks.goal("setup.py is gone", not os.path.lexists("/app/tempconv/setup.py"))
wheels = glob.glob("/app/tempconv/dist/tempconv-2.4.0-py3-none-any.whl")
sdists = glob.glob("/app/tempconv/dist/tempconv-2.4.0.tar.gz")
meta = None
if wheels and os.path.getsize(wheels[0]) < 16 << 20:
    try:
        with zipfile.ZipFile(wheels[0]) as whl:
            names = whl.namelist()
            meta = email.parser.Parser().parsestr(whl.read("tempconv-2.4.0.dist-info/METADATA").decode())
            wheel_license = any(n.startswith("tempconv-2.4.0.dist-info/") and "LICENSE" in n for n in names)
    except (zipfile.BadZipFile, KeyError):
        meta = None
checks.goal("dist/ has the wheel tempconv-2.4.0-py3-none-any.whl", meta is not None)
checks.goal(
    "the wheel's metadata: summary, README as description, requires-python",
    meta is not None
    and meta.get("Summary") == "Convert temperatures"
    and "Convert temperatures between Celsius" in (meta.get_payload() or "")
    and meta.get("Requires-Python") == ">=3.9",
)
checks.goal("the wheel includes LICENSE", meta is not None and wheel_license)
sdist_ok = False
if sdists and os.path.getsize(sdists[0]) < 16 << 20:
    try:
        with tarfile.open(sdists[0]) as tar:
            names = tar.getnames()
            sdist_ok = {
                "tempconv-2.4.0/LICENSE",
                "tempconv-2.4.0/pyproject.toml",
                "tempconv-2.4.0/tempconv/__init__.py",
            } <= set(names)
    except tarfile.TarError:
        pass
checks.goal("dist/ has the sdist tempconv-2.4.0.tar.gz with LICENSE, pyproject.toml and the package", sdist_ok)
installed = False
if meta is not None:
    venv = "/tmp/check-venv"
    run_as_nobody(["python3", "-m", "venv", venv], timeout=120)
    wheel_copy = "/tmp/" + os.path.basename(wheels[0])
    with open(wheels[0], "rb") as src, open(wheel_copy, "wb") as dst:
        dst.write(src.read())
    os.chmod(wheel_copy, 0o644)
    code, _, _ = run_as_nobody(
        [f"{venv}/bin/pip", "install", "--no-index", "--no-deps", wheel_copy],
        timeout=120,
        env={"PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    code2, out, _ = run_as_nobody(
        [
            f"{venv}/bin/python",
            "-I",
            "-c",
            "import tempconv, importlib.metadata as m; print(m.version('tempconv'), tempconv.c_to_f(100))",
        ],
        cwd="/tmp",
        timeout=60,
    )
    installed = code == 0 and code2 == 0 and out.strip() == "2.4.0 212.0"
checks.goal("the wheel installs and works", installed)
checks.finish()
