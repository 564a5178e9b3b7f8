//! A scenario file: any text is a scenario or an error that names where it is wrong; never a
//! panic. (Files it refers to are looked up in an empty folder, so they are errors too.)
#![no_main]
use libfuzzer_sys::fuzz_target;
use rtcc_sim::Scenario;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let dir = std::path::Path::new("/nonexistent-rtcc-fuzz");
    if let Ok(sc) = Scenario::from_toml_str(text, dir, "fuzz.toml", None) {
        // A valid scenario also has a finite size estimate.
        let _ = sc.estimated_packets();
    }
});
