// A dumbbell in ns-3, to compare rtcc's TCP and queues against an independent simulator.
//
// N TCP Cubic bulk flows share one bottleneck of `rate` with one-way delay rtt/2 in each direction
// (access links are 10 Gbit/s with no delay). The bottleneck's queue discipline is a drop-tail FIFO
// (`--queue=droptail --limit=N` packets), CoDel or PIE with ns-3's defaults. Segments are 1460 bytes
// of payload (1500-byte IP packets, as rtcc's default), SACK on, initial window 10, delayed ACKs
// every 2 segments or 40 ms (Linux's minimum), large socket buffers so only the network limits.
//
// Prints one JSON object: goodput (bit/s, from the sinks, over the whole run), mean bottleneck
// sojourn time (ms, from the queue disc's SojournTime trace), loss (packets dropped at the
// bottleneck / packets offered to it), and the wall-clock time of the simulation.
//
// Build: see bench/ns3/compare.py (g++ with pkg-config's ns3 flags).

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <chrono>
#include <cstdio>

using namespace ns3;

static double g_sojournSum = 0.0;
static uint64_t g_sojournCount = 0;

static void
OnSojourn(Time t)
{
    g_sojournSum += t.GetSeconds();
    g_sojournCount++;
}

int
main(int argc, char* argv[])
{
    uint32_t flows = 1;
    std::string rate = "20Mbps";
    double rttMs = 40.0;
    std::string queue = "droptail";
    uint32_t limit = 200;
    double duration = 60.0;
    uint32_t seed = 1;

    CommandLine cmd(__FILE__);
    cmd.AddValue("flows", "number of Cubic flows", flows);
    cmd.AddValue("rate", "bottleneck rate", rate);
    cmd.AddValue("rtt", "round-trip propagation delay (ms)", rttMs);
    cmd.AddValue("queue", "droptail | codel | pie", queue);
    cmd.AddValue("limit", "queue limit in packets", limit);
    cmd.AddValue("duration", "simulated seconds", duration);
    cmd.AddValue("seed", "run number", seed);
    cmd.Parse(argc, argv);

    RngSeedManager::SetRun(seed);
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::TcpCubic"));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1460));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MilliSeconds(40)));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(1 << 26));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(1 << 26));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(false));

    NodeContainer senders;
    NodeContainer receivers;
    NodeContainer routers;
    senders.Create(flows);
    receivers.Create(flows);
    routers.Create(2);

    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", StringValue("10Gbps"));
    access.SetChannelAttribute("Delay", StringValue("0ms"));
    PointToPointHelper bottleneck;
    bottleneck.SetDeviceAttribute("DataRate", StringValue(rate));
    bottleneck.SetChannelAttribute("Delay", TimeValue(MilliSeconds(rttMs / 2.0)));
    // A one-packet device queue: the queue disc above it does the queueing, as in Linux with BQL.
    bottleneck.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));

    InternetStackHelper stack;
    stack.InstallAll();

    NetDeviceContainer core = bottleneck.Install(routers.Get(0), routers.Get(1));
    // Installed before addresses are assigned, so ns-3 does not add its default (fq_codel).
    TrafficControlHelper tch;
    std::string maxSize = std::to_string(limit) + "p";
    if (queue == "droptail")
    {
        tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue(maxSize));
    }
    else if (queue == "codel")
    {
        tch.SetRootQueueDisc("ns3::CoDelQueueDisc", "MaxSize", StringValue(maxSize));
    }
    else if (queue == "pie")
    {
        tch.SetRootQueueDisc("ns3::PieQueueDisc", "MaxSize", StringValue(maxSize));
    }
    else
    {
        std::fprintf(stderr, "unknown --queue=%s (droptail, codel, pie)\n", queue.c_str());
        return 2;
    }
    QueueDiscContainer qdiscs = tch.Install(core.Get(0));
    Ptr<QueueDisc> qdisc = qdiscs.Get(0);
    qdisc->TraceConnectWithoutContext("SojournTime", MakeCallback(&OnSojourn));

    Ipv4AddressHelper address;
    address.SetBase("10.0.0.0", "255.255.255.0");
    address.Assign(core);
    std::vector<Ipv4Address> sinkAddresses;
    for (uint32_t i = 0; i < flows; ++i)
    {
        address.NewNetwork();
        address.Assign(access.Install(senders.Get(i), routers.Get(0)));
        address.NewNetwork();
        Ipv4InterfaceContainer r = address.Assign(access.Install(routers.Get(1), receivers.Get(i)));
        sinkAddresses.push_back(r.GetAddress(1));
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    const uint16_t port = 5000;
    std::vector<Ptr<PacketSink>> sinks;
    for (uint32_t i = 0; i < flows; ++i)
    {
        PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer s = sink.Install(receivers.Get(i));
        s.Start(Seconds(0));
        sinks.push_back(DynamicCast<PacketSink>(s.Get(0)));
        BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(sinkAddresses[i], port));
        bulk.SetAttribute("MaxBytes", UintegerValue(0));
        bulk.SetAttribute("SendSize", UintegerValue(1460));
        ApplicationContainer a = bulk.Install(senders.Get(i));
        a.Start(Seconds(0.001 * i));
    }

    auto wallStart = std::chrono::steady_clock::now();
    Simulator::Stop(Seconds(duration));
    Simulator::Run();
    double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();

    uint64_t rx = 0;
    for (auto& s : sinks)
    {
        rx += s->GetTotalRx();
    }
    QueueDisc::Stats st = qdisc->GetStats();
    double offered = static_cast<double>(st.nTotalReceivedPackets);
    double loss = offered > 0 ? st.nTotalDroppedPackets / offered : 0.0;
    double meanSojournMs = g_sojournCount ? 1e3 * g_sojournSum / g_sojournCount : 0.0;
    std::printf("{\"goodput_bps\": %.1f, \"mean_queuing_ms\": %.4f, \"loss\": %.6f, "
                "\"wall_seconds\": %.3f, \"flows\": %u, \"queue\": \"%s\"}\n",
                rx * 8.0 / duration,
                meanSojournMs,
                loss,
                wall,
                flows,
                queue.c_str());
    Simulator::Destroy();
    return 0;
}
