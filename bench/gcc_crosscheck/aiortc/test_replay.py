"""Checks for replay.py, collected by the project's test run (pyproject's testpaths); skipped
when aiortc is not installed."""

import datetime
import os
import random
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import replay  # noqa: E402

clock = pytest.importorskip("aiortc.clock")


def test_abs_send_time_matches_aiortc_sender():
    # aiortc's sender: (clock.current_ntp_time() >> 14) & 0x00FFFFFF
    rnd = random.Random(1)
    for _ in range(2000):
        t_us = rnd.randrange(0, 10**12)
        dt = clock.NTP_EPOCH + datetime.timedelta(microseconds=t_us)
        expected = (clock.datetime_to_ntp(dt) >> 14) & 0x00FFFFFF
        assert replay.abs_send_time_24(t_us) == expected


def test_abs_send_time_wraps_at_64_s():
    assert replay.abs_send_time_24(0) == 0
    assert replay.abs_send_time_24(1_000_000) == 1 << 18
    assert replay.abs_send_time_24(64_000_000) == 0
    assert replay.abs_send_time_24(63_999_999) == 0xFFFFFF


def test_arrival_ms():
    assert replay.arrival_ms(1999) == 1
    assert replay.arrival_ms(1999, "nearest") == 2
    assert replay.arrival_ms(1499, "nearest") == 1


def _flow(n=3000, step_us=2000, size=1200):
    # a constant-rate flow whose queueing delay ramps up for 1 s at t = 3 s
    # and drains slower than real time (arrivals stay strictly increasing)
    out = []
    for i in range(n):
        s = i * step_us
        extra = 0
        if 3_000_000 <= s < 4_000_000:
            extra = (s - 3_000_000) // 5
        elif s >= 4_000_000:
            extra = max(0, 200_000 - (s - 4_000_000) // 2)
        out.append((i, s, s + 20_000 + extra, size))
    return out


def test_replay_forms_and_wrap_invariance():
    pk = _flow()
    a = replay.replay(pk)
    assert a, "expected some estimates"
    recv = [p[2] for p in pk]
    assert all(x < y for x, y in zip(recv, recv[1:]))
    assert all(isinstance(t, int) and isinstance(v, int) for t, v in a)
    b = replay.replay(
        [dict(seq=q, send_us=s, recv_us=r, size=z) for q, s, r, z in pk]
    )
    assert a == b
    # moving the 64 s wrap into the run (a whole number of seconds keeps
    # the 2^-18 s flooring identical) must not change anything
    assert replay.replay(pk, send_offset_us=63_000_000) == a
    # arrival order, not log order
    assert replay.replay(list(reversed(pk))) == a


def test_lost_packets_skipped():
    pk = _flow()
    lost = [(q, s, -1 if q % 7 == 0 else r, z) for q, s, r, z in pk]
    kept = [p for p in lost if p[2] != -1]
    assert replay.replay(lost) == replay.replay(kept)


def test_bad_packet_is_input_error():
    with pytest.raises(replay.InputError, match="packet #1"):
        replay.replay([(0, 0, 10, 100), (1, "x", 20, 100)])
    with pytest.raises(replay.InputError, match="recv_us"):
        replay.replay([(0, 0, -3, 100)])


@pytest.mark.parametrize(
    "body, msg",
    [
        ("seq,send_us,recv_us,size,feedback_us\n0,1,2,3,4\n1,a,3,4,5\n", "line 3"),
        ("seq,send_us,recv_us,size,feedback_us\n0,1,2\n", "line 2"),
        ("seq,send,recv_us,size\n0,1,2,3\n", "line 1"),
        ("", "empty file"),
    ],
)
def test_cli_malformed_csv(tmp_path, body, msg):
    src = tmp_path / "in.csv"
    src.write_text(body)
    r = subprocess.run(
        [sys.executable, os.path.join(HERE, "replay.py"), str(src), "-o",
         str(tmp_path / "out.csv")],
        capture_output=True, text=True,
    )
    assert r.returncode == 2
    assert msg in r.stderr
    assert "Traceback" not in r.stderr
