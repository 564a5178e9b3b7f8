// Replays a packet log into Ericsson's SCReAM v2 sender (ScreamV2Tx, built from
// ../shared/reference/scream/code, never copied here) and prints its target bitrate and
// congestion window after every feedback report. The log is what
// bench/scream_crosscheck/crosscheck.py writes from an rtcc run:
//
//     seq,send_us,recv_us,size,feedback_us,ecn,mark,ts90k,media
//
// recv_us -1: lost; feedback_us -1: never reported; ecn: the codepoint as it arrived (0 Not-ECT,
// 1 ECT(1), 2 ECT(0), 3 CE, RFC 3168's two bits as RFC 8888 carries them); mark: the packet is
// its frame's last (the RTP marker bit); ts90k: its frame's RTP timestamp (90 kHz); media: it
// carries a frame's media (it leaves the RTP queue when sent).
//
// With a frame log (FRAMES.csv: frame,capture_us,size,packets,packet_bytes, in capture order)
// the encoder's side runs too, as a sender drives it: at each capture (before a send or report
// at the same instant) the frame's logged media packets (`packets` of `packet_bytes`) enter the
// RTP queue and newMediaFrame(time, ssrc, size, isMarker = true) announces the frame; each media
// send takes one packet out of the queue (if the reference has not discarded it).
//
// The sender's side is driven as a real sender drives it: isOkToTransmit before each packet
// and after each report (it keeps the reference's 100 ms rate statistics and its MSS up to date;
// "isOkToTransmit should be called after incomingFeedback", ScreamTx.h) and addTransmitted at
// its send time, with an empty RTP queue (the packets are the log's, the reference only hears of
// them). Each report (the packets that share a feedback_us) is given, at its arrival,
// sends first at a tie (the order of rtcc's open-loop replay, rtcc_sim::replay), as RFC 8888
// feedback through incomingStandardizedFeedback(time, stream, rxTime, seqNr, ceBits, isLast),
// once per received packet in sequence order, isLast on the report's newest received packet
// (the reference's own parser calls it for received packets only, and its last one is the
// report's end_seq). Lost packets are left out: the reference finds them from the gaps.
//
// Times are the log's plus an offset of 1000 s, as a wall clock (NTP) would be: the reference
// keeps "last congestion" at time 0, so a clock starting at 0 would hold its multiplicative
// increase back over the first 200 RTTs, which no real sender sees.
//
//     scream-replay IN.csv OUT.csv MIN_BPS START_BPS MAX_BPS L4S(0|1) [FRAMES.csv [ADAPTIVE(0|1)]]
//
// ADAPTIVE: registerNewStream's isAdaptiveTargetRateScale (default 1, the reference's default).
//
// OUT.csv: time_us,target_bps,cwnd_bytes,srtt_ms (after each report).

#include "RtpQueue.h"
#include "ScreamTx.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Packet {
    uint64_t seq;
    int64_t send_us;
    int64_t recv_us;
    int size;
    int64_t feedback_us;
    int ecn;
    int mark;
    uint32_t ts90k;
    int media;
};

struct Frame {
    int64_t capture_us;
    int size;
    int packets;
    int packet_bytes;
};

const char* kHeader = "seq,send_us,recv_us,size,feedback_us,ecn,mark,ts90k,media";
const int64_t kOffsetUs = 1000LL * 1000000LL;
const uint32_t kSsrc = 1;

uint32_t ntp(int64_t us) {
    // Q16 seconds, truncated as an NTP clock reads: the reference's time base.
    return uint32_t((us + kOffsetUs) * 65536 / 1000000);
}

std::vector<Packet> read_log(const char* path) {
    std::ifstream in(path);
    if (!in) {
        std::cerr << "scream-replay: cannot read " << path << "\n";
        std::exit(2);
    }
    std::string line;
    std::getline(in, line);
    if (line != kHeader) {
        std::cerr << "scream-replay: " << path << ": expected the header " << kHeader << "\n";
        std::exit(2);
    }
    std::vector<Packet> packets;
    while (std::getline(in, line)) {
        Packet p{};
        char c[8];
        std::istringstream row(line);
        if (!(row >> p.seq >> c[0] >> p.send_us >> c[1] >> p.recv_us >> c[2] >> p.size >> c[3] >>
              p.feedback_us >> c[4] >> p.ecn >> c[5] >> p.mark >> c[6] >> p.ts90k >> c[7] >> p.media)) {
            std::cerr << "scream-replay: " << path << ": malformed row: " << line << "\n";
            std::exit(2);
        }
        packets.push_back(p);
    }
    return packets;
}

std::vector<Frame> read_frames(const char* path) {
    std::ifstream in(path);
    std::string line;
    if (!in || !std::getline(in, line) || line != "frame,capture_us,size,packets,packet_bytes") {
        std::cerr << "scream-replay: " << path << ": expected frame,capture_us,size,packets,packet_bytes\n";
        std::exit(2);
    }
    std::vector<Frame> frames;
    while (std::getline(in, line)) {
        Frame f{};
        int64_t id;
        char c[4];
        std::istringstream row(line);
        if (!(row >> id >> c[0] >> f.capture_us >> c[1] >> f.size >> c[2] >> f.packets >> c[3] >> f.packet_bytes)) {
            std::cerr << "scream-replay: " << path << ": malformed row: " << line << "\n";
            std::exit(2);
        }
        frames.push_back(f);
    }
    return frames;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 7 || argc > 9) {
        std::cerr << "usage: scream-replay IN.csv OUT.csv MIN_BPS START_BPS MAX_BPS L4S(0|1) [FRAMES.csv [ADAPTIVE(0|1)]]\n";
        return 2;
    }
    const bool adaptive = argc < 9 || std::atoi(argv[8]) != 0;
    const std::vector<Packet> packets = read_log(argv[1]);
    const std::vector<Frame> frames = argc >= 8 ? read_frames(argv[7]) : std::vector<Frame>();
    const float min_bps = std::strtof(argv[3], nullptr);
    const float start_bps = std::strtof(argv[4], nullptr);
    const float max_bps = std::strtof(argv[5], nullptr);
    const bool l4s = std::atoi(argv[6]) != 0;

    // The constructor's defaults but isL4s (rtcc's `l4s` parameter).
    ScreamV2Tx scream(kLossBeta, kEcnCeBeta, kQueueDelayTargetMin, 0, kPacketPacingHeadRoom,
                      kMaxAdaptivePacingRateScale, kBytesInFlightHeadRoom,
                      kMultiplicativeIncreaseScalefactor, l4s);
    RtpQueue queue;
    scream.registerNewStream(&queue, kSsrc, 1.0f, min_bps, start_bps, max_bps, kMaxRtpQueueDelay, adaptive);

    // The reports, by arrival time: the received packets each carries, in sequence order.
    std::map<int64_t, std::vector<size_t>> reports;
    for (size_t i = 0; i < packets.size(); i++) {
        if (packets[i].feedback_us >= 0 && packets[i].recv_us >= 0) {
            reports[packets[i].feedback_us].push_back(i);
        }
    }
    std::ofstream out(argv[2]);
    out << "time_us,target_bps,cwnd_bytes,srtt_ms\n";
    size_t next = 0, next_frame = 0;
    uint16_t queued_seq = 0;
    auto capture_until = [&](int64_t until_us) {
        for (; next_frame < frames.size() && frames[next_frame].capture_us <= until_us; next_frame++) {
            const Frame& f = frames[next_frame];
            const uint32_t t = ntp(f.capture_us);
            for (int k = 0; k < f.packets; k++) {
                queue.push(nullptr, f.packet_bytes, kSsrc, queued_seq++, k + 1 == f.packets, t / 65536.0f, 0);
            }
            scream.newMediaFrame(t, kSsrc, f.size, true);
        }
    };
    for (auto& [time_us, items] : reports) {
        while (next < packets.size() && packets[next].send_us <= time_us) {
            const Packet& p = packets[next++];
            capture_until(p.send_us);
            uint32_t ssrc = kSsrc;
            scream.isOkToTransmit(ntp(p.send_us), ssrc);
            if (p.media && queue.sizeOfQueue() > 0) {
                void* buf;
                int size;
                uint32_t s2, ts;
                uint16_t seq;
                bool mark;
                queue.sendPacket(&buf, size, s2, seq, mark, ts);
            }
            scream.addTransmitted(ntp(p.send_us), kSsrc, p.size, uint16_t(p.seq & 0xffff),
                                  p.mark != 0, 0.0f, p.ts90k);
        }
        capture_until(time_us);
        const uint32_t now = ntp(time_us);
        for (size_t k = 0; k < items.size(); k++) {
            const Packet& p = packets[items[k]];
            scream.incomingStandardizedFeedback(now, 0, ntp(p.recv_us), uint16_t(p.seq & 0xffff),
                                                uint8_t(p.ecn & 3), k + 1 == items.size());
        }
        uint32_t ssrc = kSsrc;
        scream.isOkToTransmit(now, ssrc);
        float target = scream.getTargetBitrate(now, kSsrc);
        if (target < 0) {
            // -1: a loss or RTP-queue discard ("request a key frame"); the rate comes next call.
            target = scream.getTargetBitrate(now, kSsrc);
        }
        out << time_us << "," << target << "," << scream.getCwnd() << "," << scream.getSRtt() * 1e3
            << "\n";
    }
    return out ? 0 : 1;
}
