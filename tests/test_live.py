"""Real traffic through `rtcc emu`, and rtcc's own video flows run live, against the simulator's
runs of the same scenario files (docs/live.md has the numbers and the plots).

Needs root, network namespaces and iperf3 (`make test` installs it where it can); skipped with the
reason otherwise.

Kernel TCP (iperf3; Cubic behind 100 packets of drop-tail, on a constant rate and on a constant
mahimahi trace, and behind CoDel; BBR behind drop-tail) crosses a 10 Mbit/s link with 10 ms of
delay each way; the simulator runs its own Cubic or BBR
flow. Tolerances:
- goodput within 3 % of the simulator's (the issue's bound). The simulator counts bytes on the
  wire and its segments are 1500 bytes; kernel TCP carries 1448 bytes of payload in a 1500-byte
  packet (20 IP + 20 TCP + 12 timestamp option), so the prediction is the simulated wire rate
  times 1448/1500.
- for Cubic behind drop-tail, the longest time in the queue within 3.5 ms: the emulator runs the
  simulator's own queue, so a full 100-packet queue holds a packet for the same 120 ms in both;
  the live side adds its scheduling delay (122.0 against 119.0 ms was seen once on a loaded
  machine, 120.0 otherwise).
- the median time in the queue within a tolerance per case. CoDel holds it near its 5 ms target
  and BBR near its own, within 2-3.5 ms. Cubic behind drop-tail needs 10 ms more: its epochs
  last about 4.7 s (K = cbrt(W_max * 0.3 / 0.4) with W_max near 140 packets), so a 15 s run
  holds three sawtooths whose phase follows the slow-start exit, which the kernel's HyStart
  decides from real timing. Live medians of 86.9, 88.9 and 100.9 ms against the simulator's
  99.0 ms were measured in CI runs of the same case (it matched within 1 ms on others), so the
  tolerance is 15 ms, an eighth of the 120 ms queue: a queue that is not kept full (CoDel's
  5 ms) or a different sawtooth (a median under 84 ms) still fails.
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

from rtcc.live import convert_emu_logs, emu_log_dir, phase_table, run_live, uplink_shares
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

# Real-time emulation is only as exact as the machine is idle: on a loaded machine (parallel
# builds) the emulator delivers packets late and the processes around it are scheduled late, and
# the comparisons with the simulator measure the load, not the models. The emulator reports its
# lateness (emu.json); above this p99 a comparison is skipped with the number (its goal is 0.5 ms,
# measured 69 µs on this machine idle).
MAX_LATENESS_P99_US = 2000.0


def _require_idle(emu_dir: Path) -> None:
    lateness = json.loads((emu_dir / "emu.json").read_text())["delivery_lateness"]
    if lateness.get("p99_us", 0.0) > MAX_LATENESS_P99_US:
        pytest.skip(f"the machine is too loaded for real-time emulation: delivery lateness p99 "
                    f"{lateness['p99_us']:.0f} µs (over {MAX_LATENESS_P99_US:.0f} µs)")

SCENARIO = """
name = "tcp-{name}"
duration = "{seconds}s"
[path.forward]
{capacity}
delay = "10ms"
queue = {queue}
[[flows]]
kind = "tcp"
controller = "{cc}"
"""

SECONDS = 15


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return s.getsockname()[1]


def _iperf_through_emu(scenario: Path, logs: Path, cc: str = "cubic") -> dict:
    """Run iperf3's client inside `rtcc emu` against a one-shot server on the host."""
    port = _free_port()
    server = subprocess.Popen(["iperf3", "-s", "-1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        out = logs / "iperf3.json"
        client = (f'iperf3 -c "$RTCC_EMU_HOST" -p {port} -t {SECONDS} -C {cc} -J > {out}')
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


def _emu_queue_ms(logs: Path) -> pl.Series:
    """Each delivered data packet's time in the uplink queue, in ms."""
    p = pl.read_csv(logs / "emu" / "packets.csv")
    p = p.filter((pl.col("direction") == "up") & (pl.col("dropped") == 0) & (pl.col("size") > 1000))
    return (p["depart_ns"] - p["enqueue_ns"]) / 1e6


def _kernel_has(cc: str) -> bool:
    available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
    return available.exists() and cc in available.read_text().split()


def _constant_trace(path: Path, mbps: int) -> str:
    """A mahimahi trace of a constant rate: `mbps` 1500-byte opportunities spread over 12 ms
    (1500 bytes every 1.2 ms is 10 Mbit/s)."""
    path.write_text("".join(f"{12 * (i + 1) // mbps}\n" for i in range(mbps)))
    return f'trace = "{path.name}"'


@needs_live
@pytest.mark.parametrize("cc,name,queue,queue_tol_ms", [
    # Three Cubic sawtooths in 15 s: the median follows their phase (module docstring).
    ("cubic", "droptail", '"100pkts"', 15.0),
    ("cubic", "trace", '"100pkts"', 15.0),
    ("cubic", "codel", '{ kind = "codel" }', 2.0),
    # Kernel BBR kept 8.2-8.6 ms queued over three runs, the simulator's 10.5 ms.
    ("bbr", "droptail", '"100pkts"', 3.5),
])
def test_kernel_tcp_through_emu_matches_the_simulator(tmp_path, cc, name, queue, queue_tol_ms):
    if not _kernel_has(cc):
        pytest.skip(f"the kernel has no tcp_{cc}")
    scenario = tmp_path / f"{name}.toml"
    capacity = _constant_trace(tmp_path / "10mbps.trace", 10) if name == "trace" else 'capacity = "10Mbps"'
    scenario.write_text(SCENARIO.format(name=name, seconds=SECONDS, queue=queue, cc=cc, capacity=capacity))

    sim = Scenario.from_file(scenario).run(keep_packets=True)
    flow = sim.summary["flows"][0]
    predicted = flow["throughput_bps"] * PAYLOAD_SHARE
    packets = sim.packets.filter(pl.col("dropped").not_() & (pl.col("depart_ns") >= 0))
    sim_queue = (packets["depart_ns"] - packets["enqueue_ns"]) / 1e6
    # The live side once more before a queue miss fails: a host busy with other work paces the
    # kernel's sends in bursts the emulator's lateness check does not see (once, BBR's median
    # was 24.8 ms live while builds ran beside it, against 8.2-8.6 ms idle).
    for attempt in (1, 2):
        logs = tmp_path / f"attempt{attempt}"
        logs.mkdir()
        iperf = _iperf_through_emu(scenario, logs, cc)
        _require_idle(logs / "emu")
        # The kernel's own word for the algorithm the connection used.
        assert iperf["end"]["sender_tcp_congestion"] == cc
        goodput = iperf["end"]["sum_received"]["bits_per_second"]
        emu_queue = _emu_queue_ms(logs)
        if abs(emu_queue.median() - sim_queue.median()) < queue_tol_ms:
            break

    summary = json.loads((logs / "emu" / "emu.json").read_text())
    report = (f"{cc}, {name}: iperf3 {goodput / 1e6:.3f} Mbit/s, simulator predicts {predicted / 1e6:.3f}; "
              f"queue median {emu_queue.median():.1f} ms live, {sim_queue.median():.1f} ms simulated, "
              f"longest {emu_queue.max():.1f} and {sim_queue.max():.1f} ms; "
              f"emulator's own drops {summary['emulator_drops']} (attempt {attempt})")
    print(report)
    assert abs(goodput - predicted) / predicted < 0.03, report
    assert abs(emu_queue.median() - sim_queue.median()) < queue_tol_ms, report
    if cc == "cubic" and name != "codel":
        # Cubic fills the drop-tail queue: both hold a packet for the queue's full 120 ms.
        assert abs(emu_queue.max() - sim_queue.max()) < 3.5, report
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
    sim_columns = ["flow", "seq", "kind", "size", "frame", "send_ns", "enqueue_ns", "depart_ns", "recv_ns", "dropped",
                   "ecn"]
    assert table.columns == ["direction", *sim_columns]
    assert table["dropped"].to_list() == [False, True]
    assert table["send_ns"].to_list() == [1000, 5000]
    assert table["recv_ns"].to_list() == [12000, -1]


# The bundled step link (experiments/demo/step.toml: 20 -> 5 -> 20 Mbit/s, 40 ms RTT, 200 ms of
# queue) with its phases shortened from 40/20/40 s to 10/10/10 s, to keep CI short.
STEP = """
name = "step-short"
duration = "30s"
seed = 1
[path.forward]
schedule = [["0s", "20Mbps"], ["10s", "5Mbps"], ["20s", "20Mbps"]]
delay = "20ms"
queue = "200ms"
[path.reverse]
delay = "20ms"
[[flows]]
name = "video"
controller = "sqp"
frame_jitter = "1ms"
"""
# Each phase without the 2 s after a change of capacity.
PHASES = [(2, 10), (12, 20), (22, 30)]


def _live_and_simulated(tmp_path, controller: str):
    tmp_path.mkdir(parents=True, exist_ok=True)
    scenario = tmp_path / "step.toml"
    scenario.write_text(STEP)
    live = run_live(scenario, tmp_path / "logs", controller=controller)
    _require_idle(tmp_path / "logs" / "emu")
    simulated = Scenario.from_file(scenario).with_controller(controller).run()
    table = phase_table(live, simulated, PHASES)
    print(controller)
    print(table)
    return table


@needs_live
@pytest.mark.parametrize("controller,phases,mbps_tol,delay_tol_ms", [
    # Open loop: the transport and the emulated link alone (measured: 0.1 % and 0.1 ms).
    ("fixed:rate=4Mbps", [0, 1, 2], 0.01, 1.0),
    # Measured: 1.9 % and 0.9 ms at most over three runs.
    ("sqp", [0, 1, 2], 0.10, 5.0),
    # After the drop only (measured: 9 % and 1.3 ms at most). Before it, gcc's start-up forks
    # on tens of microseconds of timing (docs/live.md): the simulator with 0, 20, 50, 100 and
    # 200 us of path jitter gives phase means of 7.4, 7.4, 14.5, 14.5 and 3.7 Mbit/s (live: 16.8).
    # Three live runs gave 4.03-4.40 Mbit/s after the drop against the simulator's 4.43; one run in
    # about six forks after the drop too (3.06 Mbit/s), so gcc gets a second run when its first
    # misses (the fork is gcc's, not the transport's: the open-loop and sqp rows have no retry).
    ("gcc", [1, 2], 0.15, 5.0),
])
def test_a_live_flow_follows_its_simulation_on_the_step_link(tmp_path, controller, phases, mbps_tol, delay_tol_ms):
    def misses(table) -> list[dict]:
        rows = [table.row(i, named=True) for i in phases]
        return [r for r in rows if abs(r["mbps_diff"]) >= mbps_tol or abs(r["delay_diff_ms"]) >= delay_tol_ms]

    missed = misses(_live_and_simulated(tmp_path / "first", controller))
    if missed and controller == "gcc":
        missed = misses(_live_and_simulated(tmp_path / "second", controller))
    assert not missed, missed


COMPETE = """
name = "video-and-cubic"
duration = "30s"
seed = 1
[path.forward]
capacity = "10Mbps"
delay = "20ms"
queue = "100pkts"
[path.reverse]
delay = "20ms"
[[flows]]
name = "video"
controller = "gcc"
[[flows]]
name = "cubic"
kind = "tcp"
controller = "cubic"
start = "5s"
stop = "25s"
"""


@needs_live
def test_a_live_video_flow_shares_the_link_with_kernel_cubic(tmp_path):
    scenario = tmp_path / "compete.toml"
    scenario.write_text(COMPETE)
    port = _free_port()
    server = subprocess.Popen(["iperf3", "-s", "-1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # The live video is the scenario's flow 0; kernel Cubic replaces the simulated one.
        cubic = f'sleep 5; iperf3 -c "$RTCC_EMU_HOST" -p {port} -t 20 -C cubic >/dev/null'
        run_live(scenario, tmp_path / "logs", flow=0, beside=cubic)
    finally:
        server.kill()
        server.wait()
    shares = uplink_shares(tmp_path / "logs" / "emu", 7, 25)
    live_video = shares.filter(pl.col("protocol") == "udp")["share"].sum()
    live_tcp = shares.filter(pl.col("protocol") == "tcp")["share"].sum()

    sim = Scenario.from_file(scenario).run(keep_packets=True)
    window = sim.packets.filter((pl.col("recv_ns") >= 7e9) & (pl.col("recv_ns") < 25e9))
    by_flow = window.group_by("flow").agg(pl.col("size").sum()).sort("flow")["size"].to_list()
    sim_video = by_flow[0] / sum(by_flow)
    print(f"video share of the 10 Mbit/s link beside Cubic: live {live_video:.2f} (kernel Cubic {live_tcp:.2f}), "
          f"simulated {sim_video:.2f}")
    assert live_video > 0.1 and live_tcp > 0.1, "neither flow starves"
    # Not compared with the simulation: five live runs gave the video 0.42, 0.40, 0.14, 0.56 and
    # 0.37 of the link, the simulator 0.33-0.38 over three seeds and 0, 50 and 200 us of path jitter
    # (docs/live.md).


def test_live_commands_report_bad_input_in_one_line():
    for args, expected in [
        (["send", "--scenario", "missing.toml", "--to", "127.0.0.1:9"], "missing.toml"),
        (["recv", "--scenario", "missing.toml", "--listen", "127.0.0.1:0"], "missing.toml"),
        (["emu", "--uplink", "3 furlongs", "--", "true"], "--uplink"),
    ]:
        done = subprocess.run([sys.executable, "-m", "rtcc", *args], capture_output=True, text=True, timeout=60)
        assert done.returncode != 0
        assert done.stderr.startswith("rtcc: error:") and expected in done.stderr, done.stderr
        assert "Traceback" not in done.stderr and "panicked" not in done.stderr


def test_a_flow_runs_live_over_loopback_and_is_summarised_like_a_simulated_one(tmp_path):
    # No root needed: sender and receiver on 127.0.0.1, nothing emulated (the scenario's link is
    # far above the flow's rate, so the simulation has nothing to queue either).
    scenario = tmp_path / "loopback.toml"
    scenario.write_text('''
name = "loopback"
duration = "4s"
[path.forward]
capacity = "100Mbps"
delay = "0ms"
[[flows]]
controller = "fixed"
params = { rate = "2Mbps" }
''')
    live = run_live(scenario, tmp_path / "logs", emulate=False)
    simulated = Scenario.from_file(scenario).run()
    a, b = live.summary["flows"][0], simulated.summary["flows"][0]
    assert set(live.summary) == set(simulated.summary) and set(a) == set(b), "the same summary"
    assert a["frames_sent"] == b["frames_sent"] == 120
    assert abs(a["throughput_bps"] / b["throughput_bps"] - 1) < 0.02, (a["throughput_bps"], b["throughput_bps"])
    assert a["packets_lost"] == 0 and a["frames_displayed"] >= 118
    assert live.frames.columns == simulated.frames.columns
    assert live.packets.columns == simulated.packets.columns
