//! A DASH video session, sans-IO: a dash.js-like player with its ABR rules, and the QoE of the
//! session. The transport (a server sending segments over the TCP model, a client requesting
//! them) is in [`crate::endpoint::dash`]; `docs/dash.md` describes the model and its sources.
//!
//! - [`player`]: buffer, playback, stalls and the request schedule of dash.js v3
//!   (`ScheduleController`, `BufferController`, `BufferLevelRule`).
//! - ABR rules, one per file: [`throughput`] (dash.js `ThroughputRule` and `ThroughputHistory`),
//!   [`bola`] (dash.js `BolaRule`), [`dynamic`] (dash.js's rule collection and its DYNAMIC
//!   strategy, with `InsufficientBufferRule` and `SwitchHistoryRule`), and the baselines of
//!   Pensieve's dash.js fork: [`bba`], [`rb`], [`festive`] (sharing [`pensieve`]'s throughput
//!   predictor).
//! - [`qoe`]: the per-segment record and the session's QoE (average quality index, stall rate,
//!   switches, Pensieve's linear QoE).
//!
//! Units: bitrates in bit/s, buffer levels in seconds of media, times as [`Time`].

pub mod bba;
pub mod bola;
pub mod dynamic;
pub mod festive;
pub mod pensieve;
pub mod player;
pub mod qoe;
pub mod rb;
pub mod throughput;

use crate::units::{Duration, Time};

/// The bitrate ladder of the seed (Vargas et al., WWW '21, §3.2): 11 rungs from 1 to 25 Mbit/s
/// "in intervals of 2.5 Mbit/s" (read as 1, 2.5, 5, …, 25; the extraction's §7 #8), kbit/s.
pub const DEFAULT_LADDER_KBPS: [f64; 11] = [
    1000.0, 2500.0, 5000.0, 7500.0, 10000.0, 12500.0, 15000.0, 17500.0, 20000.0, 22500.0, 25000.0,
];
/// Segments of the seed's video: Big Buck Bunny cut in 5 s segments, 127 of them.
pub const DEFAULT_SEGMENTS: usize = 127;
pub const DEFAULT_SEGMENT_DURATION: Duration = Duration(5_000_000_000);

/// Which HTTP version carries the segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpVersion {
    /// HTTP/2: one persistent connection, one stream per request.
    H2,
    /// HTTP/1.1: a pool of up to 6 persistent connections (Chrome's per-host limit).
    H1,
}

impl HttpVersion {
    pub fn parse(s: &str) -> Result<HttpVersion, String> {
        match s {
            "h2" => Ok(HttpVersion::H2),
            "h1" => Ok(HttpVersion::H1),
            other => Err(format!("unknown HTTP version {other:?}; valid: h2, h1")),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            HttpVersion::H2 => "h2",
            HttpVersion::H1 => "h1",
        }
    }
    /// Wire size of a segment request: an HTTP/1.1 GET with Chrome's headers is about 450
    /// bytes, an HTTP/2 HEADERS frame with HPACK-indexed headers (and its TLS record) about
    /// 100; plus 52 bytes of TCP/IPv4 headers with timestamps.
    pub fn request_size(self) -> u32 {
        match self {
            HttpVersion::H2 => 150,
            HttpVersion::H1 => 500,
        }
    }
    /// Bytes of response headers before a segment: nginx's HTTP/1.1 status line and headers
    /// (about 250 bytes), an HTTP/2 HEADERS frame (about 50).
    pub fn response_header(self) -> u64 {
        match self {
            HttpVersion::H2 => 50,
            HttpVersion::H1 => 250,
        }
    }
    /// Requests nginx serves on one keep-alive connection before closing it: `keepalive_requests`
    /// (100 until nginx 1.19.10) for HTTP/1.1, `http2_max_requests` (1000) for HTTP/2.
    pub fn keepalive_requests(self) -> u32 {
        match self {
            HttpVersion::H2 => 1000,
            HttpVersion::H1 => 100,
        }
    }
    /// Connections the browser opens to one host at most.
    pub fn max_connections(self) -> usize {
        match self {
            HttpVersion::H2 => 1,
            HttpVersion::H1 => 6,
        }
    }
}

/// Which ABR algorithm picks the quality of each segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AbrKind {
    /// dash.js's default: THROUGHPUT below 12 s of buffer, BOLA above (back below 6 s).
    Dynamic,
    /// dash.js's `ThroughputRule` alone (ABR strategy `abrThroughput`).
    Throughput,
    /// dash.js's `BolaRule` alone (ABR strategy `abrBola`).
    Bola,
    /// Buffer-based (Huang et al. 2014), Pensieve's dash.js fork.
    Bba,
    /// Rate-based, Pensieve's dash.js fork.
    Rb,
    /// FESTIVE (Jiang et al. 2012), Pensieve's dash.js fork.
    Festive,
}

impl AbrKind {
    pub const ALL: [AbrKind; 6] = [
        AbrKind::Dynamic,
        AbrKind::Throughput,
        AbrKind::Bola,
        AbrKind::Bba,
        AbrKind::Rb,
        AbrKind::Festive,
    ];
    pub fn parse(s: &str) -> Result<AbrKind, String> {
        AbrKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = AbrKind::ALL.iter().map(|k| k.name()).collect();
                format!("unknown ABR {s:?}; valid: {}", names.join(", "))
            })
    }
    pub fn name(self) -> &'static str {
        match self {
            AbrKind::Dynamic => "dynamic",
            AbrKind::Throughput => "throughput",
            AbrKind::Bola => "bola",
            AbrKind::Bba => "bba",
            AbrKind::Rb => "rb",
            AbrKind::Festive => "festive",
        }
    }
}

/// dash.js's buffer targets (`Settings.streaming`, v3.0): the player requests the next segment
/// while the buffer is below the target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BufferTargets {
    /// `stableBufferTime`, 12 s: the target below the top quality; also BOLA's and DYNAMIC's
    /// reference (switch to BOLA above it, back below half of it).
    pub stable: Duration,
    /// `bufferTimeAtTopQuality`, 30 s: the target while at the top quality.
    pub top_quality: Duration,
    /// `bufferTimeAtTopQualityLongForm`, 60 s: the same for long-form content.
    pub top_quality_long_form: Duration,
    /// `longFormContentDurationThreshold`, 600 s: content at least this long is long-form (the
    /// seed's 635 s video is).
    pub long_form_threshold: Duration,
}

impl Default for BufferTargets {
    fn default() -> Self {
        BufferTargets {
            stable: Duration::from_secs_f64(12.0),
            top_quality: Duration::from_secs_f64(30.0),
            top_quality_long_form: Duration::from_secs_f64(60.0),
            long_form_threshold: Duration::from_secs_f64(600.0),
        }
    }
}

/// Everything a DASH session is made of (both ends are built from it).
#[derive(Debug, Clone, PartialEq)]
pub struct DashConfig {
    pub http: HttpVersion,
    pub abr: AbrKind,
    pub segments: usize,
    pub segment_duration: Duration,
    /// The MPD's `@bandwidth` of each rung, bit/s, ascending.
    pub ladder_bps: Vec<f64>,
    pub buffer: BufferTargets,
    /// Segment size = this × bitrate × duration (1 = the nominal size).
    pub segment_size_scale: f64,
    /// TCP segment size on the wire (1500 B: 1448 bytes of payload).
    pub packet_size: u32,
    /// The client acknowledges every second segment (or after 40 ms), as Linux does.
    pub delayed_ack: bool,
    /// The server's `net.ipv4.tcp_slow_start_after_idle` (Linux's default, 1).
    pub slow_start_after_idle: bool,
    /// The server's network interface: its packets leave at most at this rate (`None`: at
    /// once, as rtcc's other senders). The seed's testbed had gigabit ports (extraction §7 #14):
    /// a window sent in one go reaches the bottleneck spread at 1 Gbit/s, so a token bucket
    /// with tokens passes it without queueing it.
    pub line_rate: Option<crate::units::Rate>,
    /// The server's send buffer in payload bytes (`tcp/sndbuf.rs`), `None` (the default): not
    /// modelled, a response is in the socket at once. Linux's autotuned buffer does not bind
    /// on the seed's runs (`tcp/sndbuf.rs` says why), so this is a control, not a default.
    pub send_buffer: Option<crate::units::Bytes>,
}

impl Default for DashConfig {
    fn default() -> Self {
        DashConfig {
            http: HttpVersion::H2,
            abr: AbrKind::Dynamic,
            segments: DEFAULT_SEGMENTS,
            segment_duration: DEFAULT_SEGMENT_DURATION,
            ladder_bps: DEFAULT_LADDER_KBPS.iter().map(|k| k * 1000.0).collect(),
            buffer: BufferTargets::default(),
            segment_size_scale: 1.0,
            packet_size: 1500,
            delayed_ack: true,
            slow_start_after_idle: true,
            line_rate: Some(crate::units::Rate(1e9)),
            send_buffer: None,
        }
    }
}

impl DashConfig {
    /// Bytes of media in segment `segment` at rung `quality` (every segment of a rung has the
    /// same size: the seed encoded near-constant bitrate).
    pub fn segment_bytes(&self, _segment: usize, quality: usize) -> u64 {
        let bits = self.ladder_bps[quality] * self.segment_duration.as_secs_f64();
        (bits / 8.0 * self.segment_size_scale).round().max(1.0) as u64
    }
    /// Length of the video.
    pub fn video_length(&self) -> Duration {
        Duration(self.segment_duration.0.saturating_mul(self.segments as u64))
    }
    pub fn top(&self) -> usize {
        self.ladder_bps.len() - 1
    }
    /// Build the configured ABR.
    pub fn build_abr(&self) -> Box<dyn Abr> {
        let ctx = AbrContext {
            ladder_bps: self.ladder_bps.clone(),
            segment_duration_s: self.segment_duration.as_secs_f64(),
            stable_buffer_s: self.buffer.stable.as_secs_f64(),
        };
        match self.abr {
            AbrKind::Dynamic => Box::new(dynamic::DashJs::new(ctx, dynamic::Strategy::Dynamic)),
            AbrKind::Throughput => {
                Box::new(dynamic::DashJs::new(ctx, dynamic::Strategy::Throughput))
            }
            AbrKind::Bola => Box::new(dynamic::DashJs::new(ctx, dynamic::Strategy::Bola)),
            AbrKind::Bba => Box::new(bba::Bba::new(ctx)),
            AbrKind::Rb => Box::new(rb::Rb::new(ctx)),
            AbrKind::Festive => Box::new(festive::Festive::new(ctx)),
        }
    }
}

/// What every ABR knows from the manifest and the player's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct AbrContext {
    /// `@bandwidth` of each rung, bit/s, ascending.
    pub ladder_bps: Vec<f64>,
    pub segment_duration_s: f64,
    /// dash.js `stableBufferTime`.
    pub stable_buffer_s: f64,
}

impl AbrContext {
    pub fn top(&self) -> usize {
        self.ladder_bps.len() - 1
    }
    /// The highest rung whose bitrate is at most `bps` (0 if none): the lookup every rule uses.
    pub fn highest_at_most(&self, bps: f64) -> usize {
        (0..self.ladder_bps.len())
            .rev()
            .find(|&i| bps >= self.ladder_bps[i])
            .unwrap_or(0)
    }
}

/// One segment download as the player measured it (dash.js's `HTTPRequest` metric).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Download {
    pub segment: usize,
    pub quality: usize,
    /// Media bytes.
    pub bytes: u64,
    /// The request left (`trequest`).
    pub request: Time,
    /// The first bytes of the response arrived (`tresponse`).
    pub first_byte: Time,
    /// The last byte arrived (`tfinish`).
    pub finish: Time,
}

impl Download {
    /// First to last byte (dash.js's download time; the request's latency excluded).
    pub fn download_time(&self) -> Duration {
        self.finish - self.first_byte
    }
    /// Request to first byte.
    pub fn latency(&self) -> Duration {
        self.first_byte - self.request
    }
}

/// dash.js's buffer state (`BufferController`): `Loaded` once the buffer holds the MPD's
/// `minBufferTime`, `Empty` when it fell below the stall threshold (a stall).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferState {
    Loaded,
    Empty,
}

/// What an ABR sees when it chooses the quality of the next segment.
#[derive(Debug, Clone, Copy)]
pub struct AbrInput<'a> {
    pub now: Time,
    /// The segment to choose for.
    pub segment: usize,
    /// Seconds of media buffered ahead of the playhead.
    pub buffer_s: f64,
    /// `None` before the first segment is in.
    pub buffer_state: Option<BufferState>,
    /// The current quality (the one chosen last, or the initial one).
    pub quality: usize,
    /// Every download so far, oldest first.
    pub downloads: &'a [Download],
}

/// Which rule made a decision (for the per-segment log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// No rule had an opinion: the quality stayed.
    None,
    Throughput,
    Bola,
    InsufficientBuffer,
    SwitchHistory,
    Bba,
    Rb,
    Festive,
}

impl Rule {
    pub fn name(self) -> &'static str {
        match self {
            Rule::None => "none",
            Rule::Throughput => "throughput",
            Rule::Bola => "bola",
            Rule::InsufficientBuffer => "insufficient_buffer",
            Rule::SwitchHistory => "switch_history",
            Rule::Bba => "bba",
            Rule::Rb => "rb",
            Rule::Festive => "festive",
        }
    }
}

/// An ABR's answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AbrDecision {
    pub quality: usize,
    /// Wait this long before sending the request (BOLA's delay when the buffer is above what the
    /// chosen quality needs).
    pub delay: Duration,
    pub rule: Rule,
}

/// An ABR algorithm, driven by the player.
pub trait Abr: Send {
    /// Choose the quality of `input.segment`.
    fn choose(&mut self, input: &AbrInput) -> AbrDecision;
    /// A download finished at `d.finish`; `buffer_s` is the buffer level just before its media
    /// is appended, `segment_start_s` the media time the segment starts at.
    fn on_download(&mut self, _d: &Download, _segment_start_s: f64, _buffer_s: f64) {}
    /// The buffer level changed (dash.js's `BUFFER_LEVEL` metric: DYNAMIC switches on it).
    fn on_buffer_level(&mut self, _buffer_s: f64) {}
    /// Playback stalled (dash.js's `BUFFER_EMPTY`).
    fn on_stall(&mut self) {}
}

#[cfg(test)]
pub(crate) mod test_util {
    use super::*;

    /// The seed's ladder, 5 s segments, dash.js's 12 s stable buffer.
    pub fn ctx() -> AbrContext {
        AbrContext {
            ladder_bps: DEFAULT_LADDER_KBPS.iter().map(|k| k * 1000.0).collect(),
            segment_duration_s: 5.0,
            stable_buffer_s: 12.0,
        }
    }

    /// A download of `mbit` Mbit of media whose body took `secs` after a `latency_ms` wait,
    /// finishing at `finish_s`.
    pub fn download(
        segment: usize,
        quality: usize,
        mbit: f64,
        secs: f64,
        latency_ms: f64,
        finish_s: f64,
    ) -> Download {
        let finish = Time::from_secs_f64(finish_s);
        let first_byte = Time::from_secs_f64(finish_s - secs);
        Download {
            segment,
            quality,
            bytes: (mbit * 1e6 / 8.0).round() as u64,
            request: Time::from_secs_f64(finish_s - secs - latency_ms / 1000.0),
            first_byte,
            finish,
        }
    }

    pub fn input(
        downloads: &[Download],
        buffer_s: f64,
        quality: usize,
        now_s: f64,
    ) -> AbrInput<'_> {
        AbrInput {
            now: Time::from_secs_f64(now_s),
            segment: downloads.len(),
            buffer_s,
            buffer_state: Some(BufferState::Loaded),
            quality,
            downloads,
        }
    }
}
