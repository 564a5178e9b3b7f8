//! A `tcp` flow with `app = { model = "short" }` (RFC 8867 §5.7): downloads of random sizes,
//! each on a fresh connection with its own controller, interleaved with random idle periods.

use super::{Building, FlowConfig};
use crate::controller::ControllerRecipe;
use crate::seeds::derive_seed;
use rtcc_core::endpoint::dash::ControllerFactory;
use rtcc_core::endpoint::video_send::Ssrcs;
use rtcc_core::endpoint::{Endpoint, ShortTcpSendEndpoint, TcpRecvEndpoint};
use rtcc_core::packet::EcnMode;
use rtcc_core::short_tcp::{ShortFlowConfig, ShortFlowGenerator};
use rtcc_core::{Bytes, Duration, Time};

/// A short-TCP flow, resolved.
#[derive(Debug, Clone)]
pub struct ShortTcpFlow {
    pub controller: ControllerRecipe,
    pub config: ShortFlowConfig,
    pub delayed_ack: bool,
    pub mss: Bytes,
    pub ecn: EcnMode,
}

impl ShortTcpFlow {
    pub(crate) fn endpoints(
        &self,
        f: &FlowConfig,
        b: &Building,
    ) -> Result<[Box<dyn Endpoint>; 2], String> {
        let i = b.index;
        let ssrcs = Ssrcs::for_flow(i as u32);
        // Each download is a fresh connection with its own controller.
        let make = connection_controllers(&self.controller, f, b)?;
        // Seed stream 4 << 32 | i: independent of the frame source's (i), the links' (1 << 32,
        // 2 << 32) and the encoders' (3 << 32).
        let generator =
            ShortFlowGenerator::new(self.config, derive_seed(b.seed, (4 << 32) | i as u64));
        let mut send =
            ShortTcpSendEndpoint::new(generator, make, self.mss.0 as u32, ssrcs.media, f.start);
        send.set_ecn(self.ecn);
        let mut recv = TcpRecvEndpoint::new(ssrcs.media, self.delayed_ack);
        recv.set_ecn(self.ecn);
        Ok([Box::new(send), Box::new(recv)])
    }
}

/// A controller per connection, built as each opens (short TCP downloads, DASH segments). One is
/// built here, so that a controller that cannot be built fails now, not when the first
/// connection opens.
pub(crate) fn connection_controllers(
    recipe: &ControllerRecipe,
    f: &FlowConfig,
    b: &Building,
) -> Result<ControllerFactory, String> {
    let ctx = f.context(Some(b.capacity.clone()), b.coupling);
    b.controller(recipe, &ctx)?;
    let registry = b.registry.clone();
    let recipe = recipe.clone();
    Ok(Box::new(move |now: Time| {
        let mut ctx = ctx.clone();
        ctx.now = now;
        recipe
            .build(&ctx, &registry)
            .expect("the controller was built once already")
    }))
}

/// `app = { model = "short", min_size = "30KB", max_size = "50KB", mean_idle = "10s",
/// initial = "on" }`, every field optional (RFC 8868's values by default).
pub(crate) fn resolve_short(
    obj: &serde_json::Map<String, serde_json::Value>,
) -> Result<ShortFlowConfig, (String, String)> {
    const FIELDS: [&str; 5] = ["model", "min_size", "max_size", "mean_idle", "initial"];
    if let Some(k) = obj.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err((
            k.clone(),
            "unknown field; the short model takes min_size, max_size, mean_idle, initial".into(),
        ));
    }
    let text = |k: &str| -> Result<Option<&str>, (String, String)> {
        match obj.get(k) {
            None => Ok(None),
            Some(x) => x
                .as_str()
                .map(Some)
                .ok_or_else(|| (k.to_string(), format!("expected a string, got {x}"))),
        }
    };
    let size = |k: &str, default: u64| -> Result<u64, (String, String)> {
        match text(k)? {
            None => Ok(default),
            Some(s) => {
                let b = Bytes::parse(s).map_err(|e| (k.to_string(), e.to_string()))?;
                if b.0 == 0 {
                    return Err((k.to_string(), "must be more than 0B".into()));
                }
                Ok(b.0)
            }
        }
    };
    let defaults = ShortFlowConfig::default();
    let min_size = size("min_size", defaults.min_size)?;
    let max_size = size("max_size", defaults.max_size)?;
    if max_size < min_size {
        return Err((
            "max_size".into(),
            format!("{max_size}B is below min_size ({min_size}B)"),
        ));
    }
    let mean_idle = match text("mean_idle")? {
        None => defaults.mean_idle,
        Some(s) => Duration::parse(s).map_err(|e| ("mean_idle".to_string(), e.to_string()))?,
    };
    if mean_idle.0 == 0 {
        return Err(("mean_idle".into(), "must be longer than 0s".into()));
    }
    let starts_on = match text("initial")? {
        None | Some("on") => true,
        Some("off") => false,
        Some(other) => {
            return Err((
                "initial".into(),
                format!("{other:?} is not a state; valid: on (download first), off (idle first)"),
            ))
        }
    };
    Ok(ShortFlowConfig {
        min_size,
        max_size,
        mean_idle,
        starts_on,
    })
}
