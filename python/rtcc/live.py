"""The live commands' logs in rtcc's Parquet schema (docs/live.md).

The Rust core writes plain CSV while it runs (nothing to hold in memory, nothing lost if the run
is cut short); after the run, these functions turn each log folder into the Parquet tables the
simulator writes, so the same plots and tables read both.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np
import polars as pl

from .atomic import atomic_file

def packet_schema() -> dict:
    """The simulator's packet log columns and their types, in order: the core's schema
    (``rtcc_sim::tables::packet_schema``), read off an empty packet log."""
    from . import _core

    return dict(pl.DataFrame(_core.packet_schema()).schema)


def emu_packets(log_dir: str | os.PathLike) -> pl.DataFrame:
    """`rtcc emu --log-dir DIR`'s packets.csv as a DataFrame with the simulator's packet columns
    (the core's schema) after the direction. Packets are not classified (the emulator sees IP
    packets of any application), so `kind` is 0 and `frame` -1; `send_ns` is the time the packet
    entered the emulated link; `dropped` is the CSV's 0/1; `ecn` 0 (Not-ECT: the log has no
    codepoints)."""
    csv = pl.read_csv(Path(log_dir) / "packets.csv", schema_overrides={"direction": pl.Utf8})
    derived = {"kind": pl.lit(0), "frame": pl.lit(-1), "send_ns": pl.col("enqueue_ns"),
               "dropped": pl.col("dropped") != 0, "ecn": pl.lit(0)}
    return csv.select(pl.col("direction"),
                      *(derived.get(name, pl.col(name)).cast(dtype).alias(name)
                        for name, dtype in packet_schema().items()))


def convert_emu_logs(log_dir: str | os.PathLike) -> Path:
    """Write `packets.parquet` beside an emu run's packets.csv (atomically); returns its path."""
    out = Path(log_dir) / "packets.parquet"
    table = emu_packets(log_dir)
    with atomic_file(out, force=True, mode="wb") as f:
        table.write_parquet(f)
    return out


def emu_log_dir(argv: Sequence[str]) -> Path | None:
    """The `--log-dir` of an `emu` command line (only options before `--` are the shell's)."""
    args = list(argv)
    if "--" in args:
        args = args[: args.index("--")]
    for i, a in enumerate(args):
        if a == "--log-dir" and i + 1 < len(args):
            return Path(args[i + 1])
        if a.startswith("--log-dir="):
            return Path(a.split("=", 1)[1])
    return None


# How long after `rtcc emu` starts the scenario's time zero comes (time for the sender to start).
START_DELAY_S = 2.0


def _free_udp_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("0.0.0.0", 0))
        return s.getsockname()[1]


def can_emulate() -> str | None:
    """Why `rtcc emu` cannot run here (None if it can)."""
    import shutil
    import subprocess

    if os.geteuid() != 0:
        return "rtcc emu needs root"
    if not Path("/dev/net/tun").exists():
        return "no /dev/net/tun"
    if shutil.which("unshare") and subprocess.run(["unshare", "--net", "true"], capture_output=True).returncode != 0:
        return "cannot create network namespaces"
    return None


def run_live(scenario_file: str | os.PathLike, logs: str | os.PathLike, flow: int = 0,
             controller: str | None = None, emulate: bool = True, beside: str | None = None,
             pcap: str | os.PathLike | None = None):
    """Run flow ``flow`` of a scenario file live and return its :class:`~rtcc.result.Result`.

    ``rtcc recv`` listens on the host; ``rtcc send`` runs inside ``rtcc emu --scenario``, so the
    flow crosses the scenario's links (path.forward carries the media, path.reverse the
    feedback) in real time. ``emulate=False`` sends over loopback instead (no root needed; no
    link is emulated). ``beside`` is a shell command run inside the shell next to the sender
    (cross traffic: ``iperf3 -c "$RTCC_EMU_HOST" ...``), started at the scenario's time zero;
    :func:`uplink_shares` splits the link between them. Each process's logs go to ``logs/{send,recv,emu}``; the run is then summarised
    by the simulator's own code, with the scenario's other flows left out. ``pcap``: the
    receiver captures what it receives and sends in that pcap file (``rtcc recv --pcap``).
    """
    import shlex
    import subprocess
    import sys

    from .examples import resolve
    from .result import Result
    from .scenario import Scenario

    scenario_file = resolve(scenario_file)  # a bundled name: the processes below get its file
    scenario = Scenario.from_file(scenario_file)
    if controller is not None:
        scenario = scenario.with_controller(controller)
    logs = Path(logs)
    dirs = {name: logs / name for name in ("send", "recv", "emu")}
    port = _free_udp_port()
    common = ["--scenario", str(scenario_file), "--flow", str(flow), "-q"]
    if controller is not None:
        common += ["--controller", controller]
    rtcc = [sys.executable, "-m", "rtcc"]
    from . import _core

    # The receiver runs until it is told to stop, once the last packet in flight has arrived
    # (its own default, the scenario's duration from its start, would end before the sender).
    until_stopped = f"{int(_core.parse_duration(str(scenario.to_dict()['duration']))) + 3600}s"
    capture = ["--pcap", str(pcap)] if pcap is not None else []
    receiver = subprocess.Popen([*rtcc, "recv", *common, "--listen", f"0.0.0.0:{port}", "--duration", until_stopped,
                                 "--log-dir", str(dirs["recv"]), *capture], stderr=subprocess.PIPE, text=True)
    try:
        try:  # a receiver that cannot start (a port taken, a bad scenario) fails within a second
            receiver.wait(timeout=1.0)
            raise RuntimeError(f"the live receiver failed: {receiver.stderr.read().strip()}")
        except subprocess.TimeoutExpired:
            pass
        send = [*rtcc, "send", *common, "--log-dir", str(dirs["send"])]
        if emulate:
            # When the sender ends, the shell delivers the packets still on the emulated links
            # before it exits.
            # The links' time zero comes START_DELAY_S after the shell starts, and the sender's timeline
            # starts there too (it waits for it), so the scenario's capacity changes fall at the
            # same flow times as in the simulator, whatever the start-up took.
            inner = (" ".join(shlex.quote(a) for a in send)
                     + f' --to "$RTCC_EMU_HOST:{port}" --clock-origin-ns "$RTCC_EMU_CLOCK_ORIGIN_NS"')
            if beside:  # started at the scenario's time zero, as the sender
                inner = f"(sleep {START_DELAY_S:g}\n{beside}\n) &\n{inner}"
            command = [*rtcc, "emu", "-q", "--scenario", str(scenario_file), "--log-dir", str(dirs["emu"]),
                       "--start-delay", f"{START_DELAY_S:g}s",
                       "--", "sh", "-c", inner]
        else:  # the flow's time zero also comes START_DELAY_S from now, once the receiver is up
            import time

            origin = time.clock_gettime_ns(time.CLOCK_MONOTONIC) + int(START_DELAY_S * 1e9)
            command = [*send, "--to", f"127.0.0.1:{port}", "--clock-origin-ns", str(origin)]
        done = subprocess.run(command, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"the live sender failed: {done.stderr.strip()}")
        receiver.send_signal(2)  # SIGINT: the receiver writes its logs and ends
        _, err = receiver.communicate(timeout=30)
        if receiver.returncode != 0:
            raise RuntimeError(f"the live receiver failed: {err.strip()}")
    finally:
        if receiver.poll() is None:
            receiver.kill()
            receiver.wait()
    raw = _core.live_result(scenario.to_json(), scenario.base_dir, flow, str(dirs["send"]), str(dirs["recv"]),
                            str(dirs["emu"]) if emulate else None)
    data = scenario.to_dict()
    data["flows"] = [data["flows"][flow]]
    return Result(raw, data)


def uplink_shares(emu_dir: str | os.PathLike, start_s: float = 0.0, stop_s: float | None = None) -> pl.DataFrame:
    """Each flow's share of what `rtcc emu`'s uplink delivered between ``start_s`` and ``stop_s``
    (seconds on the emulator's clock): flow, protocol, ends, Mbit/s and share."""
    emu_dir = Path(emu_dir)
    packets = emu_packets(emu_dir).filter((pl.col("direction") == "up") & (pl.col("recv_ns") >= 0))
    flows = pl.read_csv(emu_dir / "flows.csv").with_columns(pl.col("flow").cast(pl.UInt32))
    stop_ns = packets["recv_ns"].max() if stop_s is None else int(stop_s * 1e9)
    start_ns = int(start_s * 1e9)
    window = packets.filter((pl.col("recv_ns") >= start_ns) & (pl.col("recv_ns") < stop_ns))
    seconds = max((stop_ns - start_ns) / 1e9, 1e-9)
    per_flow = window.group_by("flow").agg((pl.col("size").sum() * 8 / seconds / 1e6).alias("mbps"))
    total = per_flow["mbps"].sum()
    return (per_flow.join(flows, on="flow").with_columns((pl.col("mbps") / total).alias("share"))
            .sort("mbps", descending=True))


def phase_table(live, simulated, phases: Sequence[tuple[float, float]]) -> pl.DataFrame:
    """Live against simulated, per phase ``[start, stop)`` in seconds: mean received throughput
    (1 s bins, Mbit/s) and median frame delay (capture to complete reception, ms), and the
    relative difference of each."""
    from . import series

    rows = []
    for start, stop in phases:
        row = {"phase": f"{start:g}-{stop:g} s"}
        for name, result in (("live", live), ("sim", simulated)):
            t, rate = series.throughput(result.packets, stop, bin_s=1.0)
            row[f"{name}_mbps"] = float(rate[(t >= start) & (t < stop)].mean())
            tf, delay = series.frame_delay(result.frames)
            in_phase = delay[(tf >= start) & (tf < stop)]
            row[f"{name}_delay_ms"] = float(np.median(in_phase)) if len(in_phase) else float("nan")
        row["mbps_diff"] = row["live_mbps"] / row["sim_mbps"] - 1
        row["delay_diff_ms"] = row["live_delay_ms"] - row["sim_delay_ms"]
        rows.append(row)
    return pl.DataFrame(rows)
