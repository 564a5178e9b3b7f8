//! Property tests of the text parsers users feed rtcc: mahimahi traces, schedules, frame traces
//! and the quantities with units (rates, durations, sizes).
//!
//! A seeded ChaCha loop feeds [`TOTAL_INPUTS`] (1,000,000) strings in total: random printable
//! text, and mutations of valid inputs (digits inserted to make numbers huge, signs, exponents,
//! unit changes, lines swapped, dropped or duplicated). A parser must never panic (tests build
//! with overflow checks) and must reject with an error naming the line; what parses must make
//! sense: a trace's opportunity times never decrease (no wrap), a schedule's rates are finite and
//! within [`MAX_RATE`], a quantity is finite and within its documented bound.

use super::capacity::{MahimahiTrace, Schedule};
use crate::media::encoder::trace::FrameTrace;
use crate::units::{Bytes, Duration, Rate, MAX_BYTES, MAX_DURATION, MAX_RATE};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

/// Inputs fed to the parsers in total, over all targets.
const TOTAL_INPUTS: usize = 1_000_000;

/// Valid inputs to mutate, per target (trace, schedule, frame trace, rate, duration, size).
const SEEDS: [&[&str]; 6] = [
    &["1\n2\n2\n5\n10\n", "0\n0\n7777\n"],
    &[
        "0s 20Mbps\n40s 5Mbps\n60s 20Mbps\n",
        "# a comment\n0s 1.5Mbps\n\n1.5s 300kbps\n",
    ],
    &["1200\n800\n40000\n", "5\n"],
    &["20Mbps", "1.5 Gbps", "64bps"],
    &["1.5s", "40ms", "2min"],
    &["1200B", "64KiB", "1.5MB"],
];

const PIECES: &[&str] = &[
    "9",
    "99999999999999999999",
    "18446744073709551615",
    "-",
    "+",
    "e",
    "e300",
    ".",
    " ",
    "\n",
    "\r\n",
    "#",
    "s",
    "ms",
    "min",
    "Mbps",
    "Gbps",
    "bps",
    "B",
    "GB",
    "NaN",
    "inf",
    "0",
    "\t",
    "k",
];

fn below(rng: &mut ChaCha8Rng, n: usize) -> usize {
    (rng.next_u64() % n as u64) as usize
}

fn random_text(rng: &mut ChaCha8Rng) -> String {
    let len = below(rng, 60);
    (0..len)
        .map(|_| {
            if below(rng, 3) == 0 {
                PIECES[below(rng, PIECES.len())].to_string()
            } else {
                char::from(b' ' + below(rng, 95) as u8).to_string()
            }
        })
        .collect()
}

fn mutate(rng: &mut ChaCha8Rng, valid: &str) -> String {
    let mut s = valid.to_string();
    for _ in 0..1 + below(rng, 3) {
        let at = s
            .char_indices()
            .map(|(i, _)| i)
            .nth(below(rng, s.chars().count().max(1)))
            .unwrap_or(s.len());
        match below(rng, 4) {
            0 => s.insert_str(at, PIECES[below(rng, PIECES.len())]),
            1 if !s.is_empty() => {
                let end = s[at..].chars().next().map_or(at, |c| at + c.len_utf8());
                s.replace_range(at..end, "");
            }
            2 => {
                let lines: Vec<&str> = s.lines().collect();
                if !lines.is_empty() {
                    let l = lines[below(rng, lines.len())].to_string();
                    s.push('\n');
                    s.push_str(&l);
                }
            }
            _ => s.truncate(at),
        }
    }
    s
}

#[test]
fn text_parsers_survive_a_million_hostile_inputs() {
    let mut rng = ChaCha8Rng::seed_from_u64(16);
    let mut parsed = [0usize; 6];
    for n in 0..TOTAL_INPUTS {
        let target = n % 6;
        let text = if n % 12 < 6 {
            random_text(&mut rng)
        } else {
            let seed = SEEDS[target][below(&mut rng, SEEDS[target].len())];
            mutate(&mut rng, seed)
        };
        match target {
            0 => match MahimahiTrace::parse(&text, "f") {
                Ok(t) => {
                    parsed[0] += 1;
                    let mut last = t.opportunity_time(0);
                    let mut js = [
                        1,
                        2,
                        t.opportunities_ms.len() as u64,
                        1 << 20,
                        1 << 40,
                        u64::MAX,
                    ];
                    js.sort_unstable();
                    for j in js {
                        let next = t.opportunity_time(j);
                        assert!(
                            next >= last,
                            "{text:?}: opportunity {j} before the one before it"
                        );
                        last = next;
                    }
                }
                Err(e) => assert!(e.to_string().starts_with("f:"), "{e}"),
            },
            1 => match Schedule::parse(&text, "f") {
                Ok(s) => {
                    parsed[1] += 1;
                    for (_, r) in &s.steps {
                        assert!(r.bps().is_finite() && *r <= MAX_RATE, "{text:?}: {r:?}");
                    }
                }
                Err(e) => assert!(e.to_string().starts_with("f:"), "{e}"),
            },
            2 => match FrameTrace::parse(&text, "f") {
                Ok(_) => parsed[2] += 1,
                Err(e) => assert!(e.to_string().starts_with("f:"), "{e}"),
            },
            3 => {
                if let Ok(r) = Rate::parse(&text) {
                    parsed[3] += 1;
                    assert!(r.bps().is_finite() && r <= MAX_RATE, "{text:?}: {r:?}");
                }
            }
            4 => {
                if let Ok(d) = Duration::parse(&text) {
                    parsed[4] += 1;
                    assert!(d <= MAX_DURATION, "{text:?}: {d:?}");
                }
            }
            _ => {
                if let Ok(b) = Bytes::parse(&text) {
                    parsed[5] += 1;
                    assert!(b <= MAX_BYTES, "{text:?}: {b:?}");
                }
            }
        }
    }
    // The mutations keep enough inputs valid to exercise what comes after parsing.
    assert!(
        parsed.iter().all(|&p| p > 1000),
        "parsed per target: {parsed:?}"
    );
}
