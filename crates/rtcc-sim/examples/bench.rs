fn main() {
    for case in rtcc_sim::bench::CASES {
        let r = rtcc_sim::bench::run_case(case).unwrap();
        println!("{r:?}");
    }
}
