//! Learned rate control from Python: the stepped environment behind `rtcc.gym` ([`Env`], any
//! number of simulations stepped per call), the `mmsys24` observation of recorded packets, and
//! `onnx`, the `agent` controller driven by a policy that Python loads (onnxruntime).

use crate::pycontroller::{self, describe, keep_error};
use crate::{scenario_from_json, ScenarioError};
use numpy::ndarray::Array3;
use numpy::{IntoPyArray, PyArray3, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rtcc_core::cc::agent::{self, AgentConfig, Policy};
use rtcc_core::cc::{Controller, ControllerContext, ControllerError, ControllerInfo, Params};
use rtcc_core::learn::{mmsys24, ArrivalHistory, PacketClass};
use rtcc_core::Time;
use rtcc_sim::env::{AgentEnv, STATS};
use std::sync::Arc;

/// The 150 `mmsys24` values at `anchor_ms` of the packets given (arrival order; kinds as
/// `PacketKind` codes, 6 for audio). Packets after the anchor are not read.
#[pyfunction]
pub fn mmsys24_features<'py>(
    py: Python<'py>,
    arrival_ms: PyReadonlyArray1<'py, f64>,
    send_ms: PyReadonlyArray1<'py, f64>,
    size: PyReadonlyArray1<'py, u32>,
    seq: PyReadonlyArray1<'py, u64>,
    kind: PyReadonlyArray1<'py, u8>,
    anchor_ms: f64,
) -> PyResult<Bound<'py, numpy::PyArray1<f32>>> {
    let (a, s, z, q, k) = (
        arrival_ms.as_slice()?,
        send_ms.as_slice()?,
        size.as_slice()?,
        seq.as_slice()?,
        kind.as_slice()?,
    );
    let n = a.len();
    if [s.len(), z.len(), q.len(), k.len()].iter().any(|&l| l != n) {
        return Err(PyValueError::new_err(
            "arrival_ms, send_ms, size, seq and kind must have the same length",
        ));
    }
    let mut h = ArrivalHistory::default();
    for i in 0..n {
        if i > 0 && a[i] < a[i - 1] {
            return Err(PyValueError::new_err(format!(
                "packets must be in arrival order: packet {i} arrived at {} ms, before packet {} at {} ms",
                a[i],
                i - 1,
                a[i - 1]
            )));
        }
        if a[i] > anchor_ms {
            break;
        }
        let class = PacketClass::from_code(k[i]).map_err(PyValueError::new_err)?;
        h.push(a[i], s[i], z[i], q[i], class);
    }
    let mut out = vec![0.0f32; mmsys24::LEN];
    mmsys24::observe(&h, anchor_ms, &mut out);
    Ok(out.into_pyarray(py))
}

/// Simulations of one scenario stepped together: each has the same agents (the flows whose
/// controller is `agent`); observations, statistics and actions are arrays indexed
/// `[simulation, agent, ...]`.
#[pyclass(name = "Env", unsendable)]
pub struct Env {
    envs: Vec<AgentEnv>,
    agents: usize,
    obs_len: usize,
}

fn env_error(e: String) -> PyErr {
    ScenarioError::new_err(e)
}

#[pymethods]
impl Env {
    /// `scenarios`: `(scenario JSON, base folder)` pairs; simulation `i` runs scenario
    /// `i mod len(scenarios)`. Every scenario must have the same number of agent flows, step and
    /// observation.
    #[new]
    #[pyo3(signature = (scenarios, n_envs=1))]
    fn new(scenarios: Vec<(String, String)>, n_envs: usize) -> PyResult<Env> {
        if n_envs == 0 {
            return Err(PyValueError::new_err("n_envs must be at least 1"));
        }
        if scenarios.is_empty() {
            return Err(PyValueError::new_err("give at least one scenario"));
        }
        let mut with_agent = pycontroller::registry();
        with_agent
            .register(agent::info_with(Arc::new(|_| {})))
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let parsed = scenarios
            .iter()
            .map(|(json, base)| scenario_from_json(json, base, &with_agent))
            .collect::<PyResult<Vec<_>>>()?;
        let base = pycontroller::registry();
        let envs = (0..n_envs)
            .map(|i| AgentEnv::new(&parsed[i % parsed.len()], &base))
            .collect::<Result<Vec<_>, _>>()
            .map_err(env_error)?;
        let (agents, obs_len, step) = (
            envs[0].agents(),
            envs[0].observation_len(),
            envs[0].step_duration(),
        );
        if let Some((i, e)) = envs.iter().enumerate().find(|(_, e)| {
            (e.agents(), e.observation_len(), e.step_duration()) != (agents, obs_len, step)
        }) {
            return Err(ScenarioError::new_err(format!(
                "scenario {} has {} agent(s), {} observation values and a {} step; scenario 0 has \
                 {agents}, {obs_len} and {step}: every scenario of an environment needs the same",
                i % parsed.len(),
                e.agents(),
                e.observation_len(),
                e.step_duration()
            )));
        }
        Ok(Env {
            envs,
            agents,
            obs_len,
        })
    }

    #[getter]
    fn n_envs(&self) -> usize {
        self.envs.len()
    }

    #[getter]
    fn n_agents(&self) -> usize {
        self.agents
    }

    #[getter]
    fn observation_len(&self) -> usize {
        self.obs_len
    }

    #[getter]
    fn step_s(&self) -> f64 {
        self.envs[0].step_duration().as_secs_f64()
    }

    #[getter]
    fn stat_names(&self) -> Vec<&'static str> {
        STATS.to_vec()
    }

    /// Each agent's (lowest, highest) target, bit/s.
    #[getter]
    fn bounds(&self) -> Vec<(f64, f64)> {
        self.envs[0]
            .bounds()
            .iter()
            .map(|(a, b)| (a.bps(), b.bps()))
            .collect()
    }

    /// Simulation time of each simulation, seconds.
    fn times(&self) -> Vec<f64> {
        self.envs.iter().map(|e| e.now().as_secs_f64()).collect()
    }

    /// Restart simulation `i` (every one with `None`) with `seed` (the scenario's if `None`)
    /// and return the observations, `[n_envs, n_agents, len]`.
    #[pyo3(signature = (seeds=None, only=None))]
    fn reset<'py>(
        &mut self,
        py: Python<'py>,
        seeds: Option<Vec<Option<u64>>>,
        only: Option<usize>,
    ) -> PyResult<Bound<'py, PyArray3<f32>>> {
        let n = self.envs.len();
        if let Some(s) = &seeds {
            if s.len() != n {
                return Err(PyValueError::new_err(format!(
                    "expected {n} seed(s), one per simulation, got {}",
                    s.len()
                )));
            }
        }
        if only.is_some_and(|i| i >= n) {
            return Err(PyValueError::new_err(format!(
                "no simulation {only:?} (of {n})"
            )));
        }
        for (i, e) in self.envs.iter_mut().enumerate() {
            if only.is_none_or(|o| o == i) {
                e.reset(seeds.as_ref().and_then(|s| s[i]))
                    .map_err(env_error)?;
            }
        }
        self.raise_policy_errors()?;
        Ok(self.observations().into_pyarray(py))
    }

    /// Apply `actions` (`[n_envs, n_agents]`, bit/s) and run every simulation one step; returns
    /// `(observations, statistics, done)`. A finished simulation is not stepped (its row
    /// repeats its last values, its statistics are NaN) until it is reset, nor one whose entry
    /// in `hold` is true (a vector environment's autoreset step).
    #[allow(clippy::type_complexity)]
    #[pyo3(signature = (actions, hold=None))]
    fn step<'py>(
        &mut self,
        py: Python<'py>,
        actions: PyReadonlyArray2<'py, f64>,
        hold: Option<Vec<bool>>,
    ) -> PyResult<(
        Bound<'py, PyArray3<f32>>,
        Bound<'py, PyArray3<f64>>,
        Bound<'py, numpy::PyArray1<bool>>,
    )> {
        let actions = actions.as_array();
        if actions.shape() != [self.envs.len(), self.agents] {
            return Err(PyValueError::new_err(format!(
                "actions must have shape ({}, {}), got {:?}",
                self.envs.len(),
                self.agents,
                actions.shape()
            )));
        }
        let mut stats =
            Array3::<f64>::from_elem((self.envs.len(), self.agents, STATS.len()), f64::NAN);
        if hold.as_ref().is_some_and(|h| h.len() != self.envs.len()) {
            return Err(PyValueError::new_err(format!(
                "hold must have one entry per simulation ({})",
                self.envs.len()
            )));
        }
        let mut done = Vec::with_capacity(self.envs.len());
        for (i, e) in self.envs.iter_mut().enumerate() {
            let held = hold.as_ref().is_some_and(|h| h[i]);
            if !e.is_done() && !held {
                let row: Vec<f64> = actions.row(i).to_vec();
                if let Some((j, bad)) = row
                    .iter()
                    .enumerate()
                    .find(|(_, a)| !(a.is_finite() && **a > 0.0))
                {
                    return Err(PyValueError::new_err(format!(
                        "action for simulation {i}, agent {j} is {bad} bit/s: a target must be a \
                         positive, finite rate"
                    )));
                }
                e.step(&row).map_err(env_error)?;
                let s = stats.as_slice_mut().expect("a new array is contiguous");
                let w = self.agents * STATS.len();
                e.step_stats(&mut s[i * w..(i + 1) * w]);
            }
            done.push(e.is_done());
        }
        self.raise_policy_errors()?;
        Ok((
            self.observations().into_pyarray(py),
            stats.into_pyarray(py),
            numpy::PyArray1::from_vec(py, done),
        ))
    }
}

impl Env {
    fn observations(&self) -> Array3<f32> {
        let mut obs = Array3::<f32>::zeros((self.envs.len(), self.agents, self.obs_len));
        let w = self.agents * self.obs_len;
        let s = obs.as_slice_mut().expect("a new array is contiguous");
        for (i, e) in self.envs.iter().enumerate() {
            e.observe(&mut s[i * w..(i + 1) * w]);
        }
        obs
    }

    /// A Python controller among the cross traffic raised: raise it here.
    fn raise_policy_errors(&self) -> PyResult<()> {
        match pycontroller::take_error() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// A policy that Python loaded: `act(now_s, observation) -> bit/s`.
struct PyPolicy {
    name: String,
    act: Py<PyAny>,
    failed: bool,
}

impl Policy for PyPolicy {
    fn act(&mut self, now: Time, observation: &[f32]) -> Result<f64, String> {
        if self.failed {
            return Err("the policy failed earlier".into());
        }
        let result = Python::attach(|py| -> PyResult<f64> {
            let obs = numpy::PyArray1::from_slice(py, observation);
            let bps: f64 = self
                .act
                .bind(py)
                .call1((now.as_secs_f64(), obs))?
                .extract()?;
            if !(bps.is_finite() && bps > 0.0) {
                return Err(PyValueError::new_err(format!(
                    "{}: the policy answered {bps} bit/s at {:.3} s (a target must be a positive, \
                     finite rate)",
                    self.name,
                    now.as_secs_f64()
                )));
            }
            Ok(bps)
        });
        result.map_err(|e| {
            self.failed = true;
            let message = Python::attach(|py| describe(py, &e));
            keep_error(e);
            message
        })
    }
}

/// `onnx`: an `agent` whose actions come from an ONNX policy with the MMSys 2024 challenge's
/// signature, loaded by `rtcc.learn.onnx_policy.load(params)` (onnxruntime).
pub fn onnx_info() -> ControllerInfo {
    let mut params = AgentConfig::param_docs();
    params.insert(
        0,
        rtcc_core::cc::ParamDoc::new(
            "model",
            "",
            "the policy: an ONNX file with the MMSys 2024 challenge's inputs and outputs (required)",
        ),
    );
    ControllerInfo {
        name: "onnx".into(),
        summary: "A learned policy in ONNX (the MMSys 2024 challenge's signature), run every step through onnxruntime.".into(),
        params,
        feedback: agent::feedback(),
        media: Default::default(),
        build: Arc::new(|params: &Params, ctx: &ControllerContext, _| build_onnx(params, ctx)),
    }
}

fn build_onnx(
    params: &Params,
    ctx: &ControllerContext,
) -> Result<Box<dyn Controller>, ControllerError> {
    let bad = |message: String| ControllerError::BadParams {
        controller: "onnx".into(),
        message,
    };
    let mut agent_params = params.clone();
    let Some(model) = agent_params.remove("model") else {
        return Err(bad(
            "model is required: the path of an ONNX policy, e.g. model = \"policy.onnx\"".into(),
        ));
    };
    let model = model
        .as_str()
        .ok_or_else(|| bad(format!("model must be a file path, found {model}")))?
        .to_string();
    let observation = agent_params
        .get("observation")
        .and_then(|v| v.as_str())
        .unwrap_or("mmsys24")
        .to_string();
    let act = Python::attach(|py| -> PyResult<Py<PyAny>> {
        let module = py.import("rtcc.learn.onnx_policy")?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("observation", &observation)?;
        Ok(module
            .call_method("load", (&model,), Some(&kwargs))?
            .unbind())
    })
    .map_err(|e| bad(Python::attach(|py| describe(py, &e))))?;
    let policy = PyPolicy {
        name: model,
        act,
        failed: false,
    };
    let agent = agent::build(&agent_params, ctx, Some(Box::new(policy)), "onnx")?;
    Ok(Box::new(agent))
}

/// Values in the observation called `name` (`mmsys24`, `opennetlab`, `rtcc`).
#[pyfunction]
pub fn observation_length(name: &str) -> PyResult<usize> {
    rtcc_core::learn::ObservationKind::parse(name)
        .map(|k| k.len())
        .map_err(PyValueError::new_err)
}

/// The learning environment's benchmark in Rust (`rtcc_sim::env::bench`), with the GIL released.
#[pyfunction]
pub fn bench_env<'py>(py: Python<'py>, envs: usize) -> PyResult<Bound<'py, PyDict>> {
    let b = py
        .detach(|| rtcc_sim::env::bench(envs))
        .map_err(PyValueError::new_err)?;
    let d = PyDict::new(py);
    d.set_item("envs", b.envs)?;
    d.set_item("steps", b.steps)?;
    d.set_item("wall_seconds", b.wall_seconds)?;
    d.set_item("steps_per_second", b.steps_per_second)?;
    d.set_item("simulate_seconds", b.simulate_seconds)?;
    d.set_item("observe_seconds", b.observe_seconds)?;
    d.set_item("stats_seconds", b.stats_seconds)?;
    Ok(d)
}
