//! `Lease`: an exclusive lease, held by one engine process at a time.

use super::object::Resource;
use super::registry::KindInfo;
use crate::time::WallTime;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// An exclusive lease: at most one live holder, acquired and renewed with resourceVersion
/// preconditions so that engine processes sharing a store contend for real.
pub struct Lease;

/// An exclusive lease: who holds it, and until when.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LeaseSpec {
    /// What the lease serializes, e.g. a normalized image reference.
    pub key: String,
    /// The current holder; `None` when released.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    /// When the current holder acquired it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::meta::time_schema")]
    pub acquire_time: Option<WallTime>,
    /// When the holder last renewed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::meta::time_schema")]
    pub renew_time: Option<WallTime>,
    /// The holder loses the lease this long after its last renewal.
    pub duration_ms: u64,
}

impl LeaseSpec {
    /// Held by someone, and not expired at `now`.
    pub fn live_holder(&self, now: WallTime) -> Option<&str> {
        let renewed = self.renew_time?;
        (renewed.0.saturating_add(self.duration_ms) > now.0).then_some(self.holder.as_deref()).flatten()
    }
}

/// Leases keep no status: everything is in the spec, written by the holder.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LeaseStatus {}

impl Resource for Lease {
    const KIND: &'static str = "Lease";
    const NAMESPACED: bool = false;
    type Spec = LeaseSpec;
    type Status = LeaseStatus;
}

/// `Lease`'s registration (short name `dlease`: `lease` is Kubernetes' own kind).
pub fn kind_info() -> KindInfo {
    KindInfo::typed::<Lease>(|_| Vec::new()).with_names("leases", &["dlease"]).with_description(
        "An exclusive lease, held by one drydock engine at a time (what an image pull or a persistent \
         container's startup serializes on).",
    )
}
