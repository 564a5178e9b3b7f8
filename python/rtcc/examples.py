"""The bundled scenarios and sweeps (package data, so an installed wheel has them too): what
``rtcc examples`` lists, and the names every command that takes a scenario or sweep file accepts.

A bundled file is named by its path under ``experiments/`` without ``.toml``: ``demo/step`` is
``experiments/demo/step.toml``. A command given a path that does not exist looks it up here, so
``rtcc run demo/step`` works from any directory, and so do the docs' ``rtcc run
experiments/demo/step.toml ...`` commands outside a checkout. An existing file always wins.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from . import _toml as tomllib


@dataclass(frozen=True)
class Example:
    name: str  # "demo/step"
    kind: str  # "scenario" or "sweep"
    path: Path
    description: str


def experiments_dir() -> Path:
    """The bundled ``experiments`` folder: package data (``rtcc/data/experiments``), which the
    source checkout's top-level ``experiments/`` links to, so an installed wheel has it too."""
    return Path(__file__).resolve().parent / "data" / "experiments"


def examples() -> list[Example]:
    """Every bundled scenario and sweep, by name."""
    root = experiments_dir()
    out = []
    for path in sorted(root.rglob("*.toml")):
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            continue
        kind = "sweep" if ("sweep" in data or "scenario" in data) else "scenario"
        description = str((data.get("sweep") or {}).get("description", "")) if kind == "sweep" else ""
        if not description:  # the file's first comment line
            comment = next((line for line in text.splitlines() if line.startswith("#")), "")
            description = comment.lstrip("# ").strip()
        name = path.relative_to(root).with_suffix("").as_posix()
        out.append(Example(name, kind, path, description))
    return out


def resolve(path: str | os.PathLike) -> str:
    """``path`` itself when it exists; else the bundled file it names (``demo/step``,
    ``demo/step.toml`` or ``experiments/demo/step.toml``); else ``path`` unchanged (the command
    then reports it missing)."""
    text = os.fspath(path)
    if Path(text).exists():
        return text
    name = text.removeprefix("./").removeprefix("experiments/").removesuffix(".toml")
    candidate = experiments_dir() / f"{name}.toml"
    if name and ".." not in Path(name).parts and candidate.is_file():
        return str(candidate)
    return text


def listing() -> str:
    """``rtcc examples``: the bundled files by kind, with how to run one."""
    items = examples()
    width = max((len(e.name) for e in items), default=10)
    lines = []
    for kind, heading in (("scenario", "Scenarios (rtcc run NAME -o DIR, rtcc compare NAME -c ...)"),
                          ("sweep", "Sweeps (rtcc sweep NAME -o DIR)")):
        lines.append(heading)
        for e in items:
            if e.kind == kind:
                description = e.description if len(e.description) <= 100 else e.description[:97] + "..."
                lines.append(f"  {e.name:<{width}}  {description}")
        lines.append("")
    lines.append(f"Files in {experiments_dir()}; any command takes a name in place of a file, e.g. "
                 "rtcc run demo/step -o out/step")
    return "\n".join(lines)
