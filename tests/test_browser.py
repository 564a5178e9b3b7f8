"""Every kind of HTML page rtcc writes (run, compare, sweep, demo, reproduce) opened in a real browser:
headless Chromium (Debian's `chromium`, driven through Playwright). Each page must render, every
image on it must load, every interactive chart must be drawn and have data, and the console must
stay free of errors; the pages they link to (a
comparison's or the demo's run pages) are opened too. Skipped with the reason when Chromium or
Playwright is missing (`make test` installs both where it can).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium (apt-get install chromium)")

SHORT = """name = "browser-check"
duration = "6s"
seed = 1
[path.forward]
schedule = [["0s", "6Mbps"], ["3s", "2Mbps"]]
delay = "20ms"
queue = "100pkts"
[path.reverse]
delay = "20ms"
[[flows]]
name = "video"
controller = "gcc"
"""


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (pip install playwright)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--allow-file-access-from-files"])
        yield b
        b.close()


def _check(browser, page_path: Path, follow_links: bool = True) -> list[str]:
    """Open a page; return what is wrong with it (and with the index pages it links to)."""
    problems: list[str] = []
    page = browser.new_page()
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.goto(page_path.as_uri())
    page.wait_for_load_state("load")
    if not page.locator("h1").count():
        problems.append("no heading: the page did not render")
    broken = page.evaluate("""() => Array.from(document.images)
        .filter(img => !img.complete || img.naturalWidth === 0).map(img => img.getAttribute('src'))""")
    problems += [f"image did not load: {src}" for src in broken]
    charts = page.evaluate("""() => [document.querySelectorAll('.rtcc-chart').length,
        document.querySelectorAll('.rtcc-chart .uplot canvas').length,
        document.querySelectorAll('.rtcc-fallback').length]""")
    if charts[0] != charts[1] or charts[2]:
        problems.append(f"{charts[0]} interactive charts, {charts[1]} drawn, {charts[2]} fallbacks left")
    # Every chart has data: some series with a number in it.
    empty = page.evaluate("""() => Array.from(document.querySelectorAll('.rtcc-chart')).filter(el => {
        var spec = JSON.parse(el.querySelector('script[type="application/json"]').textContent);
        return !spec.series.some(s => s.values.some(v => typeof v === 'number'));
    }).map(el => JSON.parse(el.querySelector('script[type="application/json"]').textContent).title)""")
    problems += [f"chart without data: {title}" for title in empty]
    links = page.evaluate("() => Array.from(document.querySelectorAll('a')).map(a => a.getAttribute('href'))")
    page.close()
    for href in links:
        if href and not href.startswith(("http:", "https:", "#")):
            target = (page_path.parent / href).resolve()
            if not target.exists():
                problems.append(f"broken link: {href}")
            elif follow_links and target.name == "index.html":
                problems += [f"{href}: {p}" for p in _check(browser, target, follow_links=False)]
    return [f"{page_path.parent.name}/{page_path.name}: {p}" for p in problems]


def _zoom(browser, page_path: Path) -> float:
    """Drag across the middle half of a page's first chart; the share of the run then shown."""
    page = browser.new_page()
    page.goto(page_path.as_uri())
    page.wait_for_load_state("load")
    box = page.locator(".rtcc-chart .u-over").first.bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.25, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.75, y, steps=5)
    page.mouse.up()
    shown = page.evaluate("""() => { const u = window.rtccCharts[0], x = u.data[0];
        return (u.scales.x.max - u.scales.x.min) / (x[x.length - 1] - x[0]); }""")
    page.close()
    return shown


def _rtcc(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "rtcc", *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr


def test_run_and_compare_pages_render_with_every_image(browser, tmp_path):
    scenario = tmp_path / "s.toml"
    scenario.write_text(SHORT)
    _rtcc("run", str(scenario), "-o", str(tmp_path / "run"))
    _rtcc("compare", str(scenario), "-c", "gcc", "-c", "sqp", "-o", str(tmp_path / "compare"))
    assert (tmp_path / "run" / "plots" / "signals.png").is_file(), "a run page shows the controller's signals"
    assert _zoom(browser, tmp_path / "run" / "index.html") < 0.6, "dragging across a chart zooms into that range"
    problems = _check(browser, tmp_path / "run" / "index.html") + _check(browser, tmp_path / "compare" / "index.html")
    assert not problems, "\n".join(problems)


def test_a_sweep_page_renders(browser, tmp_path):
    sweep = tmp_path / "sweep.toml"
    sweep.write_text('[sweep]\nname = "b"\nseeds = [1]\n[sweep.grid]\n"flows[0].controller" = ["gcc", "sqp"]\n'
                     "[scenario]\n" + SHORT.replace("[path", "[scenario.path").replace("[[flows]]", "[[scenario.flows]]"))
    _rtcc("sweep", str(sweep), "-o", str(tmp_path / "sweep"))
    problems = _check(browser, tmp_path / "sweep" / "index.html")
    assert not problems, "\n".join(problems)


def test_the_demo_report_renders(browser, demo_report):
    out, _ = demo_report  # the session's demo (tests/conftest.py), also checked by test_demo
    problems = _check(browser, out / "index.html")
    assert not problems, "\n".join(problems)


def test_a_reproduce_report_renders(browser, tmp_path):
    _rtcc("reproduce", "sqp", "--quick", "-o", str(tmp_path / "sqp"))
    problems = _check(browser, tmp_path / "sqp" / "index.html")
    assert not problems, "\n".join(problems)
