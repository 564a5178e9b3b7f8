"""Rewards for the learning environment, computed from each step's statistics.

A step's statistics (``rtcc._core.Env.stat_names``) are measured by the simulator, not by the
agent: the true one-way delays, the losses as the receiver counts them, the frames shown and the
bottleneck's capacity. A reward is a function of them:

- ``"network"``: OpenNetLab's network score (the MMSys 2021 challenge's ``eval_network.py``,
  ``NetEvalMethodNormal``), over the step and divided by 100:
  ``0.2 · delay score + 0.2 · receive-rate score + 0.3 · (1 − loss ratio)``, where the delay
  score is ``(400 − min(400, P95 delay)) / 400`` with delays counted from the smallest seen so far
  (OpenNetLab counts them from the first packet's, the smallest on an idle path), and the
  receive-rate score is ``min(1, receive rate / 4 Mbit/s)`` (its ``ground_recv_rate`` of 500
  bytes per millisecond); a step in which nothing arrived scores 0 for loss too. At most 0.7.
- ``"qoe"``: from rtcc's frame metrics: ``quality − latency − freeze``, with quality the frames'
  mean PSNR / 50 when the encoder has a quality model, else ``ln(1 + displayed Mbit/s)``; latency
  the mean capture-to-display time of the frames shown in the step, in seconds; freeze the share
  of the step the picture was frozen (WebRTC's freeze rule, see ``docs/learning.md``).
- a callable ``f(stats: dict[str, float | None]) -> float``, called once per agent and step
  (None where a value does not exist in the step, e.g. no frame shown).
"""

from __future__ import annotations

import math
from typing import Callable, Mapping

import numpy as np

NAMES = ("network", "qoe")

#: OpenNetLab's ``max_delay`` (ms) and ``ground_recv_rate`` (500 bytes/ms = 4 Mbit/s).
MAX_DELAY_MS = 400.0
GROUND_RATE_BPS = 4e6


def network_score(s: Mapping[str, np.ndarray], ground_bps: float = GROUND_RATE_BPS,
                  max_delay_ms: float = MAX_DELAY_MS) -> np.ndarray:
    """OpenNetLab's network score over a step, / 100 (arrays of any shape)."""
    queuing = np.minimum(max_delay_ms, s["delay_p95_ms"] - s["delay_min_ms"])
    delay_score = np.where(np.isnan(queuing), 0.0, (max_delay_ms - queuing) / max_delay_ms)
    rate_score = np.minimum(1.0, s["recv_bps"] / ground_bps)
    # A step in which nothing arrived scores nothing for loss either (OpenNetLab scores a whole
    # call; per step, a silent link must not earn the loss term).
    loss_score = np.where(s["recv_packets"] > 0, 1.0 - s["loss_ratio"], 0.0)
    return 0.2 * delay_score + 0.2 * rate_score + 0.3 * loss_score


def qoe(s: Mapping[str, np.ndarray], latency_weight: float = 1.0, freeze_weight: float = 1.0) -> np.ndarray:
    """Quality minus latency (s) minus the frozen share of the step."""
    psnr = s["psnr_db"]
    quality = np.where(np.isnan(psnr), np.log1p(s["displayed_bps"] / 1e6), psnr / 50.0)
    latency = np.nan_to_num(s["frame_latency_ms"], nan=0.0) / 1000.0
    return quality - latency_weight * latency - freeze_weight * s["frozen_fraction"]


def _network_one(s: Mapping[str, float | None], ground_bps: float = GROUND_RATE_BPS,
                 max_delay_ms: float = MAX_DELAY_MS) -> float:
    """:func:`network_score` of one agent's step, from its statistics (None where absent)."""
    p95, low = s["delay_p95_ms"], s["delay_min_ms"]
    delay_score = 0.0 if p95 is None or low is None else (max_delay_ms - min(max_delay_ms, p95 - low)) / max_delay_ms
    loss_score = 1.0 - s["loss_ratio"] if s["recv_packets"] > 0 else 0.0
    return 0.2 * delay_score + 0.2 * min(1.0, s["recv_bps"] / ground_bps) + 0.3 * loss_score


def _qoe_one(s: Mapping[str, float | None], latency_weight: float = 1.0, freeze_weight: float = 1.0) -> float:
    """:func:`qoe` of one agent's step."""
    psnr = s["psnr_db"]
    quality = math.log1p(s["displayed_bps"] / 1e6) if psnr is None else psnr / 50.0
    latency = (s["frame_latency_ms"] or 0.0) / 1000.0
    return quality - latency_weight * latency - freeze_weight * s["frozen_fraction"]


def resolve_one(reward: str | Callable[[dict], float]) -> Callable[[dict], float]:
    """A function from one agent's step statistics (a dict, None where a value is absent) to its
    reward: the same rewards as :func:`resolve`, without arrays (a single environment's step)."""
    if callable(reward):
        def call(stats: dict) -> float:
            value = reward(stats)
            try:
                return float(value)
            except (TypeError, ValueError):
                raise TypeError(f"reward callable returned {value!r}, expected a number") from None
        return call
    if reward not in NAMES:
        raise ValueError(f"unknown reward {reward!r}; valid rewards: {', '.join(NAMES)}, or a callable")
    return _network_one if reward == "network" else _qoe_one


def resolve(reward: str | Callable[[dict], float], names: list[str]) -> Callable[[np.ndarray], np.ndarray]:
    """A function from a statistics array ``[..., len(names)]`` to rewards ``[...]``."""
    if callable(reward):
        one = resolve_one(reward)

        def call(stats: np.ndarray) -> np.ndarray:
            out = np.zeros(stats.shape[:-1])
            for index in np.ndindex(*stats.shape[:-1]):
                row = stats[index]
                if np.isnan(row[0]):  # a finished simulation's row
                    continue
                out[index] = one(row_dict(names, row))
            return out
        return call
    if reward not in NAMES:
        raise ValueError(f"unknown reward {reward!r}; valid rewards: {', '.join(NAMES)}, or a callable")
    fn = network_score if reward == "network" else qoe

    def builtin(stats: np.ndarray) -> np.ndarray:
        view = {n: stats[..., i] for i, n in enumerate(names)}
        return np.nan_to_num(fn(view), nan=0.0)
    return builtin


def row_dict(names: list[str], row) -> dict:
    """One agent's statistics by name, None where a value is absent (NaN)."""
    return {n: (v if v == v else None) for n, v in zip(names, row.tolist())}
