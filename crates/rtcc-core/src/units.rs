//! Physical units: time, durations, rates and sizes, with parsing of the way people write them.
//!
//! - [`Time`] is an instant in nanoseconds since the start of a run (or of any clock the caller
//!   owns: the core never reads a clock, every function takes `now`).
//! - [`Duration`] is a non-negative span in nanoseconds.
//! - [`Rate`] is bits per second as `f64` (controllers do arithmetic on it).
//! - [`Bytes`] is a byte count.
//!
//! Parsing accepts a number followed by a unit, with optional white space: `"20Mbps"`,
//! `"500 kbps"`, `"40ms"`, `"1.5s"`, `"1.5MB"`, `"1200B"`. Prefixes are decimal (SI): k = 10³,
//! M = 10⁶, G = 10⁹, for both bits and bytes (so `"1.5MB"` is 1 500 000 bytes), because that is
//! how link rates and trace capacities are quoted. `KiB`/`MiB` are accepted for binary sizes.
//! A bare number is rejected: a unit is always required, so `capacity = 20` cannot silently mean
//! 20 bit/s.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A parse error that names the input and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} {input:?}: {reason}")]
pub struct UnitError {
    pub what: &'static str,
    pub input: String,
    pub reason: String,
}

const NS_PER_MS: u64 = 1_000_000;
const NS_PER_S: u64 = 1_000_000_000;

/// The earlier of two optional instants (`None`: never), for combining timers.
#[inline]
pub fn earliest(a: Option<Time>, b: Option<Time>) -> Option<Time> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// An instant, in nanoseconds on the caller's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(pub u64);

/// A non-negative span of time, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(pub u64);

/// A rate in bits per second.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Rate(pub f64);

/// A size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bytes(pub u64);

/// `x.round() as u64` (halves away from zero, negatives and NaN to 0, saturating) without a
/// call into the software `round` of targets without SSE4.1: it runs several times per packet.
#[inline]
pub fn round_to_u64(x: f64) -> u64 {
    let whole = x as u64; // truncates; saturates; NaN and negatives give 0
                          // Exact for |x| < 2^53; above that x is an integer and the fraction is 0.
    if x - whole as f64 >= 0.5 {
        whole.saturating_add(1)
    } else {
        whole
    }
}

impl Time {
    pub const ZERO: Time = Time(0);
    pub const MAX: Time = Time(u64::MAX);
    pub fn from_secs_f64(s: f64) -> Time {
        Time(round_to_u64(s * NS_PER_S as f64))
    }
    pub fn from_millis(ms: u64) -> Time {
        Time(ms * NS_PER_MS)
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NS_PER_S as f64
    }
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / NS_PER_MS as f64
    }
    /// `self - earlier`, or zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Time) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
    /// Signed difference `self - other` in seconds (clocks of different hosts may be offset).
    pub fn secs_since(self, other: Time) -> f64 {
        (self.0 as i128 - other.0 as i128) as f64 / NS_PER_S as f64
    }
}

impl Duration {
    pub const ZERO: Duration = Duration(0);
    pub fn from_secs_f64(s: f64) -> Duration {
        Duration(round_to_u64(s.max(0.0) * NS_PER_S as f64))
    }
    pub fn from_millis(ms: u64) -> Duration {
        Duration(ms * NS_PER_MS)
    }
    pub fn from_micros(us: u64) -> Duration {
        Duration(us * 1_000)
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NS_PER_S as f64
    }
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / NS_PER_MS as f64
    }
}

impl Rate {
    pub const ZERO: Rate = Rate(0.0);
    pub fn bps(self) -> f64 {
        self.0
    }
    pub fn from_kbps(k: f64) -> Rate {
        Rate(k * 1e3)
    }
    pub fn from_mbps(m: f64) -> Rate {
        Rate(m * 1e6)
    }
    pub fn mbps(self) -> f64 {
        self.0 / 1e6
    }
    /// Time to serialise `bytes` at this rate (infinite rates and zero rates are the caller's
    /// problem: a zero rate gives `Duration(u64::MAX)`).
    pub fn transmit_time(self, bytes: u64) -> Duration {
        if self.0 <= 0.0 {
            return Duration(u64::MAX);
        }
        Duration(round_to_u64(
            (bytes as f64 * 8.0) / self.0 * NS_PER_S as f64,
        ))
    }
    /// Bytes carried at this rate over `d`.
    pub fn bytes_in(self, d: Duration) -> f64 {
        self.0 * d.as_secs_f64() / 8.0
    }
    pub fn min(self, other: Rate) -> Rate {
        Rate(self.0.min(other.0))
    }
    pub fn max(self, other: Rate) -> Rate {
        Rate(self.0.max(other.0))
    }
}

impl Add<Duration> for Time {
    type Output = Time;
    fn add(self, d: Duration) -> Time {
        Time(self.0.saturating_add(d.0))
    }
}
impl AddAssign<Duration> for Time {
    fn add_assign(&mut self, d: Duration) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub<Time> for Time {
    type Output = Duration;
    /// Saturating: an instant minus a later one is zero.
    fn sub(self, other: Time) -> Duration {
        Duration(self.0.saturating_sub(other.0))
    }
}
impl Add for Duration {
    type Output = Duration;
    fn add(self, d: Duration) -> Duration {
        Duration(self.0.saturating_add(d.0))
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing

/// The largest rate a scenario may give: 10 Tbit/s, far above any link rtcc simulates, and small
/// enough that every byte count and transmit time derived from it stays exact.
pub const MAX_RATE: Rate = Rate(1e13);
/// The longest duration a scenario may give: 10⁶ s (about 11.6 days).
pub const MAX_DURATION: Duration = Duration(1_000_000 * NS_PER_S);
/// The largest size a scenario may give: 1 TB.
pub const MAX_BYTES: Bytes = Bytes(1_000_000_000_000);

/// `value` (already in base units) if it is within `max`, else an error naming the bound.
fn bounded(
    what: &'static str,
    input: &str,
    value: f64,
    max: f64,
    max_text: &str,
) -> Result<f64, UnitError> {
    if value.is_finite() && value <= max {
        Ok(value)
    } else {
        Err(UnitError {
            what,
            input: input.to_string(),
            reason: format!("above the largest accepted {what}, {max_text}"),
        })
    }
}

/// Split `"1.5 MB"` into `(1.5, "MB")`.
fn split_number(what: &'static str, input: &str) -> Result<(f64, String), UnitError> {
    let s = input.trim();
    let err = |reason: &str| UnitError {
        what,
        input: input.to_string(),
        reason: reason.to_string(),
    };
    let end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == '-' || *c == '+' || *c == 'e'))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    // 'e' is only part of the number when followed by a digit (1e6), not in "1.5 e..." units.
    let (num, unit) = s.split_at(end);
    if num.is_empty() {
        return Err(err("expected a number followed by a unit"));
    }
    let value: f64 = num
        .parse()
        .map_err(|_| err(&format!("{num:?} is not a number")))?;
    if !value.is_finite() {
        return Err(err("the number must be finite"));
    }
    if value < 0.0 {
        return Err(err("the value must not be negative"));
    }
    Ok((value, unit.trim().to_string()))
}

/// A unit as written, what it means, and its scale.
type UnitSpelling = (&'static str, &'static str, f64);

/// The scale of `unit` among `units` (exact spelling only), or the error: for a unit that is one
/// of them in another case (`mbps`: `m` is milli), a near misspelling (`Mbs`), or one of the
/// `ambiguous` spellings (`1m`: minutes or milliseconds?), the error names what it may have meant.
fn scale_of(
    what: &'static str,
    input: &str,
    value: f64,
    unit: &str,
    units: &[UnitSpelling],
    ambiguous: &[(&str, &[&str])],
    allowed: &str,
) -> Result<f64, UnitError> {
    if let Some(&(_, _, scale)) = units.iter().find(|(u, ..)| *u == unit) {
        return Ok(scale);
    }
    let number = format!("{value}"); // as written back in a suggestion: 5, 1.5
    let meaning = |u: &str| {
        units
            .iter()
            .find(|(spelling, ..)| *spelling == u)
            .map_or(String::new(), |(_, m, _)| format!(" ({m})"))
    };
    let reason = if let Some((_, options)) = ambiguous.iter().find(|(u, _)| *u == unit) {
        let options: Vec<String> = options
            .iter()
            .map(|o| format!("\"{number}{o}\"{}", meaning(o)))
            .collect();
        format!(
            "{unit:?} is ambiguous: did you mean {}?",
            options.join(" or ")
        )
    } else if let Some(&(right, m, _)) = units
        .iter()
        .find(|(u, ..)| u.eq_ignore_ascii_case(unit))
        .or_else(|| {
            // One edit away from a unit (a letter missing, extra, wrong or two swapped).
            units
                .iter()
                .find(|(u, ..)| unit.len() > 1 && strsim::osa_distance(u, unit) == 1)
        })
    {
        let hint = match unit.chars().next() {
            Some('m') if right.starts_with('M') => " (\"m\" is milli)",
            Some('K') if right.starts_with('k') => " (the kilo prefix is \"k\")",
            _ if unit.ends_with('b') && right.ends_with('B') => " (\"b\" is bits, a size is bytes)",
            _ => "",
        };
        format!("unknown unit {unit:?}{hint}: did you mean \"{number}{right}\" ({m})?")
    } else {
        allowed.to_string()
    };
    Err(UnitError {
        what,
        input: input.into(),
        reason,
    })
}

impl Duration {
    /// Parse `"40ms"`, `"1.5s"`, `"250us"`, `"10ns"`, `"2min"`.
    pub fn parse(input: &str) -> Result<Duration, UnitError> {
        const ALLOWED: &str =
            "expected a duration with a unit: ns, us, ms, s or min (e.g. \"40ms\")";
        let (v, unit) = split_number("duration", input)?;
        const UNITS: &[UnitSpelling] = &[
            ("ns", "nanoseconds", 1.0),
            ("us", "microseconds", 1e3),
            ("µs", "microseconds", 1e3),
            ("ms", "milliseconds", 1e6),
            ("s", "seconds", 1e9),
            ("sec", "seconds", 1e9),
            ("min", "minutes", 60e9),
        ];
        let ambiguous: &[(&str, &[&str])] = &[("m", &["min", "ms"]), ("M", &["min", "ms"])];
        let scale = scale_of("duration", input, v, &unit, UNITS, ambiguous, ALLOWED)?;
        let ns = bounded(
            "duration",
            input,
            v * scale,
            MAX_DURATION.0 as f64,
            "1000000s (about 11.6 days)",
        )?;
        Ok(Duration(round_to_u64(ns)))
    }
}

impl Rate {
    /// Parse `"20Mbps"`, `"500kbps"`, `"1.2Gbps"`, `"64bps"` (also `Mbit/s`, `kbit/s`).
    pub fn parse(input: &str) -> Result<Rate, UnitError> {
        const ALLOWED: &str =
            "expected a rate with a unit: bps, kbps, Mbps or Gbps (e.g. \"20Mbps\")";
        let (v, unit) = split_number("rate", input)?;
        if matches!(unit.as_str(), "MBps" | "kBps" | "KBps" | "GBps" | "B/s") {
            return Err(UnitError {
                what: "rate",
                input: input.into(),
                reason: "byte rates are not accepted, write bits per second (e.g. \"8Mbps\")"
                    .into(),
            });
        }
        const UNITS: &[UnitSpelling] = &[
            ("bps", "bits per second", 1.0),
            ("bit/s", "bits per second", 1.0),
            ("kbps", "kilobits per second", 1e3),
            ("kbit/s", "kilobits per second", 1e3),
            ("Mbps", "megabits per second", 1e6),
            ("Mbit/s", "megabits per second", 1e6),
            ("Gbps", "gigabits per second", 1e9),
            ("Gbit/s", "gigabits per second", 1e9),
        ];
        let scale = scale_of("rate", input, v, &unit, UNITS, &[], ALLOWED)?;
        Ok(Rate(bounded(
            "rate",
            input,
            v * scale,
            MAX_RATE.0,
            "10000Gbps",
        )?))
    }
}

impl Bytes {
    /// Parse `"1200B"`, `"1.5MB"`, `"150KB"` (decimal), `"64KiB"` (binary).
    pub fn parse(input: &str) -> Result<Bytes, UnitError> {
        const ALLOWED: &str =
            "expected a size with a unit: B, KB, MB, GB (decimal) or KiB, MiB (e.g. \"1.5MB\")";
        let (v, unit) = split_number("size", input)?;
        const UNITS: &[UnitSpelling] = &[
            ("B", "bytes", 1.0),
            ("bytes", "bytes", 1.0),
            ("KB", "kilobytes", 1e3),
            ("kB", "kilobytes", 1e3),
            ("MB", "megabytes", 1e6),
            ("GB", "gigabytes", 1e9),
            ("KiB", "kibibytes", 1024.0),
            ("MiB", "mebibytes", 1024.0 * 1024.0),
        ];
        let scale = scale_of("size", input, v, &unit, UNITS, &[], ALLOWED)?;
        let bytes = bounded("size", input, v * scale, MAX_BYTES.0 as f64, "1000GB")?;
        if bytes.fract() != 0.0 {
            return Err(UnitError {
                what: "size",
                input: input.into(),
                reason: "a size must be a whole number of bytes".into(),
            });
        }
        Ok(Bytes(bytes as u64))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b >= 1e9 {
            write!(f, "{}Gbps", b / 1e9)
        } else if b >= 1e6 {
            write!(f, "{}Mbps", b / 1e6)
        } else if b >= 1e3 {
            write!(f, "{}kbps", b / 1e3)
        } else {
            write!(f, "{b}bps")
        }
    }
}
impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        if n.is_multiple_of(NS_PER_S) && n > 0 {
            write!(f, "{}s", n / NS_PER_S)
        } else if n.is_multiple_of(NS_PER_MS) {
            write!(f, "{}ms", n / NS_PER_MS)
        } else if n.is_multiple_of(1000) {
            write!(f, "{}us", n / 1000)
        } else {
            write!(f, "{n}ns")
        }
    }
}
impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}B", self.0)
    }
}

// serde: units are strings with a unit; a bare number is an error that says so.
macro_rules! unit_serde {
    ($ty:ty, $what:literal, $example:literal) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl serde::de::Visitor<'_> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        write!(f, "a {} string with a unit, like {:?}", $what, $example)
                    }
                    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<$ty, E> {
                        <$ty>::parse(v).map_err(E::custom)
                    }
                    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<$ty, E> {
                        Err(E::custom(format!(
                            "{v} has no unit: write a {} with its unit, like {:?}",
                            $what, $example
                        )))
                    }
                    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<$ty, E> {
                        self.visit_i64(v as i64)
                    }
                    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<$ty, E> {
                        Err(E::custom(format!(
                            "{v} has no unit: write a {} with its unit, like {:?}",
                            $what, $example
                        )))
                    }
                }
                d.deserialize_any(V)
            }
        }
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    };
}
unit_serde!(Rate, "rate", "20Mbps");
unit_serde!(Duration, "duration", "40ms");
unit_serde!(Bytes, "size", "1200B");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_in_the_wrong_case_or_ambiguous_are_refused_with_what_was_meant() {
        let reason = |r: Result<(), UnitError>| r.unwrap_err().reason;
        let rate = |s: &str| reason(Rate::parse(s).map(|_| ()));
        let dur = |s: &str| reason(Duration::parse(s).map(|_| ()));
        let size = |s: &str| reason(Bytes::parse(s).map(|_| ()));
        // SI: m is milli; 5mbps used to be read as 5 Mbit/s without a word.
        let r = rate("5mbps");
        assert!(
            r.contains("\"5Mbps\" (megabits per second)") && r.contains("milli"),
            "{r}"
        );
        assert!(
            rate("2.5Kbps").contains("\"2.5kbps\""),
            "{}",
            rate("2.5Kbps")
        );
        assert!(rate("1gbps").contains("\"1Gbps\""));
        assert!(rate("20Mbs").contains("\"20Mbps\""), "one letter missing");
        assert!(rate("8MBps").contains("byte rates"));
        assert!(rate("20").contains("expected a rate with a unit"));
        assert!(dur("40MS").contains("\"40ms\" (milliseconds)"));
        let m = dur("1m");
        assert!(
            m.contains("ambiguous") && m.contains("\"1min\"") && m.contains("\"1ms\""),
            "{m}"
        );
        assert!(dur("2mins").contains("\"2min\""));
        assert!(size("1500b").contains("\"1500B\" (bytes)") && size("1500b").contains("bits"));
        assert!(
            size("64kb").contains("\"64KB\" (kilobytes)"),
            "{}",
            size("64kb")
        );
        // The exact spellings still parse.
        assert_eq!(Rate::parse("5Mbps").unwrap().bps(), 5e6);
        assert_eq!(Rate::parse("5 kbit/s").unwrap().bps(), 5e3);
        assert_eq!(
            Duration::parse("2min").unwrap(),
            Duration::from_millis(120_000)
        );
        assert_eq!(Bytes::parse("64kB").unwrap(), Bytes(64_000));
    }

    #[test]
    fn magnitudes_beyond_the_documented_bounds_are_errors() {
        // "1e300Gbps" used to parse to infinity and become an unlimited link.
        for bad in ["1e300Gbps", "10001Gbps", "1e14bps"] {
            let e = Rate::parse(bad).unwrap_err();
            assert!(
                e.to_string().contains("largest accepted rate"),
                "{bad}: {e}"
            );
        }
        assert_eq!(Rate::parse("10000Gbps").unwrap(), MAX_RATE);
        for bad in ["1e9s", "1000001s", "1e300ms", "20000min"] {
            let e = Duration::parse(bad).unwrap_err();
            assert!(
                e.to_string().contains("largest accepted duration"),
                "{bad}: {e}"
            );
        }
        assert_eq!(Duration::parse("1000000s").unwrap(), MAX_DURATION);
        for bad in ["1001GB", "1e13B", "1e300MB"] {
            let e = Bytes::parse(bad).unwrap_err();
            assert!(
                e.to_string().contains("largest accepted size"),
                "{bad}: {e}"
            );
        }
        assert_eq!(Bytes::parse("1000GB").unwrap(), MAX_BYTES);
    }

    #[test]
    fn round_to_u64_is_round_as_u64() {
        for x in [
            0.0,
            0.49999999999999994,
            0.5,
            1.5,
            2.5,
            1e15 + 0.5,
            4503599627370497.0,
            1e19,
            1e30,
            -0.4,
            -3.0,
            f64::NAN,
            f64::INFINITY,
            123456.789,
        ] {
            assert_eq!(round_to_u64(x), x.round() as u64, "{x}");
        }
    }

    #[test]
    fn parses_rates() {
        assert_eq!(Rate::parse("20Mbps").unwrap(), Rate(20e6));
        assert_eq!(Rate::parse("500kbps").unwrap(), Rate(500e3));
        assert_eq!(Rate::parse(" 1.5 Gbps ").unwrap(), Rate(1.5e9));
        assert_eq!(Rate::parse("64bps").unwrap(), Rate(64.0));
        assert_eq!(Rate::parse("2Mbit/s").unwrap(), Rate(2e6));
    }

    #[test]
    fn parses_durations_and_sizes() {
        assert_eq!(Duration::parse("40ms").unwrap(), Duration::from_millis(40));
        assert_eq!(Duration::parse("1.5s").unwrap(), Duration(1_500_000_000));
        assert_eq!(Duration::parse("250us").unwrap(), Duration(250_000));
        assert_eq!(Bytes::parse("1.5MB").unwrap(), Bytes(1_500_000));
        assert_eq!(Bytes::parse("1200B").unwrap(), Bytes(1200));
        assert_eq!(Bytes::parse("64KiB").unwrap(), Bytes(65536));
    }

    #[test]
    fn rejects_bad_units_with_a_message_that_says_what_is_allowed() {
        let e = Rate::parse("20Mbmps").unwrap_err();
        assert!(e.to_string().contains("Mbps"), "{e}");
        let e = Rate::parse("20").unwrap_err();
        assert!(e.to_string().contains("unit"), "{e}");
        let e = Rate::parse("2MBps").unwrap_err();
        assert!(e.to_string().contains("bits per second"), "{e}");
        assert!(Duration::parse("ms").is_err());
        assert!(Duration::parse("-5ms").is_err());
        assert!(Bytes::parse("1.5B").is_err());
    }

    #[test]
    fn serde_requires_units() {
        #[derive(Deserialize, Debug)]
        struct T {
            #[allow(dead_code)]
            r: Rate,
        }
        let e = toml::from_str::<T>("r = 20").unwrap_err();
        assert!(e.to_string().contains("has no unit"), "{e}");
        let t: T = toml::from_str("r = \"1Mbps\"").unwrap();
        assert_eq!(t.r, Rate(1e6));
    }

    #[test]
    fn transmit_time_is_exact_for_round_numbers() {
        assert_eq!(
            Rate::from_mbps(10.0).transmit_time(1250),
            Duration::from_millis(1)
        );
        assert_eq!(Rate(8e6).bytes_in(Duration::from_millis(1)), 1000.0);
    }

    #[test]
    fn display_round_trips() {
        for s in ["20Mbps", "500kbps", "40ms", "2s", "1200B"] {
            let shown = if s.ends_with("bps") {
                Rate::parse(s).unwrap().to_string()
            } else if s.ends_with('B') {
                Bytes::parse(s).unwrap().to_string()
            } else {
                Duration::parse(s).unwrap().to_string()
            };
            assert_eq!(shown, s);
        }
    }
}
