//! Encoders written in Python (the real codecs of `rtcc.video`): an adapter that implements the
//! core's `Encoder` by calling a Python object, and `register_encoder`, which makes a model name
//! usable as `encoder = { model = "...", ... }` in any scenario run from this process.
//!
//! A model is registered with two callables: `check(params: dict, base_dir: str)` raises
//! `ValueError("field: problem")` (or `ValueError("problem")`) for bad parameters, and
//! `build(params, base_dir, ctx)` returns the encoder object (`ctx`: the flow's `flow` name,
//! `fps` and encoder `seed`). The object has
//! `encode(now_s, target_bps, fps) -> (size, keyframe, psnr_db | None, width, height)`,
//! `request_keyframe()`, `reset()`, `set_resolution(width, height)` and
//! `bitrate_limits(width, height, fps) -> (low_bps, high_bps) | None`. The first exception an
//! object raises is kept and raised when the run ends; the flow sends nothing after it.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use rtcc_core::media::encoder::external::{self, ExternalModel, FlowInfo, Params};
use rtcc_core::media::{EncodedFrame, Encoder};
use rtcc_core::video::quality::Resolution;
use rtcc_core::{Rate, Time};
use std::path::Path;
use std::sync::Arc;

struct PyModel {
    name: String,
    check: Py<PyAny>,
    build: Py<PyAny>,
    /// `files(params, base_dir) -> [(key, path)]`, optional.
    files: Option<Py<PyAny>>,
}

fn params_dict<'py>(py: Python<'py>, params: &Params) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::Value::Object(params.clone()).to_string();
    py.import("json")?.call_method1("loads", (text,))
}

impl ExternalModel for PyModel {
    fn check(&self, params: &Params, base_dir: &Path) -> Result<(), (String, String)> {
        Python::attach(|py| {
            let result = params_dict(py, params).and_then(|p| {
                self.check
                    .call1(py, (p, base_dir.to_string_lossy().to_string()))
            });
            match result {
                Ok(_) => Ok(()),
                Err(e) => {
                    let text = e.value(py).to_string();
                    // "clip: no such file" names the field; anything else is about the table.
                    match text.split_once(": ") {
                        Some((field, problem))
                            if params.contains_key(field) || field == "model" =>
                        {
                            Err((field.to_string(), problem.to_string()))
                        }
                        _ => Err((String::new(), text)),
                    }
                }
            }
        })
    }

    fn files(&self, params: &Params, base_dir: &Path) -> Vec<(String, std::path::PathBuf)> {
        let Some(files) = &self.files else {
            return Vec::new();
        };
        Python::attach(|py| {
            params_dict(py, params)
                .and_then(|p| files.call1(py, (p, base_dir.to_string_lossy().to_string())))
                .and_then(|v| v.extract::<Vec<(String, std::path::PathBuf)>>(py))
                .unwrap_or_default() // bad parameters are reported by check, not here
        })
    }

    fn build(
        &self,
        params: &Params,
        base_dir: &Path,
        flow: &FlowInfo,
    ) -> Result<Box<dyn Encoder>, String> {
        Python::attach(|py| {
            let obj = params_dict(py, params)
                .and_then(|p| {
                    let ctx = PyDict::new(py);
                    ctx.set_item("flow", &flow.name)?;
                    ctx.set_item("fps", flow.fps)?;
                    ctx.set_item("seed", flow.seed)?;
                    ctx.set_item("vbv", flow.vbv)?;
                    self.build
                        .call1(py, (p, base_dir.to_string_lossy().to_string(), ctx))
                })
                .map_err(|e| e.value(py).to_string())?;
            let source = obj
                .getattr(py, "source_resolution")
                .and_then(|r| r.extract::<(u32, u32)>(py))
                .map_err(|e| format!("{}: source_resolution: {}", self.name, e.value(py)))?;
            let source = Resolution::new(source.0, source.1);
            Ok(Box::new(PyEncoder {
                obj,
                source,
                current: source,
                failed: false,
            }) as Box<dyn Encoder>)
        })
    }
}

/// A Python encoder object seen as a core `Encoder`.
struct PyEncoder {
    obj: Py<PyAny>,
    source: Resolution,
    current: Resolution,
    failed: bool,
}

impl PyEncoder {
    /// Call `method`; on the first exception keep it for the run and stop calling the object.
    fn call<T>(
        &mut self,
        f: impl for<'py> FnOnce(Python<'py>, &Bound<'py, PyAny>) -> PyResult<T>,
    ) -> Option<T> {
        if self.failed {
            return None;
        }
        let result = Python::attach(|py| f(py, self.obj.bind(py)));
        match result {
            Ok(v) => Some(v),
            Err(e) => {
                self.failed = true;
                crate::pycontroller::keep_error(e);
                None
            }
        }
    }
}

impl Encoder for PyEncoder {
    fn encode(&mut self, now: Time, target: Rate, fps: f64) -> EncodedFrame {
        let out = self.call(|_, o| {
            o.call_method1("encode", (now.as_secs_f64(), target.bps(), fps))?
                .extract::<(u32, bool, Option<f64>, u32, u32)>()
        });
        match out {
            Some((size, keyframe, psnr_db, w, h)) => {
                self.current = Resolution::new(w, h);
                EncodedFrame {
                    size,
                    keyframe: keyframe && size > 0,
                    psnr_db,
                    resolution: Some(self.current),
                }
            }
            None => EncodedFrame::skipped(Some(self.current)),
        }
    }

    fn request_keyframe(&mut self) {
        self.call(|_, o| o.call_method0("request_keyframe").map(|_| ()));
    }

    fn reset(&mut self) {
        self.call(|_, o| o.call_method0("reset").map(|_| ()));
    }

    fn resolution(&self) -> Option<Resolution> {
        Some(self.current)
    }

    fn source_resolution(&self) -> Option<Resolution> {
        Some(self.source)
    }

    fn bitrate_limits(&self, res: Resolution, fps: f64) -> Option<(Rate, Rate)> {
        if self.failed {
            return None;
        }
        Python::attach(|py| {
            self.obj
                .call_method1(py, "bitrate_limits", (res.width, res.height, fps))
                .and_then(|v| v.extract::<Option<(f64, f64)>>(py))
                .ok()
                .flatten()
                .map(|(lo, hi)| (Rate(lo), Rate(hi)))
        })
    }

    fn set_resolution(&mut self, res: Resolution) -> Result<(), String> {
        let done = Python::attach(|py| {
            self.obj
                .call_method1(py, "set_resolution", (res.width, res.height))
                .map_err(|e| e.value(py).to_string())
        });
        done.map(|_| self.current = res)
    }

    fn drops_internally(&self) -> bool {
        true
    }
}

/// Register `name` as an encoder model (see the module header).
pub fn register(name: &str, check: Py<PyAny>, build: Py<PyAny>, files: Option<Py<PyAny>>) {
    external::register(
        name,
        Arc::new(PyModel {
            name: name.to_string(),
            check,
            build,
            files,
        }),
    );
}

/// The external encoder models registered in this process.
pub fn registered(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let d = PyDict::new(py);
    for n in external::registered() {
        d.set_item(n, true)?;
    }
    Ok(d.into_any())
}
