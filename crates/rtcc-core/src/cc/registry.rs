//! Controllers by name: a [`Registry`] of [`ControllerInfo`]s that users can extend at run time.

use super::{Controller, ControllerContext, FeedbackPolicy, MediaDefaults, Params};
use crate::suggest::did_you_mean;
use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

/// A registry error that says what is valid.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ControllerError {
    #[error("unknown controller {name:?}{hint}; valid controllers: {valid}")]
    UnknownController {
        name: String,
        /// `" (did you mean \"gcc\"?)"` for a near miss, or empty.
        hint: String,
        valid: String,
    },
    #[error(
        "controller {controller:?} has no parameter {param:?}{hint}; valid parameters: {valid}"
    )]
    UnknownParam {
        controller: String,
        param: String,
        hint: String,
        valid: String,
    },
    #[error("controller {controller:?}: {message}")]
    BadParams { controller: String, message: String },
    #[error("a controller named {name:?} is already registered")]
    Duplicate { name: String },
}

/// A parameter's documentation for `rtcc controllers` and the docs.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamDoc {
    pub name: Cow<'static, str>,
    /// Default as it would be written in a scenario; empty if the parameter is required.
    pub default: Cow<'static, str>,
    pub doc: Cow<'static, str>,
}

impl ParamDoc {
    pub const fn new(name: &'static str, default: &'static str, doc: &'static str) -> ParamDoc {
        ParamDoc {
            name: Cow::Borrowed(name),
            default: Cow::Borrowed(default),
            doc: Cow::Borrowed(doc),
        }
    }
}

/// Creates a controller from its parameters. The registry it was looked up in is passed along so
/// that a wrapping controller (`vidaptive`) can build the one it wraps by name.
pub type BuildFn = Arc<
    dyn Fn(&Params, &ControllerContext, &Registry) -> Result<Box<dyn Controller>, ControllerError>
        + Send
        + Sync,
>;

/// A build function for a controller that builds no other (it ignores the registry).
pub fn build_fn(
    f: impl Fn(&Params, &ControllerContext) -> Result<Box<dyn Controller>, ControllerError>
        + Send
        + Sync
        + 'static,
) -> BuildFn {
    Arc::new(move |params, ctx, _| f(params, ctx))
}

/// A registered controller.
#[derive(Clone)]
pub struct ControllerInfo {
    pub name: String,
    pub summary: String,
    pub params: Vec<ParamDoc>,
    pub feedback: FeedbackPolicy,
    /// The media settings its video flows take unless their scenario writes them.
    pub media: MediaDefaults,
    pub build: BuildFn,
}

/// Controllers by name, in the order they appear in comparisons.
#[derive(Clone, Default)]
pub struct Registry {
    controllers: Vec<ControllerInfo>,
}

static BUILTIN: LazyLock<Registry> = LazyLock::new(|| {
    use super::*;
    let mut r = Registry::default();
    for info in [
        fixed::info(),
        oracle::info(),
        gcc::info(),
        sqp::info(),
        reno::info(),
        cubic::info(),
        prague::info(),
        bbr::info(),
        bbr::info_s(),
        bbr2::info(),
        bbr2::info_s(),
        copa::info(),
        rocc::info(),
        vidaptive::info(),
        c3g::info(),
        c3g_bbr::info(),
        nada::info(),
        scream::info(),
        coupled::info(),
    ] {
        r.register(info).expect("builtin names are unique");
    }
    r
});

/// The registry of every controller rtcc ships ([`Registry::builtin`] without the copy).
pub fn registry() -> &'static Registry {
    &BUILTIN
}

/// Look a controller up in the builtin registry.
pub fn lookup(name: &str) -> Result<&'static ControllerInfo, ControllerError> {
    registry().lookup(name)
}

/// Build a controller of the builtin registry from its name and parameters.
pub fn create(
    name: &str,
    params: &Params,
    ctx: &ControllerContext,
) -> Result<Box<dyn Controller>, ControllerError> {
    registry().create(name, params, ctx)
}

impl Registry {
    /// The controllers rtcc ships, ready to be extended.
    pub fn builtin() -> Registry {
        registry().clone()
    }

    /// Add a controller; a name already taken is an error.
    pub fn register(&mut self, info: ControllerInfo) -> Result<(), ControllerError> {
        if self.controllers.iter().any(|c| c.name == info.name) {
            return Err(ControllerError::Duplicate { name: info.name });
        }
        self.controllers.push(info);
        Ok(())
    }

    pub fn lookup(&self, name: &str) -> Result<&ControllerInfo, ControllerError> {
        self.iter()
            .find(|c| c.name == name)
            .ok_or_else(|| ControllerError::UnknownController {
                name: name.to_string(),
                hint: did_you_mean(name, self.names()),
                valid: self.names().collect::<Vec<_>>().join(", "),
            })
    }

    /// Build a controller from its registered name and parameters.
    pub fn create(
        &self,
        name: &str,
        params: &Params,
        ctx: &ControllerContext,
    ) -> Result<Box<dyn Controller>, ControllerError> {
        let info = self.lookup(name)?;
        check_params(info, params)?;
        (info.build)(params, ctx, self)
    }

    pub fn iter(&self) -> std::slice::Iter<'_, ControllerInfo> {
        self.into_iter()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.iter().map(|c| c.name.as_str())
    }
}

impl<'a> IntoIterator for &'a Registry {
    type Item = &'a ControllerInfo;
    type IntoIter = std::slice::Iter<'a, ControllerInfo>;
    fn into_iter(self) -> Self::IntoIter {
        self.controllers.iter()
    }
}

/// Reject parameters the controller does not have (before deserialising, so the message lists
/// the valid names even for controllers with many fields).
pub fn check_params(info: &ControllerInfo, params: &Params) -> Result<(), ControllerError> {
    for key in params.keys() {
        if !info.params.iter().any(|p| p.name == key.as_str()) {
            let names: Vec<&str> = info.params.iter().map(|p| p.name.as_ref()).collect();
            return Err(ControllerError::UnknownParam {
                controller: info.name.clone(),
                param: key.clone(),
                hint: did_you_mean(key, names.iter().copied()),
                valid: if names.is_empty() {
                    "(none)".to_string()
                } else {
                    names.join(", ")
                },
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::CapacityView;
    use crate::units::{Bytes, Rate, Time};

    #[test]
    fn a_misspelt_controller_or_parameter_names_the_nearest_one() {
        let reg = registry();
        let e = reg
            .lookup("gccc")
            .err()
            .expect("no controller gccc")
            .to_string();
        assert!(
            e.contains("unknown controller \"gccc\" (did you mean \"gcc\"?)"),
            "{e}"
        );
        let e = reg
            .lookup("vidaptiv")
            .err()
            .expect("no vidaptiv")
            .to_string();
        assert!(e.contains("(did you mean \"vidaptive\"?)"), "{e}");
        // Nothing close: no guess, only the list.
        let e = reg.lookup("quic").err().expect("no quic").to_string();
        assert!(
            !e.contains("did you mean") && e.contains("valid controllers"),
            "{e}"
        );
        assert_eq!(did_you_mean("x", ["y", "z"].into_iter()), "");
        assert_eq!(
            did_you_mean("rtae", ["rate", "cwnd"].into_iter()),
            " (did you mean \"rate\"?)"
        );
    }

    struct TenMbps;
    impl CapacityView for TenMbps {
        fn bytes_between(&self, from: Time, to: Time) -> f64 {
            Rate::from_mbps(10.0).bytes_in(to - from)
        }
    }

    fn ctx() -> ControllerContext {
        ControllerContext {
            now: Time::ZERO,
            fps: 30.0,
            max_payload: Bytes(1200),
            media: Default::default(),
            capacity: Some(Arc::new(TenMbps)),
            coupling: Some(crate::cc::coupled::CouplingGroups::default()),
            ecn: crate::packet::EcnMode::Off,
        }
    }

    #[test]
    fn unknown_controller_lists_valid_names() {
        let e = create("nosuch", &Params::new(), &ctx()).err().unwrap();
        let msg = e.to_string();
        assert!(msg.contains("fixed") && msg.contains("oracle"), "{msg}");
    }

    #[test]
    fn unknown_param_lists_valid_params() {
        let params: Params = toml::from_str("rat = \"1Mbps\"").unwrap();
        let e = create("fixed", &params, &ctx()).err().unwrap().to_string();
        assert!(e.contains("\"rat\"") && e.contains("rate"), "{e}");
    }

    #[test]
    fn bad_value_names_the_problem() {
        let params: Params = toml::from_str("rate = 5").unwrap();
        let e = create("fixed", &params, &ctx()).err().unwrap().to_string();
        assert!(e.contains("has no unit"), "{e}");
        let e = create("fixed", &Params::new(), &ctx())
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("rate"),
            "a missing required parameter is named: {e}"
        );
    }

    #[test]
    fn every_registered_controller_builds_with_documented_defaults() {
        for info in registry().iter() {
            let mut params = Params::new();
            for p in info.params.iter().filter(|p| p.default.is_empty()) {
                params.insert(p.name.to_string(), toml::Value::String("1Mbps".into()));
            }
            let c = (info.build)(&params, &ctx(), registry());
            assert!(c.is_ok(), "{} failed to build: {:?}", info.name, c.err());
        }
    }

    #[test]
    fn every_controllers_media_defaults_are_settings_a_video_flow_takes() {
        for info in registry().iter() {
            assert_eq!(
                info.media.check(std::path::Path::new(".")),
                Ok(()),
                "{}",
                info.name
            );
        }
        let bad = crate::cc::MediaDefaults {
            encoder: Some(serde_json::json!({ "model": "lagged", "nois": 0.1 })),
            ..Default::default()
        };
        let (field, _) = bad.check(std::path::Path::new(".")).unwrap_err();
        assert_eq!(field, "encoder.nois");
    }

    #[test]
    fn a_registered_controller_is_built_by_name_and_duplicates_are_refused() {
        let mut r = Registry::builtin();
        let info = ControllerInfo {
            name: "alias".into(),
            summary: "fixed under another name".into(),
            params: vec![ParamDoc::new("rate", "", "full rate")],
            feedback: FeedbackPolicy::default(),
            media: Default::default(),
            build: Arc::new(|params, ctx, reg| reg.create("fixed", params, ctx)),
        };
        r.register(info.clone()).unwrap();
        assert_eq!(
            r.register(info).unwrap_err(),
            ControllerError::Duplicate {
                name: "alias".into()
            }
        );
        assert_eq!(r.names().last(), Some("alias"));
        let params: Params = toml::from_str("rate = \"1Mbps\"").unwrap();
        let c = r.create("alias", &params, &ctx()).unwrap();
        assert_eq!(c.decision().target_bitrate, Rate::from_mbps(1.0));
        assert!(
            lookup("alias").is_err(),
            "the builtin registry is unchanged"
        );
    }
}
