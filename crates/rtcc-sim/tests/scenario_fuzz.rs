//! Property test of the scenario files users write (the stable, bounded twin of the `scenario`
//! cargo-fuzz target in `fuzz/`): the shipped scenarios, mutated 50,000 times with seeded
//! random edits (hostile numbers and units, deleted, duplicated and swapped lines, truncation,
//! random bytes, deep nesting). A scenario either parses, with a finite size estimate, or is
//! rejected with an error that names the file; the parser never panics (tests build with
//! overflow checks).

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use rtcc_sim::Scenario;
use std::path::{Path, PathBuf};

const INPUTS: usize = 50_000;

const PIECES: &[&str] = &[
    "1e300Gbps",
    "-1s",
    "NaN",
    "inf",
    "18446744073709551616",
    "0",
    "0s",
    "0kbps",
    "\"\"",
    "[]",
    "{}",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
    "\"1e9s\"",
    "\"999999GB\"",
    "\"10000Gbps\"",
    "\"1ns\"",
    "\"codel\"",
    "{ kind = \"pie\", target = \"-5ms\" }",
    "\"/dev/zero\"",
    "true",
    "=",
    "\n[[flows]]\n",
    "\n[path.forward]\n",
    "kind = \"tcp\"",
    "kind = \"cbr\"",
    "controller = \"nope\"",
    "active = [[\"5s\", \"1s\"]]",
    "min_bitrate = \"2Mbps\"",
    "max_bitrate = \"1kbps\"",
    "fps = 1e9",
];

fn corpus() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments");
    let mut out = Vec::new();
    for dir in std::fs::read_dir(&root).unwrap() {
        for f in std::fs::read_dir(dir.unwrap().path()).unwrap() {
            let path = f.unwrap().path();
            let text = match path.extension().and_then(|e| e.to_str()) {
                Some("toml") => std::fs::read_to_string(&path).unwrap(),
                _ => continue,
            };
            if !text.contains("[sweep") {
                out.push((path, text));
            }
        }
    }
    assert!(out.len() >= 8, "{} shipped scenarios", out.len());
    out
}

fn below(rng: &mut ChaCha8Rng, n: usize) -> usize {
    (rng.next_u64() % n as u64) as usize
}

fn mutate(rng: &mut ChaCha8Rng, text: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for _ in 0..1 + below(rng, 4) {
        if lines.is_empty() {
            lines.push(String::new());
        }
        let i = below(rng, lines.len());
        match below(rng, 7) {
            // Replace a value.
            0 => {
                if let Some(eq) = lines[i].find('=') {
                    let piece = PIECES[below(rng, PIECES.len())];
                    lines[i] = format!("{}= {piece}", &lines[i][..eq]);
                }
            }
            1 => {
                lines.remove(i);
            }
            2 => {
                let l = lines[i].clone();
                lines.insert(i, l);
            }
            3 => {
                let j = below(rng, lines.len());
                lines.swap(i, j);
            }
            4 => lines.insert(i, PIECES[below(rng, PIECES.len())].to_string()),
            // Cut a line short.
            5 => {
                let cut = below(rng, lines[i].len() + 1);
                let cut = (0..=cut)
                    .rev()
                    .find(|&c| lines[i].is_char_boundary(c))
                    .unwrap_or(0);
                lines[i].truncate(cut);
            }
            // Random printable bytes inside a line.
            _ => {
                let mut l = lines[i].clone().into_bytes();
                for _ in 0..1 + below(rng, 4) {
                    let at = below(rng, l.len() + 1);
                    l.insert(at, b' ' + below(rng, 95) as u8);
                }
                lines[i] = String::from_utf8_lossy(&l).into_owned();
            }
        }
    }
    lines.join("\n")
}

#[test]
fn scenario_files_parse_or_fail_with_a_named_error_never_a_panic() {
    let corpus = corpus();
    let mut rng = ChaCha8Rng::seed_from_u64(0x5CE7_A210);
    let (mut parsed, mut rejected) = (0usize, 0usize);
    for _ in 0..INPUTS {
        let (path, text) = &corpus[below(&mut rng, corpus.len())];
        let input = mutate(&mut rng, text);
        let base = path.parent().unwrap();
        match Scenario::from_toml_str(&input, base, "fuzz.toml", None) {
            Ok(sc) => {
                parsed += 1;
                let packets = sc.estimated_packets();
                assert!(
                    packets.is_finite() && packets >= 0.0,
                    "{packets} for\n{input}"
                );
            }
            Err(e) => {
                rejected += 1;
                let message = e.to_string();
                assert!(message.starts_with("fuzz.toml"), "{message}\nfor\n{input}");
            }
        }
    }
    eprintln!("{INPUTS} mutated scenarios: {parsed} parsed, {rejected} rejected");
    assert!(
        parsed > 1000 && rejected > 1000,
        "{parsed} parsed, {rejected} rejected"
    );
}
