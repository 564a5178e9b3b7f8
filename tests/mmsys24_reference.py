"""An independent, plain-Python reading of the MMSys 2024 bandwidth-estimation challenge's
150-value observation, used by tests/test_mmsys24_features.py to check rtcc's Rust implementation
(`rtcc._core.mmsys24_features`). It is written for clarity, not speed: one loop over the ten
slots, lists and comprehensions, no shared code with the Rust side.

Source of the definition: the ACM MMSys 2024 Grand Challenge "Offline RL for Bandwidth Estimation
in Real Time Communications" (microsoft/RL4BandwidthEstimationChallenge). Its published feature
list has 15 features, each over 5 short (60 ms) and 5 long (600 ms) monitor intervals, and its
layout puts feature f (1..15) in slot j (0..9) at index (f-1)*10 + j; slots 0..4 are the short
intervals newest first, slots 5..9 the long ones newest first. Lost packets are counted as
OpenNetLab's receiver counts them (gym-example, packet_record), except that the gap is taken to the
largest sequence number received before the packet rather than the previous packet's (so that a
reordered packet's gap is not counted twice): never negative, and 0 for the first packet.

The windows are half-open, (start, end]: a packet arriving exactly at the anchor T is in slot 0,
one arriving exactly at T - 60 ms is in slot 1 (and slot 5). Only packets with arrival <= T count.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

SHORT_MS = 60.0  # length of slots 0..4
LONG_MS = 600.0  # length of slots 5..9
SLOTS_PER_SCALE = 5
N_SLOTS = 2 * SLOTS_PER_SCALE
N_FEATURES = 15
DELAY_REFERENCE_MS = 200.0  # feature 5 is the mean delay minus this fixed value

MEDIA, PADDING, RETRANSMISSION, PROBE, FEC, AUDIO = 0, 1, 2, 3, 4, 6
VIDEO_KINDS = {MEDIA, RETRANSMISSION, FEC}  # feature 13
AUDIO_KINDS = {AUDIO}  # feature 14
PROBING_KINDS = {PADDING, PROBE}  # feature 15


class Packet(NamedTuple):
    arrival_ms: float
    delay_ms: float  # arrival (receiver clock) minus send (sender clock); may be negative
    size: int
    kind: int
    lost: int  # gap to the largest sequence number received before this packet


class Window(NamedTuple):
    start_ms: float  # exclusive
    end_ms: float  # inclusive
    length_ms: float


def windows(anchor_ms: float) -> list[Window]:
    """The ten slots' windows, in slot order."""
    short = [
        Window(anchor_ms - (j + 1) * SHORT_MS, anchor_ms - j * SHORT_MS, SHORT_MS)
        for j in range(SLOTS_PER_SCALE)
    ]
    long = [
        Window(anchor_ms - (j + 1) * LONG_MS, anchor_ms - j * LONG_MS, LONG_MS)
        for j in range(SLOTS_PER_SCALE)
    ]
    return short + long


def loss_counts(seq: list[int]) -> list[int]:
    """Per packet, in arrival order: max(0, seq - largest earlier seq - 1); 0 for the first."""
    counts = []
    largest = None
    for s in seq:
        counts.append(0 if largest is None else max(0, s - largest - 1))
        largest = s if largest is None else max(largest, s)
    return counts


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def slot_features(inside: list[Packet], min_delay_so_far: float, length_ms: float) -> list[float]:
    """Features 1..15 of one slot: `inside` are its packets in arrival order, `min_delay_so_far`
    the smallest delay of any packet up to the window's end (0 when there is none)."""
    if not inside:
        return [0.0] * 5 + [min_delay_so_far] + [0.0] * 9

    n = len(inside)
    total_bytes = sum(p.size for p in inside)
    delays = [p.delay_ms for p in inside]
    mean_delay = _mean(delays)
    min_delay = min(delays)

    gaps = [b.arrival_ms - a.arrival_ms for a, b in zip(inside, inside[1:])]
    interarrival = _mean(gaps) if gaps else 0.0
    jitter = math.sqrt(_mean([(g - interarrival) ** 2 for g in gaps])) if gaps else 0.0

    lost = sum(p.lost for p in inside)
    packets_with_loss = sum(1 for p in inside if p.lost > 0)

    def share(kinds: set[int]) -> float:
        return sum(1 for p in inside if p.kind in kinds) / n

    return [
        8 * total_bytes / (length_ms / 1000),  # 1 receiving rate, bps
        float(n),  # 2 received packets
        float(total_bytes),  # 3 received bytes
        mean_delay - min_delay_so_far,  # 4 queuing delay
        mean_delay - DELAY_REFERENCE_MS,  # 5 delay
        min_delay_so_far,  # 6 minimum seen delay
        mean_delay / min_delay if min_delay > 0 else 0.0,  # 7 delay ratio
        mean_delay - min_delay,  # 8 delay average-minimum difference
        interarrival,  # 9 inter-arrival time
        jitter,  # 10 jitter
        lost / (lost + n),  # 11 loss ratio
        lost / packets_with_loss if packets_with_loss else 0.0,  # 12 lost per loss
        share(VIDEO_KINDS),  # 13 video probability
        share(AUDIO_KINDS),  # 14 audio probability
        share(PROBING_KINDS),  # 15 probing probability
    ]


def features(arrival_ms, send_ms, size, seq, kind, anchor_ms) -> np.ndarray:
    """The 150-value observation at `anchor_ms` (receiver clock) from the packets received so far,
    given in arrival order as parallel arrays. Returns float64, feature f slot j at (f-1)*10 + j."""
    arrivals = [float(a) for a in arrival_ms]
    if any(b < a for a, b in zip(arrivals, arrivals[1:])):
        raise ValueError("packets must be in arrival order")
    # Python ints, so that a sequence number below an earlier one cannot wrap around (uint64).
    lost = loss_counts([int(s) for s in seq])
    packets = [
        Packet(a, a - float(s), int(b), int(k), n)
        for a, s, b, k, n in zip(arrivals, send_ms, size, kind, lost, strict=True)
    ]
    received = [p for p in packets if p.arrival_ms <= anchor_ms]

    table = np.zeros((N_FEATURES, N_SLOTS))
    for j, w in enumerate(windows(anchor_ms)):
        inside = [p for p in received if w.start_ms < p.arrival_ms <= w.end_ms]
        so_far = [p.delay_ms for p in received if p.arrival_ms <= w.end_ms]
        table[:, j] = slot_features(inside, min(so_far) if so_far else 0.0, w.length_ms)
    return table.reshape(N_FEATURES * N_SLOTS)  # row f-1, column j -> index (f-1)*10 + j
