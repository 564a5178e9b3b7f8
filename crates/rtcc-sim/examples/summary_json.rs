//! Print a scenario's `Summary::to_json()`: `cargo run --release -p rtcc-sim --example
//! summary_json -- <scenario.toml>`. Used to check that a change leaves existing results
//! byte-identical (diff the output before and after).

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: summary_json <scenario.toml>");
    let sc = rtcc_sim::Scenario::from_file(std::path::Path::new(&path))
        .unwrap_or_else(|e| panic!("{e}"));
    let r = rtcc_sim::run::run(&sc, None, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    print!("{}", r.summary.to_json());
}
