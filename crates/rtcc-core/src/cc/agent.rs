//! `agent`: a controller whose target bitrate is chosen every `step` (60 ms) by something outside
//! rtcc's controllers — a learning agent that steps the simulator (`rtcc.gym`), or a policy such
//! as an ONNX model (`onnx`) — from an observation of the packets the receiver got
//! ([`crate::learn`]).
//!
//! How it runs, every step at `start + k · step` (sender clock):
//!
//! 1. Each feedback report's received packets (arrival time at the receiver, send time, size,
//!    sequence number, kind) go into the flow's [`ArrivalHistory`].
//! 2. At the step the observation is built at the *anchor*: the newest reported arrival
//!    (receiver clock; the challenge's "the last timestamp is the last packet's timestamp").
//!    Once no feedback has come for `stale_after` (200 ms), the anchor moves on with the clock,
//!    so that an outage empties the intervals instead of showing the last good ones for ever.
//! 3. The action — the [`Policy`]'s answer to the observation, or what an environment set
//!    through the [`AgentHandle`] before the step — becomes the target, clamped to the flow's
//!    media range (`min_rate`..`max_rate`, the same bounds every controller gets), paced at
//!    2.5 × the target like `fixed`.
//!
//! The observation is built where the sender is, from feedback, so the same policy runs
//! unchanged in the simulator, the live transport and a user's stack; what it sees lags the
//! receiver by the feedback's delay (one reverse trip and up to one feedback interval), as a
//! receiver-side estimate reaches a real sender one reverse trip late. Judgment call: the
//! challenge's estimator ran at the receiver; a sender that reads the receiver's packets from
//! per-packet feedback sees the same packets, later.
//!
//! With `behaviour = "<controller>"` (and its parameters in `behaviour_params`) the agent
//! follows that controller instead: every call goes to it and its decision is the flow's, and
//! the agent only records the observation and the target in force at each step. That is how
//! `rtcc dataset` logs trajectories of any controller (gcc, sqp, …) in the observation a learned
//! policy would get, as the MMSys 2024 challenge logged Teams' estimators.
//!
//! A policy is first asked once a packet has been reported received and `warmup` (0 by default)
//! has passed since; the start rate holds until then.
//!
//! A policy that fails (an error, or an action that is not a positive finite rate) does not stop
//! the flow: the target stays at the last good action and the first failure is kept in
//! [`AgentShared::error`], for the run to report when it ends (a policy never fails silently).

use super::params::controller_config;
use super::{
    parse_config, Controller, ControllerContext, ControllerError, ControllerInfo, Decision,
    FeedbackPolicy, Params,
};
use crate::learn::{ArrivalHistory, ObservationKind};
use crate::packet::FeedbackReport;
use crate::units::{Duration, Rate, Time};
use std::sync::{Arc, Mutex, MutexGuard};

controller_config! {
    /// `agent`'s parameters.
    pub struct AgentConfig {
        /// time between actions
        ///
        /// 60 ms is the MMSys 2024 challenge's observation interval.
        pub step: Duration = Duration::from_millis(60),
        /// observation: mmsys24, opennetlab or rtcc
        pub observation: String = "mmsys24".to_string(),
        /// without feedback for this long, the observation's intervals move on with the clock
        pub stale_after: Duration = Duration::from_millis(200),
        /// a policy acts only this long after the first packet was reported received
        ///
        /// Until then the start rate holds. 3s fills every interval of the mmsys24 observation,
        /// which policies trained on full windows may need (docs/learning.md measures the
        /// challenge's baseline with 0 and 3 s).
        pub warmup: Duration = Duration::ZERO,
        /// lowest target
        #[doc_default = "the flow's media minimum"]
        pub min_rate: Option<Rate> = None,
        /// target before the first action
        #[doc_default = "the flow's media start, else 300kbps"]
        pub start_rate: Option<Rate> = None,
        /// highest target
        #[doc_default = "the flow's media maximum, else 20Mbps"]
        pub max_rate: Option<Rate> = None,
    }
}

/// Chooses the target from an observation (an ONNX model, a Python callable, a test's rule).
pub trait Policy: Send {
    /// The target bitrate (bit/s) for the next step.
    fn act(&mut self, now: Time, observation: &[f32]) -> Result<f64, String>;
}

/// What the controller and whoever drives it share.
#[derive(Debug)]
pub struct AgentShared {
    pub history: ArrivalHistory,
    pub kind: ObservationKind,
    pub step: Duration,
    stale_after: Duration,
    /// Sender clock of the newest feedback report.
    last_feedback: Option<Time>,
    /// The action for the next step (an environment sets it; a policy's answer lands here).
    pub action: Option<f64>,
    /// The target in force (bit/s), after clamping.
    pub target: Rate,
    /// The first failure of the policy or of an action, if any.
    pub error: Option<String>,
    min: Rate,
    max: Rate,
}

impl AgentShared {
    /// The receiver-clock time the observation's intervals end at, at sender time `now`.
    pub fn anchor_ms(&self, now: Time) -> f64 {
        let Some(newest) = self.history.newest_ms() else {
            return 0.0;
        };
        let silent = self
            .last_feedback
            .map_or(Duration::ZERO, |t| now.saturating_since(t));
        newest + silent.as_millis_f64()
            - self.stale_after.as_millis_f64().min(silent.as_millis_f64())
    }

    /// The observation at sender time `now` into `out` (`kind.len()` values).
    pub fn observe(&self, now: Time, out: &mut [f32]) {
        self.kind.observe(
            &self.history,
            self.anchor_ms(now),
            self.step,
            self.target,
            out,
        );
    }

    /// Make `bps` the target (clamped into the media range); a rate that is not positive and
    /// finite is refused and kept as the first error.
    fn apply(&mut self, now: Time, bps: f64) {
        if bps.is_finite() && bps > 0.0 {
            self.target = Rate(bps).max(self.min).min(self.max);
        } else {
            self.error.get_or_insert_with(|| {
                format!(
                    "the action at {:.3} s was {bps} bit/s (a target must be a positive, finite \
                     rate); the target stayed at {}",
                    now.as_secs_f64(),
                    self.target
                )
            });
        }
    }

    /// The lowest and highest target.
    pub fn bounds(&self) -> (Rate, Rate) {
        (self.min, self.max)
    }
}

/// The first step boundary after `start`: steps fall on multiples of `step` from time 0, so that
/// agents that start at different times act together (an environment steps them on that grid).
pub fn first_step(start: Time, step: Duration) -> Time {
    Time((start.0 / step.0 + 1) * step.0)
}

/// An agent's shared state, for an environment to observe and act through.
pub type AgentHandle = Arc<Mutex<AgentShared>>;

/// Lock an agent's state. A panic elsewhere while the lock was held leaves plain data behind:
/// keep using it.
fn lock(shared: &AgentHandle) -> MutexGuard<'_, AgentShared> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

pub struct Agent {
    shared: AgentHandle,
    policy: Option<Box<dyn Policy>>,
    warmup: Duration,
    /// Sender clock of the first feedback that reported a received packet.
    first_received: Option<Time>,
    /// The controller the agent follows (`behaviour`), if any.
    inner: Option<Box<dyn Controller>>,
    next_step: Time,
    observation: Vec<f32>,
}

impl Agent {
    /// An agent whose actions come from `policy`, or, with `None`, from whoever holds the
    /// handle ([`Agent::handle`]) and sets [`AgentShared::action`] before each step.
    pub fn new(
        config: AgentConfig,
        ctx: &ControllerContext,
        policy: Option<Box<dyn Policy>>,
    ) -> Result<Agent, String> {
        let kind = ObservationKind::parse(&config.observation)?;
        if config.step < Duration::from_millis(1) {
            return Err(format!("step must be at least 1ms, got {}", config.step));
        }
        let min = config.min_rate.unwrap_or(ctx.media.min_bitrate);
        let max = config
            .max_rate
            .or(ctx.media.max_bitrate)
            .unwrap_or(Rate::from_mbps(20.0));
        let start = config
            .start_rate
            .or(ctx.media.start_bitrate)
            .unwrap_or(Rate::from_kbps(300.0).max(min).min(max));
        if !(min.bps() > 0.0 && min <= start && start <= max && max.bps().is_finite()) {
            return Err(format!(
                "rates must satisfy 0 < min_rate <= start_rate <= max_rate, got {min} / {start} / {max}"
            ));
        }
        Ok(Agent {
            inner: None,
            warmup: config.warmup,
            first_received: None,
            shared: Arc::new(Mutex::new(AgentShared {
                history: ArrivalHistory::default(),
                kind,
                step: config.step,
                stale_after: config.stale_after,
                last_feedback: None,
                action: None,
                target: start,
                error: None,
                min,
                max,
            })),
            policy,
            next_step: first_step(ctx.now, config.step),
            observation: vec![0.0; kind.len()],
        })
    }

    pub fn handle(&self) -> AgentHandle {
        self.shared.clone()
    }

    fn shared(&self) -> MutexGuard<'_, AgentShared> {
        lock(&self.shared)
    }
}

impl Controller for Agent {
    fn on_packet_sent(&mut self, now: Time, pkt: &crate::packet::SentPacket) {
        if let Some(c) = self.inner.as_mut() {
            c.on_packet_sent(now, pkt);
        }
    }

    fn on_feedback(&mut self, now: Time, report: &FeedbackReport) {
        let received = {
            let mut s = self.shared();
            s.history.on_report(report);
            s.last_feedback = Some(now);
            s.history.newest_ms().is_some()
        };
        if received && self.first_received.is_none() {
            self.first_received = Some(now);
        }
        if let Some(c) = self.inner.as_mut() {
            c.on_feedback(now, report);
        }
    }

    fn on_rto(&mut self, now: Time, in_flight: u64) {
        if let Some(c) = self.inner.as_mut() {
            c.on_rto(now, in_flight);
        }
    }

    fn on_rate_report(&mut self, now: Time, report: &crate::packet::RateReport) {
        if let Some(c) = self.inner.as_mut() {
            c.on_rate_report(now, report);
        }
    }

    fn on_timeout(&mut self, now: Time) {
        if let Some(c) = self.inner.as_mut() {
            if c.next_timeout().is_some_and(|t| t <= now) {
                c.on_timeout(now);
            }
        }
        if now < self.next_step {
            return;
        }
        let step = self.shared().step;
        while self.next_step <= now {
            self.next_step += step;
        }
        let warming = self
            .first_received
            .is_none_or(|first| now < first + self.warmup);
        if let Some(policy) = self.policy.as_mut() {
            if warming {
                // Nothing received yet, or still warming up: the start rate holds (as every
                // controller's does until its first feedback).
                return;
            }
            lock(&self.shared).observe(now, &mut self.observation);
            // The lock is not held while the policy runs (it may call into Python).
            let answer = policy.act(now, &self.observation);
            let mut s = lock(&self.shared);
            match answer {
                Ok(bps) => s.action = Some(bps),
                Err(e) => {
                    s.error.get_or_insert(e);
                }
            }
        }
        let followed = self.inner.as_ref().map(|c| c.decision().target_bitrate);
        let mut s = self.shared();
        match followed {
            // Following a controller: its target is the step's action.
            Some(target) => s.target = target,
            None => {
                if let Some(bps) = s.action.take() {
                    s.apply(now, bps);
                }
            }
        }
    }

    fn next_timeout(&self) -> Option<Time> {
        let inner = self.inner.as_ref().and_then(|c| c.next_timeout());
        Some(inner.map_or(self.next_step, |t| t.min(self.next_step)))
    }

    fn decision(&self) -> Decision {
        if let Some(c) = &self.inner {
            return c.decision();
        }
        let target = self.shared().target;
        Decision::rate_only(target, Some(Rate(target.0 * 2.5)))
    }

    fn min_packets_per_frame(&self) -> u32 {
        self.inner.as_ref().map_or(1, |c| c.min_packets_per_frame())
    }

    fn frame_controller(&mut self) -> Option<&mut dyn super::FrameController> {
        self.inner.as_mut().and_then(|c| c.frame_controller())
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        match &self.inner {
            Some(c) => c.state(out),
            None => out.push(("target_bps", self.shared().target.bps())),
        }
    }

    fn on_stop(&mut self, now: Time) {
        if let Some(c) = self.inner.as_mut() {
            c.on_stop(now);
        }
    }
}

/// The feedback an agent asks for: per-packet reports every 50 ms (the challenge's 60 ms
/// observations then see packets at most one interval and a reverse trip old).
pub fn feedback() -> FeedbackPolicy {
    FeedbackPolicy {
        interval: Some(Duration::from_millis(50)),
        per_frame: false,
        frame_acks: false,
        rate_reports: None,
    }
}

/// `agent` for an environment: `on_build` receives each agent's handle as it is built (in flow
/// order within a run).
pub fn info_with(on_build: Arc<dyn Fn(AgentHandle) + Send + Sync>) -> ControllerInfo {
    let mut params = AgentConfig::param_docs();
    params.push(super::ParamDoc::new(
        "behaviour",
        "none",
        "follow this controller instead of taking actions, recording its targets (rtcc dataset)",
    ));
    params.push(super::ParamDoc::new(
        "behaviour_params",
        "{}",
        "the followed controller's parameters",
    ));
    ControllerInfo {
        name: "agent".into(),
        summary: "Target set every step by a learning agent (the rtcc.gym environment).".into(),
        params,
        feedback: feedback(),
        media: Default::default(),
        build: Arc::new(move |params: &Params, ctx: &ControllerContext, registry| {
            let mut params = params.clone();
            let behaviour = params.remove("behaviour");
            let behaviour_params = params.remove("behaviour_params");
            let mut agent = build(&params, ctx, None, "agent")?;
            if let Some(name) = behaviour {
                agent.inner = Some(build_behaviour(&name, behaviour_params, ctx, registry)?);
            } else if behaviour_params.is_some() {
                return Err(bad(
                    "behaviour_params needs behaviour (a controller name)".into()
                ));
            }
            on_build(agent.handle());
            Ok(Box::new(agent) as Box<dyn Controller>)
        }),
    }
}

fn bad(message: String) -> ControllerError {
    ControllerError::BadParams {
        controller: "agent".into(),
        message,
    }
}

/// The controller an agent follows: `name` from `registry` with `params` (a table).
fn build_behaviour(
    name: &toml::Value,
    params: Option<toml::Value>,
    ctx: &ControllerContext,
    registry: &super::Registry,
) -> Result<Box<dyn Controller>, ControllerError> {
    let name = name
        .as_str()
        .ok_or_else(|| bad(format!("behaviour must be a controller name, found {name}")))?;
    if name == "agent" {
        return Err(bad("behaviour cannot be agent itself".into()));
    }
    let params = match params {
        None => Params::new(),
        Some(toml::Value::Table(t)) => t,
        Some(other) => {
            return Err(bad(format!(
                "behaviour_params must be a table of {name}'s parameters, found {other}"
            )))
        }
    };
    registry.create(name, &params, ctx)
}

/// Build an agent from scenario parameters (`name` for the errors), driven by `policy` if given.
pub fn build(
    params: &Params,
    ctx: &ControllerContext,
    policy: Option<Box<dyn Policy>>,
    name: &str,
) -> Result<Agent, ControllerError> {
    let config: AgentConfig = parse_config(name, params)?;
    Agent::new(config, ctx, policy).map_err(|message| ControllerError::BadParams {
        controller: name.to_string(),
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::test_support::context;
    use crate::packet::{PacketKind, PacketResult, SentPacket};

    struct Halve;
    impl Policy for Halve {
        fn act(&mut self, _now: Time, obs: &[f32]) -> Result<f64, String> {
            // mmsys24 index 0: receive rate over the newest 60 ms.
            Ok(obs[0] as f64 / 2.0)
        }
    }

    fn report(at_ms: u64, first_seq: u64, n: u64) -> FeedbackReport {
        FeedbackReport {
            feedback_time: Time::from_millis(at_ms),
            packets: (0..n)
                .map(|i| PacketResult {
                    sent: SentPacket {
                        seq: first_seq + i,
                        size: 1000,
                        send_time: Time::from_millis(at_ms - 40 + i),
                        frame: None,
                        index_in_frame: 0,
                        packets_in_frame: 1,
                        kind: PacketKind::Media,
                        in_flight: 0,
                    },
                    receive_time: Some(Time::from_millis(at_ms - 20 + i)),
                    ecn: Default::default(),
                })
                .collect(),
            in_flight: 0,
            recovery: None,
        }
    }

    #[test]
    fn a_policy_sets_the_target_each_step_within_the_media_range() {
        let ctx = context();
        let mut a = build(&Params::new(), &ctx, Some(Box::new(Halve)), "agent").unwrap();
        let start = a.decision().target_bitrate;
        assert_eq!(start, Rate::from_kbps(300.0).max(ctx.media.min_bitrate));
        a.on_feedback(Time::from_millis(50), &report(50, 0, 10));
        a.on_timeout(Time::from_millis(60));
        // 10 × 1000 B in the newest 60 ms = 1.333 Mbit/s; half of it.
        let t = a.decision().target_bitrate.bps();
        assert!((t - 10_000.0 * 8.0 / 0.06 / 2.0).abs() < 1.0, "{t}");
        assert_eq!(a.next_timeout(), Some(Time::from_millis(120)));
    }

    #[test]
    fn a_bad_action_keeps_the_last_target_and_the_error() {
        let ctx = context();
        let a = build(&Params::new(), &ctx, None, "agent").unwrap();
        let mut a = a;
        let h = a.handle();
        h.lock().unwrap().action = Some(f64::NAN);
        let before = a.decision().target_bitrate;
        a.on_timeout(Time::from_millis(60));
        assert_eq!(a.decision().target_bitrate, before);
        let err = h.lock().unwrap().error.clone().unwrap();
        assert!(
            err.contains("NaN") && err.contains("positive, finite"),
            "{err}"
        );
        h.lock().unwrap().action = Some(1e12);
        a.on_timeout(Time::from_millis(120));
        assert_eq!(
            a.decision().target_bitrate,
            Rate::from_mbps(20.0),
            "clamped to max_rate"
        );
    }

    #[test]
    fn the_anchor_moves_on_once_feedback_is_overdue() {
        let ctx = context();
        let mut a = build(&Params::new(), &ctx, None, "agent").unwrap();
        a.on_feedback(Time::from_millis(50), &report(50, 0, 3));
        let h = a.handle();
        let s = h.lock().unwrap();
        assert_eq!(s.anchor_ms(Time::from_millis(100)), 32.0, "newest arrival");
        assert_eq!(
            s.anchor_ms(Time::from_millis(250)),
            32.0,
            "200 ms without feedback"
        );
        assert_eq!(
            s.anchor_ms(Time::from_millis(350)),
            132.0,
            "then with the clock"
        );
    }

    #[test]
    fn every_documented_default_reads_back() {
        assert!(AgentConfig::default_drift().is_empty());
    }

    #[test]
    fn unknown_observation_and_bad_rates_are_named() {
        let ctx = context();
        let mut p = Params::new();
        p.insert("observation".into(), "mmsys".into());
        let e = build(&p, &ctx, None, "agent").err().unwrap().to_string();
        assert!(
            e.contains("unknown observation \"mmsys\"") && e.contains("mmsys24"),
            "{e}"
        );
        let mut p = Params::new();
        p.insert("min_rate".into(), "2Mbps".into());
        p.insert("max_rate".into(), "1Mbps".into());
        let e = build(&p, &ctx, None, "agent").err().unwrap().to_string();
        assert!(e.contains("min_rate <= start_rate <= max_rate"), "{e}");
    }
}
