"""One colour per controller, the same in every chart of every page, PNG and interactive alike.

The palette is Kenneth Kelly's 22 colours of maximum contrast (1965) without white and black,
strongest first: 20 colours that stay apart on a white background, where matplotlib's tab20 pairs
each hue with a pale copy of itself. A controller keeps the colour of its place in the registry
(``rtcc controllers``), so `gcc` is the same blue on the demo, a comparison and the RMCAT page; a
second label of one controller (``oracle:fraction=0.7`` beside ``oracle``), or a name the registry
does not know, takes the next colour no other label of the chart has.
"""

from __future__ import annotations

PALETTE = ["#0067a5", "#f38400", "#008856", "#be0032", "#875692", "#882d17", "#e68fac", "#848482",
           "#8db600", "#2b3d26", "#f3c300", "#604e97", "#f99379", "#b3446c", "#dcd300", "#654522",
           "#e25822", "#f6a600", "#a1caf1", "#c2b280"]


def controller_name(label: str) -> str:
    """The controller a label names: ``oracle:fraction=0.7`` -> ``oracle``, ``gcc (live)`` -> ``gcc``."""
    return label.split(":", 1)[0].split(" ", 1)[0]


def label_colors(labels: list[str], names: list[str] | None = None) -> dict[str, str]:
    """A distinct colour for each label (cycling past 20), each controller's own where free.
    ``names``: the registry's controller names in order (default: ``rtcc.controllers()``)."""
    if names is None:
        from .registry import controllers

        names = [c["name"] for c in controllers()]
    place = {name: i % len(PALETTE) for i, name in enumerate(names)}
    out: dict[str, str] = {}
    taken: set[int] = set()
    later = []
    for label in labels:
        i = place.get(controller_name(label))
        if i is not None and i not in taken:
            out[label] = PALETTE[i]
            taken.add(i)
        else:
            later.append(label)
    free = [i for i in range(len(PALETTE)) if i not in taken] or list(range(len(PALETTE)))
    for k, label in enumerate(later):
        out[label] = PALETTE[free[k % len(free)]]
    return {label: out[label] for label in labels}


def series_colors(n: int) -> list[str]:
    """Colours for ``n`` series that are not controllers (a run's flows), in palette order."""
    return [PALETTE[i % len(PALETTE)] for i in range(n)]
