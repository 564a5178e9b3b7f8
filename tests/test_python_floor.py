"""The Python floor pyproject declares (requires-python): every module of the package must at least
compile there, and the standard-library modules newer than the floor must go through their
fallbacks (``tomllib`` is 3.11+; ``rtcc._toml`` falls back to ``tomli`` on 3.10, a declared
dependency there). A full run on 3.10 (``rtcc run``, ``compare``, ``reproduce sqp --quick``) was
checked by hand in a 3.10 virtual environment; this test keeps the floor from breaking again
without installing one in CI."""

import glob
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "rtcc"


def declared_floor() -> str:
    text = (ROOT / "pyproject.toml").read_text()
    m = re.search(r'^requires-python\s*=\s*">=\s*(\d+\.\d+)"', text, re.M)
    assert m, "pyproject.toml declares no requires-python floor"
    return m.group(1)


def floor_interpreter(version: str) -> str | None:
    candidates = [shutil.which(f"python{version}")]
    candidates += sorted(glob.glob(str(Path.home() / ".pyenv" / "versions" / f"{version}.*" / "bin" / f"python{version}")))
    for c in filter(None, candidates):
        done = subprocess.run([c, "--version"], capture_output=True, text=True)
        if done.returncode == 0 and done.stdout.startswith(f"Python {version}."):
            return c
    return None


def test_no_module_imports_a_standard_library_module_newer_than_the_floor():
    assert declared_floor() == "3.10", "the list below is for a 3.10 floor: review it for the new one"
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "_toml.py":
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.match(r"\s*(import tomllib|from tomllib import)", line):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()} (use rtcc._toml)")
    assert not offenders, "\n".join(offenders)


def test_every_module_compiles_on_the_declared_floor(tmp_path):
    version = declared_floor()
    python = floor_interpreter(version)
    if python is None:
        pytest.skip(f"no Python {version} interpreter here (pyproject declares >={version})")
    done = subprocess.run([python, "-m", "compileall", "-q", "-d", "rtcc", str(PACKAGE)],
                          capture_output=True, text=True, env={"PYTHONPYCACHEPREFIX": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, f"Python {version} cannot compile the package:\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
    # The TOML fallback itself, loaded alone (the package's __init__ needs the native module).
    has_tomli = subprocess.run([python, "-c", "import tomli"], capture_output=True).returncode == 0
    if has_tomli:
        done = subprocess.run([python, "-c", "import runpy; m = runpy.run_path(%r); "
                               "assert m['loads']('a = 1') == {'a': 1}" % str(PACKAGE / "_toml.py")],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
