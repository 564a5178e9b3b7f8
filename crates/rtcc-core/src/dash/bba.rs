//! BBA, buffer-based adaptation (Huang, Johari, McKeown, Trunnell and Watson, "A buffer-based
//! approach to rate adaptation", SIGCOMM 2014), as Pensieve's dash.js fork implements it
//! (`getBitrateBB`): below the reservoir (5 s of buffer) the lowest rung; above reservoir +
//! cushion (15 s) the top rung; in between the rate grows linearly from the lowest bitrate to
//! the top one, and the highest rung at or below that rate is chosen.

use super::{Abr, AbrContext, AbrDecision, AbrInput, Rule};
use crate::units::Duration;

/// `reservoir`, seconds.
pub const RESERVOIR_S: f64 = 5.0;
/// `cushion`, seconds.
pub const CUSHION_S: f64 = 10.0;

pub struct Bba {
    ctx: AbrContext,
}

impl Bba {
    pub fn new(ctx: AbrContext) -> Bba {
        Bba { ctx }
    }

    /// The rung for a buffer level.
    pub fn quality_for_buffer(&self, buffer_s: f64) -> usize {
        let (low, high) = (self.ctx.ladder_bps[0], self.ctx.ladder_bps[self.ctx.top()]);
        let rate = if buffer_s <= RESERVOIR_S {
            low
        } else if buffer_s > RESERVOIR_S + CUSHION_S {
            high
        } else {
            low + (high - low) * (buffer_s - RESERVOIR_S) / CUSHION_S
        };
        self.ctx.highest_at_most(rate)
    }
}

impl Abr for Bba {
    fn choose(&mut self, input: &AbrInput) -> AbrDecision {
        // The first segment is requested at the player's initial quality (the fork decides
        // from the second one on, after a download).
        let quality = if input.downloads.is_empty() {
            input.quality
        } else {
            self.quality_for_buffer(input.buffer_s)
        };
        AbrDecision {
            quality,
            delay: Duration::ZERO,
            rule: Rule::Bba,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::ctx;
    use super::*;

    #[test]
    fn reservoir_and_cushion_map_the_buffer_to_a_rung() {
        let b = Bba::new(ctx());
        for (buffer, rung) in [
            (0.0, 0),
            (5.0, 0),
            // 1 + 24 x 0.5 / 10 = 2.2 Mbit/s: still rung 0 (2.5 is above it).
            (5.5, 0),
            // 1 + 24 x 0.0625 = 2.5 Mbit/s exactly: rung 1.
            (5.625, 1),
            // 1 + 24 x 0.5 = 13 Mbit/s: rung 5 (12.5).
            (10.0, 5),
            // 1 + 24 x 0.7 = 17.8 Mbit/s: rung 7 (17.5).
            (12.0, 7),
            // 15 s exactly is still in the cushion: 25 Mbit/s, the top rung.
            (15.0, 10),
            (40.0, 10),
        ] {
            assert_eq!(
                b.quality_for_buffer(buffer),
                rung,
                "at {buffer} s: rate = 1 + 24 x (buffer - 5) / 10 Mbit/s in the cushion"
            );
        }
    }
}
