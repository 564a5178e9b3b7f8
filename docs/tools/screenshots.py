#!/usr/bin/env python3
"""Screenshots of the report pages for the README (docs/img/screenshot-*.png): the demo, a
reproduction report and the RMCAT page, each the top 1200 × 900 of its page in headless Chromium
(Debian's `chromium`, through Playwright).

    python3 docs/tools/screenshots.py            # runs the three reports into a temporary folder
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

IMG = Path(__file__).resolve().parent.parent / "img"
RTCC = [sys.executable, "-m", "rtcc"]


def main() -> int:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("no chromium (apt-get install chromium)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        pages = {
            "demo": (["demo", "-o", str(out / "demo")], out / "demo" / "index.html"),
            "reproduce-sqp": (["reproduce", "sqp", "--quick", "-o", str(out / "sqp")], out / "sqp" / "index.html"),
            "rmcat": (["rmcat", "--quick", "-o", str(out / "rmcat")], out / "rmcat" / "index.html"),
        }
        for argv, _ in pages.values():
            subprocess.run([*RTCC, *argv], check=True, stdout=subprocess.DEVNULL)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--allow-file-access-from-files"])
            for name, (_, page_path) in pages.items():
                page = browser.new_page(viewport={"width": 1200, "height": 900})
                page.goto(page_path.as_uri())
                page.wait_for_load_state("load")
                page.wait_for_timeout(500)  # the interactive charts draw after load
                page.screenshot(path=str(IMG / f"screenshot-{name}.png"))
                page.close()
            browser.close()
    for name in pages:
        print(IMG / f"screenshot-{name}.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
