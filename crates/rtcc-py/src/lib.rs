//! `rtcc._core`: thin Python bindings. Scenarios go in as JSON, results come back as NumPy
//! columns; there is no logic here beyond conversion.

use numpy::IntoPyArray;
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use rtcc_core::cc;
use rtcc_core::metrics::PacketRecord;
use rtcc_core::net::tracegen::{generate_lte, LteTraceConfig};
use rtcc_core::{Duration, Rate};
use rtcc_sim::Scenario;
use std::path::Path;

mod pycontroller;

create_exception!(
    _core,
    ScenarioError,
    PyValueError,
    "An invalid scenario, trace, controller or parameter."
);

fn scenario_from_json(
    scenario_json: &str,
    base_dir: &str,
    registry: &cc::Registry,
) -> PyResult<Scenario> {
    Scenario::from_json_str_with_registry(scenario_json, Path::new(base_dir), "scenario", registry)
        .map_err(|e| {
            ScenarioError::new_err(format!(
                "{}: {}",
                if e.field.is_empty() {
                    "scenario"
                } else {
                    &e.field
                },
                e.message
            ))
        })
}

/// Validate a scenario (JSON text); raises ScenarioError.
#[pyfunction]
fn validate(scenario_json: &str, base_dir: &str) -> PyResult<()> {
    scenario_from_json(scenario_json, base_dir, &pycontroller::registry()).map(|_| ())
}

/// An upper estimate of the data packets a run of the scenario logs, and the largest the
/// command line runs without `--allow-large`.
#[pyfunction]
fn estimated_packets(scenario_json: &str, base_dir: &str) -> PyResult<(f64, f64)> {
    let sc = scenario_from_json(scenario_json, base_dir, &pycontroller::registry())?;
    Ok((
        sc.estimated_packets(),
        rtcc_sim::scenario::MAX_ESTIMATED_PACKETS,
    ))
}

fn i64_of(t: Option<rtcc_core::Time>) -> i64 {
    t.map_or(-1, |t| t.0 as i64)
}

/// The packet log's columns (NumPy arrays) for the records of `parts`, one after the other.
fn packet_columns<'py>(py: Python<'py>, parts: &[&[PacketRecord]]) -> PyResult<Bound<'py, PyDict>> {
    let cols = PyDict::new(py);
    let records = || parts.iter().flat_map(|p| p.iter());
    macro_rules! col {
        ($name:literal, $map:expr) => {
            cols.set_item(
                $name,
                records().map($map).collect::<Vec<_>>().into_pyarray(py),
            )?
        };
    }
    col!("flow", |p| p.flow);
    col!("seq", |p| p.seq);
    col!("kind", |p| p.kind as u8);
    col!("size", |p| p.size);
    col!("frame", |p| p.frame.map_or(-1, |f| f as i64));
    col!("send_ns", |p| p.send.0 as i64);
    col!("enqueue_ns", |p| p.enqueue.0 as i64);
    col!("depart_ns", |p| i64_of(p.depart));
    col!("recv_ns", |p| i64_of(p.recv));
    col!("dropped", |p| p.dropped);
    Ok(cols)
}

/// Run a scenario (JSON text) and return its summary and logs as NumPy columns.
///
/// `packet_sink`: a callable that receives the packet log in chunks (dicts of NumPy columns,
/// each one flow's packets in send order) as the run goes, instead of the whole log at the end;
/// the result's `packets` is then None. `keep_packets=False` without a sink forgets the packet
/// log (only the summary and the other logs are returned). Either way the run holds about 48
/// bytes per packet for its summary instead of the 88 of a kept record.
#[pyfunction]
#[pyo3(signature = (scenario_json, base_dir, seed=None, progress=None, packet_sink=None, keep_packets=true))]
fn run<'py>(
    py: Python<'py>,
    scenario_json: &str,
    base_dir: &str,
    seed: Option<u64>,
    progress: Option<Bound<'py, PyAny>>,
    packet_sink: Option<Bound<'py, PyAny>>,
    keep_packets: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let registry = pycontroller::registry();
    let sc = scenario_from_json(scenario_json, base_dir, &registry)?;
    let mut callback_error: Option<PyErr> = None;
    let mut report = |fraction: f64| {
        if callback_error.is_some() {
            return;
        }
        if let Err(e) = py.check_signals() {
            callback_error = Some(e);
        } else if let Some(cb) = &progress {
            if let Err(e) = cb.call1((fraction,)) {
                callback_error = Some(e);
            }
        }
    };
    pycontroller::take_error(); // none should be left from an earlier run
    let mut sink_error: Option<PyErr> = None;
    let mut sink = |chunk: &[PacketRecord]| {
        let Some(callable) = &packet_sink else {
            return; // discarded
        };
        if sink_error.is_none() {
            if let Err(e) = packet_columns(py, &[chunk]).and_then(|c| callable.call1((c,))) {
                sink_error = Some(e);
            }
        }
    };
    let streamed = packet_sink.is_some() || !keep_packets;
    let result = if streamed {
        rtcc_sim::run::run_streaming_with_registry(&sc, seed, &mut report, &registry, &mut sink)
    } else {
        rtcc_sim::run_with_registry(&sc, seed, &mut report, &registry)
    }
    .map_err(ScenarioError::new_err)?;
    if let Some(e) = pycontroller::take_error().or(callback_error).or(sink_error) {
        return Err(e);
    }

    result_dict(py, &sc, &result, streamed)
}

/// A live run's logs (`rtcc send`'s, `rtcc recv`'s and optionally `rtcc emu`'s log folders)
/// as the same dictionary [`run`] returns, summarised by the simulator's code: flow `flow` of the
/// scenario, alone.
#[pyfunction]
#[pyo3(signature = (scenario_json, base_dir, flow, send_dir, recv_dir, emu_dir=None))]
fn live_result<'py>(
    py: Python<'py>,
    scenario_json: &str,
    base_dir: &str,
    flow: usize,
    send_dir: &str,
    recv_dir: &str,
    emu_dir: Option<&str>,
) -> PyResult<Bound<'py, PyDict>> {
    let registry = pycontroller::registry();
    let sc = scenario_from_json(scenario_json, base_dir, &registry)?;
    let logs = rtcc_live::assemble::LiveLogs {
        send: send_dir.into(),
        recv: recv_dir.into(),
        emu: emu_dir.map(Into::into),
    };
    let result = rtcc_live::assemble::assemble(&sc, flow, &logs).map_err(PyValueError::new_err)?;
    let mut one = sc.clone();
    one.flows = vec![sc.flows[flow].clone()];
    result_dict(py, &one, &result, false)
}

/// What [`run`] returns: the summary's JSON text and the logs as NumPy columns.
fn result_dict<'py>(
    py: Python<'py>,
    sc: &rtcc_sim::Scenario,
    result: &rtcc_sim::RunResult,
    streamed: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("summary", result.summary.to_json())?;
    if streamed {
        out.set_item("packets", py.None())?;
    } else {
        let parts: Vec<&[PacketRecord]> = result.flows.iter().map(|f| &f.packets[..]).collect();
        out.set_item("packets", packet_columns(py, &parts)?)?;
    }

    macro_rules! col {
        ($d:expr, $name:literal, $iter:expr) => {
            $d.set_item($name, $iter.collect::<Vec<_>>().into_pyarray(py))?
        };
    }
    let end = rtcc_core::Time(sc.duration.0);
    let frames: Vec<_> = result.flows.iter().flat_map(|f| f.frames.iter()).collect();
    let delays: Vec<i64> = result
        .flows
        .iter()
        .flat_map(|f| {
            rtcc_core::metrics::frame_delays(&f.frames, end)
                .into_iter()
                .map(|d| d.map_or(-1, |d| d.0 as i64))
        })
        .collect();
    let cols = PyDict::new(py);
    col!(cols, "flow", frames.iter().map(|f| f.flow));
    col!(cols, "frame", frames.iter().map(|f| f.frame as i64));
    col!(
        cols,
        "capture_ns",
        frames.iter().map(|f| f.capture.0 as i64)
    );
    col!(cols, "size", frames.iter().map(|f| f.size));
    col!(cols, "target_bps", frames.iter().map(|f| f.target_bps));
    col!(cols, "packets", frames.iter().map(|f| f.packets as u32));
    col!(
        cols,
        "first_send_ns",
        frames.iter().map(|f| i64_of(f.first_send))
    );
    col!(
        cols,
        "last_send_ns",
        frames.iter().map(|f| i64_of(f.last_send))
    );
    col!(
        cols,
        "complete_ns",
        frames.iter().map(|f| i64_of(f.complete))
    );
    col!(cols, "delay_ns", delays.into_iter());
    // Playout (metrics::playout): display time (-1: never shown) and frame latency to display.
    let (mut display, mut latency) = (Vec::new(), Vec::new());
    for f in &result.flows {
        let shown = rtcc_core::metrics::playout::display_times(&f.frames);
        let lat = rtcc_core::metrics::playout::frame_latencies(&f.frames, &shown, end);
        display.extend(shown.iter().map(|&t| i64_of(t)));
        latency.extend(lat.iter().map(|d| d.0 as i64));
    }
    col!(cols, "keyframe", frames.iter().map(|f| f.keyframe));
    col!(
        cols,
        "psnr_db",
        frames.iter().map(|f| f.psnr_db.unwrap_or(f64::NAN))
    );
    col!(
        cols,
        "height",
        frames.iter().map(|f| f.resolution.map_or(0, |r| r.height))
    );
    col!(cols, "display_ns", display.into_iter());
    col!(cols, "latency_ns", latency.into_iter());
    col!(cols, "recovered", frames.iter().map(|f| f.recovered));
    col!(
        cols,
        "unrecoverable",
        frames.iter().map(|f| f.unrecoverable)
    );
    out.set_item("frames", cols)?;

    let st = &result.state;
    let cols = PyDict::new(py);
    col!(cols, "flow", st.flow.iter().copied());
    col!(cols, "time_ns", st.time.iter().map(|t| t.0 as i64));
    cols.set_item("signal", PyList::new(py, st.signal.iter())?)?;
    col!(cols, "value", st.value.iter().copied());
    out.set_item("state", cols)?;

    let cols = PyDict::new(py);
    col!(
        cols,
        "time_ns",
        result.capacity.iter().map(|c| c.0 .0 as i64)
    );
    col!(cols, "bps", result.capacity.iter().map(|c| c.1));
    out.set_item("capacity", cols)?;

    let flows = PyList::empty(py);
    for f in &result.flows {
        let d = PyDict::new(py);
        d.set_item("name", &f.config.name)?;
        d.set_item("controller", &f.config.controller)?;
        d.set_item("start_ns", f.config.start.0)?;
        d.set_item("stop_ns", f.config.stop.0)?;
        flows.append(d)?;
    }
    out.set_item("flows", flows)?;
    Ok(out)
}

/// The registered controllers with their parameters.
#[pyfunction]
fn controllers(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let list = PyList::empty(py);
    for info in &pycontroller::registry() {
        let d = PyDict::new(py);
        d.set_item("name", &info.name)?;
        d.set_item("summary", &info.summary)?;
        let params = PyList::empty(py);
        for p in &info.params {
            let pd = PyDict::new(py);
            pd.set_item("name", p.name.as_ref())?;
            pd.set_item("default", p.default.as_ref())?;
            pd.set_item("doc", p.doc.as_ref())?;
            params.append(pd)?;
        }
        d.set_item("params", params)?;
        list.append(d)?;
    }
    Ok(list)
}

/// Register a controller written in Python: `factory(params: dict, ctx: dict)` returns the
/// object (see `docs/controllers.md`); `params` maps parameter names to their defaults.
#[pyfunction]
#[pyo3(signature = (name, factory, summary="", params=None))]
fn register_controller(
    name: &str,
    factory: Py<PyAny>,
    summary: &str,
    params: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    pycontroller::register(name, factory, summary, params)
}

/// The live commands (`emu`, `send`, `recv`): `argv` is the whole command line, program name
/// first; returns the exit code. Runs until the command ends, with the GIL released.
#[pyfunction]
fn live_main(py: Python<'_>, argv: Vec<String>) -> i32 {
    py.detach(|| rtcc_live::cli::main(argv))
}

/// Run a standard benchmark case ("single" or "ten").
#[pyfunction]
#[pyo3(name = "bench")]
fn run_bench<'py>(py: Python<'py>, case: &str) -> PyResult<Bound<'py, PyDict>> {
    let r = rtcc_sim::bench::run_case(case).map_err(PyValueError::new_err)?;
    let d = PyDict::new(py);
    d.set_item("case", r.case)?;
    d.set_item("packets", r.packets)?;
    d.set_item("sim_seconds", r.sim_seconds)?;
    d.set_item("wall_seconds", r.wall_seconds)?;
    d.set_item("packets_per_second", r.packets_per_second)?;
    d.set_item("speedup", r.speedup)?;
    Ok(d)
}

/// A seeded LTE-like mahimahi trace (list of millisecond offsets).
#[pyfunction]
fn generate_lte_trace(seed: u64, duration_s: f64, mean_mbps: f64) -> PyResult<Vec<u64>> {
    if !(duration_s.is_finite() && duration_s > 0.0) {
        return Err(PyValueError::new_err(format!(
            "duration must be positive, got {duration_s}s"
        )));
    }
    let cfg = LteTraceConfig::new(
        seed,
        Duration::from_secs_f64(duration_s),
        Rate::from_mbps(mean_mbps),
    );
    generate_lte(&cfg).map_err(PyValueError::new_err)
}

/// Parse a rate such as "20Mbps" into bit/s.
#[pyfunction]
fn parse_rate(s: &str) -> PyResult<f64> {
    Rate::parse(s)
        .map(|r| r.bps())
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Parse a duration such as "40ms" into seconds.
#[pyfunction]
fn parse_duration(s: &str) -> PyResult<f64> {
    Duration::parse(s)
        .map(|d| d.as_secs_f64())
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Replay a packet log open loop into the controller of `flow` of a scenario
/// (`rtcc_sim::replay`). Columns, one entry per packet in sequence order: receive and
/// feedback times are -1 for "lost" and "never reported", frames -1 for none, kinds the log's
/// codes. Returns `{"time_ns", "target_bps", "signals": {name: values}}`, one entry per report
/// (NaN where a signal has no value at that report).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn replay_feedback<'py>(
    py: Python<'py>,
    scenario_json: &str,
    base_dir: &str,
    flow: usize,
    seq: Vec<u64>,
    send_ns: Vec<i64>,
    recv_ns: Vec<i64>,
    size: Vec<u32>,
    frame: Vec<i64>,
    kind: Vec<u8>,
    feedback_ns: Vec<i64>,
) -> PyResult<Bound<'py, PyDict>> {
    use rtcc_sim::replay::{replay_feedback as replay, LoggedPacket};
    let n = seq.len();
    if [
        send_ns.len(),
        recv_ns.len(),
        size.len(),
        frame.len(),
        kind.len(),
        feedback_ns.len(),
    ]
    .iter()
    .any(|&len| len != n)
    {
        return Err(PyValueError::new_err(
            "replay_feedback: the columns differ in length",
        ));
    }
    let registry = pycontroller::registry();
    let sc = scenario_from_json(scenario_json, base_dir, &registry)?;
    let time = |t: i64| (t >= 0).then_some(t as u64);
    let mut packets = Vec::with_capacity(n);
    for i in 0..n {
        if send_ns[i] < 0 {
            return Err(PyValueError::new_err(format!(
                "packet {}: no send time",
                seq[i]
            )));
        }
        packets.push(LoggedPacket {
            seq: seq[i],
            send_ns: send_ns[i] as u64,
            recv_ns: time(recv_ns[i]),
            size: size[i],
            frame: time(frame[i]),
            kind: rtcc_core::packet::PacketKind::try_from(kind[i])
                .map_err(|e| PyValueError::new_err(format!("packet {}: {e}", seq[i])))?,
            feedback_ns: time(feedback_ns[i]),
        });
    }
    let steps = replay(&sc, flow, &registry, &packets).map_err(ScenarioError::new_err)?;
    if let Some(e) = pycontroller::take_error() {
        return Err(e);
    }
    let mut names: Vec<&str> = Vec::new();
    for step in &steps {
        for (name, _) in &step.signals {
            if !names.contains(name) {
                names.push(name);
            }
        }
    }
    let signals = PyDict::new(py);
    for name in names {
        let values: Vec<f64> = steps
            .iter()
            .map(|s| {
                s.signals
                    .iter()
                    .find(|x| x.0 == name)
                    .map_or(f64::NAN, |x| x.1)
            })
            .collect();
        signals.set_item(name, values.into_pyarray(py))?;
    }
    let out = PyDict::new(py);
    let times: Vec<i64> = steps.iter().map(|s| s.time_ns as i64).collect();
    let targets: Vec<f64> = steps.iter().map(|s| s.target_bps).collect();
    out.set_item("time_ns", times.into_pyarray(py))?;
    out.set_item("target_bps", targets.into_pyarray(py))?;
    out.set_item("signals", signals)?;
    Ok(out)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(estimated_packets, m)?)?;
    m.add_function(wrap_pyfunction!(controllers, m)?)?;
    m.add_function(wrap_pyfunction!(register_controller, m)?)?;
    m.add_function(wrap_pyfunction!(run_bench, m)?)?;
    m.add_function(wrap_pyfunction!(live_main, m)?)?;
    m.add_function(wrap_pyfunction!(live_result, m)?)?;
    m.add_function(wrap_pyfunction!(generate_lte_trace, m)?)?;
    m.add_function(wrap_pyfunction!(parse_rate, m)?)?;
    m.add_function(wrap_pyfunction!(parse_duration, m)?)?;
    m.add_function(wrap_pyfunction!(replay_feedback, m)?)?;
    Ok(())
}
