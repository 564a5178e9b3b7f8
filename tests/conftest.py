"""Fixtures shared by test files."""

from __future__ import annotations

import contextlib
import io

import pytest


@pytest.fixture(scope="session")
def demo_report(tmp_path_factory):
    """`rtcc demo` run once per session (about a minute on two cores): (report folder, printed text).
    test_demo checks its content and test_browser renders it; neither writes into it."""
    from rtcc.cli import main

    out = tmp_path_factory.mktemp("demo") / "demo"
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        code = main(["demo", "-o", str(out)])
    assert code == 0, text.getvalue()
    return out, text.getvalue()
