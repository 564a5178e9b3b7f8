//! A controller defined outside the crates, registered at run time and simulated by name.

use rtcc_core::cc::{
    parse_config, Controller, ControllerInfo, Decision, FeedbackPolicy, ParamDoc, Registry,
};
use rtcc_core::packet::FeedbackReport;
use rtcc_core::{Rate, Time};
use rtcc_sim::{run_with_registry, Scenario};
use std::path::Path;
use std::sync::Arc;

use crate::common;

/// Sends at a constant rate, whatever the feedback says.
struct Steady(Rate);

impl Controller for Steady {
    fn on_feedback(&mut self, _now: Time, _report: &FeedbackReport) {}
    fn decision(&self) -> Decision {
        Decision::rate_only(self.0, Some(Rate(2.0 * self.0.bps())))
    }
}

#[derive(serde::Deserialize)]
struct SteadyConfig {
    rate: Rate,
}

fn registry() -> Registry {
    let mut r = Registry::builtin();
    r.register(ControllerInfo {
        name: "steady".into(),
        summary: "a constant rate".into(),
        params: vec![ParamDoc::new("rate", "", "the rate")],
        feedback: FeedbackPolicy::default(),
        media: Default::default(),
        build: Arc::new(|params, _ctx, _registry| {
            let cfg: SteadyConfig = parse_config("steady", params)?;
            Ok(Box::new(Steady(cfg.rate)))
        }),
    })
    .unwrap();
    r
}

const SCENARIO: &str = r#"
duration = "5s"
[path.forward]
capacity = "10Mbps"
delay = "20ms"
[[flows]]
controller = "steady"
params = { rate = "3Mbps" }
"#;

#[test]
fn a_controller_registered_at_run_time_runs_by_name() {
    let e = Scenario::from_toml_str(SCENARIO, Path::new("."), "test", None).unwrap_err();
    assert!(e.message.contains("unknown controller \"steady\""), "{e}");

    let registry = registry();
    let sc =
        Scenario::from_toml_str_with_registry(SCENARIO, Path::new("."), "test", None, &registry)
            .unwrap_or_else(|e| panic!("{e}"));
    let r = run_with_registry(&sc, None, &mut |_| {}, &registry).unwrap();
    let got = common::throughput_bps(&r, 0, 1.0, 5.0);
    assert!((got / 3e6 - 1.0).abs() < 0.02, "{got} bit/s");
}
