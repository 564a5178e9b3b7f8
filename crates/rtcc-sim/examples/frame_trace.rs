//! Print the example frame trace shipped in `traces/`: the `lagged` encoder model with default
//! parameters and seed 1 at a constant 1.5 Mbit/s, 30 frame/s, 20 s.
//!
//! ```sh
//! cargo run -p rtcc-sim --example frame_trace > traces/lagged-720p-1500kbps-seed1.frames
//! ```
//!
//! A test in `rtcc-core` (`media::encoder::trace`) checks that the shipped file is exactly this
//! output.

fn main() {
    print!("{}", rtcc_core::media::encoder::trace::example_trace());
}
