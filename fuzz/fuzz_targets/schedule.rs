//! A rate schedule: any text parses or is rejected with an error naming the file; what parses
//! has finite rates.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rtcc_core::net::Schedule;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match Schedule::parse(text, "fuzz.sched") {
        Ok(s) => {
            for ms in [0u64, 1, 1000, 60_000, 3_600_000] {
                let rate = s.rate_at(rtcc_core::Time::from_millis(ms));
                assert!(rate.bps().is_finite() && rate.bps() >= 0.0, "{rate:?}");
            }
        }
        Err(e) => assert!(e.to_string().contains("fuzz.sched"), "{e}"),
    }
});
