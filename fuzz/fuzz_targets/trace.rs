//! A mahimahi trace: any text parses or is rejected with an error naming the file; what parses
//! has opportunities that never go back in time and never wrap.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rtcc_core::net::MahimahiTrace;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match MahimahiTrace::parse(text, "fuzz.trace") {
        Ok(t) => {
            let mut last = 0;
            for k in 0..64 {
                let at = t.opportunity_time(k).0;
                assert!(at >= last, "opportunity {k} at {at} ns before the previous at {last}");
                last = at;
            }
        }
        Err(e) => assert!(e.to_string().contains("fuzz.trace"), "{e}"),
    }
});
