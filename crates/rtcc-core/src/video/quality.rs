//! Resolutions and the rate–quality model: how good a frame of a given size looks.
//!
//! # The resolution ladder
//!
//! Six 16:9 rungs, 1920×1080 down to 320×180 ([`LADDER`]): the resolutions of libwebrtc's
//! simulcast table (`kSimulcastFormats` in `media/engine/simulcast.cc`), which Vidaptive's
//! resolution controller steps through one rung at a time (Vidaptive §3.4; the paper names only
//! 1080p and 720p, the other rungs are our judgment).
//!
//! # PSNR of a frame
//!
//! Frames are scored against the full-resolution (1080p) source, the way Vidaptive scores the
//! displayed video against the original. Two distortions add up (as mean squared errors, which is
//! exact when they are uncorrelated):
//!
//! 1. **Coding**, a log-rate model of the encoder's quality at the encoded resolution:
//!    `PSNR_code = a + b · ln(bits per pixel)`, with `a` = [`PSNR_A`] = 49.12 dB and
//!    `b` = [`PSNR_B`] = 3.66 dB (2.54 dB per doubling of the rate). The two numbers are a
//!    least-squares fit to published x264 results in its low-latency configuration
//!    (`--preset medium --tune zerolatency`: no B-frames, no look-ahead) on the seven 1080p
//!    sequences of the UVG set (Mercat et al., ACM MMSys 2020), luma PSNR at QP 22–47, as
//!    published by the CompressAI project (`results/video/UVG-1080p/
//!    x264-medium-tune-zerolatency.json`; bits per pixel = kbit/s / (1920·1080·120 frame/s)).
//!    Over 0.005–0.15 bit/pixel the fit is within 0.9 dB of every point; above it the model
//!    overestimates (3 dB at 0.5 bit/pixel), below it it is an extrapolation.
//! 2. **Upscaling**, for rungs below 1080p: the picture is decoded small and scaled up for
//!    display, which loses detail no bitrate can restore. [`Resolution::upscale_psnr_db`] is that
//!    ceiling: 42, 39, 35.5, 33 and 30 dB for 720p … 180p. These five numbers are our judgment,
//!    not a measurement: they are set so that the per-resolution curves cross the way measured
//!    rate–quality curves do, with the best rung changing (at 30 frame/s) at ≈ 3.9 Mbit/s
//!    (720p → 1080p), 1.3 (540p → 720p), 0.33 (360p → 540p) and 0.07 (270p → 360p): within a
//!    factor of two of the per-rung maxima of libwebrtc's simulcast table for 720p, 540p and 360p
//!    (2.5, 0.9 and 0.7 Mbit/s); the lowest rungs switch lower than that table suggests.
//!
//! `PSNR = −10 log10(10^(−PSNR_code/10) + 10^(−PSNR_up/10))`.
//!
//! Limits, stated plainly: the fit is to one codec (x264, not VP8) on one test set whose content
//! is at 120 frame/s (a 30 frame/s camera needs more bits per frame for the same PSNR, so absolute
//! values are optimistic by an unknown offset); it is a sequence average, not a per-frame model;
//! the ceilings are not measured. Differences in PSNR between runs are meaningful, absolute
//! values are a model's. On the hull the model gives +1.6 dB for 1 → 2 Mbit/s, the gain
//! Vidaptive reports for doubling the video bitrate (abstract).

use serde::Serialize;
use std::fmt;

/// Intercept of the coding-PSNR fit, dB (see the module documentation).
pub const PSNR_A: f64 = 49.12;
/// Slope of the coding-PSNR fit, dB per natural-log unit of bits per pixel.
pub const PSNR_B: f64 = 3.66;
/// Bits per pixel below which the log model is not evaluated (a 0-bit frame would be −∞ dB).
pub const MIN_BPP: f64 = 1e-4;

/// A frame size in pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Resolution {
    pub width: u32,
    pub height: u32,
}

/// The ladder, highest first.
pub const LADDER: [Resolution; 6] = [
    Resolution::new(1920, 1080),
    Resolution::new(1280, 720),
    Resolution::new(960, 540),
    Resolution::new(640, 360),
    Resolution::new(480, 270),
    Resolution::new(320, 180),
];

/// Upscaling ceilings for the rungs of [`LADDER`] (none for the full resolution), dB.
const UPSCALE_PSNR_DB: [Option<f64>; 6] = [
    None,
    Some(42.0),
    Some(39.0),
    Some(35.5),
    Some(33.0),
    Some(30.0),
];

impl Resolution {
    pub const fn new(width: u32, height: u32) -> Resolution {
        Resolution { width, height }
    }

    pub fn pixels(self) -> f64 {
        self.width as f64 * self.height as f64
    }

    /// Position on the ladder (0 = 1080p), `None` for a resolution not on it.
    pub fn rung(self) -> Option<usize> {
        LADDER.iter().position(|&r| r == self)
    }

    /// `"720p"` for ladder rungs (and `"WxH"` otherwise).
    pub fn name(self) -> String {
        match self.rung() {
            Some(_) => format!("{}p", self.height),
            None => format!("{}x{}", self.width, self.height),
        }
    }

    /// Parse a rung name, `"720p"` (or `"1280x720"`). Only ladder resolutions are accepted.
    pub fn parse(s: &str) -> Result<Resolution, String> {
        let t = s.trim();
        let found = LADDER
            .iter()
            .copied()
            .find(|r| t == r.name() || t == format!("{}x{}", r.width, r.height));
        found.ok_or_else(|| {
            format!(
                "unknown resolution {s:?}; valid resolutions: {}",
                LADDER.map(|r| r.name()).join(", ")
            )
        })
    }

    /// One rung up (`None` at the top or off the ladder).
    pub fn step_up(self) -> Option<Resolution> {
        self.rung().filter(|&i| i > 0).map(|i| LADDER[i - 1])
    }

    /// One rung down (`None` at the bottom or off the ladder).
    pub fn step_down(self) -> Option<Resolution> {
        self.rung().and_then(|i| LADDER.get(i + 1).copied())
    }

    /// The upscaling ceiling of this rung (`None` at full resolution or off the ladder).
    pub fn upscale_psnr_db(self) -> Option<f64> {
        self.rung().and_then(|i| UPSCALE_PSNR_DB[i])
    }
}

impl fmt::Display for Resolution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// Coding PSNR at `bits_per_pixel` (the log-rate fit, evaluated at ≥ [`MIN_BPP`]).
pub fn coding_psnr_db(bits_per_pixel: f64) -> f64 {
    PSNR_A + PSNR_B * bits_per_pixel.max(MIN_BPP).ln()
}

/// PSNR against the full-resolution source of a frame coded at `res` whose rate control spent
/// `bits` on it (bits at the encoder's quality setting; see [`crate::media::encoder::lagged`] for
/// what that excludes: keyframe overhead and content-driven size swings).
pub fn psnr_db(res: Resolution, bits: f64) -> f64 {
    let code = coding_psnr_db(bits / res.pixels());
    match res.upscale_psnr_db() {
        None => code,
        Some(up) => -10.0 * (10f64.powf(-code / 10.0) + 10f64.powf(-up / 10.0)).log10(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The published points the fit was made from (QP 22–47): (kbit/s at 120 frame/s, luma dB).
    const X264_ZEROLATENCY_UVG: [(f64, f64); 6] = [
        (36306.75, 41.220),
        (13645.81, 38.976),
        (6685.89, 36.648),
        (3591.86, 34.131),
        (2069.71, 31.495),
        (1289.49, 29.063),
    ];

    #[test]
    fn the_coding_fit_stays_within_a_decibel_of_the_published_points() {
        for (kbps, db) in X264_ZEROLATENCY_UVG {
            let bpp = kbps * 1e3 / (1920.0 * 1080.0 * 120.0);
            let model = coding_psnr_db(bpp);
            assert!(
                (model - db).abs() < 0.9,
                "{kbps} kbit/s: model {model:.2}, published {db}"
            );
        }
        // 2.54 dB per doubling.
        assert!((coding_psnr_db(0.02) - coding_psnr_db(0.01) - 2.537).abs() < 0.01);
    }

    /// Best rung and its PSNR at `rate` bit/s, 30 frame/s.
    fn best(rate: f64) -> (Resolution, f64) {
        LADDER
            .iter()
            .map(|&r| (r, psnr_db(r, rate / 30.0)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap()
    }

    #[test]
    fn per_resolution_curves_cross_near_the_webrtc_simulcast_bitrates() {
        assert_eq!(best(5e6).0.name(), "1080p");
        assert_eq!(best(2.5e6).0.name(), "720p");
        assert_eq!(best(0.9e6).0.name(), "540p");
        assert_eq!(best(0.3e6).0.name(), "360p");
        assert_eq!(best(0.06e6).0.name(), "270p");
        // Doubling 1 → 2 Mbit/s on the hull: +1.6 dB (Vidaptive's "2x bitrate, +1.6 dB").
        let gain = best(2e6).1 - best(1e6).1;
        assert!((gain - 1.6).abs() < 0.15, "{gain}");
        // A low rung never beats its upscaling ceiling, however many bits it gets.
        let r360 = Resolution::parse("360p").unwrap();
        assert!(psnr_db(r360, 1e9) < 35.5);
        assert!(psnr_db(r360, 0.0).is_finite());
    }

    #[test]
    fn the_ladder_parses_names_and_steps_one_rung_at_a_time() {
        let r = Resolution::parse("720p").unwrap();
        assert_eq!(r, Resolution::new(1280, 720));
        assert_eq!(Resolution::parse("960x540").unwrap().name(), "540p");
        assert_eq!(r.step_up().unwrap().name(), "1080p");
        assert_eq!(r.step_down().unwrap().name(), "540p");
        assert_eq!(LADDER[0].step_up(), None);
        assert_eq!(LADDER[5].step_down(), None);
        let e = Resolution::parse("4k").unwrap_err();
        assert!(e.contains("1080p, 720p, 540p, 360p, 270p, 180p"), "{e}");
        assert_eq!(Resolution::new(800, 600).step_up(), None);
    }
}
