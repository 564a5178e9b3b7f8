//! A compound RTCP datagram from the network (reports, transport feedback, RFC 8888, NACK, PLI,
//! REMB, frame acks with or without the lost flag): parsed or rejected, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rtcc_core::wire::rtcp::parse_compound;

fuzz_target!(|data: &[u8]| {
    let _ = parse_compound(data);
});
