//! C³G's measurements (§III-B, §V-A), shared with `c3g-bbr`. Every control period Δt the
//! [`Meter`] closes a [`Period`]: λ̄, the bits sent over the rate window; μ̄, the bits the receiver
//! reports it got over the same span (its rate reports, §V-A, else the arrivals the
//! transport-wide feedback reports); λ̄ over μ̄'s window moved back to the sender's clock by the
//! base one-way delay, so that λ̄ − μ̄ is what the bottleneck queue gained; the share r of
//! retransmitted bits; and the RTVL = S_ACK − S_0 of every frame acknowledged in the period,
//! or given up on (a late acknowledgement flagged lost, or our fallback timeout for a receiver
//! that sends none). [`catch_up`] runs the periods on the host's clock. The paper's definitions
//! and the judgment calls behind them are in the `c3g` module header ("The signal").

use crate::packet::{FeedbackReport, FrameAck, FrameInfo, PacketKind, RateReport, SentPacket};
use crate::units::{Duration, Time};
use std::collections::VecDeque;

/// A frame not acknowledged after this long counts as lost even when no later frame was
/// acknowledged (an outage), so the meter never holds more than this of frames.
const PENDING_LIMIT: Duration = Duration(10_000_000_000);

/// Window of the base one-way delay that aligns λ̄'s window with μ̄'s (ours, as RTVL_min's).
const BASE_DELAY_WINDOW: Duration = Duration(10_000_000_000);

/// How long sent packets are remembered beyond the rate window: enough for μ̄'s window moved
/// back to the sender's clock, behind a queue and a reverse path of a few seconds.
const SENT_LOG_KEEP: Duration = Duration(5_000_000_000);

/// One control period's measurements.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Period {
    /// λ̄ and μ̄ in bit/s: bits sent, and bits reported received, over the rate window (the
    /// period, or the few periods that make up `rate_window`).
    pub sent_bps: f64,
    pub received_bps: f64,
    /// The median μ of the rate reports in the window (each over one report interval, the
    /// paper's μ(t) of one Δt); `received_bps` without reports.
    pub received_median_bps: f64,
    /// λ̄ over μ̄'s window moved back to the sender's clock by the base one-way delay (bit/s):
    /// bits sent in the window whose packets μ̄ would count had none of them queued, so
    /// λ̄_aligned − μ̄ is the growth of the bottleneck queue over the window (§V-A: "the server's
    /// responsibility to calculate λ(t) for the same time window used by the client for μ(t)").
    /// `sent_bps` when no new arrival was reported.
    pub sent_aligned_bps: f64,
    /// Share of the period's sent bits that were retransmissions (r).
    pub retransmitted: f64,
    /// RTVL samples of the period: (acknowledgement time, RTVL in ms), in order.
    pub rtvl: Vec<(Time, f64)>,
    /// Frames whose RTVL was sampled, and those among them that were lost.
    pub frames: u32,
    pub lost_frames: u32,
    /// Age of the oldest frame still waiting for its acknowledgement (ms).
    pub oldest_pending_ms: Option<f64>,
}

impl Period {
    pub fn mean_rtvl(&self) -> Option<f64> {
        (!self.rtvl.is_empty())
            .then(|| self.rtvl.iter().map(|s| s.1).sum::<f64>() / self.rtvl.len() as f64)
    }
}

/// C³G's measurements (§III-B, §V-A), shared with `c3g-bbr`: bits sent and received per period,
/// and the RTVL of every frame from its encoding to its acknowledgement.
#[derive(Debug, Clone)]
pub struct Meter {
    lost_frame_timeout: Duration,
    /// λ̄ and μ̄ are rates over this window (at least one period).
    rate_window: Duration,
    /// Bits sent in the recent periods (newest last), enough to cover `rate_window`.
    sent_periods: VecDeque<f64>,
    sent_bytes: u64,
    retransmitted_bytes: u64,
    /// The largest packet sent so far (bytes).
    largest_packet: u32,
    /// Reported arrivals (receiver clock, bytes) within the rate window of the newest, and the
    /// newest arrival at the previous close.
    arrivals: VecDeque<(Time, u32)>,
    newest_at_close: Option<Time>,
    /// The receiver's rate reports (§V-A: μ every Δt), newest last: (window start, window end,
    /// bytes), receiver clock, those whose windows end within the rate window of the newest.
    reports: VecDeque<(Time, Time, u64)>,
    /// When the newest report arrived (sender clock).
    last_report_at: Option<Time>,
    /// Packets sent (transport-wide sequence number, sender clock, bytes), kept to cover μ̄'s
    /// window moved to the sender's clock and to time the packet a rate report names.
    sent_log: VecDeque<(u64, Time, u32)>,
    /// The smallest receive − send time (ns; receiver clock minus sender clock) of the period's
    /// reported packets, and of each recent period over `BASE_DELAY_WINDOW`: the base one-way
    /// delay plus the clocks' offset.
    period_offset: Option<i64>,
    offsets: VecDeque<(Time, i64)>,
    /// Encoded frames not acknowledged yet: (frame, S_0, when a later frame was first
    /// acknowledged).
    pending: VecDeque<(u64, Time, Option<Time>)>,
    rtvl: Vec<(Time, f64)>,
    frames: u32,
    lost_frames: u32,
}

impl Meter {
    pub fn new(lost_frame_timeout: Duration, rate_window: Duration) -> Meter {
        Meter {
            lost_frame_timeout,
            rate_window,
            sent_periods: VecDeque::new(),
            sent_bytes: 0,
            retransmitted_bytes: 0,
            largest_packet: 0,
            arrivals: VecDeque::new(),
            newest_at_close: None,
            reports: VecDeque::new(),
            last_report_at: None,
            sent_log: VecDeque::new(),
            period_offset: None,
            offsets: VecDeque::new(),
            pending: VecDeque::new(),
            rtvl: Vec::new(),
            frames: 0,
            lost_frames: 0,
        }
    }

    pub fn on_packet_sent(&mut self, pkt: &SentPacket) {
        self.sent_bytes += pkt.size as u64;
        self.largest_packet = self.largest_packet.max(pkt.size);
        self.sent_log.push_back((pkt.seq, pkt.send_time, pkt.size));
        if pkt.kind == PacketKind::Retransmission {
            self.retransmitted_bytes += pkt.size as u64;
        }
    }

    /// Whole periods of `interval` in the rate window (at least one).
    fn periods(&self, interval: Duration) -> usize {
        (self.rate_window.0.div_ceil(interval.0.max(1))).max(1) as usize
    }

    /// The rate window as whole periods of `interval`: what λ̄ and μ̄ are rates over.
    pub fn window(&self, interval: Duration) -> Duration {
        Duration(interval.0 * self.periods(interval) as u64)
    }

    /// The largest packet sent so far (bytes).
    pub fn largest_packet(&self) -> u32 {
        self.largest_packet
    }

    pub fn on_feedback(&mut self, report: &FeedbackReport) {
        for p in report.received() {
            let at = p.receive_time.expect("received() has a receive time");
            self.arrivals.push_back((at, p.sent.size));
            self.note_offset(at, p.sent.send_time);
        }
    }

    /// A rate report: μ over its window, and the newest packet it counted, whose send time gives
    /// one more sample of the receiver's clock against the sender's.
    pub fn on_rate_report(&mut self, now: Time, report: &RateReport) {
        if report.window_end <= report.window_start {
            return; // an empty window says nothing about a rate
        }
        self.last_report_at = Some(now);
        self.reports
            .push_back((report.window_start, report.window_end, report.bytes));
        if let Some((seq, arrival)) = report.last {
            let i = self.sent_log.partition_point(|p| p.0 < seq);
            if let Some(&(_, sent, _)) = self.sent_log.get(i).filter(|p| p.0 == seq) {
                self.note_offset(arrival, sent);
            }
        }
    }

    fn note_offset(&mut self, arrival: Time, sent: Time) {
        let offset = arrival.0 as i64 - sent.0 as i64;
        self.period_offset = Some(self.period_offset.map_or(offset, |o| o.min(offset)));
    }

    pub fn on_frame_encoded(&mut self, frame: &FrameInfo) {
        if frame.size > 0 {
            self.pending
                .push_back((frame.frame, frame.capture_time, None));
        }
    }

    /// S_ACK = `now`: the sender's clock when the acknowledgement arrives. A late
    /// acknowledgement flagged lost (a receiver that acknowledges at display, §V-B) counts its
    /// frame as lost, with the same RTVL = S_ACK − S_0.
    pub fn on_frame_ack(&mut self, now: Time, ack: &FrameAck) {
        if let Some(i) = self.pending.iter().position(|&(f, ..)| f == ack.frame) {
            let (_, s0, _) = self.pending.remove(i).expect("found above");
            self.rtvl.push((now, (now - s0).as_millis_f64()));
            self.frames += 1;
            if ack.lost {
                self.lost_frames += 1;
            }
        }
        for (f, _, overtaken) in self.pending.iter_mut() {
            if *f > ack.frame {
                break;
            }
            overtaken.get_or_insert(now);
        }
    }

    /// Close the period ending at `now` (`interval` long) and start the next.
    pub fn close(&mut self, now: Time, interval: Duration) -> Period {
        // A frame a later one overtook `lost_frame_timeout` ago, or waiting longer than
        // `PENDING_LIMIT` (no acknowledgement comes at all): the late acknowledgement of a lost
        // frame, for a receiver that sends none itself (it acknowledges at completion). A
        // receiver that acknowledges at display sends its late acknowledgement together with
        // the later frame's, so this never fires for it while the reverse path delivers.
        while let Some(&(_, s0, overtaken)) = self.pending.front() {
            let timed_out = overtaken.is_some_and(|t| now >= t + self.lost_frame_timeout);
            if !(timed_out || now >= s0 + PENDING_LIMIT) {
                break;
            }
            self.pending.pop_front();
            self.rtvl.push((now, (now - s0).as_millis_f64()));
            self.frames += 1;
            self.lost_frames += 1;
        }
        // λ̄: bits sent in the last `periods` periods; μ̄: arrivals in the newest window of the
        // receiver's clock, 0 if nothing new was reported.
        let periods = self.periods(interval);
        let window = self.window(interval);
        let secs = window.as_secs_f64();
        let sent_bits = self.sent_bytes as f64 * 8.0;
        self.sent_periods.push_back(sent_bits);
        while self.sent_periods.len() > periods {
            self.sent_periods.pop_front();
        }
        // μ̄ and the receiver-clock window it covers: the receiver's rate reports when it sends
        // them (§V-A; a period with no new report keeps the last), else the arrivals the
        // transport-wide feedback reported in the newest window (0 if nothing new came).
        let newest = self.arrivals.iter().map(|a| a.0).max();
        let fresh = newest.filter(|&n| self.newest_at_close.is_none_or(|old| n > old));
        self.newest_at_close = newest.or(self.newest_at_close);
        if let Some(n) = newest {
            self.arrivals.retain(|a| a.0 + window > n);
        }
        // Reports that stopped coming (both directions down, or the reverse path alone) leave μ̄
        // unknown: read as nothing received, as when no feedback reports new arrivals, once the
        // newest is older than two report windows (one may just be late at a tick).
        let silent = match (self.reports.back(), self.last_report_at) {
            (Some(&(from, to, _)), Some(at)) => now > at + Duration(2 * (to - from).0),
            _ => false,
        };
        let measured = if silent {
            None
        } else if let Some(&(_, newest_end, _)) = self.reports.back() {
            self.reports.retain(|r| r.1 + window > newest_end);
            let span: u64 = self.reports.iter().map(|r| (r.1 - r.0).0).sum();
            let bytes: u64 = self.reports.iter().map(|r| r.2).sum();
            let first_start = self.reports.front().map_or(newest_end, |r| r.0);
            // Each report is the paper's μ(t) of one Δt (§V-A); their median, for a drain.
            let each = self
                .reports
                .iter()
                .map(|r| r.2 as f64 * 8.0 / (r.1 - r.0).as_secs_f64());
            let median = median(each.collect());
            Some((
                first_start,
                newest_end,
                Duration(span),
                bytes as f64 * 8.0,
                median,
            ))
        } else {
            fresh.map(|n| {
                let bits = self.arrivals.iter().map(|a| a.1 as f64 * 8.0).sum();
                (Time(n.0.saturating_sub(window.0)), n, window, bits, None)
            })
        };
        if let Some(o) = self.period_offset.take() {
            self.offsets.push_back((now, o));
        }
        while self
            .offsets
            .front()
            .is_some_and(|&(t, _)| t + BASE_DELAY_WINDOW < now)
        {
            self.offsets.pop_front();
        }
        while self
            .sent_log
            .front()
            .is_some_and(|&(_, t, _)| t + SENT_LOG_KEEP + window < now)
        {
            self.sent_log.pop_front();
        }
        let sent_bps = self.sent_periods.iter().sum::<f64>() / secs;
        let base = self.offsets.iter().map(|o| o.1).min();
        let (received_bps, sent_aligned_bps, received_median_bps) = match measured {
            Some((from, to, span, bits, median)) if span.0 > 0 => {
                let span_secs = span.as_secs_f64();
                let aligned = base.map_or(sent_bps, |base| {
                    // μ̄ counts arrivals in (from, to]; without queueing they were sent in
                    // (from − base, to − base] by the sender's clock.
                    let (start, end) = (from.0 as i64 - base, to.0 as i64 - base);
                    let after =
                        |edge: i64| self.sent_log.partition_point(|p| p.1 .0 as i64 <= edge);
                    let bits: f64 = self
                        .sent_log
                        .range(after(start)..after(end))
                        .map(|&(_, _, size)| size as f64 * 8.0)
                        .sum();
                    bits / span_secs
                });
                (bits / span_secs, aligned, median)
            }
            _ => (0.0, sent_bps, None),
        };
        let period = Period {
            sent_bps,
            received_bps,
            received_median_bps: received_median_bps.unwrap_or(received_bps),
            sent_aligned_bps,
            retransmitted: if sent_bits > 0.0 {
                self.retransmitted_bytes as f64 * 8.0 / sent_bits
            } else {
                0.0
            },
            rtvl: std::mem::take(&mut self.rtvl),
            frames: self.frames,
            lost_frames: self.lost_frames,
            oldest_pending_ms: self
                .pending
                .front()
                .map(|&(_, s0, _)| (now - s0).as_millis_f64()),
        };
        self.sent_bytes = 0;
        self.retransmitted_bytes = 0;
        self.frames = 0;
        self.lost_frames = 0;
        period
    }
}

/// Run the periods due by `now` and return the next period's end. A host that called late (more
/// than a period missed) gets one period closed at `now`, not a burst of empty ones after one
/// that holds everything sent in the gap.
pub fn catch_up(next: Time, now: Time, interval: Duration, mut tick: impl FnMut(Time)) -> Time {
    if next > now {
        return next;
    }
    if now >= next + interval {
        tick(now);
        return now + interval;
    }
    tick(next);
    next + interval
}

/// The median of `values` (`None` when empty).
pub(super) fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::c3g::tests::ms;
    use crate::units::Rate;

    /// A 1250-byte media packet, number `seq`, sent at `at`.
    fn packet(seq: u64, at: Time) -> SentPacket {
        SentPacket {
            seq,
            size: 1250,
            send_time: at,
            frame: None,
            index_in_frame: 0,
            packets_in_frame: 1,
            kind: PacketKind::Media,
            in_flight: 0,
        }
    }

    /// A meter fed 1250-byte packets sent at `sends` (sender clock), which arrive at
    /// `arrival(i)` (receiver clock), and the receiver's rate reports every 50 ms of its clock
    /// for the second from `from`; returns the period closed at 1 s.
    fn meter_with_reports(sends: &[Time], arrival: impl Fn(u64) -> Time, from: Time) -> Period {
        let mut m = Meter::new(Duration::from_millis(100), Duration::from_millis(200));
        let mut arrived = Vec::new();
        for (i, &t) in sends.iter().enumerate() {
            m.on_packet_sent(&packet(i as u64, t));
            arrived.push((i as u64, arrival(i as u64)));
        }
        let mut start = from;
        while let Some(end) = Some(start + Duration::from_millis(50))
            .filter(|&e| e <= from + Duration::from_millis(1000))
        {
            let window: Vec<_> = arrived
                .iter()
                .filter(|a| a.1 > start && a.1 <= end)
                .collect();
            m.on_rate_report(
                ms(1000),
                &RateReport {
                    window_start: start,
                    window_end: end,
                    bytes: 1250 * window.len() as u64,
                    packets: window.len() as u32,
                    last: window.last().map(|a| (a.0, a.1)),
                },
            );
            start = end;
        }
        m.close(ms(1000), Duration::from_millis(50))
    }

    #[test]
    fn reports_that_stop_coming_read_as_nothing_received() {
        let mut m = Meter::new(Duration::from_millis(100), Duration::from_millis(200));
        for i in 0..100 {
            m.on_packet_sent(&packet(i, ms(10 * i)));
        }
        for k in 0..20u64 {
            let report = RateReport {
                window_start: ms(50 * k),
                window_end: ms(50 * (k + 1)),
                bytes: 6250,
                packets: 5,
                last: Some((5 * k + 4, ms(50 * k + 45))),
            };
            m.on_rate_report(ms(50 * (k + 1) + 5), &report);
        }
        let dt = Duration::from_millis(50);
        let p = m.close(ms(1050), dt);
        assert!((p.received_bps - 1e6).abs() < 1e3, "μ̄ = {}", p.received_bps);
        // One report window late: maybe a report that missed this tick; μ̄ holds.
        let p = m.close(ms(1100), dt);
        assert!((p.received_bps - 1e6).abs() < 1e3, "μ̄ = {}", p.received_bps);
        // Two windows and more without a report: the receiver (or the way back) is gone.
        let p = m.close(ms(1150), dt);
        assert_eq!(
            p.received_bps, 0.0,
            "no report for 145 ms (report windows of 50 ms): μ̄ must read 0, not the last value"
        );
    }

    #[test]
    fn mu_comes_from_the_rate_reports_and_lambda_from_their_window_on_the_senders_clock() {
        // 1 Mbit/s (a packet every 10 ms) to 800 ms, then 2 Mbit/s; 100 ms one way, no queue, the
        // receiver's clock 1000 s ahead. μ̄'s window, the last 200 ms of reports, holds what was
        // sent in 700-900 ms: 1.5 Mbit/s, as λ̄ over that window (the sender's own last 200 ms
        // sent 2 Mbit/s).
        let sends: Vec<Time> = (0..80)
            .map(|i| ms(10 * i))
            .chain((0..40).map(|i| ms(800 + 5 * i)))
            .collect();
        let offset = Duration::from_secs_f64(1000.0);
        let at = sends.clone();
        let p = meter_with_reports(
            &sends,
            |i| at[i as usize] + Duration::from_millis(100) + offset,
            ms(0) + offset,
        );
        assert!(
            (p.received_bps - 1.5e6).abs() < 1e3,
            "μ̄ = {}",
            p.received_bps
        );
        assert!(
            (p.sent_aligned_bps - p.received_bps).abs() < 1e3,
            "no queue, so λ̄ over μ̄'s window equals μ̄: {} against {}",
            p.sent_aligned_bps,
            p.received_bps
        );
        // 1 Mbit/s into 0.8 Mbit/s (a packet every 12.5 ms, the first after 5 ms): the queue
        // gains 0.2 Mbit/s, which is λ̄ − μ̄ over the same window.
        let sends: Vec<Time> = (0..100).map(|i| ms(10 * i)).collect();
        let p = meter_with_reports(&sends, |i| ms(5) + Duration::from_micros(12_500 * i), ms(0));
        assert!(
            (p.received_bps - 0.8e6).abs() < 0.05e6,
            "μ̄ = {}",
            p.received_bps
        );
        let gain = p.sent_aligned_bps - p.received_bps;
        assert!(
            (gain - 0.2e6).abs() < 0.05e6,
            "λ̄ − μ̄ is the queue's growth, 0.2 Mbit/s: {gain}"
        );
    }

    /// Frame `n` of a 30 frame/s stream of 1000-byte frames.
    fn frame_at_30fps(n: u64) -> FrameInfo {
        FrameInfo {
            frame: n,
            capture_time: ms(33 * n),
            size: 1000,
            target: Rate::from_mbps(1.0),
            packets: 1,
            keyframe: false,
        }
    }

    /// The receiver's acknowledgement of frame `n` (`lost`: a late one of a frame given up on).
    fn frame_ack(n: u64, lost: bool) -> FrameAck {
        FrameAck {
            frame: n,
            first_receive_time: ms(0),
            last_receive_time: ms(0),
            complete_time: ms(0),
            size: 1000,
            lost,
        }
    }

    #[test]
    fn a_lost_frame_is_declared_while_later_acknowledgements_keep_coming() {
        // 30 frame/s, every frame acknowledged 40 ms after capture except frame 3.
        let mut m = Meter::new(Duration::from_millis(100), Duration::from_millis(100));
        let mut lost_at = None;
        for n in 0..60u64 {
            m.on_frame_encoded(&frame_at_30fps(n));
            if n != 3 {
                m.on_frame_ack(ms(33 * n + 40), &frame_ack(n, false));
            }
            if n % 3 == 2 {
                let p = m.close(ms(33 * n + 41), Duration::from_millis(100));
                if p.lost_frames > 0 && lost_at.is_none() {
                    lost_at = Some(33 * n + 41);
                }
            }
        }
        // Frame 4's acknowledgement at 172 ms overtakes it: lost at the first close after 272 ms
        // (the closes are at 41 ms + 99 ms·k).
        assert_eq!(lost_at, Some(305));
    }

    #[test]
    fn a_late_host_gets_one_period_closed_now() {
        let dt = Duration::from_millis(50);
        let mut ticks = Vec::new();
        assert_eq!(catch_up(ms(100), ms(90), dt, |t| ticks.push(t)), ms(100));
        assert_eq!(catch_up(ms(100), ms(120), dt, |t| ticks.push(t)), ms(150));
        assert_eq!(catch_up(ms(150), ms(900), dt, |t| ticks.push(t)), ms(950));
        assert_eq!(ticks, vec![ms(100), ms(900)]);
    }

    #[test]
    fn an_unacknowledged_frame_counts_as_lost_after_the_timeout() {
        let mut m = Meter::new(Duration::from_millis(100), Duration::from_millis(100));
        for n in 0..3 {
            m.on_frame_encoded(&frame_at_30fps(n));
        }
        m.on_frame_ack(ms(40), &frame_ack(0, false));
        m.on_frame_ack(ms(110), &frame_ack(2, false)); // frame 1 never comes
        let p = m.close(ms(200), Duration::from_millis(100));
        assert_eq!(
            (p.frames, p.lost_frames),
            (2, 0),
            "not yet: 90 ms since frame 2"
        );
        let p = m.close(ms(210), Duration::from_millis(100));
        assert_eq!((p.frames, p.lost_frames), (1, 1));
        assert!(
            (p.rtvl[0].1 - (210.0 - 33.0)).abs() < 1e-9,
            "RTVL = now − S_0"
        );
    }

    #[test]
    fn a_late_acknowledgement_flagged_lost_counts_the_frame_lost_at_its_arrival() {
        let mut m = Meter::new(Duration::from_millis(100), Duration::from_millis(100));
        for n in 0..3 {
            m.on_frame_encoded(&frame_at_30fps(n));
        }
        m.on_frame_ack(ms(40), &frame_ack(0, false));
        // The display receiver sends frame 1's late acknowledgement right after frame 2's.
        m.on_frame_ack(ms(150), &frame_ack(2, false));
        m.on_frame_ack(ms(150), &frame_ack(1, true));
        let p = m.close(ms(160), Duration::from_millis(100));
        assert_eq!(
            (p.frames, p.lost_frames),
            (3, 1),
            "no wait for the fallback timeout"
        );
        assert!(
            (p.rtvl[2].1 - (150.0 - 33.0)).abs() < 1e-9,
            "RTVL = S_ACK − S_0 of the late acknowledgement"
        );
        let p = m.close(ms(400), Duration::from_millis(100));
        assert_eq!(
            (p.frames, p.lost_frames),
            (0, 0),
            "counted once: the fallback has nothing left"
        );
    }
}
