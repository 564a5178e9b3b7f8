//! OpenNetLab / AlphaRTC network traces (JSON), read as a whole link: capacity, random loss and
//! propagation delay per segment.
//!
//! The format: `{"uplink": {"trace_pattern": [{"duration": <ms>, "capacity": <kbit/s>, "loss":
//! <fraction>, "rtt": <ms>, "jitter": <ms>}, ...]}, "downlink": {...}}`; other keys (`"type"`,
//! a pattern's `"time"`) are ignored. The patterns follow one another, each for its `duration`,
//! and the last holds after the trace ends (a [`Schedule`]'s rule; OpenNetLab's players loop
//! the trace instead).
//!
//! What each field means is what OpenNetLab's gym does with it (`ns-app/scratch/webrtc_test/
//! trace_player.cc`, the ns-3 simulator its learned estimators train in):
//! - `capacity`: the bottleneck's rate in kbit/s;
//! - `loss`: the probability that a packet is lost, independently per packet: a **fraction**, 0
//!   to 1 (the gym hands it to ns-3's `RateErrorModel` per packet, and its tests expect a
//!   measured loss ratio of 0.1 from `"loss": 0.1`). OpenNetLab's later netem emulator
//!   (onl-emu's `tc_setup.py`) writes it as a percentage (`netem loss <loss>%`); a value above
//!   1 is refused with a hint to divide by 100, so such a trace is never misread silently, but
//!   one whose percentages are all at most 1 cannot be told apart and is read as fractions;
//! - `rtt`: the round trip in ms, applied as `rtt / 2` of propagation delay in each direction
//!   (the gym sets the point-to-point channel's delay, which both directions share, to
//!   `rtt / 2`; onl-emu puts `delay rtt/2` on the loopback both directions cross). rtcc gives
//!   the link the trace is on `rtt / 2` ([`OpenNetLabTrace::delay`]); the reverse link follows it
//!   unless the scenario gives it a delay of its own;
//! - `jitter`: not applied by the gym (it reads no jitter); onl-emu applies it as netem's
//!   normally distributed delay variation. rtcc has no per-segment jitter, so a non-zero
//!   `jitter` is refused (the scenario's `jitter` impairment applies to the whole run instead).
//!
//! A pattern without `loss` or `rtt` keeps the previous pattern's value (as the gym does);
//! before the first one given, 0. `duration` and `capacity` are required in every pattern.

use super::capacity::{Schedule, TraceError, MAX_TRACE_OFFSET_MS};
use super::steps::Steps;
use crate::units::{Duration, Rate, Time};

/// An OpenNetLab trace's direction, read as a link.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenNetLabTrace {
    /// The patterns' capacities.
    pub capacity: Schedule,
    /// The patterns' loss probabilities; `None` when every pattern's is 0 (the trace says
    /// nothing the link does not already do).
    pub loss: Option<Steps<f64>>,
    /// The patterns' one-way propagation delays (`rtt / 2`); `None` when every pattern's `rtt`
    /// is 0 or absent.
    pub delay: Option<Steps<Duration>>,
    /// Where the first non-zero loss is given, for messages: `uplink.trace_pattern[2].loss = 0.05`.
    pub loss_source: Option<String>,
    /// Where the first non-zero rtt is given, for messages.
    pub rtt_source: Option<String>,
}

/// A field's value: absent, or a JSON number; anything else is an error naming it.
fn number(
    pattern: &serde_json::Value,
    key: &str,
    at: &str,
    err: &dyn Fn(String) -> TraceError,
) -> Result<Option<f64>, TraceError> {
    match pattern.get(key) {
        None => Ok(None),
        Some(v) => v.as_f64().map(Some).ok_or_else(|| {
            err(format!(
                "{at}.{key}: must be a number, got {}",
                json_kind(v)
            ))
        }),
    }
}

fn json_kind(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "null".into(),
        serde_json::Value::Bool(b) => format!("{b}"),
        serde_json::Value::String(s) => format!("the string {s:?}"),
        serde_json::Value::Array(_) => "a list".into(),
        serde_json::Value::Object(_) => "an object".into(),
        serde_json::Value::Number(n) => n.to_string(),
    }
}

impl OpenNetLabTrace {
    /// Read `direction` (`"uplink"` or `"downlink"`) of the trace `text`; `name` is the file, in
    /// errors. Every error names the file and, for a pattern, its direction, index and field
    /// (`t.json:0: uplink.trace_pattern[3].loss: ...`).
    pub fn parse(text: &str, direction: &str, name: &str) -> Result<OpenNetLabTrace, TraceError> {
        let err = |reason: String| TraceError {
            file: name.to_string(),
            line: 0,
            reason,
        };
        let doc: serde_json::Value = serde_json::from_str(text).map_err(|e| TraceError {
            file: name.to_string(),
            line: e.line(),
            reason: format!("not JSON: {e}"),
        })?;
        let list = format!("{direction}.trace_pattern");
        let patterns = match doc.get(direction).and_then(|d| d.get("trace_pattern")) {
            None => {
                return Err(err(format!(
                    "no \"{direction}\": {{\"trace_pattern\": [...]}} in the trace"
                )))
            }
            Some(serde_json::Value::Array(p)) if p.is_empty() => {
                return Err(err(format!(
                    "{list} is empty: a trace needs at least one pattern"
                )))
            }
            Some(serde_json::Value::Array(p)) => p,
            Some(other) => {
                return Err(err(format!(
                    "{list} must be a list of patterns, got {}",
                    json_kind(other)
                )))
            }
        };
        let (mut capacity, mut loss, mut delay) = (Vec::new(), Vec::new(), Vec::new());
        let (mut loss_source, mut rtt_source) = (None, None);
        let (mut at_ms, mut last_loss, mut last_rtt) = (0.0, 0.0, 0.0);
        for (i, p) in patterns.iter().enumerate() {
            let at = format!("{list}[{i}]");
            if !p.is_object() {
                return Err(err(format!(
                    "{at}: a pattern must be an object {{\"duration\": ms, \"capacity\": kbit/s, ...}}, got {}",
                    json_kind(p)
                )));
            }
            let field = |key: &str| number(p, key, &at, &err);
            let duration = field("duration")?
                .ok_or_else(|| err(format!("{at}: needs a \"duration\" in ms")))?;
            if duration <= 0.0 {
                return Err(err(format!(
                    "{at}.duration: must be a positive number of ms, got {duration}"
                )));
            }
            let kbps = field("capacity")?
                .ok_or_else(|| err(format!("{at}: needs a \"capacity\" in kbit/s")))?;
            if kbps < 0.0 {
                return Err(err(format!(
                    "{at}.capacity: must be at least 0 kbit/s, got {kbps}"
                )));
            }
            if let Some(l) = field("loss")? {
                if l < 0.0 {
                    return Err(err(format!(
                        "{at}.loss: must be a fraction of packets from 0 to 1, got {l}"
                    )));
                }
                if l > 1.0 {
                    return Err(err(format!(
                        "{at}.loss: {l} is more than 1; OpenNetLab's gym reads loss as a fraction \
                         of packets (0.05 is 5 %); a trace written in percent for netem (onl-emu) \
                         needs its losses divided by 100"
                    )));
                }
                last_loss = l;
                if l > 0.0 && loss_source.is_none() {
                    loss_source = Some(format!("{at}.loss = {l}"));
                }
            }
            if let Some(r) = field("rtt")? {
                if r < 0.0 {
                    return Err(err(format!("{at}.rtt: must be at least 0 ms, got {r}")));
                }
                if r > MAX_TRACE_OFFSET_MS as f64 {
                    return Err(err(format!(
                        "{at}.rtt: {r} ms is beyond the largest accepted, {MAX_TRACE_OFFSET_MS} ms"
                    )));
                }
                last_rtt = r;
                if r > 0.0 && rtt_source.is_none() {
                    rtt_source = Some(format!("{at}.rtt = {r} ms"));
                }
            }
            if let Some(j) = field("jitter")? {
                if j < 0.0 {
                    return Err(err(format!("{at}.jitter: must be at least 0 ms, got {j}")));
                }
                if j > 0.0 {
                    return Err(err(format!(
                        "{at}.jitter: {j} ms is not supported: rtcc has no jitter per segment \
                         (OpenNetLab's gym does not apply it either); set it to 0 and give the \
                         link a jitter impairment for the whole run instead"
                    )));
                }
            }
            if at_ms > MAX_TRACE_OFFSET_MS as f64 {
                return Err(err(format!(
                    "{at}: starts at {at_ms} ms, beyond the largest accepted offset, \
                     {MAX_TRACE_OFFSET_MS} ms (about 11.6 days)"
                )));
            }
            let start = Time::from_secs_f64(at_ms / 1000.0);
            // Durations too short to move the start by a nanosecond would repeat a start.
            if capacity.last().is_some_and(|&(s, _)| s >= start) {
                return Err(err(format!(
                    "{at}: the previous pattern's duration is below a nanosecond"
                )));
            }
            capacity.push((start, Rate::from_kbps(kbps)));
            loss.push((start, last_loss));
            delay.push((start, Duration::from_secs_f64(last_rtt / 2.0 / 1000.0)));
            at_ms += duration;
        }
        let loss = loss_source
            .is_some()
            .then(|| Steps::new(loss).expect("ordered"));
        let delay = rtt_source
            .is_some()
            .then(|| Steps::new(delay).expect("ordered"));
        Ok(OpenNetLabTrace {
            capacity: Schedule::new(capacity, name)?,
            loss,
            delay,
            loss_source,
            rtt_source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = r#"{"type": "video", "uplink": {"trace_pattern": [
        {"duration": 2000, "capacity": 1000, "loss": 0, "rtt": 40, "jitter": 0, "time": 0.0},
        {"duration": 500, "capacity": 300, "loss": 0.05, "rtt": 200, "jitter": 0},
        {"duration": 1000, "capacity": 2500}]}, "downlink": {}}"#;

    fn parse(text: &str) -> Result<OpenNetLabTrace, TraceError> {
        OpenNetLabTrace::parse(text, "uplink", "t.json")
    }

    #[test]
    fn every_field_of_a_pattern_counts() {
        let t = parse(TRACE).unwrap();
        let rate = |ms: u64| t.capacity.rate_at(Time::from_millis(ms)).bps();
        assert_eq!(
            (rate(0), rate(1999), rate(2000), rate(2499), rate(2500)),
            (1e6, 1e6, 3e5, 3e5, 2.5e6)
        );
        assert_eq!(rate(60_000), 2.5e6, "the last pattern holds");
        let loss = t.loss.as_ref().unwrap();
        let loss_at = |ms: u64| loss.at(Time::from_millis(ms));
        // The third pattern has no loss or rtt: it keeps the second's (OpenNetLab's gym).
        assert_eq!(
            (loss_at(1999), loss_at(2000), loss_at(9000)),
            (0.0, 0.05, 0.05)
        );
        let delay = t.delay.as_ref().unwrap();
        let delay_at = |ms: u64| delay.at(Time::from_millis(ms)).as_millis_f64();
        assert_eq!(
            (delay_at(0), delay_at(2000), delay_at(9000)),
            (20.0, 100.0, 100.0)
        );
        assert_eq!(
            t.loss_source.as_deref(),
            Some("uplink.trace_pattern[1].loss = 0.05")
        );
        assert_eq!(
            t.rtt_source.as_deref(),
            Some("uplink.trace_pattern[0].rtt = 40 ms")
        );
    }

    #[test]
    fn zero_loss_and_rtt_say_nothing() {
        let t = parse(
            r#"{"uplink": {"trace_pattern": [{"duration": 10, "capacity": 5, "loss": 0, "rtt": 0},
                {"duration": 10, "capacity": 6}]}}"#,
        )
        .unwrap();
        assert_eq!((t.loss, t.delay), (None, None));
    }

    #[test]
    fn malformed_traces_name_the_file_direction_pattern_and_field() {
        let with = |pattern: &str| {
            format!(
                r#"{{"uplink": {{"trace_pattern": [{{"duration": 10, "capacity": 5}}, {pattern}]}}}}"#
            )
        };
        for (pattern, says) in [
            (
                r#"{"duration": 10, "capacity": 5, "loss": -0.1}"#,
                "[1].loss: must be a fraction",
            ),
            (
                r#"{"duration": 10, "capacity": 5, "loss": 5}"#,
                "[1].loss: 5 is more than 1",
            ),
            (
                r#"{"duration": 10, "capacity": 5, "loss": "5%"}"#,
                "[1].loss: must be a number, got the string \"5%\"",
            ),
            (
                r#"{"duration": 10, "capacity": 5, "loss": null}"#,
                "[1].loss: must be a number, got null",
            ),
            (
                r#"{"duration": 10, "capacity": 5, "rtt": -40}"#,
                "[1].rtt: must be at least 0 ms",
            ),
            (
                r#"{"duration": 10, "capacity": 5, "rtt": "40ms"}"#,
                "[1].rtt: must be a number",
            ),
            (
                r#"{"duration": 10, "capacity": 5, "rtt": 1e12}"#,
                "[1].rtt: 1000000000000 ms is beyond",
            ),
            (
                r#"{"duration": 10, "capacity": 5, "jitter": 3}"#,
                "[1].jitter: 3 ms is not supported",
            ),
            (
                r#"{"duration": 10, "capacity": 5, "jitter": -3}"#,
                "[1].jitter: must be at least 0",
            ),
            (
                r#"{"duration": 10, "capacity": 5, "jitter": true}"#,
                "[1].jitter: must be a number, got true",
            ),
            (r#"{"capacity": 5}"#, "[1]: needs a \"duration\" in ms"),
            (
                r#"{"duration": 0, "capacity": 5}"#,
                "[1].duration: must be a positive",
            ),
            (
                r#"{"duration": [10], "capacity": 5}"#,
                "[1].duration: must be a number, got a list",
            ),
            (r#"{"duration": 10}"#, "[1]: needs a \"capacity\" in kbit/s"),
            (
                r#"{"duration": 10, "capacity": -5}"#,
                "[1].capacity: must be at least 0",
            ),
            (
                r#"{"duration": 10, "capacity": {"kbps": 5}}"#,
                "[1].capacity: must be a number, got an object",
            ),
            (r#"[10, 5]"#, "[1]: a pattern must be an object"),
        ] {
            let e = parse(&with(pattern)).unwrap_err();
            assert!(
                e.to_string().starts_with("t.json:0: uplink.trace_pattern")
                    && e.to_string().contains(says),
                "{pattern}: {e}"
            );
        }
        for (text, says) in [
            (
                r#"{"uplink": {"trace_pattern": []}}"#,
                "uplink.trace_pattern is empty",
            ),
            (
                r#"{"uplink": {"trace_pattern": {"duration": 1}}}"#,
                "must be a list of patterns, got an object",
            ),
            (r#"{"uplink": {}}"#, "no \"uplink\""),
            (
                r#"{"downlink": {"trace_pattern": [{"duration": 1, "capacity": 1}]}}"#,
                "no \"uplink\"",
            ),
            (r#"[1, 2]"#, "no \"uplink\""),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.to_string().contains(says), "{text}: {e}");
        }
        let e = parse("{\n\"uplink\": oops}").unwrap_err();
        assert!(e.line == 2 && e.reason.contains("not JSON"), "{e}");
        let e = OpenNetLabTrace::parse(TRACE, "downlink", "t.json").unwrap_err();
        assert!(e.to_string().contains("no \"downlink\""), "{e}");
    }
}
