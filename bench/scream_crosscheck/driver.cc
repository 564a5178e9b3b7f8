// Replays a packet log into Ericsson's SCReAM v2 sender (ScreamV2Tx, built from
// ../shared/reference/scream/code, never copied here) and prints its target bitrate and
// congestion window after every feedback report. The log is what
// bench/scream_crosscheck/crosscheck.py writes from an rtcc run:
//
//     seq,send_us,recv_us,size,feedback_us,ecn,mark,ts90k
//
// recv_us -1: lost; feedback_us -1: never reported; ecn: the codepoint as it arrived (0 Not-ECT,
// 1 ECT(1), 2 ECT(0), 3 CE, RFC 3168's two bits as RFC 8888 carries them); mark: the packet is
// its frame's last (the RTP marker bit); ts90k: its frame's RTP timestamp (90 kHz).
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
//     scream-replay IN.csv OUT.csv MIN_BPS START_BPS MAX_BPS L4S(0|1)
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
};

const char* kHeader = "seq,send_us,recv_us,size,feedback_us,ecn,mark,ts90k";
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
        char c[7];
        std::istringstream row(line);
        if (!(row >> p.seq >> c[0] >> p.send_us >> c[1] >> p.recv_us >> c[2] >> p.size >> c[3] >>
              p.feedback_us >> c[4] >> p.ecn >> c[5] >> p.mark >> c[6] >> p.ts90k)) {
            std::cerr << "scream-replay: " << path << ": malformed row: " << line << "\n";
            std::exit(2);
        }
        packets.push_back(p);
    }
    return packets;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 7) {
        std::cerr << "usage: scream-replay IN.csv OUT.csv MIN_BPS START_BPS MAX_BPS L4S(0|1)\n";
        return 2;
    }
    const std::vector<Packet> packets = read_log(argv[1]);
    const float min_bps = std::strtof(argv[3], nullptr);
    const float start_bps = std::strtof(argv[4], nullptr);
    const float max_bps = std::strtof(argv[5], nullptr);
    const bool l4s = std::atoi(argv[6]) != 0;

    // The constructor's defaults but isL4s (rtcc's `l4s` parameter).
    ScreamV2Tx scream(kLossBeta, kEcnCeBeta, kQueueDelayTargetMin, 0, kPacketPacingHeadRoom,
                      kMaxAdaptivePacingRateScale, kBytesInFlightHeadRoom,
                      kMultiplicativeIncreaseScalefactor, l4s);
    RtpQueue queue;
    scream.registerNewStream(&queue, kSsrc, 1.0f, min_bps, start_bps, max_bps);

    // The reports, by arrival time: the received packets each carries, in sequence order.
    std::map<int64_t, std::vector<size_t>> reports;
    for (size_t i = 0; i < packets.size(); i++) {
        if (packets[i].feedback_us >= 0 && packets[i].recv_us >= 0) {
            reports[packets[i].feedback_us].push_back(i);
        }
    }
    std::ofstream out(argv[2]);
    out << "time_us,target_bps,cwnd_bytes,srtt_ms\n";
    size_t next = 0;
    for (auto& [time_us, items] : reports) {
        while (next < packets.size() && packets[next].send_us <= time_us) {
            const Packet& p = packets[next++];
            uint32_t ssrc = kSsrc;
            scream.isOkToTransmit(ntp(p.send_us), ssrc);
            scream.addTransmitted(ntp(p.send_us), kSsrc, p.size, uint16_t(p.seq & 0xffff),
                                  p.mark != 0, 0.0f, p.ts90k);
        }
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
