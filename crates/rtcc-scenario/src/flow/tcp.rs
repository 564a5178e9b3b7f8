//! `kind = "tcp"`: a TCP-like flow, `packet_size`-byte segments under a window-based
//! controller (`reno`, `cubic`, `bbr`, ...), whose application is backlogged (`bulk`, the
//! default), switches on and off (`onoff`) or sends a finite amount (`finite`). `app = { model =
//! "short" }` makes it short downloads on fresh connections instead ([`super::short_tcp`]).

use super::short_tcp::{resolve_short, ShortTcpFlow};
use super::{packet_size, At, Building, Checking, Common, EcnFlag, FlowConfig, FlowKind};
use crate::controller::ControllerRecipe;
use crate::error::FieldError;
use crate::MAX_PACKET;
use rtcc_core::cc::Params;
use rtcc_core::endpoint::video_send::Ssrcs;
use rtcc_core::endpoint::{Endpoint, TcpRecvEndpoint, TcpSendEndpoint};
use rtcc_core::packet::EcnMode;
use rtcc_core::short_tcp::ShortFlowConfig;
use rtcc_core::tcp::{App, BulkSender};
use rtcc_core::{Bytes, Duration};
use serde::Deserialize;

/// A TCP flow's fields.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcpSpec {
    pub controller: Option<String>,
    #[serde(default)]
    pub params: Params,
    /// Segment size on the wire (default 1500B).
    pub packet_size: Option<Bytes>,
    /// The application: `{ model = "bulk" | "onoff" | "finite" | "short", ... }`.
    pub app: Option<serde_json::Value>,
    /// The receiver acknowledges every second segment (or after 40 ms) instead of each.
    pub delayed_ack: Option<bool>,
    /// The sender restarts its window after an idle period longer than its RTO (Linux
    /// `tcp_slow_start_after_idle`; default false).
    pub slow_start_after_idle: Option<bool>,
    /// ECN-capable segments and ECN-Echo (`true`, RFC 3168; default false), or `"l4s"`: ECT(1)
    /// segments and per-packet marks for a scalable controller (`prague`, whose default it is).
    pub ecn: Option<EcnFlag>,
}

/// A TCP flow, resolved.
#[derive(Debug, Clone)]
pub struct TcpFlow {
    pub controller: ControllerRecipe,
    pub app: App,
    pub delayed_ack: bool,
    pub mss: Bytes,
    pub slow_start_after_idle: bool,
    pub ecn: EcnMode,
}

impl TcpSpec {
    pub(crate) fn resolve(self, common: &Common, check: &Checking) -> Result<FlowKind, FieldError> {
        let at = common.at;
        let delayed_ack = self.delayed_ack.unwrap_or(false);
        let mss = packet_size(at, self.packet_size, MAX_PACKET)?;
        let app = resolve_app(self.app.as_ref()).map_err(|(sub, m)| at.sub_err("app", &sub, m))?;
        if let TcpApp::Short(_) = app {
            if self.slow_start_after_idle.is_some() {
                return Err(at.err(
                    "slow_start_after_idle",
                    "a short flow opens a fresh connection for each download (slow start from the initial window); remove this field",
                ));
            }
            if mss.0 <= rtcc_core::tcp::TCP_IP_HEADER as u64 {
                return Err(at.err(
                    "packet_size",
                    format!("{mss} leaves no room for data after 52 bytes of TCP/IP headers"),
                ));
            }
        }
        if common.scheduled {
            return Err(at.err(
                "active",
                "a TCP flow pauses through its application: app = { model = \"onoff\", on = \"2s\", off = \"3s\" }; active schedules are for video, cbr and audio flows",
            ));
        }
        let ecn_given = self.ecn.map(|e| e.0);
        let ctx = check.context(common, None, ecn_given.unwrap_or_default());
        let controller = ControllerRecipe::check(
            at,
            self.controller.as_deref(),
            self.params,
            None,
            &ctx,
            check.registry,
        )?;
        let ecn = tcp_ecn(at, &controller.name, self.ecn.map(|e| e.0))?;
        Ok(match app {
            TcpApp::Sender(app) => FlowKind::Tcp(TcpFlow {
                controller,
                app,
                delayed_ack,
                mss,
                slow_start_after_idle: self.slow_start_after_idle.unwrap_or(false),
                ecn,
            }),
            TcpApp::Short(config) => FlowKind::ShortTcp(ShortTcpFlow {
                controller,
                config,
                delayed_ack,
                mss,
                ecn,
            }),
        })
    }
}

impl TcpFlow {
    pub(crate) fn endpoints(
        &self,
        f: &FlowConfig,
        b: &Building,
    ) -> Result<[Box<dyn Endpoint>; 2], String> {
        let ssrcs = Ssrcs::for_flow(b.index as u32);
        let ctx = f.context(Some(b.capacity.clone()), b.coupling);
        let controller = b.controller(&self.controller, &ctx)?;
        let mut sender = BulkSender::new(controller, self.mss.0 as u32, self.app, f.start);
        sender.set_slow_start_after_idle(self.slow_start_after_idle);
        sender.set_ecn(self.ecn);
        let mut recv = TcpRecvEndpoint::new(ssrcs.media, self.delayed_ack);
        recv.set_ecn(self.ecn);
        Ok([
            Box::new(TcpSendEndpoint::new(sender, ssrcs.media)),
            Box::new(recv),
        ])
    }
}

/// What a `tcp` flow's application is: one the TCP sender runs itself, or short flows'
/// downloads and idle periods, which their own endpoint drives.
enum TcpApp {
    Sender(App),
    Short(ShortFlowConfig),
}

/// `{ model = "bulk" }`, `{ model = "onoff", on = "1s", off = "1s" }`, `{ model = "finite", size = "1MB" }`,
/// `{ model = "short", min_size, max_size, mean_idle, initial }`. Errors give the bad sub-field
/// (empty for the table itself).
fn resolve_app(v: Option<&serde_json::Value>) -> Result<TcpApp, (String, String)> {
    const ALLOWED: &str = "expected { model = \"bulk\" }, { model = \"onoff\", on = \"1s\", off = \"1s\" }, { model = \"finite\", size = \"1MB\" } or { model = \"short\" }";
    let whole = |m: String| (String::new(), m);
    let Some(v) = v else {
        return Ok(TcpApp::Sender(App::Backlogged));
    };
    let obj = v
        .as_object()
        .ok_or_else(|| whole(format!("{ALLOWED}, got {v}")))?;
    let get = |k: &str| obj.get(k).and_then(|x| x.as_str());
    let unknown = |allowed: &[&str]| obj.keys().find(|k| !allowed.contains(&k.as_str())).cloned();
    let duration = |k: &str| -> Result<Duration, (String, String)> {
        Duration::parse(
            get(k).ok_or_else(|| whole(format!("the onoff model needs {k} (a duration)")))?,
        )
        .map_err(|e| whole(e.to_string()))
    };
    match get("model") {
        Some("bulk") => match unknown(&["model"]) {
            Some(k) => Err(whole(format!("the bulk model takes no field {k:?}"))),
            None => Ok(TcpApp::Sender(App::Backlogged)),
        },
        Some("onoff") => {
            if let Some(k) = unknown(&["model", "on", "off"]) {
                return Err(whole(format!(
                    "unknown field {k:?}; the onoff model takes on, off"
                )));
            }
            let (on, off) = (duration("on")?, duration("off")?);
            if on.0 == 0 {
                return Err(whole("on must be longer than 0s".into()));
            }
            Ok(TcpApp::Sender(App::OnOff { on, off }))
        }
        Some("finite") => {
            if let Some(k) = unknown(&["model", "size"]) {
                return Err(whole(format!(
                    "unknown field {k:?}; the finite model takes size"
                )));
            }
            let size = Bytes::parse(
                get("size")
                    .ok_or_else(|| whole("the finite model needs size (e.g. \"1MB\")".into()))?,
            )
            .map_err(|e| whole(e.to_string()))?;
            if size.0 == 0 {
                return Err(whole("size must be more than 0B".into()));
            }
            Ok(TcpApp::Sender(App::Finite { bytes: size.0 }))
        }
        Some("short") => resolve_short(obj).map(TcpApp::Short),
        _ => Err(whole(ALLOWED.into())),
    }
}

/// The TCP controllers whose reduction scales with the marked share (they need per-packet marks
/// and ECT(1) to reach an L4S queue).
const SCALABLE_TCP: [&str; 1] = ["prague"];

/// A TCP flow's ECN: a scalable controller runs L4S (its default; RFC 3168's one echo per round
/// trip cannot tell it how much was marked), a classic one RFC 3168 or none (ECT(1) would put it
/// in an L4S queue, whose marks it would answer with a classic halving, RFC 9331 §4.3).
fn tcp_ecn(at: At, controller: &str, given: Option<EcnMode>) -> Result<EcnMode, FieldError> {
    let scalable = SCALABLE_TCP.contains(&controller);
    match (scalable, given) {
        (true, None | Some(EcnMode::L4s)) => Ok(EcnMode::L4s),
        (true, Some(other)) => Err(at.err(
            "ecn",
            format!(
                "{controller} is a scalable (L4S) controller: it needs ecn = \"l4s\" (its \
                 default), not {}",
                other.name()
            ),
        )),
        (false, Some(EcnMode::L4s)) => Err(at.err(
            "ecn",
            format!(
                "ecn = \"l4s\" needs a scalable TCP controller ({}); {controller} reacts to \
                 RFC 3168 ECN: write ecn = true",
                SCALABLE_TCP.join(", ")
            ),
        )),
        (false, given) => Ok(given.unwrap_or_default()),
    }
}
