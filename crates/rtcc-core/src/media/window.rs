//! The mean of the values seen in the last `span` of time: what the degradation policy (its
//! 1 s mean target) and the frame dropper (its 2 s mean target) both read.

use crate::units::{Duration, Time};
use std::collections::VecDeque;

#[derive(Debug, Clone)]
pub struct WindowedMean {
    span: Duration,
    values: VecDeque<(Time, f64)>,
    sum: f64,
}

impl WindowedMean {
    pub fn new(span: Duration) -> WindowedMean {
        WindowedMean {
            span,
            values: VecDeque::new(),
            sum: 0.0,
        }
    }

    /// Add `value` seen at `now` and forget what is `span` or more older.
    pub fn push(&mut self, now: Time, value: f64) {
        self.values.push_back((now, value));
        self.sum += value;
        while let Some(&(t, v)) = self.values.front() {
            if now.saturating_since(t) < self.span {
                break;
            }
            self.values.pop_front();
            self.sum -= v;
        }
    }

    /// The mean of the values in the window (`None` before the first).
    pub fn mean(&self) -> Option<f64> {
        (!self.values.is_empty()).then(|| self.sum / self.values.len() as f64)
    }

    /// When the newest value was seen.
    pub fn last_time(&self) -> Option<Time> {
        self.values.back().map(|&(t, _)| t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mean_covers_exactly_the_last_span() {
        let mut w = WindowedMean::new(Duration::from_millis(1000));
        assert_eq!((w.mean(), w.last_time()), (None, None));
        w.push(Time::from_millis(0), 1.0);
        w.push(Time::from_millis(500), 3.0);
        assert_eq!(w.mean(), Some(2.0));
        // At 1000 ms the value from 0 ms is a whole span old: gone.
        w.push(Time::from_millis(1000), 5.0);
        assert_eq!(w.mean(), Some(4.0));
        assert_eq!(w.last_time(), Some(Time::from_millis(1000)));
    }
}
