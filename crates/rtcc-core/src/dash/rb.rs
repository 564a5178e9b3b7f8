//! RB, rate-based adaptation, as Pensieve's dash.js fork implements it (`getBitrateRB`, with
//! `p_rb` = 1): the highest rung at or below the predicted throughput ([`super::pensieve`]: a
//! harmonic mean over the last 5 downloads). The seed describes RB as using "the throughput of
//! the most recent segment"; the code it borrowed looks at five (`docs/dash.md`).

use super::{pensieve, Abr, AbrContext, AbrDecision, AbrInput, Rule};
use crate::units::Duration;

/// `p_rb`.
pub const P_RB: f64 = 1.0;

pub struct Rb {
    ctx: AbrContext,
}

impl Rb {
    pub fn new(ctx: AbrContext) -> Rb {
        Rb { ctx }
    }
}

impl Abr for Rb {
    fn choose(&mut self, input: &AbrInput) -> AbrDecision {
        let quality = if input.downloads.is_empty() {
            input.quality
        } else {
            self.ctx
                .highest_at_most(pensieve::predict(input.downloads) * P_RB)
        };
        AbrDecision {
            quality,
            delay: Duration::ZERO,
            rule: Rule::Rb,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{ctx, download, input};
    use super::*;

    #[test]
    fn rb_takes_the_highest_rung_under_the_prediction() {
        let mut rb = Rb::new(ctx());
        // 8 Mbit/s for 1 s and 12 Mbit/s for 1 s: 2 / (1/8 + 1/12) = 9.6 Mbit/s -> rung 3 (7.5).
        let ds = [
            download(0, 0, 8.0, 1.0, 0.0, 5.0),
            download(1, 0, 12.0, 1.0, 0.0, 10.0),
        ];
        assert_eq!(rb.choose(&input(&ds, 10.0, 0, 10.0)).quality, 3);
        assert_eq!(
            rb.choose(&input(&[], 0.0, 0, 0.0)).quality,
            0,
            "the first segment at the initial quality"
        );
    }
}
