//! `rtcc._core`: thin Python bindings. Scenarios go in as JSON; a run comes back as a handle
//! whose logs are Arrow tables (built by `rtcc_sim::tables`, passed through the Arrow PyCapsule
//! interface) or Parquet files written by the core. There is no logic here beyond conversion.

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchIterator};
use numpy::IntoPyArray;
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyList, PyTuple};
use rtcc_core::cc;
use rtcc_core::metrics::PacketRecord;
use rtcc_core::net::tracegen::{generate_lte, LteTraceConfig};
use rtcc_core::{Duration, Rate};
use rtcc_scenario::windows;
use rtcc_sim::Scenario;
use std::path::Path;

mod learn;
mod pycontroller;
mod pyencoder;

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
                rtcc_core::suggest::annotate(&e.message)
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

/// One table of a run as Arrow data: Python libraries take it without a copy through the Arrow
/// PyCapsule interface (`polars.DataFrame(table)`, `pyarrow.table(table)`).
#[pyclass(frozen, name = "ArrowTable")]
struct ArrowTable(RecordBatch);

#[pymethods]
impl ArrowTable {
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema; // the table is handed over in its own schema, as the protocol allows
        let batches = RecordBatchIterator::new([Ok(self.0.clone())], self.0.schema());
        let stream = FFI_ArrowArrayStream::new(Box::new(batches));
        PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
    }

    fn __len__(&self) -> usize {
        self.0.num_rows()
    }
}

/// A finished run: its summary, the flows' names and its four logs (`rtcc_sim::tables`), built
/// when asked for. A kept packet log is turned into its table once, and its records freed.
#[pyclass(name = "Run")]
struct RunOutput {
    result: rtcc_sim::RunResult,
    /// The scenario run (its facts are built from it when first asked for).
    scenario: Scenario,
    end: rtcc_core::Time,
    /// The logs that were streamed to files or forgotten as the run went (packets, frames,
    /// state): the run has no table of them.
    streamed: Vec<&'static str>,
    packets: Option<RecordBatch>,
    facts: Option<String>,
}

impl RunOutput {
    fn new(result: rtcc_sim::RunResult, sc: &Scenario, streamed: Vec<&'static str>) -> Self {
        let end = rtcc_core::Time(sc.duration.0);
        Self {
            result,
            scenario: sc.clone(),
            end,
            streamed,
            packets: None,
            facts: None,
        }
    }

    /// The table `name`, or None for a log that was streamed or not kept.
    fn batch(&mut self, name: &str) -> PyResult<Option<RecordBatch>> {
        if self.streamed.contains(&name) {
            return Ok(None);
        }
        if name != "packets" {
            return rtcc_sim::tables::table(&self.result, self.end, name)
                .map(Some)
                .ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "no table {name:?}; the tables are {:?}",
                        rtcc_sim::tables::TABLES
                    ))
                });
        }
        if self.packets.is_none() {
            let table = rtcc_sim::tables::table(&self.result, self.end, "packets");
            for flow in &mut self.result.flows {
                flow.packets = Vec::new();
            }
            self.packets = table;
        }
        Ok(self.packets.clone())
    }
}

#[pymethods]
impl RunOutput {
    /// `summary.json`'s text.
    #[getter]
    fn summary(&self) -> String {
        self.result.summary.to_json()
    }

    /// `facts.json`'s text: the run's route facts and per-window rates
    /// (`rtcc_scenario::facts`), built when first asked for.
    #[getter]
    fn facts(&mut self) -> String {
        self.facts
            .get_or_insert_with(|| rtcc_scenario::run_facts(&self.scenario, &self.result).to_json())
            .clone()
    }

    /// The flows as run: name, controller, start and stop (ns).
    #[getter]
    fn flows<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let flows = PyList::empty(py);
        for f in &self.result.flows {
            let d = PyDict::new(py);
            d.set_item("name", &f.config.name)?;
            d.set_item("controller", f.config.controller_name())?;
            d.set_item("start_ns", f.config.start.0)?;
            d.set_item("stop_ns", f.config.stop.0)?;
            flows.append(d)?;
        }
        Ok(flows)
    }

    /// The table `name` (packets, frames, state, capacity) as Arrow data; None for a log that
    /// was streamed or not kept.
    fn table(&mut self, name: &str) -> PyResult<Option<ArrowTable>> {
        Ok(self.batch(name)?.map(ArrowTable))
    }

    /// Write the table `name` to the Parquet file `path`; False (nothing written) for a log
    /// that was streamed or not kept.
    fn write_table(&mut self, py: Python<'_>, name: &str, path: &str) -> PyResult<bool> {
        let Some(table) = self.batch(name)? else {
            return Ok(false);
        };
        py.detach(|| rtcc_sim::tables::write_parquet(Path::new(path), &table))
            .map_err(PyOSError::new_err)?;
        Ok(true)
    }
}

/// Run a scenario (JSON text) and return it as a [`RunOutput`].
///
/// `packets_to`: a Parquet file the packet log is streamed to as the run goes (row groups of
/// 262,144 records, each flow's packets in send order), instead of being kept. `frames_to` and
/// `state_to`: the same for the frame log (each flow's frames in frame order, as they settle)
/// and the state log; with all three a run's memory does not grow with its length.
/// `pcap_to`: a pcap file every datagram sent is written to as it is sent
/// (`rtcc_sim::capture`). `keep_packets=False` without `packets_to` forgets the packet log (only the summary and the other logs
/// remain). Either way the run holds about 8 bytes per packet for its summary instead of the
/// 88 of a kept record.
#[pyfunction]
#[pyo3(signature = (scenario_json, base_dir, seed=None, progress=None, packets_to=None, keep_packets=true, pcap_to=None, frames_to=None, state_to=None))]
#[allow(clippy::too_many_arguments)]
fn run<'py>(
    py: Python<'py>,
    scenario_json: &str,
    base_dir: &str,
    seed: Option<u64>,
    progress: Option<Bound<'py, PyAny>>,
    packets_to: Option<&str>,
    keep_packets: bool,
    pcap_to: Option<&str>,
    frames_to: Option<&str>,
    state_to: Option<&str>,
) -> PyResult<RunOutput> {
    let registry = pycontroller::registry();
    let sc = scenario_from_json(scenario_json, base_dir, &registry)?;
    let mut callback_error: Option<PyErr> = None;
    let mut report = |fraction: f64| {
        if callback_error.is_some() {
            return;
        }
        // A Python signal handler raised (KeyboardInterrupt, or the CLI's SIGTERM and SIGHUP
        // handlers), or the callback did: the run ends at once, not at its end.
        if let Err(e) = py.check_signals() {
            callback_error = Some(e);
            rtcc_sim::sim::interrupt();
        } else if let Some(cb) = &progress {
            if let Err(e) = cb.call1((fraction,)) {
                callback_error = Some(e);
                rtcc_sim::sim::interrupt();
            }
        }
    };
    rtcc_sim::sim::clear_interrupt();
    pycontroller::take_error(); // none should be left from an earlier run
    use rtcc_sim::tables::{frame_rows, frame_schema, state_schema, PacketLogWriter, TableWriter};
    let mut packet_writer = packets_to
        .map(|p| PacketLogWriter::create(Path::new(p)))
        .transpose()
        .map_err(PyOSError::new_err)?;
    let mut frame_writer = frames_to
        .map(|p| TableWriter::create(Path::new(p), frame_schema()))
        .transpose()
        .map_err(PyOSError::new_err)?;
    let mut state_writer = state_to
        .map(|p| TableWriter::create(Path::new(p), state_schema()))
        .transpose()
        .map_err(PyOSError::new_err)?;
    // The first write error is kept (and later chunks dropped); the run fails with it.
    let sink_error: std::cell::RefCell<Option<String>> = Default::default();
    let keep_error = |r: Result<(), String>| {
        if let Err(e) = r {
            sink_error.borrow_mut().get_or_insert(e);
        }
    };
    let mut packet_sink = |chunk: &[PacketRecord]| {
        if let (Some(w), false) = (&mut packet_writer, sink_error.borrow().is_some()) {
            keep_error(w.write(chunk));
        }
    };
    let mut frame_sink = |chunk: &[rtcc_sim::frames::SettledFrame]| {
        if let (Some(w), false) = (&mut frame_writer, sink_error.borrow().is_some()) {
            keep_error(w.write(&frame_rows(chunk)));
        }
    };
    let mut state_sink = |chunk: &rtcc_sim::sim::StateLog| {
        if let (Some(w), false) = (&mut state_writer, sink_error.borrow().is_some()) {
            keep_error(w.write(&rtcc_sim::tables::state(chunk)));
        }
    };
    let mut streamed = Vec::new();
    if packets_to.is_some() || !keep_packets {
        streamed.push("packets");
    }
    let sinks = rtcc_sim::sim::Sinks {
        packets: (packets_to.is_some() || !keep_packets)
            .then_some(&mut packet_sink as rtcc_sim::sim::PacketSink),
        frames: frames_to
            .is_some()
            .then_some(&mut frame_sink as rtcc_sim::sim::FrameSink),
        state: state_to
            .is_some()
            .then_some(&mut state_sink as rtcc_sim::sim::StateSink),
    };
    streamed.extend(frames_to.map(|_| "frames"));
    streamed.extend(state_to.map(|_| "state"));
    let capture = pcap_to
        .map(|p| rtcc_sim::capture::PcapFile::create(Path::new(p)))
        .transpose()
        .map_err(PyOSError::new_err)?;
    let capture = capture.map(|c| Box::new(c) as Box<dyn rtcc_sim::capture::Capture>);
    let result = rtcc_sim::run::run_with_sinks(&sc, seed, &mut report, &registry, sinks, capture);
    rtcc_sim::sim::clear_interrupt();
    if let Some(e) = pycontroller::take_error().or(callback_error) {
        return Err(e);
    }
    let result = result.map_err(ScenarioError::new_err)?;
    if let Some(e) = sink_error.into_inner() {
        return Err(PyOSError::new_err(e));
    }
    if let Some(w) = packet_writer {
        w.finish().map_err(PyOSError::new_err)?;
    }
    for w in [frame_writer, state_writer].into_iter().flatten() {
        w.finish().map_err(PyOSError::new_err)?;
    }
    Ok(RunOutput::new(result, &sc, streamed))
}

/// A live run's logs (`rtcc send`'s, `rtcc recv`'s and optionally `rtcc emu`'s log folders)
/// as the same [`RunOutput`] [`run`] returns, summarised by the simulator's code: flow `flow` of
/// the scenario, alone.
#[pyfunction]
#[pyo3(signature = (scenario_json, base_dir, flow, send_dir, recv_dir, emu_dir=None))]
fn live_result(
    scenario_json: &str,
    base_dir: &str,
    flow: usize,
    send_dir: &str,
    recv_dir: &str,
    emu_dir: Option<&str>,
) -> PyResult<RunOutput> {
    let registry = pycontroller::registry();
    let sc = scenario_from_json(scenario_json, base_dir, &registry)?;
    let logs = rtcc_live::assemble::LiveLogs {
        send: send_dir.into(),
        recv: recv_dir.into(),
        emu: emu_dir.map(Into::into),
    };
    let result = rtcc_live::assemble::assemble(&sc, flow, &logs).map_err(PyValueError::new_err)?;
    Ok(RunOutput::new(result, &sc, Vec::new()))
}

/// The input files a scenario (JSON text, possibly partial) names, as the core reads them:
/// `[(location, path, suffix)]`, `location` the keys and indices where the file is named
/// (`("path", "forward", "trace")`), `path` the file read and `suffix` what follows its `#` (an
/// OpenNetLab trace's direction) or "".
#[pyfunction]
fn referenced_files<'py>(
    py: Python<'py>,
    scenario_json: &str,
    base_dir: &str,
) -> PyResult<Vec<(Bound<'py, PyTuple>, String, String)>> {
    let json: serde_json::Value = serde_json::from_str(scenario_json)
        .map_err(|e| ScenarioError::new_err(format!("scenario: invalid JSON: {e}")))?;
    let found = Scenario::referenced_files(&json, Path::new(base_dir)).map_err(|e| {
        let message = rtcc_core::suggest::annotate(&e.message);
        ScenarioError::new_err(format!("{}: {message}", e.field))
    })?;
    let mut out = Vec::with_capacity(found.len());
    for f in found {
        let mut location: Vec<Bound<'py, PyAny>> = Vec::with_capacity(f.location.len());
        for step in &f.location {
            location.push(match step {
                serde_json::Value::Number(n) => {
                    n.as_u64().unwrap_or(0).into_pyobject(py)?.into_any()
                }
                other => other.as_str().unwrap_or("").into_pyobject(py)?.into_any(),
            });
        }
        out.push((
            PyTuple::new(py, location)?,
            f.path.display().to_string(),
            f.suffix,
        ));
    }
    Ok(out)
}

/// An empty packet log: its schema is the core's (`rtcc_sim::tables::packet_schema`), which the
/// live commands' logs are converted to.
#[pyfunction]
fn packet_schema() -> ArrowTable {
    ArrowTable(rtcc_sim::tables::packets(&[]))
}

/// Which of `n` 1 s windows lie wholly inside one of `periods` (`[(start s, stop s)]`), as a
/// boolean array (`rtcc_scenario::windows::window_mask`).
#[pyfunction]
fn window_mask<'py>(
    py: Python<'py>,
    n: usize,
    periods: Vec<(f64, f64)>,
) -> Bound<'py, numpy::PyArray1<bool>> {
    windows::window_mask(n, &periods).into_pyarray(py)
}

/// When every one of the flows (their active periods) is active, less the first `settle_s` of
/// each such interval (`rtcc_scenario::windows::shared_periods`).
#[pyfunction]
fn shared_periods(periods: Vec<Vec<(f64, f64)>>, settle_s: f64) -> Vec<(f64, f64)> {
    let each: Vec<&[(f64, f64)]> = periods.iter().map(Vec::as_slice).collect();
    windows::shared_periods(&each, settle_s)
}

/// Jain's fairness index of `values`; None for fewer than two or all zero.
#[pyfunction]
fn jain(values: Vec<f64>) -> Option<f64> {
    windows::jain(&values)
}

/// Jain's index and the shared period (`(start_s, end_s)` pieces) it was computed over.
type IndexAndPeriod = (f64, Vec<(f64, f64)>);

/// Jain's index of the flows' mean rates (one array of 1 s windows each) over the windows of
/// their shared period from `settle_s` after the last (re)join, and that period; None without
/// two flows, a shared window or a rate (`rtcc_scenario::windows::windowed_jain`).
#[pyfunction]
fn windowed_jain(
    rates: Vec<Vec<f64>>,
    periods: Vec<Vec<(f64, f64)>>,
    settle_s: f64,
) -> PyResult<Option<IndexAndPeriod>> {
    if rates.len() != periods.len() || rates.windows(2).any(|w| w[0].len() != w[1].len()) {
        return Err(PyValueError::new_err(
            "windowed_jain: one period list per flow, and rates of one length",
        ));
    }
    let r: Vec<&[f64]> = rates.iter().map(Vec::as_slice).collect();
    let p: Vec<&[(f64, f64)]> = periods.iter().map(Vec::as_slice).collect();
    Ok(windows::windowed_jain(&r, &p, settle_s))
}

/// Seconds from `from_s` to the end of the first 1 s window (ending by `to_s`) in which every
/// flow's `smooth_s`-window trailing mean rate is within ±`band` of its target; infinity if none
/// (`rtcc_scenario::windows::share_convergence`).
#[pyfunction]
fn share_convergence(
    rates: Vec<Vec<f64>>,
    targets: Vec<f64>,
    from_s: f64,
    to_s: f64,
    band: f64,
    smooth_s: usize,
) -> PyResult<f64> {
    if rates.len() != targets.len() {
        return Err(PyValueError::new_err(
            "share_convergence: one target per flow",
        ));
    }
    let r: Vec<&[f64]> = rates.iter().map(Vec::as_slice).collect();
    Ok(windows::share_convergence(
        &r, &targets, from_s, to_s, band, smooth_s,
    ))
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
        // The feedback its receiver sends, as a scenario's `feedback` table would write it.
        let fb = PyDict::new(py);
        let f = &info.feedback;
        if let Some(i) = f.interval {
            fb.set_item("interval", i.to_string())?;
        }
        fb.set_item("per_frame", f.per_frame)?;
        fb.set_item("frame_acks", f.frame_acks)?;
        if let Some(r) = f.rate_reports {
            fb.set_item("rate_reports", r.to_string())?;
        }
        d.set_item("feedback", fb)?;
        // The media settings its video flows take unless their scenario writes them, as a
        // scenario's fields would write them (empty: none).
        let media = PyDict::new(py);
        let m = &info.media;
        if let Some(e) = &m.encoder {
            let json = py.import("json")?;
            media.set_item("encoder", json.call_method1("loads", (e.to_string(),))?)?;
        }
        if let Some(p) = &m.degradation {
            media.set_item("degradation", p)?;
        }
        if let Some(b) = m.pushback {
            media.set_item("pushback", b)?;
        }
        if let Some(b) = m.frame_dropper {
            media.set_item("frame_dropper", b)?;
        }
        if let Some(k) = m.vbv {
            media.set_item("vbv", k)?;
        }
        d.set_item("media", media)?;
        list.append(d)?;
    }
    Ok(list)
}

/// Register a controller written in Python: `factory(params: dict, ctx: dict)` returns the
/// object (see `docs/controllers.md`); `params` maps parameter names to their defaults.
#[pyfunction]
#[pyo3(signature = (name, factory, summary="", params=None, feedback=None, media=None))]
fn register_controller(
    name: &str,
    factory: Py<PyAny>,
    summary: &str,
    params: Option<&Bound<'_, PyDict>>,
    feedback: Option<&Bound<'_, PyDict>>,
    media: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    pycontroller::register(name, factory, summary, params, feedback, media)
}

/// Register an encoder model written in Python (`rtcc.video` registers `vp8` and `x264`):
/// `check(params, base_dir)` raises ValueError("field: problem") for bad parameters,
/// `build(params, base_dir, seed)` returns the encoder object (see `pyencoder.rs`).
/// `files(params, base_dir)`, optional, lists the input files the parameters name as
/// `(key, path)` pairs (a sweep on a cluster ships them).
#[pyfunction]
#[pyo3(signature = (name, check, build, files=None))]
fn register_encoder(name: &str, check: Py<PyAny>, build: Py<PyAny>, files: Option<Py<PyAny>>) {
    pyencoder::register(name, check, build, files)
}

/// The names of the encoder models registered from Python, as a dict's keys.
#[pyfunction]
fn registered_encoders(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    pyencoder::registered(py)
}

/// The live commands (`emu`, `send`, `recv`): `argv` is the whole command line, program name
/// first; returns the exit code. Runs until the command ends, with the GIL released.
#[pyfunction]
fn live_main(py: Python<'_>, argv: Vec<String>) -> i32 {
    rtcc_live::transport::set_controllers(pycontroller::registry());
    pycontroller::take_error(); // none should be left from an earlier run
    let code = py.detach(|| rtcc_live::cli::main(argv));
    // A Python controller or policy failed during the run (it kept its last good decision
    // meanwhile): the command fails, naming the error, instead of ending as if all went well.
    match pycontroller::take_error() {
        Some(e) => {
            eprintln!("rtcc: error: {}", pycontroller::describe(py, &e));
            if code == 0 {
                2
            } else {
                code
            }
        }
        None => code,
    }
}

/// Run a standard benchmark case (`rtcc_sim::bench`: "single", "ten" or a scaling case), with
/// the GIL released.
#[pyfunction]
#[pyo3(name = "bench")]
fn run_bench<'py>(py: Python<'py>, case: &str) -> PyResult<Bound<'py, PyDict>> {
    let r = py
        .detach(|| rtcc_sim::bench::run_case(case))
        .map_err(PyValueError::new_err)?;
    let d = PyDict::new(py);
    d.set_item("case", r.case)?;
    d.set_item("flows", r.flows)?;
    d.set_item("peak_rss_bytes", r.peak_rss_bytes)?;
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
    generate_lte(&cfg).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// A parameter's name and its value as a Python object.
type NamedValue<'py> = (String, Bound<'py, PyAny>);

/// Parse a command line's controller spec (`NAME` or `NAME:KEY=VALUE[,...]`) with the core's one
/// parser ([`rtcc_sim::scenario::parse_spec`]): the name and the parameters in order, each value
/// an int, a float, a bool or a string.
#[pyfunction]
fn parse_controller_spec<'py>(
    py: Python<'py>,
    text: &str,
) -> PyResult<(String, Vec<NamedValue<'py>>)> {
    let (name, params) = rtcc_sim::scenario::parse_spec(text).map_err(PyValueError::new_err)?;
    let mut out = Vec::with_capacity(params.len());
    for (key, value) in params {
        let v = match value {
            toml::Value::Integer(i) => i.into_pyobject(py)?.into_any(),
            toml::Value::Float(x) => x.into_pyobject(py)?.into_any(),
            toml::Value::Boolean(b) => b.into_pyobject(py)?.to_owned().into_any(),
            toml::Value::String(t) => t.into_pyobject(py)?.into_any(),
            other => other.to_string().into_pyobject(py)?.into_any(),
        };
        out.push((key, v));
    }
    Ok((name, out))
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

/// A logged frame as Python passes it: `(frame, capture_ns, size, packets, keyframe, target_bps)`.
type LoggedFrameRow = (i64, i64, i64, i64, bool, f64);

/// Replay a packet log open loop into the controller of `flow` of a scenario
/// (`rtcc_sim::replay`). Columns, one entry per packet in sequence order: receive and
/// feedback times are -1 for "lost" and "never reported", frames -1 for none, kinds the log's
/// codes, `ecn` (optional, Not-ECT without it) the two-bit codepoint each packet arrived with;
/// `frames` (optional, none without it) the encoder's frames in capture order as
/// `(frame, capture_ns, size, packets, keyframe, target_bps)`, announced to a frame controller at
/// each capture (`rtcc_sim::replay::replay_feedback_with_frames`).
/// Returns `{"time_ns", "target_bps", "signals": {name: values}}`, one entry per report
/// (NaN where a signal has no value at that report).
#[pyfunction]
#[pyo3(signature = (scenario_json, base_dir, flow, seq, send_ns, recv_ns, size, frame, kind, feedback_ns, ecn=None, frames=None))]
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
    ecn: Option<Vec<i64>>,
    frames: Option<Vec<LoggedFrameRow>>,
) -> PyResult<Bound<'py, PyDict>> {
    use rtcc_sim::replay::{replay_feedback_with_frames as replay, LoggedFrame, LoggedPacket};
    let n = seq.len();
    if [
        send_ns.len(),
        recv_ns.len(),
        size.len(),
        frame.len(),
        kind.len(),
        feedback_ns.len(),
        ecn.as_ref().map_or(n, |e| e.len()),
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
        let ecn_bits = ecn.as_ref().map_or(0, |e| e[i]);
        if !(0..=3).contains(&ecn_bits) {
            return Err(PyValueError::new_err(format!(
                "packet {}: ECN codepoint {ecn_bits} does not fit two bits (0 Not-ECT, 1 ECT(1), \
                 2 ECT(0), 3 CE)",
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
            ecn: rtcc_core::packet::Ecn::from_bits(ecn_bits as u8),
        });
    }
    let mut logged_frames = Vec::new();
    for (frame, capture_ns, size, packets, keyframe, target_bps) in frames.unwrap_or_default() {
        let field = |name: &str, v: i64, max: i64| {
            if (0..=max).contains(&v) {
                Ok(v)
            } else {
                Err(PyValueError::new_err(format!(
                    "frame {frame}: {name} {v} is out of range (0 to {max})"
                )))
            }
        };
        let frame_id = field("id", frame, i64::MAX)? as u64;
        let capture_ns = field("capture time (ns)", capture_ns, i64::MAX)? as u64;
        let size = field("size", size, u32::MAX as i64)? as u32;
        let packets = field("packet count", packets, u16::MAX as i64)? as u16;
        logged_frames.push(LoggedFrame {
            frame: frame_id,
            capture_ns,
            size,
            packets,
            keyframe,
            target_bps,
        });
    }
    let steps =
        replay(&sc, flow, &registry, &packets, &logged_frames).map_err(ScenarioError::new_err)?;
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
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<ArrowTable>()?;
    m.add_class::<RunOutput>()?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(estimated_packets, m)?)?;
    m.add_function(wrap_pyfunction!(controllers, m)?)?;
    m.add_function(wrap_pyfunction!(register_controller, m)?)?;
    m.add_function(wrap_pyfunction!(register_encoder, m)?)?;
    m.add_function(wrap_pyfunction!(registered_encoders, m)?)?;
    m.add_function(wrap_pyfunction!(run_bench, m)?)?;
    m.add(
        "BENCH_SCALING_CASES",
        rtcc_sim::bench::SCALING_CASES.to_vec(),
    )?;
    m.add_function(wrap_pyfunction!(live_main, m)?)?;
    m.add_function(wrap_pyfunction!(live_result, m)?)?;
    m.add_function(wrap_pyfunction!(generate_lte_trace, m)?)?;
    m.add_function(wrap_pyfunction!(parse_rate, m)?)?;
    m.add_function(wrap_pyfunction!(parse_controller_spec, m)?)?;
    m.add_function(wrap_pyfunction!(parse_duration, m)?)?;
    m.add_function(wrap_pyfunction!(replay_feedback, m)?)?;
    m.add_function(wrap_pyfunction!(referenced_files, m)?)?;
    m.add_function(wrap_pyfunction!(packet_schema, m)?)?;
    m.add("WINDOW_S", windows::window_s())?;
    m.add_function(wrap_pyfunction!(window_mask, m)?)?;
    m.add_function(wrap_pyfunction!(shared_periods, m)?)?;
    m.add_function(wrap_pyfunction!(jain, m)?)?;
    m.add_function(wrap_pyfunction!(windowed_jain, m)?)?;
    m.add_function(wrap_pyfunction!(share_convergence, m)?)?;
    m.add_function(wrap_pyfunction!(learn::mmsys24_features, m)?)?;
    m.add_function(wrap_pyfunction!(learn::bench_env, m)?)?;
    m.add_function(wrap_pyfunction!(learn::observation_length, m)?)?;
    m.add_class::<learn::Env>()?;
    Ok(())
}
