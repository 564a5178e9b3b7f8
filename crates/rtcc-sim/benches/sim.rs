//! `cargo bench`: the two standard simulator benchmarks (see `rtcc_sim::bench`).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rtcc_sim::{bench, run};

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

criterion_group!(benches, simulate);
criterion_main!(benches);
