//! The endpoints on their own, driven the way a live transport drives them: a sender and a
//! receiver joined by a 20 ms wire that can drop chosen datagrams, no simulator involved.

use super::video_send::Ssrcs;
use super::*;
use crate::cc::{self, ControllerContext, FeedbackPolicy};
use crate::media::{encoder, FrameSource, Packetizer, VideoSender};
use crate::packet::{Ecn, FeedbackReport};
use crate::units::{Bytes, Rate};
use crate::wire::rtcp::{self, RtcpPacket};
use crate::wire::rtp::{FrameDescriptor, RtpHeader};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const ONE_WAY: Duration = Duration(20_000_000);

fn video_sender(recovery: Recovery) -> VideoSendEndpoint {
    let params: cc::Params = toml::from_str("rate = \"1Mbps\"").unwrap();
    let ctx = crate::cc::test_support::context();
    video_sender_with(cc::create("fixed", &params, &ctx).unwrap(), recovery)
}

/// A 30 fps video sender with an ideal encoder run by `controller`.
fn video_sender_with(controller: Box<dyn cc::Controller>, recovery: Recovery) -> VideoSendEndpoint {
    let packetizer = Packetizer {
        payload: Bytes(1200),
        overhead: Bytes(40),
        min_packets: 1,
    };
    let sender = VideoSender::new(
        controller,
        encoder::create("ideal", 1).unwrap(),
        packetizer,
        30.0,
        0,
    );
    let source = FrameSource::new(Time::ZERO, 30.0, Duration::ZERO, 1);
    VideoSendEndpoint::new(sender, source, Ssrcs::for_flow(0), recovery)
}

fn policy(frame_acks: bool) -> FeedbackPolicy {
    FeedbackPolicy {
        interval: Some(Duration::from_millis(50)),
        per_frame: false,
        frame_acks,
        rate_reports: None,
    }
}

/// Everything that crossed the wire, and the receiver's frame events.
#[derive(Default)]
struct Log {
    /// (time, bytes) of each datagram, per direction (0: sender → receiver).
    sent: [Vec<(Time, Vec<u8>)>; 2],
    /// (time, bytes, wire size) of each datagram handed to an end, per receiving end (1: the
    /// receiver).
    delivered: [Vec<(Time, Vec<u8>, u32)>; 2],
    frames: Vec<FrameEvent>,
}

/// Run both endpoints until `until`. `drop(bytes)` decides whether a sender → receiver
/// datagram is lost.
fn call(ends: &mut [Box<dyn Endpoint>; 2], until: Time, drop: impl FnMut(&[u8]) -> bool) -> Log {
    call_marking(ends, until, drop, |_| false)
}

/// [`call`] on a wire that sets CE on the sender → receiver datagrams `mark(bytes)` picks, if
/// they are ECN-capable (an AQM's mark), and delivers every datagram with its codepoint.
fn call_marking(
    ends: &mut [Box<dyn Endpoint>; 2],
    until: Time,
    drop: impl FnMut(&[u8]) -> bool,
    mark: impl FnMut(&[u8]) -> bool,
) -> Log {
    call_injecting(ends, until, drop, mark, |_, _| Vec::new())
}

/// [`call_marking`] with a third party: `inject(now, log)` returns datagrams (end index, bytes)
/// handed to those ends at `now`, from nowhere on the wire (a buggy or hostile peer).
fn call_injecting(
    ends: &mut [Box<dyn Endpoint>; 2],
    until: Time,
    mut drop: impl FnMut(&[u8]) -> bool,
    mut mark: impl FnMut(&[u8]) -> bool,
    mut inject: impl FnMut(Time, &Log) -> Vec<(usize, Vec<u8>)>,
) -> Log {
    let mut log = Log::default();
    let mut wire: Vec<(Time, usize, Vec<u8>, u32, Ecn)> = Vec::new();
    let mut buf = Vec::new();
    let mut now = Time::ZERO;
    loop {
        // Everything due now: deliveries in order, then timers, then what the ends send.
        wire.sort_by_key(|w| w.0);
        while wire.first().is_some_and(|w| w.0 <= now) {
            let (_, to, bytes, size, ecn) = wire.remove(0);
            ends[to].handle_datagram_with_ecn(now, &bytes, size, ecn);
            log.delivered[to].push((now, bytes, size));
        }
        for (to, bytes) in inject(now, &log) {
            let size = bytes.len() as u32 + 28;
            ends[to].handle_datagram(now, &bytes, size);
        }
        for (side, end) in ends.iter_mut().enumerate() {
            if end.poll_timeout().is_some_and(|t| t <= now) {
                end.handle_timeout(now);
            }
            while let Some(t) = end.poll_transmit(now, &mut buf) {
                log.sent[side].push((now, buf.clone()));
                if side == 1 || !drop(&buf) {
                    let mut ecn = t.ecn;
                    if side == 0 && mark(&buf) {
                        ecn.set_ce();
                    }
                    wire.push((now + ONE_WAY, 1 - side, buf.clone(), t.size, ecn));
                }
            }
            while let Some(e) = end.poll_event() {
                if let EndpointEvent::Frame(f) = e {
                    log.frames.push(f);
                }
            }
        }
        let next = [ends[0].poll_timeout(), ends[1].poll_timeout()]
            .into_iter()
            .chain(wire.iter().map(|w| Some(w.0)))
            .flatten()
            .min();
        match next {
            Some(t) if t <= until => now = t.max(now + Duration(1)),
            _ => return log,
        }
    }
}

fn pair(recovery: Recovery, frame_acks: bool) -> [Box<dyn Endpoint>; 2] {
    let ssrcs = Ssrcs::for_flow(0);
    [
        Box::new(video_sender(recovery)),
        Box::new(VideoRecvEndpoint::new(
            Time::ZERO,
            ssrcs.media,
            policy(frame_acks),
            recovery,
        )),
    ]
}

fn rtcp_packets(log: &Log) -> Vec<RtcpPacket> {
    log.sent[1]
        .iter()
        .flat_map(|(_, b)| rtcp::parse_compound(b).expect("the receiver sends valid RTCP"))
        .collect()
}

fn rtp(bytes: &[u8]) -> RtpHeader {
    RtpHeader::parse(bytes)
        .expect("the sender sends valid RTP")
        .0
}

fn displayed(log: &Log) -> usize {
    log.frames
        .iter()
        .filter(|e| matches!(e, FrameEvent::Displayed { .. }))
        .count()
}

#[test]
fn a_clean_call_shows_every_frame_and_sends_only_transport_feedback() {
    let mut ends = pair(Recovery::default(), false);
    let log = call(&mut ends, Time::from_millis(2000), |_| false);
    // 60 frames captured in 2 s; those captured in the last ~60 ms are still on their way.
    assert!(displayed(&log) >= 57, "{} frames shown", displayed(&log));
    let rtcp = rtcp_packets(&log);
    assert!(rtcp.iter().any(|p| matches!(p, RtcpPacket::TransportCc(_))));
    assert!(
        rtcp.iter().all(|p| matches!(
            p,
            RtcpPacket::TransportCc(_) | RtcpPacket::ReceiverReport(_)
        )),
        "no NACK, PLI or frame ack on a clean call that does not ask for frame acks"
    );
    assert!(log.sent[0]
        .iter()
        .all(|(_, b)| rtp(b).payload_type == PT_MEDIA));
    assert_eq!(ends[0].malformed() + ends[1].malformed(), 0);
}

#[test]
fn frame_acks_go_back_only_when_the_policy_asks() {
    let mut ends = pair(Recovery::default(), true);
    let log = call(&mut ends, Time::from_millis(2000), |_| false);
    let acks = rtcp_packets(&log)
        .iter()
        .filter(|p| matches!(p, RtcpPacket::FrameAck(_)))
        .count();
    assert!(
        (57..=60).contains(&acks),
        "one acknowledgement per complete frame: {acks}"
    );
}

#[test]
fn a_lost_packet_is_nacked_resent_on_rtx_and_its_frame_shown() {
    let mut ends = pair(Recovery::default(), false);
    let mut dropped = false;
    let log = call(&mut ends, Time::from_millis(2000), |b| {
        let h = rtp(b);
        let hit = !dropped && h.payload_type == PT_MEDIA && h.sequence == 100;
        dropped |= hit;
        hit
    });
    assert!(dropped);
    let lost_frame = log.sent[0]
        .iter()
        .map(|(_, b)| rtp(b))
        .find(|h| h.payload_type == PT_MEDIA && h.sequence == 100)
        .and_then(|h| h.frame)
        .map(|d| d.frame_id as u64)
        .unwrap();
    let nacks: Vec<u16> = rtcp_packets(&log)
        .into_iter()
        .filter_map(|p| match p {
            RtcpPacket::Nack(n) => Some(n.lost),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(nacks, vec![100], "one NACK for the one lost packet");
    let (resent_at, resent) = log.sent[0]
        .iter()
        .find(|(_, b)| rtp(b).payload_type == PT_RTX)
        .expect("a retransmission on the RTX stream");
    let h = rtp(resent);
    assert_eq!(h.ssrc, Ssrcs::for_flow(0).rtx);
    let (_, len) = RtpHeader::parse(resent).unwrap();
    assert_eq!(
        &resent[len..len + 2],
        &100u16.to_be_bytes(),
        "RFC 4588: the original sequence number leads the payload"
    );
    assert_eq!(h.frame.map(|d| d.frame_id as u64), Some(lost_frame));
    let lost_at = log.sent[0]
        .iter()
        .find(|(_, b)| rtp(b).sequence == 100 && rtp(b).payload_type == PT_MEDIA)
        .unwrap()
        .0;
    let repair = resent_at.saturating_since(lost_at);
    assert!(
        repair < Duration::from_millis(100),
        "resent within about one round trip (40 ms) of the next packet's arrival: {repair:?}"
    );
    let completed = log.frames.iter().find_map(|e| match e {
        FrameEvent::Complete {
            frame, recovered, ..
        } if *frame == lost_frame => Some(*recovered),
        _ => None,
    });
    assert_eq!(
        completed,
        Some(true),
        "frame {lost_frame} completed by the retransmission"
    );
    assert!(
        displayed(&log) >= 57,
        "no frame lost for good: {} shown",
        displayed(&log)
    );
}

#[test]
fn without_nack_a_lost_packet_costs_a_keyframe_request() {
    let recovery = Recovery {
        nack: false,
        ..Recovery::default()
    };
    let mut ends = pair(recovery, false);
    let mut dropped = false;
    let log = call(&mut ends, Time::from_millis(2000), |b| {
        let hit = !dropped && rtp(b).sequence == 100;
        dropped |= hit;
        hit
    });
    let rtcp = rtcp_packets(&log);
    assert!(!rtcp.iter().any(|p| matches!(p, RtcpPacket::Nack(_))));
    assert!(rtcp.iter().any(|p| matches!(p, RtcpPacket::Pli(_))));
    assert!(log.frames.iter().any(|e| matches!(
        e,
        FrameEvent::Abandoned { .. } | FrameEvent::Undecodable { .. }
    )));
    // The sender answered with a keyframe.
    let keyframes = log.sent[0]
        .iter()
        .filter_map(|(_, b)| rtp(b).frame)
        .filter(|d| d.keyframe && d.index == 0)
        .count();
    assert_eq!(keyframes, 2, "the first frame and the requested one");
}

/// A hand-made media packet of SSRC 7: packet `index` of `count` of frame `frame` (33 ms apart at
/// 90 kHz), RTP and transport-wide sequence number `seq`; a delta frame predicts from the one
/// before.
pub(super) fn media_packet(
    seq: u16,
    frame: u16,
    index: u16,
    count: u16,
    keyframe: bool,
) -> Vec<u8> {
    let mut b = Vec::new();
    RtpHeader {
        marker: index + 1 == count,
        payload_type: PT_MEDIA,
        sequence: seq,
        timestamp: frame as u32 * 3000,
        ssrc: 7,
        transport_seq: Some(seq),
        abs_send_time: None,
        frame: Some(FrameDescriptor {
            keyframe,
            frame_id: frame,
            index,
            count,
            reference_delta: u16::from(!keyframe),
        }),
    }
    .encode(&mut b);
    b
}

#[test]
fn the_receiver_assembles_frames_from_the_packets_alone() {
    // Hand-made packets, no sender: frame 0 (a keyframe, 2 packets) arrives out of order,
    // frame 1 (1 packet) predicts from it.
    let mut rx = VideoRecvEndpoint::new(Time::ZERO, 7, policy(false), Recovery::default());
    rx.handle_datagram(Time::from_millis(20), &media_packet(1, 0, 1, 2, true), 1240);
    rx.handle_datagram(Time::from_millis(21), &media_packet(0, 0, 0, 2, true), 1240);
    rx.handle_datagram(Time::from_millis(54), &media_packet(2, 1, 0, 1, false), 800);
    let mut events = Vec::new();
    while let Some(EndpointEvent::Frame(e)) = rx.poll_event() {
        events.push(e);
    }
    let shown: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            FrameEvent::Displayed { frame, .. } => Some(*frame),
            _ => None,
        })
        .collect();
    assert_eq!(shown, vec![0, 1], "{events:?}");
    assert!(events.contains(&FrameEvent::Complete {
        frame: 0,
        first_receive: Time::from_millis(20),
        last_receive: Time::from_millis(21),
        at: Time::from_millis(21),
        size: 2480,
        recovered: false,
    }));
}

#[test]
fn malformed_datagrams_are_counted_and_ignored() {
    let mut ends = pair(Recovery::default(), false);
    for (side, junk) in [
        (0, &[0x80u8, 0xC9, 0x00][..]),         // truncated RTCP
        (0, &[0x80, 96, 0, 1, 0, 0, 0, 0][..]), // RTP sent to the sender
        (1, &[0x80, 96, 0][..]),                // truncated RTP
        (1, &[][..]),
    ] {
        ends[side].handle_datagram(Time::ZERO, junk, 100);
    }
    assert_eq!(ends[0].malformed(), 2);
    assert_eq!(ends[1].malformed(), 2);
    // And the call goes on.
    let log = call(&mut ends, Time::from_millis(1000), |_| false);
    assert!(displayed(&log) >= 27);
}

#[test]
fn the_tcp_receiver_delays_acks_as_rfc_5681_says() {
    let mut rx = TcpRecvEndpoint::new(9, true);
    let segment = |seq: u16| {
        let mut b = Vec::new();
        RtpHeader {
            payload_type: PT_TCP,
            sequence: seq,
            ssrc: 9,
            transport_seq: Some(seq),
            ..RtpHeader::default()
        }
        .encode(&mut b);
        b
    };
    let mut buf = Vec::new();
    let t = Time::from_millis;
    rx.handle_datagram(t(0), &segment(0), 1500);
    assert!(
        rx.poll_transmit(t(0), &mut buf).is_none(),
        "one segment waits"
    );
    assert_eq!(rx.poll_timeout(), Some(t(0) + tcp::DELAYED_ACK_TIMEOUT));
    rx.handle_datagram(t(1), &segment(1), 1500);
    assert!(
        rx.poll_transmit(t(1), &mut buf).is_some(),
        "every second segment is acknowledged at once"
    );
    rx.handle_datagram(t(2), &segment(2), 1500);
    assert!(rx.poll_transmit(t(2), &mut buf).is_none());
    rx.handle_timeout(t(42));
    let ack = rx.poll_transmit(t(42), &mut buf).expect("after 40 ms");
    assert_eq!(ack.kind, PacketKind::Control);
    assert_eq!(
        ack.size as usize,
        buf.len() + crate::wire::IP_UDP_OVERHEAD as usize
    );
    rx.handle_datagram(t(50), &segment(5), 1500);
    assert!(
        rx.poll_transmit(t(50), &mut buf).is_some(),
        "a gap is acknowledged at once"
    );
    // 3 and 4 were reported missing; 4 arrives late: reported at once, on its own.
    rx.handle_datagram(t(51), &segment(4), 1500);
    assert!(
        rx.poll_transmit(t(51), &mut buf).is_some(),
        "a late segment at once"
    );
    let reported: Vec<(u16, usize)> = rtcp::parse_compound(&buf)
        .unwrap()
        .into_iter()
        .filter_map(|p| match p {
            RtcpPacket::TransportCc(fb) => Some((fb.base_seq, fb.receive_times.len())),
            _ => None,
        })
        .collect();
    assert_eq!(reported, vec![(4, 1)]);
}

/// A fixed 1 Mbit/s controller that counts the packets its feedback reports (and how many of
/// them arrived CE-marked).
struct CountingController {
    reported: Arc<AtomicUsize>,
    ce: Arc<AtomicUsize>,
}

impl cc::Controller for CountingController {
    fn on_feedback(&mut self, _now: Time, report: &FeedbackReport) {
        self.reported
            .fetch_add(report.packets.len(), Ordering::Relaxed);
        self.ce.fetch_add(report.ce_count(), Ordering::Relaxed);
    }
    fn decision(&self) -> cc::Decision {
        cc::Decision::rate_only(Rate::from_mbps(1.0), None)
    }
}

#[test]
fn ce_marks_reach_the_controller_through_rfc_8888_reports() {
    let (reported, ce) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let controller = CountingController {
        reported: reported.clone(),
        ce: ce.clone(),
    };
    let packetizer = Packetizer {
        payload: Bytes(1200),
        overhead: Bytes(40),
        min_packets: 1,
    };
    let sender = VideoSender::new(
        Box::new(controller),
        encoder::create("ideal", 1).unwrap(),
        packetizer,
        30.0,
        0,
    );
    let source = FrameSource::new(Time::ZERO, 30.0, Duration::ZERO, 1);
    let ssrcs = Ssrcs::for_flow(0);
    let mut tx = VideoSendEndpoint::new(sender, source, ssrcs, Recovery::default());
    tx.set_ecn(true);
    let mut rx =
        VideoRecvEndpoint::new(Time::ZERO, ssrcs.media, policy(false), Recovery::default());
    rx.set_ecn(true);
    let mut ends: [Box<dyn Endpoint>; 2] = [Box::new(tx), Box::new(rx)];
    // The wire marks every media packet whose transport-wide sequence number is a multiple of 7.
    let mut marked = 0;
    let log = call_marking(
        &mut ends,
        Time::from_millis(2000),
        |_| false,
        |b| {
            let pick = rtp(b).transport_seq.is_some_and(|s| s % 7 == 0);
            marked += pick as usize;
            pick
        },
    );
    assert!(marked > 20, "{marked}");
    // Every media datagram left ECT(0); the receiver answered with RFC 8888 reports whose ECN
    // bits say CE for exactly the marked packets, and the controller saw them.
    let ccfb_ce: usize = rtcp_packets(&log)
        .iter()
        .filter_map(|p| match p {
            RtcpPacket::Ccfb(r) => Some(r),
            _ => None,
        })
        .flat_map(|r| r.blocks.iter().flat_map(|b| b.metrics.iter().flatten()))
        .filter(|m| Ecn::from_bits(m.ecn).is_ce())
        .count();
    let reported = reported.load(Ordering::Relaxed);
    let ce = ce.load(Ordering::Relaxed);
    assert!(reported > 100, "{reported}");
    // At the end, a few marked packets (or the report on them) are still on their way.
    assert!(
        ce > 0 && ce <= ccfb_ce && ccfb_ce <= marked,
        "{ce}, {ccfb_ce}, {marked}"
    );
    assert!(marked - ce <= 5, "{ce} of {marked}");
}

#[test]
fn without_ecn_the_feedback_is_unchanged() {
    // The same call, ECN off at both ends: Not-ECT datagrams, no RFC 8888 reports.
    let mut ends = pair(Recovery::default(), false);
    let log = call_marking(&mut ends, Time::from_millis(1000), |_| false, |_| true);
    assert!(!rtcp_packets(&log)
        .iter()
        .any(|p| matches!(p, RtcpPacket::Ccfb(_))));
}

#[test]
fn the_tcp_receiver_echoes_ce_until_cwr() {
    let mut rx = TcpRecvEndpoint::new(9, false);
    rx.set_ecn(true);
    let segment = |seq: u64, cwr: bool| {
        let mut b = Vec::new();
        tcp::write_segment_header(&mut b, seq, 9, cwr);
        b
    };
    let mut buf = Vec::new();
    let t = Time::from_millis;
    let mut ack_has_ece = |rx: &mut TcpRecvEndpoint, at: u64, seq: u64, cwr: bool, ecn: Ecn| {
        rx.handle_datagram_with_ecn(t(at), &segment(seq, cwr), 1500, ecn);
        rx.poll_transmit(t(at), &mut buf)
            .expect("every segment is acknowledged");
        let packets = rtcp::parse_compound(&buf).unwrap();
        assert!(matches!(packets[0], RtcpPacket::TransportCc(_)));
        packets.iter().any(|p| matches!(p, RtcpPacket::EcnEcho(_)))
    };
    assert!(!ack_has_ece(&mut rx, 0, 0, false, Ecn::Ect0));
    assert!(
        ack_has_ece(&mut rx, 1, 1, false, Ecn::Ce),
        "CE starts the echo"
    );
    assert!(ack_has_ece(&mut rx, 2, 2, false, Ecn::Ect0), "it lasts");
    assert!(!ack_has_ece(&mut rx, 3, 3, true, Ecn::Ect0), "until CWR");
    assert!(
        ack_has_ece(&mut rx, 4, 4, true, Ecn::Ce),
        "a CE segment with CWR keeps it"
    );
    assert_eq!(rx.ce_received(), 2);
    // Without ECN negotiated the receiver never echoes (it still counts the marks).
    let mut plain = TcpRecvEndpoint::new(9, false);
    assert!(!ack_has_ece(&mut plain, 0, 0, false, Ecn::Ce));
}

fn rate_report_policy(every_ms: u64) -> FeedbackPolicy {
    FeedbackPolicy {
        rate_reports: Some(Duration::from_millis(every_ms)),
        ..policy(false)
    }
}

/// The rate reports in the receiver's datagrams, in the order it sent them.
fn rate_reports(log: &Log) -> Vec<rtcp::RateReportMessage> {
    rtcp_packets(log)
        .into_iter()
        .filter_map(|p| match p {
            RtcpPacket::RateReport(r) => Some(r),
            _ => None,
        })
        .collect()
}

/// `t` truncated to whole microseconds, as rate reports carry times.
fn whole_us(t: Time) -> Time {
    Time(t.0 / 1000 * 1000)
}

/// The transport-wide sequence number of an RTP datagram.
fn transport_seq(bytes: &[u8]) -> Option<u16> {
    RtpHeader::parse(bytes)
        .ok()
        .and_then(|(h, _)| h.transport_seq)
}

#[test]
fn the_receiver_reports_what_it_got_in_each_window_of_a_call() {
    let recovery = Recovery::default();
    let ssrcs = Ssrcs::for_flow(0);
    let mut ends: [Box<dyn Endpoint>; 2] = [
        Box::new(video_sender(recovery)),
        Box::new(VideoRecvEndpoint::new(
            Time::ZERO,
            ssrcs.media,
            rate_report_policy(50),
            recovery,
        )),
    ];
    // Every 10th media packet lost: NACKed and resent on RTX, which counts too.
    let log = call(&mut ends, Time::from_millis(2000), |b| {
        let h = rtp(b);
        h.payload_type == PT_MEDIA && h.sequence % 10 == 5
    });
    let reports = rate_reports(&log);
    assert_eq!(reports.len(), 40, "one every 50 ms for 2 s");
    let got = &log.delivered[1];
    assert!(got.iter().any(|(_, b, _)| rtp(b).payload_type == PT_RTX));
    let mut start = Time::ZERO;
    for (k, r) in reports.iter().enumerate() {
        assert_eq!(r.window_start, start, "report {k}: windows are contiguous");
        assert_eq!(r.window_end, Time::from_millis(50 * (k as u64 + 1)));
        assert_eq!(r.media_ssrc, ssrcs.media);
        let inside: Vec<_> = got
            .iter()
            .filter(|(t, ..)| *t > r.window_start && *t <= r.window_end)
            .collect();
        let bytes: u64 = inside.iter().map(|(_, _, size)| u64::from(*size)).sum();
        assert_eq!(
            (r.bytes, r.packets as usize),
            (bytes, inside.len()),
            "report {k}: the wire sizes of the datagrams it got in ({start:?}, {:?}]",
            r.window_end
        );
        let newest = inside
            .last()
            .map(|(t, b, _)| (transport_seq(b).unwrap(), whole_us(*t)));
        assert_eq!(
            r.last, newest,
            "report {k}: the last arrival (µs on the wire)"
        );
        start = r.window_end;
    }
    let total: u64 = reports.iter().map(|r| r.bytes).sum();
    let all: u64 = got.iter().map(|(_, _, size)| u64::from(*size)).sum();
    assert_eq!(total, all, "the windows cover every datagram");
    // The fixed 1 Mbit/s controller's rate, give or take a frame (33 ms of 2 s).
    let rate = total as f64 * 8.0 / 2.0;
    assert!((rate / 1e6 - 1.0).abs() < 0.05, "{rate} bit/s");
}

#[test]
fn silence_is_reported_and_windows_follow_the_receivers_start() {
    let ms = Time::from_millis;
    let mut rx = VideoRecvEndpoint::new(ms(7), 7, rate_report_policy(50), Recovery::default());
    let arrivals = [
        (20, media_packet(0, 0, 0, 2, true), 1240),
        (21, media_packet(1, 0, 1, 2, true), 1240),
        (57, media_packet(2, 1, 0, 1, false), 800),
        (190, media_packet(3, 2, 0, 1, false), 700),
    ];
    let mut reports = Vec::new();
    let mut buf = Vec::new();
    let mut next = 0;
    while let Some(t) = rx.poll_timeout().filter(|&t| t <= ms(260)) {
        while let Some((at, b, size)) = arrivals.get(next).filter(|a| ms(a.0) <= t) {
            rx.handle_datagram(ms(*at), b, *size);
            next += 1;
        }
        rx.handle_timeout(t);
        while rx.poll_transmit(t, &mut buf).is_some() {
            for p in rtcp::parse_compound(&buf).unwrap() {
                if let RtcpPacket::RateReport(r) = p {
                    reports.push((
                        r.window_start.0 / 1_000_000,
                        r.window_end.0 / 1_000_000,
                        r.bytes,
                        r.packets,
                        r.last.map(|(seq, at)| (seq, at.0 / 1_000_000)),
                    ));
                }
            }
        }
    }
    assert_eq!(
        reports,
        vec![
            (7, 57, 3280, 3, Some((2, 57))),
            (57, 107, 0, 0, None),
            (107, 157, 0, 0, None),
            (157, 207, 700, 1, Some((3, 190))),
            (207, 257, 0, 0, None),
        ],
        "a window (previous report, report] from the receiver's start at 7 ms; silence gives \
         zero reports"
    );
    let mut quiet = VideoRecvEndpoint::new(ms(7), 7, policy(false), Recovery::default());
    quiet.handle_datagram(ms(20), &arrivals[0].1, 1240);
    quiet.handle_timeout(ms(57));
    while quiet.poll_transmit(ms(57), &mut buf).is_some() {
        assert!(!rtcp::parse_compound(&buf)
            .unwrap()
            .iter()
            .any(|p| matches!(p, RtcpPacket::RateReport(_))));
    }
    assert!(
        quiet.poll_timeout() > Some(ms(57)),
        "no report timer without the policy"
    );
}

#[test]
fn rate_reports_reach_the_controller_with_the_senders_sequence_numbers() {
    let (controller, reports) = cc::test_support::recorder();
    let recovery = Recovery::default();
    let ssrcs = Ssrcs::for_flow(0);
    let mut ends: [Box<dyn Endpoint>; 2] = [
        Box::new(video_sender_with(controller, recovery)),
        Box::new(VideoRecvEndpoint::new(
            Time::ZERO,
            ssrcs.media,
            rate_report_policy(100),
            recovery,
        )),
    ];
    let log = call(&mut ends, Time::from_millis(2000), |_| false);
    let sent = rate_reports(&log);
    let got = reports.lock().unwrap().clone();
    // The last report leaves at 2000 ms and is still on the wire when the call ends.
    assert_eq!(got.len(), sent.len() - 1);
    assert_eq!(got.len(), 19);
    for (k, ((now, r), m)) in got.iter().zip(&sent).enumerate() {
        assert_eq!(
            *now,
            m.window_end + ONE_WAY,
            "report {k} arrives one way later"
        );
        assert_eq!(
            (r.window_start, r.window_end, r.bytes, r.packets),
            (m.window_start, m.window_end, m.bytes, m.packets),
            "report {k} as sent"
        );
        assert!(r.rate().is_some_and(|rate| rate.bps() > 0.0));
        // The newest arrival's number is the sender's own (the transport-wide number it put on
        // the datagram, unwrapped), sent one way before it arrived.
        let (seq, at) = r.last.expect("media arrives in every 100 ms window");
        let (when_sent, _) = log.sent[0]
            .iter()
            .find(|(_, b)| transport_seq(b) == Some(seq as u16))
            .unwrap();
        assert_eq!(
            whole_us(*when_sent + ONE_WAY),
            at,
            "report {k}: packet {seq}"
        );
    }
}

// --- a buggy or hostile third party ---------------------------------------------------------------

/// A gcc sender and its receiver, which names the flow's streams as every scenario flow does.
/// The media range stops gcc at 2 Mbit/s (about 200 packets a second): a forged jump of 30 000
/// numbers stays ahead of the real stream for the whole call.
fn gcc_pair() -> [Box<dyn Endpoint>; 2] {
    let params: cc::Params = toml::from_str("").unwrap();
    let ctx = ControllerContext {
        now: Time::ZERO,
        fps: 30.0,
        max_payload: Bytes(1200),
        media: crate::video::range::MediaRange {
            max_bitrate: Some(Rate::from_mbps(2.0)),
            ..Default::default()
        },
        capacity: None,
        coupling: None,
        ecn: crate::packet::EcnMode::Off,
    };
    let gcc = cc::create("gcc", &params, &ctx).unwrap();
    let ssrcs = Ssrcs::for_flow(0);
    [
        Box::new(video_sender_with(gcc, Recovery::default())),
        Box::new(
            VideoRecvEndpoint::new(Time::ZERO, ssrcs.media, policy(false), Recovery::default())
                .with_streams(ssrcs),
        ),
    ]
}

const ATTACK_AT: Time = Time(10_000_000_000);
const CALL_END: Time = Time(30_000_000_000);

/// What a call under attack is judged by: the sender's target at the end, frames shown,
/// arrivals acknowledged to the sender by transport-wide feedback in the last 5 s, keyframes
/// and retransmissions sent, what each end discarded.
#[derive(Debug, PartialEq)]
struct Outcome {
    target_bps: f64,
    displayed: usize,
    late_feedback: usize,
    keyframes: usize,
    retransmissions: usize,
    discarded: [u64; 2],
}

fn outcome(ends: &[Box<dyn Endpoint>; 2], log: &Log) -> Outcome {
    let mut state = Vec::new();
    ends[0].state(&mut state);
    let late_feedback = log.delivered[0]
        .iter()
        .filter(|(t, ..)| t.0 >= CALL_END.0 - 5_000_000_000)
        .flat_map(|(_, b, _)| rtcp::parse_compound(b).unwrap_or_default())
        .map(|p| match p {
            RtcpPacket::TransportCc(fb) => fb.receive_times.iter().flatten().count(),
            _ => 0,
        })
        .sum();
    let media: Vec<RtpHeader> = log.sent[0].iter().map(|(_, b)| rtp(b)).collect();
    Outcome {
        target_bps: state.iter().find(|(n, _)| *n == "target_bps").unwrap().1,
        displayed: displayed(log),
        late_feedback,
        keyframes: media
            .iter()
            .filter(|h| h.frame.is_some_and(|d| d.keyframe && d.index == 0))
            .filter(|h| h.payload_type == PT_MEDIA)
            .count(),
        retransmissions: media.iter().filter(|h| h.payload_type == PT_RTX).count(),
        discarded: [ends[0].discarded(), ends[1].discarded()],
    }
}

/// A 30 s gcc call with `attack(now, log)` injecting datagrams from 10 s on.
fn attacked_call(mut attack: impl FnMut(Time, &Log) -> Vec<(usize, Vec<u8>)>) -> Outcome {
    let mut ends = gcc_pair();
    let log = call_injecting(
        &mut ends,
        CALL_END,
        |_| false,
        |_| false,
        |now, log| {
            if now < ATTACK_AT {
                Vec::new()
            } else {
                attack(now, log)
            }
        },
    );
    outcome(&ends, &log)
}

/// The newest media packet the sender sent.
fn newest_media(log: &Log) -> RtpHeader {
    log.sent[0]
        .iter()
        .rev()
        .map(|(_, b)| rtp(b))
        .find(|h| h.payload_type == PT_MEDIA)
        .expect("the sender has sent media")
}

/// Once, at the attack's start: `forge(newest media header)` to the receiver.
fn once_to_receiver(
    mut forge: impl FnMut(RtpHeader) -> RtpHeader,
) -> impl FnMut(Time, &Log) -> Vec<(usize, Vec<u8>)> {
    let mut done = false;
    move |_, log| {
        if std::mem::replace(&mut done, true) {
            return Vec::new();
        }
        let mut b = Vec::new();
        forge(newest_media(log)).encode(&mut b);
        b.resize(1200, 0);
        vec![(1, b)]
    }
}

/// The call's outcome is the clean call's within the tolerances: the target within
/// 10 %, frames shown within 5 %, and feedback still reaching the sender at the end.
fn assert_unharmed(attacked: &Outcome, what: &str) {
    let clean = attacked_call(|_, _| Vec::new());
    assert!(
        (attacked.target_bps / clean.target_bps - 1.0).abs() <= 0.10,
        "{what}: target {:.0} against {:.0} without it",
        attacked.target_bps,
        clean.target_bps
    );
    assert!(
        (attacked.displayed as f64 / clean.displayed as f64 - 1.0).abs() <= 0.05,
        "{what}: {} frames shown against {} without it",
        attacked.displayed,
        clean.displayed
    );
    assert!(
        attacked.late_feedback >= clean.late_feedback * 9 / 10,
        "{what}: {} arrivals acknowledged to the sender in the last 5 s, {} without it",
        attacked.late_feedback,
        clean.late_feedback
    );
}

#[test]
fn one_packet_far_ahead_in_transport_sequence_does_not_stop_the_feedback() {
    let o = attacked_call(once_to_receiver(|h| RtpHeader {
        transport_seq: h.transport_seq.map(|s| s.wrapping_add(30_000)),
        payload_type: PT_PADDING,
        ssrc: Ssrcs::for_flow(0).rtx,
        frame: None,
        ..h
    }));
    assert_eq!(o.discarded[1], 1, "the forged packet is refused: {o:?}");
    assert_unharmed(&o, "a transport-wide number 30 000 ahead");
}

#[test]
fn one_packet_far_ahead_in_frame_id_or_sequence_abandons_nothing() {
    for (what, jump_seq, jump_frame) in [("frame id", 0, 30_000), ("sequence number", 30_000, 0)] {
        let o = attacked_call(once_to_receiver(|h| {
            let d = h.frame.unwrap();
            RtpHeader {
                sequence: h.sequence.wrapping_add(1 + jump_seq),
                transport_seq: h.transport_seq.map(|s| s.wrapping_add(1)),
                // A whole keyframe on its own: the worst a single packet can be.
                frame: Some(FrameDescriptor {
                    frame_id: d.frame_id.wrapping_add(1 + jump_frame),
                    index: 0,
                    count: 1,
                    keyframe: true,
                    reference_delta: 0,
                }),
                ..h
            }
        }));
        assert_eq!(
            o.discarded[1], 1,
            "{what}: the forged packet is refused: {o:?}"
        );
        assert_unharmed(&o, what);
    }
}

#[test]
fn a_burst_of_keyframe_requests_costs_one_keyframe_per_300_ms() {
    let ssrcs = Ssrcs::for_flow(0);
    let mut sent = 0;
    let o = attacked_call(|_, _| {
        if sent == 200 {
            return Vec::new();
        }
        sent += 1;
        let mut b = Vec::new();
        RtcpPacket::Pli(rtcp::Pli {
            sender_ssrc: 1,
            media_ssrc: ssrcs.media,
        })
        .encode(&mut b)
        .unwrap();
        vec![(0, b)]
    });
    // 200 requests delivered one per loop step, all within 1 s: at most 4 served.
    assert!(
        o.keyframes <= 1 + 4,
        "the first frame and at most four served requests: {o:?}"
    );
    assert!(o.discarded[0] >= 196, "{o:?}");
    assert_unharmed(&o, "200 PLIs");
}

#[test]
fn a_flood_of_junk_and_other_streams_changes_nothing() {
    use rand_core::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut sent = 0u64;
    let o = attacked_call(|_, _| {
        // 10^5 datagrams, 50 per loop step, to both ends.
        if sent >= 100_000 {
            return Vec::new();
        }
        (0..50)
            .map(|i| {
                sent += 1;
                let mut b = Vec::new();
                if i % 2 == 0 {
                    // Another stream's RTP, every number at random.
                    RtpHeader {
                        payload_type: PT_MEDIA,
                        sequence: rng.next_u32() as u16,
                        timestamp: rng.next_u32(),
                        ssrc: rng.next_u32() | 0x8000_0000,
                        transport_seq: Some(rng.next_u32() as u16),
                        frame: Some(FrameDescriptor {
                            frame_id: rng.next_u32() as u16,
                            index: 0,
                            count: 1,
                            keyframe: true,
                            reference_delta: 0,
                        }),
                        ..RtpHeader::default()
                    }
                    .encode(&mut b);
                } else {
                    b.resize(1 + (rng.next_u32() % 200) as usize, 0);
                    rng.fill_bytes(&mut b);
                }
                ((i / 2) % 2, b)
            })
            .collect()
    });
    assert!(
        o.discarded[1] >= 20_000,
        "the other streams are refused: {o:?}"
    );
    assert_unharmed(&o, "10^5 junk datagrams");
}
