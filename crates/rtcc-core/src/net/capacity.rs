//! How much a link can carry and when: constant rate, piecewise-constant schedule, or a
//! mahimahi trace of delivery opportunities.
//!
//! **mahimahi traces** (`mm-link`, `link_queue.cc`): a file of non-decreasing integers, each a
//! millisecond offset at which one 1500-byte packet may leave the link (mahimahi counts 1504
//! bytes including its 4-byte TUN header; our sizes are IP sizes, so one full-size packet fits one
//! opportunity either way). Several opportunities in the same millisecond repeat the line. The
//! trace loops with a period equal to its last value: opportunity `i` of period `p` is at
//! `p × last + t_i` (so a trace that starts at 0 has two opportunities at each period boundary,
//! exactly as mahimahi does). Opportunities nobody uses are wasted.
//!
//! Numbering every opportunity of the looped trace `j = p × n + i` turns "how many opportunities
//! before time T" and "when is opportunity j" into O(log n) arithmetic, which is what the link
//! service and the capacity integrals below use.
//!
//! **Schedules** are written one change per line, `<time> <rate>`, e.g. `40s 5Mbps`; the first
//! line must be at `0s`, the last rate holds forever. `#` starts a comment.

use crate::units::{Duration, Rate, Time, UnitError};
use std::path::Path;
use std::sync::Arc;

/// The largest offset a trace may hold: 10⁹ ms (about 11.6 days, the longest scenario
/// duration), so every opportunity time of a run fits in nanoseconds without overflow.
pub const MAX_TRACE_OFFSET_MS: u64 = 1_000_000_000;

/// The largest input file rtcc reads (traces, schedules, frame traces): 64 MiB, ten times the
/// largest public cellular trace, so that a wrong path (`/dev/zero`, a video file) is an error and
/// not an exhausted memory.
pub const MAX_INPUT_FILE_BYTES: u64 = 64 << 20;

/// Read a text input file of at most [`MAX_INPUT_FILE_BYTES`]; `what` names it in errors.
pub fn read_input_file(path: &Path, what: &str) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {what}: {e}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_INPUT_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {what}: {e}"))?;
    if bytes.len() as u64 > MAX_INPUT_FILE_BYTES {
        return Err(format!(
            "{what} is larger than {} MiB; is this the right file?",
            MAX_INPUT_FILE_BYTES >> 20
        ));
    }
    String::from_utf8(bytes).map_err(|_| format!("{what} is not UTF-8 text"))
}

/// Bytes one mahimahi delivery opportunity carries.
pub const OPPORTUNITY_BYTES: u32 = 1500;
const NS_PER_MS: u64 = 1_000_000;

/// A malformed trace or schedule file: names the file and the line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}:{line}: {reason}")]
pub struct TraceError {
    pub file: String,
    /// 1-based line number (0 for problems with the file as a whole).
    pub line: usize,
    pub reason: String,
}

/// A mahimahi delivery-opportunity trace.
#[derive(Debug, Clone, PartialEq)]
pub struct MahimahiTrace {
    /// Millisecond offsets of the opportunities of one period, non-decreasing.
    pub opportunities_ms: Vec<u64>,
    /// Where the file came from (for messages).
    pub name: String,
}

impl MahimahiTrace {
    pub fn from_file(path: &Path) -> Result<MahimahiTrace, TraceError> {
        let name = path.display().to_string();
        let text = read_input_file(path, "trace").map_err(|reason| TraceError {
            file: name.clone(),
            line: 0,
            reason,
        })?;
        Self::parse(&text, &name)
    }

    /// Parse trace text. Rejects empty traces, non-numeric lines, decreasing offsets and a last
    /// value of 0 (a zero period would loop forever at time 0).
    pub fn parse(text: &str, name: &str) -> Result<MahimahiTrace, TraceError> {
        let err = |line: usize, reason: String| TraceError {
            file: name.to_string(),
            line,
            reason,
        };
        let mut opportunities_ms = Vec::new();
        let mut last_line = 0;
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() {
                continue;
            }
            let ms: u64 = line.parse().map_err(|_| {
                err(
                    i + 1,
                    format!("{line:?} is not a whole number of milliseconds"),
                )
            })?;
            if ms > MAX_TRACE_OFFSET_MS {
                return Err(err(
                    i + 1,
                    format!(
                        "offset {ms} ms is beyond the largest accepted, {MAX_TRACE_OFFSET_MS} ms (about 11.6 days)"
                    ),
                ));
            }
            if let Some(&prev) = opportunities_ms.last() {
                if ms < prev {
                    return Err(err(
                        i + 1,
                        format!("offsets must not decrease ({ms} after {prev})"),
                    ));
                }
            }
            opportunities_ms.push(ms);
            last_line = i + 1;
        }
        match opportunities_ms.last() {
            None => Err(err(0, "the trace is empty".into())),
            Some(0) => Err(err(
                last_line,
                "the last offset is 0, so the trace has no length to loop over".into(),
            )),
            Some(_) => Ok(MahimahiTrace {
                opportunities_ms,
                name: name.to_string(),
            }),
        }
    }

    /// Loop period in ms (the last offset).
    pub fn period_ms(&self) -> u64 {
        *self.opportunities_ms.last().unwrap()
    }

    /// Mean capacity over one period.
    pub fn mean_rate(&self) -> Rate {
        let bits = self.opportunities_ms.len() as f64 * OPPORTUNITY_BYTES as f64 * 8.0;
        Rate(bits / (self.period_ms() as f64 / 1e3))
    }

    /// Number of offsets `t_i < x` within one period.
    fn below(&self, x: u64) -> u64 {
        self.opportunities_ms.partition_point(|&t| t < x) as u64
    }

    /// Number of opportunities of the looped trace strictly before `t`.
    pub fn opportunities_before(&self, t: Time) -> u64 {
        let k = t.0.div_ceil(NS_PER_MS); // opportunities at ms 0..k-1 are before t
        let (n, l) = (self.opportunities_ms.len() as u64, self.period_ms());
        let (q, r) = (k / l, k % l);
        if q == 0 {
            return self.below(r);
        }
        // Periods 0..q-2 are whole; period q-1 is whole unless r == 0 (then offsets == L, which
        // fall at time q·L = k, are not before k); period q contributes offsets below r.
        (q - 1) * n + if r > 0 { n } else { self.below(l) } + self.below(r)
    }

    /// Time of opportunity `j` of the looped trace.
    pub fn opportunity_time(&self, j: u64) -> Time {
        let n = self.opportunities_ms.len() as u64;
        let (p, i) = (j / n, (j % n) as usize);
        // Saturating: an opportunity beyond the representable future is "never", not a wrap to
        // the past.
        let ms = p
            .saturating_mul(self.period_ms())
            .saturating_add(self.opportunities_ms[i]);
        Time(ms.saturating_mul(NS_PER_MS))
    }
}

/// A piecewise-constant rate: `(start, rate)` pairs, the first at time 0.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    pub steps: Vec<(Time, Rate)>,
}

impl Schedule {
    pub fn new(steps: Vec<(Time, Rate)>, name: &str) -> Result<Schedule, TraceError> {
        let err = |line, reason: String| TraceError {
            file: name.to_string(),
            line,
            reason,
        };
        match steps.first() {
            None => return Err(err(0, "the schedule is empty".into())),
            Some((t, _)) if *t != Time::ZERO => {
                return Err(err(
                    1,
                    format!("the first step must be at 0s, not {}", Duration(t.0)),
                ))
            }
            _ => {}
        }
        for (i, w) in steps.windows(2).enumerate() {
            if w[1].0 <= w[0].0 {
                return Err(err(
                    i + 2,
                    format!(
                        "step times must increase ({} after {})",
                        Duration(w[1].0 .0),
                        Duration(w[0].0 .0)
                    ),
                ));
            }
        }
        Ok(Schedule { steps })
    }

    pub fn from_file(path: &Path) -> Result<Schedule, TraceError> {
        let name = path.display().to_string();
        let text = read_input_file(path, "schedule").map_err(|reason| TraceError {
            file: name.clone(),
            line: 0,
            reason,
        })?;
        Self::parse(&text, &name)
    }

    /// Parse `<time> <rate>` lines (`40s 5Mbps`), `#` comments and blank lines allowed.
    pub fn parse(text: &str, name: &str) -> Result<Schedule, TraceError> {
        let mut steps = Vec::new();
        let unit_err = |line, e: UnitError| TraceError {
            file: name.to_string(),
            line,
            reason: e.to_string(),
        };
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let mut parts = line.split_whitespace();
            let (Some(t), Some(r), None) = (parts.next(), parts.next(), parts.next()) else {
                return Err(TraceError {
                    file: name.to_string(),
                    line: i + 1,
                    reason: format!(
                        "expected \"<time> <rate>\" such as \"40s 5Mbps\", got {line:?}"
                    ),
                });
            };
            let t = Duration::parse(t).map_err(|e| unit_err(i + 1, e))?;
            let r = Rate::parse(r).map_err(|e| unit_err(i + 1, e))?;
            steps.push((Time(t.0), r));
        }
        Schedule::new(steps, name)
    }

    fn index_at(&self, t: Time) -> usize {
        self.steps.partition_point(|(s, _)| *s <= t) - 1
    }

    pub fn rate_at(&self, t: Time) -> Rate {
        self.steps[self.index_at(t)].1
    }

    /// Bytes carried in `[from, to)`.
    pub fn bytes_between(&self, from: Time, to: Time) -> f64 {
        if to <= from {
            return 0.0;
        }
        let mut total = 0.0;
        let mut i = self.index_at(from);
        let mut t = from;
        while t < to {
            let end = self.steps.get(i + 1).map_or(to, |s| s.0.min(to));
            total += self.steps[i].1.bytes_in(end - t);
            t = end;
            i += 1;
        }
        total
    }

    /// When a transmission of `bytes` that starts at `start` ends; `Time::MAX` if the schedule
    /// ends at rate 0 before it does.
    pub fn finish_time(&self, start: Time, bytes: u64) -> Time {
        let mut remaining = bytes as f64 * 8.0; // bits
        let mut i = self.index_at(start);
        let mut t = start;
        loop {
            let rate = self.steps[i].1.bps();
            let next = self.steps.get(i + 1).map(|s| s.0);
            if rate > 0.0 {
                let needed = Duration::from_secs_f64(remaining / rate);
                match next {
                    Some(n) if t + needed > n => remaining -= rate * (n - t).as_secs_f64(),
                    _ => return t + needed,
                }
            } else if next.is_none() {
                return Time::MAX;
            }
            t = next.unwrap();
            i += 1;
        }
    }
}

/// The capacity of a link over time.
#[derive(Debug, Clone)]
pub enum Capacity {
    /// No limit: packets pass at once.
    Unlimited,
    Constant(Rate),
    Schedule(Arc<Schedule>),
    Trace(Arc<MahimahiTrace>),
    /// A token-bucket shaper (Linux `tbf`): tokens accrue at `rate` up to `burst` bytes (the
    /// bucket starts full); the head packet is dequeued as soon as the bucket holds its size plus
    /// `overhead` bytes (what `tc` counts beyond the IP packet: the 14-byte Ethernet header) and
    /// is then serialised onto a line of `line_rate` (infinite: no line limit).
    TokenBucket {
        rate: Rate,
        burst: u64,
        line_rate: Rate,
        overhead: u32,
    },
}

/// Width of the window over which a trace's "current rate" is measured.
pub const TRACE_RATE_WINDOW: Duration = Duration(1_000_000_000);

impl Capacity {
    /// The highest rate the link ever serves at: a constant's rate, a schedule's largest step, a
    /// trace's busiest millisecond, a token bucket's line; `None` for an unlimited link. (RFC 8868
    /// NR-RBPDV spaces a flow's packets by their serialisation at this rate by default, so the
    /// jitter never holds a flow below what the link is serving at that moment.)
    pub fn peak_rate(&self) -> Option<Rate> {
        let rate = match self {
            Capacity::Unlimited => return None,
            Capacity::Constant(r) => *r,
            Capacity::Schedule(s) => {
                Rate(s.steps.iter().map(|&(_, r)| r.bps()).fold(0.0, f64::max))
            }
            Capacity::Trace(t) => {
                let busiest = t
                    .opportunities_ms
                    .chunk_by(|a, b| a == b)
                    .map(|run| run.len())
                    .max()
                    .unwrap_or(0);
                Rate(busiest as f64 * OPPORTUNITY_BYTES as f64 * 8.0 * 1e3)
            }
            Capacity::TokenBucket { line_rate, .. } => *line_rate,
        };
        Some(rate).filter(|r| r.bps().is_finite() && r.bps() > 0.0)
    }

    /// Bytes the link can carry in `[from, to)` (infinite for `Unlimited`).
    pub fn bytes_between(&self, from: Time, to: Time) -> f64 {
        if to <= from {
            return 0.0;
        }
        match self {
            Capacity::Unlimited => f64::INFINITY,
            Capacity::Constant(r) => r.bytes_in(to - from),
            // The long-run rate; the initial burst is not counted as capacity.
            Capacity::TokenBucket { rate, .. } => rate.bytes_in(to - from),
            Capacity::Schedule(s) => s.bytes_between(from, to),
            Capacity::Trace(tr) => {
                (tr.opportunities_before(to) - tr.opportunities_before(from)) as f64
                    * OPPORTUNITY_BYTES as f64
            }
        }
    }

    /// The link's rate "now": exact for constant and scheduled links; for a trace, the mean over
    /// the surrounding second `[t - 0.5 s, t + 0.5 s)` (clamped at 0), used to size queues given
    /// in milliseconds.
    pub fn rate_at(&self, t: Time) -> Rate {
        match self {
            Capacity::Unlimited => Rate(f64::INFINITY),
            Capacity::Constant(r) | Capacity::TokenBucket { rate: r, .. } => *r,
            Capacity::Schedule(s) => s.rate_at(t),
            Capacity::Trace(_) => {
                let half = Duration(TRACE_RATE_WINDOW.0 / 2);
                let from = Time(t.0.saturating_sub(half.0));
                let to = from + TRACE_RATE_WINDOW;
                Rate(self.bytes_between(from, to) * 8.0 / TRACE_RATE_WINDOW.as_secs_f64())
            }
        }
    }
}

impl crate::cc::CapacityView for Capacity {
    fn bytes_between(&self, from: Time, to: Time) -> f64 {
        Capacity::bytes_between(self, from, to)
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn peak_rate_is_the_fastest_the_link_ever_serves() {
        assert_eq!(Capacity::Unlimited.peak_rate(), None);
        assert_eq!(
            Capacity::Constant(Rate::from_mbps(2.0)).peak_rate(),
            Some(Rate::from_mbps(2.0))
        );
        let steps = vec![
            (Time::ZERO, Rate::from_mbps(1.0)),
            (Time::from_millis(40_000), Rate::from_mbps(2.5)),
            (Time::from_millis(60_000), Rate::from_mbps(0.6)),
        ];
        let s = Capacity::Schedule(Arc::new(Schedule::new(steps, "s").unwrap()));
        assert_eq!(s.peak_rate(), Some(Rate::from_mbps(2.5)));
        // Two opportunities in ms 3: 2 × 1500 B per ms = 24 Mbit/s.
        let t = MahimahiTrace::parse("1\n3\n3\n7\n", "t").unwrap();
        assert_eq!(Capacity::Trace(Arc::new(t)).peak_rate(), Some(Rate(24e6)));
    }
    use super::*;

    #[cfg(unix)]
    #[test]
    fn an_endless_file_is_an_error_not_an_exhausted_memory() {
        let e = MahimahiTrace::from_file(Path::new("/dev/zero")).unwrap_err();
        assert!(e.reason.contains("larger than 64 MiB"), "{e}");
        let e = Schedule::from_file(Path::new("/dev/zero")).unwrap_err();
        assert!(e.reason.contains("larger than 64 MiB"), "{e}");
    }

    #[test]
    fn offsets_too_large_to_time_are_rejected_and_times_never_wrap() {
        // A two-line trace `1` / `18446744073710` (a 2400 bit/s link) used to wrap
        // `opportunity_time` in release builds: packets departed before they were queued.
        let e = MahimahiTrace::parse(
            "1
18446744073710
",
            "a.trace",
        )
        .unwrap_err();
        assert!(e.line == 2 && e.reason.contains("largest accepted"), "{e}");
        let e = MahimahiTrace::parse(
            "7777777777777
",
            "a.trace",
        )
        .unwrap_err();
        assert_eq!(e.line, 1, "{e}");
        let t = MahimahiTrace::parse(
            &format!(
                "1
{MAX_TRACE_OFFSET_MS}
"
            ),
            "a.trace",
        )
        .unwrap();
        assert!(t.opportunity_time(3) > t.opportunity_time(2));
        assert_eq!(
            t.opportunity_time(u64::MAX),
            Time(u64::MAX),
            "saturates: never"
        );
    }

    #[test]
    fn rejects_malformed_traces_with_file_and_line() {
        let e = MahimahiTrace::parse("", "a.trace").unwrap_err();
        assert_eq!((e.line, e.reason.contains("empty")), (0, true));
        let e = MahimahiTrace::parse("1\n2\nx3\n", "a.trace").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.to_string().starts_with("a.trace:3:"), "{e}");
        let e = MahimahiTrace::parse("1\n5\n4\n", "a.trace").unwrap_err();
        assert!(e.line == 3 && e.reason.contains("decrease"), "{e}");
        let e = MahimahiTrace::parse("0\n0\n", "a.trace").unwrap_err();
        assert!(e.line == 2 && e.reason.contains("last offset is 0"), "{e}");
        let e = MahimahiTrace::parse("1\n-2\n", "a.trace").unwrap_err();
        assert_eq!(e.line, 2);
    }

    #[test]
    fn counts_looped_opportunities_like_mahimahi() {
        // Opportunities at 0, 1, 1, 3 (period 3): looped → 0,1,1,3 | 3,4,4,6 | 6,7,7,9 ...
        let tr = MahimahiTrace::parse("0\n1\n1\n3\n", "t").unwrap();
        let times: Vec<u64> = (0..9)
            .map(|j| tr.opportunity_time(j).0 / NS_PER_MS)
            .collect();
        assert_eq!(times, vec![0, 1, 1, 3, 3, 4, 4, 6, 6]);
        for (j, &ms) in times.iter().enumerate() {
            // Opportunities strictly before the time of opportunity j are those with smaller
            // times: j minus the number of earlier ones at the same millisecond.
            let same_before = times[..j].iter().filter(|&&m| m == ms).count() as u64;
            assert_eq!(
                tr.opportunities_before(Time(ms * NS_PER_MS)),
                j as u64 - same_before
            );
            assert!(tr.opportunities_before(Time(ms * NS_PER_MS + 1)) > j as u64);
        }
        assert_eq!(tr.mean_rate(), Rate(4.0 * 1500.0 * 8.0 / 0.003));
        let cap = Capacity::Trace(Arc::new(tr));
        // [0, 9 ms) holds 0,1,1,3 | 3,4,4,6 | 6,7,7: 11 opportunities (the one at 9 is not in).
        assert_eq!(
            cap.bytes_between(Time::ZERO, Time(9 * NS_PER_MS)),
            11.0 * 1500.0
        );
        assert_eq!(
            cap.bytes_between(Time::ZERO, Time(9 * NS_PER_MS + 1)),
            13.0 * 1500.0,
            "two at 9 ms"
        );
    }

    #[test]
    fn schedules_parse_integrate_and_finish() {
        let s = Schedule::parse("# step\n0s 8Mbps\n1s 0bps\n2s 4Mbps\n", "s").unwrap();
        assert_eq!(s.rate_at(Time::from_millis(1500)), Rate(0.0));
        let b = s.bytes_between(Time::from_millis(500), Time::from_millis(2500));
        assert!((b - (0.5 * 1e6 + 0.5 * 0.5e6)).abs() < 1e-6);
        // 1 MB starting at 0: 1 Mbyte at 8 Mbps = 1 s exactly, ends at the outage boundary.
        assert_eq!(
            s.finish_time(Time::ZERO, 1_000_000),
            Time::from_millis(1000)
        );
        // 1.25 MB: 1 MB before the outage, 0.25 MB at 4 Mbps after it = 0.5 s.
        assert_eq!(
            s.finish_time(Time::ZERO, 1_250_000),
            Time::from_millis(2500)
        );
        let e = Schedule::parse("1s 8Mbps\n", "s").unwrap_err();
        assert!(e.reason.contains("first step"), "{e}");
        let e = Schedule::parse("0s 8Mbps\n0s 1Mbps\n", "s").unwrap_err();
        assert_eq!(e.line, 2);
        let e = Schedule::parse("0s 8Mbs\n", "s").unwrap_err();
        assert!(e.line == 1 && e.reason.contains("Mbps"), "{e}");
        let stop = Schedule::parse("0s 8Mbps\n1s 0bps\n", "s").unwrap();
        assert_eq!(stop.finish_time(Time::ZERO, 2_000_000), Time::MAX);
    }
}
