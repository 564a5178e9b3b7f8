//! dash.js's ABR: its rule collection and strategies (dash.js v3.0.3, `AbrController.js`,
//! `ABRRulesCollection.js`, `InsufficientBufferRule.js`, `SwitchHistoryRule.js`,
//! `SwitchRequestHistory.js`).
//!
//! At every decision dash.js asks each quality rule for a maximum quality and takes the lowest
//! of those that have an opinion (all have the default priority); with no opinion the quality
//! stays. The rules:
//!
//! - `BolaRule` ([`super::bola`]) while the buffer-occupancy rule is in use, `ThroughputRule`
//!   ([`super::throughput`]) otherwise. Strategy `abrDynamic` (the default, the seed's DYNAMIC)
//!   uses BOLA once the buffer exceeds `stableBufferTime` (12 s) and goes back to THROUGHPUT
//!   when it falls below half of it (6 s); `abrBola` always uses BOLA, `abrThroughput` never.
//! - `InsufficientBufferRule`: after the first `BUFFER_LOADED`, the lowest rung while the buffer
//!   is empty (a stall); otherwise the quality for `throughput × (buffer / segment duration) ×
//!   0.5` (the unsafe average and the latency), so that a segment can be downloaded before the
//!   buffer runs out.
//! - `SwitchHistoryRule`: over the last 8 decisions, per quality, the decisions that dropped
//!   below it and those that did not; scanning qualities from the lowest, once at least 6 are
//!   counted and drops / non-drops exceeds 0.075, the quality below the one that dropped.
//! - `DroppedFramesRule` never has an opinion here (no frames are dropped);
//!   `AbandonRequestsRule` (abandoning a download that is too slow) is not modelled.

use super::bola::Bola;
use super::throughput::{quality_for_bitrate, throughput_rule, ThroughputHistory};
use super::{Abr, AbrContext, AbrDecision, AbrInput, BufferState, Download, Rule};
use crate::units::Duration;
use std::collections::VecDeque;

/// `INSUFFICIENT_BUFFER_SAFETY_FACTOR`.
const INSUFFICIENT_BUFFER_SAFETY: f64 = 0.5;
/// `SWITCH_REQUEST_HISTORY_DEPTH`.
const SWITCH_HISTORY_DEPTH: usize = 8;
/// `SwitchHistoryRule`: `SAMPLE_SIZE`, `MAX_SWITCH`.
const SWITCH_SAMPLE_SIZE: u32 = 6;
const MAX_SWITCH: f64 = 0.075;

/// dash.js's `ABRStrategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    Dynamic,
    Bola,
    Throughput,
}

#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    drops: u32,
    no_drops: u32,
}

/// dash.js's `SwitchRequestHistory` and `SwitchHistoryRule`.
#[derive(Debug, Clone, Default)]
pub struct SwitchHistory {
    /// Running totals per old quality (a slot exists once a decision started from it).
    totals: Vec<Option<Counts>>,
    /// (old quality, dropped) of the last decisions.
    recent: VecDeque<(usize, bool)>,
}

impl SwitchHistory {
    /// Record a decision from `old` to `new`.
    pub fn push(&mut self, old: usize, new: usize) {
        if self.totals.len() <= old {
            self.totals.resize(old + 1, None);
        }
        let drop = new < old;
        let t = self.totals[old].get_or_insert_with(Counts::default);
        if drop {
            t.drops += 1;
        } else {
            t.no_drops += 1;
        }
        self.recent.push_back((old, drop));
        if self.recent.len() > SWITCH_HISTORY_DEPTH {
            let (idx, dropped) = self.recent.pop_front().expect("non-empty");
            let t = self.totals[idx].as_mut().expect("counted");
            if dropped {
                t.drops -= 1;
            } else {
                t.no_drops -= 1;
            }
        }
    }

    /// The rule's maximum quality, `None` for no opinion.
    pub fn rule(&self) -> Option<usize> {
        let (mut drops, mut no_drops) = (0u32, 0u32);
        for (i, t) in self.totals.iter().enumerate() {
            let Some(t) = t else { continue };
            drops += t.drops;
            no_drops += t.no_drops;
            // JavaScript: drops / noDrops is Infinity (> 0.075) when noDrops is 0 and drops > 0,
            // NaN (not > 0.075) when both are 0.
            let too_many = if no_drops == 0 {
                drops > 0
            } else {
                drops as f64 / no_drops as f64 > MAX_SWITCH
            };
            if drops + no_drops >= SWITCH_SAMPLE_SIZE && too_many {
                return Some(if i > 0 && t.drops > 0 { i - 1 } else { i });
            }
        }
        None
    }
}

/// dash.js's ABR with one of its strategies.
pub struct DashJs {
    ctx: AbrContext,
    strategy: Strategy,
    /// `isUsingBufferOccupancyABR`.
    use_bola: bool,
    history: ThroughputHistory,
    bola: Bola,
    switches: SwitchHistory,
    /// `InsufficientBufferRule`'s first `BUFFER_LOADED` seen.
    loaded_seen: bool,
}

impl DashJs {
    pub fn new(ctx: AbrContext, strategy: Strategy) -> DashJs {
        DashJs {
            bola: Bola::new(ctx.clone()),
            ctx,
            strategy,
            use_bola: strategy == Strategy::Bola,
            history: ThroughputHistory::new(),
            switches: SwitchHistory::default(),
            loaded_seen: false,
        }
    }

    /// Whether BOLA (rather than THROUGHPUT) is in use.
    pub fn uses_bola(&self) -> bool {
        self.use_bola
    }

    pub fn history(&self) -> &ThroughputHistory {
        &self.history
    }

    pub fn bola(&self) -> &Bola {
        &self.bola
    }

    /// `InsufficientBufferRule.getMaxIndex`.
    fn insufficient_buffer(&mut self, input: &AbrInput) -> Option<usize> {
        if input.buffer_state == Some(BufferState::Loaded) {
            self.loaded_seen = true;
        }
        if !self.loaded_seen || input.buffer_state.is_none() {
            return None;
        }
        if input.buffer_state == Some(BufferState::Empty) {
            return Some(0);
        }
        // A missing average is NaN in dash.js, which maps to the lowest rung.
        let throughput = self.history.average_kbps().unwrap_or(f64::NAN);
        let kbps = throughput
            * (input.buffer_s / self.ctx.segment_duration_s)
            * INSUFFICIENT_BUFFER_SAFETY;
        Some(quality_for_bitrate(
            &self.ctx,
            kbps,
            self.history.average_latency_ms(),
        ))
    }
}

impl Abr for DashJs {
    fn choose(&mut self, input: &AbrInput) -> AbrDecision {
        let mut opinions: Vec<(usize, Rule)> = Vec::with_capacity(4);
        let mut delay = Duration::ZERO;
        if self.use_bola {
            if let Some(c) = self.bola.choose(input.now, input.buffer_s, &self.history) {
                opinions.push((c.quality, Rule::Bola));
                delay = c.delay;
            }
        } else if let Some(q) = throughput_rule(&self.ctx, &self.history, input) {
            opinions.push((q, Rule::Throughput));
        }
        if let Some(q) = self.insufficient_buffer(input) {
            opinions.push((q, Rule::InsufficientBuffer));
        }
        if let Some(q) = self.switches.rule() {
            opinions.push((q, Rule::SwitchHistory));
        }
        // The lowest opinion wins (the first rule giving it, in the collection's order).
        let chosen = opinions
            .iter()
            .copied()
            .reduce(|a, b| if b.0 < a.0 { b } else { a });
        let (quality, rule) = match chosen {
            Some((q, r)) => (q.min(self.ctx.top()), r),
            None => (input.quality, Rule::None),
        };
        self.switches.push(input.quality, quality);
        AbrDecision {
            quality,
            delay,
            rule,
        }
    }

    fn on_download(&mut self, d: &Download, segment_start_s: f64, buffer_s: f64) {
        self.history.push(d);
        self.bola
            .on_download(d, segment_start_s, self.ctx.segment_duration_s, buffer_s);
    }

    fn on_buffer_level(&mut self, buffer_s: f64) {
        self.use_bola = match self.strategy {
            Strategy::Bola => true,
            Strategy::Throughput => false,
            Strategy::Dynamic => {
                let threshold = if self.use_bola {
                    0.5 * self.ctx.stable_buffer_s
                } else {
                    self.ctx.stable_buffer_s
                };
                buffer_s > threshold
            }
        };
    }

    fn on_stall(&mut self) {
        self.bola.on_stall();
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{ctx, download, input};
    use super::*;

    fn dynamic_with(mbps: f64, n: usize) -> (DashJs, Vec<Download>) {
        let mut a = DashJs::new(ctx(), Strategy::Dynamic);
        let mut ds = vec![];
        for i in 0..n {
            let d = download(i, 4, mbps * 2.0, 2.0, 0.0, (i + 1) as f64 * 5.0);
            a.on_download(&d, i as f64 * 5.0, 8.0);
            ds.push(d);
        }
        (a, ds)
    }

    #[test]
    fn dynamic_switches_to_bola_above_12_s_and_back_at_6_s() {
        let (mut a, _) = dynamic_with(10.0, 4);
        for (level, bola) in [
            (11.0, false),
            (12.0, false),
            (12.5, true),
            (7.0, true),
            (6.01, true),
            (6.0, false),
            (11.9, false),
            (12.1, true),
        ] {
            a.on_buffer_level(level);
            assert_eq!(
                a.uses_bola(),
                bola,
                "at {level} s: BOLA above 12 s, THROUGHPUT again at 6 s or less"
            );
        }
    }

    #[test]
    fn the_lowest_opinion_wins_and_insufficient_buffer_guards_a_low_buffer() {
        let (mut a, ds) = dynamic_with(20.0, 4);
        // THROUGHPUT: 18 Mbit/s safe -> rung 7 (17.5). InsufficientBuffer at 2 s of buffer:
        // 20 x 2 / 5 x 0.5 = 4 Mbit/s -> rung 1.
        let d = a.choose(&input(&ds, 2.0, 4, 20.0));
        assert_eq!((d.quality, d.rule), (1, Rule::InsufficientBuffer));
        // At 10 s: 20 x 10 / 5 x 0.5 = 20 Mbit/s, less the 1 ms dead time -> rung 7, the same
        // as THROUGHPUT's; the first rule of the collection giving it is reported.
        let d = a.choose(&input(&ds, 10.0, 1, 20.0));
        assert_eq!((d.quality, d.rule), (7, Rule::Throughput));
        // During a stall InsufficientBuffer says 0.
        let mut i = input(&ds, 0.5, 7, 21.0);
        i.buffer_state = Some(BufferState::Empty);
        assert_eq!(a.choose(&i).quality, 0);
    }

    #[test]
    fn with_no_opinion_the_quality_stays() {
        let mut a = DashJs::new(ctx(), Strategy::Dynamic);
        let mut i = input(&[], 0.0, 3, 0.0);
        i.buffer_state = None;
        let d = a.choose(&i);
        assert_eq!((d.quality, d.rule), (3, Rule::None));
    }

    #[test]
    fn repeated_drops_make_the_switch_history_rule_cap_the_quality() {
        let mut h = SwitchHistory::default();
        // Five decisions that stay at 5, then one that drops from 5 to 3: 1 drop, 5 non-drops
        // from quality 5: 1 / 5 = 0.2 > 0.075 with 6 samples -> at most 4.
        for _ in 0..5 {
            h.push(5, 5);
        }
        assert_eq!(h.rule(), None, "five samples are not enough");
        h.push(5, 3);
        assert_eq!(h.rule(), Some(4), "one below the quality that dropped");
        // Eight more steady decisions from 3 push the drop out of the 8-deep history.
        for _ in 0..8 {
            h.push(3, 3);
        }
        assert_eq!(h.rule(), None);
    }
}
