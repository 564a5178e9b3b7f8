//! A datagram that crossed a real UDP socket reaches its endpoint exactly as the simulator hands
//! it over.
//!
//! One sender drives two receivers of the same flow in virtual time (no clock, no timing): the
//! *simulated* one gets each datagram as the simulator delivers it (the endpoint's bytes, the
//! modelled size), the *live* one gets what a loopback socket delivered after the transport
//! padded it to its modelled size (`pad_to_modelled_size`), with the transport's
//! `received_size`. Some datagrams are lost on the way to both, so that NACK, retransmissions
//! and FEC (whose parity now arrives followed by payload zeros) are exercised. The two receivers
//! must then behave identically: the same sizes fed in, the same RTCP bytes back (fed to the
//! sender), the same frame events, the same timers.

use rtcc_core::endpoint::{Endpoint, EndpointEvent, Transmit};
use rtcc_core::media::jitter_buffer::FrameEvent;
use rtcc_core::units::earliest;
use rtcc_core::Time;
use rtcc_live::transport::{live_flow, pad_to_modelled_size, received_size};
use rtcc_sim::Scenario;
use std::net::UdpSocket;
use std::path::Path;

/// Every media packet carries 100 bytes of overhead, so that every datagram's headers fit its
/// modelled size and the live sizes can equal the simulator's exactly: a media packet has 64
/// (28 of IPv4 and UDP, 36 of RTP), an FEC packet, modelled as its largest protected packet + 10,
/// has 28 + 24 of RTP + 10 + a parity as long as the media RTP header (98).
const SCENARIO: &str = r#"
duration = "4s"
seed = 11
[path.forward]
capacity = "10Mbps"

[[flows]]
controller = "fixed"
params = { rate = "1500kbps" }
overhead = "100B"
stop = "3s"
recovery = { fec = 4 }
"#;

/// Every this many datagrams from the sender, one is lost (index `LOSS_PHASE` of each run).
const LOSS_EVERY: u64 = 23;
const LOSS_PHASE: u64 = 7;

fn drain(ep: &mut dyn Endpoint, now: Time) -> Vec<(Transmit, Vec<u8>)> {
    let mut out = Vec::new();
    let mut buf = Vec::new();
    while let Some(t) = ep.poll_transmit(now, &mut buf) {
        out.push((t, buf.clone()));
    }
    out
}

fn events(ep: &mut dyn Endpoint) -> Vec<EndpointEvent> {
    std::iter::from_fn(|| ep.poll_event()).collect()
}

#[test]
fn padded_datagrams_over_udp_give_the_receiver_what_the_simulator_gives_it() {
    let sc = Scenario::from_toml_str(SCENARIO, Path::new("."), "equivalence", None).unwrap();
    let (_, [mut sender, mut simulated]) = live_flow(&sc, 0, None, None).unwrap();
    let (_, [_, mut live]) = live_flow(&sc, 0, None, None).unwrap();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    rx.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let to = rx.local_addr().unwrap();
    let mut wire = vec![0u8; 65_536];

    let end = Time::from_millis(3500);
    let mut now = Time::ZERO;
    let (mut sent, mut lost, mut rtcp) = (0u64, 0u64, 0u64);
    let mut all_events = Vec::new();
    while now < end {
        assert_eq!(
            simulated.poll_timeout(),
            live.poll_timeout(),
            "timers at {now:?}"
        );
        let Some(next) = earliest(sender.poll_timeout(), simulated.poll_timeout()) else {
            break;
        };
        now = now.max(next);
        for ep in [&mut sender, &mut simulated, &mut live] {
            if ep.poll_timeout().is_some_and(|t| t <= now) {
                ep.handle_timeout(now);
            }
        }
        for (t, mut bytes) in drain(sender.as_mut(), now) {
            sent += 1;
            if sent % LOSS_EVERY == LOSS_PHASE {
                lost += 1;
                continue;
            }
            simulated.handle_datagram(now, &bytes, t.size);
            assert!(
                pad_to_modelled_size(&mut bytes, &t),
                "{t:?}: headers fit the size"
            );
            tx.send_to(&bytes, to).unwrap();
            let (n, _) = rx.recv_from(&mut wire).unwrap();
            assert_eq!(n, bytes.len(), "the whole padded datagram arrives");
            let size = received_size(n);
            assert_eq!(size, t.size, "{t:?}: the live size is the modelled size");
            live.handle_datagram(now, &wire[..n], size);
        }
        let answers = drain(simulated.as_mut(), now);
        assert_eq!(answers, drain(live.as_mut(), now), "RTCP at {now:?}");
        for (t, bytes) in answers {
            rtcp += 1;
            sender.handle_datagram(now, &bytes, t.size);
        }
        let e = events(simulated.as_mut());
        assert_eq!(e, events(live.as_mut()), "frame events at {now:?}");
        all_events.extend(e);
        assert_eq!(simulated.malformed(), live.malformed());
    }

    let count = |f: fn(&FrameEvent) -> bool| {
        all_events
            .iter()
            .filter(|e| matches!(e, EndpointEvent::Frame(fe) if f(fe)))
            .count()
    };
    let shown = count(|e| matches!(e, FrameEvent::Displayed { .. }));
    let recovered = count(|e| {
        matches!(
            e,
            FrameEvent::Complete {
                recovered: true,
                ..
            }
        )
    });
    eprintln!("{sent} datagrams, {lost} lost, {rtcp} RTCP back, {shown} frames shown, {recovered} repaired");
    assert!(lost > 20 && rtcp > 50, "{lost} lost, {rtcp} RTCP datagrams");
    assert!(shown >= 80, "{shown} frames shown");
    assert!(recovered > 10, "{recovered} frames repaired by FEC or RTX");
    assert_eq!(live.malformed(), 0);
    assert_eq!(sender.malformed(), 0);
}
