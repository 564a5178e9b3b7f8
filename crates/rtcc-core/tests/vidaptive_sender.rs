//! Vidaptive (`cc::vidaptive`) inside the media sender (`media::VideoSender`): its pause, reset
//! and dummy-packet safeguards, and the target it gives the encoder, as the sender carries them
//! out. (Here rather than in `cc`'s unit tests, since `cc` uses nothing from `media`.)

use rtcc_core::cc::{create, ControllerContext, Params};
use rtcc_core::media::{IdealEncoder, VideoSender};
use rtcc_core::packet::PacketKind;
use rtcc_core::units::{Bytes, Rate, Time};
use rtcc_core::video::Packetizer;

fn ctx() -> ControllerContext {
    ControllerContext {
        now: Time::ZERO,
        fps: 30.0,
        max_payload: Bytes(1200),
        media: Default::default(),
        capacity: None,
        coupling: None,
        ecn: rtcc_core::packet::EcnMode::Off,
    }
}

fn sender(params: &str) -> VideoSender {
    let p: Params = toml::from_str(params).unwrap();
    let c = create("vidaptive", &p, &ctx()).unwrap();
    VideoSender::new(
        c,
        Box::new(IdealEncoder::default()),
        Packetizer {
            payload: Bytes(1200),
            overhead: Bytes(0),
            min_packets: 1,
        },
        30.0,
        1200,
    )
}

fn at_ms(v: f64) -> Time {
    Time::from_secs_f64(v / 1000.0)
}

#[test]
fn u3_pause_past_tau_and_reset_past_one_second() {
    let mut s = sender("");
    let f0 = s.on_frame_captured(at_ms(0.0), 0);
    assert!(f0.size > 0 && f0.keyframe);
    // Nothing sent: the oldest packet is 33 ms old at the next capture (not > τ): encode.
    let f1 = s.on_frame_captured(at_ms(33.0), 1);
    assert!(f1.size > 0 && !f1.keyframe);
    // 34 ms: pause (the encoder is given a target of 0 and skips the frame; the frame log
    // keeps the rate asked for).
    let f2 = s.on_frame_captured(at_ms(34.0), 2);
    assert_eq!(f2.size, 0);
    let f3 = s.on_frame_captured(at_ms(1000.0), 3);
    assert_eq!(f3.size, 0, "1000 ms is not over 1 s: still a pause");
    let queued_before = s.pacer().queued_packets();
    assert!(queued_before > 0);
    // Over 1 s: every queued packet is flushed and the frame is a keyframe.
    let f4 = s.on_frame_captured(at_ms(1001.0), 4);
    assert!(f4.size > 0 && f4.keyframe, "{f4:?}");
    assert_eq!(s.pacer().queued_packets(), f4.packets as usize);
    assert_eq!(s.pacer().oldest_enqueue_time(), Some(at_ms(1001.0)));
    // Drain the queue: the next capture encodes again.
    let mut t = 1001.0;
    while s.pacer().queued_packets() > 0 && t < 1100.0 {
        while s.poll_transmit(at_ms(t)).is_some() {}
        t += 0.1;
    }
    assert_eq!(s.pacer().queued_packets(), 0);
    let f5 = s.on_frame_captured(at_ms(1034.0), 5);
    assert!(f5.size > 0 && !f5.keyframe);
    let state = {
        let mut v = vec![];
        s.state(&mut v);
        v
    };
    let get = |k: &str| state.iter().find(|x| x.0 == k).unwrap().1;
    assert_eq!((get("paused_frames"), get("resets")), (2.0, 1.0));
}

#[test]
fn u3_without_safeguards_frames_are_never_skipped_or_flushed() {
    let mut s = sender("safeguards = false");
    for k in 0..40 {
        s.on_frame_captured(at_ms(k as f64 * 33.3), k);
    }
    let mut state = vec![];
    s.state(&mut state);
    let get = |k: &str| state.iter().find(|x| x.0 == k).unwrap().1;
    // Vidaptive itself never pauses or resets; the sender's own queue bound (pacer
    // pushback, common to every controller) still skips frames once a second is queued.
    assert_eq!((get("paused_frames"), get("resets")), (0.0, 0.0));
    assert!(s.pacer().queued_packets() > 10);
}

#[test]
fn u3_dummies_only_with_an_empty_queue_small_capped_and_not_before_a_capture() {
    let mut s = sender("");
    let mut padding: Vec<(f64, u32)> = vec![];
    let mut media_done_at = None;
    let mut t = 0.0;
    // No feedback: the initial window (10 × 1500 B) is all the sender may put in flight.
    while t < 33.3 {
        if t == 0.0 {
            s.on_frame_captured(at_ms(0.0), 0);
        }
        while let Some(p) = s.poll_transmit(at_ms(t)).map(|o| o.packet) {
            match p.kind {
                PacketKind::Padding => {
                    assert_eq!(s.pacer().queued_packets(), 0, "padding with media queued");
                    padding.push((t, p.size));
                }
                PacketKind::Media => {
                    assert!(padding.is_empty(), "media after padding");
                    media_done_at = Some(t);
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        if let Some(w) = s.poll_timeout() {
            if w <= at_ms(t) {
                s.handle_timeout(at_ms(t));
                continue;
            }
        }
        t = ((t * 100.0).round() + 1.0) / 100.0; // 10 µs steps
    }
    assert!(media_done_at.is_some());
    assert!(!padding.is_empty(), "dummies fill the window");
    assert!(padding.iter().all(|&(_, size)| size <= 200));
    // Blackout: none in the 5 ms before the capture at 33.3 ms.
    assert!(padding.iter().all(|&(t, _)| t < 33.33 - 5.0), "{padding:?}");
    // 12 Mbit/s: 200 B at most every 133 µs.
    for w in padding.windows(2) {
        assert!(
            w[1].0 - w[0].0 >= 200.0 * 8.0 / 12e6 * 1000.0 - 0.011,
            "{w:?}"
        );
    }
    let d = s.decision();
    assert!(d.padding_rate <= Rate::from_mbps(12.0));
}

#[test]
fn u3_no_dummies_when_switched_off_or_when_the_video_reaches_its_cap() {
    let s = sender("dummies = false");
    assert_eq!(s.decision().padding_rate, Rate::ZERO);
    assert_eq!(s.decision().padding_size, None);
    let s = sender("max_bitrate = \"100kbps\"");
    assert_eq!(s.decision().target_bitrate, Rate::from_kbps(100.0));
    assert_eq!(s.decision().padding_rate, Rate::ZERO);
    let s = sender("");
    assert_eq!(s.decision().padding_rate, Rate::from_mbps(12.0));
    assert_eq!(s.decision().padding_size, Some(200));
}

#[test]
fn the_target_is_alpha_times_cc_rate_and_fixed_alpha_holds() {
    let s = sender("alpha = 0.5");
    let mut v = vec![];
    s.state(&mut v);
    let cc = v.iter().find(|x| x.0 == "cc_rate_bps").unwrap().1;
    assert!((s.decision().target_bitrate.bps() - 0.5 * cc).abs() < 1e-6);
    let s = sender("cc = \"rocc\"");
    assert!(s.decision().cwnd.is_some());
}

#[test]
fn any_window_controller_is_wrapped_by_name_with_its_parameters() {
    for cc in ["bbr", "bbr2", "cubic", "reno", "rocc"] {
        assert!(
            sender(&format!("cc = \"{cc}\"")).decision().cwnd.is_some(),
            "{cc}"
        );
    }
    let p: Params = toml::from_str("cc = \"reno\"\ncc_params = { initial_cwnd = 20 }").unwrap();
    let c = create("vidaptive", &p, &ctx()).unwrap();
    assert_eq!(c.decision().cwnd, Some(20 * 1500));
    let p: Params = toml::from_str("cc = \"sqp\"").unwrap();
    let e = create("vidaptive", &p, &ctx()).err().unwrap().to_string();
    assert!(
        e.ends_with("valid: reno, cubic, prague, bbr, bbr-s, bbr2, bbr2-s, copa, rocc, scream"),
        "{e}"
    );
}
