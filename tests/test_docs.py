"""The docs' examples run as written: every fenced code block preceded by a line
``<!-- runnable -->`` in README.md or docs/*.md is run, ``sh`` blocks with bash (``set -e``) and
``python`` blocks with this interpreter, each in a fresh empty directory outside the checkout, so a
block that names ``experiments/...`` works there only because rtcc finds its bundled copy."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
MARK = "<!-- runnable -->"


def runnable_blocks() -> list[tuple[str, str, str]]:
    """(where, language, code) of every marked block."""
    out = []
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        lines = doc.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if line.strip() != MARK:
                continue
            fence = lines[i + 1].strip() if i + 1 < len(lines) else ""
            m = re.fullmatch(r"```(sh|python)", fence)
            assert m, f"{doc.name}:{i + 1}: {MARK} must be followed by a ```sh or ```python block"
            end = next(j for j in range(i + 2, len(lines)) if lines[j].strip() == "```")
            out.append((f"{doc.name}:{i + 2}", m.group(1), "\n".join(lines[i + 2:end]) + "\n"))
    return out


BLOCKS = runnable_blocks()


def test_the_docs_mark_their_runnable_examples():
    where = {w.split(":")[0] for w, _, _ in BLOCKS}
    assert {"quickstart.md", "cli.md"} <= where, where


@pytest.mark.parametrize("where,language,code", BLOCKS, ids=[w for w, _, _ in BLOCKS])
def test_a_documented_example_runs_as_written(where, language, code, tmp_path):
    # `rtcc` is this interpreter's rtcc, whatever is on PATH.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "rtcc"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m rtcc "$@"\n')
    wrapper.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "MPLBACKEND": "Agg"}
    argv = ["bash", "-e", "-c", code] if language == "sh" else [sys.executable, "-c", code]
    done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{where} failed:\n{code}\n--- stderr ---\n{done.stderr[-3000:]}"
