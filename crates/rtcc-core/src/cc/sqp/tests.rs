//! Controller-level checks with exact numbers: frames go through a hand-computable FIFO
//! bottleneck (rate `C`, propagation `d`, no other traffic) and the per-frame feedback comes
//! back to the controller.

use super::*;
use crate::packet::{PacketKind, PacketResult, SentPacket};

const PAYLOAD: u32 = 1200;
const FPS: f64 = 60.0;

/// A frame sender through a FIFO bottleneck. The receiver's clock is `offset_ns` ahead of the
/// sender's (true) clock; true time starts at 10 s so a negative offset keeps times positive.
struct Bench {
    sqp: Sqp,
    c: f64,
    prop: Duration,
    offset_ns: i64,
    now: Time,
    seq: u64,
    frame: u64,
    link_free: Time,
}

impl Bench {
    fn new(params: &str, c: f64, offset_ns: i64) -> Bench {
        let params: Params = toml::from_str(params).unwrap();
        let config: SqpConfig = parse_config("sqp", &params).unwrap();
        let p = config
            .validate(FPS, crate::video::range::DEFAULT_MIN_BITRATE)
            .unwrap();
        Bench {
            sqp: Sqp::new(p, FPS),
            c,
            prop: Duration::from_millis(20),
            offset_ns,
            now: Time::from_millis(10_000),
            seq: 0,
            frame: 0,
            link_free: Time::ZERO,
        }
    }

    fn at_receiver(&self, t: Time) -> Time {
        Time((t.0 as i64 + self.offset_ns) as u64)
    }

    /// Encode, pace and deliver one frame; `lost` packets (by index) are dropped after the
    /// bottleneck, so the timing of the others does not change. Returns the receive times
    /// (receiver clock) of the packets that arrived, and the packet sizes.
    fn frame(&mut self, lost: &[u16]) -> (Vec<Option<Time>>, Vec<u32>) {
        let d = self.sqp.decision();
        let size = (d.target_bitrate.bps() / FPS / 8.0).floor() as u32;
        let n = size.div_ceil(PAYLOAD) as u16;
        let info = FrameInfo {
            frame: self.frame,
            capture_time: self.now,
            size,
            target: d.target_bitrate,
            packets: n,
            keyframe: false,
        };
        self.sqp.on_frame_encoded(self.now, &info);
        let pacing = self.sqp.decision().pacing_rate.unwrap();
        let mut send = self.now;
        let mut results = Vec::new();
        let mut sizes = Vec::new();
        let mut last_arrival = self.now;
        for i in 0..n {
            let s = if i + 1 < n {
                PAYLOAD
            } else {
                size - PAYLOAD * (n as u32 - 1)
            };
            let depart =
                send.max(self.link_free) + Duration::from_secs_f64(s as f64 * 8.0 / self.c);
            self.link_free = depart;
            let arrive = depart + self.prop;
            last_arrival = last_arrival.max(arrive);
            let recv = (!lost.contains(&i)).then(|| self.at_receiver(arrive));
            results.push(PacketResult {
                sent: SentPacket {
                    seq: self.seq,
                    size: s,
                    send_time: send,
                    frame: Some(self.frame),
                    index_in_frame: i,
                    packets_in_frame: n,
                    kind: PacketKind::Media,
                    in_flight: 0,
                },
                receive_time: recv,
                ecn: crate::packet::Ecn::NotEct,
            });
            sizes.push(s);
            self.seq += 1;
            send += pacing.transmit_time(s as u64);
        }
        let report = FeedbackReport {
            feedback_time: last_arrival + self.prop,
            packets: results.clone(),
            in_flight: 0,
            recovery: None,
        };
        self.sqp.on_feedback(report.feedback_time, &report);
        self.frame += 1;
        self.now += Duration::from_secs_f64(1.0 / FPS);
        (results.iter().map(|r| r.receive_time).collect(), sizes)
    }
}

#[test]
fn the_estimate_trajectory_does_not_depend_on_the_receivers_clock_offset() {
    // §4.2: Δ_min and R_end − S_start carry the same offset, which cancels. ±1 s offsets give
    // the same trajectory bit for bit (including through a capacity drop that builds a queue).
    let trajectory = |offset_ns: i64| {
        let mut b = Bench::new("initial_rate = \"2Mbps\"", 20e6, offset_ns);
        let mut out = Vec::new();
        for k in 0..400 {
            if k == 200 {
                b.c = 5e6;
            }
            b.frame(&[]);
            out.push(b.sqp.estimate().bps());
        }
        out
    };
    let base = trajectory(0);
    assert!(
        base[199] > 15e6 && base[399] < 6e6,
        "the run exercises the update"
    );
    assert_eq!(base, trajectory(1_000_000_000));
    assert_eq!(base, trajectory(-1_000_000_000));
}

#[test]
fn on_an_idle_link_a_train_faster_than_the_link_samples_the_link_rate() {
    // m·B = 36 Mbit/s > C = 20 Mbit/s. The frame is 37 500 bytes: 31 packets of 1200 and one
    // of 300. Δ_min is the first packet's delay (its own serialisation included), so the
    // denominator of Eq. 1 is the other 36 300 bytes' time at C.
    let expect = [
        ("none", 20e6 * 37_500.0 / 36_300.0),
        ("numerator", 20e6),
        ("dispersion", 20e6),
    ];
    for (correction, expected) in expect {
        let mut b = Bench::new(
            &format!("initial_rate = \"18Mbps\"\ntrain_correction = \"{correction}\""),
            20e6,
            0,
        );
        b.frame(&[]);
        let s = b.sqp.last_sample();
        assert!(
            (s.sample_bps - expected).abs() < 1e-5 * expected,
            "{correction}: {} vs {expected}",
            s.sample_bps
        );
        assert_eq!(s.penalty_s, 0.0);
    }
}

#[test]
fn on_an_idle_link_a_train_slower_than_the_link_samples_the_pacing_rate() {
    // m·B = 11.52 Mbit/s < C = 20 Mbit/s: no queue forms and the train arrives as it was paced.
    // §5.1: "the bandwidth sample would simply be m·B". The frame is 12 000 bytes, ten packets
    // of 1200, so the dispersion is nine pacing gaps: the corrected forms give m·B exactly and
    // Eq. 1 as printed gives m·B·10/9.
    let (p, c) = (11.52e6, 20e6);
    let dispersion = 9.0 * 1200.0 * 8.0 / p;
    for (correction, expected) in [
        ("none", p * 10.0 / 9.0),
        ("numerator", p),
        ("dispersion", p),
    ] {
        let mut b = Bench::new(
            &format!(
                "initial_rate = \"5.76Mbps\"\nhysteresis = 0.0\ntrain_correction = \"{correction}\""
            ),
            c,
            0,
        );
        b.frame(&[]);
        let s = b.sqp.last_sample();
        assert!((s.dispersion_s - dispersion).abs() < 1e-8);
        assert!(
            (s.sample_bps - expected).abs() < 1e-5 * expected,
            "{correction}: {} vs {expected}",
            s.sample_bps
        );
    }
    // With a short last packet (10 416 bytes = 8 × 1200 + 816, m·B = 10 Mbit/s) the smallest
    // one-way delay is the last packet's, and R_end − S_start − Δ_min is the send span
    // 9600·8/P: the corrected forms stay within 4 % of m·B.
    for (correction, low, high) in [("numerator", 0.95, 1.0), ("dispersion", 0.95, 1.0)] {
        let mut b = Bench::new(
            &format!(
                "initial_rate = \"5Mbps\"\nhysteresis = 0.0\ntrain_correction = \"{correction}\""
            ),
            c,
            0,
        );
        b.frame(&[]);
        let ratio = b.sqp.last_sample().sample_bps / 10e6;
        assert!(ratio > low && ratio < high, "{correction}: {ratio}");
    }
}

#[test]
fn a_frame_that_loses_k_of_n_packets_has_its_sample_scaled_by_one_minus_k_over_n() {
    // Two identical controllers; on the second frame one of them loses packets 3 and 5 after the
    // bottleneck (the others arrive at the same times), so only the loss scaling differs.
    let mut a = Bench::new("initial_rate = \"12Mbps\"", 20e6, 0);
    let mut b = Bench::new("initial_rate = \"12Mbps\"", 20e6, 0);
    a.frame(&[]);
    b.frame(&[]);
    assert_eq!(a.sqp.estimate(), b.sqp.estimate());
    let (_, sizes) = a.frame(&[]);
    b.frame(&[3, 5]);
    let n = sizes.len() as f64;
    let (sa, sb) = (
        a.sqp.last_sample().sample_bps,
        b.sqp.last_sample().sample_bps,
    );
    assert!(
        (sb - sa * (1.0 - 2.0 / n)).abs() < 1e-9 * sa,
        "{sb} vs {sa} × (1 − 2/{n})"
    );
    // A frame with every packet lost samples 0: the estimate halves (the clamp).
    let before = b.sqp.estimate().bps();
    let all: Vec<u16> = (0..sizes.len() as u16).collect();
    b.frame(&all);
    assert_eq!(b.sqp.estimate().bps(), before * 0.5);
}

#[test]
fn each_update_is_one_step_of_eq4_on_the_target_multiplied_sample() {
    // Feed frames through a 20 Mbit/s link from B = 18 Mbit/s with the numerator correction:
    // the raw sample is C, so each update is B' = B + δ (r (T·C/B − 1) − (B/(T·C) − 1)).
    let mut b = Bench::new(
        "initial_rate = \"18Mbps\"\ntrain_correction = \"numerator\"\nhysteresis = 0.0",
        20e6,
        0,
    );
    let mut est = 18e6;
    for _ in 0..5 {
        b.frame(&[]);
        let s = b.sqp.last_sample().sample_bps;
        est += update::eq4_step(est, 0.9 * s, 320e3, 0.25);
        assert!((b.sqp.estimate().bps() - est).abs() < 1e-6, "{}", est);
    }
    // The frames are paced at m·B of the estimate when they were encoded.
    let d = b.sqp.decision();
    assert_eq!(d.pacing_rate, Some(Rate(2.0 * b.sqp.estimate().bps())));
}

#[test]
fn bad_parameters_are_rejected_with_a_message() {
    let check = |text: &str, needle: &str| {
        let params: Params = toml::from_str(text).unwrap();
        let ctx = ControllerContext {
            now: Time::ZERO,
            fps: 60.0,
            max_payload: crate::units::Bytes(1200),
            media: Default::default(),
            capacity: None,
            coupling: None,
            ecn: crate::packet::EcnMode::Off,
        };
        let e = (info().build)(&params, &ctx, crate::cc::registry())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains(needle), "{text}: {e}");
    };
    check(
        "pacing_multiplier = 1.0",
        "pacing_multiplier must be a number > 1",
    );
    check("target_multiplier = 0.0", "target_multiplier");
    check("target_multiplier = 1.5", "(0, 1]");
    check("reward = -1.0", "reward");
    check("min_owd_window = 0.0", "min_owd_window");
    check("hysteresis = 1.0", "hysteresis");
    check("min_owd_anchor = \"now\"", "\"frame\" or \"feedback\"");
    check(
        "train_correction = \"x\"",
        "\"none\", \"numerator\" or \"dispersion\"",
    );
    check("min_rate = \"20kbps\"", "two packets of at least 50 bytes");
    check("min_rate = \"2Mbps\"\nmax_rate = \"1Mbps\"", "max_rate");
    check("step = \"0bps\"", "step");
    check("step = 5", "unit");
}

#[test]
fn no_decrease_goes_below_the_delivery_floor_of_the_target_multiplied_delivery_rate() {
    // 20 → 5 Mbit/s under a flow at 18 Mbit/s: the queue grows until the estimate is below
    // the link, and every frame in flight reports it (Eq. 1's penalty). The trains still arrive
    // at 5 Mbit/s, so the estimate never goes below 0.4 · T · 5 Mbit/s = 1.8 Mbit/s.
    let lowest = |params: &str| {
        let mut b = Bench::new(params, 20e6, 0);
        for _ in 0..100 {
            b.frame(&[]);
        }
        b.c = 5e6;
        let mut lowest = f64::INFINITY;
        for _ in 0..200 {
            b.frame(&[]);
            lowest = lowest.min(b.sqp.estimate().bps());
        }
        lowest
    };
    let floored = lowest("initial_rate = \"18Mbps\"");
    assert!(floored >= 1.8e6 * (1.0 - 1e-9), "{floored}");
    assert!(floored < 2.0e6, "the floor is reached: {floored}");
    // Without the floor the same queue halves the estimate frame after frame.
    let unfloored = lowest("initial_rate = \"18Mbps\"\ndelivery_floor = 0.0");
    assert!(unfloored < 1e6, "{unfloored}");
    // The bound itself: a decrease stops at `keep`, never more than halving, never past T·S.
    let bounds = update::Bounds {
        min_rate: 30e3,
        max_rate: 100e6,
        max_decrease: 0.5,
    };
    assert_eq!(
        update::update_keeping(10e6, 0.5e6, 320e3, 0.25, &bounds, 7e6),
        7e6
    );
    assert_eq!(
        update::update_keeping(10e6, 0.5e6, 320e3, 0.25, &bounds, 2e6),
        5e6
    );
    assert_eq!(
        update::update_keeping(10e6, 9e6, 320e3, 0.25, &bounds, 2e6),
        10e6 + update::eq4_step(10e6, 9e6, 320e3, 0.25)
    );
}

#[test]
fn an_update_never_moves_the_estimate_past_the_target_multiplied_sample() {
    // Eq. 4's step is absolute: at B = 100 kbit/s a sample eight times higher would add
    // δ·(r·7 + 1 − 1/8) = 0.84 Mbit/s (δ = 320 kbit/s at 60 fps), past the optimum B = T·S.
    let bounds = update::Bounds {
        min_rate: 30e3,
        max_rate: 100e6,
        max_decrease: 0.5,
    };
    let (b, s) = (100e3, 800e3);
    assert!(b + update::eq4_step(b, s, 320e3, 0.25) > s);
    assert_eq!(update::update(b, s, 320e3, 0.25, &bounds), s);
    // Downwards likewise (the halving bound is not reached here).
    let (b, s) = (300e3, 250e3);
    assert!(b + update::eq4_step(b, s, 320e3, 0.25) < s);
    assert_eq!(update::update(b, s, 320e3, 0.25, &bounds), s);
    // At the paper's rates a step never reaches the optimum, so nothing changes there.
    let (b, s) = (18e6, 19e6);
    assert_eq!(
        update::update(b, s, 320e3, 0.25, &bounds),
        b + update::eq4_step(b, s, 320e3, 0.25)
    );
}
