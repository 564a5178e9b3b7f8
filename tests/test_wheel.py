"""The built wheel carries everything `rtcc demo` needs: it is built with maturin, installed into a
fresh virtual environment (its dependencies taken from this interpreter's site-packages, so the
test needs no network), and `rtcc demo` runs from an empty directory outside the checkout.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _maturin() -> list[str] | None:
    """maturin as this interpreter runs it, or its command. In a virtual environment that sees the
    system's packages (the Makefile's `.venv`), `python -m maturin` finds the module but looks for
    its binary in the environment's own bin, so the base interpreter's bin is tried too."""
    candidates = [[sys.executable, "-m", "maturin"]]
    for where in (Path(sys.base_prefix) / "bin" / "maturin", shutil.which("maturin")):
        if where:
            candidates.append([str(where)])
    for command in candidates:
        try:
            if subprocess.run([*command, "--version"], capture_output=True).returncode == 0:
                return command
        except OSError:
            continue
    return None


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    maturin = _maturin()
    if maturin is None:
        pytest.skip("maturin is not installed (pip install maturin)")
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([*maturin, "build", "--release", "-o", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    (built,) = out.glob("rtcc-*.whl")
    return built


def test_the_wheel_holds_the_bundled_scenarios_and_traces(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ["rtcc/data/experiments/demo/step.toml", "rtcc/data/experiments/demo/lte.toml",
                   "rtcc/data/traces/step-20-5-20.sched", "rtcc/data/traces/lte-6mbps-seed1.trace"]:
        assert needed in names, f"{needed} is missing from {wheel.name}"
    assert not any(n.startswith(("experiments/", "traces/")) for n in names), "data outside the package"


def test_the_wheels_native_module_is_small(wheel):
    """Release builds carry no debug info: with line tables the module was 89 MB, without 12 MB."""
    (native,) = [i for i in zipfile.ZipFile(wheel).infolist() if i.filename.startswith("rtcc/_core")]
    assert native.file_size < 25 * 2**20, f"{native.filename} is {native.file_size / 2**20:.1f} MB"


def _install(wheel: Path, env_dir: Path, interpreter: str | None = None, with_deps: bool = False) -> Path:
    """A fresh virtual environment with the wheel installed; its ``bin`` folder. Without
    ``with_deps`` it sees this interpreter's packages (no download); with them, pip fetches the
    wheel's dependencies for that interpreter."""
    if interpreter is None:
        venv.EnvBuilder(system_site_packages=True, with_pip=True).create(env_dir)
    else:
        done = subprocess.run([interpreter, "-m", "venv", str(env_dir)], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    python = env_dir / "bin" / "python"
    deps = [] if with_deps else ["--no-deps"]
    done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *deps, "--disable-pip-version-check",
                           str(wheel)], capture_output=True, text=True, timeout=900)
    offline = ("NewConnectionError", "Temporary failure in name resolution", "Network is unreachable")
    if with_deps and done.returncode != 0 and any(o in done.stderr for o in offline):
        pytest.skip(f"the package index cannot be reached to install the wheel's dependencies: {done.stderr[-300:]}")
    assert done.returncode == 0, done.stderr[-3000:]
    return env_dir / "bin"


def _runs_anywhere(bin_dir: Path, elsewhere: Path, commands: list[list[str]]) -> None:
    """Each `rtcc` command from an empty folder outside the checkout, with the venv's rtcc."""
    elsewhere.mkdir()
    where = subprocess.run([str(bin_dir / "python"), "-c", "import rtcc; print(rtcc.__file__)"], cwd=elsewhere,
                           capture_output=True, text=True, timeout=60)
    assert str(bin_dir.parent) in where.stdout, f"the venv imports rtcc from {where.stdout.strip()}, not the wheel"
    for argv in commands:
        done = subprocess.run([str(bin_dir / "rtcc"), *argv], cwd=elsewhere, capture_output=True, text=True,
                              timeout=900)
        assert done.returncode == 0, f"rtcc {' '.join(argv)}:\n{done.stderr[-3000:]}"


def test_rtcc_demo_runs_from_an_installed_wheel_anywhere(wheel, tmp_path):
    bin_dir = _install(wheel, tmp_path / "venv")
    elsewhere = tmp_path / "elsewhere"
    _runs_anywhere(bin_dir, elsewhere, [["demo", "-o", "report"],
                                        ["run", "demo/step", "-o", "step", "--no-plots"],
                                        ["reproduce", "sqp", "--quick", "-o", "sqp"]])
    report = elsewhere / "report"
    assert (report / "index.html").is_file() or any(report.glob("*.html")), sorted(p.name for p in report.iterdir())
    assert (elsewhere / "step" / "summary.json").is_file() and (elsewhere / "sqp" / "index.html").is_file()
    shutil.rmtree(tmp_path / "venv")


def _floor_interpreter() -> str | None:
    """The declared floor's interpreter (python3.10), if this machine has one."""
    from test_python_floor import declared_floor, floor_interpreter

    return floor_interpreter(declared_floor())


def test_the_wheel_works_on_the_declared_python_floor(wheel, tmp_path):
    """pyproject declares Python 3.10: a fresh 3.10 virtual environment installs the wheel with its
    dependencies (from the package index) and runs the demo, a scenario and a quick reproduction."""
    interpreter = _floor_interpreter()
    if interpreter is None:
        pytest.skip("no interpreter of the declared floor (python3.10) on this machine")
    bin_dir = _install(wheel, tmp_path / "venv310", interpreter=interpreter, with_deps=True)
    _runs_anywhere(bin_dir, tmp_path / "elsewhere", [["demo", "-o", "report"],
                                                     ["run", "demo/step", "-o", "step", "--no-plots"],
                                                     ["reproduce", "sqp", "--quick", "-o", "sqp"]])
    shutil.rmtree(tmp_path / "venv310")
