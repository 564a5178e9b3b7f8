#!/usr/bin/env python3
"""Open-loop replay of a packet log into aiortc's receive-side estimator.

aiortc.rate.RemoteBitrateEstimator is aiortc's Python port of libwebrtc's
RemoteBitrateEstimatorAbsSendTime (inter-arrival grouping, Kalman overuse
estimator, adaptive-threshold overuse detector, AIMD rate control). This
script feeds it the packet arrivals of a log. It only observes what the
estimator does; nothing is fed back to a sender.

Input CSV (with header), one row per packet of one video flow:

    seq,send_us,recv_us,size,feedback_us

recv_us == -1 means the packet was lost: it is skipped, because a receiver
never sees it. feedback_us is read but not used.

Library use:

    import replay                       # bench/gcc_crosscheck/aiortc on sys.path
    rembs = replay.replay(packets)      # [(time_us, estimate_bps), ...]
    rows = replay.replay_trace(packets) # per-packet state (see TRACE_FIELDS)

A packet is a mapping with keys send_us, recv_us, size (seq is optional), or
a sequence (seq, send_us, recv_us, size[, feedback_us]).

CLI:

    python replay.py IN.csv -o OUT.csv [--trace TRACE.csv] [--summary]

See README.md next to this file for the conversions and aiortc's constants.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, Optional

PINNED_AIORTC_VERSION = "1.16.0"

# abs-send-time: 24 bits, 6.18 fixed point seconds, so it wraps every 64 s.
ABS_SEND_TIME_FRACTION_BITS = 18
ABS_SEND_TIME_MASK = 0xFFFFFF

# A fixed, arbitrary SSRC: the log holds one flow. aiortc only uses SSRCs to
# list them in the REMB.
DEFAULT_SSRC = 0x1234

REQUIRED_COLUMNS = ("seq", "send_us", "recv_us", "size")

TRACE_FIELDS = (
    "time_us",  # recv_us of the packet (receiver clock, µs, as in the input)
    "seq",
    "arrival_ms",  # what aiortc was given as arrival_time_ms
    "abs_send_time",  # what aiortc was given as abs_send_time (24 bits)
    "remb",  # 1 if this packet made the estimator emit an estimate (REMB)
    "estimate_bps",  # AimdRateControl.current_bitrate after the packet
    "rc_initialized",  # AimdRateControl.current_bitrate_initialized
    "rc_state",  # AimdRateControl.state: HOLD / INCREASE / DECREASE
    "near_max",  # AimdRateControl.near_max (additive increase when 1)
    "detector",  # OveruseDetector.hypothesis: NORMAL / OVERUSING / UNDERUSING
    "threshold_ms",  # OveruseDetector.threshold (adaptive gamma)
    "offset_ms",  # OveruseEstimator.offset() (Kalman m_i)
    "modified_offset",  # min(num_deltas, 60) * offset, compared to threshold
    "num_deltas",  # OveruseEstimator.num_of_deltas()
    "incoming_bps",  # RateCounter rate over the last 1000 ms (None -> empty)
)


class InputError(ValueError):
    """Bad input: a malformed CSV line or an invalid packet."""


class AiortcError(RuntimeError):
    """aiortc's estimator itself raised while being fed a packet.

    Known case (aiortc 1.16.0): once the estimate has fallen to 0 bit/s (a
    decrease while the measured rate is 0, e.g. zero-size packets), the next
    additive increase divides by zero in
    AimdRateControl._near_max_rate_increase (rate.py:163-164). libwebrtc
    cannot get there: it clamps the estimate to a minimum bitrate.
    """


class Packet(NamedTuple):
    seq: int
    send_us: int
    recv_us: int  # -1 = lost
    size: int


# ---------------------------------------------------------------- aiortc


def _import_rate() -> Any:
    try:
        from aiortc import rate  # type: ignore[import-not-found]
    except ImportError as exc:  # pragma: no cover - environment problem
        raise RuntimeError(
            "aiortc is not installed: pip install -r "
            "bench/gcc_crosscheck/aiortc/requirements.txt "
            f"(aiortc=={PINNED_AIORTC_VERSION}) ({exc})"
        ) from exc
    return rate


def aiortc_version() -> Optional[str]:
    try:
        from importlib.metadata import version

        return version("aiortc")
    except Exception:
        return None


def warn_if_unpinned(stream: Any = sys.stderr) -> None:
    v = aiortc_version()
    if v != PINNED_AIORTC_VERSION:
        print(
            f"warning: aiortc {v} installed, README.md describes "
            f"{PINNED_AIORTC_VERSION}; constants and line numbers may differ",
            file=stream,
        )


# ------------------------------------------------------------ conversions


def abs_send_time_24(send_us: int, send_offset_us: int = 0) -> int:
    """Sender clock (µs) -> 24-bit abs-send-time, 6.18 fixed point seconds.

    Matches what aiortc's sender writes (rtcrtpsender.py):
    ``(clock.current_ntp_time() >> 14) & 0x00FFFFFF``, where the NTP time is
    32.32 fixed point with a floored fraction (clock.datetime_to_ntp); i.e.
    floor(t_us * 2**18 / 1e6) mod 2**24. Wraps every 64 s.
    """
    t = send_us + send_offset_us
    return ((t << ABS_SEND_TIME_FRACTION_BITS) // 1_000_000) & ABS_SEND_TIME_MASK


def arrival_ms(recv_us: int, rounding: str = "floor") -> int:
    """Receiver clock (µs) -> the int milliseconds aiortc works in.

    aiortc stamps arrivals with clock.current_ms() = int(seconds * 1000),
    i.e. floored for positive times; "floor" reproduces that. "nearest"
    rounds half up, like libwebrtc's Timestamp::ms().
    """
    if rounding == "floor":
        return recv_us // 1000
    if rounding == "nearest":
        return (recv_us + 500) // 1000
    raise ValueError(f"unknown rounding {rounding!r} (floor|nearest)")


# ----------------------------------------------------------------- input


def _as_int(value: Any, name: str, where: str) -> int:
    if isinstance(value, bool):
        raise InputError(f"{where}: {name} must be an integer, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if value.is_integer():
            return int(value)
        raise InputError(f"{where}: {name} must be an integer, got {value!r}")
    s = str(value).strip()
    try:
        return int(s)
    except ValueError:
        raise InputError(
            f"{where}: {name} must be an integer, got {s!r}"
        ) from None


def _check(p: Packet, where: str) -> Packet:
    if p.recv_us < 0 and p.recv_us != -1:
        raise InputError(
            f"{where}: recv_us must be >= 0, or -1 for a lost packet, "
            f"got {p.recv_us}"
        )
    if p.size < 0:
        raise InputError(f"{where}: size must be >= 0, got {p.size}")
    return p


def to_packet(obj: Any, index: int = 0) -> Packet:
    """Normalise one packet given as Packet, mapping or sequence."""
    where = f"packet #{index}"
    if isinstance(obj, Packet):
        return _check(obj, where)
    if isinstance(obj, Mapping):
        missing = [k for k in ("send_us", "recv_us", "size") if k not in obj]
        if missing:
            raise InputError(f"{where}: missing {', '.join(missing)}")
        seq = obj.get("seq", index)
        vals = (seq, obj["send_us"], obj["recv_us"], obj["size"])
    elif isinstance(obj, Sequence) and not isinstance(obj, (str, bytes)):
        if len(obj) < 4:
            raise InputError(
                f"{where}: expected (seq, send_us, recv_us, size[, ...]), "
                f"got {len(obj)} fields"
            )
        vals = tuple(obj[:4])
    else:
        raise InputError(f"{where}: unsupported packet type {type(obj).__name__}")
    names = ("seq", "send_us", "recv_us", "size")
    seq, send_us, recv_us, size = (
        _as_int(v, n, where) for v, n in zip(vals, names)
    )
    return _check(Packet(seq, send_us, recv_us, size), where)


def read_csv(path: str) -> list[Packet]:
    """Read the packet log; raise InputError naming the file and line."""
    try:
        f = open(path, newline="", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot open: {exc.strerror or exc}") from None
    packets: list[Packet] = []
    with f:
        reader = csv.reader(f)
        try:
            header = next(reader, None)
            if header is None:
                raise InputError(f"{path}: empty file (expected a header line)")
            header = [h.strip() for h in header]
            if header and header[0].startswith("\ufeff"):
                header[0] = header[0][1:]
            missing = [c for c in REQUIRED_COLUMNS if c not in header]
            if missing:
                raise InputError(
                    f"{path} line 1: header lacks column(s) {', '.join(missing)}"
                    f" (expected seq,send_us,recv_us,size,feedback_us; "
                    f"got {','.join(header)})"
                )
            idx = [header.index(c) for c in REQUIRED_COLUMNS]
            for row in reader:
                line = reader.line_num
                if not row or all(not c.strip() for c in row):
                    continue  # blank line
                if len(row) != len(header):
                    raise InputError(
                        f"{path} line {line}: {len(row)} field(s), "
                        f"header has {len(header)}"
                    )
                where = f"{path} line {line}"
                seq, send_us, recv_us, size = (
                    _as_int(row[i], c, where) for i, c in zip(idx, REQUIRED_COLUMNS)
                )
                packets.append(_check(Packet(seq, send_us, recv_us, size), where))
        except csv.Error as exc:
            raise InputError(f"{path} line {reader.line_num}: {exc}") from None
        except UnicodeDecodeError as exc:
            raise InputError(f"{path}: not UTF-8 text ({exc.reason})") from None
    return packets


# ---------------------------------------------------------------- replay


def _arrivals(packets: Iterable[Any]) -> list[Packet]:
    pkts = [to_packet(p, i) for i, p in enumerate(packets)]
    received = [p for p in pkts if p.recv_us != -1]
    received.sort(key=lambda p: p.recv_us)  # stable: ties keep log order
    return received


def _iter_states(
    packets: Iterable[Any],
    *,
    arrival_rounding: str = "floor",
    size_overhead: int = 0,
    send_offset_us: int = 0,
    start_bitrate_bps: Optional[int] = None,
    rtt_ms: Optional[int] = None,
    ssrc: int = DEFAULT_SSRC,
) -> Iterator[dict[str, Any]]:
    rate = _import_rate()
    arrival_ms(0, arrival_rounding)  # validate the option early
    if start_bitrate_bps is not None and start_bitrate_bps <= 0:
        raise InputError(f"start bitrate must be > 0, got {start_bitrate_bps}")
    if rtt_ms is not None and rtt_ms < 0:
        raise InputError(f"rtt must be >= 0 ms, got {rtt_ms}")
    if size_overhead < 0:
        raise InputError(f"size overhead must be >= 0, got {size_overhead}")
    arrivals = _arrivals(packets)
    rbe = rate.RemoteBitrateEstimator()
    # Neither knob exists in aiortc's API; both poke its AimdRateControl.
    if rtt_ms is not None:
        # aiortc never updates rtt (fixed 200 ms, rate.py:45); it only
        # enters the additive (near-max) increase (rate.py:166).
        rbe.rate_control.rtt = rtt_ms
    if start_bitrate_bps is not None and arrivals:
        # aiortc's own test hook (rate.py:51-57, "For testing purposes"):
        # marks the rate control initialised at the first arrival.
        rbe.rate_control.set_estimate(
            start_bitrate_bps, arrival_ms(arrivals[0].recv_us, arrival_rounding)
        )
    for p in arrivals:
        now_ms = arrival_ms(p.recv_us, arrival_rounding)
        ast = abs_send_time_24(p.send_us, send_offset_us)
        size = max(0, p.size - size_overhead)
        try:
            remb = rbe.add(
                arrival_time_ms=now_ms,
                abs_send_time=ast,
                payload_size=size,
                ssrc=ssrc,
            )
        except Exception as exc:
            raise AiortcError(
                f"aiortc's estimator raised {type(exc).__name__}: {exc} "
                f"while fed packet seq {p.seq} (recv_us {p.recv_us}, "
                f"estimate before it {rbe.rate_control.current_bitrate} bps)"
            ) from exc
        rc = rbe.rate_control
        det = rbe.detector
        est = rbe.estimator
        n = est.num_of_deltas()
        # rate() at the same now_ms as the add() above erases nothing new,
        # so reading it does not change the estimator's state.
        incoming = rbe.incoming_bitrate.rate(now_ms)
        yield {
            "time_us": p.recv_us,
            "seq": p.seq,
            "arrival_ms": now_ms,
            "abs_send_time": ast,
            "remb": 1 if remb is not None else 0,
            "remb_bps": remb[0] if remb is not None else None,
            "estimate_bps": rc.current_bitrate,
            "rc_initialized": 1 if rc.current_bitrate_initialized else 0,
            "rc_state": rc.state.name,
            "near_max": 1 if rc.near_max else 0,
            "detector": det.state().name,
            "threshold_ms": det.threshold,
            "offset_ms": est.offset(),
            "modified_offset": min(n, rate.MIN_NUM_DELTAS) * est.offset(),
            "num_deltas": n,
            "incoming_bps": incoming,
        }


def replay(
    packets: Iterable[Any],
    *,
    arrival_rounding: str = "floor",
    size_overhead: int = 0,
    send_offset_us: int = 0,
    start_bitrate_bps: Optional[int] = None,
    rtt_ms: Optional[int] = None,
) -> list[tuple[int, int]]:
    """Feed the packets to a fresh aiortc RemoteBitrateEstimator.

    Returns one (time_us, estimate_bps) per estimate the estimator emits
    (what aiortc would send as REMB), in arrival order. time_us is the
    recv_us of the packet whose arrival produced it.

    arrival_rounding: "floor" (aiortc's own clock) or "nearest".
    size_overhead: bytes subtracted from each size before it is passed as
        aiortc's payload_size (default 0: the log's size as is).
    send_offset_us: added to send_us before the abs-send-time conversion
        (moves the 64 s wrap; for testing).
    start_bitrate_bps: None (default) keeps aiortc's own start: no estimate
        until 3 s of measured rate, then the measured rate. A value starts
        the rate control there at the first arrival (aiortc's set_estimate).
    rtt_ms: None (default) keeps aiortc's fixed 200 ms; a value replaces it
        (it only affects the additive increase).
    Raises InputError for an invalid packet, AiortcError if aiortc's own
    code fails on the input.
    """
    return [
        (s["time_us"], s["remb_bps"])
        for s in _iter_states(
            packets,
            arrival_rounding=arrival_rounding,
            size_overhead=size_overhead,
            send_offset_us=send_offset_us,
            start_bitrate_bps=start_bitrate_bps,
            rtt_ms=rtt_ms,
        )
        if s["remb"]
    ]


def replay_trace(
    packets: Iterable[Any],
    *,
    every_packet: bool = False,
    arrival_rounding: str = "floor",
    size_overhead: int = 0,
    send_offset_us: int = 0,
    start_bitrate_bps: Optional[int] = None,
    rtt_ms: Optional[int] = None,
) -> list[dict[str, Any]]:
    """Per-packet estimator state (keys: TRACE_FIELDS).

    By default only the packets after which the estimate, the rate-control
    state, the detector state or the initialisation flag changed, or which
    produced a REMB, are kept (plus the first); every_packet keeps all.
    """
    states = _iter_states(
        packets,
        arrival_rounding=arrival_rounding,
        size_overhead=size_overhead,
        send_offset_us=send_offset_us,
        start_bitrate_bps=start_bitrate_bps,
        rtt_ms=rtt_ms,
    )
    return [{k: s[k] for k in TRACE_FIELDS} for s in _trace_rows(states, every_packet)]


def _trace_rows(
    states: Iterable[dict[str, Any]], every_packet: bool
) -> Iterator[dict[str, Any]]:
    prev: Optional[tuple[Any, ...]] = None
    for s in states:
        key = (s["estimate_bps"], s["rc_state"], s["detector"], s["rc_initialized"])
        if every_packet or s["remb"] or key != prev:
            yield s
        prev = key


# ---------------------------------------------------------------- summary


def held_median(
    rembs: Sequence[tuple[int, int]], t0_us: int, t1_us: int, step_us: int = 10_000
) -> Optional[float]:
    """Median over [t0, t1) of the last emitted estimate, sampled every step."""
    vals = []
    j = -1
    t = t0_us
    while t < t1_us:
        while j + 1 < len(rembs) and rembs[j + 1][0] <= t:
            j += 1
        if j >= 0:
            vals.append(rembs[j][1])
        t += step_us
    return statistics.median(vals) if vals else None


def summary_lines(
    rembs: Sequence[tuple[int, int]],
    windows: Sequence[tuple[float, float]],
    incoming: Optional[Sequence[tuple[int, Optional[int]]]] = None,
) -> list[str]:
    """One line per window (seconds of recv time): medians of the estimate.

    incoming: optional (time_us, incoming_bps) per packet, to also report
    the median received rate aiortc measured (its 1 s RateCounter).
    """
    lines = []
    for a, b in windows:
        t0, t1 = int(a * 1e6), int(b * 1e6)
        inside = [v for t, v in rembs if t0 <= t < t1]
        med = statistics.median(inside) if inside else None
        held = held_median(rembs, t0, t1)
        line = (
            f"{a:g}-{b:g} s: {len(inside)} REMB, median REMB "
            f"{_mbps(med)}, median held estimate (10 ms grid) {_mbps(held)}"
        )
        if incoming is not None:
            rx = [v for t, v in incoming if t0 <= t < t1 and v is not None]
            line += (
                f", median incoming rate (per packet) "
                f"{_mbps(statistics.median(rx) if rx else None)}"
            )
        lines.append(line)
    return lines


def _mbps(v: Optional[float]) -> str:
    return "n/a" if v is None else f"{v / 1e6:.3f} Mbit/s"


def _parse_windows(text: str) -> list[tuple[float, float]]:
    out = []
    for part in text.split(","):
        a, sep, b = part.strip().partition(":")
        try:
            lo, hi = float(a), float(b)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"bad window {part!r}, expected START:END in seconds"
            ) from None
        if not sep or hi <= lo:
            raise argparse.ArgumentTypeError(
                f"bad window {part!r}, expected START:END with END > START"
            )
        out.append((lo, hi))
    return out


# -------------------------------------------------------------------- CLI


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        description="Replay a packet log open-loop into aiortc's "
        "RemoteBitrateEstimator and write its estimates."
    )
    ap.add_argument("input", help="CSV: seq,send_us,recv_us,size,feedback_us")
    ap.add_argument(
        "-o", "--output", required=True,
        help="CSV out: time_us,estimate_bps, one row per emitted estimate (REMB)",
    )
    ap.add_argument(
        "--trace",
        help="also write per-packet estimator state here "
        "(rows where estimate/detector/rate-control state changed, or a REMB)",
    )
    ap.add_argument(
        "--trace-every-packet", action="store_true",
        help="with --trace: one row for every received packet",
    )
    ap.add_argument(
        "--arrival-rounding", choices=("floor", "nearest"), default="floor",
        help="µs -> ms for arrival times (default floor, as aiortc's clock)",
    )
    ap.add_argument(
        "--size-overhead", type=int, default=0, metavar="BYTES",
        help="subtract BYTES from each packet size before passing it as "
        "aiortc's payload_size (default 0: wire size as logged)",
    )
    ap.add_argument(
        "--send-offset-us", type=int, default=0, metavar="US",
        help="add US to send_us before the abs-send-time conversion "
        "(moves the 64 s wrap; for testing)",
    )
    ap.add_argument(
        "--start-bitrate", type=int, default=None, metavar="BPS",
        help="start aiortc's rate control at BPS on the first arrival "
        "(its set_estimate test hook); default: aiortc's own start (none "
        "until 3 s of measured rate)",
    )
    ap.add_argument(
        "--rtt-ms", type=int, default=None, metavar="MS",
        help="replace aiortc's fixed 200 ms RTT (used only by its additive "
        "increase); default: leave it",
    )
    ap.add_argument(
        "--summary", nargs="?", const="2:10,12:20,22:30", type=_parse_windows,
        metavar="A:B,...",
        help="print median estimates over windows in seconds of recv time "
        "(default 2:10,12:20,22:30)",
    )
    args = ap.parse_args(argv)

    if args.size_overhead < 0:
        print("error: --size-overhead must be >= 0", file=sys.stderr)
        return 2
    try:
        _import_rate()
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    warn_if_unpinned()

    opts = dict(
        arrival_rounding=args.arrival_rounding,
        size_overhead=args.size_overhead,
        send_offset_us=args.send_offset_us,
        start_bitrate_bps=args.start_bitrate,
        rtt_ms=args.rtt_ms,
    )
    try:
        packets = read_csv(args.input)
        states = list(_iter_states(packets, **opts))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except AiortcError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3

    rembs = [(s["time_us"], s["remb_bps"]) for s in states if s["remb"]]
    n_lost = sum(1 for p in packets if p.recv_us == -1)

    try:
        with open(args.output, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["time_us", "estimate_bps"])
            w.writerows(rembs)
        if args.trace:
            rows = _trace_rows(states, args.trace_every_packet)
            with open(args.trace, "w", newline="") as f:
                w = csv.writer(f, lineterminator="\n")
                w.writerow(TRACE_FIELDS)
                for s in rows:
                    w.writerow([_fmt(s[k]) for k in TRACE_FIELDS])
    except OSError as exc:
        print(f"error: cannot write output: {exc}", file=sys.stderr)
        return 2

    print(
        f"{len(packets)} packets, {n_lost} lost, {len(states)} fed to "
        f"aiortc {aiortc_version()}; {len(rembs)} estimates -> {args.output}",
        file=sys.stderr,
    )
    if args.summary:
        incoming = [(s["time_us"], s["incoming_bps"]) for s in states]
        for line in summary_lines(rembs, args.summary, incoming):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
