"""``rtcc rmcat``: the IETF's RMCAT evaluation suite, RFC 8867's test cases judged by explicit rules
built from RFC 8868's criteria, for several controllers and seeds, in one command.

How it works. Each case is a scenario file in ``experiments/rmcat/`` named ``<id>-<title>.toml``
(``5.1-variable-capacity-single-flow.toml``) whose header cites the RFC section behind every number;
its video flows name a placeholder controller that is replaced by the controller under test, as
``rtcc compare`` does (cross traffic such as §5.6's TCP flow is kept). :data:`CASES` lists, per case
id, the rules that judge a run of it. A rule is a small named function of a :class:`RunView` (the
run's summary plus, per flow, its received rate in 1 s windows and its packets' queuing delays, and
the capacity of each link) that returns an :class:`Outcome`: passed or not, the measured value and
how it reads. What a view holds besides the packets' queuing delays comes from the core, not from
here: the links each flow crosses, the propagation between them, each link's capacity per window
and segments, each flow's received rate per window (the run folder's ``facts.json``,
``rtcc_scenario::facts``), and the windowed measures (window masks, shared periods, Jain's index
over windows, convergence: ``rtcc_scenario::windows``, called through ``rtcc._core``). The RFCs
state criteria without thresholds (RFC 8867 §5: "converge", "fair share", "not starve"; RFC 8868 §3:
rate, queuing delay, loss, fairness, convergence); each rule's threshold sits next to the text it
comes from and is explained in docs/rmcat.md.

Adding a case is one scenario file plus one :data:`CASES` entry (its rules); nothing else changes.

:func:`run_suite` runs every (case, controller, seed) through the engine of sweeps and comparisons
(:func:`rtcc.sweep.execute`: worker processes or Ray), judges each run, and writes the report
folder atomically: ``table.md``, ``table.csv`` (one row per case and controller), ``rules.csv``
(one row per case, controller, seed and rule), ``index.html`` with per-case plots, and the run
folders (``runs/<case>/<controller>/seed<k>``). The same arguments give the same tables.
"""

from __future__ import annotations

import csv
import io
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from . import _core

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CASES", "Case", "Rule", "Outcome", "FlowView", "RunView", "case_files", "select_cases",
           "view_of_run", "judge", "run_suite", "DEFAULT_CONTROLLERS"]

# The controllers run when none are named; those not registered in this build are left out.
DEFAULT_CONTROLLERS = ("gcc", "sqp", "vidaptive", "c3g")
DEFAULT_SEEDS = 3
WINDOW_S = _core.WINDOW_S  # the core's rate windows, 1 s from time zero (docs/metrics.md)


# -- what rules see ------------------------------------------------------------------------------


@dataclass
class FlowView:
    """One flow of a run as the rules see it. ``rate_bps[i]`` is the bit rate it received in the
    window ``[i, i+1)`` s (arrival time, every packet of the flow); ``queue_t``/``queue_ms`` are
    each of its packets' arrival at the bottleneck (s) and sojourn there (ms), for the packets
    that left it (on a path of several hops: arrival at its first link to departure from its last,
    less the propagation between them, as the summary's ``queuing_delay_ms``: the sum of its
    sojourns at every hop, plus any jitter or aggregation of the hops before its last, which is
    why §6.3 puts its jitter on the last hop); ``periods`` are its active ``[start, stop)`` intervals (s). ``link`` is
    the first link its data crosses and ``links`` all of them in order (empty: just ``link``):
    "forward" or "reverse" on one link pair, the hop names (``"b1"``, or ``"b1 reverse"`` for a
    hop's reverse link) over ``[[path.hops]]``, as the core names them in ``facts.json``.
    ``min_bps`` is a video flow's minimum rate (the core's default if the scenario gives none),
    ``max_bps`` its maximum (None: none)."""

    name: str
    kind: str
    link: str
    periods: list[tuple[float, float]]
    min_bps: float | None
    max_bps: float | None
    summary: dict
    rate_bps: "np.ndarray"
    queue_t: "np.ndarray"
    queue_ms: "np.ndarray"
    links: tuple[str, ...] = ()
    priority: float | None = None  # coupled flows (``coupling``, RFC 8699): their priority

    @property
    def video(self) -> bool:
        return self.kind == "video"

    @property
    def path(self) -> tuple[str, ...]:
        """The links the flow's data crosses, in order."""
        return self.links or (self.link,)

    def active_windows(self) -> "np.ndarray":
        """Boolean mask of the 1 s windows wholly inside one of the flow's active periods."""
        return _window_mask(len(self.rate_bps), self.periods)


@dataclass
class RunView:
    """A run as the rules see it: its duration, flows, and each link's capacity in the same 1 s
    windows (``capacity_bps[link]``, None for an unlimited link, in path order) with its segments
    of constant capacity (``segments[link]``: ``(start, stop, mean bps)``; a trace link, whose rate
    changes all the time, is cut into 10 s pieces), all as the core's ``facts.json`` gives them.
    A flow crossing several links counts on each of them."""

    duration_s: float
    flows: list[FlowView]
    capacity_bps: dict[str, "np.ndarray | None"]
    segments: dict[str, list[tuple[float, float, float]]]
    summary: dict = field(default_factory=dict)

    def video_on(self, link: str) -> list[FlowView]:
        return [f for f in self.flows if f.video and link in f.path]

    def on(self, link: str) -> list[FlowView]:
        """Every flow whose data crosses ``link`` (video or cross traffic)."""
        return [f for f in self.flows if link in f.path]

    def links(self) -> list[str]:
        """The links that carry video, in path order (forward before reverse)."""
        return [link for link in self.capacity_bps if self.video_on(link)]

    def flow_capacity(self, flow: FlowView) -> "np.ndarray | None":
        """The capacity of the flow's path in 1 s windows: the tightest of its links in each
        window (None when every one of them is unlimited)."""
        import numpy as np

        caps = [self.capacity_bps.get(link) for link in flow.path]
        caps = [c for c in caps if c is not None]
        return np.minimum.reduce(caps) if caps else None

    def events(self, link: str) -> list[float]:
        """Times at which the competition on ``link`` changes: a video flow starts or resumes."""
        return sorted({start for f in self.video_on(link) for start, _ in f.periods})

    def decreases(self, link: str) -> list[float]:
        """Times at which the link's capacity steps down."""
        segs = self.segments.get(link) or []
        return [b[0] for a, b in zip(segs, segs[1:]) if b[2] < a[2]]




@dataclass(frozen=True)
class Outcome:
    passed: bool
    value: float | None  # the measured number behind the verdict (None: not measurable; inf: never)
    shown: str  # the value as the table shows it, with where it was measured


@dataclass(frozen=True)
class Rule:
    """A named pass/fail criterion: ``check(view) -> Outcome``; ``text`` states what passes (with
    the threshold) and ``source`` the RFC text it comes from."""

    name: str
    text: str
    source: str
    check: Callable[[RunView], Outcome]


# -- helpers -------------------------------------------------------------------------------------


def jain(values) -> float | None:
    """Jain's fairness index (Σx)² / (n·Σx²): 1 when all equal, 1/n when one takes everything
    (the core's, ``rtcc_scenario::windows::jain``)."""
    return _core.jain([float(x) for x in values])


def shared_periods(flows: list[FlowView], settle_s: float) -> list[tuple[float, float]]:
    """When every one of ``flows`` is active, less the first ``settle_s`` of each such interval
    (the core's ``shared_periods``)."""
    return _core.shared_periods([_pairs(f.periods) for f in flows], settle_s)


def _window_mask(n: int, periods: list[tuple[float, float]]):
    """The 1 s windows wholly inside ``periods`` (a boolean array, the core's ``window_mask``)."""
    return _core.window_mask(n, _pairs(periods))


def _pairs(periods) -> list[tuple[float, float]]:
    """Periods as the ``(start, stop)`` tuples the core takes."""
    return [(float(a), float(b)) for a, b in periods]


def _floats(values) -> list[float]:
    """An array of rates as the list of floats the core takes."""
    import numpy as np

    return np.asarray(values, dtype=np.float64).tolist()


def _reachable(view: RunView, link: str, lo: float, hi: float) -> float | None:
    """What the link's video flows can carry together in ``[lo, hi)``: the link's mean capacity
    there, or the sum of the maximum rates of the flows active there if that is less."""
    cap = view.capacity_bps.get(link)
    if cap is None:
        return None
    i, j = int(lo // WINDOW_S), int(math.ceil(hi / WINDOW_S))
    capacity = float(cap[i:j].mean())
    maxima = [f.max_bps for f in view.video_on(link) if any(s < hi and e > lo for s, e in f.periods)]
    if maxima and all(m is not None for m in maxima):
        return min(capacity, sum(maxima))
    return capacity


def _total_rate(view: RunView, link: str):
    flows = view.video_on(link)
    return sum(f.rate_bps for f in flows)


def _fmt_s(t: float) -> str:
    return f"{t:g} s"


# -- rules ---------------------------------------------------------------------------------------


def rate_follows_capacity(low: float, source: str) -> Rule:
    """Each capacity segment's second half: the link's video flows together receive at least
    ``low`` × what they can reach (the capacity, or their summed maximum rates if less)."""

    def check(view: RunView) -> Outcome:
        worst, where = math.inf, ""
        for link in view.links():
            total = _total_rate(view, link)
            for start, stop, _ in view.segments.get(link) or []:
                lo, hi = (start + stop) / 2, stop
                if hi - lo < 2 * WINDOW_S:
                    continue
                reach = _reachable(view, link, lo, hi)
                if not reach:
                    continue
                i, j = int(math.ceil(lo / WINDOW_S)), int(hi // WINDOW_S)
                got = float(total[i:j].mean()) / reach
                if got < worst:
                    worst, where = got, f"{link} {start:g}–{stop:g} s"
        if not math.isfinite(worst):
            return Outcome(False, None, "no segment to measure")
        return Outcome(worst >= low, worst, f"{worst:.2f} of reachable ({where})")

    return Rule("rate-follows-capacity",
                f"in the second half of every constant-capacity segment, the video flows on the link "
                f"receive ≥ {low:.0%} of min(capacity, Σ max_bitrate)", source, check)


def ramps_up(within_s: float, low: float, source: str) -> Rule:
    """After each capacity segment starts (and at the run's start), the link's video flows reach
    ``low`` × the reachable rate (1 s windows) within ``within_s``."""

    def check(view: RunView) -> Outcome:
        worst, where = 0.0, ""
        for link in view.links():
            total = _total_rate(view, link)
            for start, stop, _ in view.segments.get(link) or []:
                if stop - start < 2 * within_s:
                    continue  # too short to tell (a trace piece, a brief step)
                reach = _reachable(view, link, start, stop)
                if not reach:
                    continue
                i0, i1 = int(start // WINDOW_S), int(stop // WINDOW_S)
                hit = next((i for i in range(i0, i1) if total[i] >= low * reach), None)
                took = (hit + 1) * WINDOW_S - start if hit is not None else math.inf
                if took > worst:
                    worst, where = took, f"{link} step at {start:g} s"
        if not where:
            return Outcome(False, None, "not measurable: no capacity step long enough")
        shown = "never" if math.isinf(worst) else f"{worst:g} s"
        return Outcome(worst <= within_s, worst, f"{shown} ({where})")  # inf: never

    return Rule("ramps-up",
                f"after each capacity change the video flows on the link reach {low:.0%} of "
                f"min(capacity, Σ max_bitrate) in a 1 s window within {within_s:g} s", source, check)


def queuing_delay_bounded(p95_ms: float, grace_s: float, source: str) -> Rule:
    """P95 of the video packets' queuing delay at their bottleneck, leaving out the packets that
    arrived within ``grace_s`` after a capacity decrease on their link (the queue built at the old
    rate drains then whatever the controller does)."""

    def check(view: RunView) -> Outcome:
        import numpy as np

        kept = []
        for f in view.flows:
            if not f.video or not len(f.queue_ms):
                continue
            keep = np.ones(len(f.queue_t), dtype=bool)
            for t in sorted({t for link in f.path for t in view.decreases(link)}):
                keep &= ~((f.queue_t >= t) & (f.queue_t < t + grace_s))
            kept.append(f.queue_ms[keep])
        values = np.concatenate(kept) if kept else np.array([])
        if not len(values):
            return Outcome(False, None, "no packet")
        p95 = float(np.percentile(values, 95))
        return Outcome(p95 <= p95_ms, p95, f"{p95:.0f} ms")

    return Rule("queuing-delay",
                f"P95 queuing delay of the video packets ≤ {p95_ms:g} ms, leaving out the {grace_s:g} s "
                "after each capacity decrease", source, check)


def loss_bounded(max_rate: float, source: str) -> Rule:
    """The worst video flow's packet loss rate (summary ``loss_rate``)."""

    def check(view: RunView) -> Outcome:
        rates = [(f.summary.get("loss_rate") or 0.0, f.name) for f in view.flows if f.video]
        worst, name = max(rates)
        return Outcome(worst <= max_rate, worst, f"{worst:.2%} ({name})")

    return Rule("loss", f"every video flow loses ≤ {max_rate:.0%} of its packets", source, check)


def signals_bounded(max_rate: float, source: str) -> Rule:
    """With ECN a marking queue sets CE where it would have dropped (RFC 3168 §5: the same
    congestion signal), so a controller that responds to marks as to losses keeps lost + CE-marked
    packets to the share it keeps losses to without ECN. Summary ``packets_lost`` and ``ce_marked``."""

    def check(view: RunView) -> Outcome:
        shares = []
        for f in view.flows:
            if f.video:
                sent = f.summary.get("packets_sent") or 0
                signals = (f.summary.get("packets_lost") or 0) + (f.summary.get("ce_marked") or 0)
                shares.append((signals / sent if sent else 0.0, f.name))
        worst, name = max(shares)
        return Outcome(worst <= max_rate, worst, f"{worst:.2%} lost or CE-marked ({name})")

    return Rule("loss-or-ce", f"every video flow has ≤ {max_rate:.0%} of its packets lost or CE-marked", source, check)


def starved_share(flow: FlowView) -> float | None:
    """Share of the flow's 1 s windows, while it is active, received below its ``min_bitrate``.
    Without pauses this is the summary's ``below_min_share``; with an ``active`` schedule the
    summary counts the off periods as below, so it is computed here from the active windows."""
    if len(flow.periods) <= 1 and flow.summary.get("below_min_share") is not None:
        return float(flow.summary["below_min_share"])
    if flow.min_bps is None:
        return None
    mask = flow.active_windows()
    if not mask.any():
        return None
    return float((flow.rate_bps[mask] < flow.min_bps).mean())


def no_starvation(max_share: float, source: str) -> Rule:
    """No video flow spends more than ``max_share`` of its active 1 s windows below its minimum."""

    def check(view: RunView) -> Outcome:
        shares = [(starved_share(f), f.name) for f in view.flows if f.video]
        shares = [(s, n) for s, n in shares if s is not None]
        if not shares:
            return Outcome(False, None, "not measurable")
        worst, name = max(shares)
        return Outcome(worst <= max_share, worst, f"{worst:.0%} of windows ({name})")

    return Rule("no-starvation",
                f"every video flow receives at least its min_bitrate in ≥ {1 - max_share:.0%} of its "
                "active 1 s windows (below_min_share)", source, check)


def fair_share(min_index: float, settle_s: float, source: str) -> Rule:
    """Jain's index over the video flows' mean rates while all of them are active, leaving out the
    first ``settle_s`` after the last of them (re)joins."""

    def check(view: RunView) -> Outcome:
        index, where = fairness(view, settle_s)
        if index is None:
            return Outcome(False, None, "no shared period")
        return Outcome(index >= min_index, index, f"Jain {index:.2f} ({where})")

    return Rule("fairness",
                f"Jain's index of the video flows' mean rates ≥ {min_index:g} while all are active, "
                f"from {settle_s:g} s after the last (re)join", source, check)


def fairness(view: RunView, settle_s: float) -> tuple[float | None, str]:
    """Jain's index over the video flows' mean rates in their shared period (see :func:`fair_share`),
    on the link that carries the most video flows: the core's ``windowed_jain``."""
    flows = max((view.video_on(link) for link in view.links()), key=len, default=[])
    if len(flows) < 2:
        return None, ""
    found = _core.windowed_jain([_floats(f.rate_bps) for f in flows], [_pairs(f.periods) for f in flows], settle_s)
    if found is None:
        return None, ""
    index, periods = found
    return index, ", ".join(f"{s:g}–{e:g} s" for s, e in periods)


def priority_share(max_deviation: float, settle_s: float, source: str) -> Rule:
    """The coupled video flows' mean rates in their shared period (from ``settle_s`` after the last
    (re)join) are in the ratio of their priorities: each flow's rate over its priority is within a
    factor ``max_deviation`` of every other's (the value is the largest such factor, 1 when the
    rates are exactly in the priority ratio)."""

    def check(view: RunView) -> Outcome:
        flows = [f for f in view.flows if f.video and f.priority is not None]
        if len(flows) < 2:
            return Outcome(False, None, "fewer than two coupled video flows")
        periods = shared_periods(flows, settle_s)
        mask = _window_mask(len(flows[0].rate_bps), periods)
        if not mask.any():
            return Outcome(False, None, "no shared period")
        per_priority = [float(f.rate_bps[mask].mean()) / f.priority for f in flows]
        if min(per_priority) <= 0:
            return Outcome(False, math.inf, "a flow received nothing")
        deviation = max(per_priority) / min(per_priority)
        hi, lo = max(flows, key=lambda f: f.priority), min(flows, key=lambda f: f.priority)
        rates = {f.name: float(f.rate_bps[mask].mean()) for f in flows}
        where = ", ".join(f"{a:g}–{b:g} s" for a, b in periods)
        return Outcome(deviation <= max_deviation, deviation,
                       f"{hi.name} : {lo.name} = {rates[hi.name] / rates[lo.name]:.2f} for priorities "
                       f"{hi.priority:g} : {lo.priority:g} ({where})")

    return Rule("priority-share",
                f"the coupled flows' mean rates over their priorities are within a factor {max_deviation:g} of "
                f"each other while all are active, from {settle_s:g} s after the last (re)join", source, check)


def share_against_cross_traffic(min_fraction: float, source: str) -> Rule:
    """Each video flow's mean rate while it is active is at least ``min_fraction`` of its fair
    share of the link: capacity / (number of flows on the link), capped at its ``max_bitrate``."""

    def check(view: RunView) -> Outcome:
        worst, where = math.inf, ""
        for f in view.flows:
            if not f.video:
                continue
            if len(f.links) > 1:
                return Outcome(False, None, f"not measurable: {f.name} crosses several links "
                               "(max-min-share judges those)")
            others = view.on(f.link)
            mask = f.active_windows()
            cap = view.flow_capacity(f)
            if cap is None or not mask.any():
                continue
            fair = float(cap[mask].mean()) / len(others)
            if f.max_bps is not None:
                fair = min(fair, f.max_bps)
            got = float(f.rate_bps[mask].mean()) / fair
            if got < worst:
                worst, where = got, f.name
        if not math.isfinite(worst):
            return Outcome(False, None, "not measurable")
        return Outcome(worst >= min_fraction, worst, f"{worst:.2f} of fair share ({where})")

    return Rule("share",
                f"each video flow's mean rate ≥ {min_fraction:.0%} of its fair share (capacity / flows "
                "on the link, at most its max_bitrate)", source, check)


def max_min_shares(demands: dict[str, float], routes: dict[str, tuple[str, ...]],
                   capacity: dict[str, float]) -> dict[str, float]:
    """Max-min fair rates by progressive filling: every flow's rate grows at the same pace until
    it reaches its demand (``inf``: none) or a link it crosses is full; the flows of a full link
    stop there and the others go on. ``routes`` names each flow's links; a link missing from
    ``capacity`` is unlimited. A flow that no limit stops gets ``inf``."""
    share = {f: 0.0 for f in demands}
    left = {link: c for link, c in capacity.items() if math.isfinite(c)}  # inf: unlimited
    growing = {f for f, d in demands.items() if d > 0}
    while growing:
        users = {link: sum(1 for f in growing if link in routes[f]) for link in left}
        steps = [left[link] / n for link, n in users.items() if n]
        steps += [demands[f] - share[f] for f in growing]
        step = min(steps)
        if math.isinf(step):
            for f in growing:
                share[f] = math.inf
            break
        for f in growing:
            share[f] += step
        for link, n in users.items():
            left[link] -= step * n
        full = {link for link, room in left.items() if room <= 1e-9 * max(1.0, capacity[link])}
        growing = {f for f in growing if share[f] < demands[f] - 1e-9 and not full & set(routes[f])}
    return share


def max_min_share_in_windows(view: RunView) -> dict[str, "np.ndarray"]:
    """Each flow's max-min fair share (bit/s) in every 1 s window, among the flows active in the
    window (all of them wholly active in it, cross traffic included), their demands their
    ``max_bitrate`` (unlimited for cross traffic without one) and the links' capacities then."""
    import numpy as np

    n = len(view.flows[0].rate_bps) if view.flows else 0
    masks = {f.name: f.active_windows() for f in view.flows}
    out = {f.name: np.full(n, np.nan) for f in view.flows}
    routes = {f.name: f.path for f in view.flows}
    for i in range(n):
        active = [f for f in view.flows if masks[f.name][i]]
        if not active:
            continue
        capacity = {link: float(c[i]) for link, c in view.capacity_bps.items() if c is not None}
        demands = {f.name: f.max_bps if f.max_bps is not None else math.inf for f in active}
        for name, rate in max_min_shares(demands, {f.name: routes[f.name] for f in active}, capacity).items():
            out[name][i] = rate
    return out


def _competition_intervals(view: RunView) -> list[tuple[float, float]]:
    """The run cut where the competition changes: any flow starts, stops, pauses or resumes, or a
    link's capacity steps."""
    cuts = {0.0, view.duration_s}
    for f in view.flows:
        for start, stop in f.periods:
            cuts |= {start, stop}
    for segs in view.segments.values():
        cuts |= {a for a, _, _ in segs or []}
    edges = sorted(t for t in cuts if 0.0 <= t <= view.duration_s)
    return list(zip(edges, edges[1:]))


def max_min_fair(min_fraction: float, settle_s: float, source: str) -> Rule:
    """Every video flow receives at least ``min_fraction`` of its max-min fair share (the share
    progressive filling gives it over its path, the cross flows counted, see
    :func:`max_min_shares`), as a mean over each interval of unchanged competition, leaving out
    its first ``settle_s``."""

    def check(view: RunView) -> Outcome:
        shares = max_min_share_in_windows(view)
        worst, where = math.inf, ""
        for lo, hi in _competition_intervals(view):
            if hi - lo < settle_s + 2 * WINDOW_S:
                continue
            window = _window_mask(len(view.flows[0].rate_bps), [(lo + settle_s, hi)])
            for f in view.flows:
                if not f.video:
                    continue
                mask = window & f.active_windows()
                if mask.sum() < window.sum() or not mask.any():
                    continue  # not active throughout the interval
                fair = float(shares[f.name][mask].mean())
                if not math.isfinite(fair) or fair <= 0:
                    continue
                got = float(f.rate_bps[mask].mean()) / fair
                if got < worst:
                    worst, where = got, f"{f.name}, {lo + settle_s:g}–{hi:g} s, share {fair / 1e6:.2f} Mbit/s"
        if not math.isfinite(worst):
            return Outcome(False, None, "no interval to measure")
        return Outcome(worst >= min_fraction, worst, f"{worst:.2f} of max-min share ({where})")

    return Rule("max-min-share",
                f"every video flow receives ≥ {min_fraction:.0%} of its max-min fair share of its path (cross "
                f"flows counted) in each interval of unchanged competition, from {settle_s:g} s into it",
                source, check)


def uses_leftover(low: float, settle_s: float, source: str) -> Rule:
    """While all the link's video flows are active (from ``settle_s`` after the last joins), they
    receive together at least ``low`` × what the cross traffic leaves them: per 1 s window the
    capacity less the cross traffic's received rate, at most Σ max_bitrate, summed over the
    windows."""

    def check(view: RunView) -> Outcome:
        worst, where = math.inf, ""
        for link in view.links():
            cap = view.capacity_bps.get(link)
            flows = view.video_on(link)
            if cap is None:
                continue
            cross = sum((f.rate_bps for f in view.on(link) if not f.video), start=0 * cap)
            maxima = sum(f.max_bps if f.max_bps is not None else math.inf for f in flows)
            mask = _window_mask(len(cap), shared_periods(flows, settle_s))
            left = float(sum(min(max(c - x, 0.0), maxima) for c, x in zip(cap[mask], cross[mask])))
            if not left:
                continue
            got = float(sum(f.rate_bps for f in flows)[mask].sum()) / left
            if got < worst:
                worst, where = got, link
        if not math.isfinite(worst):
            return Outcome(False, None, "not measurable")
        return Outcome(worst >= low, worst, f"{worst:.2f} of what cross traffic leaves ({where})")

    return Rule("uses-leftover",
                f"the video flows on the link receive together ≥ {low:.0%} of what the cross traffic leaves "
                f"(capacity less its received rate, at most Σ max_bitrate), from {settle_s:g} s after the last "
                "joins", source, check)


def converges_to_share(within_s: float, band: float, smooth_s: int, source: str) -> Rule:
    """After the last time a video flow starts or resumes on the link that carries the most of
    them, the time until every one of those flows is within ±``band`` of its fair share (the
    reachable rate, capacity or Σ max_bitrate, split equally) in the same window, rates taken
    as ``smooth_s``-second trailing means of the 1 s windows."""

    def check(view: RunView) -> Outcome:
        took, _ = share_convergence(view, band, smooth_s)
        if took is None:
            return Outcome(False, None, "no competition to measure")
        if math.isinf(took):
            return Outcome(False, math.inf, "never")
        return Outcome(took <= within_s, took, f"{took:g} s after the last (re)join")

    return Rule("converges",
                f"within {within_s:g} s of the last flow's (re)join every video flow's rate ({smooth_s} s mean) is "
                f"within ±{band:.0%} of its fair share", source, check)


def share_convergence(view: RunView, band: float, smooth_s: int) -> tuple[float | None, float]:
    """(seconds from the last (re)join to the first window where every flow is near its fair share,
    or inf if never; None without two flows to compare), and the last (re)join time. The flows'
    trailing means and the search are the core's ``share_convergence``."""
    links = sorted(view.links(), key=lambda link: -len(view.video_on(link)))
    if not links or len(view.video_on(links[0])) < 2:
        return None, 0.0
    link = links[0]
    flows = view.video_on(link)
    last = max(view.events(link))
    ends = [stop for f in flows for start, stop in f.periods if start <= last < stop]
    if len(ends) < len(flows):
        return None, last  # not every flow is active after the last join
    end = min(ends)
    share = _reachable(view, link, last, end) / len(flows)
    targets = [min(share, f.max_bps or math.inf) for f in flows]
    took = _core.share_convergence([_floats(f.rate_bps) for f in flows], targets, last, end, band, smooth_s)
    return took, last


# -- cases ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str  # "5.1": the RFC section (RFC 8867 unless said otherwise)
    title: str
    section: str  # the citation shown in reports
    rules: tuple[Rule, ...]
    note: str = ""  # what the case leaves out or approximates


# Thresholds, shared by the cases (docs/rmcat.md gives the reasoning for each):
RATE_LOW = 0.7  # a working controller uses most of what it may; 70 % leaves room for probing dips
RAMP_S = 10.0  # half of RFC 8867's shortest capacity step (20 s, §5.1/§5.3)
DELAY_P95_MS = 100.0  # ITU-T G.114's 150 ms one-way budget less the cases' 50 ms propagation delay
DROP_GRACE_S = 5.0  # time allowed to drain the queue built at the old rate after a capacity drop
LOSS_MAX = 0.02  # every case's path has no random loss (RFC 8867 §4): loss is self-inflicted
STARVED_MAX = 0.1  # at most 10 % of 1 s windows under the media minimum
JAIN_MIN = 0.9  # e.g. two flows at 1 : 0.5 of each other score 0.9
SETTLE_S = 10.0  # fairness is measured from 10 s after the last join
CONVERGE_S = 20.0  # the flows reach their fair share within 20 s of the last join (one §5.4 stagger)
CONVERGE_BAND = 0.2  # "reaching the fair share": within ±20 % of it
SMOOTH_S = 3  # judged on 3 s means, so that one frame-size wobble does not decide it
TCP_SHARE_MIN = 0.5  # §5.6: the media flow keeps at least half its fair share next to TCP
# §6.3: a media flow gets ≥ 60 % of its max-min share: two flows splitting a link 1 : 0.5 while using
# 90 % of it (Jain 0.9, the fairness rule's edge) leave the lesser one 0.6 of its share
MAX_MIN_MIN = 0.6
# §6.1: each flow's rate over its priority within a factor 1.25 of the others' (2 : 1 priorities:
# a rate ratio in [1.6, 2.5]); equal shares, what uncoupled flows get, are a factor 2 off
PRIORITY_DEVIATION_MAX = 1.25
# L4S cases: the media flows ride DualPI2's low-latency queue, whose reason to exist is a queuing delay
# far below a classic AQM's (RFC 9330 §1, RFC 9332 §1); their P95 must stay under the classic queue's own
# target (15 ms, RFC 9332 Appendix A), what a classic flow through the same queue is held near
L4S_DELAY_P95_MS = 15.0


def _basic(section: str) -> list[Rule]:
    """What every media case asks (RFC 8868 §3's flow metrics): delay, loss, no starvation."""
    return [
        queuing_delay_bounded(DELAY_P95_MS, DROP_GRACE_S, f"{section}; RFC 8868 §3 (queuing delay)"),
        loss_bounded(LOSS_MAX, f"{section}; RFC 8868 §3 (packet loss)"),
        no_starvation(STARVED_MAX, f"{section}; RFC 8868 §4 media range (minimum rate)"),
    ]


def _l4s_delay(source: str) -> Rule:
    return queuing_delay_bounded(L4S_DELAY_P95_MS, DROP_GRACE_S, f"{source}; RFC 9332 Appendix A (classic target)")


def _l4s_basic(section: str) -> list[Rule]:
    """:func:`_basic` with the L4S delay bound."""
    return [_l4s_delay(section)] + _basic(section)[1:]


L4S_NOTE = ("The media flows send ECT(1) over DualPI2 (RFC 9332, Linux's defaults); not applicable to a controller "
            "that does not answer CE marks by their share (rtcc refuses ecn = \"l4s\" for it).")


def _variable(section: str) -> list[Rule]:
    return [
        rate_follows_capacity(RATE_LOW, f"{section} expected behaviour: converge to the bottleneck capacity"),
        ramps_up(RAMP_S, RATE_LOW, f"{section}; RFC 8868 §3 (convergence time)"),
    ]


def _sharing(section: str) -> list[Rule]:
    return [
        rate_follows_capacity(RATE_LOW, f"{section}; RFC 8868 §3 (bandwidth utilization)"),
        fair_share(JAIN_MIN, SETTLE_S, f"{section} expected behaviour: fair share; RFC 8868 §3 (Jain's index)"),
        converges_to_share(CONVERGE_S, CONVERGE_BAND, SMOOTH_S, f"{section} expected behaviour: converge to a "
                           "fair share; RFC 8868 §3 (convergence time)"),
    ]


CASES: dict[str, Case] = {c.id: c for c in [
    Case("5.1", "Variable available capacity, single flow", "RFC 8867 §5.1",
         tuple(_variable("RFC 8867 §5.1") + _basic("RFC 8867 §5.1"))),
    Case("5.2", "Variable available capacity, multiple flows", "RFC 8867 §5.2",
         tuple(_variable("RFC 8867 §5.2")
               + [fair_share(JAIN_MIN, SETTLE_S, "RFC 8867 §5.2; RFC 8868 §3 (Jain's index)")]
               + _basic("RFC 8867 §5.2"))),
    Case("5.3", "Congested feedback link, media both ways", "RFC 8867 §5.3",
         tuple(_variable("RFC 8867 §5.3") + _basic("RFC 8867 §5.3"))),
    Case("5.4", "Competing media flows, same controller", "RFC 8867 §5.4",
         tuple(_sharing("RFC 8867 §5.4") + _basic("RFC 8867 §5.4"))),
    Case("5.5", "Round-trip time fairness", "RFC 8867 §5.5",
         tuple(_sharing("RFC 8867 §5.5") + _basic("RFC 8867 §5.5"))),
    Case("5.6", "Media flow against a long TCP flow", "RFC 8867 §5.6",
         (no_starvation(STARVED_MAX, "RFC 8867 §5.6 expected behaviour: the media flow is not starved"),
          share_against_cross_traffic(TCP_SHARE_MIN, "RFC 8867 §5.6; RFC 8868 §3 (fairness)")),
         note="TCP keeps the drop-tail queue full, so delay and loss are TCP's and are not judged."),
    Case("5.7", "Media flows against short TCP flows", "RFC 8867 §5.7",
         (no_starvation(STARVED_MAX, "RFC 8867 §5.7 expected behaviour: the media flows are not starved"),
          fair_share(JAIN_MIN, SETTLE_S, "RFC 8867 §5.7 (two media flows); RFC 8868 §3 (Jain's index)"),
          uses_leftover(RATE_LOW, SETTLE_S, "RFC 8867 §5.7; RFC 8868 §3 (bandwidth utilization)"),
          queuing_delay_bounded(DELAY_P95_MS, DROP_GRACE_S, "RFC 8867 §5.7; RFC 8868 §3 (queuing delay)"),
          loss_bounded(LOSS_MAX, "RFC 8867 §5.7; RFC 8868 §3 (packet loss)")),
         note="Short TCP downloads (30–50 KB, idle 10 s on average) come and go; the media flows should use "
              "what they leave without starving."),
    Case("5.8", "Media pause and resume", "RFC 8867 §5.8",
         tuple(_sharing("RFC 8867 §5.8") + _basic("RFC 8867 §5.8"))),
    Case("5.1L", "Variable available capacity, single flow, over DualPI2 (L4S)", "RFC 8867 §5.1 (over RFC 9332)",
         tuple(_variable("RFC 8867 §5.1") + _l4s_basic("RFC 8867 §5.1 over RFC 9332")),
         note=L4S_NOTE),
    Case("5.4L", "Competing media flows over DualPI2 (L4S)", "RFC 8867 §5.4 (over RFC 9332)",
         tuple(_sharing("RFC 8867 §5.4") + _l4s_basic("RFC 8867 §5.4 over RFC 9332")),
         note=L4S_NOTE),
    Case("5.6L", "L4S media flow against a long classic (Cubic) flow, DualPI2", "RFC 8867 §5.6 (over RFC 9332)",
         (no_starvation(STARVED_MAX, "RFC 8867 §5.6 expected behaviour: the media flow is not starved"),
          share_against_cross_traffic(TCP_SHARE_MIN, "RFC 8867 §5.6; RFC 8868 §3 (fairness)"),
          _l4s_delay("RFC 9332 §1: the coupling keeps L4S delay low beside a classic flow")),
         note=L4S_NOTE + " Cubic stays in the classic queue; its standing queue must not reach the media."),
    Case("5.6P", "L4S media flow against a long TCP Prague flow, DualPI2", "RFC 8867 §5.6 (over RFC 9332)",
         (no_starvation(STARVED_MAX, "RFC 8867 §5.6 expected behaviour: the media flow is not starved"),
          share_against_cross_traffic(TCP_SHARE_MIN, "RFC 8867 §5.6; RFC 8868 §3 (fairness)"),
          _l4s_delay("RFC 9330 §1: L4S flows share the low-latency queue")),
         note=L4S_NOTE + " The TCP flow is Prague (ECT(1)): both share the low-latency queue."),
    Case("6.1", "Media flows with priority (coupled)", "RFC 8867 §6.1",
         (rate_follows_capacity(RATE_LOW, "RFC 8867 §6.1; RFC 8868 §3 (bandwidth utilization)"),
          priority_share(PRIORITY_DEVIATION_MAX, SETTLE_S, "RFC 8867 §6.1 expected behaviour: shares by "
                         "priority; RFC 8699 §5.3 (FSE_R = P · S_CR / S_P)"),
          *_basic("RFC 8867 §6.1")),
         note="§5's defaults stand for §6.1's numbers; the two flows are coupled by RFC 8699's flow state "
              "exchange around the controller under test (priorities 2 and 1); a controller that cannot take "
              "a rate from outside is not applicable."),
    Case("6.2", "ECN: CoDel marking, ECN-capable flow", "RFC 8867 §6.2",
         tuple(_variable("RFC 8867 §6.2 (on §5.1's setup)") + _basic("RFC 8867 §6.2")
               + [signals_bounded(LOSS_MAX, "RFC 8867 §6.2 expected behaviour: react to CE marks; RFC 3168 §5")]),
         note="No rtcc controller reacts to CE marks yet, so only loss-or-ce can tell this case from §5.1."),
    Case("6.3", "Multiple bottlenecks (parking lot)", "RFC 8867 §6.3",
         (max_min_fair(MAX_MIN_MIN, SETTLE_S, "RFC 8867 §6.3 expected behaviour: a fair share at the bottleneck; "
                       "RFC 8868 §3 (fairness)"),
          *_basic("RFC 8867 §6.3")),
         note="§5's defaults stand for §6.3's numbers; cross traffic is media of the controller under test."),
    Case("8869", "Cellular link (LTE-like trace, an approximation)", "RFC 8869 §4 (approximated)",
         (rate_follows_capacity(RATE_LOW, "RFC 8869 §4 (approximated); RFC 8868 §3 (utilization)"),
          *_basic("RFC 8869 §4 (approximated)")),
         note="A trace-driven link, not RFC 8869's simulated LTE network; judged in 10 s pieces."),
]}


def case_dir() -> Path:
    from .demo import experiments_dir

    return experiments_dir() / "rmcat"


def case_files() -> dict[str, Path]:
    """Case id -> its scenario file (``<id>-<title>.toml`` in ``experiments/rmcat``)."""
    folder = case_dir()
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: the RMCAT case files are missing (rtcc/data/experiments/rmcat)")
    return {p.name.split("-", 1)[0]: p for p in sorted(folder.glob("*.toml"))}


def _case_key(case_id: str) -> tuple:
    """Sort key of a case id: its numbers, then its suffix ("5.1" before "5.1L" before "5.2")."""
    import re

    m = re.fullmatch(r"([\d.]*\d)([A-Za-z]*)", case_id)
    if m is None:
        return (math.inf, case_id)
    return (*(int(x) for x in m.group(1).split(".")), m.group(2))


def select_cases(text: str | None) -> list[str]:
    """Case ids from ``--cases`` text (``"5.1,5.3"``; None: all), checked against the files and
    rules; ValueError naming the valid ids otherwise."""
    files = case_files()
    valid = sorted(set(files) & set(CASES), key=_case_key)
    if text is None:
        return valid
    wanted = [c.strip() for c in text.split(",") if c.strip()]
    if not wanted:
        raise ValueError(f"--cases: expected case ids separated by commas; cases: {', '.join(valid)}")
    unknown = [c for c in wanted if c not in valid]
    if unknown:
        raise ValueError(f"--cases: unknown case {', '.join(map(repr, unknown))}; cases: {', '.join(valid)}")
    return sorted(dict.fromkeys(wanted), key=_case_key)


# -- building views ------------------------------------------------------------------------------


def view_of_run(folder: str | os.PathLike) -> RunView:
    """The :class:`RunView` of a run folder: the route facts and per-window rates the core wrote
    to ``facts.json`` (links and their capacity per window and segments, each flow's links, the
    propagation between them, its periods, media range, priority and received rate per window),
    ``summary.json``, and each packet's queuing delay from ``packets.parquet``."""
    import numpy as np
    import polars as pl

    from .result import Result

    run = Result.load(folder)
    summary, facts = run.summary, run.facts
    if facts["window_s"] != WINDOW_S:
        raise ValueError(f"{folder}: facts.json's windows are {facts['window_s']} s, the rules' {WINDOW_S} s")
    packets = pl.read_parquet(Path(folder) / "packets.parquet", columns=["flow", "enqueue_ns", "depart_ns"])
    capacity = {link["name"]: None if link["capacity_bps"] is None else np.array(link["capacity_bps"], dtype=float)
                for link in facts["links"]}
    segments = {link["name"]: [tuple(s) for s in link["segments"]] for link in facts["links"]}
    flows = []
    for i, (ff, fs) in enumerate(zip(facts["flows"], summary["flows"])):
        left = packets.filter((pl.col("flow") == i) & (pl.col("depart_ns") >= 0))
        queue_t = left["enqueue_ns"].to_numpy() / 1e9
        queue_ms = ((left["depart_ns"].to_numpy() - left["enqueue_ns"].to_numpy()) / 1e6
                    - ff["propagation_between_links_s"] * 1e3)
        links = tuple(ff["links"])
        flows.append(FlowView(ff["name"], ff["kind"], links[0], [tuple(p) for p in ff["periods"]],
                              ff["min_bitrate_bps"], ff["max_bitrate_bps"], fs, np.array(ff["rate_bps"], dtype=float),
                              queue_t, queue_ms, links if len(links) > 1 else (), ff["priority"]))
    return RunView(float(summary["duration_s"]), flows, capacity, segments, summary)


# -- judging -------------------------------------------------------------------------------------


@dataclass
class Judged:
    """One run judged: each rule's outcome and the key figures of the table."""

    case: str
    controller: str
    seed: int
    outcomes: list[tuple[Rule, Outcome]]
    figures: dict[str, float | None]

    @property
    def passed(self) -> bool:
        return all(o.passed for _, o in self.outcomes)


FIGURES = [  # key, header, digits
    ("rate_over_capacity", "rate / capacity", 2),
    ("queuing_p95_ms", "queue P95 ms", 0),
    ("loss_pct", "loss %", 2),
    ("jain", "Jain", 2),
    ("convergence_s", "convergence s", 1),
]


def figures(view: RunView, outcomes: list[tuple[Rule, Outcome]]) -> dict[str, float | None]:
    """The table's key figures of one run: the video flows' received rate over the capacity of
    their links (while any is active), their pooled P95 queuing delay and loss, Jain's index in the
    shared period, and the convergence time the case's rules measured (ramp-up or settling)."""
    import numpy as np

    got = cap = 0.0
    for link in view.links():
        capacity = view.capacity_bps.get(link)
        if capacity is None:
            continue
        flows = view.video_on(link)
        active = np.zeros(len(capacity), dtype=bool)
        for f in flows:
            active |= f.active_windows()
        got += float(sum(f.rate_bps for f in flows)[active].sum())
        cap += float(capacity[active].sum())
    delays = [f.queue_ms for f in view.flows if f.video and len(f.queue_ms)]
    sent = sum(f.summary.get("packets_sent") or 0 for f in view.flows if f.video)
    lost = sum(f.summary.get("packets_lost") or 0 for f in view.flows if f.video)
    index, _ = fairness(view, SETTLE_S)
    conv = [o.value for r, o in outcomes if r.name in ("ramps-up", "converges") and o.value is not None]
    return {
        "rate_over_capacity": got / cap if cap else None,
        "queuing_p95_ms": float(np.percentile(np.concatenate(delays), 95)) if delays else None,
        "loss_pct": 100.0 * lost / sent if sent else None,
        "jain": index,
        "convergence_s": max(conv) if conv else None,
    }


def judge(case: Case, view: RunView, controller: str = "", seed: int = 0) -> Judged:
    outcomes = [(rule, rule.check(view)) for rule in case.rules]
    return Judged(case.id, controller, seed, outcomes, figures(view, outcomes))


def _judge_folder(item: tuple[str, str, int, str]) -> tuple[list[Outcome], dict]:
    """A worker's part: the outcomes (in rule order) and figures of one run folder (rules hold
    functions, which do not cross processes; :func:`_judged` puts them back)."""
    case_id, controller, seed, folder = item
    j = judge(CASES[case_id], view_of_run(folder), controller, seed)
    return [o for _, o in j.outcomes], j.figures


def _judged(item: tuple[str, str, int, str], result: tuple[list[Outcome], dict]) -> Judged:
    case_id, controller, seed, _ = item
    outcomes, figs = result
    return Judged(case_id, controller, seed, list(zip(CASES[case_id].rules, outcomes)), figs)


# -- tables --------------------------------------------------------------------------------------


def _fmt(value: float | None, digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if math.isinf(value):
        return "never"
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def summarize(judged: list[Judged], cases: list[str], controllers: list[str],
              not_applicable: dict[tuple[str, str], str] | None = None) -> list[dict]:
    """One row per case and controller: verdict (pass when every seed passes every rule), seeds
    passing, the failing rules with their worst measured value, and the key figures' means. A
    (case, controller) in ``not_applicable`` (e.g. §6.1 for a controller that cannot be coupled)
    is the verdict "n/a" with the reason in place of the failing rules."""
    rows = []
    for case_id in cases:
        for label in controllers:
            reason = (not_applicable or {}).get((case_id, label))
            if reason is not None:
                rows.append({"case": case_id, "controller": label, "verdict": "n/a", "seeds_passing": 0,
                             "seeds": 0, "failing": f"not applicable: {reason}",
                             **{key: None for key, _, _ in FIGURES}})
                continue
            runs = [j for j in judged if j.case == case_id and j.controller == label]
            failing: dict[str, tuple[Outcome, int]] = {}
            for j in runs:
                for rule, outcome in j.outcomes:
                    if not outcome.passed and rule.name not in failing:
                        failing[rule.name] = (outcome, j.seed)
            row = {"case": case_id, "controller": label,
                   "verdict": "pass" if runs and all(j.passed for j in runs) else "fail",
                   "seeds_passing": sum(j.passed for j in runs), "seeds": len(runs),
                   "failing": "; ".join(f"{name}: {o.shown}, seed {seed}" for name, (o, seed) in failing.items())}
            for key, _, _ in FIGURES:
                values = [j.figures[key] for j in runs if j.figures[key] is not None]
                row[key] = sum(values) / len(values) if values else None
            rows.append(row)
    return rows


def markdown(rows: list[dict]) -> str:
    headers = ["case", "controller", "verdict", "seeds passing"] + [h for _, h, _ in FIGURES] + ["failing rules"]
    out = ["| " + " | ".join(headers) + " |",
           "|:---|:---|:---|---:|" + "---:|" * len(FIGURES) + ":---|"]
    for r in rows:
        cells = [r["case"], r["controller"], r["verdict"].upper() if r["verdict"] == "fail" else r["verdict"],
                 f"{r['seeds_passing']}/{r['seeds']}"]
        cells += [_fmt(r[k], d) for k, _, d in FIGURES] + [r["failing"] or "–"]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(out) + "\n"


def table_csv(rows: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    keys = ["case", "controller", "verdict", "seeds_passing", "seeds"] + [k for k, _, _ in FIGURES] + ["failing"]
    w.writerow(keys)
    for r in rows:
        w.writerow(["" if r[k] is None else repr(r[k]) if isinstance(r[k], float) else r[k] for k in keys])
    return buf.getvalue()


def rules_csv(judged: list[Judged]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["case", "controller", "seed", "rule", "passed", "value", "shown"])
    for j in judged:
        for rule, o in j.outcomes:
            w.writerow([j.case, j.controller, j.seed, rule.name, str(o.passed).lower(),
                        "" if o.value is None else repr(float(o.value)), o.shown])
    return buf.getvalue()


def text_table(rows: list[dict]) -> str:
    headers = ["case", "controller", "verdict", "seeds"] + [h for _, h, _ in FIGURES]
    body = [[r["case"], r["controller"], r["verdict"], f"{r['seeds_passing']}/{r['seeds']}"]
            + [_fmt(r[k], d) for k, _, d in FIGURES] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.ljust(w) if i < 3 else c.rjust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    out = [line(headers), line(["-" * w for w in widths])] + [line(b) for b in body]
    failing = [f"  {r['case']} {r['controller']}: {r['failing']}" for r in rows if r["failing"]]
    return "\n".join(out + (["failing rules (first seed that failed each) and cases not applicable:"] + failing
                            if failing else [])) + "\n"


# -- the report ----------------------------------------------------------------------------------


def _index_html(folder: Path, rows: list[dict], judged: list[Judged], cases: list[str], controllers: list[str],
                seeds: list[int], plots: dict[str, str], command: str) -> None:
    """``index.html`` (``templates/rmcat.html``): the case × controller grid first (each cell its
    verdict and the seeds that passed, coloured), the full table, then every case's rules with
    each seed's outcome, and its plot."""
    from .report import write_page

    grid_colour, row_colour = {"pass": "#cfeccf", "n/a": "#eeeeee"}, {"pass": "#e6f4e6", "n/a": "#eeeeee"}
    verdict = {(r["case"], r["controller"]): r for r in rows}

    def grid_cell(r: dict | None) -> dict | None:
        if r is None:
            return None
        text = r["verdict"] if r["verdict"] == "n/a" else f'{r["verdict"]} {r["seeds_passing"]}/{r["seeds"]}'
        return {"text": text, "colour": grid_colour.get(r["verdict"], "#f6c9c9"), "failing": r["failing"] or ""}

    files = case_files()
    sections = []
    for case_id in cases:
        case = CASES[case_id]
        rules = []
        for k, rule in enumerate(case.rules):
            cells = [[{"passed": o.passed, "seed": j.seed, "shown": o.shown}
                      for j in judged if j.case == case_id and j.controller == label for o in [j.outcomes[k][1]]]
                     for label in controllers]
            rules.append({"name": rule.name, "text": rule.text, "source": rule.source, "cells": cells})
        sections.append({"id": case_id, "section": case.section, "title": case.title, "file": files[case_id].name,
                         "note": case.note or "", "rules": rules, "plot": plots.get(case_id, ""),
                         "grid": [grid_cell(verdict.get((case_id, label))) for label in controllers]})
    table = [{"case": r["case"], "controller": r["controller"], "verdict": r["verdict"],
              "colour": row_colour.get(r["verdict"], "#fbe3e3"), "seeds": f'{r["seeds_passing"]}/{r["seeds"]}',
              "figures": [_fmt(r[k], d) for k, _, d in FIGURES], "failing": r["failing"] or "–"} for r in rows]
    write_page(folder / "index.html", "rmcat.html", "rtcc rmcat: RFC 8867 test cases", command=command,
               cases=sections, controllers=controllers, seeds=seeds, rows=table,
               headers=["case", "controller", "verdict", "seeds passing"] + [h for _, h, _ in FIGURES] + ["failing rules"])


def coupling_refusal(message: str) -> str | None:
    """Why a case cannot run the controller under test: a coupled flow it cannot join (the scenario
    error names a flow's ``coupling`` field), or an L4S flow it cannot drive (``ecn``); None for any other
    error."""
    marker = ".coupling: "
    if marker in message:
        return message.split(marker, 1)[1].strip()
    if ".ecn: " in message and 'ecn = "l4s"' in message:
        return "not an L4S controller: it does not answer CE marks by their share (RFC 9331 §4.3)"
    return None


def run_suite(out_dir: str | os.PathLike, controllers: list | None = None, cases: list[str] | None = None,
              seeds: list[int] | None = None, force: bool = False, jobs: int | None = None,
              backend: str = "local", address: str | None = None, progress: bool = False,
              plots: bool = True, command: str = "rtcc rmcat") -> list[dict]:
    """Run the suite and write the report folder ``out_dir`` atomically; return the table rows.

    ``controllers``: ControllerSpecs (default: :data:`DEFAULT_CONTROLLERS` that are registered);
    ``cases``: case ids (default: all); ``seeds``: default 1..3."""
    from ._core import ScenarioError
    from .atomic import atomic_dir, check_dest
    from .compare import _unique, folder_name
    from .progress import RunsProgress
    from .registry import PYTHON_CONTROLLERS, ControllerSpec, controllers as registered
    from .scenario import Scenario
    from .sweep import execute, parallel_map, worker_died

    registry = registered()
    if controllers is None:
        names = {c["name"] for c in registry}
        controllers = [ControllerSpec.make(n) for n in DEFAULT_CONTROLLERS if n in names]
    specs = _unique(controllers)
    for spec in specs:
        spec.check(registry)
    cases = select_cases(None) if cases is None else cases
    seeds = list(range(1, DEFAULT_SEEDS + 1)) if seeds is None else list(seeds)
    files = case_files()
    check_dest(out_dir, force)
    tasks, keys = [], []
    not_applicable: dict[tuple[str, str], str] = {}
    for case_id in cases:
        base = Scenario.from_file(files[case_id])
        for spec in specs:
            variant = base.with_controller(spec)
            try:
                variant.validate()
            except ScenarioError as err:
                reason = coupling_refusal(str(err))
                if reason is None:
                    raise
                not_applicable[(case_id, spec.label)] = reason
                continue
            for seed in seeds:
                rel = f"runs/{case_id}/{folder_name(spec.label)}/seed{seed}"
                keys.append((case_id, spec.label, seed, rel))
                tasks.append((variant.to_dict(), variant.base_dir, seed, rel, False, False))
    if any(s.name in PYTHON_CONTROLLERS for s in specs):
        if backend != "local":
            raise ValueError("a controller registered from Python runs only in this process, not on Ray")
        jobs = 1
    labels = [s.label for s in specs]
    with atomic_dir(out_dir, force=force) as tmp:
        tasks = [t[:3] + (str(tmp / t[3]),) + t[4:] for t in tasks]
        show = RunsProgress("rmcat", len(tasks)) if progress and tasks else None
        try:
            outputs, died = execute(tasks, jobs, show, backend, address)
        finally:
            if show:
                show.close()
        if died is not None:
            raise ScenarioError(worker_died(", ".join(f"case {keys[i][0]} / {keys[i][1]} / seed {keys[i][2]}"
                                                      for i in died)))
        for key, output in zip(keys, outputs):
            if output is None or output[0]:
                raise ScenarioError(f"case {key[0]} / {key[1]} / seed {key[2]}: "
                                    f"{output[1] if output else 'not run (an earlier run failed)'}")
        items = [(c, label, seed, str(tmp / rel)) for c, label, seed, rel in keys]
        # Judging and drawing read the run folders here, in local worker processes.
        local_jobs = jobs if backend == "local" else None
        judged = [_judged(item, result) for item, result in
                  zip(items, parallel_map(_judge_folder, items, local_jobs))]
        rows = summarize(judged, cases, labels, not_applicable)
        (tmp / "table.md").write_text(f"# rtcc rmcat\n\n`{command}`\n\n" + markdown(rows), encoding="utf-8")
        (tmp / "table.csv").write_text(table_csv(rows), encoding="utf-8")
        (tmp / "rules.csv").write_text(rules_csv(judged), encoding="utf-8")
        images = {}
        if plots:
            images = _draw(tmp, keys, cases, labels, seeds[0], local_jobs)
        _index_html(tmp, rows, judged, cases, labels, seeds, images, command)
    return rows


def _draw(folder: Path, keys: list, cases: list[str], labels: list[str], seed: int,
          jobs: int | None = None) -> dict[str, str]:
    """One figure per case: per-flow rate against capacity and queuing delay over time, one row
    per controller, the first seed's run; the figures drawn in ``jobs`` worker processes (the
    drawing took as long as the suite's simulations)."""
    (folder / "plots").mkdir(exist_ok=True)
    figures = []
    for case_id in cases:
        runs = {label: str(folder / rel) for c, label, s, rel in keys if c == case_id and s == seed}
        if not runs:  # every controller not applicable
            continue
        path = folder / "plots" / f"case-{case_id}.png"
        title = f"{CASES[case_id].section}: {CASES[case_id].title} (seed {seed})"
        figures.append((case_id, [(label, runs[label]) for label in labels if label in runs], str(path), title))
    from .sweep import parallel_map

    parallel_map(_draw_case, [f[1:] for f in figures], jobs)
    return {case_id: Path(path).relative_to(folder).as_posix() for case_id, _, path, _ in figures}


def _draw_case(figure: tuple) -> None:
    """One case's figure (a worker's task): (label, run folder) pairs, the image's path, its title."""
    from .plots import rmcat_case_plot

    runs, path, title = figure
    rmcat_case_plot({label: view_of_run(Path(run)) for label, run in runs}, Path(path), title)
