"""C3G and its BBR baseline on links their paper never tried (docs/c3g.md, "Beyond the testbed"):
the media defaults c3g asks for (no quality scaling, no frame dropper: the paper's server changes
only the bitrate, section IV, and its client shows every frame, section V-B), the 9 -> 6 Mbit/s drop
with rtcc's default media (experiments/c3g/default-media.toml), a link below the encoder's floor
with an outage, and the BBR baseline on a 1000-packet buffer. Fixed seeds; each tolerance names
the paper's number it comes from and what we measured."""

import importlib.util
import tomllib
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import rtcc

REPO = Path(__file__).resolve().parents[1]
C3G = REPO / "experiments" / "c3g"


def _tables():
    spec = importlib.util.spec_from_file_location("c3g_tables", C3G / "tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TABLES = _tables()


def default_media(seed: int, controller: str = "c3g", **fields):
    """experiments/c3g/default-media.toml with `fields` written on its flow."""
    data = rtcc.Scenario.from_file(C3G / "default-media.toml").to_dict()
    data["seed"] = seed
    data["flows"][0]["controller"] = controller
    data["flows"][0].update(fields)
    return rtcc.Scenario.from_dict(data, base_dir=C3G).run()


def stable(result) -> dict:
    """The tables' stability metrics after the drop (c_lim 6, alpha 1.5), and the packet loss of the
    stable minute: packets sent from 21 s to 80 s that never arrived."""
    m = TABLES.metrics(result, 6.0, 1.5)
    sent = result.packets.filter((pl.col("send_ns") >= 21e9) & (pl.col("send_ns") < 80e9))
    m["loss_pct"] = 100 * sent.filter(pl.col("recv_ns") < 0).height / sent.height
    return m


def test_c3g_takes_its_media_defaults_unless_the_scenario_writes_them():
    r = default_media(1)
    media = r.facts["flows"][0]["media"]
    assert (media["degradation"], media["frame_dropper"], media["pushback"]) == ("disabled", False, True)
    assert media["controller_defaults"] == ["degradation", "frame_dropper"]
    assert media["encoder"] == "lagged"
    assert r.summary["flows"][0]["frames_skipped"] == 0, "the paper's server sends every frame (section IV)"
    own = default_media(1, degradation="balanced", frame_dropper=True)
    media = own.facts["flows"][0]["media"]
    assert (media["degradation"], media["frame_dropper"]) == ("balanced", True)
    assert media["controller_defaults"] == []
    # With them the dropper skips frames after each deep drain and the next drain reads that silence
    # as the capacity: 21 % of the link (measured 21-44 % over seeds 1-4) against 87 %.
    assert own.summary["flows"][0]["frames_skipped"] > 100
    assert stable(own)["use_pct"] < 0.5 * stable(r)["use_pct"]


@pytest.fixture(scope="module")
def drop_runs():
    return [stable(default_media(seed)) for seed in (1, 2, 3, 4)]


def test_c3g_uses_the_link_after_a_drop_with_default_media(drop_runs):
    # Paper (Table 1): C3G uses 93-96 % of the link when stable and loses no frame. With the VP8-fit
    # encoder (per-frame noise 0.23, a scene cut every 20 s coded as one frame of 7 budgets, as VP8
    # codes it) we measure 71-85 % (mean 79.5) and lose 0.3-1.1 % of the packets; with the earlier
    # bursts (2.5x for 1 s) 80-90 % (mean 86) and 0.4-1.5 %; before the media defaults 21-44 %
    # (docs/c3g.md).
    use = np.array([m["use_pct"] for m in drop_runs])
    loss = np.array([m["loss_pct"] for m in drop_runs])
    assert use.mean() >= 76 and use.min() >= 68, use
    assert loss.mean() <= 1.2 and loss.max() <= 1.6, loss


@pytest.mark.xfail(strict=True, reason="the issue's acceptance (at least 90 % of the link with under 1 % loss) is not "
                   "met with the VP8-fit encoder: 79.5 % and 0.77 % over seeds 1-4; an oracle at 90 % of the capacity "
                   "reaches 88.5 % with 0.46 % loss on the same media; without the encoder's scene cuts and with the "
                   "testbed's frame-size noise c3g uses 93 % with no loss (docs/c3g.md)")
def test_c3g_meets_the_issues_acceptance_with_default_media(drop_runs):
    use = np.mean([m["use_pct"] for m in drop_runs])
    loss = np.mean([m["loss_pct"] for m in drop_runs])
    assert use >= 90 and loss < 1, (use, loss)


def hard_link(seed: int):
    """4 Mbit/s, then 150 kbit/s (below the 720p encoder's floor, 0.28 Mbit/s, which c3g's fixed
    resolution cannot leave) from 10 s, nothing at all from 15 s, and 4 Mbit/s again from 17 s."""
    return rtcc.Scenario(
        duration="80s", seed=seed, name="below-the-floor",
        forward={"schedule": [["0s", "4Mbps"], ["10s", "150kbps"], ["15s", "0bps"], ["17s", "4Mbps"]],
                 "delay": "20ms", "queue": "100ms"},
        flows=[{"name": "game", "controller": "c3g", "encoder": "lagged"}],
    ).run()


@pytest.mark.parametrize("seed", [1, 2])
def test_c3g_never_stops_on_a_link_below_its_encoders_floor(seed):
    packets = hard_link(seed).packets
    sent = np.bincount(packets["send_ns"].to_numpy() // 1_000_000_000, weights=packets["size"].to_numpy() * 8.0,
                       minlength=80)
    got = packets.filter(pl.col("recv_ns") >= 0)
    received = np.bincount(got["recv_ns"].to_numpy() // 1_000_000_000, weights=got["size"].to_numpy() * 8.0,
                           minlength=80)
    # It sends in every second once the link is back (measured at least 0.16 Mbit/s).
    assert sent[17:80].min() > 0.1e6, sent[17:80]
    # And climbs back: the paper regains a doubled capacity in 36.2 +- 16.4 s (Table 2); from the
    # encoder's floor it takes several doublings, and 43-63 s after the link came back we measure
    # 2.0-2.1 Mbit/s of the 4. At least a quarter of the link.
    assert received[60:80].mean() >= 1e6, received[60:80]


def cellular(controller: str, params: dict | None = None):
    """experiments/c3g/cellular.toml's scenario (25 ms each way, 1000 packets of buffer, the 1080p
    lagged encoder) on the bundled LTE-like trace, seed 1."""
    data = tomllib.loads((C3G / "cellular.toml").read_text())["scenario"]
    data["seed"] = 1
    data["flows"][0]["controller"] = controller
    if params:
        data["flows"][0]["params"] = params
    return rtcc.Scenario.from_dict(data, base_dir=C3G).run().summary["flows"][0]


def test_c3g_bbr_fills_a_deep_buffer_because_its_rtprop_window_sees_the_queue():
    # The paper's BBR takes RTprop as the smallest RTVL over w = 2 dt (section VI-A): behind a standing
    # queue that is the queue, the BDP grows with it, and the probes go on. Measured: frame latency
    # P95 32-40 s with 68 % loss.
    paper = cellular("c3g-bbr")
    assert paper["frame_latency_ms"]["p95"] > 10_000 and paper["loss_rate"] > 0.3
    # BBR's own 10 s filter (section III-A: "tens of seconds to minutes") and a cut at every congested
    # iteration keep it under a second: 175 ms, no loss.
    fixed = cellular("c3g-bbr", {"rtprop_window": "10s", "cut_during_hold": True})
    assert fixed["frame_latency_ms"]["p95"] < 1000 and fixed["loss_rate"] < 0.01
