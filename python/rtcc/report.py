"""Comparison tables (terminal text, Markdown, CSV) and self-contained HTML pages.

A comparison has one row per controller run (one per flow when a scenario has several
flows), with the metrics from each run's ``summary.json``. HTML pages are rendered from the
Jinja2 templates in ``templates/`` into plain files with inline CSS; images are referenced by
relative path so a report folder can be moved or zipped.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

__all__ = ["comparison_rows", "text_table", "markdown_table", "write_csv", "write_run_index",
           "write_compare_index", "write_page", "render", "html_table"]


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


def run_point(summary: dict) -> tuple[float, float] | None:
    """A run on the throughput–delay plane: (P95 one-way delay of its worst flow in ms, all its
    flows' received Mbit/s), or None when no flow measured a delay."""
    flows = summary.get("flows", [])
    delays = [(f.get("one_way_delay_ms") or {}).get("p95") for f in flows]
    delays = [d for d in delays if isinstance(d, (int, float))]
    if not delays:
        return None
    return max(delays), sum(f.get("throughput_bps") or 0.0 for f in flows) / 1e6


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
# Every page is a Jinja2 template in ``templates/`` (``base.html`` and the pieces in
# ``macros.html``), rendered with autoescaping: a value is text unless it is ``Markup`` (the
# interactive charts, already HTML).

TEMPLATES = Path(__file__).parent / "templates"


@lru_cache(maxsize=1)
def _environment():
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["stem"] = lambda path: Path(str(path)).stem
    # The interactive charts' data: compact, and never NaN (which JSON.parse refuses).
    env.policies["json.dumps_kwargs"] = {"separators": (",", ":"), "allow_nan": False}
    return env


def render(template: str, **context):
    """``templates/<template>`` rendered with ``context``, as Markup (HTML, not to be escaped again)."""
    from markupsafe import Markup

    return Markup(_environment().get_template(template).render(**context))


def write_page(path: Path, template: str, title: str, **context) -> None:
    """Render a page template (one that extends ``base.html``) into ``path``."""
    Path(path).write_text(render(template, title=title, **context) + "\n", encoding="utf-8")


@dataclass(frozen=True)
class Table:
    """A table as the pages draw it (``macros.html``'s ``table``): text cells, the first
    ``text_columns`` left-aligned and the others numbers."""

    headers: list[str]
    rows: list[list[str]]
    text_columns: int


def html_table(rows: list[dict]) -> Table:
    """The comparison rows as a page's table (controller, flow when several, the metrics)."""
    headers, body = _cells(rows)
    return Table(headers, body, 2 if _multi_flow(rows) else 1)


RUN_FILES = ["summary.json", "facts.json", "scenario.json", "packets.parquet", "frames.parquet", "state.parquet",
             "capacity.parquet"]


def write_run_index(result, folder: Path, images: list[Path], charts: str = "") -> None:
    """``index.html`` of a run folder: per-flow metrics, zoomable charts (``charts``, from
    ``rtcc.interactive.charts_html``), plots and links to the data files."""
    folder = Path(folder)
    write_page(folder / "index.html", "run.html", f"rtcc run: {result.name}", summary=result.summary,
               table=html_table(comparison_rows([(None, result.summary)])), charts=charts,
               images=[p.relative_to(folder).as_posix() for p in images], files=RUN_FILES)


def write_compare_index(folder: Path, title: str, summary: dict, rows: list[dict], images: list[Path],
                        runs: dict[str, str], notes: list[str] = (), charts: str = "") -> None:
    """``index.html`` of a comparison folder; ``runs`` maps label -> run folder (relative)."""
    folder = Path(folder)
    write_page(folder / "index.html", "compare.html", title, summary=summary, table=html_table(rows),
               links={label: f"{d}/index.html" for label, d in runs.items()}, notes=list(notes), charts=charts,
               images=[p.relative_to(folder).as_posix() for p in images])
