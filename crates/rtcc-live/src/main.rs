//! `rtcc-live`: the live commands without the Python front (`rtcc-live emu ...`).

fn main() {
    std::process::exit(rtcc_live::cli::main(std::env::args().collect()));
}
