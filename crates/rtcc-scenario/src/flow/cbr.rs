//! `kind = "cbr"`: constant-rate cross traffic. `packet_size`-byte packets evenly spaced at
//! `rate`, with no feedback and no congestion response (a UDP flow, like iperf's).

use super::{packet_size, Building, Common, EcnFlag, FlowConfig, FlowKind};
use crate::error::FieldError;
use crate::MAX_PACKET;
use rtcc_core::endpoint::video_send::Ssrcs;
use rtcc_core::endpoint::{CbrSendEndpoint, Endpoint, Sink};
use rtcc_core::packet::EcnMode;
use rtcc_core::{Bytes, Duration, Rate};
use serde::Deserialize;

/// A constant-rate flow's fields.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CbrSpec {
    /// The sending rate (required).
    pub rate: Option<Rate>,
    /// Packet size on the wire (default 1500B).
    pub packet_size: Option<Bytes>,
    /// ECN-capable packets (ECT(0); default false).
    pub ecn: Option<EcnFlag>,
}

/// A constant-rate flow, resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CbrFlow {
    pub rate: Rate,
    pub packet_size: Bytes,
    pub ecn: EcnMode,
}

impl CbrSpec {
    pub(crate) fn resolve(self, common: &Common) -> Result<FlowKind, FieldError> {
        let at = common.at;
        let rate = self
            .rate
            .ok_or_else(|| at.err("rate", "a cbr flow needs a rate, e.g. rate = \"5Mbps\""))?;
        if rate.bps() <= 0.0 {
            return Err(at.err("rate", "must be a positive rate"));
        }
        let packet_size = packet_size(at, self.packet_size, MAX_PACKET)?;
        // The simulator's clock ticks in nanoseconds: a packet interval that rounds to 0 would
        // send without time passing, for ever.
        if rate.transmit_time(packet_size.0) < Duration(1) {
            return Err(at.err(
                "rate",
                format!(
                    "{rate} sends {}-byte packets less than 1 ns apart; use larger packets or a lower rate",
                    packet_size.0
                ),
            ));
        }
        Ok(FlowKind::Cbr(CbrFlow {
            rate,
            packet_size,
            ecn: self.ecn.unwrap_or_default().0,
        }))
    }
}

impl CbrFlow {
    pub(crate) fn endpoints(&self, f: &FlowConfig, b: &Building) -> [Box<dyn Endpoint>; 2] {
        let ssrcs = Ssrcs::for_flow(b.index as u32);
        let mut send = CbrSendEndpoint::new(
            f.start,
            self.rate.transmit_time(self.packet_size.0),
            self.packet_size.0 as u32,
            ssrcs.media,
        );
        send.set_ecn(self.ecn);
        [Box::new(send), Box::new(Sink)]
    }
}
