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
    done = subprocess.run([sys.executable, "-m", "maturin", "--version"], capture_output=True)
    return [sys.executable, "-m", "maturin"] if done.returncode == 0 else None


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


def test_rtcc_demo_runs_from_an_installed_wheel_anywhere(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps",
                           "--disable-pip-version-check", str(wheel)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = subprocess.run([str(python), "-c", "import rtcc; print(rtcc.__file__)"], cwd=elsewhere,
                           capture_output=True, text=True, timeout=60)
    assert str(env_dir) in where.stdout, f"the venv imports rtcc from {where.stdout.strip()}, not the wheel"
    rtcc = env_dir / "bin" / "rtcc"
    done = subprocess.run([str(rtcc), "demo", "-o", "report"], cwd=elsewhere, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    report = elsewhere / "report"
    assert (report / "index.html").is_file() or any(report.glob("*.html")), sorted(p.name for p in report.iterdir())
    shutil.rmtree(env_dir)
