//! The names the engine gives what it makes, written down by the checker.
//!
//! These are the engine's contract with its users (who find a logical container's backing, its
//! startup lease or a lease's holder by them), so the checker keeps its own copy instead of
//! calling the engine's functions: a change to one of those functions is then a disagreement
//! an invariant reports, not a rule the checker silently follows.

use sha2::{Digest, Sha256};

/// The `PhysicalContainer` a logical container named `name` owns.
pub(crate) fn backing_name(name: &str) -> String {
    format!("{name}-backing")
}

/// The lease a persistent container's startup holds: `container-` and the first 20 hex digits
/// of the SHA-256 of its runtime name.
pub(crate) fn startup_lease_name(runtime_name: &str) -> String {
    let digest = hex::encode(Sha256::digest(runtime_name.as_bytes()));
    format!("container-{}", &digest[..20])
}

/// The uid of the resource a lease holder contends for: holders are `<engine identity>/<uid>`.
pub(crate) fn holder_uid(holder: &str) -> Option<&str> {
    holder.rsplit_once('/').map(|(_, uid)| uid)
}

/// The issuer kind of the harvester's passes (the runtime requests no object asked for).
pub(crate) const HARVEST_KIND: &str = "Harvest";

#[cfg(test)]
mod tests {
    use super::*;

    /// The copies agree with the engine today; a change to either side is a reviewed decision.
    #[test]
    fn the_checkers_copy_agrees_with_the_engine() {
        use drydock_engine::controllers::{harvest, logical};
        assert_eq!(backing_name("db"), logical::backing_name("db"));
        assert_eq!(startup_lease_name("ns-db"), logical::startup_lease_name("ns-db"));
        let holder = drydock_engine::lease::holder("engine-1", &drydock_engine::api::Uid("u-1".into()));
        assert_eq!(holder_uid(&holder), Some("u-1"));
        assert_eq!(HARVEST_KIND, harvest::HARVEST_KIND);
    }
}
