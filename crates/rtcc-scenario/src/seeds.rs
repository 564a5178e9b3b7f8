//! Seeds: every random stream of a run (a flow's frame source and encoder, a link's queue and
//! impairments, short flows' sizes) is derived from the scenario's seed and a stream number, so
//! components draw independently and a run is a pure function of its scenario and seed.
//!
//! Streams in use: `i` (flow i's frame source), `1 << 32 | d` (link d's impairments),
//! `2 << 32 | d` (link d's queue), `3 << 32 | i` (flow i's encoder), `4 << 32 | i` (flow i's
//! short downloads), where link `d = 2 · hop + direction`.

/// SplitMix64: derive independent seeds for components from the scenario seed.
pub fn derive_seed(seed: u64, stream: u64) -> u64 {
    let mut z = seed ^ stream.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
