//! Controllers written in Python: an adapter that implements `Controller` by calling a Python
//! object's methods, and the process-wide registry that `rtcc.register_controller` extends.
//!
//! The object has `decision()` (a dict with `target_bps` and optionally `pacing_bps`,
//! `cwnd_bytes`, `padding_bps`) and `on_feedback(now_s, report)`; `on_packet_sent(now_s, seq,
//! size, kind)` and the timer pair `next_timeout()` / `on_timeout(now_s)` are optional. The
//! decision and the timer are read again after each call. Controller methods return nothing, so
//! the first exception is kept (the rest of the run uses the last good decision) and raised when
//! the run ends ([`take_error`]).

use numpy::IntoPyArray;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use rtcc_core::cc::{Controller, ControllerContext, ControllerError, ControllerInfo, Decision};
use rtcc_core::cc::{FeedbackPolicy, FrameController, MediaDefaults};
use rtcc_core::cc::{ParamDoc, Params, Registry};
use rtcc_core::packet::{FeedbackReport, FrameAck, FrameInfo, PacketKind, RateReport, SentPacket};
use rtcc_core::{Rate, Time};
use std::sync::{Arc, LazyLock, Mutex};

/// The builtin controllers and those registered from Python.
static REGISTRY: LazyLock<Mutex<Registry>> = LazyLock::new(|| {
    let mut r = Registry::builtin();
    r.register(crate::learn::onnx_info())
        .expect("onnx is not a builtin name");
    Mutex::new(r)
});

/// A copy of the registry to validate and run with (no lock is held while Python code runs).
pub fn registry() -> Registry {
    REGISTRY.lock().unwrap().clone()
}

/// The first exception a Python controller raised in the current run. Process-wide, not per
/// thread: the live transport may run a controller on a thread of its own, and its error must
/// still reach the command that started it.
static FIRST_ERROR: Mutex<Option<PyErr>> = Mutex::new(None);

/// The first exception a Python controller raised since the last call, if any.
pub fn take_error() -> Option<PyErr> {
    FIRST_ERROR.lock().unwrap_or_else(|e| e.into_inner()).take()
}

/// Keep `e` as the run's first exception unless one is kept already (the run raises it when it
/// ends); Python encoders report theirs here too.
pub fn keep_error(e: PyErr) {
    FIRST_ERROR
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert(e);
}

/// `ValueError: boom`.
pub fn describe(py: Python<'_>, e: &PyErr) -> String {
    let kind = e
        .get_type(py)
        .name()
        .map_or_else(|_| "Exception".to_string(), |n| n.to_string());
    format!("{kind}: {}", e.value(py))
}

/// A Python dict read as `T` through its JSON text (the scenario's own forms: durations as
/// text); the error is serde's.
fn from_dict<T: serde::de::DeserializeOwned>(d: &Bound<'_, PyDict>) -> PyResult<Result<T, String>> {
    let json: String = d
        .py()
        .import("json")?
        .call_method1("dumps", (d,))?
        .extract()?;
    Ok(serde_json::from_str(&json).map_err(|e| e.to_string()))
}

/// Register `factory(params: dict, ctx: dict)` under `name`; `params` maps each parameter name to
/// its default as scenario text ("" for a required one).
pub fn register(
    name: &str,
    factory: Py<PyAny>,
    summary: &str,
    params: Option<&Bound<'_, PyDict>>,
    feedback: Option<&Bound<'_, PyDict>>,
    media: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    // The feedback the receiver sends this controller's flows, in the scenario's `feedback`
    // form; flows may still set their own.
    let feedback = match feedback {
        None => FeedbackPolicy::default(),
        Some(d) => {
            let policy: FeedbackPolicy = from_dict(d)?.map_err(|e| {
                PyValueError::new_err(format!(
                    "feedback: {e} (keys: interval, per_frame, frame_acks, rate_reports; \
                     durations as text, e.g. \"50ms\")"
                ))
            })?;
            policy.check().map_err(|(key, problem)| {
                let dot = if key.is_empty() { "" } else { "." };
                PyValueError::new_err(format!("feedback{dot}{key}: {problem}"))
            })?;
            policy
        }
    };
    // The media settings its video flows take unless their scenario writes them.
    let media = match media {
        None => MediaDefaults::default(),
        Some(d) => {
            let media: MediaDefaults = from_dict(d)?.map_err(|e| {
                PyValueError::new_err(format!(
                    "media: {e} (keys: {})",
                    MediaDefaults::FIELDS.join(", ")
                ))
            })?;
            media
                .check(std::path::Path::new("."))
                .map_err(|(field, problem)| {
                    PyValueError::new_err(format!("media.{field}: {problem}"))
                })?;
            media
        }
    };
    let mut docs = Vec::new();
    for (k, v) in params.into_iter().flat_map(|d| d.iter()) {
        docs.push(ParamDoc {
            name: k.str()?.to_string().into(),
            default: v.str()?.to_string().into(),
            doc: "".into(),
        });
    }
    let controller = name.to_string();
    let info = ControllerInfo {
        name: name.into(),
        summary: summary.into(),
        params: docs,
        feedback,
        media,
        build: Arc::new(move |params, ctx, _registry| {
            Python::attach(|py| PyController::new(py, &controller, factory.bind(py), params, ctx))
                .map(|c| Box::new(c) as Box<dyn Controller>)
        }),
    };
    REGISTRY
        .lock()
        .unwrap()
        .register(info)
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

struct PyController {
    name: String,
    obj: Py<PyAny>,
    on_packet_sent: bool,
    timer: bool,
    /// The object has `on_frame_ack`, `on_frame_encoded`, `on_rate_report`.
    frame_acks: bool,
    frames_encoded: bool,
    rate_reports: bool,
    decision: Decision,
    next_timeout: Option<Time>,
    failed: bool,
}

impl PyController {
    fn new(
        py: Python<'_>,
        name: &str,
        factory: &Bound<'_, PyAny>,
        params: &Params,
        ctx: &ControllerContext,
    ) -> Result<PyController, ControllerError> {
        let bad = |message: String| ControllerError::BadParams {
            controller: name.into(),
            message,
        };
        let call_factory = || -> PyResult<Bound<'_, PyAny>> {
            let json = serde_json::to_string(params).expect("parameters serialise");
            let params = py.import("json")?.call_method1("loads", (json,))?;
            let context = PyDict::new(py);
            context.set_item("now_s", ctx.now.as_secs_f64())?;
            context.set_item("fps", ctx.fps)?;
            context.set_item("max_payload_bytes", ctx.max_payload.0)?;
            factory.call1((params, context))
        };
        let obj =
            call_factory().map_err(|e| bad(format!("the factory raised {}", describe(py, &e))))?;
        let mut c = PyController {
            name: name.into(),
            on_packet_sent: obj.hasattr("on_packet_sent").unwrap_or(false),
            timer: obj.hasattr("next_timeout").unwrap_or(false),
            frame_acks: obj.hasattr("on_frame_ack").unwrap_or(false),
            frames_encoded: obj.hasattr("on_frame_encoded").unwrap_or(false),
            rate_reports: obj.hasattr("on_rate_report").unwrap_or(false),
            obj: obj.unbind(),
            decision: Decision::rate_only(Rate::ZERO, None),
            next_timeout: None,
            failed: false,
        };
        c.refresh(py).map_err(|e| bad(e.value(py).to_string()))?;
        Ok(c)
    }

    /// Read the decision and the timer again; an error names the method that failed.
    fn refresh(&mut self, py: Python<'_>) -> PyResult<()> {
        let obj = self.obj.bind(py);
        let failed = |method, e| context_error(py, &self.name, method, e);
        self.decision = read_decision(obj).map_err(|e| failed("decision", e))?;
        if self.timer {
            let t = obj
                .call_method0("next_timeout")
                .and_then(|t| t.extract::<Option<f64>>());
            self.next_timeout = t
                .map_err(|e| failed("next_timeout", e))?
                .map(Time::from_secs_f64);
        }
        Ok(())
    }

    /// Call `method` with the arguments `args` builds, then refresh; the first exception is kept.
    fn call<F>(&mut self, method: &str, args: F)
    where
        F: for<'py> FnOnce(Python<'py>) -> PyResult<Bound<'py, PyTuple>>,
    {
        if self.failed {
            return;
        }
        let result = Python::attach(|py| {
            args(py)
                .and_then(|a| self.obj.call_method1(py, method, a))
                .map_err(|e| context_error(py, &self.name, method, e))
                .and_then(|_| self.refresh(py))
        });
        if let Err(e) = result {
            self.failed = true;
            keep_error(e);
        }
    }
}

/// A RuntimeError naming the controller and the method, caused by the Python exception.
fn context_error(py: Python<'_>, name: &str, method: &str, e: PyErr) -> PyErr {
    let err = PyRuntimeError::new_err(format!(
        "Python controller {name:?}: {method}() raised {}",
        describe(py, &e)
    ));
    err.set_cause(py, Some(e));
    err
}

/// `decision()`'s dict as a [`Decision`].
fn read_decision(obj: &Bound<'_, PyAny>) -> PyResult<Decision> {
    let d = obj.call_method0("decision")?;
    let get = |key: &str| d.call_method1("get", (key,))?.extract::<Option<f64>>();
    let target = d.get_item("target_bps")?.extract::<f64>()?;
    let padding = get("padding_bps")?.unwrap_or(0.0);
    let pacing = get("pacing_bps")?;
    let valid = |r: f64| r.is_finite() && r >= 0.0;
    if !(valid(target) && valid(padding) && pacing.is_none_or(|p| valid(p) && p > 0.0)) {
        return Err(PyValueError::new_err(format!(
            "rates must be finite and not negative (pacing_bps positive), got {d}"
        )));
    }
    Ok(Decision {
        cwnd: get("cwnd_bytes")?.map(|c| c.max(0.0) as u64),
        padding_rate: Rate(padding),
        ..Decision::rate_only(Rate(target), pacing.map(Rate))
    })
}

fn kind_name(k: PacketKind) -> &'static str {
    match k {
        PacketKind::Media => "media",
        PacketKind::Padding => "padding",
        PacketKind::Retransmission => "retransmission",
        PacketKind::Probe => "probe",
        PacketKind::Fec => "fec",
        PacketKind::Control => "control",
    }
}

impl Controller for PyController {
    fn on_packet_sent(&mut self, now: Time, pkt: &SentPacket) {
        if self.on_packet_sent {
            let args = (now.as_secs_f64(), pkt.seq, pkt.size, kind_name(pkt.kind));
            self.call("on_packet_sent", |py| args.into_pyobject(py));
        }
    }

    fn on_feedback(&mut self, now: Time, report: &FeedbackReport) {
        self.call("on_feedback", |py| {
            let p = &report.packets;
            let d = PyDict::new(py);
            d.set_item(
                "seq",
                p.iter()
                    .map(|r| r.sent.seq)
                    .collect::<Vec<_>>()
                    .into_pyarray(py),
            )?;
            d.set_item(
                "size",
                p.iter()
                    .map(|r| r.sent.size)
                    .collect::<Vec<_>>()
                    .into_pyarray(py),
            )?;
            let send: Vec<f64> = p.iter().map(|r| r.sent.send_time.as_secs_f64()).collect();
            d.set_item("send_time_s", send.into_pyarray(py))?;
            let recv: Vec<f64> = p
                .iter()
                .map(|r| r.receive_time.map_or(f64::NAN, |t| t.as_secs_f64()))
                .collect();
            d.set_item("receive_time_s", recv.into_pyarray(py))?;
            (now.as_secs_f64(), d).into_pyobject(py)
        });
    }

    fn on_rate_report(&mut self, now: Time, report: &RateReport) {
        if self.rate_reports {
            self.call("on_rate_report", |py| {
                let d = PyDict::new(py);
                d.set_item("window_start_s", report.window_start.as_secs_f64())?;
                d.set_item("window_end_s", report.window_end.as_secs_f64())?;
                d.set_item("bytes", report.bytes)?;
                d.set_item("packets", report.packets)?;
                (now.as_secs_f64(), d).into_pyobject(py)
            });
        }
    }

    fn frame_controller(&mut self) -> Option<&mut dyn FrameController> {
        (self.frame_acks || self.frames_encoded).then_some(self as &mut dyn FrameController)
    }

    fn on_timeout(&mut self, now: Time) {
        if self.timer {
            self.call("on_timeout", |py| (now.as_secs_f64(),).into_pyobject(py));
        }
    }

    fn next_timeout(&self) -> Option<Time> {
        self.next_timeout.filter(|_| !self.failed)
    }

    fn decision(&self) -> Decision {
        self.decision
    }
}

/// Frames for a Python controller that has `on_frame_ack(now_s, ack)` or
/// `on_frame_encoded(now_s, frame)` (each a dict; times in seconds, the receiver's clock for the
/// acknowledgement's).
impl FrameController for PyController {
    fn on_frame_ack(&mut self, now: Time, ack: &FrameAck) {
        if self.frame_acks {
            self.call("on_frame_ack", |py| {
                let d = PyDict::new(py);
                d.set_item("frame", ack.frame)?;
                d.set_item("first_receive_time_s", ack.first_receive_time.as_secs_f64())?;
                d.set_item("last_receive_time_s", ack.last_receive_time.as_secs_f64())?;
                d.set_item("complete_time_s", ack.complete_time.as_secs_f64())?;
                d.set_item("size", ack.size)?;
                d.set_item("lost", ack.lost)?;
                (now.as_secs_f64(), d).into_pyobject(py)
            });
        }
    }

    fn on_frame_encoded(&mut self, now: Time, frame: &FrameInfo) {
        if self.frames_encoded {
            self.call("on_frame_encoded", |py| {
                let d = PyDict::new(py);
                d.set_item("frame", frame.frame)?;
                d.set_item("capture_time_s", frame.capture_time.as_secs_f64())?;
                d.set_item("size", frame.size)?;
                d.set_item("target_bps", frame.target.bps())?;
                d.set_item("packets", frame.packets)?;
                d.set_item("keyframe", frame.keyframe)?;
                (now.as_secs_f64(), d).into_pyobject(py)
            });
        }
    }
}
