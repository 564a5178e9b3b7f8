//! Encoders that live outside the core: real codecs (libvpx VP8, x264) driven by the Python
//! package, or any encoder a user's own stack plugs in.
//!
//! The core stays free of codec libraries. A scenario names such a model like any other
//! (`encoder = { model = "vp8", clip = "carphone" }`); the model must have been registered in
//! this process by [`register`] (the Python package registers `vp8` and `x264` when it is
//! imported). Registration gives two functions:
//!
//! - `check(params, base_dir)`: validates the parameters while the scenario is read (a missing
//!   codec library, a missing or corrupt clip, a misspelt field are refused there, naming the
//!   field), and
//! - `build(params, base_dir, flow)`: opens the encoder when the flow starts ([`FlowInfo`]: the
//!   flow's name, frame rate and encoder seed).
//!
//! Judgment call: the registry is process-wide (like a codec registry in a media framework)
//! rather than passed through the scenario parser, so that the simulator, the live transport and
//! a user's stack all see the same models without a new argument on every path.

use super::{Encoder, EncoderError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, RwLock};

/// The parameters of an external encoder, as written in the scenario (without `model`).
pub type Params = serde_json::Map<String, serde_json::Value>;

/// What a registered model provides.
pub trait ExternalModel: Send + Sync {
    /// Check the parameters (files resolved against `base_dir`); an error names the field.
    fn check(&self, params: &Params, base_dir: &Path) -> Result<(), EncoderError>;
    /// The input files the parameters name, `(key, path)` (a clip file; not a bundled clip's
    /// name), so that a sweep on a cluster can ship them. Default: none.
    fn files(&self, _params: &Params, _base_dir: &Path) -> Vec<(String, PathBuf)> {
        Vec::new()
    }

    /// Open the encoder for `flow`.
    fn build(
        &self,
        params: &Params,
        base_dir: &Path,
        flow: &FlowInfo,
    ) -> Result<Box<dyn Encoder>, String>;
}

/// The flow an external encoder is opened for.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowInfo {
    pub name: String,
    /// The capture frame rate.
    pub fps: f64,
    /// The flow's encoder seed, for models with randomness.
    pub seed: u64,
    /// The flow's video buffering verifier in frames of the target (`None`: the model's own).
    pub vbv: Option<f64>,
}

/// An external model chosen by a scenario.
#[derive(Clone)]
pub struct ExternalSpec {
    pub model: String,
    pub params: Params,
    pub base_dir: PathBuf,
    /// The flow's name and frame rate ([`ExternalSpec::for_flow`]).
    pub flow: String,
    pub fps: f64,
    /// The flow's `vbv` (models that take one: [`super::EncoderConfig::models_vbv`]).
    pub vbv: Option<f64>,
    provider: Arc<dyn ExternalModel>,
}

impl std::fmt::Debug for ExternalSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "External({:?}, {:?})", self.model, self.params)
    }
}

impl ExternalSpec {
    /// The same model for the flow `name` captured at `fps` (the scenario layer sets it).
    pub fn for_flow(&self, name: &str, fps: f64) -> ExternalSpec {
        ExternalSpec {
            flow: name.to_string(),
            fps,
            ..self.clone()
        }
    }

    /// The same model with the flow's video buffering verifier (`None`: the model's own).
    pub fn with_vbv(&self, vbv: Option<f64>) -> ExternalSpec {
        ExternalSpec {
            vbv,
            ..self.clone()
        }
    }

    pub fn build(&self, seed: u64) -> Result<Box<dyn Encoder>, String> {
        let flow = FlowInfo {
            name: self.flow.clone(),
            fps: self.fps,
            seed,
            vbv: self.vbv,
        };
        self.provider
            .build(&self.params, &self.base_dir, &flow)
            .map_err(|e| format!("encoder {}: {e}", self.model))
    }
}

/// Real codecs the Python package provides; named here so a scenario read without them (the
/// `rtcc-sim` binary, a Rust test) gets an error saying where they come from.
pub const REAL_CODECS: &[&str] = &["vp8", "x264"];

static MODELS: LazyLock<RwLock<BTreeMap<String, Arc<dyn ExternalModel>>>> =
    LazyLock::new(|| RwLock::new(BTreeMap::new()));

/// Register (or replace) the external model `name`.
pub fn register(name: &str, model: Arc<dyn ExternalModel>) {
    MODELS
        .write()
        .expect("the encoder registry lock is never held across a panic")
        .insert(name.to_string(), model);
}

/// The names of the external models registered in this process.
pub fn registered() -> Vec<String> {
    MODELS
        .read()
        .expect("the encoder registry lock is never held across a panic")
        .keys()
        .cloned()
        .collect()
}

/// The input files the external model `model` says `params` name (none for an unknown model).
pub(super) fn files(model: &str, params: &Params, base_dir: &Path) -> Vec<(String, PathBuf)> {
    let provider = MODELS
        .read()
        .expect("the encoder registry lock is never held across a panic")
        .get(model)
        .cloned();
    provider.map_or_else(Vec::new, |p| p.files(params, base_dir))
}

/// Look `model` up and check its parameters. `None`: no such model registered (and not a real
/// codec either).
pub(super) fn resolve(
    model: &str,
    params: Params,
    base_dir: &Path,
) -> Option<Result<ExternalSpec, EncoderError>> {
    let provider = MODELS
        .read()
        .expect("the encoder registry lock is never held across a panic")
        .get(model)
        .cloned();
    let Some(provider) = provider else {
        return REAL_CODECS.contains(&model).then(|| {
            Err((
                String::new(),
                format!(
                    "the {model} encoder is a real codec run by rtcc's Python package (PyAV's \
                     libvpx and libx264): run the scenario with `rtcc run` or rtcc.run(), after \
                     `pip install av`"
                ),
            ))
        });
    };
    Some(provider.check(&params, base_dir).map(|()| ExternalSpec {
        model: model.to_string(),
        params,
        base_dir: base_dir.to_path_buf(),
        flow: String::new(),
        fps: 30.0,
        vbv: None,
        provider,
    }))
}
