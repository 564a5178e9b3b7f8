//! BBRv2 (`bbr2`) and the BBR-S / BBR2-S estimator (Vargas et al., "BBR Bufferbloat in DASH
//! Video", WWW '21) on the paper's bottleneck: 25 Mbit/s, 100 ms RTT, a shallow (100 KB) or deep
//! (10 MB) drop-tail buffer, and a token bucket with a 1 MB burst in front of the deep buffer.
//! Bands cite where they come from: the extraction is `shared/research/bbr_dash.md` (§6.3
//! acceptance checks), the v2 constants are tcp_bbr2.c's (docs/tcp.md).

use crate::common;

use common::{mean_sojourn_ms, share_in_state, signal, simulate, throughput_bps, time_in_state};
use rtcc_sim::RunResult;
use std::hash::{DefaultHasher, Hash, Hasher};

const BBR_S: &str = "bw_estimator = \"percentile\"";
const TEXT: &str = "bw_estimator = \"percentile\", percentile_reading = \"text\"";
/// A DASH-like source: 5 s periods (the paper's segment length) of 2 s backlogged, 3 s idle, so
/// the bucket refills (1 MB at R takes 320 ms) before every download.
const ON_OFF: &str = "app = { model = \"onoff\", on = \"2s\", off = \"3s\" }";

const SECS: f64 = 60.0;
/// The paper's link rate R (§4.1).
const R: f64 = 25e6;

/// One bulk TCP flow of `controller` (with `params`) for `SECS` on the paper's link: 25 Mbit/s,
/// 50 ms each way, a drop-tail `queue`.
fn bulk(controller: &str, params: &str, queue: &str) -> RunResult {
    simulate(&format!(
        "duration = \"{SECS}s\"\n[path.forward]\ncapacity = \"25Mbps\"\ndelay = \"50ms\"\nqueue = \"{queue}\"\n\
         [[flows]]\nkind = \"tcp\"\ncontroller = \"{controller}\"\nparams = {{ {params} }}\n"
    ))
}

/// The same behind a token bucket (Linux tbf, rate R, 1 MB burst, 10 MB limit), with the TCP
/// application `app` (`""` for a backlogged one).
fn tbf(controller: &str, params: &str, app: &str) -> RunResult {
    simulate(&format!(
        "duration = \"{SECS}s\"\n[path.forward]\ntoken_bucket = {{ rate = \"25Mbps\", burst = \"1MB\" }}\n\
         delay = \"50ms\"\nqueue = \"10MB\"\n\
         [[flows]]\nkind = \"tcp\"\ncontroller = \"{controller}\"\nparams = {{ {params} }}\n{app}\n"
    ))
}

/// Time-weighted mean of flow 0's signal `name` over `[from_s, to_s)` (each sample held until
/// the next, as `ss` sampled at a fixed period would see it).
fn time_mean(r: &RunResult, name: &str, from_s: f64, to_s: f64) -> f64 {
    time_in_state(r, 0, name, from_s, to_s)
        .iter()
        .map(|(v, dt)| v * dt)
        .sum::<f64>()
        / (to_s - from_s)
}

/// Packets dropped at the bottleneck / packets sent, flow 0, for packets sent in `[from_s, to_s)`.
fn loss_rate(r: &RunResult, from_s: f64, to_s: f64) -> f64 {
    let sent: Vec<_> = r.flows[0]
        .packets
        .iter()
        .filter(|p| (from_s..to_s).contains(&p.send.as_secs_f64()))
        .collect();
    sent.iter().filter(|p| p.dropped).count() as f64 / sent.len() as f64
}

/// Median bottleneck sojourn (ms) of flow 0's packets departing in `[from_s, to_s)`.
fn median_sojourn_ms(r: &RunResult, from_s: f64, to_s: f64) -> f64 {
    let mut v: Vec<f64> = r.flows[0]
        .packets
        .iter()
        .filter_map(|p| {
            p.depart
                .filter(|d| (from_s..to_s).contains(&d.as_secs_f64()))
                .map(|d| (d - p.enqueue).as_millis_f64())
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Times (s) at which flow 0's signal `name` changes to `value`.
fn entries(r: &RunResult, name: &str, value: f64) -> Vec<f64> {
    let mut out = vec![];
    let mut prev = None;
    for (t, v) in signal(r, 0, name) {
        if v == value && prev != Some(v) {
            out.push(t);
        }
        prev = Some(v);
    }
    out
}

fn report(label: &str, r: &RunResult, bw_signal: &str) -> f64 {
    let goodput = throughput_bps(r, 0, 0.0, SECS);
    eprintln!(
        "{label}: goodput {:.2} Mbit/s ({:.1} % of R), loss {:.3} % (after 5 s {:.3} %), mean queue \
         {:.1} ms, mean estimate {:.1} Mbit/s; mode (code, s) {:?}",
        goodput / 1e6,
        100.0 * goodput / R,
        100.0 * loss_rate(r, 0.0, SECS),
        100.0 * loss_rate(r, 5.0, SECS),
        mean_sojourn_ms(r, 5.0, SECS),
        time_mean(r, bw_signal, 0.0, SECS) / 1e6,
        time_in_state(r, 0, "mode", 0.0, SECS),
    );
    goodput
}

/// Mode codes (`mode` signal of both controllers, Linux `enum bbr_mode`).
const STARTUP: f64 = 0.0;
const PROBE_BW: f64 = 2.0;
const PROBE_RTT: f64 = 3.0;
/// `bbr2_phase` codes (tcp_info's `enum tcp_bbr2_phase`).
const UP: f64 = 4.0;
const DOWN: f64 = 5.0;
const CRUISE: f64 = 6.0;
const REFILL: f64 = 7.0;

#[test]
fn bbr2_fills_the_link_on_both_buffers_and_loses_only_in_startup() {
    for queue in ["100KB", "10MB"] {
        let r = bulk("bbr2", "", queue);
        let goodput = report(&format!("bbr2 {queue}"), &r, "bw_bps");
        eprintln!(
            "  phases (code, s): {:?}",
            time_in_state(&r, 0, "bbr2_phase", 0.0, SECS)
        );
        // Measured 97.8 % (100 KB) and 98.4 % (10 MB) of R over the whole minute.
        assert!(
            goodput >= 0.9 * R,
            "{queue}: goodput {:.2} Mbit/s below 90 % of R",
            goodput / 1e6
        );
        // The BDP is 209 packets (25 Mbit/s × 100.5 ms); 100 KB holds 66 more. STARTUP's 2.885×
        // overshoots that and is where every loss happens (its loss exit needs a lossy round);
        // afterwards a probe's 1.25 × BDP + 2 = 264 packets fits, so nothing is dropped.
        let whole = loss_rate(&r, 0.0, SECS);
        assert!(
            whole < 0.02,
            "{queue}: {:.2} % loss over the run, above v2's 2 % loss_thresh",
            100.0 * whole
        );
        assert_eq!(
            loss_rate(&r, 5.0, SECS),
            0.0,
            "{queue}: losses after STARTUP"
        );
        if queue == "100KB" {
            assert!(
                whole > 0.0,
                "STARTUP's overshoot must hit the shallow buffer"
            );
            assert_eq!(
                signal(&r, 0, "startup_loss_exit").last().unwrap().1,
                1.0,
                "the shallow buffer ends STARTUP through v2's loss exit (8 lossy ACKs, > 2 %)"
            );
            let hi = signal(&r, 0, "inflight_hi_packets").last().unwrap().1;
            assert!(
                (209.0..=280.0).contains(&hi),
                "inflight_hi {hi}: one BDP, raised by probes"
            );
        } else {
            assert_eq!(whole, 0.0, "the deep buffer absorbs STARTUP");
            assert_eq!(
                signal(&r, 0, "inflight_hi_packets").last().unwrap().1,
                f64::INFINITY,
                "no loss, no upper bound"
            );
        }
        // v2 cruises at 0.99 × bw with 15 % headroom under inflight_hi: almost no queue.
        let q = mean_sojourn_ms(&r, 5.0, SECS);
        assert!(q < 5.0, "{queue}: mean queue {q:.1} ms");
    }
}

#[test]
fn bbr2_spends_its_time_cruising_and_probes_every_two_to_three_seconds() {
    for queue in ["100KB", "10MB"] {
        let r = bulk("bbr2", "", queue);
        let share = |v: f64| share_in_state(&r, 0, "bbr2_phase", v, 0.0, SECS);
        let startup = time_in_state(&r, 0, "mode", 0.0, SECS)
            .iter()
            .find(|x| x.0 == STARTUP)
            .map_or(0.0, |x| x.1);
        // STARTUP doubles from 10 packets to the 209-packet BDP in about 3 + 3 rounds plus the
        // three plateau rounds (0.88 s with the loss exit, 1.57 s without).
        assert!(startup < 2.0, "{queue}: {startup:.2} s in STARTUP");
        let probe_bw = share_in_state(&r, 0, "mode", PROBE_BW, 0.0, SECS);
        assert!(
            probe_bw >= 0.95,
            "{queue}: PROBE_BW {:.1} %",
            100.0 * probe_bw
        );
        // With a constant propagation delay every cruise drains the queue and its RTT samples
        // equal the minimum, which renews it (`<=` in tcp_bbr2.c): no PROBE_RTT is needed.
        assert_eq!(
            share_in_state(&r, 0, "mode", PROBE_RTT, 0.0, SECS),
            0.0,
            "{queue}"
        );
        // Probes: REFILL (one round), UP (≥ one min_rtt), DOWN, then CRUISE until 2–3 s after
        // DOWN began (the round bound, min(63, 209) rounds = 6.3 s, comes later).
        let probes = entries(&r, "bbr2_phase", REFILL);
        let gaps: Vec<f64> = probes.windows(2).map(|w| w[1] - w[0]).collect();
        eprintln!(
            "bbr2 {queue}: CRUISE {:.1} %, UP {:.1} %, DOWN {:.1} %, REFILL {:.1} %; {} probes, gaps {:.2}–{:.2} s",
            100.0 * share(CRUISE),
            100.0 * share(UP),
            100.0 * share(DOWN),
            100.0 * share(REFILL),
            probes.len(),
            gaps.iter().cloned().fold(f64::MAX, f64::min),
            gaps.iter().cloned().fold(0.0, f64::max),
        );
        for g in &gaps {
            // 2–3 s of wait plus REFILL, UP and DOWN (about 0.2–0.35 s together).
            assert!((2.1..3.5).contains(g), "{queue}: probe gaps {gaps:?}");
        }
        assert!(
            share(CRUISE) > 0.75,
            "{queue}: CRUISE {:.1} %",
            100.0 * share(CRUISE)
        );
        for (name, v) in [("UP", UP), ("DOWN", DOWN), ("REFILL", REFILL)] {
            let s = share(v);
            assert!(
                (0.01..0.10).contains(&s),
                "{queue}: {name} {:.1} %",
                100.0 * s
            );
        }
    }
}

#[test]
fn bbr_s_reaches_90_percent_of_the_link_on_a_bulk_transfer() {
    // Extraction §6.3 E9: "a bulk BBR-S transfer reaches ≥ 90 % of R".
    for queue in ["100KB", "10MB"] {
        let plain = report(
            &format!("bbr {queue}"),
            &bulk("bbr", "", queue),
            "btl_bw_bps",
        );
        let r = bulk("bbr", BBR_S, queue);
        let goodput = report(&format!("bbr-s {queue}"), &r, "btl_bw_bps");
        // Measured 93.6 % (bbr: 96.5 %): between its 1.25 phases BBR-S paces at 0.99 × its
        // estimate, its samples follow, and the percentile of the last 100 (half an RTT of ACKs)
        // sags until the next probe.
        assert!(
            goodput >= 0.9 * R,
            "{queue}: BBR-S goodput {:.2} Mbit/s",
            goodput / 1e6
        );
        assert!(
            goodput <= plain,
            "the max filter is the upper envelope of the percentile"
        );
        assert_eq!(
            loss_rate(&r, 5.0, SECS),
            0.0,
            "{queue}: losses after STARTUP"
        );
        // v1's state split: PROBE_RTT every 10 s for 200 ms plus the drain to 4 packets.
        let probe_rtts = entries(&r, "mode", PROBE_RTT);
        assert_eq!(probe_rtts.len(), 5, "{queue}: PROBE_RTT at {probe_rtts:?}");
        let rtt_share = share_in_state(&r, 0, "mode", PROBE_RTT, 0.0, SECS);
        assert!(
            (0.015..0.035).contains(&rtt_share),
            "{queue}: PROBE_RTT {:.2} %",
            100.0 * rtt_share
        );
        assert!(share_in_state(&r, 0, "mode", PROBE_BW, 0.0, SECS) >= 0.9);
    }
}

#[test]
fn bbr2_s_code_fills_90_percent_and_the_text_reading_collapses() {
    for queue in ["100KB", "10MB"] {
        let r = bulk("bbr2", BBR_S, queue);
        let goodput = report(&format!("bbr2-s {queue}"), &r, "bw_bps");
        // Measured 90.4 %. BBR2-S cruises at 0.99 × its estimate for 2–3 s between probes, so
        // its samples, and the 85th percentile of the last 100 of them (50 ms of ACKs), decay
        // by about 1 % per 100 ACKs until the next UP phase restores them; E9's 90 % is a
        // BBR-S (v1) check, so v2's floor here is looser.
        assert!(
            goodput >= 0.85 * R,
            "{queue}: BBR2-S goodput {:.2} Mbit/s",
            goodput / 1e6
        );
        // The paper's text multiplies the percentile by 0.85 (§7.2). The flow's samples then
        // measure 0.99 × 0.85 of the previous percentile, so each 100 ACKs cut the estimate by
        // 16 % and a probe (1.25 × 0.85 = 1.06, for one round) cannot undo it: the estimate
        // decays to the floor in seconds. The released code has no such factor (extraction
        // §3.2), which is why "code" is the default.
        let t = bulk("bbr2", TEXT, queue);
        let collapsed = report(&format!("bbr2-s text {queue}"), &t, "bw_bps");
        assert!(
            collapsed < 0.1 * R,
            "{queue}: BBR2-S (text) kept {:.2} Mbit/s",
            collapsed / 1e6
        );
    }
}

#[test]
fn behind_a_policer_bbr_finds_the_policed_rate_and_stops_losing() {
    // Linux's long-term estimator (tcp_bbr.c `lt_bw`, 4.10 "for policers"): a token bucket of
    // 10 Mbit/s with a 50 KB burst and a 3-packet queue on a 100 Mbit/s line drops what exceeds
    // its rate, as a policer does. lt_bw takes over when two ≥ 4-round intervals lose ≥ 20 % at
    // the same rate (STARTUP's overshoot, and again after each restart), and paces at their mean
    // with gain 1 for 48 rounds; between those spells PROBE_BW's 1.25 probes lose a few percent,
    // which never reaches 20 % over an interval, so it does not re-engage. Measured: in use 26 %
    // of the run at 9.91 Mbit/s, loss after 5 s 4.6 %, goodput 9.75 Mbit/s; the whole run's loss
    // 5.15 % (5.54 % before lt_bw, same goodput).
    let r = simulate(
        "duration = \"60s\"\n[path.forward]\n\
         token_bucket = { rate = \"10Mbps\", burst = \"50KB\", line_rate = \"100Mbps\" }\n\
         delay = \"20ms\"\nqueue = \"4500B\"\n\
         [[flows]]\nkind = \"tcp\"\ncontroller = \"bbr\"\n",
    );
    let used = time_mean(&r, "lt_use_bw", 0.0, SECS);
    let lt = signal(&r, 0, "lt_bw_bps");
    let policed: Vec<f64> = signal(&r, 0, "lt_use_bw")
        .iter()
        .zip(&lt)
        .filter(|((_, u), _)| *u == 1.0)
        .map(|(_, (_, bw))| *bw)
        .collect();
    let loss = loss_rate(&r, 5.0, SECS);
    let goodput = throughput_bps(&r, 0, 0.0, SECS);
    eprintln!(
        "policer: lt_bw in use {:.0} % of the run, mean policed rate {:.2} Mbit/s, loss after 5 s \
         {:.1} %, goodput {:.2} Mbit/s",
        100.0 * used,
        policed.iter().sum::<f64>() / policed.len().max(1) as f64 / 1e6,
        100.0 * loss,
        goodput / 1e6
    );
    assert!(used > 0.15, "lt_bw in use {:.0} % of the run", 100.0 * used);
    for bw in &policed {
        assert!(
            (8.5e6..=11.5e6).contains(bw),
            "a policed rate of {:.2} Mbit/s for a 10 Mbit/s policer",
            bw / 1e6
        );
    }
    assert!(loss < 0.08, "loss after 5 s {:.1} %", 100.0 * loss);
    assert!(goodput > 0.85 * 10e6, "goodput {:.2} Mbit/s", goodput / 1e6);
}

#[test]
fn behind_a_token_bucket_the_max_filter_overshoots_and_the_percentile_does_not() {
    // Extraction §6.3: "BBR-S mean bw at 10 MB / 1 MB burst in [22, 32]" and Table 3 (BBR
    // 91.8 Mbit/s, band [60, 125]; BBR2 65.7, band [42, 90]) with the calibration
    // BBR / (R + B / RTprop) in [0.7, 1.05]. The estimate is time-averaged over the run, as
    // `ss` sampled at a fixed period would average it.
    let (burst_bytes, rtprop) = (1e6, 0.1);
    let calib = R + burst_bytes * 8.0 / rtprop; // 105 Mbit/s
    for (label, app) in [("bulk", ""), ("on/off 2 s / 3 s", ON_OFF)] {
        let bbr = tbf("bbr", "", app);
        let bbr_s = tbf("bbr", BBR_S, app);
        let bbr2 = tbf("bbr2", "", app);
        let bbr2_s = tbf("bbr2", BBR_S, app);
        let est = time_mean(&bbr, "btl_bw_bps", 0.0, SECS);
        let est_s = time_mean(&bbr_s, "btl_bw_bps", 0.0, SECS);
        let est_s_max = time_mean(&bbr_s, "max_filter_bw_bps", 0.0, SECS);
        let est2 = time_mean(&bbr2, "bw_bps", 0.0, SECS);
        let est2_s = time_mean(&bbr2_s, "bw_bps", 0.0, SECS);
        let med = |r: &RunResult| median_sojourn_ms(r, 0.0, SECS);
        eprintln!(
            "token bucket, {label}: mean estimate bbr {:.1}, bbr-s {:.1} (its unread max filter {:.1}), \
             bbr2 {:.1}, bbr2-s {:.1} Mbit/s; median queue bbr {:.0} ms, bbr-s {:.0} ms, bbr2 {:.0} ms, \
             bbr2-s {:.0} ms; STARTUP bbr-s {:.2} s",
            est / 1e6,
            est_s / 1e6,
            est_s_max / 1e6,
            est2 / 1e6,
            est2_s / 1e6,
            med(&bbr),
            med(&bbr_s),
            med(&bbr2),
            med(&bbr2_s),
            share_in_state(&bbr_s, 0, "mode", STARTUP, 0.0, SECS) * SECS,
        );
        assert!(
            (22e6..=32e6).contains(&est_s),
            "{label}: BBR-S mean estimate {:.1} Mbit/s outside [22, 32]",
            est_s / 1e6
        );
        assert!(
            est > 1.5 * R,
            "{label}: BBR's max filter {:.1} Mbit/s",
            est / 1e6
        );
        assert!(
            est_s_max > 1.25 * R,
            "{label}: BBR-S's own max filter would have overshot"
        );
        // BBR2-S removes the overshoot as BBR-S does. The extraction gives it no band, so the
        // check is directional: BBR2 above 1.5 R, BBR2-S no higher than its own probing gain
        // (1.25 R, tcp_bbr2.c's bw_probe_pif_gain) would explain. Measured 22.6 (bulk) and 21.0
        // (on/off) Mbit/s: like bulk BBR2-S above, a little below R.
        assert!(
            est2 > 1.5 * R,
            "{label}: BBR2's max filter {:.1} Mbit/s",
            est2 / 1e6
        );
        assert!(
            est2_s <= 1.25 * R,
            "{label}: BBR2-S {:.1} Mbit/s",
            est2_s / 1e6
        );
        if app.is_empty() {
            // A backlogged flow only meets a full bucket after PROBE_RTT's 200 ms at 4
            // packets (625 KB of tokens): smaller than Table 3's DASH case.
            continue;
        }
        // The DASH-like source refills the bucket before every download: Table 3's mechanism.
        assert!(
            (60e6..=125e6).contains(&est),
            "BBR {:.1} Mbit/s, Table 3 band [60, 125]",
            est / 1e6
        );
        assert!(
            (0.7..=1.05).contains(&(est / calib)),
            "BBR / (R + B/RTprop) = {:.2}, extraction §6.3 calibration [0.7, 1.05] (paper 0.87)",
            est / calib
        );
        assert!(
            (42e6..=90e6).contains(&est2),
            "BBR2 {:.1} Mbit/s, Table 3 band [42, 90]",
            est2 / 1e6
        );
        // Fig. 8 / §6.3: median RTT ≥ 4 × RTprop for BBR; ≤ 2 × RTprop for BBR-S (the queue
        // is the RTT above the 100 ms propagation).
        assert!(med(&bbr) >= 300.0, "BBR median queue {:.0} ms", med(&bbr));
        assert!(
            med(&bbr_s) <= 100.0,
            "BBR-S median queue {:.0} ms",
            med(&bbr_s)
        );
    }
}

/// Hashes of a run's summary, packet log and state log.
fn fingerprint(r: &RunResult) -> (u64, u64, u64) {
    let mut h = [
        DefaultHasher::new(),
        DefaultHasher::new(),
        DefaultHasher::new(),
    ];
    r.summary.to_json().hash(&mut h[0]);
    for p in r.flows.iter().flat_map(|f| f.packets.iter()) {
        (
            p.seq,
            p.size,
            p.send.0,
            p.depart.map(|t| t.0),
            p.recv.map(|t| t.0),
            p.dropped,
        )
            .hash(&mut h[1]);
    }
    let s = &r.state;
    for k in 0..s.time.len() {
        (s.flow[k], s.time[k].0, s.signal[k], s.value[k].to_bits()).hash(&mut h[2]);
    }
    (h[0].finish(), h[1].finish(), h[2].finish())
}

#[test]
fn the_same_scenario_and_seed_give_identical_runs() {
    for (cc, params) in [("bbr2", ""), ("bbr2", BBR_S), ("bbr", BBR_S)] {
        let a = fingerprint(&bulk(cc, params, "100KB"));
        let b = fingerprint(&bulk(cc, params, "100KB"));
        assert_eq!(a, b, "{cc} {{ {params} }}: two runs differ");
        let a = fingerprint(&tbf(cc, params, ON_OFF));
        let b = fingerprint(&tbf(cc, params, ON_OFF));
        assert_eq!(
            a, b,
            "{cc} {{ {params} }} behind the token bucket: two runs differ"
        );
    }
    // The controller's seed draws the probe times: another seed, other times.
    let one = entries(&bulk("bbr2", "seed = 1", "10MB"), "bbr2_phase", REFILL);
    let two = entries(&bulk("bbr2", "seed = 2", "10MB"), "bbr2_phase", REFILL);
    assert_ne!(one, two, "the probe wait is random per seed");
}
