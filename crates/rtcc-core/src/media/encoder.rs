//! Encoder models: how many bytes a frame gets for a given target bitrate.
//!
//! Three models, selectable per flow (`encoder = "..."` in a scenario, [`ENCODERS`]):
//!
//! - `ideal` produces exactly `target / fps` bytes per frame and follows a new target on the very
//!   next frame. It isolates the controller from encoder behaviour.
//! - `lagged` ([`lagged`]) is a synthetic model of a real codec's rate control: it follows the
//!   target slowly (about 2 s to settle up, 1 s down), its frame sizes are noisy and depend on the
//!   content, keyframes are large, and every resolution has a rate it cannot go below or above
//!   (Vidaptive §2, Fig. 2: the observation Vidaptive is built on).
//! - `trace` ([`trace`]) replays recorded frame sizes from a file.
//! - `vp8` and `x264` are real codecs encoding real clips, run by the Python package and
//!   registered here as [`external`] models (any other encoder can be plugged in the same way).
//!
//! # The control interface
//!
//! Beyond [`Encoder::encode`], the trait carries what a rate controller can ask of a real encoder
//! (all with default implementations, so a model only implements what it supports):
//!
//! - **pause**: a target of 0 means "do not encode this frame". The model returns an empty frame
//!   (`size` 0) and its state does not move; the sender then sends nothing for that capture
//!   instant (Vidaptive §4: "the transport layer sets the encoder target bitrate to zero to signal
//!   a pause").
//! - **keyframe request** ([`Encoder::request_keyframe`]): the next encoded frame is a keyframe
//!   (a receiver's picture-loss indication, RFC 4585 §6.3.1).
//! - **reset** ([`Encoder::reset`]): a keyframe and a fresh rate-control state; the sender's
//!   [`crate::media::VideoSender::reset_encoder`] also flushes the pacer (Vidaptive's "Encoder
//!   Reset", §3.3).
//! - **resolution** ([`Encoder::set_resolution`], [`Encoder::resolution`]): models with a
//!   resolution ladder change rung (with a keyframe) and report the resolution of every frame;
//!   [`Encoder::source_resolution`] is the capture resolution and [`Encoder::bitrate_limits`]
//!   the lowest and highest rate at each rung, what the degradation policy works from.
//!
//! Each encoded frame also carries the model's PSNR estimate, when the model has one
//! ([`crate::video::quality`]).

use crate::net::TraceError;
use crate::units::{Rate, Time};
use crate::video::quality::Resolution;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub mod external;
pub mod lagged;
pub mod trace;

pub use lagged::{LaggedConfig, LaggedEncoder};
pub use trace::{FrameTrace, TraceEncoder};

/// One encoded frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EncodedFrame {
    /// Bytes (0: the frame was not encoded, e.g. a pause).
    pub size: u32,
    /// Decodable on its own; otherwise it predicts from the previous encoded frame.
    pub keyframe: bool,
    /// Estimated PSNR against the source, for models with a quality model.
    pub psnr_db: Option<f64>,
    /// Resolution the frame was coded at, for models that have one.
    pub resolution: Option<Resolution>,
}

impl EncodedFrame {
    /// A frame that was not encoded (a pause).
    pub fn skipped(resolution: Option<Resolution>) -> EncodedFrame {
        EncodedFrame {
            size: 0,
            keyframe: false,
            psnr_db: None,
            resolution,
        }
    }
}

pub trait Encoder: Send {
    /// Encode the frame captured at `now` with the controller's current `target`. A target of 0
    /// (or below) pauses: the frame is skipped and an empty frame returned.
    fn encode(&mut self, now: Time, target: Rate, fps: f64) -> EncodedFrame;

    /// Make the next encoded frame a keyframe. Models without keyframe control ignore it.
    fn request_keyframe(&mut self) {}

    /// Reset the rate control and make the next encoded frame a keyframe.
    fn reset(&mut self) {
        self.request_keyframe();
    }

    /// The resolution frames are currently coded at (`None`: the model has none).
    fn resolution(&self) -> Option<Resolution> {
        None
    }

    /// The capture resolution: the highest the model codes at (`None`: no resolution ladder).
    fn source_resolution(&self) -> Option<Resolution> {
        None
    }

    /// The lowest and highest rate the model can produce at `res` and `fps` (`None`: it has no
    /// such limits). The degradation policy keeps the target above the lowest
    /// ([`crate::media::degradation`]).
    fn bitrate_limits(&self, _res: Resolution, _fps: f64) -> Option<(Rate, Rate)> {
        None
    }

    /// Code the following frames at `res` (the next one is a keyframe). Models without a
    /// resolution ladder refuse.
    fn set_resolution(&mut self, res: Resolution) -> Result<(), String> {
        Err(format!(
            "this encoder model has no resolution ladder (asked for {res})"
        ))
    }

    /// Whether every frame the model returns is already part of its reference chain, with its
    /// own rate control dropping frames that would overflow its buffer (a real codec). The
    /// sender then never discards an encoded frame (the decoder would lose its reference); a
    /// frame the model drops comes back empty. Models that only compute sizes return false.
    fn drops_internally(&self) -> bool {
        false
    }
}

/// Exactly `target / fps` bytes per frame. Fractions of a byte are carried to the next frame so
/// the long-run bitrate equals the target exactly. The first encoded frame and a requested one
/// are flagged as keyframes (same size: the model has no keyframe cost).
#[derive(Debug)]
pub struct IdealEncoder {
    carry: f64,
    keyframe_pending: bool,
}

impl Default for IdealEncoder {
    fn default() -> Self {
        IdealEncoder {
            carry: 0.0,
            keyframe_pending: true,
        }
    }
}

impl Encoder for IdealEncoder {
    fn encode(&mut self, _now: Time, target: Rate, fps: f64) -> EncodedFrame {
        let exact = target.bps().max(0.0) / fps / 8.0 + self.carry;
        let size = exact.floor();
        self.carry = exact - size;
        let size = size.min(u32::MAX as f64) as u32;
        let keyframe = size > 0 && self.keyframe_pending;
        if keyframe {
            self.keyframe_pending = false;
        }
        EncodedFrame {
            size,
            keyframe,
            psnr_db: None,
            resolution: None,
        }
    }

    fn request_keyframe(&mut self) {
        self.keyframe_pending = true;
    }
}

/// Names of the encoder models a flow can select.
/// Models registered with [`external::register`] (`vp8` and `x264` from the Python package) are
/// valid too.
pub const ENCODERS: &[&str] = &["ideal", "lagged", "trace", "vp8", "x264"];

/// A video buffering verifier of `frames` frame targets is one the rate control can keep: at
/// least one frame (a smaller one would cap every frame below its own target).
pub fn check_vbv(frames: f64) -> Result<(), String> {
    if frames.is_finite() && (1.0..=100.0).contains(&frames) {
        Ok(())
    } else {
        Err(format!(
            "must be between 1 and 100 frames of the encoder's target, got {frames}"
        ))
    }
}

/// A validated encoder choice: which model, with which parameters.
#[derive(Clone, Default)]
pub enum EncoderConfig {
    #[default]
    Ideal,
    Lagged(LaggedConfig),
    Trace(Arc<FrameTrace>),
    /// A model registered from outside the core (a real codec).
    External(Arc<external::ExternalSpec>),
}

impl std::fmt::Debug for EncoderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EncoderConfig::Ideal => f.write_str("Ideal"),
            EncoderConfig::Lagged(c) => f.debug_tuple("Lagged").field(c).finish(),
            // The frames themselves would flood a scenario dump.
            EncoderConfig::Trace(t) => write!(f, "Trace({:?}, {} frames)", t.name(), t.len()),
            EncoderConfig::External(e) => write!(f, "{e:?}"),
        }
    }
}

const EXPECTED: &str =
    "expected a model name (\"lagged\") or a table ({ model = \"lagged\", up = \"2s\" })";
const TRACE_NEEDS_FILE: &str =
    "the trace encoder needs a file: encoder = { model = \"trace\", file = \"frames.txt\" }";

/// An invalid encoder choice: the sub-field (`""` for the value as a whole, `"up"` for
/// `encoder.up`) and what is wrong.
pub type EncoderError = (String, String);

/// Where the `trace` model reads its `file`: relative names against `base_dir`.
fn trace_path(base_dir: &Path, file: &str) -> PathBuf {
    if Path::new(file).is_absolute() {
        Path::new(file).to_path_buf()
    } else {
        base_dir.join(file)
    }
}

/// The input files a scenario's `encoder` value names, as [`EncoderConfig::from_value`] reads
/// them: `(key, path)`, the `trace` model's `file` or what a registered external model says
/// (a real encoder's clip file); none for every other value.
pub fn referenced_files(v: &serde_json::Value, base_dir: &Path) -> Vec<(String, PathBuf)> {
    let Some(table) = v.as_object() else {
        return Vec::new();
    };
    match table.get("model").and_then(|m| m.as_str()) {
        Some("trace") => table
            .get("file")
            .and_then(|f| f.as_str())
            .map(|file| vec![("file".to_string(), trace_path(base_dir, file))])
            .unwrap_or_default(),
        Some(model) => external::files(model, table, base_dir),
        None => Vec::new(),
    }
}

impl EncoderConfig {
    /// Whether the model runs peak-constrained rate control (a flow's `vbv`): `lagged` caps its
    /// frames; `ideal` frames are exactly their target already; x264 sizes its own VBV
    /// (`vbv-bufsize`) to that many frames. A recorded trace cannot be constrained, and libvpx
    /// has no per-frame cap (its buffer model drops frames instead).
    pub fn models_vbv(&self) -> bool {
        match self {
            EncoderConfig::Ideal | EncoderConfig::Lagged(_) => true,
            EncoderConfig::External(e) => e.model == "x264",
            EncoderConfig::Trace(_) => false,
        }
    }

    /// The model with a video buffering verifier of `frames` frame targets (`None`: off).
    /// Panics on a model that does not model it ([`Self::models_vbv`]), which the flow's
    /// checks have refused with a message.
    pub fn with_vbv(self, frames: Option<f64>) -> EncoderConfig {
        assert!(
            frames.is_none() || self.models_vbv(),
            "{} has no VBV",
            self.name()
        );
        match self {
            EncoderConfig::Lagged(c) => EncoderConfig::Lagged(LaggedConfig { peak: frames, ..c }),
            EncoderConfig::External(e) => EncoderConfig::External(Arc::new(e.with_vbv(frames))),
            other => other, // ideal frames are exact; a trace has no VBV (frames is None)
        }
    }

    /// The model's name (one of [`ENCODERS`], or a registered external model).
    pub fn name(&self) -> &str {
        match self {
            EncoderConfig::Ideal => "ideal",
            EncoderConfig::Lagged(_) => "lagged",
            EncoderConfig::Trace(_) => "trace",
            EncoderConfig::External(e) => &e.model,
        }
    }

    /// Read a scenario's `encoder` value: a model name (`"lagged"`, default parameters) or a
    /// table (`{ model = "lagged", up = "2s", noise = 0.2 }`, `{ model = "trace", file = "x" }`).
    /// Files are resolved against `base_dir`.
    pub fn from_value(
        v: &serde_json::Value,
        base_dir: &Path,
    ) -> Result<EncoderConfig, EncoderError> {
        let whole = |m: String| (String::new(), m);
        let (model, table) = match v {
            serde_json::Value::String(s) => (s.as_str(), None),
            serde_json::Value::Object(o) => match o.get("model") {
                Some(serde_json::Value::String(s)) => (s.as_str(), Some(o)),
                Some(other) => {
                    return Err((
                        "model".into(),
                        format!(
                            "expected a model name ({}), got {other}",
                            ENCODERS.join(", ")
                        ),
                    ))
                }
                None => {
                    return Err(whole(format!(
                        "the table needs a model: {{ model = \"lagged\", ... }}; valid models: {}",
                        ENCODERS.join(", ")
                    )))
                }
            },
            other => return Err(whole(format!("{EXPECTED}, got {other}"))),
        };
        let empty = serde_json::Map::new();
        let fields = table.unwrap_or(&empty);
        let params = || fields.iter().filter(|(k, _)| k.as_str() != "model");
        match model {
            "ideal" => match params().next() {
                Some((k, _)) => Err((k.clone(), "the ideal encoder has no parameters".into())),
                None => Ok(EncoderConfig::Ideal),
            },
            "lagged" => Ok(EncoderConfig::Lagged(LaggedConfig::from_fields(params())?)),
            "trace" => {
                if let Some((k, _)) = params().find(|(k, _)| k.as_str() != "file") {
                    return Err((
                        k.clone(),
                        "unknown field; the trace encoder takes file".into(),
                    ));
                }
                let file = match fields.get("file") {
                    Some(serde_json::Value::String(f)) => f,
                    Some(other) => {
                        let m = format!("expected a file name, got {other}");
                        return Err(("file".into(), m));
                    }
                    None => return Err(whole(TRACE_NEEDS_FILE.into())),
                };
                let t = FrameTrace::from_file(&trace_path(base_dir, file))
                    .map_err(|e: TraceError| ("file".to_string(), e.to_string()))?;
                Ok(EncoderConfig::Trace(Arc::new(t)))
            }
            other => match external::resolve(
                other,
                params().map(|(k, v)| (k.clone(), v.clone())).collect(),
                base_dir,
            ) {
                Some(spec) => Ok(EncoderConfig::External(Arc::new(spec?))),
                None => Err((
                    if table.is_some() {
                        "model".into()
                    } else {
                        String::new()
                    },
                    format!(
                        "unknown encoder {other:?}; valid encoders: {}",
                        ENCODERS.join(", ")
                    ),
                )),
            },
        }
    }

    /// Build the encoder. `seed` seeds the models' random generators (the same seed gives the
    /// same frame sizes). Only an external model can fail (its codec would not open).
    pub fn build(&self, seed: u64) -> Result<Box<dyn Encoder>, String> {
        Ok(match self {
            EncoderConfig::Ideal => Box::new(IdealEncoder::default()),
            EncoderConfig::Lagged(c) => Box::new(LaggedEncoder::new(c.clone(), seed)),
            EncoderConfig::Trace(t) => Box::new(TraceEncoder::new(t.clone())),
            EncoderConfig::External(e) => return e.build(seed),
        })
    }
}

/// Build an encoder that takes no file from its name (`"ideal"`, `"lagged"` with default
/// parameters); `seed` as in [`EncoderConfig::build`].
pub fn create(name: &str, seed: u64) -> Result<Box<dyn Encoder>, String> {
    let cfg = EncoderConfig::from_value(&serde_json::Value::String(name.into()), Path::new("."))
        .map_err(|(_, m)| m)?;
    cfg.build(seed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_real_codec_without_the_python_package_says_where_it_comes_from() {
        let dir = Path::new(".");
        let e = EncoderConfig::from_value(&json!({"model": "vp8", "clip": "carphone"}), dir)
            .unwrap_err();
        assert!(
            e.1.contains("Python package") && e.1.contains("pip install av"),
            "the error must say how to get the codec: {e:?}"
        );
        let e = EncoderConfig::from_value(&json!("h265"), dir).unwrap_err();
        assert!(e.1.contains("unknown encoder"), "{e:?}");
    }

    #[test]
    fn ideal_frames_sum_to_the_target() {
        let mut e = IdealEncoder::default();
        let total: u64 = (0..30)
            .map(|_| e.encode(Time::ZERO, Rate(1_000_001.0), 30.0).size as u64)
            .sum();
        assert_eq!(
            total, 125_000,
            "one second of 1 Mbit/s is 125000 bytes (carry keeps it exact)"
        );
        let mut e = IdealEncoder::default();
        let f = e.encode(Time::ZERO, Rate(9e6), 30.0);
        assert_eq!((f.size, f.keyframe, f.psnr_db), (37_500, true, None));
        assert!(!e.encode(Time::ZERO, Rate(9e6), 30.0).keyframe);
    }

    #[test]
    fn ideal_keeps_a_keyframe_for_the_first_frame_it_actually_encodes() {
        let mut e = IdealEncoder::default();
        let paused = e.encode(Time::ZERO, Rate::ZERO, 30.0);
        assert_eq!((paused.size, paused.keyframe), (0, false));
        assert!(e.encode(Time::ZERO, Rate(1e6), 30.0).keyframe);
        assert!(!e.encode(Time::ZERO, Rate(1e6), 30.0).keyframe);
        e.request_keyframe();
        assert!(e.encode(Time::ZERO, Rate(1e6), 30.0).keyframe);
        assert!(e.set_resolution(Resolution::new(1280, 720)).is_err());
        assert_eq!(e.resolution(), None);
    }

    #[test]
    fn encoder_values_are_names_or_tables_and_errors_name_the_field() {
        let dir = Path::new(".");
        assert_eq!(
            EncoderConfig::from_value(&json!("ideal"), dir)
                .unwrap()
                .name(),
            "ideal"
        );
        assert_eq!(
            EncoderConfig::from_value(&json!("lagged"), dir)
                .unwrap()
                .name(),
            "lagged"
        );
        let c =
            EncoderConfig::from_value(&json!({"model": "lagged", "up": "3s", "noise": 0.1}), dir)
                .unwrap();
        let EncoderConfig::Lagged(l) = c else {
            panic!("lagged expected")
        };
        assert_eq!((l.up.as_secs_f64(), l.noise), (3.0, 0.1));

        let e = EncoderConfig::from_value(&json!("vp9"), dir).unwrap_err();
        assert!(
            e.0.is_empty() && e.1.contains("ideal, lagged, trace"),
            "{e:?}"
        );
        let e =
            EncoderConfig::from_value(&json!({"model": "lagged", "upp": "2s"}), dir).unwrap_err();
        assert_eq!(e.0, "upp");
        assert!(e.1.contains("up, down"), "{e:?}");
        let e =
            EncoderConfig::from_value(&json!({"model": "lagged", "up": "fast"}), dir).unwrap_err();
        assert_eq!(e.0, "up");
        let e =
            EncoderConfig::from_value(&json!({"model": "ideal", "noise": 0.1}), dir).unwrap_err();
        assert_eq!(e.0, "noise");
        let e = EncoderConfig::from_value(&json!({"up": "2s"}), dir).unwrap_err();
        assert!(e.1.contains("needs a model"), "{e:?}");
        let e = EncoderConfig::from_value(&json!("trace"), dir).unwrap_err();
        assert!(e.1.contains("needs a file"), "{e:?}");
        let e =
            EncoderConfig::from_value(&json!({"model": "trace", "file": "no/such.frames"}), dir)
                .unwrap_err();
        assert!(e.0 == "file" && e.1.contains("no/such.frames"), "{e:?}");
        // The file a trace model names, where it is read from; other values name none.
        let base = Path::new("/scenarios/x");
        let file = |p: &str| vec![("file".to_string(), PathBuf::from(p))];
        assert_eq!(
            referenced_files(&json!({"model": "trace", "file": "../t.frames"}), base),
            file("/scenarios/x/../t.frames")
        );
        assert_eq!(
            referenced_files(&json!({"model": "trace", "file": "/abs/t.frames"}), base),
            file("/abs/t.frames")
        );
        assert!(referenced_files(&json!({"model": "lagged"}), base).is_empty());
        assert!(referenced_files(&json!("trace"), base).is_empty());
        assert!(referenced_files(&json!({"model": "vp8", "clip": "x.mp4"}), base).is_empty());
        let e = EncoderConfig::from_value(&json!(3), dir).unwrap_err();
        assert!(e.1.contains("expected a model name"), "{e:?}");
        assert!(create("lagged", 1).is_ok());
        assert!(create("x", 1)
            .err()
            .is_some_and(|e| e.contains("valid encoders")));
    }
}
