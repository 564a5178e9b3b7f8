//! `kind = "audio"`: constant-rate RTP audio, not rate-adapted. One packet of `rate · ptime`
//! payload bytes plus `overhead` bytes of RTP/UDP/IP headers every `ptime`; Opus-like defaults.

use super::{Building, Common, EcnFlag, FlowConfig, FlowKind};
use crate::error::FieldError;
use crate::MAX_PACKET;
use rtcc_core::endpoint::video_send::Ssrcs;
use rtcc_core::endpoint::{CbrSendEndpoint, Endpoint, Sink};
use rtcc_core::packet::EcnMode;
use rtcc_core::{Bytes, Duration, Rate};
use serde::Deserialize;

/// An Opus-like default: 32 kbit/s of payload (RFC 7587 §3.1.1 puts fullband speech at
/// 28–40 kbit/s) in 20 ms packets (Opus's and WebRTC's default frame).
pub const DEFAULT_AUDIO_RATE_BPS: f64 = 32_000.0;
pub const DEFAULT_PTIME: Duration = Duration(20_000_000);
/// RTP (12), UDP (8) and IPv4 (20) headers of an audio packet.
pub const DEFAULT_AUDIO_OVERHEAD: Bytes = Bytes(40);

/// An audio flow's fields.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AudioSpec {
    /// Payload rate (default 32kbps).
    pub rate: Option<Rate>,
    /// Media per packet (default 20ms).
    pub ptime: Option<Duration>,
    /// Header bytes per packet (default 40B).
    pub overhead: Option<Bytes>,
    /// ECN-capable packets (ECT(0); default false).
    pub ecn: Option<EcnFlag>,
}

/// An audio flow, resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AudioFlow {
    pub rate: Rate,
    pub ptime: Duration,
    pub overhead: Bytes,
    pub ecn: EcnMode,
}

/// Payload bytes per audio packet: `rate · ptime / 8`, rounded to whole bytes.
fn audio_payload(rate: Rate, ptime: Duration) -> u64 {
    (rate.bps() * ptime.as_secs_f64() / 8.0).round() as u64
}

impl AudioSpec {
    /// `rate` of payload in one packet per `ptime`, plus `overhead` bytes.
    pub(crate) fn resolve(self, common: &Common) -> Result<FlowKind, FieldError> {
        let at = common.at;
        let rate = self.rate.unwrap_or(Rate(DEFAULT_AUDIO_RATE_BPS));
        if !(rate.bps() > 0.0 && rate.bps().is_finite()) {
            return Err(at.err(
                "rate",
                format!("{rate} must be a positive payload rate, e.g. \"32kbps\""),
            ));
        }
        let ptime = self.ptime.unwrap_or(DEFAULT_PTIME);
        if ptime < Duration::from_millis(1) || ptime > Duration::from_millis(1000) {
            return Err(at.err(
                "ptime",
                format!(
                    "{ptime} is not a packet time between 1ms and 1000ms (audio codecs use 10-120ms)"
                ),
            ));
        }
        let overhead = self.overhead.unwrap_or(DEFAULT_AUDIO_OVERHEAD);
        let payload = audio_payload(rate, ptime);
        if payload == 0 {
            return Err(at.err(
                "rate",
                format!("{rate} carries less than one byte per {ptime} packet"),
            ));
        }
        if payload + overhead.0 > MAX_PACKET {
            return Err(at.err(
                "rate",
                format!("{rate} in {ptime} packets is {payload}B of payload, + {overhead} of headers, over {MAX_PACKET}B: lower the rate or the ptime"),
            ));
        }
        Ok(FlowKind::Audio(AudioFlow {
            rate,
            ptime,
            overhead,
            ecn: self.ecn.unwrap_or_default().0,
        }))
    }
}

impl AudioFlow {
    /// The packet: its interval and its size on the wire.
    pub fn packet(&self) -> (Duration, u64) {
        (
            self.ptime,
            audio_payload(self.rate, self.ptime) + self.overhead.0,
        )
    }

    pub(crate) fn endpoints(&self, f: &FlowConfig, b: &Building) -> [Box<dyn Endpoint>; 2] {
        let ssrcs = Ssrcs::for_flow(b.index as u32);
        let (ptime, size) = self.packet();
        let mut send = CbrSendEndpoint::new(f.start, ptime, size as u32, ssrcs.media);
        send.set_ecn(self.ecn);
        [Box::new(send), Box::new(Sink)]
    }
}
