// Ericsson's SCReAM v2 sender (ScreamV2Tx, built from ../shared/reference/scream/code, never
// copied here) in a closed loop at a fixed L4S marking level: the loop of rtcc's test
// `at_a_fixed_marking_level_the_rate_goes_as_one_over_p` (crates/rtcc-sim/tests/scream.rs) with
// the reference as the controller, so that the two can be set side by side.
//
// Media is produced at the target bitrate into the reference's RTP queue as 1200-byte packets;
// the reference's isOkToTransmit / addTransmitted send them (its own window and pacing); each
// arrives 12.5 ms later with no queue, CE-marked with probability p (else ECT(1)); the arrivals
// are reported every 5 ms through incomingStandardizedFeedback (RFC 8888, ceBits per packet),
// the report reaching the sender 12.5 ms later. RTT 25 ms. The constructor's defaults with
// isL4s = true, one stream of 150 kbit/s to 200 Mbit/s starting at 1 Mbit/s.
//
//     scream-marking P [SECONDS] [EVENLY(0|1)]
//
// EVENLY = 1 marks every 1/p-th packet instead. Prints p, the delivered rate over [20 s, SECONDS)
// in bit/s, (2/p)·MSS·8/RTT, their ratio, and the mean window and target over the same time.

#include "RtpQueue.h"
#include "ScreamTx.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <vector>

namespace {

const int64_t kOffsetUs = 1000LL * 1000000LL;  // a wall clock, as in driver.cc
const int kMss = 1200;
const int64_t kOwdUs = 12500;
const int64_t kStepUs = 100;
const uint32_t kSsrc = 1;

uint32_t ntp(int64_t us) { return uint32_t((us + kOffsetUs) * 65536 / 1000000); }

struct InFlight {
    uint16_t seq;
    uint64_t count;  // the packet's number, for the even marking
    int64_t arrive_us;
};

struct Arrival {
    uint16_t seq;
    int64_t at_us;
    bool ce;
};

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: scream-marking P [SECONDS] [EVENLY(0|1)]\n");
        return 2;
    }
    const double p = std::atof(argv[1]);
    const double seconds = argc > 2 ? std::atof(argv[2]) : 60.0;
    const bool evenly = argc > 3 && std::atoi(argv[3]) != 0;
    ScreamV2Tx scream(kLossBeta, kEcnCeBeta, kQueueDelayTargetMin, 0, kPacketPacingHeadRoom,
                      kMaxAdaptivePacingRateScale, kBytesInFlightHeadRoom,
                      kMultiplicativeIncreaseScalefactor, true);
    RtpQueue queue;
    scream.registerNewStream(&queue, kSsrc, 1.0f, 150e3f, 1e6f, 200e6f);

    // The Rust test's generator and seed (xorshift64*), drawn once per arriving packet.
    uint64_t rng = 0x9E3779B97F4A7C15ULL ^ uint64_t(p * 1e6);
    auto uniform = [&rng]() {
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        return double((rng * 0x2545F4914F6CDD1DULL) >> 11) / double(1ULL << 53);
    };
    std::deque<InFlight> in_flight;
    std::vector<Arrival> arrived;
    std::deque<std::pair<int64_t, std::vector<Arrival>>> reports;
    double backlog = 0.0;
    float target = 1e6f;
    uint16_t next_seq = 0;
    uint64_t count = 0;
    const int64_t from = 20000000, to = int64_t(seconds * 1e6);
    uint64_t delivered = 0;
    double cwnd_sum = 0.0, target_sum = 0.0;
    uint64_t samples = 0;
    for (int64_t t = kStepUs; t < to; t += kStepUs) {
        const uint32_t now = ntp(t);
        // The encoder: the target's bytes, in 1200-byte packets.
        backlog += target / 8.0 * kStepUs * 1e-6;
        while (backlog >= kMss) {
            backlog -= kMss;
            queue.push(nullptr, kMss, kSsrc, next_seq++, false, now / 65536.0f, 0);
        }
        // The sender.
        uint32_t ssrc = kSsrc;
        while (queue.sizeOfQueue() > 0 && scream.isOkToTransmit(now, ssrc) == 0.0f) {
            void* buf;
            int size;
            uint16_t seq;
            bool mark;
            uint32_t ts;
            uint32_t s2;
            queue.sendPacket(&buf, size, s2, seq, mark, ts);
            scream.addTransmitted(now, kSsrc, size, seq, mark, 0.0f, ts);
            in_flight.push_back({seq, count++, t + kOwdUs});
        }
        // The path: a fixed delay, each packet marked with probability p.
        while (!in_flight.empty() && in_flight.front().arrive_us <= t) {
            const InFlight f = in_flight.front();
            in_flight.pop_front();
            if (f.arrive_us >= from && f.arrive_us < to) delivered += kMss;
            const bool ce = evenly ? uint64_t(f.count * p) != uint64_t((f.count + 1) * p) : uniform() < p;
            arrived.push_back({f.seq, f.arrive_us, ce});
        }
        if (t % 5000 == 0 && !arrived.empty()) {
            reports.emplace_back(t + kOwdUs, std::move(arrived));
            arrived.clear();
        }
        while (!reports.empty() && reports.front().first <= t) {
            const std::vector<Arrival> r = std::move(reports.front().second);
            reports.pop_front();
            for (size_t k = 0; k < r.size(); k++) {
                scream.incomingStandardizedFeedback(now, 0, ntp(r[k].at_us), r[k].seq,
                                                    r[k].ce ? 3 : 1, k + 1 == r.size());
            }
        }
        float rate = scream.getTargetBitrate(now, kSsrc);
        if (rate < 0) rate = scream.getTargetBitrate(now, kSsrc);
        if (rate > 0) target = rate;
        if (t >= from && t % 10000 == 0) {
            cwnd_sum += scream.getCwnd();
            target_sum += target;
            samples++;
        }
    }
    const double rate = delivered * 8.0 / ((to - from) * 1e-6);
    const double formula = 2.0 / p * kMss * 8.0 / 0.025;
    std::printf("p=%g rate_bps=%.0f formula_bps=%.0f ratio=%.3f mean_cwnd=%.0f mean_target_bps=%.0f\n", p,
                rate, formula, rate / formula, cwnd_sum / samples, target_sum / samples);
    return 0;
}
