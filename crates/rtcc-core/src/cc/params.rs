//! Controller parameters written once: [`controller_config!`] declares a controller's `Config`
//! struct, and the struct's declaration is also its parameter documentation.
//!
//! Each field is one parameter: its name, type, default and doc comment are written once, and
//! the macro derives from them
//!
//! - the struct itself (`Debug`, `Clone`) with the doc comments;
//! - its `Deserialize`, which rejects unknown names and takes the written default of every field
//!   a scenario leaves out (a field without a default is required);
//! - `Default`, when every field has a default;
//! - `param_docs()`, the [`ParamDoc`] list that `rtcc controllers`, the docs and
//!   [`check_params`](super::check_params) read: the name, the default rendered from the typed
//!   value as a scenario would write it ([`scenario_string`]: `"300kbps"`, `"100ms"`, `"1500B"`,
//!   `"2.5"`, `"true"`, an enum as its serde name) and the first paragraph of the doc comment
//!   (later paragraphs are for readers of the code only).
//!
//! A field whose default means something other than its typed value (an `Option` that is `None`
//! until the profile or the flow's media range decides) shows what it means with
//! `#[doc_default = "..."]`, written after the doc comment. A required field shows an empty
//! default, which is how the registry and the Python side know it is required.
//!
//! ```ignore
//! controller_config! {
//!     /// Oracle's parameters.
//!     pub struct OracleConfig {
//!         /// fraction of the capacity to target
//!         pub fraction: f64 = 0.9,
//!         /// look-ahead averaging window and update period
//!         pub window: Duration = Duration::from_millis(100),
//!     }
//! }
//! ```

use serde::Serialize;

/// Declares a controller's config struct; see the [module documentation](self).
macro_rules! controller_config {
    (@config
        $(#[$attr:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[doc = $doc:expr])*
                $(#[doc_default = $shown:literal])?
                $fvis:vis $field:ident : $ty:ty $(= $default:expr)?
            ),*
        }
    ) => {
        $(#[$attr])*
        #[derive(Debug, Clone)]
        $vis struct $name {
            $(
                $(#[doc = $doc])*
                $fvis $field: $ty,
            )*
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                // What the scenario wrote; every field is optional here, the defaults and the
                // check for required fields come after.
                #[derive(::serde::Deserialize)]
                #[serde(deny_unknown_fields)]
                struct Written {
                    $($field: Option<$ty>,)*
                }
                let written = <Written as ::serde::Deserialize>::deserialize(deserializer)?;
                Ok($name {
                    $(
                        $field: $crate::cc::params::controller_config!(
                            @take written.$field, $field $(, $default)?
                        ),
                    )*
                })
            }
        }

        impl $name {
            /// Every parameter in declaration order: its name, its default as a scenario writes
            /// it (empty if it is required) and the first paragraph of its doc comment.
            pub fn param_docs() -> Vec<$crate::cc::ParamDoc> {
                vec![$(
                    $crate::cc::ParamDoc {
                        name: ::std::borrow::Cow::Borrowed(stringify!($field)),
                        default: $crate::cc::params::controller_config!(
                            @shown $ty, [$($shown)?], [$($default)?]
                        ),
                        doc: ::std::borrow::Cow::Owned(
                            $crate::cc::params::first_paragraph(&[$($doc),*])
                        ),
                    },
                )*]
            }

            /// The parameters whose documented default does not read back as the typed one.
            #[cfg(test)]
            pub(crate) fn default_drift() -> Vec<String> {
                type Check = Option<fn(&$crate::cc::ParamDoc) -> Option<String>>;
                let checks: Vec<Check> = vec![$(
                    $crate::cc::params::controller_config!(
                        @check $ty, [$($shown)?], [$($default)?]
                    ),
                )*];
                Self::param_docs()
                    .iter()
                    .zip(checks)
                    .filter_map(|(doc, check)| check?(doc))
                    .collect()
            }
        }
    };
    (@take $written:expr, $field:ident, $default:expr) => {
        match $written {
            Some(value) => value,
            None => $default,
        }
    };
    (@take $written:expr, $field:ident) => {
        $written.ok_or_else(|| <D::Error as ::serde::de::Error>::missing_field(stringify!($field)))?
    };
    (@shown $ty:ty, [$shown:literal], [$($default:expr)?]) => {
        ::std::borrow::Cow::Borrowed($shown)
    };
    (@shown $ty:ty, [], [$default:expr]) => {
        ::std::borrow::Cow::Owned($crate::cc::params::scenario_string::<$ty>(&$default))
    };
    (@shown $ty:ty, [], []) => {
        ::std::borrow::Cow::Borrowed("")
    };
    // A `doc_default` says what the default means, not a value to compare; a required field has
    // none.
    (@check $ty:ty, [$shown:literal], [$($default:expr)?]) => { None };
    (@check $ty:ty, [], []) => { None };
    (@check $ty:ty, [], [$default:expr]) => {
        Some(
            (|doc: &$crate::cc::ParamDoc| $crate::cc::params::drift::<$ty>(doc, $default))
                as fn(&$crate::cc::ParamDoc) -> Option<String>,
        )
    };
    // Every field has a default: the config also has `Default`.
    (
        $(#[$attr:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[doc = $doc:expr])*
                $(#[doc_default = $shown:literal])?
                $fvis:vis $field:ident : $ty:ty = $default:expr
            ),* $(,)?
        }
    ) => {
        $crate::cc::params::controller_config!(@config
            $(#[$attr])*
            $vis struct $name {
                $(
                    $(#[doc = $doc])*
                    $(#[doc_default = $shown])?
                    $fvis $field : $ty = $default
                ),*
            }
        );
        impl Default for $name {
            fn default() -> Self {
                $name { $($field: $default),* }
            }
        }
    };
    // Some field is required.
    (
        $(#[$attr:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[doc = $doc:expr])*
                $(#[doc_default = $shown:literal])?
                $fvis:vis $field:ident : $ty:ty $(= $default:expr)?
            ),* $(,)?
        }
    ) => {
        $crate::cc::params::controller_config!(@config
            $(#[$attr])*
            $vis struct $name {
                $(
                    $(#[doc = $doc])*
                    $(#[doc_default = $shown])?
                    $fvis $field : $ty $(= $default)?
                ),*
            }
        );
    };
}
pub(crate) use controller_config;

/// A default as a scenario writes it, without the quotes of a string: a rate, a duration or a
/// size with its unit (`"300kbps"`, `"100ms"`, `"1500B"`), a float with its point (`"2.0"`), an
/// integer, a bool, an enum as its serde name (`"webrtc"`), a table as `"{}"`.
///
/// Panics for a value a scenario cannot write (`None`): such a field needs a `doc_default`.
pub fn scenario_string<T: Serialize>(value: &T) -> String {
    match toml::Value::try_from(value) {
        Ok(toml::Value::String(s)) => s,
        // Debug: the shortest form that reads back to the same number, with a point or an
        // exponent (`2.0`, `0.85`, `1e-9`).
        Ok(toml::Value::Float(x)) => format!("{x:?}"),
        Ok(v) => v.to_string(),
        Err(e) => panic!("a default without a scenario form needs a doc_default: {e}"),
    }
}

/// The first paragraph of a doc comment, its lines joined by single spaces.
pub fn first_paragraph(lines: &[&str]) -> String {
    let lines: Vec<&str> = lines
        .iter()
        .map(|line| line.trim())
        .take_while(|line| !line.is_empty())
        .collect();
    lines.join(" ")
}

/// What is wrong with `doc`'s default, if it does not read back, as a scenario value of type
/// `T`, to `typed` (compared by their `Debug` forms, exact for floats).
#[cfg(test)]
pub(crate) fn drift<T: serde::de::DeserializeOwned + std::fmt::Debug>(
    doc: &super::ParamDoc,
    typed: T,
) -> Option<String> {
    let written = scenario_value(&doc.default);
    match written.clone().try_into::<T>() {
        Ok(read) if format!("{read:?}") == format!("{typed:?}") => None,
        Ok(read) => Some(format!(
            "{}: documented {written} reads as {read:?}, the default is {typed:?}",
            doc.name
        )),
        Err(e) => Some(format!(
            "{}: documented {written} does not read as the default {typed:?}: {e}",
            doc.name
        )),
    }
}

/// A documented default as a scenario value: TOML if it is a TOML value (`2.5`, `true`, `{}`),
/// a string otherwise (`300kbps`, `webrtc`).
#[cfg(test)]
fn scenario_value(default: &str) -> toml::Value {
    toml::from_str::<toml::Table>(&format!("v = {default}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(default.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{bbr, bbr2, c3g, c3g_bbr, copa, coupled, cubic, fixed, gcc, oracle};
    use crate::cc::{nada, prague, reno, rocc, scream, sqp, vidaptive};
    use crate::cc::{parse_config, registry, ControllerInfo, ParamDoc, Params};
    use crate::units::{Duration, Rate};

    controller_config! {
        /// A config with a required field, a typed default and a `doc_default`.
        struct Example {
            /// the rate
            ///
            /// (not shown)
            rate: Rate,
            /// how long,
            /// on two lines
            window: Duration = Duration::from_millis(100),
            /// a factor
            factor: f64 = 0.85,
            /// decided later
            #[doc_default = "the flow's"]
            floor: Option<Rate> = None,
        }
    }

    #[test]
    fn a_config_documents_its_fields_in_order() {
        let docs: Vec<(String, String, String)> = Example::param_docs()
            .into_iter()
            .map(|p| (p.name.into(), p.default.into(), p.doc.into()))
            .collect();
        let row = |n: &str, d: &str, doc: &str| (n.into(), d.into(), doc.into());
        assert_eq!(
            docs,
            vec![
                row("rate", "", "the rate"),
                row("window", "100ms", "how long, on two lines"),
                row("factor", "0.85", "a factor"),
                row("floor", "the flow's", "decided later"),
            ]
        );
        assert!(Example::default_drift().is_empty());
    }

    #[test]
    fn a_config_takes_the_written_values_and_the_defaults_of_the_rest() {
        let p: Params = toml::from_str("rate = \"1Mbps\"\nfactor = 2").unwrap();
        let c: Example = parse_config("example", &p).unwrap();
        assert_eq!(c.rate, Rate::from_mbps(1.0));
        assert_eq!(c.window, Duration::from_millis(100));
        assert_eq!(c.factor, 2.0);
        assert_eq!(c.floor, None);
        let e = parse_config::<Example>("example", &Params::new()).unwrap_err();
        assert!(e.to_string().contains("missing field `rate`"), "{e}");
        let p: Params = toml::from_str("rate = \"1Mbps\"\nfactr = 2").unwrap();
        let e = parse_config::<Example>("example", &p).unwrap_err();
        assert!(e.to_string().contains("unknown field `factr`"), "{e}");
    }

    #[test]
    fn a_default_that_does_not_read_back_is_drift() {
        let doc = ParamDoc::new("factor", "0.85", "");
        assert_eq!(drift::<f64>(&doc, 0.85), None);
        assert!(drift::<f64>(&doc, 0.850001).is_some());
        assert!(drift::<Rate>(&doc, Rate::from_kbps(1.0)).is_some());
    }

    #[test]
    fn defaults_are_written_as_in_a_scenario() {
        assert_eq!(scenario_string(&Rate::from_kbps(300.0)), "300kbps");
        assert_eq!(scenario_string(&Duration::from_millis(1000)), "1s");
        assert_eq!(scenario_string(&2.0), "2.0");
        assert_eq!(scenario_string(&1e-9), "1e-9");
        assert_eq!(scenario_string(&10u32), "10");
        assert_eq!(scenario_string(&Params::new()), "{}");
        assert_eq!(scenario_string(&String::from("copa")), "copa");
    }

    /// Every builtin controller documents its config's parameters, and every documented default
    /// reads back as the config's default.
    #[test]
    fn every_builtin_controller_documents_its_config() {
        type Docs = fn() -> Vec<ParamDoc>;
        type Drift = fn() -> Vec<String>;
        macro_rules! config {
            ($name:literal, $config:ty) => {
                (
                    $name,
                    <$config>::param_docs as Docs,
                    <$config>::default_drift as Drift,
                )
            };
        }
        let configs = [
            config!("fixed", fixed::FixedConfig),
            config!("oracle", oracle::OracleConfig),
            config!("gcc", gcc::GccConfig),
            config!("sqp", sqp::SqpConfig),
            config!("reno", reno::RenoConfig),
            config!("cubic", cubic::CubicConfig),
            config!("prague", prague::PragueConfig),
            config!("bbr", bbr::BbrConfig),
            config!("bbr-s", bbr::BbrConfig),
            config!("bbr2", bbr2::Bbr2Config),
            config!("bbr2-s", bbr2::Bbr2Config),
            config!("copa", copa::CopaConfig),
            config!("rocc", rocc::RoccConfig),
            config!("vidaptive", vidaptive::VidaptiveConfig),
            config!("c3g", c3g::C3gConfig),
            config!("c3g-bbr", c3g_bbr::C3gBbrConfig),
            config!("coupled", coupled::CoupledConfig),
            config!("nada", nada::NadaConfig),
            config!("scream", scream::ScreamConfig),
        ];
        for info in registry().iter() {
            let (_, docs, drift) = configs
                .iter()
                .find(|(n, _, _)| *n == info.name)
                .unwrap_or_else(|| panic!("{}: no config checked", info.name));
            let ControllerInfo { name, params, .. } = info;
            assert_eq!(params, &docs(), "{name} lists its config's parameters");
            assert!(
                params.iter().all(|p| !p.doc.is_empty()),
                "{name}: a parameter without a doc"
            );
            let drift = drift();
            assert!(drift.is_empty(), "{name}: {drift:?}");
        }
    }
}
