//! dash.js's `BolaRule` (dash.js v3.0.3, `src/streaming/rules/abr/BolaRule.js`; BOLA: Spiteri,
//! Urgaonkar and Sitaraman, "BOLA: Near-optimal bitrate adaptation for online videos",
//! INFOCOM 2016, and its dash.js implementation, "From theory to practice", MMSys 2018).
//!
//! - Utilities `u_i = ln(b_i / b_0) + 1` (so `u_0 = 1`). With `MINIMUM_BUFFER_S` = 10 s,
//!   `MINIMUM_BUFFER_PER_BITRATE_LEVEL_S` = 2 s and the buffer time
//!   `B = max(stableBufferTime, 10 + 2 · rungs)` (32 s for 11 rungs), `gp = (u_top − 1) /
//!   (B / 10 − 1)` and `Vp = 10 / gp`: the lowest rung is chosen at 10 s of buffer, the top one
//!   at `B`.
//! - The decision for a buffer level `Q`: the rung maximising `(Vp · (u_i + gp) − Q) / b_i`
//!   (ties to the higher rung).
//! - State STARTUP (until a segment's duration is buffered): the throughput rule's quality
//!   (safe average throughput and latency); the placeholder buffer is set so that BOLA would
//!   choose that quality: `max(0, minBufferLevelForQuality(q) − Q)`.
//! - State STEADY: the placeholder grows by the time since the last download finished (or since
//!   the last call), the decision is made for `Q + placeholder`; BOLA-O: an increase above both
//!   the last quality and the throughput rule's quality is cut to the larger of the two. If
//!   `Q + placeholder` exceeds what the chosen quality needs (`Vp · (u_q + gp)`), the excess first
//!   shrinks the placeholder and then delays the request (below the top quality).
//! - On each new segment the placeholder decays by 0.99 and is capped so that the buffer at the
//!   request plus the placeholder does not exceed what the last quality needs; a stall empties it.
//!
//! The state is created the first time the rule is consulted (under DYNAMIC, the first time the
//! buffer exceeds 12 s), as in dash.js.

use super::throughput::{quality_for_bitrate, ThroughputHistory};
use super::{AbrContext, Download};
use crate::units::{Duration, Time};

/// `MINIMUM_BUFFER_S`.
pub const MINIMUM_BUFFER_S: f64 = 10.0;
/// `MINIMUM_BUFFER_PER_BITRATE_LEVEL_S`.
pub const MINIMUM_BUFFER_PER_LEVEL_S: f64 = 2.0;
/// `PLACEHOLDER_BUFFER_DECAY`.
pub const PLACEHOLDER_DECAY: f64 = 0.99;

/// BOLA's parameters for a ladder.
#[derive(Debug, Clone, PartialEq)]
pub struct BolaParams {
    pub utilities: Vec<f64>,
    pub vp: f64,
    pub gp: f64,
}

impl BolaParams {
    /// `None` when the ladder has a single rung (dash.js's `BOLA_STATE_ONE_BITRATE`).
    pub fn new(ctx: &AbrContext) -> Option<BolaParams> {
        let b0 = ctx.ladder_bps[0];
        let utilities: Vec<f64> = ctx.ladder_bps.iter().map(|b| (b / b0).ln() + 1.0).collect();
        let top = utilities.iter().enumerate().fold(
            0,
            |best, (i, &u)| if u > utilities[best] { i } else { best },
        );
        if top == 0 {
            return None;
        }
        let levels = ctx.ladder_bps.len() as f64;
        let buffer_time = ctx
            .stable_buffer_s
            .max(MINIMUM_BUFFER_S + MINIMUM_BUFFER_PER_LEVEL_S * levels);
        let gp = (utilities[top] - 1.0) / (buffer_time / MINIMUM_BUFFER_S - 1.0);
        Some(BolaParams {
            vp: MINIMUM_BUFFER_S / gp,
            gp,
            utilities,
        })
    }

    /// The rung BOLA picks at buffer level `level`.
    pub fn quality_for_level(&self, ctx: &AbrContext, level: f64) -> usize {
        let mut best = 0;
        let mut score = f64::NAN;
        for (i, u) in self.utilities.iter().enumerate() {
            let s = (self.vp * (u + self.gp) - level) / ctx.ladder_bps[i];
            if score.is_nan() || s >= score {
                score = s;
                best = i;
            }
        }
        best
    }

    /// The largest buffer level at which BOLA still downloads `q` rather than waiting.
    pub fn max_level_for_quality(&self, q: usize) -> f64 {
        self.vp * (self.utilities[q] + self.gp)
    }

    /// The smallest buffer level at which BOLA prefers `q` to every lower rung.
    pub fn min_level_for_quality(&self, ctx: &AbrContext, q: usize) -> f64 {
        let (bq, uq) = (ctx.ladder_bps[q], self.utilities[q]);
        let mut min = 0.0f64;
        for i in (0..q).rev() {
            if self.utilities[i] < uq {
                let (bi, ui) = (ctx.ladder_bps[i], self.utilities[i]);
                let level = self.vp * (self.gp + (bq * ui - bi * uq) / (bq - bi));
                min = min.max(level);
            }
        }
        min
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Startup,
    Steady,
}

#[derive(Debug, Clone)]
struct State {
    params: BolaParams,
    phase: Phase,
    placeholder: f64,
    last_quality: usize,
    most_advanced_segment_start: Option<f64>,
    last_segment_was_replacement: bool,
    last_segment_start: Option<f64>,
    last_segment_duration: Option<f64>,
    last_segment_request: Option<Time>,
    last_segment_finish: Option<Time>,
    last_call: Option<Time>,
}

/// dash.js's `BolaRule` for the video type.
#[derive(Debug, Clone)]
pub struct Bola {
    ctx: AbrContext,
    state: Option<State>,
    single_rung: bool,
}

/// BOLA's answer: the quality and how long to hold the request back.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BolaChoice {
    pub quality: usize,
    pub delay: Duration,
}

impl Bola {
    pub fn new(ctx: AbrContext) -> Bola {
        let single_rung = BolaParams::new(&ctx).is_none();
        Bola {
            ctx,
            state: None,
            single_rung,
        }
    }

    /// The placeholder buffer, seconds (`None` before the rule was first consulted).
    pub fn placeholder(&self) -> Option<f64> {
        self.state.as_ref().map(|s| s.placeholder)
    }

    /// Whether BOLA left its startup state.
    pub fn is_steady(&self) -> bool {
        self.state
            .as_ref()
            .is_some_and(|s| s.phase == Phase::Steady)
    }

    /// A segment download finished (`onMediaFragmentLoaded` and `onMetricAdded`), `buffer_s`
    /// the level before its media is appended.
    pub fn on_download(
        &mut self,
        d: &Download,
        segment_start_s: f64,
        duration_s: f64,
        buffer_s: f64,
    ) {
        let Some(s) = self.state.as_mut() else {
            return;
        };
        if s.most_advanced_segment_start
            .is_none_or(|m| segment_start_s > m)
        {
            s.most_advanced_segment_start = Some(segment_start_s);
            s.last_segment_was_replacement = false;
        } else {
            s.last_segment_was_replacement = true;
        }
        s.last_segment_start = Some(segment_start_s);
        s.last_segment_duration = Some(duration_s);
        s.last_quality = d.quality;
        s.last_segment_request = Some(d.request);
        s.last_segment_finish = Some(d.finish);
        // checkNewSegment
        s.placeholder *= PLACEHOLDER_DECAY;
        let buffer_at_request = buffer_s + (d.finish - d.request).as_secs_f64();
        let max_placeholder =
            (s.params.max_level_for_quality(s.last_quality) - buffer_at_request).max(0.0);
        s.placeholder = s.placeholder.min(max_placeholder);
        if s.last_segment_was_replacement {
            s.placeholder += duration_s;
        }
        s.last_segment_start = None;
        s.last_segment_request = None;
    }

    /// Playback stalled: the placeholder must not raise the quality (`onBufferEmpty`).
    pub fn on_stall(&mut self) {
        if let Some(s) = self.state.as_mut().filter(|s| s.phase == Phase::Steady) {
            s.placeholder = 0.0;
        }
    }

    /// `getMaxIndex` while the rule is in use: `None` for no opinion.
    pub fn choose(
        &mut self,
        now: Time,
        buffer_s: f64,
        history: &ThroughputHistory,
    ) -> Option<BolaChoice> {
        if self.single_rung {
            return None;
        }
        let ctx = &self.ctx;
        let s = self.state.get_or_insert_with(|| State {
            params: BolaParams::new(ctx).expect("more than one rung"),
            phase: Phase::Startup,
            placeholder: 0.0,
            last_quality: 0,
            most_advanced_segment_start: None,
            last_segment_was_replacement: false,
            last_segment_start: None,
            last_segment_duration: None,
            last_segment_request: None,
            last_segment_finish: None,
            last_call: None,
        });
        let safe = history.safe_average_kbps()?;
        let latency = history.average_latency_ms();
        let for_throughput = quality_for_bitrate(ctx, safe, latency);
        match s.phase {
            Phase::Startup => {
                let q = for_throughput;
                s.placeholder = (s.params.min_level_for_quality(ctx, q) - buffer_s).max(0.0);
                s.last_quality = q;
                if s.last_segment_duration.is_some_and(|d| buffer_s >= d) {
                    s.phase = Phase::Steady;
                }
                Some(BolaChoice {
                    quality: q,
                    delay: Duration::ZERO,
                })
            }
            Phase::Steady => {
                // updatePlaceholderBuffer
                if let Some(f) = s.last_segment_finish {
                    s.placeholder += (now - f).as_secs_f64();
                } else if let Some(c) = s.last_call {
                    s.placeholder += (now - c).as_secs_f64();
                }
                s.last_call = Some(now);
                s.last_segment_start = None;
                s.last_segment_request = None;
                s.last_segment_finish = None;

                let mut q = s.params.quality_for_level(ctx, buffer_s + s.placeholder);
                if q > s.last_quality && q > for_throughput {
                    q = for_throughput.max(s.last_quality);
                }
                let mut delay =
                    (buffer_s + s.placeholder - s.params.max_level_for_quality(q)).max(0.0);
                if delay <= s.placeholder {
                    s.placeholder -= delay;
                    delay = 0.0;
                } else {
                    delay -= s.placeholder;
                    s.placeholder = 0.0;
                    if q >= ctx.top() {
                        delay = 0.0;
                    }
                }
                s.last_quality = q;
                Some(BolaChoice {
                    quality: q,
                    delay: Duration::from_secs_f64(delay),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{ctx, download};
    use super::*;

    fn history(mbps: f64) -> ThroughputHistory {
        let mut h = ThroughputHistory::new();
        for i in 0..4 {
            h.push(&download(i, 0, mbps, 1.0, 0.0, (i + 1) as f64 * 5.0));
        }
        h
    }

    #[test]
    fn parameters_put_the_lowest_rung_at_10_s_and_the_top_one_at_32_s() {
        let c = ctx();
        let p = BolaParams::new(&c).unwrap();
        // u_top = ln(25) + 1 = 4.2189; gp = 3.2189 / (32 / 10 - 1) = 1.46314; Vp = 10 / gp.
        assert!((p.gp - 25f64.ln() / 2.2).abs() < 1e-12, "gp = {}", p.gp);
        assert!((p.vp - 10.0 / p.gp).abs() < 1e-12);
        assert_eq!(
            p.quality_for_level(&c, 10.0),
            0,
            "at 10 s BOLA takes the lowest rung"
        );
        assert_eq!(p.quality_for_level(&c, 32.0), 10, "at 32 s the top rung");
        // Hand-computed argmax of (Vp (u_i + gp) - Q) / b_i at Q = 20 s: rung 4 (10 Mbit/s).
        // Scores x 1e6: rung 3: (6.8346 x 4.4780 - 20) / 7.5 = 1.4137; rung 4: (6.8346 x
        // 4.7657 - 20) / 10 = 1.2572 ... rung 2: (6.8346 x 4.0725 - 20) / 5 = 1.5668; rung 1:
        // 1.2363; so rung 2.
        assert_eq!(p.quality_for_level(&c, 20.0), 2);
        let l = p.min_level_for_quality(&c, 2);
        assert_eq!(
            p.quality_for_level(&c, l + 1e-9),
            2,
            "min level {l} picks rung 2"
        );
        assert_eq!(
            p.quality_for_level(&c, l - 1e-3),
            1,
            "just below it, rung 1"
        );
        assert!(
            (p.max_level_for_quality(0) - MINIMUM_BUFFER_S - p.vp).abs() < 1e-9,
            "Vp (1 + gp) = 10 + Vp"
        );
    }

    #[test]
    fn startup_follows_throughput_and_sets_the_placeholder_then_steady_keeps_it() {
        let c = ctx();
        let p = BolaParams::new(&c).unwrap();
        let mut b = Bola::new(c.clone());
        // 26 Mbit/s x 0.9 = 23.4, less the 1 ms dead time -> rung 9 (22.5).
        let h = history(26.0);
        let first = b.choose(Time::from_secs_f64(20.0), 13.0, &h).unwrap();
        assert_eq!(first.quality, 9);
        let ph = b.placeholder().unwrap();
        assert!(
            (ph - (p.min_level_for_quality(&c, 9) - 13.0)).abs() < 1e-9,
            "the placeholder makes 13 s + placeholder the level where rung 9 starts"
        );
        assert!(!b.is_steady(), "no segment duration seen yet");
        // A segment of rung 9 arrives; the next call (still startup) sees its duration and
        // leaves startup, the one after is steady.
        b.on_download(&download(4, 9, 112.5, 4.5, 100.0, 24.6), 20.0, 5.0, 8.5);
        let second = b.choose(Time::from_secs_f64(24.6), 13.4, &h).unwrap();
        assert_eq!(second.quality, 9);
        assert!(b.is_steady());
        // 0.7 s later the buffer drained by 0.6 s and the placeholder grew by the 0.7 s since
        // the download finished: 0.1 s above where rung 9 starts; rung 9 again, no delay.
        let third = b.choose(Time::from_secs_f64(25.3), 12.8, &h).unwrap();
        assert_eq!(third.quality, 9);
        assert_eq!(third.delay, Duration::ZERO);
        let want = p.min_level_for_quality(&c, 9) + 0.1 - 12.8;
        assert!((b.placeholder().unwrap() - want).abs() < 1e-6);
    }

    #[test]
    fn a_low_quality_with_a_full_buffer_is_delayed_and_a_stall_empties_the_placeholder() {
        let c = ctx();
        let p = BolaParams::new(&c).unwrap();
        let mut b = Bola::new(c.clone());
        // A slow path: 2 Mbit/s -> 1.8 safe -> rung 0.
        let h = history(2.0);
        b.choose(Time::from_secs_f64(10.0), 6.0, &h).unwrap();
        b.on_download(&download(2, 0, 5.0, 2.5, 100.0, 12.6), 10.0, 5.0, 6.0);
        let now = Time::from_secs_f64(12.6);
        b.choose(now, 30.0, &h).unwrap();
        assert!(b.is_steady());
        // Steady, 30 s of buffer: BOLA alone would take a high rung, but BOLA-O does not rise
        // above the throughput's rung 0, and 30 s is far above what rung 0 needs (10 + Vp):
        // the excess over the (empty) placeholder becomes a delay.
        let ch = b.choose(now, 30.0, &h).unwrap();
        assert_eq!(ch.quality, 0, "BOLA-O holds the throughput's rung 0");
        let want = 30.0 - p.max_level_for_quality(0);
        assert!(
            (ch.delay.as_secs_f64() - want).abs() < 1e-6,
            "delay {:?} = 30 s - (10 + Vp) = {want}",
            ch.delay
        );
        assert_eq!(b.placeholder(), Some(0.0));
        b.on_stall();
        assert_eq!(b.placeholder(), Some(0.0));
    }
}
