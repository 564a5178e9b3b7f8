"""rtcc's SRTP and SRTCP against libsrtp, the reference implementation (through pylibsrtp): a
relay between ``rtcc send`` and ``rtcc recv`` opens every datagram with libsrtp and seals it again
with libsrtp before passing it on. Every RTP packet rtcc's sender protects and every RTCP compound
its receiver protects must open in libsrtp, and everything libsrtp seals must be accepted by rtcc:
the flow shows its frames and neither end refuses a datagram."""
import base64
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

pylibsrtp = pytest.importorskip("pylibsrtp", reason="libsrtp's binding is not installed (pip install pylibsrtp)")

SCENARIO = """
duration = "4s"
[path.forward]
capacity = "10Mbps"
[[flows]]
controller = "gcc"
stop = "3s"
max_bitrate = "3Mbps"  # about 300 packets a second: the Python relay keeps up without bursts
"""

PROFILES = [("AES_CM_128_HMAC_SHA1_80", "SRTP_PROFILE_AES128_CM_SHA1_80", 30),
            ("AEAD_AES_128_GCM", "SRTP_PROFILE_AEAD_AES_128_GCM", 28)]


class Relay(threading.Thread):
    """Opens what arrives with libsrtp and seals it again with libsrtp: RTP from the sender goes
    to the receiver, RTCP from the receiver back to the sender."""

    def __init__(self, key: bytes, profile: str, receiver: tuple):
        super().__init__(daemon=True)
        policy = lambda kind: pylibsrtp.Policy(key=key, ssrc_type=kind, srtp_profile=getattr(pylibsrtp.Policy, profile))
        self.open = pylibsrtp.Session(policy=policy(pylibsrtp.Policy.SSRC_ANY_INBOUND))
        self.seal = pylibsrtp.Session(policy=policy(pylibsrtp.Policy.SSRC_ANY_OUTBOUND))
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.receiver, self.sender = receiver, None
        self.counts = {"rtp": 0, "rtcp": 0, "rtp_refused": 0, "rtcp_refused": 0}
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            if not select.select([self.sock], [], [], 0.05)[0]:
                continue
            data, source = self.sock.recvfrom(65536)
            rtcp = source == self.receiver
            if not rtcp:
                self.sender = source
            kind = "rtcp" if rtcp else "rtp"
            try:
                plain = self.open.unprotect_rtcp(data) if rtcp else self.open.unprotect(data)
            except pylibsrtp.Error:
                self.counts[kind + "_refused"] += 1
                continue
            self.counts[kind] += 1
            sealed = self.seal.protect_rtcp(plain) if rtcp else self.seal.protect(plain)
            self.sock.sendto(sealed, self.sender if rtcp else self.receiver)


def wait_until_bound(port: int, receiver: subprocess.Popen) -> None:
    """Until the receiver listens on ``port`` (a sender started sooner loses its first packets)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and receiver.poll() is None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return  # taken: the receiver is up
        time.sleep(0.02)
    raise AssertionError(f"the receiver never listened: {receiver.stderr.read() if receiver.poll() is not None else ''}")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("ours, theirs, key_bytes", PROFILES)
def test_rtcc_and_libsrtp_open_what_the_other_seals(tmp_path, ours, theirs, key_bytes):
    key = os.urandom(key_bytes)
    (tmp_path / "key").write_text(base64.b64encode(key).decode() + "\n")
    (tmp_path / "s.toml").write_text(SCENARIO)
    port = free_port()
    relay = Relay(key, theirs, ("127.0.0.1", port))
    relay.start()
    common = ["--scenario", "s.toml", "-q", "--srtp-key-file", "key", "--srtp-profile", ours]
    rtcc = [sys.executable, "-m", "rtcc"]
    # The receiver runs until it is told to stop, once the relay has passed everything on (its own
    # default, the scenario's 4 s from its start, could end before a loaded machine's sender does).
    receiver = subprocess.Popen([*rtcc, "recv", *common, "--listen", f"127.0.0.1:{port}", "--log-dir", "recv",
                                 "--duration", "60s"], cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    try:
        wait_until_bound(port, receiver)
        sender = subprocess.run([*rtcc, "send", *common, "--to", f"127.0.0.1:{relay.sock.getsockname()[1]}",
                                 "--log-dir", "send"], cwd=tmp_path, stderr=subprocess.PIPE, text=True, timeout=60)
        assert sender.returncode == 0, sender.stderr
        time.sleep(0.5)
        receiver.send_signal(signal.SIGINT)  # it writes its logs and ends
        _, err = receiver.communicate(timeout=30)
        assert receiver.returncode == 0, err
    finally:
        relay.stop.set()
        if receiver.poll() is None:
            receiver.kill()
    send = json.loads((tmp_path / "send" / "send.json").read_text())
    recv = json.loads((tmp_path / "recv" / "recv.json").read_text())
    c = relay.counts
    assert send["srtp"] == recv["srtp"] == ours
    assert c["rtp_refused"] == 0 and c["rtp"] == send["packets"], (c, send["packets"])
    assert c["rtcp_refused"] == 0 and c["rtcp"] > 20, c
    assert recv["unauthenticated"] == 0 and recv["arrivals"] == c["rtp"], (recv, c)
    # The last compounds may reach the relay after the sender has stopped.
    assert send["unauthenticated"] == 0 and c["rtcp"] - 2 <= send["datagrams_received"] <= c["rtcp"], (send, c)
    assert recv["frames_displayed"] >= 85, ({k: recv[k] for k in ("frames_complete", "frames_displayed", "frames_given_up", "duration_s")}, send["frames_encoded"], send["duration_s"])  # 90 frames in 3 s
