"""`rtcc run --pcap`: every datagram of a simulated run as a pcap file that Wireshark dissects.

Checked with tshark (Debian's, installed by `make test` as root; the dissector part is skipped
with the reason where it is missing): every media packet is RTP with its sequence number, the
transport-wide feedback is RTCP transport-cc, and nothing is malformed."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess

import polars as pl
import pytest

from rtcc.cli import main

SCENARIO = """
name = "pcap"
duration = "5s"
seed = 3
[path.forward]
capacity = "3Mbps"
delay = "20ms"
queue = "50ms"
loss = 0.02
[[flows]]
controller = "gcc"
[[flows]]
kind = "tcp"
controller = "cubic"
start = "1s"
"""

DECODE = ["-d", "udp.port==5004,rtp", "-d", "udp.port==5005,rtcp"]


def records(path):
    """(seconds, nanoseconds, IPv4 packet) of each record of a nanosecond raw-IP pcap file."""
    data = path.read_bytes()
    magic, major, minor, _, _, snaplen, linktype = struct.unpack("<IHHiIII", data[:24])
    assert (magic, major, minor, linktype) == (0xA1B23C4D, 2, 4, 101)
    out, at = [], 24
    while at < len(data):
        sec, nsec, caplen, length = struct.unpack("<IIII", data[at:at + 16])
        assert caplen == length <= snaplen
        out.append((sec, nsec, data[at + 16:at + 16 + caplen]))
        at += 16 + caplen
    assert at == len(data)
    return out


def test_a_run_writes_every_datagram_it_sends_as_a_pcap(tmp_path, capsys):
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    pcap = tmp_path / "run.pcap"
    assert main(["run", str(scenario), "-o", str(tmp_path / "run"), "--no-plots", "--pcap", str(pcap)]) == 0
    capsys.readouterr()
    assert not (tmp_path / "run.pcap.partial").exists()
    packets = pl.read_parquet(tmp_path / "run" / "packets.parquet")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    recs = records(pcap)
    forward = [r for r in recs if r[2][12:14] == bytes([10, 1])]
    backward = [r for r in recs if r[2][12:14] == bytes([10, 2])]
    assert len(forward) == packets.height, "one record per data packet, lost ones included"
    assert sum(len(r[2]) for r in backward) == sum(f["feedback_bytes"] for f in summary["flows"]), \
        "every feedback datagram, at its size"
    times = [s * 10**9 + n for s, n, _ in recs]
    assert times == sorted(times), "records in time order"
    # The sizes on the wire are the simulation's, except that a datagram is never shorter than its
    # headers (the simulation charges a frame's last few bytes as they are).
    big = sorted(len(r[2]) for r in forward if len(r[2]) >= 100)
    assert big == sorted(s for s in packets["size"].to_list() if s >= 100)
    assert summary["flows"][0]["packets_lost"] > 0  # the capture is taken before the losses

    tshark = shutil.which("tshark")
    if tshark is None:
        pytest.skip("tshark is not installed (Debian: apt-get install tshark); the dissector check is skipped")
    def fields(*args):
        done = subprocess.run([tshark, "-r", str(pcap), *DECODE, *args], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()
    assert fields("-Y", "_ws.malformed || _ws.expert.severity >= error") == [], "malformed or erroneous packets"
    rtp = fields("-Y", "rtp", "-T", "fields", "-e", "ip.src", "-e", "rtp.ssrc", "-e", "rtp.seq")
    assert len(rtp) == len(forward), "every data packet (video and TCP segments) dissects as RTP"
    video = packets.filter(pl.col("flow") == 0)
    video_rtp = [line for line in rtp if line.startswith("10.1.0.1\t")]
    assert len(video_rtp) == video.height
    # Media packets carry consecutive RTP sequence numbers per stream (from 0 here).
    media = packets.filter((pl.col("flow") == 0) & (pl.col("kind") == 0)).height
    seqs_by_ssrc: dict[str, list[int]] = {}
    for line in video_rtp:
        _, ssrc, seq = line.split("\t")
        seqs_by_ssrc.setdefault(ssrc, []).append(int(seq))
    assert any(seqs == list(range(media)) for seqs in seqs_by_ssrc.values()), "the media stream's numbers"
    twcc = fields("-Y", "rtcp.rtpfb.fmt == 15")
    assert len(twcc) > 10, "transport-wide feedback is dissected as RTCP transport-cc"


def test_a_live_receiver_captures_what_it_receives_and_sends(tmp_path, capsys):
    """`rtcc live --no-emu --pcap`: the receiver's capture holds the flow's RTP as it arrived and
    the feedback it sent, with the sockets' real addresses, RTCP multiplexed on the RTP port."""
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO.replace('duration = "5s"', 'duration = "3s"').split("[[flows]]\nkind = \"tcp\"")[0])
    pcap = tmp_path / "recv.pcap"
    assert main(["live", str(scenario), "-o", str(tmp_path / "run"), "--no-emu", "--no-plots", "--pcap", str(pcap)]) == 0
    capsys.readouterr()
    recs = records(pcap)
    assert not (tmp_path / "recv.pcap.partial").exists()
    ports = {struct.unpack(">H", r[2][22:24])[0] for r in recs}  # destination ports
    assert len(ports) == 2, ports  # the receiver's, and the sender's for the feedback
    arrivals = json.loads((tmp_path / "run" / "summary.json").read_text())["flows"][0]["packets_sent"]
    assert len(recs) > arrivals / 2, (len(recs), arrivals)
    times = [s * 10**9 + n for s, n, _ in recs]
    assert times[0] > 1.6e18, "wall-clock timestamps"
    assert all(r[2][12:20] == bytes([127, 0, 0, 1]) * 2 for r in recs), "the loopback at both ends"
    tshark = shutil.which("tshark")
    if tshark is None:
        pytest.skip("tshark is not installed (Debian: apt-get install tshark); the dissector check is skipped")
    recv_port = max(ports, key=lambda p: sum(struct.unpack(">H", r[2][22:24])[0] == p for r in recs))
    done = subprocess.run([tshark, "-r", str(pcap), "-d", f"udp.port=={recv_port},rtp", "-T", "fields",
                           "-e", "frame.protocols"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    kinds = set(done.stdout.split())
    assert "raw:ip:udp:rtp" in kinds and "raw:ip:udp:rtp:rtcp" in kinds, kinds
    bad = subprocess.run([tshark, "-r", str(pcap), "-d", f"udp.port=={recv_port},rtp", "-Y", "_ws.malformed"],
                         capture_output=True, text=True, timeout=120)
    assert bad.stdout.strip() == "", bad.stdout[:2000]
