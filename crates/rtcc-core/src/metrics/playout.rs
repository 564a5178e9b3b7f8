//! Playout metrics: what the viewer saw, computed from a flow's frame log.
//!
//! The receiver's decoder ([`crate::media::playout::Playout`], inside its jitter buffer) decides
//! which frames are shown and when: a complete frame is decoded if it is a keyframe or its
//! reference (the previous frame with at least one packet) was decoded, frames are shown in
//! order, and with loss recovery on a frame waits for its repairs (see
//! [`crate::media::jitter_buffer`]). The frame log records each frame's display time. From that:
//!
//! - **display time** of each frame (`None`: never shown: lost, incomplete, undecodable, or
//!   skipped by the encoder);
//! - **frame latency** (the seeds' metric: Vidaptive §5 after Salsify): capture → display; a frame
//!   never shown takes the display time of the next frame that is shown, because the viewer keeps
//!   seeing an older picture until then. Frames the encoder skipped (empty frames: a pause) count
//!   too, as in Salsify, where every camera frame has a latency. Frames after the last shown one
//!   take the end of the run (as `frame_delay_ms` does).
//!
//! Unlike `frame_delay_ms` (capture → complete reception, loss-agnostic, empty frames not
//! counted), these metrics see decodability: after a loss, complete frames that cannot be decoded
//! are not shown, and the picture freezes until the next keyframe.

use super::FrameRecord;
use crate::media::playout::{FrameOutcome, Playout};
use crate::units::{Duration, Time};

/// Display time of each frame of `frames` (one flow, in frame order), as the receiver recorded
/// it (the simulator's receivers run the decoder and jitter buffer themselves).
pub fn display_times(frames: &[FrameRecord]) -> Vec<Option<Time>> {
    frames.iter().map(|f| f.display).collect()
}

/// Display times replayed from completion times, for a frame log without the receiver's: the
/// decoder ([`Playout`]) runs over the frames in capture order, each complete frame shown at its
/// completion if it decodes (no waiting for repairs, no playout delay).
pub fn replay_display_times(frames: &[FrameRecord]) -> Vec<Option<Time>> {
    let mut playout = Playout::default();
    let mut reference: Option<u64> = None;
    frames
        .iter()
        .map(|f| {
            if f.packets == 0 {
                return None; // skipped by the encoder: not a reference, nothing to show
            }
            let r = reference;
            reference = Some(f.frame);
            let complete = f.complete?;
            match playout.on_frame_complete(complete, f.frame, f.keyframe, r) {
                FrameOutcome::Displayed(t) => Some(t),
                FrameOutcome::Undecodable => None,
            }
        })
        .collect()
}

/// Frame latency of each frame: capture → its display, or the next displayed frame's display,
/// or `end` after the last displayed frame.
pub fn frame_latencies(
    frames: &[FrameRecord],
    display: &[Option<Time>],
    end: Time,
) -> Vec<Duration> {
    let mut shown_at = end;
    let mut out = vec![Duration::ZERO; frames.len()];
    for (i, f) in frames.iter().enumerate().rev() {
        if let Some(t) = display.get(i).copied().flatten() {
            shown_at = t;
        }
        out[i] = shown_at.saturating_since(f.capture);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frame `i` captured at 33·i ms, `complete_ms` after capture or lost, keyframe or not.
    fn frame(i: u64, complete: Option<u64>, keyframe: bool) -> FrameRecord {
        FrameRecord {
            flow: 0,
            frame: i,
            capture: Time::from_millis(33 * i),
            size: 1000,
            target_bps: 1e6,
            packets: 1,
            first_send: None,
            last_send: None,
            complete: complete.map(|c| Time::from_millis(33 * i + c)),
            keyframe,
            psnr_db: None,
            resolution: None,
            display: None,
            recovered: false,
            unrecoverable: false,
        }
    }

    fn ms(v: &[Option<Time>]) -> Vec<Option<f64>> {
        v.iter().map(|t| t.map(|t| t.as_millis_f64())).collect()
    }

    #[test]
    fn after_a_lost_reference_nothing_is_shown_until_the_next_keyframe() {
        let log = [
            frame(0, Some(40), true),
            frame(1, Some(20), false),
            frame(2, None, false), // lost
            frame(3, Some(20), false),
            frame(4, Some(20), false),
            frame(5, Some(60), true),
            frame(6, Some(20), false),
        ];
        let shown = replay_display_times(&log);
        assert_eq!(
            ms(&shown),
            vec![
                Some(40.0),
                Some(53.0),
                None,
                None,
                None,
                Some(225.0),
                Some(225.0)
            ]
        );
        // Latency: frames 2–4 wait for frame 5's display (225 ms); frame 6 is shown at 225 ms
        // too (in order, after frame 5).
        let lat: Vec<f64> = frame_latencies(&log, &shown, Time::from_millis(1000))
            .iter()
            .map(|d| d.as_millis_f64())
            .collect();
        assert_eq!(
            lat,
            vec![
                40.0,
                20.0,
                225.0 - 66.0,
                225.0 - 99.0,
                225.0 - 132.0,
                60.0,
                225.0 - 198.0
            ]
        );
    }

    #[test]
    fn skipped_frames_are_not_references_and_wait_for_the_next_display() {
        let mut log = vec![
            frame(0, Some(10), true),
            frame(1, None, false),
            frame(2, Some(10), false),
        ];
        log[1].packets = 0; // paused: frame 2 predicts from frame 0
        log[1].size = 0;
        let shown = replay_display_times(&log);
        assert_eq!(ms(&shown), vec![Some(10.0), None, Some(76.0)]);
        let lat = frame_latencies(&log, &shown, Time::from_millis(500));
        assert_eq!(lat[1], Duration::from_millis(76 - 33));
        // Nothing shown after the last display: the end of the run.
        let log = [frame(0, Some(10), true), frame(1, None, false)];
        let shown = replay_display_times(&log);
        assert_eq!(
            frame_latencies(&log, &shown, Time::from_millis(500))[1],
            Duration::from_millis(500 - 33)
        );
    }

    #[test]
    fn the_flow_summary_counts_what_was_shown() {
        use crate::metrics::{summarize_flow, FlowLog, PacketStats};
        let end = Time::from_millis(1000);
        let mut log = vec![
            frame(0, Some(40), true),
            frame(1, None, false),
            frame(2, Some(20), false), // undecodable
            frame(3, Some(20), true),
            frame(4, Some(20), false),
        ];
        for (f, psnr) in log.iter_mut().zip([30.0, 31.0, 50.0, 34.0, 36.0]) {
            f.psnr_db = Some(psnr);
        }
        for (f, shown) in log.clone().iter().zip(replay_display_times(&log)) {
            log[f.frame as usize].display = shown;
        }
        let s = summarize_flow(
            &FlowLog {
                name: "f",
                controller: "fixed",
                kind: "video",
                min_bitrate: None,
                start: Time::ZERO,
                stop: Time::from_millis(1000),
                packets: &PacketStats::new(Time::ZERO, end, (Time::ZERO, end), end),
                frames: crate::metrics::Frames::Records(&log),
                feedback_bytes: 0,
                feedback_capacity_bytes: f64::INFINITY,
            },
            Time::from_millis(1000),
            &|_, _| f64::INFINITY,
        );
        assert_eq!((s.keyframes, s.frames_delivered), (2, 4));
        assert_eq!((s.frames_displayed, s.frames_undecodable), (3, 1));
        assert_eq!(s.display_rate_fps, 3.0);
        // The undecodable frame's 50 dB is not counted: (30 + 34 + 36) / 3.
        assert!((s.psnr_db.unwrap() - 100.0 / 3.0).abs() < 1e-12);
        // Latencies 40, 86 (frame 1 waits for frame 3, shown at 119 ms), 53, 20, 20 ms.
        assert_eq!(s.frame_latency_ms.p50, Some(40.0));
    }

    #[test]
    fn a_lost_keyframe_leaves_the_flow_dark_until_another_keyframe() {
        let log = [
            frame(0, None, true),
            frame(1, Some(10), false),
            frame(2, Some(10), true),
        ];
        assert_eq!(
            ms(&replay_display_times(&log)),
            vec![None, None, Some(76.0)]
        );
    }
}
