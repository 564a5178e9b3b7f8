//! `cargo bench`: the two standard simulator benchmarks and the scaling cases (see
//! `rtcc_sim::bench`; one case alone: `cargo bench -p rtcc-sim -- scaling/flows-1000`), and the
//! run folder's logs built and written as Parquet (`rtcc_sim::tables`) for the first of them.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rtcc_sim::{bench, run, tables};

fn simulate(c: &mut Criterion) {
    let mut group = c.benchmark_group("simulate_60s");
    group.sample_size(10);
    for case in bench::CASES {
        let sc = bench::scenario(case).unwrap();
        let packets = run(&sc, None, &mut |_| {}).unwrap().delivered_packets();
        group.throughput(Throughput::Elements(packets as u64));
        group.bench_function(*case, |b| b.iter(|| run(&sc, None, &mut |_| {}).unwrap()));
    }
    group.finish();
}

/// Each scaling case as a whole run (its packet log streamed and dropped), in packets per second.
fn scaling(c: &mut Criterion) {
    let mut group = c.benchmark_group("scaling");
    group.sample_size(10);
    for case in bench::SCALING_CASES {
        let packets = bench::run_case(case).unwrap().packets;
        group.throughput(Throughput::Elements(packets as u64));
        group.bench_function(*case, |b| b.iter(|| bench::run_case(case).unwrap()));
    }
    group.finish();
}

/// The learning environment: 16 simulations stepped every 60 ms with the mmsys24 observation, in
/// environment steps per second.
fn env_steps(c: &mut Criterion) {
    let mut group = c.benchmark_group("env");
    group.sample_size(10);
    let steps = rtcc_sim::env::bench(16).unwrap().steps;
    group.throughput(Throughput::Elements(steps));
    group.bench_function("mmsys24x16", |b| {
        b.iter(|| rtcc_sim::env::bench(16).unwrap())
    });
    group.finish();
}

fn write_logs(c: &mut Criterion) {
    let sc = bench::scenario("single").unwrap();
    let result = run(&sc, None, &mut |_| {}).unwrap();
    let end = rtcc_core::Time(sc.duration.0);
    let dir = std::env::temp_dir().join(format!("rtcc-bench-logs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut group = c.benchmark_group("parquet_logs");
    group.sample_size(10);
    let sent: usize = result.flows.iter().map(|f| f.packets.len()).sum();
    group.throughput(Throughput::Elements(sent as u64));
    group.bench_function("single", |b| {
        b.iter(|| {
            let packets = tables::table(&result, end, "packets").unwrap();
            tables::write_parquet(&dir.join("packets.parquet"), &packets).unwrap();
            tables::write_logs(&dir, &result, end).unwrap();
        })
    });
    group.finish();
    std::fs::remove_dir_all(&dir).unwrap();
}

criterion_group!(benches, simulate, scaling, env_steps, write_logs);
criterion_main!(benches);
