//! A flow's controller as a recipe: which controller, its parameters and, for a flow coupled
//! with others (RFC 8699), its flow group. The recipe is checked once, when the scenario is
//! read, against the registry the run will use and with the context the controller will get;
//! the flow's endpoints then build the controller from it when the flow starts
//! ([`ControllerRecipe::build`]). A coupled flow is built as its controller wrapped by
//! [`rtcc_core::cc::coupled::couple`], from the typed coupling, not from a table of parameters.
//!
//! Judgment call: the registry is open (users register controllers, also from Python, by a
//! build function alone), so the one way to check a controller's parameters and abilities (a
//! coupled controller must take a rate from outside) is to build it. The check builds it once;
//! the run builds it again at the flow's start. Nothing else is built.
//!
//! Also here: the one parser of the command line's controller specs (`gcc:profile=paper`),
//! used by `rtcc-live` and, through the bindings, by the Python front.

use crate::error::{At, FieldError};
use rtcc_core::cc::coupled::{self, Algorithm};
use rtcc_core::cc::{
    Controller, ControllerContext, ControllerError, FeedbackPolicy, MediaDefaults, Params, Registry,
};
use serde::Deserialize;

/// A flow's coupling as written in a scenario.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CouplingSpec {
    /// The flow group: flows of one sender sharing a bottleneck (required).
    pub group: String,
    /// The flow's priority, > 0 (default 1).
    pub priority: Option<f64>,
    /// `"active"` (default) or `"conservative"` (RFC 8699 §5.3.1 / §5.3.2).
    pub algorithm: Option<Algorithm>,
}

/// A validated coupling: the flow's controller runs inside `coupled` in `group`.
#[derive(Debug, Clone, PartialEq)]
pub struct Coupling {
    pub group: String,
    pub priority: f64,
    pub algorithm: Algorithm,
}

/// A flow's controller, checked: build it with [`ControllerRecipe::build`].
#[derive(Debug, Clone)]
pub struct ControllerRecipe {
    /// The controller's registry name (a coupled flow's own controller, not `coupled`).
    pub name: String,
    pub params: Params,
    /// The feedback the controller asks its receiver for (a hand-built `coupled` asks for its
    /// inner controller's); a video flow's `feedback` table replaces it.
    pub feedback: FeedbackPolicy,
    /// The media settings the controller asks for (a hand-built `coupled`, its inner
    /// controller's); a video flow's own fields replace them one by one.
    pub media: MediaDefaults,
    /// Coupled with the other flows of its group (RFC 8699); `None`: the controller alone.
    pub coupling: Option<Coupling>,
}

impl ControllerRecipe {
    /// Check a flow's `controller`, `params` and `coupling` (`at` names the flow in errors).
    /// `ctx` is what the controller will be told when it is built, and `groups` holds the flow
    /// groups of the flows checked so far (flows of one group must agree on the algorithm).
    pub(crate) fn check(
        at: At,
        name: Option<&str>,
        params: Params,
        coupling: Option<&CouplingSpec>,
        ctx: &ControllerContext,
        registry: &Registry,
    ) -> Result<ControllerRecipe, FieldError> {
        let Some(name) = name else {
            return Err(at.err(
                "controller",
                format!(
                    "a video, tcp or dash flow needs a controller; valid controllers: {}",
                    registry.names().collect::<Vec<_>>().join(", ")
                ),
            ));
        };
        // A hand-built `coupled` controller asks for its inner controller's feedback and media.
        let asks = match (name, params.get("inner")) {
            ("coupled", Some(toml::Value::String(inner))) => inner.as_str(),
            _ => name,
        };
        let info = registry
            .lookup(asks)
            .map_err(|e| at.err("controller", e.to_string()))?;
        let (feedback, media) = (info.feedback, info.media.clone());
        let coupling = coupling.map(|c| check_coupling(at, c)).transpose()?;
        let recipe = ControllerRecipe {
            name: name.to_string(),
            params,
            feedback,
            media,
            coupling,
        };
        let controller = registry
            .create(&recipe.name, &recipe.params, ctx)
            .map_err(|e| {
                let field = match &e {
                    ControllerError::UnknownParam { param, .. } => format!("params.{param}"),
                    _ => "params".to_string(),
                };
                at.err(&field, e.to_string())
            })?;
        if let Some(c) = &recipe.coupling {
            coupled::couple(
                controller,
                &recipe.name,
                &c.group,
                c.priority,
                c.algorithm,
                ctx,
            )
            .map_err(|e| at.err("coupling", e.to_string()))?;
        }
        Ok(recipe)
    }

    /// The controller of a command line's spec (`gcc:profile=paper`, [`parse_spec`]), checked
    /// against `registry` by name and parameter names (values are checked when it is built).
    pub fn from_spec(spec: &str, registry: &Registry) -> Result<ControllerRecipe, String> {
        let (name, params) = parse_spec(spec)?;
        let info = registry
            .lookup(&name)
            .map_err(|e| format!("--controller {spec:?}: {e}"))?;
        rtcc_core::cc::check_params(info, &params)
            .map_err(|e| format!("--controller {spec:?}: {e}"))?;
        Ok(ControllerRecipe {
            name,
            params,
            feedback: info.feedback,
            media: info.media.clone(),
            coupling: None,
        })
    }

    /// Build the controller (coupled into its group of `ctx.coupling` if the flow is coupled).
    pub fn build(
        &self,
        ctx: &ControllerContext,
        registry: &Registry,
    ) -> Result<Box<dyn Controller>, ControllerError> {
        let controller = registry.create(&self.name, &self.params, ctx)?;
        match &self.coupling {
            None => Ok(controller),
            Some(c) => coupled::couple(
                controller,
                &self.name,
                &c.group,
                c.priority,
                c.algorithm,
                ctx,
            ),
        }
    }
}

fn check_coupling(at: At, c: &CouplingSpec) -> Result<Coupling, FieldError> {
    let priority = c.priority.unwrap_or(1.0);
    if !(priority.is_finite() && priority > 0.0) {
        return Err(at.err(
            "coupling.priority",
            format!("must be a positive number, got {priority}"),
        ));
    }
    if c.group.is_empty() {
        return Err(at.err(
            "coupling.group",
            "must name the flow group (flows of one sender sharing a bottleneck)",
        ));
    }
    Ok(Coupling {
        group: c.group.clone(),
        priority,
        algorithm: c.algorithm.unwrap_or_default(),
    })
}

/// Parse a command line's controller spec: `NAME` or `NAME:KEY=VALUE[,KEY=VALUE...]`. Values
/// are TOML integers, finite floats, booleans or quoted strings, and otherwise the text itself
/// (`rate=5Mbps`).
pub fn parse_spec(text: &str) -> Result<(String, Params), String> {
    let usage = "expected NAME or NAME:KEY=VALUE[,KEY=VALUE...], for example fixed:rate=5Mbps";
    let text = text.trim();
    let (name, rest) = match text.split_once(':') {
        Some((name, rest)) => (name.trim(), Some(rest)),
        None => (text, None),
    };
    if name.is_empty() {
        return Err(format!(
            "controller spec {text:?}: missing controller name; {usage}"
        ));
    }
    let mut params = Params::new();
    for item in rest.into_iter().flat_map(|r| r.split(',')) {
        let (key, value) = item
            .split_once('=')
            .map(|(k, v)| (k.trim(), v.trim()))
            .filter(|(k, v)| !k.is_empty() && !v.is_empty())
            .ok_or_else(|| {
                format!(
                    "controller spec {text:?}: parameter {:?} is not KEY=VALUE; {usage}",
                    item.trim()
                )
            })?;
        if params.contains_key(key) {
            return Err(format!(
                "controller spec {text:?}: parameter {key:?} given twice"
            ));
        }
        params.insert(key.to_string(), spec_value(value));
    }
    Ok((name.to_string(), params))
}

/// A spec's value: a TOML integer, finite float, boolean or quoted string, else the text itself.
fn spec_value(text: &str) -> toml::Value {
    let parsed = toml::from_str::<toml::Table>(&format!("v = {text}"))
        .ok()
        .and_then(|mut t| t.remove("v"));
    match parsed {
        Some(v @ (toml::Value::Integer(_) | toml::Value::Boolean(_) | toml::Value::String(_))) => v,
        Some(toml::Value::Float(x)) if x.is_finite() => toml::Value::Float(x),
        _ => toml::Value::String(text.to_string()),
    }
}
