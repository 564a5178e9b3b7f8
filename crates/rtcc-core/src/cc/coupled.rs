//! `coupled`: coupled congestion control for the media flows of one sender, with priorities —
//! the Flow State Exchange (FSE) of RFC 8699 ("Coupled Congestion Control for RTP Media"), and
//! the wrapper controller that couples any controller able to take a rate from outside.
//!
//! # Why
//!
//! Flows of one sender that share a bottleneck compete with each other when each runs its own
//! controller: their split is whatever their competition gives (about 1 : 1), and each one's
//! probing adds to the others' queue. RFC 8867 §6.1 asks that such flows split the bottleneck by
//! priority. RFC 8699 does it without changing the controllers: each flow keeps its congestion
//! controller, and a shared FSE turns the rates they compute into one aggregate that it divides
//! by priority (§4, architecture; §5.2, the FSE's role).
//!
//! # State (RFC 8699 §5.2)
//!
//! Per flow group (FG: flows known to share a bottleneck; RFC 8699 leaves detection to shared
//! bottleneck detection, here the scenario names the group):
//!
//! - `S_CR`: the sum of the calculated rates, the aggregate the group may send;
//! - per flow `i`: its priority `P(i)` (a positive number), its desired rate `DR(i)` (what the
//!   application could use at most: here the flow's media `max_bitrate`, or unbounded), and
//!   `FSE_R(i)`, the rate the FSE gave it last. The flow's own controller's latest rate is
//!   `CC_R(i)`.
//!
//! # The active algorithm (RFC 8699 §5.3.1, "Example Algorithm 1 - Active FSE")
//!
//! 1. A flow `f` that starts registers: `FSE_R(f)` = its controller's initial rate, added to
//!    `S_CR`.
//! 2. A flow that stops is removed from the group. `S_CR` is left as it is (the aggregate is what
//!    the path carried; the others take the leaver's share at the next update, up to their
//!    `DR`); a group left empty starts again from `S_CR = 0`.
//! 3. Each time `f`'s controller computes a new `CC_R(f)` (UPDATE):
//!    - (a) `S_CR = S_CR + CC_R(f) − FSE_R(f)`: the aggregate moves by exactly the change the
//!      controller made to the rate the FSE had given it;
//!    - (b) `S_P = Σ P(i)` over the group, and every `FSE_R(i) = 0`;
//!    - (c) `S_CR` is distributed by priority without exceeding any flow's desired rate: with
//!      `TLO = S_CR` (total leftover), each flow not yet at its `DR(i)` gets `TLO · P(i) / S_P`;
//!      a flow whose share would exceed `DR(i)` gets `DR(i)` and leaves the distribution (its
//!      priority out of `S_P`), and what it could not use goes back to the others; repeat until
//!      nothing is left or every flow is at its `DR` — an application-limited flow's leftover
//!      goes to the other flows in proportion to their priorities;
//!    - (d) every flow of the group gets its new `FSE_R(i)` (not only `f`).
//!
//! With no flow limited, step (c) is `FSE_R(i) = P(i) · S_CR / S_P`.
//!
//! # The conservative variant (RFC 8699 §5.3.2, "Example Algorithm 2 - Conservative Active FSE")
//!
//! Step (a) changes: with `DELTA = CC_R(f) − FSE_R(f)`, a decrease (`DELTA < 0`) scales the
//! aggregate by the flow's own ratio, `S_CR = S_CR · CC_R(f) / FSE_R(f)`, so a flow that backs
//! off by 15 % takes the whole aggregate down by 15 % as one flow would; an increase adds `DELTA`
//! as in the active algorithm. RFC 8699 reports that this variant reduces queuing delay and loss
//! in its simulations. We implement both (`algorithm = "active"`, the default, and
//! `"conservative"`); RFC 8699's §5.3.2 also detects flows that vanish without deregistering
//! (counting updates), which we do not need: a flow here deregisters when it stops.
//!
//! # Using the FSE's rate
//!
//! RFC 8699 requires the controller to use `FSE_R(f)` as its new rate (§5.3 "the congestion
//! controller ... uses FSE_R(f) as its new rate"); [`Controller::set_rate`] does that, and a
//! controller that cannot is refused here. For GCC (RFC 8699 Appendix A) the rate is the minimum
//! of the delay-based estimate A_hat and the loss-based A_s, so both take `FSE_R` (`gcc/webrtc.rs`);
//! anything less and the smaller one would undo the FSE's assignment.
//!
//! # The wrapper
//!
//! `controller = "coupled"`, `params = { inner = "gcc", priority = 2.0, group = "sender1",
//! inner_params = { ... } }` builds `inner` with `inner_params` and couples it into `group`'s FSE
//! (one per group per simulation run, [`CouplingGroups`]). Before forwarding an event it applies
//! any new `FSE_R` another flow's update gave it (`set_rate`); after the event, if the inner
//! controller's rate changed (a new `CC_R`), it runs UPDATE and applies its own new `FSE_R`. Its
//! decision is the inner's with the target replaced by `FSE_R` (and the pacing rate scaled with
//! it). A group of one flow is its inner controller unchanged: `S_CR` is then the inner's rate.
//!
//! Judgment calls: the desired rate is the flow's media `max_bitrate` (the encoder cannot use
//! more); a paused flow keeps its entry (the simulator keeps a paused flow's controller state,
//! RFC 8867 §5.8), only a stopped one leaves; a new `CC_R` is a change of the inner's target
//! since the FSE's last rate was applied (a controller's own clamps, e.g. its minimum, are then
//! not new values); rates within 1e-9 of each other are equal (so a group of one never calls
//! `set_rate` for float noise). RFC 8699's published text was not retrievable here; the rules
//! above follow our reading of its §5.3.1/§5.3.2 and Appendix A.

use super::params::controller_config;
use super::{
    Controller, ControllerContext, ControllerError, ControllerInfo, Decision, FeedbackPolicy,
    FrameController, Params, Registry,
};
use crate::packet::{FeedbackReport, RateReport, SentPacket};
use crate::units::{Rate, Time};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// Which update rule for `S_CR` (step 3a).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Algorithm {
    /// RFC 8699 §5.3.1: `S_CR += CC_R(f) − FSE_R(f)`.
    #[default]
    Active,
    /// RFC 8699 §5.3.2: decreases scale `S_CR` by `CC_R(f) / FSE_R(f)`.
    Conservative,
}

/// A flow's handle in its group's FSE.
pub type FlowId = u64;

#[derive(Debug, Clone)]
struct Entry {
    priority: f64,
    desired_bps: f64,
    fse_bps: f64,
}

/// One flow group's Flow State Exchange (RFC 8699 §5.2–§5.3).
#[derive(Debug, Clone)]
pub struct Fse {
    algorithm: Algorithm,
    /// `S_CR`.
    sum_calculated: f64,
    flows: BTreeMap<FlowId, Entry>,
    next_id: FlowId,
}

impl Fse {
    pub fn new(algorithm: Algorithm) -> Fse {
        Fse {
            algorithm,
            sum_calculated: 0.0,
            flows: BTreeMap::new(),
            next_id: 0,
        }
    }

    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// Step 1: a flow with priority `priority` (> 0) that can use at most `desired_bps` joins at
    /// its controller's `initial_bps`.
    pub fn register(&mut self, priority: f64, desired_bps: f64, initial_bps: f64) -> FlowId {
        let id = self.next_id;
        self.next_id += 1;
        self.flows.insert(
            id,
            Entry {
                priority,
                desired_bps,
                fse_bps: initial_bps,
            },
        );
        self.sum_calculated += initial_bps;
        id
    }

    /// Step 2: the flow leaves; an empty group forgets its aggregate.
    pub fn remove(&mut self, id: FlowId) {
        self.flows.remove(&id);
        if self.flows.is_empty() {
            self.sum_calculated = 0.0;
        }
    }

    /// Step 3: flow `id`'s controller computed `cc_bps`; every flow's `FSE_R` is recomputed.
    pub fn update(&mut self, id: FlowId, cc_bps: f64) {
        let Some(fse_bps) = self.flows.get(&id).map(|e| e.fse_bps) else {
            return;
        };
        // (a)
        let delta = cc_bps - fse_bps;
        self.sum_calculated = match self.algorithm {
            Algorithm::Conservative if delta < 0.0 && fse_bps > 0.0 => {
                self.sum_calculated * cc_bps / fse_bps
            }
            _ => self.sum_calculated + delta,
        }
        .max(0.0);
        // (b), (c)
        self.distribute();
    }

    /// Steps 3b–3c: `S_CR` shared by priority, no flow above its desired rate.
    fn distribute(&mut self) {
        for e in self.flows.values_mut() {
            e.fse_bps = 0.0;
        }
        let mut leftover = self.sum_calculated;
        let mut open: Vec<FlowId> = self.flows.keys().copied().collect();
        while leftover > 0.0 && !open.is_empty() {
            let sum_priority: f64 = open.iter().map(|id| self.flows[id].priority).sum();
            let share = |e: &Entry| leftover * e.priority / sum_priority;
            // Flows whose share would take them to their desired rate get exactly it; the rest
            // of their share goes round again.
            let capped: Vec<FlowId> = open
                .iter()
                .copied()
                .filter(|id| {
                    let e = &self.flows[id];
                    e.fse_bps + share(e) >= e.desired_bps
                })
                .collect();
            if capped.is_empty() {
                for id in &open {
                    let e = self.flows.get_mut(id).expect("open flows are registered");
                    e.fse_bps += leftover * e.priority / sum_priority;
                }
                break;
            }
            for id in &capped {
                let e = self.flows.get_mut(id).expect("open flows are registered");
                leftover -= e.desired_bps - e.fse_bps;
                e.fse_bps = e.desired_bps;
            }
            open.retain(|id| !capped.contains(id));
        }
    }

    /// `FSE_R` of flow `id` (`None` once it left).
    pub fn rate_bps(&self, id: FlowId) -> Option<f64> {
        self.flows.get(&id).map(|e| e.fse_bps)
    }

    /// `S_CR`.
    pub fn sum_calculated_bps(&self) -> f64 {
        self.sum_calculated
    }

    pub fn len(&self) -> usize {
        self.flows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }
}

/// A group's FSE, shared by its flows' wrappers.
pub type SharedFse = Arc<Mutex<Fse>>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere cannot leave an FSE half-updated in a way later updates would not
    // repair (each update recomputes every share), so a poisoned lock is still usable.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The flow groups of one run, by name: created once per simulation and handed to every flow's
/// [`ControllerContext`], so flows of one run share their groups and runs share nothing.
#[derive(Clone, Default)]
pub struct CouplingGroups(Arc<Mutex<BTreeMap<String, SharedFse>>>);

impl std::fmt::Debug for CouplingGroups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(lock(&self.0).keys()).finish()
    }
}

impl CouplingGroups {
    /// The FSE of `group`, created with `algorithm` by its first flow; a later flow asking for
    /// another algorithm is an error.
    pub fn join(&self, group: &str, algorithm: Algorithm) -> Result<SharedFse, String> {
        let mut groups = lock(&self.0);
        let fse = groups
            .entry(group.to_string())
            .or_insert_with(|| Arc::new(Mutex::new(Fse::new(algorithm))));
        let existing = lock(fse).algorithm();
        if existing != algorithm {
            return Err(format!(
                "group {group:?} runs algorithm {existing:?}; every flow of a group must ask for \
                 the same one, got {algorithm:?}"
            ));
        }
        Ok(fse.clone())
    }
}

controller_config! {
    /// `coupled`'s parameters.
    pub struct CoupledConfig {
        /// the controller to couple; it must take a rate from outside (gcc's webrtc profile does)
        pub inner: String = "gcc".into(),
        /// the inner controller's parameters
        pub inner_params: Params = Params::new(),
        /// the flow's priority P(i) (> 0): shares are proportional to it
        pub priority: f64 = 1.0,
        /// the flow group (flows of one sender sharing a bottleneck); one FSE per group per run
        pub group: String = "default".into(),
        /// "active" (RFC 8699 §5.3.1) or "conservative" (§5.3.2: decreases scale the aggregate)
        pub algorithm: Algorithm = Algorithm::Active,
    }
}

/// Rates this close are the same rate (float noise of `S_CR`'s sums).
fn same_rate(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// A controller coupled into its group's FSE.
pub struct Coupled {
    inner: Box<dyn Controller>,
    fse: SharedFse,
    id: FlowId,
    priority: f64,
    /// The `FSE_R` last given to the inner controller.
    applied_fse: f64,
    /// The inner controller's target right after that (or after its last reported `CC_R`).
    inner_after: f64,
    stopped: bool,
}

impl Coupled {
    /// Couple `inner` into `fse` with `priority`, the flow able to use at most `desired`.
    pub fn new(
        now: Time,
        mut inner: Box<dyn Controller>,
        fse: SharedFse,
        priority: f64,
        desired: Option<Rate>,
    ) -> Result<Coupled, String> {
        let initial = inner.decision().target_bitrate.bps();
        if !inner.set_rate(now, Rate(initial)) {
            return Err(
                "cannot take a rate from outside (Controller::set_rate), which RFC \
                        8699 §5.3 requires of a coupled controller"
                    .into(),
            );
        }
        let desired = desired.map_or(f64::INFINITY, |r| r.bps());
        let id = lock(&fse).register(priority, desired, initial);
        Ok(Coupled {
            inner,
            fse,
            id,
            priority,
            applied_fse: initial,
            inner_after: initial,
            stopped: false,
        })
    }

    fn inner_target(&self) -> f64 {
        self.inner.decision().target_bitrate.bps()
    }

    fn fse_rate(&self) -> Option<f64> {
        lock(&self.fse).rate_bps(self.id)
    }

    /// Step 3d as this flow receives it: apply a new `FSE_R` (another flow's update, or ours).
    fn apply(&mut self, now: Time) {
        let Some(rate) = self.fse_rate() else { return };
        if !same_rate(rate, self.applied_fse) {
            self.applied_fse = rate;
            if !same_rate(rate, self.inner_target()) {
                self.inner.set_rate(now, Rate(rate));
            }
            self.inner_after = self.inner_target();
        }
    }

    /// Step 3: a new `CC_R` from the inner controller goes to the FSE, and its answer back.
    fn report(&mut self, now: Time) {
        if self.stopped {
            return;
        }
        let cc = self.inner_target();
        if !same_rate(cc, self.inner_after) {
            lock(&self.fse).update(self.id, cc);
            self.inner_after = cc;
        }
        self.apply(now);
    }

    fn around(&mut self, now: Time, event: impl FnOnce(&mut dyn Controller)) {
        if !self.stopped {
            self.apply(now);
        }
        event(self.inner.as_mut());
        self.report(now);
    }
}

impl Drop for Coupled {
    fn drop(&mut self) {
        lock(&self.fse).remove(self.id);
    }
}

impl Controller for Coupled {
    fn on_packet_sent(&mut self, now: Time, pkt: &SentPacket) {
        self.around(now, |c| c.on_packet_sent(now, pkt));
    }
    fn on_feedback(&mut self, now: Time, report: &FeedbackReport) {
        self.around(now, |c| c.on_feedback(now, report));
    }
    fn on_rto(&mut self, now: Time, in_flight: u64) {
        self.around(now, |c| c.on_rto(now, in_flight));
    }
    fn on_undo(&mut self, now: Time) {
        self.around(now, |c| c.on_undo(now));
    }
    fn uses_prr(&self) -> bool {
        self.inner.uses_prr()
    }
    fn on_idle_restart(&mut self, now: Time) {
        self.around(now, |c| c.on_idle_restart(now));
    }
    fn on_ecn_echo(&mut self, now: Time) {
        self.around(now, |c| c.on_ecn_echo(now));
    }
    fn on_rate_report(&mut self, now: Time, report: &RateReport) {
        self.around(now, |c| c.on_rate_report(now, report));
    }
    fn on_timeout(&mut self, now: Time) {
        self.around(now, |c| c.on_timeout(now));
    }
    fn next_timeout(&self) -> Option<Time> {
        self.inner.next_timeout()
    }
    fn decision(&self) -> Decision {
        let mut d = self.inner.decision();
        if self.stopped {
            return d;
        }
        let Some(rate) = self.fse_rate() else {
            return d;
        };
        let own = d.target_bitrate.bps();
        if !same_rate(rate, own) {
            // Between another flow's update and this flow's next event: the FSE's rate, paced
            // as the inner controller paces its own.
            if own > 0.0 {
                d.pacing_rate = d.pacing_rate.map(|p| Rate(p.bps() * rate / own));
            }
            d.target_bitrate = Rate(rate);
        }
        d
    }
    fn min_packets_per_frame(&self) -> u32 {
        self.inner.min_packets_per_frame()
    }
    fn frame_controller(&mut self) -> Option<&mut dyn FrameController> {
        // Frame hooks may change the inner's rate between events; the next event reports it.
        self.inner.frame_controller()
    }
    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        self.inner.state(out);
        out.push(("cc_rate_bps", self.inner_target()));
        if let Some(r) = self.fse_rate() {
            out.push(("fse_rate_bps", r));
        }
        out.push(("fse_sum_bps", lock(&self.fse).sum_calculated_bps()));
        out.push(("priority", self.priority));
    }
    /// A coupled flow's rate comes from its FSE only (RFC 8699 has no nested groups): the
    /// default, `false`.
    fn set_rate(&mut self, _now: Time, _rate: Rate) -> bool {
        false
    }
    fn on_stop(&mut self, now: Time) {
        self.inner.on_stop(now);
        if !self.stopped {
            self.stopped = true;
            lock(&self.fse).remove(self.id);
        }
    }
}

pub fn info() -> ControllerInfo {
    ControllerInfo {
        name: "coupled".into(),
        summary: "RFC 8699 coupled congestion control: wraps a controller (inner) and shares one \
                  aggregate rate among the flows of a group by priority (flow state exchange)."
            .into(),
        params: CoupledConfig::param_docs(),
        // The scenario takes the inner controller's feedback policy; this one is for a coupled
        // controller built by hand (gcc's).
        feedback: FeedbackPolicy {
            interval: Some(crate::units::Duration::from_millis(50)),
            per_frame: true,
            frame_acks: false,
            rate_reports: None,
        },
        media: Default::default(),
        build: Arc::new(build),
    }
}

fn bad(message: String) -> ControllerError {
    ControllerError::BadParams {
        controller: "coupled".into(),
        message,
    }
}

/// The largest priority a flow may have. RFC 8699 sets no bound; shares are computed as
/// `S_CR · P(i) / S_P`, which overflows to nothing for priorities near `f64::MAX` (two flows of
/// priority 1e308 both fell to the minimum rate). A million to one is more than any use of
/// priorities needs. Judgment call.
pub const MAX_PRIORITY: f64 = 1e6;

fn build(
    params: &Params,
    ctx: &ControllerContext,
    registry: &Registry,
) -> Result<Box<dyn Controller>, ControllerError> {
    let config: CoupledConfig = super::parse_config("coupled", params)?;
    if !(config.priority > 0.0 && config.priority <= MAX_PRIORITY) {
        return Err(bad(format!(
            "priority must be a positive number no larger than {MAX_PRIORITY:e}, got {}",
            config.priority
        )));
    }
    if config.group.is_empty() {
        return Err(bad("group must not be empty".into()));
    }
    if config.inner == "coupled" {
        return Err(bad(
            "inner cannot be \"coupled\" itself (a flow belongs to one group)".into(),
        ));
    }
    let inner = registry
        .create(&config.inner, &config.inner_params, ctx)
        .map_err(|e| bad(format!("inner: {e}")))?;
    couple(
        inner,
        &config.inner,
        &config.group,
        config.priority,
        config.algorithm,
        ctx,
    )
}

/// Couple `inner` (the controller `inner_name` of the registry, built for the flow of `ctx`)
/// into `group` of the run's flow groups (`ctx.coupling`) with `priority`: what a flow with
/// `coupling = { ... }` runs, and what a hand-built `coupled` controller wraps.
pub fn couple(
    inner: Box<dyn Controller>,
    inner_name: &str,
    group: &str,
    priority: f64,
    algorithm: Algorithm,
    ctx: &ControllerContext,
) -> Result<Box<dyn Controller>, ControllerError> {
    let groups =
        ctx.coupling.as_ref().ok_or_else(|| {
            bad("this host cannot share flow state between flows (the live transport runs one flow \
             per process); coupling needs the simulator"
            .into())
        })?;
    let fse = groups.join(group, algorithm).map_err(bad)?;
    let coupled = Coupled::new(ctx.now, inner, fse, priority, ctx.media.max_bitrate)
        .map_err(|m| bad(format!("inner controller {inner_name:?} {m}")))?;
    Ok(Box::new(coupled))
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: f64 = 1e6;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    #[test]
    fn shares_are_proportional_to_priority() {
        let mut fse = Fse::new(Algorithm::Active);
        let a = fse.register(2.0, f64::INFINITY, 0.3 * M);
        let b = fse.register(1.0, f64::INFINITY, 0.3 * M);
        assert!(close(fse.sum_calculated_bps(), 0.6 * M));
        // a's controller raises its rate from 0.3 to 0.9 Mbit/s: S_CR = 0.6 + 0.9 − 0.3 = 1.2.
        fse.update(a, 0.9 * M);
        assert!(close(fse.sum_calculated_bps(), 1.2 * M));
        assert!(close(fse.rate_bps(a).unwrap(), 0.8 * M));
        assert!(close(fse.rate_bps(b).unwrap(), 0.4 * M));
        // b, now at 0.4, backs off to 0.3: S_CR = 1.1, split 2 : 1.
        fse.update(b, 0.3 * M);
        assert!(close(fse.sum_calculated_bps(), 1.1 * M));
        assert!(close(fse.rate_bps(a).unwrap(), 1.1 * M * 2.0 / 3.0));
        assert!(close(fse.rate_bps(b).unwrap(), 1.1 * M / 3.0));
    }

    #[test]
    fn a_leaving_flow_leaves_the_aggregate_to_the_others() {
        let mut fse = Fse::new(Algorithm::Active);
        let a = fse.register(1.0, f64::INFINITY, 1.0 * M);
        let b = fse.register(1.0, f64::INFINITY, 1.0 * M);
        let c = fse.register(2.0, f64::INFINITY, 1.0 * M);
        fse.update(a, 1.0 * M);
        assert!(close(fse.rate_bps(c).unwrap(), 1.5 * M));
        fse.remove(c);
        assert_eq!(fse.rate_bps(c), None);
        assert!(close(fse.sum_calculated_bps(), 3.0 * M));
        // The next update shares the 3 Mbit/s between a and b.
        fse.update(b, 0.75 * M);
        assert!(close(fse.sum_calculated_bps(), 3.0 * M));
        assert!(close(fse.rate_bps(a).unwrap(), 1.5 * M));
        assert!(close(fse.rate_bps(b).unwrap(), 1.5 * M));
        fse.remove(a);
        fse.remove(b);
        assert!(fse.is_empty());
        assert_eq!(fse.sum_calculated_bps(), 0.0);
    }

    #[test]
    fn an_application_limited_flows_leftover_goes_to_the_others_by_priority() {
        let mut fse = Fse::new(Algorithm::Active);
        // c can use only 0.5 Mbit/s; a and b (priorities 2 and 1) take the rest 2 : 1.
        let a = fse.register(2.0, f64::INFINITY, 1.0 * M);
        let b = fse.register(1.0, f64::INFINITY, 1.0 * M);
        let c = fse.register(3.0, 0.5 * M, 1.0 * M);
        fse.update(a, 1.0 * M);
        assert!(close(fse.rate_bps(c).unwrap(), 0.5 * M));
        assert!(close(fse.rate_bps(a).unwrap(), 2.5 * M * 2.0 / 3.0));
        assert!(close(fse.rate_bps(b).unwrap(), 2.5 * M / 3.0));
        // Two limits that bind one after the other: b's is reached only once c's leftover is
        // shared out.
        let mut fse = Fse::new(Algorithm::Active);
        let a = fse.register(1.0, f64::INFINITY, 1.0 * M);
        let b = fse.register(1.0, 1.2 * M, 1.0 * M);
        let c = fse.register(1.0, 0.3 * M, 1.0 * M);
        fse.update(a, 1.0 * M);
        assert!(close(fse.rate_bps(c).unwrap(), 0.3 * M));
        assert!(close(fse.rate_bps(b).unwrap(), 1.2 * M));
        assert!(close(fse.rate_bps(a).unwrap(), 1.5 * M));
        // Every flow limited: each gets its desired rate, the aggregate keeps the rest.
        let mut fse = Fse::new(Algorithm::Active);
        let a = fse.register(1.0, 0.2 * M, 1.0 * M);
        let b = fse.register(5.0, 0.4 * M, 1.0 * M);
        fse.update(a, 1.0 * M);
        assert!(close(fse.rate_bps(a).unwrap(), 0.2 * M));
        assert!(close(fse.rate_bps(b).unwrap(), 0.4 * M));
        assert!(close(fse.sum_calculated_bps(), 2.0 * M));
    }

    #[test]
    fn the_conservative_variant_scales_the_aggregate_on_a_decrease() {
        let mut active = Fse::new(Algorithm::Active);
        let mut conservative = Fse::new(Algorithm::Conservative);
        for fse in [&mut active, &mut conservative] {
            let a = fse.register(1.0, f64::INFINITY, 1.0 * M);
            fse.register(1.0, f64::INFINITY, 1.0 * M);
            fse.update(a, 1.0 * M);
            // a backs off 20 % from its 1 Mbit/s.
            fse.update(a, 0.8 * M);
        }
        assert!(close(active.sum_calculated_bps(), 1.8 * M));
        assert!(close(conservative.sum_calculated_bps(), 1.6 * M));
        // Increases add as in the active algorithm.
        let a = 0;
        conservative.update(a, 0.8 * M + 0.1 * M);
        assert!(close(conservative.sum_calculated_bps(), 1.7 * M));
    }

    #[test]
    fn the_fse_is_deterministic() {
        let run = || {
            let mut fse = Fse::new(Algorithm::Active);
            let ids: Vec<FlowId> = [1.0, 2.0, 3.5]
                .iter()
                .map(|&p| fse.register(p, 1.3 * M, 0.2 * M))
                .collect();
            let mut trace = Vec::new();
            for k in 0..200u64 {
                let id = ids[(k % 3) as usize];
                let cc = fse.rate_bps(id).unwrap() * (0.8 + 0.004 * (k % 97) as f64);
                fse.update(id, cc);
                trace.extend(ids.iter().map(|&i| fse.rate_bps(i).unwrap().to_bits()));
            }
            trace
        };
        assert_eq!(run(), run());
    }

    fn ctx(groups: &CouplingGroups, max: Option<Rate>) -> ControllerContext {
        ControllerContext {
            now: Time::ZERO,
            fps: 30.0,
            max_payload: crate::units::Bytes(1200),
            media: crate::video::range::MediaRange {
                max_bitrate: max,
                ..Default::default()
            },
            capacity: None,
            coupling: Some(groups.clone()),
            ecn: crate::packet::EcnMode::Off,
        }
    }

    fn build_err(text: &str, ctx: &ControllerContext) -> String {
        let params: Params = toml::from_str(text).unwrap();
        match super::super::create("coupled", &params, ctx) {
            Ok(_) => panic!("{text:?} was accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn bad_parameters_name_the_problem() {
        let g = CouplingGroups::default();
        let c = ctx(&g, None);
        let e = build_err("inner = \"gcc\"\npriority = 0.0", &c);
        assert!(e.contains("priority must be a positive number"), "{e}");
        let e = build_err("inner = \"gcc\"\npriority = -1.0", &c);
        assert!(e.contains("priority"), "{e}");
        let e = build_err("inner = \"gcc\"\npriority = 1e308", &c);
        assert!(e.contains("no larger than 1e6"), "{e}");
        let e = build_err("inner = \"nosuch\"", &c);
        assert!(
            e.contains("inner") && e.contains("valid controllers"),
            "{e}"
        );
        let e = build_err("inner = \"sqp\"", &c);
        assert!(e.contains("cannot take a rate from outside"), "{e}");
        let e = build_err(
            "inner = \"gcc\"\ninner_params = { profile = \"paper\" }",
            &c,
        );
        assert!(e.contains("cannot take a rate from outside"), "{e}");
        let e = build_err("inner = \"gcc\"\ninner_params = { nosuch = 1 }", &c);
        assert!(e.contains("nosuch"), "{e}");
        let e = build_err("inner = \"coupled\"", &c);
        assert!(e.contains("inner cannot be"), "{e}");
        let e = build_err("inner = 3", &c);
        assert!(e.contains("inner") || e.contains("string"), "{e}");
        let e = build_err("inner = \"gcc\"\nalgorithm = \"passive\"", &c);
        assert!(e.contains("active") && e.contains("conservative"), "{e}");
        let _a = super::super::create(
            "coupled",
            &toml::from_str("inner = \"gcc\"\ngroup = \"g\"").unwrap(),
            &c,
        )
        .unwrap();
        let e = build_err(
            "inner = \"gcc\"\ngroup = \"g\"\nalgorithm = \"conservative\"",
            &c,
        );
        assert!(e.contains("same one"), "{e}");
        let mut no_groups = c.clone();
        no_groups.coupling = None;
        let e = build_err("inner = \"gcc\"", &no_groups);
        assert!(e.contains("live transport"), "{e}");
    }

    #[test]
    fn rate_reports_reach_the_inner_controller() {
        use crate::cc::test_support::{recorder, report};
        let g = CouplingGroups::default();
        let fse = g.join("default", Algorithm::Active).unwrap();
        let (inner, got) = recorder();
        let mut c = Coupled::new(Time::ZERO, inner, fse, 1.0, None).unwrap();
        c.on_rate_report(Time::from_millis(1070), &report());
        assert_eq!(
            *got.lock().unwrap(),
            vec![(Time::from_millis(1070), report())]
        );
        assert_eq!(report().rate(), Some(Rate::from_mbps(1.0)));
    }

    #[test]
    fn coupled_controllers_join_their_group_and_leave_it_when_dropped_or_stopped() {
        let g = CouplingGroups::default();
        let c = ctx(&g, Some(Rate(2.5 * M)));
        let p2: Params = toml::from_str("inner = \"gcc\"\npriority = 2.0").unwrap();
        let p1: Params = toml::from_str("inner = \"gcc\"").unwrap();
        let mut a = super::super::create("coupled", &p2, &c).unwrap();
        let b = super::super::create("coupled", &p1, &c).unwrap();
        let fse = g.join("default", Algorithm::Active).unwrap();
        assert_eq!(lock(&fse).len(), 2);
        assert!(close(lock(&fse).sum_calculated_bps(), 0.6 * M));
        // Both start at gcc's 300 kbit/s: the first UPDATE splits the 600 kbit/s 2 : 1, and b
        // reads its share at once.
        lock(&fse).update(0, 0.3 * M);
        assert!(close(a.decision().target_bitrate.bps(), 0.4 * M));
        assert!(close(b.decision().target_bitrate.bps(), 0.2 * M));
        // gcc paces at 2.5 × its target; the FSE's rate is paced alike.
        assert!(close(b.decision().pacing_rate.unwrap().bps(), 0.5 * M));
        let mut out = Vec::new();
        b.state(&mut out);
        assert!(out.contains(&("priority", 1.0)));
        assert!(out
            .iter()
            .any(|&(k, v)| k == "fse_rate_bps" && close(v, 0.2 * M)));
        drop(b);
        assert_eq!(lock(&fse).len(), 1);
        a.on_stop(Time::from_millis(1000));
        assert!(lock(&fse).is_empty());
        drop(a);
        // Another run's groups are its own.
        let other = CouplingGroups::default();
        assert!(lock(&other.join("default", Algorithm::Active).unwrap()).is_empty());
    }
}
