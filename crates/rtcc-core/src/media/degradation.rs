//! Quality scaling: which resolution and frame rate to code at for a target bitrate.
//!
//! An encoder has a lowest rate at each resolution (its coarsest quantiser; the lagged model's
//! `floor_bpp`) and codes poorly long before it: a 720p stream at 150 kbit/s either overshoots
//! its target or looks worse than 360p would. WebRTC therefore adapts the *input* to the rate,
//! under a degradation preference (`DegradationPreference` in `api/rtp_parameters.h`; the
//! adaptation lives in `call/adaptation/video_stream_adapter.cc`):
//!
//! - `balanced` lowers the resolution first and the frame rate once the picture is small: with
//!   the default `BalancedDegradationSettings` (`rtc_base/experiments/
//!   balanced_degradation_settings.cc`) a picture of at most 640×480 pixels runs at 15 frame/s,
//!   at most 480×360 at 10 and at most 320×240 at 7. On rtcc's 16:9 ladder
//!   ([`crate::video::quality::LADDER`]) from a 720p30 source that gives the steps
//!   720p30 → 540p30 → 360p30 → 360p15 → 270p15 → 270p10 → 180p10 (7 frame/s is below the
//!   flow's lowest frame rate, `min_fps`, 10 by default, so 180p runs at 10).
//! - `maintain-framerate` only lowers the resolution, `maintain-resolution` only the frame rate
//!   (two thirds per step, libwebrtc's `GetLowerFrameRateThan`, down to `min_fps`), and
//!   `disabled` codes the source as it is.
//!
//! The steps never go above the source (WebRTC never upscales its input).
//!
//! # When to step
//!
//! libwebrtc moves down when the encoder's QP stays high (`QualityScaler`) and only moves up if
//! the target reaches the next resolution's `min_start_bitrate`
//! (`BitrateConstraint`, with the per-resolution limits of
//! `EncoderInfoSettings::GetDefaultSinglecastBitrateLimits` for VP8: 270p 200 kbit/s, 360p 300,
//! 540p 500, 720p 900; 1080p is not in that table and takes 2000 kbit/s, our extrapolation at
//! the 720p rate per pixel). rtcc has no QP, so both directions use the target bitrate:
//!
//! - A step's **entry rate** is its resolution's start bitrate scaled by frame rate
//!   (`min_start × fps / 30`, the table being for 30 frame/s);
//! - its **exit rate** is three quarters of the entry rate (the hysteresis band; our judgment),
//!   and never less than 1.25 × the encoder's lowest rate at that step, so the encoder can always
//!   meet a target it is kept at (the frame dropper, [`super::frame_dropper`], handles the rest).
//!
//! The policy reads the target averaged over the frames of the last [`SMOOTHING`] (1 s): a
//! controller whose target moves frame by frame (Vidaptive's α·CC-Rate) would otherwise change
//! resolution, at the price of a keyframe, on every dip. When the averaged target falls below the
//! current step's exit rate, the policy jumps down at once to the best step whose exit rate the
//! lower of the averaged and the latest target clears (several steps in one jump: one keyframe,
//! where a falling mean would cross one exit rate after the other), and moves up one step after the averaged target has stayed
//! at or above that step's entry rate for [`UP_HOLD`] (2 s; our judgment, the order of the
//! `QualityScaler`'s sampling period). The averaging and the hold are our judgment.
//!
//! Encoders without a resolution ladder (the `ideal` model makes any size exactly, `trace`
//! replays recorded sizes) have nothing to scale: the policy keeps the source.

use super::window::WindowedMean;
use crate::units::{Duration, Rate, Time};
use crate::video::quality::{Resolution, LADDER};

/// The policy reads the mean target over the frames of this window.
pub const SMOOTHING: Duration = Duration(1_000_000_000);
/// How long the target must stay at a higher step's entry rate before moving up.
pub const UP_HOLD: Duration = Duration(2_000_000_000);
/// The exit rate as a share of the entry rate.
pub const EXIT_SHARE: f64 = 0.75;
/// Headroom kept above the encoder's lowest rate at a step.
pub const FLOOR_HEADROOM: f64 = 1.25;
/// The frame rate of the start-bitrate table.
const TABLE_FPS: f64 = 30.0;

/// WebRTC's degradation preferences.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preference {
    Balanced,
    MaintainFramerate,
    MaintainResolution,
    Disabled,
}

impl Preference {
    pub const NAMES: [&'static str; 4] = [
        "balanced",
        "maintain-framerate",
        "maintain-resolution",
        "disabled",
    ];

    /// The name a scenario writes (`Preference::parse`'s input).
    pub fn name(self) -> &'static str {
        Preference::NAMES[self as usize]
    }

    pub fn parse(s: &str) -> Result<Preference, String> {
        match s {
            "balanced" => Ok(Preference::Balanced),
            "maintain-framerate" => Ok(Preference::MaintainFramerate),
            "maintain-resolution" => Ok(Preference::MaintainResolution),
            "disabled" => Ok(Preference::Disabled),
            _ => Err(format!(
                "unknown degradation preference {s:?}; valid: {}",
                Preference::NAMES.join(", ")
            )),
        }
    }
}

/// VP8's `min_start_bitrate` for a rung (bit/s at 30 frame/s; see the module documentation).
fn start_bitrate(res: Resolution) -> f64 {
    match res.height {
        h if h >= 1080 => 2_000_000.0,
        h if h >= 720 => 900_000.0,
        h if h >= 540 => 500_000.0,
        h if h >= 360 => 300_000.0,
        h if h >= 270 => 200_000.0,
        _ => 0.0,
    }
}

/// `BalancedDegradationSettings`' default frame rate for a picture of `pixels` (∞: no limit).
fn balanced_fps(pixels: f64) -> f64 {
    if pixels <= 320.0 * 240.0 {
        7.0
    } else if pixels <= 480.0 * 360.0 {
        10.0
    } else if pixels <= 640.0 * 480.0 {
        15.0
    } else {
        f64::INFINITY
    }
}

/// One step of the policy: what to code at, and the rates that enter and leave it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// `None` for encoders without a resolution ladder.
    pub resolution: Option<Resolution>,
    pub fps: f64,
    /// Move up to this step once the target has held this rate for [`UP_HOLD`].
    pub enter: Rate,
    /// Leave this step downwards when the target falls below this rate.
    pub exit: Rate,
}

/// The degradation policy of one flow.
#[derive(Debug, Clone)]
pub struct Degradation {
    /// Best first.
    steps: Vec<Step>,
    current: usize,
    /// Since when the target has cleared the next step up's entry rate.
    above_since: Option<Time>,
    /// The targets of the frames of the last [`SMOOTHING`].
    recent: WindowedMean,
}

impl Degradation {
    /// The steps from `source` (`None`: an encoder without a ladder) at `max_fps` down to
    /// `min_fps`. `floor(res, fps)` is the encoder's lowest rate at a step.
    pub fn new(
        preference: Preference,
        source: Option<Resolution>,
        min_fps: f64,
        max_fps: f64,
        floor: &dyn Fn(Resolution, f64) -> Rate,
    ) -> Degradation {
        let min_fps = min_fps.min(max_fps);
        let mut points: Vec<(Option<Resolution>, f64)> = vec![(source, max_fps)];
        let rungs: Vec<Resolution> = match source.and_then(|s| s.rung()) {
            Some(top) => LADDER[top..].to_vec(),
            None => Vec::new(),
        };
        match (preference, source) {
            (Preference::Disabled, _) | (_, None) => {}
            (Preference::Balanced, Some(_)) => {
                let mut fps = max_fps;
                for &res in rungs.iter().skip(1) {
                    points.push((Some(res), fps));
                    let lower = balanced_fps(res.pixels()).clamp(min_fps, max_fps);
                    if lower < fps {
                        fps = lower;
                        points.push((Some(res), fps));
                    }
                }
            }
            (Preference::MaintainFramerate, Some(_)) => {
                points.extend(rungs.iter().skip(1).map(|&r| (Some(r), max_fps)));
            }
            (Preference::MaintainResolution, Some(_)) => {
                let mut fps = max_fps;
                while fps > min_fps + 1e-9 {
                    fps = (fps * 2.0 / 3.0).max(min_fps);
                    points.push((source, fps));
                }
            }
        }
        let mut steps: Vec<Step> = points
            .iter()
            .map(|&(res, fps)| {
                let Some(r) = res else {
                    return Step {
                        resolution: None,
                        fps,
                        enter: Rate::ZERO,
                        exit: Rate::ZERO,
                    };
                };
                let exit = (EXIT_SHARE * start_bitrate(r) * fps / TABLE_FPS)
                    .max(FLOOR_HEADROOM * floor(r, fps).bps());
                Step {
                    resolution: res,
                    fps,
                    enter: Rate(exit / EXIT_SHARE),
                    exit: Rate(exit),
                }
            })
            .collect();
        // The lowest step is never left downwards, and a better step never enters below a worse
        // one (custom encoder floors could otherwise invert the order).
        if let Some(last) = steps.last_mut() {
            last.exit = Rate::ZERO;
        }
        for i in (0..steps.len().saturating_sub(1)).rev() {
            steps[i].enter = steps[i].enter.max(steps[i + 1].enter);
            steps[i].exit = steps[i].exit.max(steps[i + 1].exit);
        }
        Degradation {
            steps,
            current: 0,
            above_since: None,
            recent: WindowedMean::new(SMOOTHING),
        }
    }

    /// The steps, best first.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The step frames are coded at now.
    pub fn current(&self) -> Step {
        self.steps[self.current]
    }

    /// Start at the best step whose exit rate `target` clears (the flow's start bitrate), so a
    /// call that starts low does not begin with a resolution it must leave at once. The first
    /// [`Degradation::on_frame`] does this with its target.
    pub fn start_at(&mut self, target: Rate) {
        self.current = self.best_for(target);
    }

    fn best_for(&self, target: Rate) -> usize {
        self.steps
            .iter()
            .position(|s| target >= s.exit)
            .unwrap_or(self.steps.len() - 1)
    }

    /// Update with the encoder's target at a frame capture; returns the step to code at.
    pub fn on_frame(&mut self, now: Time, target: Rate) -> Step {
        match self.recent.last_time() {
            None => self.start_at(target),
            // After a gap (the flow was paused), the hold starts again.
            Some(t) if now.saturating_since(t) >= SMOOTHING => self.above_since = None,
            Some(_) => {}
        }
        self.recent.push(now, target.bps());
        let latest = target;
        let target = Rate(self.recent.mean().unwrap_or(0.0).max(0.0));
        if self.best_for(target) > self.current {
            // The mean says leave; go as far down as the latest target needs, in one jump
            // (a falling target would otherwise take a keyframe per step).
            self.current = self.best_for(target.min(latest));
            self.above_since = None;
        } else if self.current > 0 && target >= self.steps[self.current - 1].enter {
            let since = *self.above_since.get_or_insert(now);
            if now.saturating_since(since) >= UP_HOLD {
                self.current -= 1;
                self.above_since = None;
            }
        } else {
            self.above_since = None;
        }
        self.current()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lagged_floor(res: Resolution, fps: f64) -> Rate {
        Rate(0.01 * res.pixels() * fps)
    }

    /// Balanced from a 720p30 source, 10 frame/s at least, on the lagged encoder's floors.
    fn balanced_720p30() -> Degradation {
        Degradation::new(
            Preference::Balanced,
            Some(Resolution::new(1280, 720)),
            10.0,
            30.0,
            &lagged_floor,
        )
    }

    fn names(d: &Degradation) -> Vec<String> {
        d.steps()
            .iter()
            .map(|s| format!("{}@{}", s.resolution.unwrap(), s.fps))
            .collect()
    }

    #[test]
    fn balanced_lowers_resolution_then_frame_rate_like_webrtc() {
        let d = balanced_720p30();
        assert_eq!(
            names(&d),
            [
                "720p@30", "540p@30", "360p@30", "360p@15", "270p@15", "270p@10", "180p@10"
            ],
            "BalancedDegradationSettings: <=640x480 at 15, <=480x360 at 10, 320x240 at 7 -> min_fps"
        );
        let kbps: Vec<(f64, f64)> = d
            .steps()
            .iter()
            .map(|s| (s.enter.bps() / 1e3, s.exit.bps() / 1e3))
            .collect();
        // 720p enters at VP8's 900 kbit/s min_start and leaves below three quarters of it.
        assert!((kbps[0].0 - 900.0).abs() < 1e-9 && (kbps[0].1 - 675.0).abs() < 1e-9);
        assert!(
            (kbps[3].0 - 150.0).abs() < 1e-9,
            "360p at half the frame rate"
        );
        assert_eq!(kbps[6].1, 0.0, "the lowest step is never left");
        for w in d.steps().windows(2) {
            assert!(w[0].enter >= w[1].enter && w[0].exit >= w[1].exit, "{w:?}");
            // Every exit rate leaves the encoder room above its floor.
            let f = lagged_floor(w[0].resolution.unwrap(), w[0].fps);
            assert!(w[0].exit.bps() >= 1.25 * f.bps() - 1e-6);
        }
    }

    #[test]
    fn other_preferences_and_encoders_without_a_ladder() {
        let src = Some(Resolution::new(1280, 720));
        let d = Degradation::new(
            Preference::MaintainFramerate,
            src,
            10.0,
            30.0,
            &lagged_floor,
        );
        assert_eq!(names(&d).len(), 5);
        assert!(d.steps().iter().all(|s| s.fps == 30.0));
        let d = Degradation::new(
            Preference::MaintainResolution,
            src,
            10.0,
            30.0,
            &lagged_floor,
        );
        assert_eq!(
            names(&d),
            ["720p@30", "720p@20", "720p@13.333333333333334", "720p@10"]
        );
        let d = Degradation::new(Preference::Disabled, src, 10.0, 30.0, &lagged_floor);
        assert_eq!(d.steps().len(), 1);
        let mut d = Degradation::new(Preference::Balanced, None, 10.0, 30.0, &lagged_floor);
        assert_eq!(d.steps().len(), 1);
        assert_eq!(d.on_frame(Time::ZERO, Rate(1.0)).fps, 30.0);
        assert!(Preference::parse("fast").unwrap_err().contains("balanced"));
        // A source off the ladder (a user's encoder) is coded as it is, never a panic.
        let odd = Degradation::new(
            Preference::Balanced,
            Some(Resolution::new(1280, 536)),
            10.0,
            30.0,
            &lagged_floor,
        );
        assert_eq!(odd.steps().len(), 1);
    }

    #[test]
    fn down_at_once_up_one_step_after_two_seconds_with_hysteresis() {
        let mut d = balanced_720p30();
        let t = Time::from_millis;
        let name = |s: Step| (s.resolution.unwrap().name(), s.fps);
        // Frames every 100 ms at `rate` from `from` to `to` ms; the step after the last one.
        let run = |d: &mut Degradation, from: u64, to: u64, rate: f64| {
            let mut last = d.current();
            for ms in (from..to).step_by(100) {
                last = d.on_frame(t(ms), Rate(rate));
            }
            name(last)
        };
        assert_eq!(run(&mut d, 0, 1000, 1e6), ("720p".into(), 30.0));
        // 200 kbit/s, below 540p's exit (375) and 360p30's (225): nothing while the 1 s mean
        // is above 675, then one jump to 360p15.
        assert_eq!(run(&mut d, 1000, 1200, 200e3), ("720p".into(), 30.0));
        assert_eq!(run(&mut d, 1200, 2000, 200e3), ("360p".into(), 15.0));
        // 260 kbit/s clears 360p30's exit but not its entry (300): no move, however long.
        assert_eq!(run(&mut d, 2000, 6000, 260e3), ("360p".into(), 15.0));
        // 320 kbit/s: the mean reaches 300 at 6.6 s; one step up 2 s later, not before.
        assert_eq!(run(&mut d, 6000, 8600, 320e3), ("360p".into(), 15.0));
        assert_eq!(run(&mut d, 8600, 8700, 320e3), ("360p".into(), 30.0));
        // The mean reaches 540p's entry (500) at 9.3 s, dips below it at 10.3 s (the hold
        // restarts), is back at 11.6 s: 540p at 13.6 s.
        assert_eq!(run(&mut d, 8700, 10_000, 600e3), ("360p".into(), 30.0));
        assert_eq!(run(&mut d, 10_000, 11_000, 300e3), ("360p".into(), 30.0));
        assert_eq!(run(&mut d, 11_000, 13_600, 600e3), ("360p".into(), 30.0));
        assert_eq!(run(&mut d, 13_600, 13_700, 600e3), ("540p".into(), 30.0));
        // A single frame's dip does not move a 1 s mean.
        assert_eq!(run(&mut d, 13_700, 13_800, 1e3), ("540p".into(), 30.0));
        let mut d2 = d.clone();
        d2.start_at(Rate(150e3));
        assert_eq!(d2.current().fps, 15.0);
    }
}
