//! A value that changes in steps over time: a link's loss rate or propagation delay that follows
//! a trace (an OpenNetLab trace's patterns, [`super::opennetlab`]).

use crate::units::Time;

/// A piecewise-constant value: `(start, value)` pairs, the first at time 0 and the starts
/// increasing; each value holds until the next start, the last one forever.
#[derive(Debug, Clone, PartialEq)]
pub struct Steps<T> {
    steps: Vec<(Time, T)>,
}

impl<T: Copy> Steps<T> {
    /// `None` unless the first start is 0 and the starts increase.
    pub fn new(steps: Vec<(Time, T)>) -> Option<Steps<T>> {
        let ordered = steps.windows(2).all(|w| w[0].0 < w[1].0);
        (steps.first().is_some_and(|s| s.0 == Time::ZERO) && ordered).then_some(Steps { steps })
    }

    /// The value at `t`.
    pub fn at(&self, t: Time) -> T {
        self.steps[self.steps.partition_point(|(s, _)| *s <= t) - 1].1
    }

    /// The steps, in time order.
    pub fn steps(&self) -> &[(Time, T)] {
        &self.steps
    }

    /// The values, in time order.
    pub fn values(&self) -> impl Iterator<Item = T> + '_ {
        self.steps.iter().map(|s| s.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_holds_from_its_start_to_the_next() {
        let s = Steps::new(vec![
            (Time::ZERO, 1),
            (Time::from_millis(10), 2),
            (Time::from_millis(30), 3),
        ])
        .unwrap();
        let at = |ms| s.at(Time::from_millis(ms));
        assert_eq!(
            (at(0), at(9), at(10), at(29), at(30), at(1_000_000)),
            (1, 1, 2, 2, 3, 3)
        );
        assert!(
            Steps::new(vec![(Time::from_millis(1), 1)]).is_none(),
            "not at 0"
        );
        assert!(Steps::<u8>::new(vec![]).is_none());
        assert!(Steps::new(vec![(Time::ZERO, 1), (Time::ZERO, 2)]).is_none());
    }
}
