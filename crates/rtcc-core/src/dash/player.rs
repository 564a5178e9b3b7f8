//! The player: buffer, playback, stalls and when to request what, after dash.js v3.0.3
//! (`ScheduleController`, `BufferLevelRule`, `BufferController`, `VideoModel`), sans-IO.
//!
//! - Scheduling (`ScheduleController.schedule`): one segment request at a time. When a segment
//!   has been appended (and at the start) the player checks at once, otherwise every 500 ms:
//!   if the buffer is below the target, the ABR chooses the next segment's quality and the
//!   request is sent (after the ABR's delay, BOLA's); if not, it checks again 500 ms later.
//! - Buffer target (`BufferLevelRule`): `stableBufferTime` (12 s) unless the current quality is
//!   the top one, then `bufferTimeAtTopQuality` (30 s), or `bufferTimeAtTopQualityLongForm`
//!   (60 s) for content of at least `longFormContentDurationThreshold` (600 s).
//! - A segment's media is appended when its last byte has arrived (dash.js v3 appends whole
//!   segments outside low-latency mode).
//! - Startup: playback starts when the first segment is appended (the video element plays as
//!   soon as it has data; dash.js adds no startup threshold).
//! - Playback drains the buffer in real time. A stall starts when the buffer falls below
//!   `STALL_THRESHOLD` = 0.5 s before the last segment is in (dash.js `BufferController`: a
//!   `BUFFER_EMPTY` state, which sets the playback rate to 0); it ends when the buffer holds the
//!   MPD's `minBufferTime` again (`BUFFER_LOADED`; 1.5 s, MP4Box's default), in practice when
//!   the next segment is appended. Once every segment is in, playback runs to the end.
//! - The first segment is requested at the quality of dash.js's initial bitrate, 1000 kbit/s
//!   (`DEFAULT_VIDEO_BITRATE`): the highest rung at or below it (the 1 Mbit/s rung of the
//!   seed's ladder). Every request, the first included, goes through the ABR.
//!
//! The player emits a [`SegmentRecord`] when each segment is appended.

use super::qoe::SegmentRecord;
use super::{Abr, AbrInput, BufferState, DashConfig, Download, Rule};
use crate::units::{Duration, Time};
use std::collections::VecDeque;

/// dash.js `STALL_THRESHOLD`.
pub const STALL_THRESHOLD: Duration = Duration(500_000_000);
/// The MPD's `minBufferTime` (MP4Box's default).
pub const MIN_BUFFER_TIME: Duration = Duration(1_500_000_000);
/// `ScheduleController`'s polling interval while the buffer is full.
pub const SCHEDULE_INTERVAL: Duration = Duration(500_000_000);
/// dash.js `DEFAULT_VIDEO_BITRATE`, bit/s.
pub const INITIAL_BITRATE_BPS: f64 = 1_000_000.0;

/// Playback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the first segment.
    Startup,
    Playing,
    Stalled,
    /// Played to the end.
    Ended,
}

/// A request the player wants sent now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub segment: usize,
    pub quality: usize,
    /// Media bytes.
    pub bytes: u64,
}

#[derive(Debug, Clone, Copy)]
struct Decided {
    segment: usize,
    quality: usize,
    decided: Time,
    send_at: Time,
    buffer_s: f64,
    rule: Rule,
}

#[derive(Debug, Clone, Copy)]
struct InFlight {
    d: Decided,
    request: Time,
    first_byte: Option<Time>,
}

pub struct Player {
    cfg: DashConfig,
    abr: Box<dyn Abr>,
    start: Time,
    phase: Phase,
    /// Media appended and played, ns of media.
    buffered: u64,
    played: u64,
    /// The time `played` refers to.
    clock: Time,
    appended: usize,
    stall_start: Option<Time>,
    stall_total: Duration,
    stalls: u32,
    startup_delay: Option<Duration>,
    ended_at: Option<Time>,
    buffer_state: Option<BufferState>,
    /// dash.js's current quality.
    quality: usize,
    next_segment: usize,
    check_at: Option<Time>,
    decided: Option<Decided>,
    in_flight: Option<InFlight>,
    downloads: Vec<Download>,
    events: VecDeque<SegmentRecord>,
}

impl Player {
    /// A session whose first check (and request) is at `start`.
    pub fn new(cfg: DashConfig, start: Time) -> Player {
        let abr = cfg.build_abr();
        Player::with_abr(cfg, abr, start)
    }

    pub fn with_abr(cfg: DashConfig, abr: Box<dyn Abr>, start: Time) -> Player {
        let quality = (0..cfg.ladder_bps.len())
            .rev()
            .find(|&i| INITIAL_BITRATE_BPS >= cfg.ladder_bps[i])
            .unwrap_or(0);
        Player {
            cfg,
            abr,
            start,
            phase: Phase::Startup,
            buffered: 0,
            played: 0,
            clock: start,
            appended: 0,
            stall_start: None,
            stall_total: Duration::ZERO,
            stalls: 0,
            startup_delay: None,
            ended_at: None,
            buffer_state: None,
            quality,
            next_segment: 0,
            check_at: Some(start),
            decided: None,
            in_flight: None,
            downloads: Vec::new(),
            events: VecDeque::new(),
        }
    }

    pub fn config(&self) -> &DashConfig {
        &self.cfg
    }
    pub fn phase(&self) -> Phase {
        self.phase
    }
    /// Seconds of media buffered ahead of the playhead (at the last update).
    pub fn buffer_s(&self) -> f64 {
        Duration(self.buffered - self.played).as_secs_f64()
    }
    /// Seconds of media buffered at `now` (without changing the state).
    pub fn buffer_at(&self, now: Time) -> f64 {
        let mut p = self.clone_playback();
        p.advance(now);
        Duration(p.buffered - p.played).as_secs_f64()
    }
    pub fn stall_time(&self) -> Duration {
        self.stall_total
    }
    pub fn stalls(&self) -> u32 {
        self.stalls
    }
    pub fn startup_delay(&self) -> Option<Duration> {
        self.startup_delay
    }
    pub fn ended_at(&self) -> Option<Time> {
        self.ended_at
    }
    /// The current quality (the one chosen last).
    pub fn quality(&self) -> usize {
        self.quality
    }
    pub fn downloads(&self) -> &[Download] {
        &self.downloads
    }
    /// Whether every segment has been appended.
    pub fn all_appended(&self) -> bool {
        self.appended >= self.cfg.segments
    }

    fn clone_playback(&self) -> Playback {
        Playback {
            phase: self.phase,
            buffered: self.buffered,
            played: self.played,
            clock: self.clock,
            all_in: self.all_appended(),
            stall_at: None,
            end_at: None,
        }
    }

    /// The buffer target now (`BufferLevelRule.getBufferTarget`).
    pub fn buffer_target(&self) -> Duration {
        let b = &self.cfg.buffer;
        if self.quality >= self.cfg.top() {
            if self.cfg.video_length() >= b.long_form_threshold {
                b.top_quality_long_form
            } else {
                b.top_quality
            }
        } else {
            b.stable
        }
    }

    /// Bring playback to `now`: drain the buffer, start a stall or end playback on the way.
    fn advance(&mut self, now: Time) {
        let mut p = self.clone_playback();
        p.advance(now);
        self.phase = p.phase;
        self.played = p.played;
        self.clock = p.clock;
        if let Some(t) = p.stall_at {
            self.stall_start = Some(t);
            self.stalls += 1;
            self.buffer_state = Some(BufferState::Empty);
            self.abr.on_buffer_level(self.buffer_s());
            self.abr.on_stall();
        }
        if let Some(t) = p.end_at {
            self.ended_at = Some(t);
        }
    }

    /// When to call [`Player::handle_timeout`] next.
    pub fn poll_timeout(&self) -> Option<Time> {
        let playback = match self.phase {
            Phase::Playing => {
                let left = self.buffered - self.played;
                let until = if self.all_appended() {
                    left
                } else {
                    left.saturating_sub(STALL_THRESHOLD.0)
                };
                Some(self.clock + Duration(until))
            }
            _ => None,
        };
        [playback, self.check_at, self.decided.map(|d| d.send_at)]
            .into_iter()
            .flatten()
            .min()
    }

    pub fn handle_timeout(&mut self, now: Time) {
        self.advance(now);
        if self.check_at.is_some_and(|t| t <= now) {
            self.check_at = None;
            self.schedule(now);
        }
    }

    /// `ScheduleController.schedule`: decide the next segment if the buffer is below target.
    fn schedule(&mut self, now: Time) {
        if self.decided.is_some()
            || self.in_flight.is_some()
            || self.next_segment >= self.cfg.segments
        {
            return;
        }
        let level = self.buffer_s();
        if level >= self.buffer_target().as_secs_f64() {
            self.check_at = Some(now + SCHEDULE_INTERVAL);
            return;
        }
        // dash.js samples the buffer level continuously (DYNAMIC's switch reads it).
        self.abr.on_buffer_level(level);
        let input = AbrInput {
            now,
            segment: self.next_segment,
            buffer_s: level,
            buffer_state: self.buffer_state,
            quality: self.quality,
            downloads: &self.downloads,
        };
        let d = self.abr.choose(&input);
        self.quality = d.quality.min(self.cfg.top());
        self.decided = Some(Decided {
            segment: self.next_segment,
            quality: self.quality,
            decided: now,
            send_at: now + d.delay,
            buffer_s: level,
            rule: d.rule,
        });
        self.next_segment += 1;
    }

    /// The request to send now, if one is due.
    pub fn poll_request(&mut self, now: Time) -> Option<Request> {
        let d = self.decided.filter(|d| d.send_at <= now)?;
        self.decided = None;
        self.in_flight = Some(InFlight {
            d,
            request: now,
            first_byte: None,
        });
        Some(Request {
            segment: d.segment,
            quality: d.quality,
            bytes: self.cfg.segment_bytes(d.segment, d.quality),
        })
    }

    /// The first bytes of the response arrived.
    pub fn on_first_byte(&mut self, now: Time) {
        if let Some(f) = self.in_flight.as_mut() {
            f.first_byte.get_or_insert(now);
        }
    }

    /// The response's last byte arrived: the segment is appended, and the next one scheduled.
    pub fn on_complete(&mut self, now: Time) {
        let Some(f) = self.in_flight.take() else {
            return;
        };
        self.advance(now);
        let d = f.d;
        let download = Download {
            segment: d.segment,
            quality: d.quality,
            bytes: self.cfg.segment_bytes(d.segment, d.quality),
            request: f.request,
            first_byte: f.first_byte.unwrap_or(now),
            finish: now,
        };
        let before = self.buffer_s();
        let start_s = self.cfg.segment_duration.as_secs_f64() * d.segment as f64;
        self.abr.on_download(&download, start_s, before);
        self.abr.on_buffer_level(before);
        self.downloads.push(download);
        self.buffered += self.cfg.segment_duration.0;
        self.appended += 1;
        let after = Duration(self.buffered - self.played);
        if after >= MIN_BUFFER_TIME || self.all_appended() {
            self.buffer_state = Some(BufferState::Loaded);
        }
        let mut stall = Duration::ZERO;
        match self.phase {
            Phase::Startup => {
                self.phase = Phase::Playing;
                self.startup_delay = Some(now - self.start);
            }
            Phase::Stalled if self.buffer_state == Some(BufferState::Loaded) => {
                self.phase = Phase::Playing;
                let since = self.stall_start.take().unwrap_or(now);
                stall = now - since;
                self.stall_total = self.stall_total + stall;
            }
            _ => {}
        }
        self.abr.on_buffer_level(after.as_secs_f64());
        self.events.push_back(SegmentRecord {
            segment: d.segment as u32,
            quality: d.quality as u32,
            bitrate_bps: self.cfg.ladder_bps[d.quality],
            bytes: download.bytes,
            decided: d.decided,
            request: download.request,
            first_byte: download.first_byte,
            finish: now,
            buffer_at_decision_s: d.buffer_s,
            buffer_after_s: after.as_secs_f64(),
            stall_s: stall.as_secs_f64(),
            rule: d.rule,
            connection: 0,
        });
        self.schedule(now);
    }

    /// Whether a request is decided or under way.
    pub fn busy(&self) -> bool {
        self.decided.is_some() || self.in_flight.is_some()
    }

    pub fn poll_event(&mut self) -> Option<SegmentRecord> {
        self.events.pop_front()
    }
}

/// Playback arithmetic, on a copy so that it can be previewed.
struct Playback {
    phase: Phase,
    buffered: u64,
    played: u64,
    clock: Time,
    all_in: bool,
    stall_at: Option<Time>,
    end_at: Option<Time>,
}

impl Playback {
    fn advance(&mut self, now: Time) {
        if now < self.clock {
            return;
        }
        if self.phase == Phase::Playing {
            let left = self.buffered - self.played;
            let room = if self.all_in {
                left
            } else {
                left.saturating_sub(STALL_THRESHOLD.0)
            };
            let dt = (now - self.clock).0;
            if dt >= room {
                self.played += room;
                let at = self.clock + Duration(room);
                if self.all_in {
                    self.phase = Phase::Ended;
                    self.end_at = Some(at);
                } else {
                    self.phase = Phase::Stalled;
                    self.stall_at = Some(at);
                }
            } else {
                self.played += dt;
            }
        }
        self.clock = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dash::{AbrContext, AbrDecision};

    /// An ABR that always picks `q`.
    struct Fixed(usize);
    impl Abr for Fixed {
        fn choose(&mut self, _i: &AbrInput) -> AbrDecision {
            AbrDecision {
                quality: self.0,
                delay: Duration::ZERO,
                rule: Rule::None,
            }
        }
    }

    fn cfg(segments: usize) -> DashConfig {
        DashConfig {
            segments,
            ..DashConfig::default()
        }
    }

    fn t(s: f64) -> Time {
        Time::from_secs_f64(s)
    }

    /// Deliver each request `download_s` after it is sent, checking the player's timers on the
    /// way, until `until` or the end of playback; segment `stop_at` never arrives.
    fn drive(p: &mut Player, download_s: impl Fn(usize) -> Option<f64>, until: f64) {
        let mut due: Option<(Time, usize)> = None;
        loop {
            let now = [p.poll_timeout(), due.map(|d| d.0)]
                .into_iter()
                .flatten()
                .min();
            let Some(now) = now.filter(|&n| n <= t(until)) else {
                p.handle_timeout(t(until));
                return;
            };
            if due.is_some_and(|d| d.0 == now) {
                due = None;
                p.on_first_byte(now);
                p.on_complete(now);
            } else {
                p.handle_timeout(now);
            }
            if let Some(r) = p.poll_request(now) {
                if let Some(dt) = download_s(r.segment) {
                    due = Some((now + Duration::from_secs_f64(dt), r.segment));
                }
            }
            if p.phase() == Phase::Ended {
                return;
            }
        }
    }

    #[test]
    fn a_fast_path_plays_without_stalls_and_the_buffer_stays_near_its_target() {
        let mut p = Player::with_abr(cfg(20), Box::new(Fixed(3)), Time::ZERO);
        drive(&mut p, |_| Some(1.0), 1000.0);
        assert_eq!(p.phase(), Phase::Ended);
        assert_eq!(p.startup_delay(), Some(Duration::from_secs_f64(1.0)));
        assert_eq!(p.stalls(), 0);
        assert_eq!(
            p.ended_at(),
            Some(t(101.0)),
            "100 s of video after a 1 s startup, no stall"
        );
        let records: Vec<_> = std::iter::from_fn(|| p.poll_event()).collect();
        assert_eq!(records.len(), 20);
        // Requests wait while the buffer is at or above 12 s: the buffer after each append
        // never exceeds 12 s + one segment.
        assert!(
            records.iter().all(|r| r.buffer_after_s <= 17.0 + 1e-9),
            "{:?}",
            records.iter().map(|r| r.buffer_after_s).collect::<Vec<_>>()
        );
        // Requests in steady state go out on the 500 ms schedule after the buffer fell below
        // 12 s: between 11.5 and 12 s of buffer at the decision.
        for r in &records[4..] {
            assert!(
                (11.5 - 1e-9..12.0).contains(&r.buffer_at_decision_s),
                "segment {} decided at {} s of buffer",
                r.segment,
                r.buffer_at_decision_s
            );
        }
    }

    #[test]
    fn a_link_that_stops_delivering_makes_a_stall_of_the_right_length() {
        // Segments take 1 s, except segment 5, which takes 30 s (the link stops for a while).
        let mut p = Player::with_abr(cfg(10), Box::new(Fixed(0)), Time::ZERO);
        drive(&mut p, |s| Some(if s == 5 { 30.0 } else { 1.0 }), 1000.0);
        let records: Vec<_> = std::iter::from_fn(|| p.poll_event()).collect();
        let r5 = &records[5];
        // Segment 5 was requested with b = buffer_at_decision s of media; playback stops when
        // 0.5 s are left, and resumes when segment 5 is appended, 30 s after its request.
        let expected = 30.0 - (r5.buffer_at_decision_s - 0.5);
        assert_eq!(p.stalls(), 1);
        assert!(
            (p.stall_time().as_secs_f64() - expected).abs() < 1e-6,
            "stall {:?}, expected 30 s - ({} - 0.5) s = {expected} s",
            p.stall_time(),
            r5.buffer_at_decision_s
        );
        assert!(
            (r5.stall_s - expected).abs() < 1e-6,
            "the record carries it"
        );
        // Playback time = video length + stall (Eq. 1's numerator is the stall).
        let played = p.ended_at().unwrap() - t(1.0);
        assert!(
            (played.as_secs_f64() - 50.0 - expected).abs() < 1e-6,
            "{played:?}"
        );
    }

    #[test]
    fn the_target_is_60_s_at_the_top_quality_of_long_content_and_30_s_otherwise() {
        let long = Player::with_abr(cfg(127), Box::new(Fixed(10)), Time::ZERO);
        assert_eq!(
            long.buffer_target(),
            Duration::from_secs_f64(12.0),
            "initial quality 0"
        );
        let mut long = long;
        drive(&mut long, |_| Some(0.5), 3.0);
        assert_eq!(long.quality(), 10);
        assert_eq!(
            long.buffer_target(),
            Duration::from_secs_f64(60.0),
            "635 s is long-form"
        );
        let mut short = Player::with_abr(cfg(20), Box::new(Fixed(10)), Time::ZERO);
        drive(&mut short, |_| Some(0.5), 3.0);
        assert_eq!(short.buffer_target(), Duration::from_secs_f64(30.0));
    }

    #[test]
    fn the_first_request_is_at_the_initial_bitrate_rung() {
        let c = cfg(3);
        let ctx = AbrContext {
            ladder_bps: c.ladder_bps.clone(),
            segment_duration_s: 5.0,
            stable_buffer_s: 12.0,
        };
        let mut p = Player::with_abr(
            c,
            Box::new(crate::dash::dynamic::DashJs::new(
                ctx,
                crate::dash::dynamic::Strategy::Dynamic,
            )),
            Time::ZERO,
        );
        p.handle_timeout(Time::ZERO);
        let r = p.poll_request(Time::ZERO).unwrap();
        assert_eq!(
            (r.segment, r.quality, r.bytes),
            (0, 0, 625_000),
            "1000 kbit/s -> the 1 Mbit/s rung, 5 s = 625 kB"
        );
    }
}
