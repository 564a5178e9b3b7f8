//! An RTP packet from the network: parsed or rejected, never a panic; a parsed header's length
//! stays inside the datagram.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rtcc_core::wire::rtp::RtpHeader;

fuzz_target!(|data: &[u8]| {
    if let Ok((_, len)) = RtpHeader::parse(data) {
        assert!(len <= data.len(), "header of {len} bytes in a {}-byte datagram", data.len());
    }
});
