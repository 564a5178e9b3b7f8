"""``rtcc reproduce PAPER``: the report folder, its table of checks, and the command's errors.

The quick sets of sqp and vidaptive run here (docs/reproduce.md gives their measured times; the
wall time is printed, not asserted). What is checked is the report's shape: every check row has a
paper value, our value, a tolerance, a source and a verdict, the CSV and JSON hold the same rows,
the page shows the table and its figures. Whether a check passes is the report's business: the
rows that fail are known deviations, each with its reason (docs/<paper>.md).
"""

import csv
import json
import re
import subprocess
import sys
import time


from rtcc.cli import main
from rtcc.reproduce import VERDICTS, papers

HEADERS = ["#", "headline", "paper", "ours", "tolerance", "verdict", "source"]


def reproduce(tmp_path, capsys, paper, *extra):
    out = tmp_path / paper
    start = time.monotonic()
    assert main(["reproduce", paper, "--quick", "-o", str(out), *extra]) == 0
    elapsed = time.monotonic() - start
    captured = capsys.readouterr()
    with capsys.disabled():  # measured, not asserted (docs/reproduce.md has the times)
        print(f"\nrtcc reproduce {paper} --quick: {elapsed:.1f} s")
    assert "Traceback" not in captured.err
    assert f"wrote {out}" in captured.out
    return out, captured


def check_report(out, paper) -> list[dict]:
    """The report folder is complete and consistent; returns the check rows."""
    assert not [p for p in out.parent.iterdir() if ".tmp-" in p.name], "the folder is written atomically"
    for name in ["index.html", "checks.csv", "checks.json"]:
        assert (out / name).is_file(), name
    with open(out / "checks.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    data = json.loads((out / "checks.json").read_text(encoding="utf-8"))
    assert data["paper"] == paper and data["set"] == "quick" and data["elapsed_s"] > 0
    assert len(rows) == len(data["checks"]) >= 10
    for row, j in zip(rows, data["checks"]):
        for key in ["id", "headline", "paper_value", "our_value", "tolerance", "verdict", "reason", "source"]:
            assert row[key] == j[key], (key, row, j)
        assert row["verdict"] in VERDICTS, row
        for key in ["id", "headline", "paper_value", "our_value", "tolerance", "source"]:
            assert row[key].strip(), (key, row)
        if row["verdict"] in ("not comparable", "not run"):
            assert row["reason"].strip(), f"a {row['verdict']} row says why: {row}"
    assert len({r["id"] for r in rows}) == len(rows), "check ids are unique"

    page = (out / "index.html").read_text(encoding="utf-8")
    tables = re.findall(r"<table>.*?</table>", page, flags=re.S)
    assert len(tables) == 1, "one table per paper"
    assert all(f"<th>{h}</th>" in tables[0] for h in HEADERS)
    assert tables[0].count("<tr>") == len(rows) + 1
    # Each verdict cell is coloured by its verdict, and the table scrolls inside the page.
    shades = {"pass": "v-pass", "fail": "v-fail"}
    assert [shades.get(r["verdict"], "v-other") for r in rows] == re.findall(r'<td class="(v-[a-z]+)">', tables[0])
    assert '<div class="scroll"><table>' in page
    images = re.findall(r'<img src="([^"]+)"', page)
    assert images, "the paper's figures, redrawn"
    for src in images:
        assert (out / src).is_file() and (out / src).stat().st_size > 10_000, src
    for href in re.findall(r'<a href="([^"]+)"', page):
        assert (out / href).exists(), href
    return rows


def test_papers_are_the_modules_of_the_package():
    assert papers() == ["bbr-dash", "c3g", "gcc-aqm", "sqp", "vidaptive"]


def test_reproduce_sqp_quick(tmp_path, capsys):
    out, captured = reproduce(tmp_path, capsys, "sqp")
    rows = check_report(out, "sqp")
    ids = {r["id"] for r in rows}
    # The paper's headline results: the step link, shallow buffers, Eq. 8, fairness, competition.
    assert {"6a", "7a", "8a", "9a", "10a", "13b", "15a", "16a", "17a", "C1-cubic", "C2-tcp-first", "C4-bbr"} <= ids
    by_id = {r["id"]: r for r in rows}
    assert by_id["6a"]["verdict"] == "pass" and "Mbit/s" in by_id["6a"]["our_value"]
    assert by_id["13a"]["verdict"] == "not run" and "quick" in by_id["13a"]["reason"]
    figures = {p.name for p in (out / "figures").iterdir()}
    assert {"step.png", "competition.png", "fairness.png", "analysis.png"} <= figures
    assert (out / "data" / "step" / "index.html").is_file()
    assert "6a" in captured.out and "pass" in captured.out


def test_reproduce_vidaptive_quick(tmp_path, capsys):
    from rtcc.reproduce.vidaptive import resolve_traces

    out, captured = reproduce(tmp_path, capsys, "vidaptive")
    rows = check_report(out, "vidaptive")
    by_id = {r["id"]: r for r in rows}
    assert {"E1a", "E1b", "E1f", "E4a", "E4b", "E4c", "E4d", "E4e", "E5a", "E5d"} <= set(by_id)
    assert by_id["E1a"]["verdict"] == "pass"  # the periodic link needs no external trace
    figures = {p.name for p in (out / "figures").iterdir()}
    assert {"periodic.png", "traces.png", "ablation.png"} <= figures
    assert (out / "data" / "traces" / "tables.md").read_text().startswith("| trace | variant |")
    _, missing, looked = resolve_traces(["../../../shared/traces/mahimahi/ATT-LTE-driving.down"], None)
    if missing:  # the shared traces are not next to this checkout: the trace checks say so
        assert by_id["E4a"]["verdict"] == "not comparable" and "traces not found" in by_id["E4a"]["reason"]
    else:
        assert by_id["E4a"]["verdict"] in ("pass", "fail") and "7 traces" in by_id["E4a"]["headline"]


def test_vidaptive_without_the_traces_runs_the_bundled_one_and_says_so(tmp_path, capsys):
    empty = tmp_path / "no-traces"
    empty.mkdir()
    out, captured = reproduce(tmp_path, capsys, "vidaptive", "--traces", str(empty))
    rows = check_report(out, "vidaptive")
    trace_rows = [r for r in rows if r["id"].startswith(("E4", "E5"))]
    assert trace_rows and all(r["verdict"] == "not comparable" for r in trace_rows)
    assert all(f"not run: traces not found at {empty}" in r["reason"] for r in trace_rows)
    assert all(r["verdict"] != "not comparable" for r in rows if r["id"].startswith("E1"))
    page = (out / "index.html").read_text(encoding="utf-8")
    assert f"traces not found at {empty}" in page and "ATT-LTE-driving.down" in page
    assert f"traces not found at {empty}" in captured.out
    results = (out / "data" / "traces" / "results.csv").read_text()
    assert "lte-6mbps-seed1.trace" in results and "ATT-LTE" not in results


def test_unknown_paper_is_a_usage_error(tmp_path, capsys):
    assert main(["reproduce", "nope", "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rtcc: error: unknown paper 'nope'") and "Traceback" not in err
    for name in papers():
        assert name in err
    assert not (tmp_path / "out").exists()


def test_an_existing_report_is_refused_before_anything_runs(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    start = time.monotonic()
    assert main(["reproduce", "sqp", "--quick", "-o", str(out)]) == 2
    assert time.monotonic() - start < 10
    assert "--force" in capsys.readouterr().err
    assert (out / "keep.txt").read_text() == "mine"


def test_help_lists_the_papers_without_loading_polars():
    code = ("import sys, contextlib, io, rtcc.cli\n"
            "buf = io.StringIO()\n"
            "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(buf):\n"
            "    rtcc.cli.main(['reproduce', '--help'])\n"
            "print(buf.getvalue())\n"
            "print(sorted(m for m in ('polars', 'numpy', 'pyarrow', 'matplotlib') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert ", ".join(papers()) in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout
