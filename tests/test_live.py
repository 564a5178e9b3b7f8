"""Real traffic through `rtcc emu` against the simulator's prediction for the same link.

Kernel TCP (Cubic, via iperf3) crosses a 10 Mbit/s link with 10 ms of delay each way, once behind
100 packets of drop-tail and once behind CoDel; the simulator runs its own Cubic flow on the same
scenario file. Needs root, network namespaces and iperf3 (`make test` installs it where it can);
skipped with the reason otherwise.

Tolerances (docs/live.md):
- goodput within 3 % of the simulator's (the issue's bound). The simulator counts bytes on the
  wire and its segments are 1500 bytes; kernel TCP carries 1448 bytes of payload in a 1500-byte
  packet (20 IP + 20 TCP + 12 timestamp option), so the prediction is the simulated wire rate
  times 1448/1500.
- median time in the queue within 2 ms: both Cubics keep the drop-tail queue full (about 100 ms)
  and CoDel near its 5 ms target; the simulator's Cubic is a model of the kernel's, not a copy,
  so their sawtooths differ in detail.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from rtcc.live import convert_emu_logs, emu_log_dir
from rtcc.scenario import Scenario

PAYLOAD_SHARE = 1448 / 1500


def _unavailable() -> str | None:
    if os.geteuid() != 0:
        return "needs root"
    if not Path("/dev/net/tun").exists():
        return "no /dev/net/tun"
    if shutil.which("iperf3") is None:
        return "iperf3 is not installed (apt-get install iperf3)"
    if subprocess.run(["unshare", "--net", "true"], capture_output=True).returncode != 0:
        return "cannot create network namespaces"
    return None


needs_live = pytest.mark.skipif(_unavailable() is not None, reason=str(_unavailable()))

SCENARIO = """
name = "tcp-{name}"
duration = "{seconds}s"
[path.forward]
capacity = "10Mbps"
delay = "10ms"
queue = {queue}
[[flows]]
kind = "tcp"
controller = "cubic"
"""

SECONDS = 15


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return s.getsockname()[1]


def _iperf_through_emu(scenario: Path, logs: Path) -> dict:
    """Run iperf3's client inside `rtcc emu` against a one-shot server on the host."""
    port = _free_port()
    server = subprocess.Popen(["iperf3", "-s", "-1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        out = logs / "iperf3.json"
        client = (f'iperf3 -c "$RTCC_EMU_HOST" -p {port} -t {SECONDS} -C cubic -J > {out}')
        # The server needs a moment to listen; the client retries its connection for 2 s.
        for _ in range(20):
            done = subprocess.run(
                [sys.executable, "-m", "rtcc", "emu", "-q", "--scenario", str(scenario),
                 "--log-dir", str(logs / "emu"), "--", "sh", "-c", client],
                capture_output=True, text=True, timeout=SECONDS + 60)
            result = json.loads(out.read_text())
            if "connection refused" not in result.get("error", "").lower():
                break
        assert done.returncode == 0, done.stderr + json.dumps(result.get("error"))
        return result
    finally:
        server.kill()
        server.wait()


def _emu_queue_ms(logs: Path) -> float:
    p = pl.read_csv(logs / "emu" / "packets.csv")
    p = p.filter((pl.col("direction") == "up") & (pl.col("dropped") == 0) & (pl.col("size") > 1000))
    return float(((p["depart_ns"] - p["enqueue_ns"]) / 1e6).median())


@needs_live
@pytest.mark.parametrize("name,queue", [("droptail", '"100pkts"'), ("codel", '{ kind = "codel" }')])
def test_kernel_cubic_through_emu_matches_the_simulator(tmp_path, name, queue):
    scenario = tmp_path / f"{name}.toml"
    scenario.write_text(SCENARIO.format(name=name, seconds=SECONDS, queue=queue))

    iperf = _iperf_through_emu(scenario, tmp_path)
    goodput = iperf["end"]["sum_received"]["bits_per_second"]

    sim = Scenario.from_file(scenario).run(keep_packets=True)
    flow = sim.summary["flows"][0]
    predicted = flow["throughput_bps"] * PAYLOAD_SHARE
    packets = sim.packets.filter(pl.col("dropped").not_() & (pl.col("depart_ns") >= 0))
    sim_queue_ms = float(((packets["depart_ns"] - packets["enqueue_ns"]) / 1e6).median())

    emu_queue_ms = _emu_queue_ms(tmp_path)
    summary = json.loads((tmp_path / "emu" / "emu.json").read_text())
    report = (f"{name}: iperf3 {goodput / 1e6:.3f} Mbit/s, simulator predicts {predicted / 1e6:.3f}; "
              f"median queue {emu_queue_ms:.1f} ms live, {sim_queue_ms:.1f} ms simulated; "
              f"emulator's own drops {summary['emulator_drops']}")
    print(report)
    assert abs(goodput - predicted) / predicted < 0.03, report
    assert abs(emu_queue_ms - sim_queue_ms) < 2.0, report
    drops = summary["emulator_drops"]
    assert drops["failed_writes"] == 0 and not drops["uplink_intake"] and not drops["downlink_intake"], report


def test_emu_log_dir_is_read_from_the_shells_own_options():
    assert emu_log_dir(["--uplink", "1Mbps", "--log-dir", "out", "--", "x", "--log-dir", "y"]) == Path("out")
    assert emu_log_dir(["--log-dir=out2", "--", "x"]) == Path("out2")
    assert emu_log_dir(["--", "iperf3", "--log-dir", "y"]) is None


def test_emu_packet_log_becomes_the_simulators_parquet_schema(tmp_path):
    (tmp_path / "packets.csv").write_text(
        "direction,flow,seq,size,enqueue_ns,depart_ns,recv_ns,dropped\n"
        "up,0,0,1500,1000,2000,12000,0\n"
        "down,1,0,60,5000,-1,-1,1\n")
    table = pl.read_parquet(convert_emu_logs(tmp_path))
    sim_columns = ["flow", "seq", "kind", "size", "frame", "send_ns", "enqueue_ns", "depart_ns", "recv_ns", "dropped"]
    assert table.columns == ["direction", *sim_columns]
    assert table["dropped"].to_list() == [False, True]
    assert table["send_ns"].to_list() == [1000, 5000]
    assert table["recv_ns"].to_list() == [12000, -1]
