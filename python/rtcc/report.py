"""Comparison tables (terminal text, Markdown, CSV) and self-contained HTML pages.

A comparison has one row per controller run (one per flow when a scenario has several
flows), with the metrics from each run's ``summary.json``. HTML pages are plain files with
inline CSS; images are referenced by relative path so a report folder can be moved or zipped.
"""

from __future__ import annotations

import csv
import html
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

__all__ = ["comparison_rows", "text_table", "markdown_table", "write_csv", "write_run_index",
           "write_compare_index", "write_page", "html_table"]


@dataclass(frozen=True)
class Column:
    key: str  # CSV header and row key
    header: str  # human header (Markdown, HTML, terminal)
    get: Callable[[dict, dict], object]  # (flow summary, total summary) -> value or None
    digits: int
    short: tuple[str, str]  # two-line header for the terminal


def _get(*path: str, scale: float = 1.0):
    def f(flow: dict, total: dict):
        v = flow
        for p in path:
            v = v.get(p) if isinstance(v, dict) else None
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            return None
        return v * scale if scale != 1.0 else v

    return f


COLUMNS = [
    Column("throughput_mbps", "throughput Mbps", _get("throughput_bps", scale=1e-6), 2, ("throughput", "Mbps")),
    Column("utilization_pct", "utilization %", _get("utilization", scale=100), 1, ("util", "%")),
    Column("video_bitrate_mbps", "video bitrate Mbps", _get("video_bitrate_bps", scale=1e-6), 2, ("video", "Mbps")),
    Column("latency_p50_ms", "frame latency P50 ms", _get("frame_latency_ms", "p50"), 1, ("latency P50", "ms")),
    Column("latency_p95_ms", "frame latency P95 ms", _get("frame_latency_ms", "p95"), 1, ("latency P95", "ms")),
    Column("latency_p99_ms", "frame latency P99 ms", _get("frame_latency_ms", "p99"), 1, ("latency P99", "ms")),
    Column("frame_delay_p95_ms", "frame delay P95 ms", _get("frame_delay_ms", "p95"), 1, ("delay P95", "ms")),
    Column("display_rate_fps", "shown fps", _get("display_rate_fps"), 1, ("shown", "fps")),
    Column("freezes", "freezes", _get("display_freezes"), 0, ("", "freezes")),
    Column("loss_pct", "loss %", _get("loss_rate", scale=100), 2, ("loss", "%")),
    Column("queuing_delay_p95_ms", "queuing delay P95 ms", _get("queuing_delay_ms", "p95"), 1, ("queue P95", "ms")),
]


def comparison_rows(runs: list[tuple[str, dict]]) -> list[dict]:
    """Rows from ``[(label, summary dict)]``: ``{"controller", "flow", <column keys>}``.

    A label of None uses each flow's own controller name.
    """
    rows = []
    for label, summary in runs:
        total = summary.get("total", {})
        for flow in summary.get("flows", []):
            row = {"controller": flow.get("controller", "") if label is None else label, "flow": flow.get("name", "")}
            for c in COLUMNS:
                row[c.key] = c.get(flow, total)
            rows.append(row)
    return rows


def _multi_flow(rows: list[dict]) -> bool:
    return len({r["flow"] for r in rows}) > 1


def _fmt(value, digits: int) -> str:
    if value is None:
        return "–"
    text = f"{value:.{digits}f}" if digits else f"{value:.0f}"
    # A value that rounds to zero is 0, never "-0.00".
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def _cells(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    multi = _multi_flow(rows)
    headers = ["controller"] + (["flow"] if multi else []) + [c.header for c in COLUMNS]
    body = [
        [r["controller"]] + ([r["flow"]] if multi else []) + [_fmt(r[c.key], c.digits) for c in COLUMNS]
        for r in rows
    ]
    return headers, body


def text_table(rows: list[dict]) -> str:
    """Fixed-width table for the terminal, with short two-line headers and a legend."""
    headers, body = _cells(rows)
    n_text = 2 if _multi_flow(rows) else 1  # left-aligned text columns
    split = [("", h) for h in headers[:n_text]] + [c.short for c in COLUMNS]
    widths = [max([len(s[0]), len(s[1])] + [len(b[i]) for b in body]) for i, s in enumerate(split)]

    def line(cells):
        return "  ".join(c.ljust(w) if i < n_text else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    out = [line([s[0] for s in split]), line([s[1] for s in split]), line(["-" * w for w in widths])]
    out += [line(b) for b in body]
    out.append("(video: encoded bitrate; latency: capture to display of every captured frame, a frame never "
               "shown counting until the next one is; delay P95: capture to complete reception of the frames "
               "sent; shown: frames displayed per second; queue P95: queuing delay)")
    return "\n".join(out) + "\n"


def markdown_table(rows: list[dict]) -> str:
    headers, body = _cells(rows)
    n_text = 2 if _multi_flow(rows) else 1
    out = ["| " + " | ".join(headers) + " |",
           "|" + "|".join(":---" if i < n_text else "---:" for i in range(len(headers))) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in b) + " |" for b in body]
    return "\n".join(out) + "\n"


def write_csv(rows: list[dict], path: Path) -> None:
    """Full-precision CSV; empty cells where a metric has no value."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["controller", "flow"] + [c.key for c in COLUMNS])
    for r in rows:
        w.writerow([r["controller"], r["flow"]] + ["" if r[c.key] is None else repr(r[c.key]) for c in COLUMNS])
    Path(path).write_text(buf.getvalue(), encoding="utf-8")


# -- HTML ------------------------------------------------------------------------------------

CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; padding: 0 1em; }
h1, h2, h3 { font-weight: 600; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5em 0; }
.meta { color: #666; }
td { overflow-wrap: anywhere; }
.scroll { overflow-x: auto; }
td.v-pass { background: #cfeccf; }
td.v-fail { background: #f6c9c9; }
td.v-other { background: #eeeeee; }
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def html_table(rows: list[dict], links: dict[str, str] | None = None) -> str:
    """HTML table of comparison rows; ``links`` maps a controller label to a relative href."""
    headers, body = _cells(rows)
    n_text = 2 if _multi_flow(rows) else 1
    out = ["<table>", "<tr>" + "".join(f"<th>{_e(h)}</th>" for h in headers) + "</tr>"]
    for b in body:
        cells = []
        for i, c in enumerate(b):
            if i == 0 and links and c in links:
                cells.append(f'<td><a href="{_e(links[c])}">{_e(c)}</a></td>')
            else:
                cells.append(f"<td>{_e(c)}</td>" if i < n_text else f'<td class="num">{_e(c)}</td>')
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def images_html(paths: list[str]) -> str:
    return "\n".join(f'<p><img src="{_e(p)}" alt="{_e(Path(p).stem)}"></p>' for p in paths)


def write_page(path: Path, title: str, body: str) -> None:
    page = (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{_e(title)}</title>\n'
            f"<style>{CSS}</style>\n</head>\n<body>\n<h1>{_e(title)}</h1>\n{body}\n</body>\n</html>\n")
    Path(path).write_text(page, encoding="utf-8")


def scenario_line(summary: dict) -> str:
    total = summary.get("total", {})
    cap = total.get("capacity_bps")
    cap_s = f", mean capacity {cap / 1e6:.2f} Mbit/s" if isinstance(cap, (int, float)) else ""
    return (f"scenario <b>{_e(summary.get('scenario', '?'))}</b>, seed {_e(summary.get('seed', '?'))}, "
            f"{_e(summary.get('duration_s', '?'))} s{cap_s}")


def write_run_index(result, folder: Path, images: list[Path], charts: str = "") -> None:
    """``index.html`` of a run folder: per-flow metrics, zoomable charts (``charts``, from
    ``rtcc.interactive.charts_html``), plots and links to the data files."""
    folder = Path(folder)
    rows = comparison_rows([(None, result.summary)])
    files = ["summary.json", "facts.json", "scenario.json", "packets.parquet", "frames.parquet", "state.parquet",
             "capacity.parquet"]
    body = [f'<p class="meta">{scenario_line(result.summary)}</p>', html_table(rows), charts,
            images_html([p.relative_to(folder).as_posix() for p in images]),
            "<p>Data: " + ", ".join(f'<a href="{f}">{f}</a>' for f in files) + "</p>"]
    write_page(folder / "index.html", f"rtcc run: {result.name}", "\n".join(body))


def write_compare_index(folder: Path, title: str, summary: dict, rows: list[dict], images: list[Path],
                        runs: dict[str, str], notes: list[str] = (), charts: str = "") -> None:
    """``index.html`` of a comparison folder; ``runs`` maps label -> run folder (relative)."""
    folder = Path(folder)
    links = {label: f"{d}/index.html" for label, d in runs.items()}
    body = [f'<p class="meta">{scenario_line(summary)}</p>', html_table(rows, links)]
    body += [f'<p class="meta">{_e(n)}</p>' for n in notes]
    body += [charts, images_html([p.relative_to(folder).as_posix() for p in images]),
             '<p>Tables: <a href="comparison.csv">comparison.csv</a>, <a href="comparison.md">comparison.md</a></p>']
    write_page(folder / "index.html", title, "\n".join(body))
