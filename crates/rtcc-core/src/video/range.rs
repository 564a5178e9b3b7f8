//! A flow's media range: the bitrates and frame rates its video may use, whatever the controller.
//!
//! RFC 8868 (§4, the test cases' "media range") and the RMCAT evaluation criteria give every
//! flow a minimum, a start and a maximum bitrate (150 kbit/s, 150 kbit/s and 1.5 Mbit/s in RFC
//! 8868); WebRTC has the same three numbers (`BitrateConstraints`: `min_bitrate_bps`,
//! `start_bitrate_bps`, `max_bitrate_bps`) and a frame rate range its degradation policy works
//! within. rtcc applies them in the sender, for every controller:
//!
//! - the encoder's target never exceeds `max_bitrate`; a rate-based controller's target and
//!   pacing rate never fall below `min_bitrate` (so a sender keeps probing a path that gives no
//!   feedback). A window-based controller's target follows its window (cwnd / RTT) and is not
//!   floored: a floor above what the window lets out would only fill the sender's queue, which
//!   the queue bound then empties by skipping frames (our judgment);
//! - controllers that have a start rate or rate bounds of their own (`gcc`, `sqp`) take these as
//!   their defaults (an explicit controller parameter wins);
//! - the degradation policy ([`crate::media::degradation`]) codes between `min_fps` and the source's
//!   frame rate.

use crate::units::Rate;

/// libwebrtc's default minimum video bitrate (`kDefaultMinVideoBitrateBps`, 30 kbit/s).
pub const DEFAULT_MIN_BITRATE: Rate = Rate(30_000.0);
/// The lowest frame rate the degradation policy uses by default (the and RFC 8868's
/// 10–30 frame/s video).
pub const DEFAULT_MIN_FPS: f64 = 10.0;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MediaRange {
    pub min_bitrate: Rate,
    /// `None`: the controller's own start rate.
    pub start_bitrate: Option<Rate>,
    /// `None`: no limit beyond the encoder's own.
    pub max_bitrate: Option<Rate>,
    pub min_fps: f64,
}

impl Default for MediaRange {
    fn default() -> Self {
        MediaRange {
            min_bitrate: DEFAULT_MIN_BITRATE,
            start_bitrate: None,
            max_bitrate: None,
            min_fps: DEFAULT_MIN_FPS,
        }
    }
}

impl MediaRange {
    /// `rate` inside `[min_bitrate, max_bitrate]`.
    pub fn clamp(&self, rate: Rate) -> Rate {
        let r = rate.max(self.min_bitrate);
        self.max_bitrate.map_or(r, |m| r.min(m))
    }

    /// Check the range is consistent: min ≤ start ≤ max, all finite, min_fps positive.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let min = self.min_bitrate.bps();
        if !(min.is_finite() && min > 0.0) {
            return Err((
                "min_bitrate",
                format!("must be a positive rate, got {}", self.min_bitrate),
            ));
        }
        if let Some(s) = self.start_bitrate {
            if s.bps() < min {
                return Err((
                    "start_bitrate",
                    format!("{s} is below min_bitrate {}", self.min_bitrate),
                ));
            }
        }
        if let Some(m) = self.max_bitrate {
            if m.bps() < self.start_bitrate.unwrap_or(self.min_bitrate).bps() {
                return Err((
                    "max_bitrate",
                    format!(
                        "{m} is below min_bitrate/start_bitrate ({})",
                        self.start_bitrate.unwrap_or(self.min_bitrate)
                    ),
                ));
            }
        }
        if !(self.min_fps > 0.0 && self.min_fps.is_finite()) {
            return Err((
                "min_fps",
                format!("must be a positive frame rate, got {}", self.min_fps),
            ));
        }
        Ok(())
    }
}

impl MediaRange {
    /// A controller's `(min, start, max)` rates with this range as the defaults: a rate the
    /// controller's parameters (`names`, as written in a scenario) do not set comes from the
    /// range when the range has it, and a start rate not set explicitly is clamped into the
    /// bounds. `own` are the controller's defaults.
    pub fn controller_rates(
        &self,
        params: &toml::Table,
        names: [&str; 3],
        own: (Rate, Rate, Rate),
    ) -> (Rate, Rate, Rate) {
        let given = |i: usize| params.contains_key(names[i]);
        let min = if given(0) { own.0 } else { self.min_bitrate };
        let max = match (given(2), self.max_bitrate) {
            (false, Some(m)) => m,
            _ => own.2,
        };
        let start = match (given(1), self.start_bitrate) {
            (true, _) => own.1,
            (false, Some(s)) => s,
            (false, None) => own.1.max(min).min(max),
        };
        (min, start, max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc8868_range_is_expressible_and_inconsistent_ranges_are_named() {
        let r = MediaRange {
            min_bitrate: Rate::from_kbps(150.0),
            start_bitrate: Some(Rate::from_kbps(150.0)),
            max_bitrate: Some(Rate::from_mbps(1.5)),
            min_fps: 10.0,
        };
        assert!(r.validate().is_ok());
        assert_eq!(r.clamp(Rate::from_kbps(20.0)), Rate::from_kbps(150.0));
        assert_eq!(r.clamp(Rate::from_mbps(9.0)), Rate::from_mbps(1.5));
        let bad = MediaRange {
            start_bitrate: Some(Rate::from_kbps(100.0)),
            ..r
        };
        assert_eq!(bad.validate().unwrap_err().0, "start_bitrate");
        let bad = MediaRange {
            max_bitrate: Some(Rate::from_kbps(100.0)),
            ..r
        };
        assert_eq!(bad.validate().unwrap_err().0, "max_bitrate");
        let bad = MediaRange { min_fps: 0.0, ..r };
        assert_eq!(bad.validate().unwrap_err().0, "min_fps");
        // A controller's own parameters win; the range fills the rest.
        let own = (
            Rate::from_kbps(30.0),
            Rate::from_kbps(300.0),
            Rate::from_mbps(30.0),
        );
        let names = ["min_bitrate", "start_bitrate", "max_bitrate"];
        let none = toml::Table::new();
        assert_eq!(
            r.controller_rates(&none, names, own),
            (
                Rate::from_kbps(150.0),
                Rate::from_kbps(150.0),
                Rate::from_mbps(1.5)
            )
        );
        let mut p = toml::Table::new();
        p.insert(
            "start_bitrate".into(),
            toml::Value::String("300kbps".into()),
        );
        assert_eq!(r.controller_rates(&p, names, own).1, Rate::from_kbps(300.0));
        let low = MediaRange {
            min_bitrate: Rate::from_kbps(500.0),
            ..MediaRange::default()
        };
        assert_eq!(
            low.controller_rates(&none, names, own).1,
            Rate::from_kbps(500.0),
            "the controller's own start is raised into the range"
        );
    }
}
