// Replays a packet log into Cisco's NADA (ns3-rmcat's NadaController, built from
// ../shared/reference/ns3-rmcat, never copied here) and prints its reference rate after every
// feedback report. The log is what bench/nada_crosscheck/crosscheck.py writes from an rtcc run:
//
//     seq,send_us,recv_us,size,feedback_us      (recv_us -1: lost; feedback_us -1: never reported)
//
// Each packet is announced with processSendPacket at its send time, and each report (the
// packets that share a feedback_us) with processFeedbackBatch at that time, sends first at a
// tie: the order rtcc's open-loop replay (rtcc_sim::replay) uses. Lost packets are left out of
// the reports; the controller finds them from the gaps in the sequence numbers, as in ns-3.
//
//     nada-replay IN.csv OUT.csv RMIN_BPS RINIT_BPS RMAX_BPS
//
// OUT.csv: time_us,bandwidth_bps (getBandwidth after each report).

#include "nada-controller.h"

#include <algorithm>
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
    uint32_t size;
    int64_t feedback_us;
};

void quiet(const std::string&) {}

std::vector<Packet> read_log(const char* path) {
    std::ifstream in(path);
    if (!in) {
        std::cerr << "nada-replay: cannot read " << path << "\n";
        std::exit(2);
    }
    std::string line;
    std::getline(in, line);
    if (line != "seq,send_us,recv_us,size,feedback_us") {
        std::cerr << "nada-replay: " << path << ": expected the header seq,send_us,recv_us,size,feedback_us\n";
        std::exit(2);
    }
    std::vector<Packet> packets;
    while (std::getline(in, line)) {
        Packet p{};
        char c1, c2, c3, c4;
        std::istringstream row(line);
        if (!(row >> p.seq >> c1 >> p.send_us >> c2 >> p.recv_us >> c3 >> p.size >> c4 >> p.feedback_us)) {
            std::cerr << "nada-replay: " << path << ": malformed row: " << line << "\n";
            std::exit(2);
        }
        packets.push_back(p);
    }
    return packets;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 6) {
        std::cerr << "usage: nada-replay IN.csv OUT.csv RMIN_BPS RINIT_BPS RMAX_BPS\n";
        return 2;
    }
    const std::vector<Packet> packets = read_log(argv[1]);
    rmcat::NadaController nada;
    nada.setLogCallback(quiet);
    nada.setMinBw(std::strtof(argv[3], nullptr));
    nada.setInitBw(std::strtof(argv[4], nullptr));
    nada.setMaxBw(std::strtof(argv[5], nullptr));
    nada.setCurrentBw(std::strtof(argv[4], nullptr));

    // The reports, by arrival time: the received packets each carries, in sequence order.
    std::map<int64_t, std::vector<rmcat::SenderBasedController::FeedbackItem>> reports;
    for (const Packet& p : packets) {
        if (p.feedback_us >= 0 && p.recv_us >= 0) {
            reports[p.feedback_us].push_back({uint16_t(p.seq & 0xffff), uint64_t(p.recv_us), 0});
        } else if (p.feedback_us >= 0) {
            reports[p.feedback_us];  // a report of losses only still arrives
        }
    }
    std::ofstream out(argv[2]);
    out << "time_us,bandwidth_bps\n";
    size_t next = 0;
    for (auto& [time_us, items] : reports) {
        while (next < packets.size() && packets[next].send_us <= time_us) {
            const Packet& p = packets[next++];
            if (!nada.processSendPacket(uint64_t(p.send_us), uint16_t(p.seq & 0xffff), p.size)) {
                std::cerr << "nada-replay: the controller refused packet " << p.seq << "\n";
                return 1;
            }
        }
        // A report of losses only tells the reference nothing: it finds losses from the gaps
        // in the sequence numbers of the packets a later report carries (rtcc's replay hands
        // such a report to its controller, which counts the losses then).
        if (!items.empty() && !nada.processFeedbackBatch(uint64_t(time_us), items)) {
            std::cerr << "nada-replay: the controller refused the report at " << time_us << " us\n";
            return 1;
        }
        out << time_us << "," << nada.getBandwidth(uint64_t(time_us)) << "\n";
    }
    return out ? 0 : 1;
}
