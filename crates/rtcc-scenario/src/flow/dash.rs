//! `kind = "dash"`: a DASH session. A server sends video segments over TCP connections (its
//! controller's, one per connection as HTTP/1.1 or one for HTTP/2) to a player whose ABR
//! (dash.js's, BOLA, BBA, ...) picks each segment's quality from the bitrate ladder (seed
//! bbr_dash §6).

use super::short_tcp::connection_controllers;
use super::{Building, Checking, Common, FlowConfig, FlowKind};
use crate::controller::ControllerRecipe;
use crate::error::FieldError;
use crate::MAX_PACKET;
use rtcc_core::cc::Params;
use rtcc_core::dash::{AbrKind, BufferTargets, DashConfig, HttpVersion};
use rtcc_core::endpoint::video_send::Ssrcs;
use rtcc_core::endpoint::{DashClientEndpoint, DashServerEndpoint, Endpoint};
use rtcc_core::{Bytes, Duration, Rate};
use serde::Deserialize;

/// A DASH flow's fields.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DashSpec {
    /// The server's TCP controller.
    pub controller: Option<String>,
    #[serde(default)]
    pub params: Params,
    /// Segment size on the wire (default 1500B).
    pub packet_size: Option<Bytes>,
    /// The player acknowledges every second segment (or after 40 ms).
    pub delayed_ack: Option<bool>,
    /// The server restarts its window after an idle period (default true).
    pub slow_start_after_idle: Option<bool>,
    /// `"h2"` (default) or `"h1"`.
    pub http: Option<String>,
    /// The ABR: `"dynamic"` (default), `"throughput"`, `"bola"`, `"bba"`, `"rb"`, `"festive"`.
    pub abr: Option<String>,
    /// Number of segments (default 127).
    pub segments: Option<u64>,
    /// Media per segment (default 5 s).
    pub segment_duration: Option<Duration>,
    /// The bitrate ladder, ascending rates (default the seed's 11 rungs, 1–25 Mbit/s).
    pub ladder: Option<Vec<Rate>>,
    /// dash.js's buffer targets: a duration (all of them) or a table.
    pub buffer_target: Option<serde_json::Value>,
    /// `"nominal"` (bitrate × duration) or a positive number scaling that.
    pub segment_sizes: Option<serde_json::Value>,
    /// The server's interface rate (`"1Gbps"` default) or `"unlimited"`.
    pub line_rate: Option<serde_json::Value>,
    /// The server's TCP send buffer in payload bytes (`"2MB"`); not modelled by default.
    pub send_buffer: Option<Bytes>,
}

/// A DASH flow, resolved.
#[derive(Debug, Clone)]
pub struct DashFlow {
    pub controller: ControllerRecipe,
    pub session: DashConfig,
}

impl DashSpec {
    pub(crate) fn resolve(self, common: &Common, check: &Checking) -> Result<FlowKind, FieldError> {
        let at = common.at;
        super::packet_size(at, self.packet_size, MAX_PACKET)?;
        let field = |name: &str| at.field(name);
        let session = self.session(&field).map_err(FieldError::from)?;
        if common.scheduled {
            return Err(at.err(
                "active",
                "a DASH session runs from start to stop (its player pauses by itself); active schedules are for video, cbr and audio flows",
            ));
        }
        let ctx = check.context(common, None, rtcc_core::packet::EcnMode::Off);
        let controller = ControllerRecipe::check(
            at,
            self.controller.as_deref(),
            self.params,
            None,
            &ctx,
            check.registry,
        )?;
        Ok(FlowKind::Dash(DashFlow {
            controller,
            session,
        }))
    }

    /// The session of a `dash` flow, every field checked.
    fn session(&self, at: &dyn Fn(&str) -> String) -> Result<DashConfig, (String, String)> {
        let f = self;
        let defaults = DashConfig::default();
        let http = match &f.http {
            None => defaults.http,
            Some(h) => HttpVersion::parse(h).map_err(|m| (at("http"), m))?,
        };
        let abr = match &f.abr {
            None => defaults.abr,
            Some(a) => AbrKind::parse(a).map_err(|m| (at("abr"), m))?,
        };
        let segments = match f.segments {
            None => defaults.segments,
            Some(n) if (1..=100_000).contains(&n) => n as usize,
            Some(n) => return Err((at("segments"), format!("{n} is not between 1 and 100000"))),
        };
        let segment_duration = f.segment_duration.unwrap_or(defaults.segment_duration);
        if segment_duration < Duration::from_millis(100)
            || segment_duration > Duration::from_secs_f64(60.0)
        {
            return Err((
                at("segment_duration"),
                format!("{segment_duration} is not between 100ms and 60s"),
            ));
        }
        let ladder_bps = match &f.ladder {
            None => defaults.ladder_bps.clone(),
            Some(rates) => {
                if rates.is_empty() {
                    return Err((
                        at("ladder"),
                        "needs at least one rate, e.g. [\"1Mbps\", \"5Mbps\"]".into(),
                    ));
                }
                for (i, r) in rates.iter().enumerate() {
                    if r.bps().is_nan() || r.bps() <= 0.0 {
                        return Err((
                            at(&format!("ladder[{i}]")),
                            format!("{r} must be a positive rate"),
                        ));
                    }
                    if i > 0 && r.bps() <= rates[i - 1].bps() {
                        return Err((
                            at(&format!("ladder[{i}]")),
                            format!(
                                "{r} is not above {}: the ladder goes up, lowest rung first",
                                rates[i - 1]
                            ),
                        ));
                    }
                }
                if rates.len() > u16::MAX as usize {
                    return Err((at("ladder"), "too many rungs".into()));
                }
                rates.iter().map(|r| r.bps()).collect()
            }
        };
        let buffer = resolve_buffer_target(f.buffer_target.as_ref()).map_err(|(sub, m)| {
            let field = if sub.is_empty() {
                at("buffer_target")
            } else {
                at(&format!("buffer_target.{sub}"))
            };
            (field, m)
        })?;
        let segment_size_scale = match &f.segment_sizes {
            None => 1.0,
            Some(serde_json::Value::String(s)) if s == "nominal" => 1.0,
            Some(v) => match v.as_f64() {
                Some(x) if x > 0.0 && x <= 10.0 => x,
                _ => {
                    return Err((
                        at("segment_sizes"),
                        format!("expected \"nominal\" (bitrate x duration) or a scale of it between 0 and 10 (e.g. 0.9), got {v}"),
                    ))
                }
            },
        };
        let line_rate = match &f.line_rate {
            None => defaults.line_rate,
            Some(serde_json::Value::String(s)) if s == "unlimited" => None,
            Some(serde_json::Value::String(s)) => {
                let r = Rate::parse(s).map_err(|e| (at("line_rate"), e.to_string()))?;
                if r.bps().is_nan() || r.bps() < 1e6 {
                    return Err((at("line_rate"), format!("{r} is below 1Mbps")));
                }
                Some(r)
            }
            Some(other) => {
                return Err((
                    at("line_rate"),
                    format!("expected a rate (\"1Gbps\") or \"unlimited\", got {other}"),
                ))
            }
        };
        let cfg = DashConfig {
            http,
            abr,
            segments,
            segment_duration,
            ladder_bps,
            buffer,
            segment_size_scale,
            packet_size: f.packet_size.map_or(MAX_PACKET, |b| b.0) as u32,
            delayed_ack: f.delayed_ack.unwrap_or(defaults.delayed_ack),
            slow_start_after_idle: f
                .slow_start_after_idle
                .unwrap_or(defaults.slow_start_after_idle),
            line_rate,
            send_buffer: match f.send_buffer {
                None => None,
                Some(b) => {
                    rtcc_core::tcp::sndbuf::SendBuffer::new(b)
                        .map_err(|e| (at("send_buffer"), e.to_string()))?;
                    Some(b)
                }
            },
        };
        if cfg.packet_size <= rtcc_core::tcp::TCP_IP_HEADER + 100 {
            return Err((
                at("packet_size"),
                format!(
                    "{}B leaves no room for data after 52 bytes of TCP/IP headers",
                    cfg.packet_size
                ),
            ));
        }
        let largest = (0..cfg.ladder_bps.len())
            .map(|q| cfg.segment_bytes(0, q))
            .max()
            .unwrap_or(0);
        if largest > u32::MAX as u64 / 2 {
            return Err((at("ladder"), "a segment would be larger than 2 GB".into()));
        }
        Ok(cfg)
    }
}

impl DashFlow {
    pub(crate) fn endpoints(
        &self,
        f: &FlowConfig,
        b: &Building,
    ) -> Result<[Box<dyn Endpoint>; 2], String> {
        let ssrcs = Ssrcs::for_flow(b.index as u32);
        let make = connection_controllers(&self.controller, f, b)?;
        Ok([
            Box::new(DashServerEndpoint::new(
                self.session.clone(),
                make,
                ssrcs.media,
            )),
            Box::new(DashClientEndpoint::new(
                self.session.clone(),
                f.receiver_start(),
                ssrcs.media,
            )),
        ])
    }
}

/// `buffer_target = "60s"` (every target) or `{ stable, top_quality, top_quality_long_form,
/// long_form_threshold }`, each optional. Errors name the sub-field.
fn resolve_buffer_target(v: Option<&serde_json::Value>) -> Result<BufferTargets, (String, String)> {
    let mut t = BufferTargets::default();
    let Some(v) = v else {
        return Ok(t);
    };
    let dur = |sub: &str, x: &serde_json::Value| -> Result<Duration, (String, String)> {
        let s = x.as_str().ok_or_else(|| {
            (
                sub.to_string(),
                format!("expected a duration like \"12s\", got {x}"),
            )
        })?;
        let d = Duration::parse(s).map_err(|e| (sub.to_string(), e.to_string()))?;
        if d.0 == 0 {
            return Err((sub.to_string(), "must be longer than 0s".into()));
        }
        Ok(d)
    };
    match v {
        serde_json::Value::String(_) => {
            let d = dur("", v)?;
            t.stable = d;
            t.top_quality = d;
            t.top_quality_long_form = d;
        }
        serde_json::Value::Object(o) => {
            for (k, x) in o {
                let d = dur(k, x)?;
                match k.as_str() {
                    "stable" => t.stable = d,
                    "top_quality" => t.top_quality = d,
                    "top_quality_long_form" => t.top_quality_long_form = d,
                    "long_form_threshold" => t.long_form_threshold = d,
                    _ => {
                        return Err((
                            k.clone(),
                            "unknown field; buffer_target takes stable, top_quality, top_quality_long_form, long_form_threshold".into(),
                        ))
                    }
                }
            }
        }
        other => {
            return Err((
                String::new(),
                format!("expected a duration (\"60s\") or a table {{ stable = \"12s\", top_quality = \"30s\", top_quality_long_form = \"60s\", long_form_threshold = \"600s\" }}, got {other}"),
            ))
        }
    }
    Ok(t)
}
