//! Whole-simulation behaviour of `scream` (SCReAM v2): its L4S response at fixed marking levels,
//! its share beside Cubic over DualPI2 (Ericsson's test record), and liveness (an outage, a link
//! far below the encoder's minimum, a drop-tail buffer beside Cubic). Each tolerance is written
//! next to the number it comes from; run with `--nocapture` to see the measured values.

use crate::common;

use common::{signal, simulate, throughput_bps};

fn last_signal(r: &rtcc_sim::RunResult, i: usize, name: &str) -> f64 {
    signal(r, i, name).last().map_or(f64::NAN, |s| s.1)
}

/// A closed loop around the controller alone: media produced at its target (1200-byte packets),
/// sent when the pacer and the window allow, delivered 12.5 ms later with no queue and each
/// packet CE-marked with probability `p` (a seeded generator: a fixed marking level, which rtcc's
/// queues cannot produce: their marks depend on the queue the flow builds), reported every 5 ms,
/// the report back 12.5 ms later. `params`: the controller's (TOML). Returns the delivered rate
/// (bit/s) over [20 s, 60 s).
fn rate_at_fixed_marking(p: f64, evenly: bool, params: &str) -> f64 {
    use rtcc_core::cc::{create, ControllerContext, Params};
    use rtcc_core::packet::{Ecn, FeedbackReport, PacketKind, PacketResult, SentPacket};
    use rtcc_core::video::range::MediaRange;
    use rtcc_core::{Bytes, Time};
    use std::collections::VecDeque;

    const MSS: u32 = 1200;
    const OWD_NS: u64 = 12_500_000;
    const STEP_NS: u64 = 100_000; // 0.1 ms
    let ctx = ControllerContext {
        now: Time::ZERO,
        fps: 30.0,
        max_payload: Bytes(MSS as u64),
        media: MediaRange {
            max_bitrate: Some(rtcc_core::Rate::from_mbps(200.0)),
            ..Default::default()
        },
        capacity: None,
        coupling: None,
        ecn: rtcc_core::packet::EcnMode::Off,
    };
    let params: Params = toml::from_str(params).unwrap();
    let mut c = create("scream", &params, &ctx).unwrap();
    let mut rng: u64 = 0x9E37_79B9_7F4A_7C15 ^ (p * 1e6) as u64;
    let mut uniform = move || {
        // xorshift64*
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        (rng.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut backlog_bytes = 0.0f64;
    let mut next_send = 0u64;
    let mut in_flight: VecDeque<(SentPacket, u64)> = VecDeque::new(); // (packet, arrival ns)
    let mut in_flight_bytes = 0u64;
    let mut arrived: Vec<PacketResult> = vec![];
    let mut reports: VecDeque<(u64, Vec<PacketResult>)> = VecDeque::new();
    let (mut seq, mut delivered_bytes) = (0u64, 0u64);
    let (from, to) = (20_000_000_000u64, 60_000_000_000u64);
    let mut t = 0u64;
    while t < to {
        t += STEP_NS;
        let now = Time(t);
        let d = c.decision();
        backlog_bytes += d.target_bitrate.bps() / 8.0 * STEP_NS as f64 * 1e-9;
        while backlog_bytes >= MSS as f64
            && t >= next_send
            && in_flight_bytes < d.cwnd.unwrap_or(u64::MAX)
        {
            backlog_bytes -= MSS as f64;
            in_flight_bytes += MSS as u64;
            let pkt = SentPacket {
                seq,
                size: MSS,
                send_time: now,
                frame: None,
                index_in_frame: 0,
                packets_in_frame: 0,
                kind: PacketKind::Media,
                in_flight: in_flight_bytes,
            };
            seq += 1;
            c.on_packet_sent(now, &pkt);
            in_flight.push_back((pkt, t + OWD_NS));
            let pace = d.pacing_rate.map_or(0.0, |r| MSS as f64 * 8.0 / r.bps());
            next_send = next_send.max(t - STEP_NS) + (pace * 1e9) as u64;
        }
        // A 100 ms backlog is what the sender's queue would discard.
        backlog_bytes = backlog_bytes.min(d.target_bitrate.bps() / 8.0 * 0.1 + MSS as f64);
        while in_flight.front().is_some_and(|(_, at)| *at <= t) {
            let (pkt, at) = in_flight.pop_front().unwrap();
            if (from..to).contains(&at) {
                delivered_bytes += pkt.size as u64;
            }
            let marked = if evenly {
                // Every 1/p-th packet.
                (pkt.seq as f64 * p).floor() != ((pkt.seq + 1) as f64 * p).floor()
            } else {
                uniform() < p
            };
            let ecn = if marked { Ecn::Ce } else { Ecn::Ect1 };
            arrived.push(PacketResult {
                sent: pkt,
                receive_time: Some(Time(at)),
                ecn,
            });
        }
        if t.is_multiple_of(5_000_000) && !arrived.is_empty() {
            reports.push_back((t + OWD_NS, std::mem::take(&mut arrived)));
        }
        while reports.front().is_some_and(|(at, _)| *at <= t) {
            let (_, packets) = reports.pop_front().unwrap();
            let acked: u64 = packets.iter().map(|p| p.sent.size as u64).sum();
            in_flight_bytes -= acked;
            let report = FeedbackReport {
                feedback_time: now,
                packets,
                in_flight: in_flight_bytes,
                recovery: None,
            };
            c.on_feedback(now, &report);
        }
    }
    delivered_bytes as f64 * 8.0 / ((to - from) as f64 * 1e-9)
}

/// The marking levels of the fixed-marking tests.
const MARKING_LEVELS: [f64; 3] = [0.02, 0.05, 0.1];

/// SCReAM with `params` in [`rate_at_fixed_marking`]'s loop at each of [`MARKING_LEVELS`], random
/// and evenly spaced marks, each asserted within 5 % of `reference` (bit/s, random and even, per
/// level, from `whose` sender in `bench/scream_crosscheck/marking.cc`'s loop). Returns each
/// level's rate with random marks and its share of the README's `(2/p)·MSS·8/RTT`.
fn marking_rates_against(params: &str, reference: [(f64, f64); 3], whose: &str) -> Vec<(f64, f64)> {
    let mut out = vec![];
    for (p, (ref_random, ref_even)) in MARKING_LEVELS.into_iter().zip(reference) {
        let formula = 2.0 / p * 1200.0 * 8.0 / 0.025;
        let r = rate_at_fixed_marking(p, false, params);
        let r_even = rate_at_fixed_marking(p, true, params);
        eprintln!(
            "{params:?}, p = {p}: {:.2} Mbit/s (every 1/p-th packet: {:.2}), (2/p)·MSS·8/RTT = \
             {:.2} Mbit/s, ratio {:.3}",
            r / 1e6,
            r_even / 1e6,
            formula / 1e6,
            r / formula
        );
        for (ours, theirs, how) in [(r, ref_random, "random"), (r_even, ref_even, "even")] {
            assert!(
                (ours / theirs - 1.0).abs() < 0.05,
                "p = {p}, {how} marks: {:.2} Mbit/s vs {whose}'s {:.2}",
                ours / 1e6,
                theirs / 1e6
            );
        }
        out.push((r, r / formula));
    }
    out
}

#[test]
fn at_a_fixed_marking_level_the_rate_goes_as_one_over_p() {
    // The reference's README: "in steady state 2 packets per RTT should be marked", so
    // rate ≈ (2 / p) · MSS · 8 / RTT (RTT 25 ms, MSS 1200 bytes here). Measured with random
    // marks: p = 0.02: 22.18 Mbit/s (0.58 of the formula), 0.05: 8.38 (0.55), 0.1: 3.82 (0.50);
    // marking every 1/p-th packet instead: 29.40, 12.55, 2.77.
    // Ericsson's own sender (ScreamV2Tx at c8f84c3) in this loop (bench/scream_crosscheck/
    // marking.cc: the same path, marks, generator and reports, its own window and pacing)
    // gives 22.04, 8.29, 3.84 Mbit/s (0.57, 0.54, 0.50 of the formula) and 29.05, 12.52, 2.76
    // evenly: the README's formula overstates the reference itself by about 2×, so about half
    // of it is the reference's behaviour, not a porting error. (l4sAlpha, a fast-up (1/8)
    // slow-down (1/128) filter of the fraction marked per 10 ms, rests at 2.5-3 p on noisy
    // per-update fractions, and a CE event comes in about half the RTTs.) Before the port
    // compared its intervals in the reference's whole Q16 ticks it gave 21.4, 8.1, 3.75 and
    // 18.4, 5.8, 2.4 evenly (a CE event every 30 ms where the reference waits 35).
    // Asserted:
    // - within 5 % of the reference's rate in the same loop, random and even marks (measured
    //   within 1.2 %);
    // - p · rate within 15 % of its mean over the three levels (measured spread 0.38-0.44);
    // - the rate between 0.4 and 0.7 of the README's formula (measured 0.50-0.58).
    // bench/scream_crosscheck/marking.cc: (random, evenly) in bit/s.
    let reference = [(22.04e6, 29.05e6), (8.29e6, 12.52e6), (3.84e6, 2.76e6)];
    let mut products = vec![];
    let rates = marking_rates_against("", reference, "the reference");
    for (p, (r, share)) in MARKING_LEVELS.into_iter().zip(rates) {
        assert!(
            (0.4..0.7).contains(&share),
            "p = {p}: {:.2} Mbit/s is {share:.2} of the formula",
            r / 1e6
        );
        products.push(p * r);
    }
    let mean = products.iter().sum::<f64>() / products.len() as f64;
    for (p, x) in MARKING_LEVELS.iter().zip(&products) {
        assert!(
            (x / mean - 1.0).abs() < 0.15,
            "p = {p}: p·rate {x:.0} vs mean {mean:.0}"
        );
    }
}

/// SCReAM (ECT(1), max 100 Mbit/s, the ideal encoder's fixed frame sizes) and `cubic` Cubic flows
/// over a 100 Mbit/s DualPI2 bottleneck with a 25 ms base RTT.
fn beside_cubic(cubic: usize, params: &str) -> rtcc_sim::RunResult {
    let mut flows = format!(
        "[[flows]]\nname = \"scream\"\ncontroller = \"scream\"\necn = \"l4s\"\n\
         max_bitrate = \"100Mbps\"\nparams = {{ {params} }}\n"
    );
    for k in 0..cubic {
        flows +=
            &format!("[[flows]]\nname = \"cubic{k}\"\nkind = \"tcp\"\ncontroller = \"cubic\"\n");
    }
    simulate(&format!(
        "duration = \"30s\"\nseed = 1\n[path.forward]\ncapacity = \"100Mbps\"\ndelay = \"12.5ms\"\n\
         queue = {{ kind = \"dualpi2\" }}\n[path.reverse]\ndelay = \"12.5ms\"\n{flows}"
    ))
}

/// SCReAM's rate (Mbit/s, 10-30 s) beside `n` Cubic flows over [`beside_cubic`]'s bottleneck
/// with `params`, printed beside the record's `reference`; with either l4sAlpha filter its L4S
/// queue stays under 2 ms at the 95th percentile (DualPI2's L queue marks from 1 ms) and it
/// loses nothing (L4S is marked, not dropped): asserted here.
fn scream_beside_cubic(n: usize, params: &str, reference: f64) -> f64 {
    let r = beside_cubic(n, params);
    let rate = throughput_bps(&r, 0, 10.0, 30.0) / 1e6;
    let f = &r.summary.flows[0];
    let q95 = f.queuing_delay_ms.p95.unwrap();
    let cubic: Vec<String> = (1..=n)
        .map(|k| format!("{:.1}", throughput_bps(&r, k, 10.0, 30.0) / 1e6))
        .collect();
    eprintln!(
        "{params:?}, {n} Cubic: scream {rate:.1} Mbit/s (record {reference}), queuing P95 \
         {q95:.2} ms, l4s_alpha {:.3}, Cubic {cubic:?}",
        last_signal(&r, 0, "l4s_alpha")
    );
    assert!(q95 < 2.0, "{params:?}, {n} Cubic: queuing P95 {q95} ms");
    assert_eq!(f.packets_lost, 0, "{params:?}, {n} Cubic");
    rate
}

#[test]
fn over_dualpi2_beside_cubic_it_keeps_a_share_on_a_millisecond_queue() {
    // Ericsson's test record (SCReAM v2, fixed frame sizes): 75, 60, 48, 40, 30 Mbit/s beside
    // 0-4 Cubic flows. Measured here (10-30 s): 68.6, 40.0, 25.4, 19.0, 14.4 Mbit/s. Only the
    // first is within 20 % of the record (asserted); the others are not (the record's SCReAM
    // averaged l4sAlpha plainly: with that filter all five are, the next test), and what is
    // asserted for them is weaker: at least half of an equal share of the link (measured
    // 0.72-0.80 of it), a rate that falls as Cubic flows join, an L4S queue under 2 ms at the 95th
    // percentile (DualPI2's L queue marks from 1 ms; measured P95 1.0 ms alone, 0.27 ms beside
    // Cubic) and no loss (L4S is marked, not dropped).
    let record = [75.0, 60.0, 48.0, 40.0, 30.0];
    let mut previous = f64::INFINITY;
    for (n, &reference) in record.iter().enumerate() {
        let rate = scream_beside_cubic(n, "", reference);
        if n == 0 {
            assert!(
                (rate / reference - 1.0).abs() < 0.2,
                "alone: {rate:.1} Mbit/s"
            );
        }
        let fair = 100.0 / (n + 1) as f64;
        assert!(
            rate > 0.5 * fair,
            "{n} Cubic: {rate:.1} Mbit/s, equal share {fair:.1}"
        );
        assert!(rate < previous, "{n} Cubic: {rate:.1} ≥ {previous:.1}");
        previous = rate;
    }
}

#[test]
fn with_the_earlier_drafts_ewma_the_rate_follows_the_readme_formula() {
    // `l4s_alpha_filter = "ewma"`: l4sAlpha is the plain average of the marked fraction (gain
    // 1/16 per update, the draft's earlier `L4S_AVG_G` and libwebrtc's first port), so it
    // settles on p itself rather than the fast-up filter's 2.5-3 p, and the rate on the README's
    // two marks per RTT. Measured (random marks): 40.01, 16.52, 7.88 Mbit/s at p = 0.02, 0.05,
    // 0.1, that is 1.042, 1.076, 1.027 of (2/p)·MSS·8/RTT. The tolerance: 15 %.
    // Ericsson's sender with its l4sAlpha update replaced by the same average (a local edit of
    // ScreamV2Tx.cpp at c8f84c3 for this measurement, in marking.cc's loop) gives 39.94, 16.53,
    // 7.90 Mbit/s (1.040, 1.076, 1.028), and 33.12, 12.75, 6.11 with every 1/p-th packet
    // marked: asserted within 5 %, as the default filter is against the unedited reference.
    let edited_reference = [(39.94e6, 33.12e6), (16.53e6, 12.75e6), (7.90e6, 6.11e6)];
    let ewma = "l4s_alpha_filter = \"ewma\"";
    let rates = marking_rates_against(ewma, edited_reference, "the edited reference");
    for (p, (r, share)) in MARKING_LEVELS.into_iter().zip(rates) {
        assert!(
            (share - 1.0).abs() < 0.15,
            "p = {p}: {:.2} Mbit/s is {share:.3} of (2/p)·MSS·8/RTT",
            r / 1e6
        );
    }
}

#[test]
fn with_the_earlier_drafts_ewma_it_follows_ericssons_dualpi2_record() {
    // The same bottleneck as above with `l4s_alpha_filter = "ewma"`. Measured (10-30 s): 66.6,
    // 50.3, 41.5, 33.3, 24.9 Mbit/s beside 0-4 Cubic flows against the record's 75, 60, 48, 40,
    // 30: 0.83-0.89 of it (the default filter: 0.48-0.91). Asserted: each within the issue's
    // 20 %, and still an L4S queue P95 under 2 ms with no loss.
    let record = [75.0, 60.0, 48.0, 40.0, 30.0];
    for (n, &reference) in record.iter().enumerate() {
        let rate = scream_beside_cubic(n, "l4s_alpha_filter = \"ewma\"", reference);
        assert!(
            (rate / reference - 1.0).abs() < 0.2,
            "{n} Cubic: {rate:.1} Mbit/s against the record's {reference}"
        );
    }
}

/// A 25 ms each way path with `capacity` (a TOML line) and a drop-tail `queue`.
fn path(capacity: &str, queue: &str, flows: &str, secs: u32) -> rtcc_sim::RunResult {
    simulate(&format!(
        "duration = \"{secs}s\"\nseed = 1\n[path.forward]\n{capacity}\ndelay = \"25ms\"\n\
         queue = \"{queue}\"\n[path.reverse]\ndelay = \"25ms\"\n{flows}"
    ))
}

/// Seconds in `[from, to)` in which flow `i` got less than `min_bps` through.
fn starved_seconds(
    r: &rtcc_sim::RunResult,
    i: usize,
    from: u32,
    to: u32,
    min_bps: f64,
) -> Vec<u32> {
    (from..to)
        .filter(|&s| throughput_bps(r, i, s as f64, s as f64 + 1.0) < min_bps)
        .collect()
}

#[test]
fn after_a_5s_outage_it_is_back_at_the_link_rate_within_two_seconds() {
    // 5 Mbit/s, nothing (1 kbit/s) from 20 s to 25 s. Measured: 2.16 Mbit/s in the first second
    // after, 4.79 in the second, ≥ 4.6 from then on; the RTP queue discards (encoder resets)
    // during the outage. Asserted: ≥ 80 % of the link in every second from 27 s to 45 s, and
    // at least one discard.
    let r = path(
        "schedule = [[\"0s\", \"5Mbps\"], [\"20s\", \"1kbps\"], [\"25s\", \"5Mbps\"]]",
        "300ms",
        "[[flows]]\ncontroller = \"scream\"\n",
        45,
    );
    let per_second: Vec<String> = (18..30)
        .map(|s| {
            format!(
                "{:.2}",
                throughput_bps(&r, 0, s as f64, s as f64 + 1.0) / 1e6
            )
        })
        .collect();
    eprintln!("outage, Mbit/s per second from 18 s: {per_second:?}");
    let slow = starved_seconds(&r, 0, 27, 45, 0.8 * 5e6);
    assert!(slow.is_empty(), "under 4 Mbit/s in seconds {slow:?}");
    assert!(last_signal(&r, 0, "rtp_queue_discards") >= 1.0);
}

#[test]
fn far_below_the_encoders_minimum_it_keeps_the_link_busy() {
    // 50 kbit/s against a 150 kbit/s minimum: the target stays at the minimum, the window (at
    // least 2 MSS) and the RTP queue's discards bound what is sent. Measured: 50.0 kbit/s
    // through; 324 of the 1060 packets sent are lost in the one-packet buffer (300 ms at
    // 50 kbit/s). Asserted: ≥ 40 kbit/s in every second from 1 s.
    let r = path(
        "capacity = \"50kbps\"",
        "300ms",
        "[[flows]]\ncontroller = \"scream\"\nmin_bitrate = \"150kbps\"\n",
        60,
    );
    let f = &r.summary.flows[0];
    eprintln!(
        "50 kbit/s link: {:.1} kbit/s, {} of {} packets lost",
        throughput_bps(&r, 0, 10.0, 60.0) / 1e3,
        f.packets_lost,
        f.packets_sent
    );
    let slow = starved_seconds(&r, 0, 1, 60, 40e3);
    assert!(slow.is_empty(), "under 40 kbit/s in seconds {slow:?}");
}

#[test]
fn beside_cubic_on_a_drop_tail_buffer_it_never_stalls() {
    // 4 Mbit/s, Cubic from 10 s. Without shared-bottleneck detection (off in the reference too)
    // SCReAM's delay target (100 ms, virtual CE from 50 ms) yields to Cubic's standing queue.
    // Measured (20-70 s): with a 50 ms buffer 1.02 vs 2.98 Mbit/s; with 300 ms 0.03 vs 3.97
    // Mbit/s: SCReAM at its 30 kbit/s minimum, delivering every second. Asserted: with 50 ms,
    // at least 15 % of the link and data in every second; with 300 ms, at least 80 % of the
    // minimum rate in every second (no stall) and the link used by the two (≥ 90 %).
    let flows = "[[flows]]\nname = \"scream\"\ncontroller = \"scream\"\n[[flows]]\n\
                 name = \"cubic\"\nkind = \"tcp\"\ncontroller = \"cubic\"\nstart = \"10s\"\n";
    let r = path("capacity = \"4Mbps\"", "50ms", flows, 70);
    let (s, c) = (
        throughput_bps(&r, 0, 20.0, 70.0),
        throughput_bps(&r, 1, 20.0, 70.0),
    );
    eprintln!(
        "50 ms buffer: scream {:.2}, cubic {:.2} Mbit/s",
        s / 1e6,
        c / 1e6
    );
    assert!(s > 0.15 * 4e6, "{:.2} Mbit/s", s / 1e6);
    assert!(starved_seconds(&r, 0, 1, 70, 1.0).is_empty());
    let r = path("capacity = \"4Mbps\"", "300ms", flows, 70);
    let (s, c) = (
        throughput_bps(&r, 0, 20.0, 70.0),
        throughput_bps(&r, 1, 20.0, 70.0),
    );
    eprintln!(
        "300 ms buffer: scream {:.2}, cubic {:.2} Mbit/s",
        s / 1e6,
        c / 1e6
    );
    let slow = starved_seconds(&r, 0, 1, 70, 0.8 * 30e3);
    assert!(slow.is_empty(), "under 24 kbit/s in seconds {slow:?}");
    assert!(s + c > 0.9 * 4e6);
}
