//! Whether the shared cellular traces are present, so that the tests that need them are reported
//! as ignored (visible in `cargo test` output) instead of passing without checking anything.

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(shared_traces)");
    println!("cargo::rerun-if-env-changed=RTCC_TRACES");
    let dir = std::env::var_os("RTCC_TRACES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let manifest = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it");
            PathBuf::from(manifest).join("../../../shared/traces/mahimahi")
        });
    println!("cargo::rerun-if-changed={}", dir.display());
    if dir.is_dir() {
        println!("cargo::rustc-cfg=shared_traces");
    }
}
