//! The state checker: *always* invariants, evaluated after every event, and the *eventually*
//! properties checked once faults are healed.

mod convergence;
mod history;
mod invariants;

pub use convergence::desired_equals_actual;
pub use history::History;
pub use invariants::{INVARIANTS, Invariant};

use crate::runtime::SimRuntime;
use drydock_engine::store::Store;

/// What a checker may look at: the store, the runtime and the run's history, never the
/// engine's memory.
pub struct View<'a> {
    pub store: &'a Store,
    pub runtime: &'a SimRuntime,
    pub history: &'a History,
    pub now: drydock_engine::WallTime,
}

impl<'a> View<'a> {
    /// A state on its own: no history, at time zero.
    pub fn of(store: &'a Store, runtime: &'a SimRuntime) -> Self {
        View { store, runtime, history: &history::EMPTY, now: drydock_engine::WallTime(0) }
    }
}

/// Eventual properties, listed with the invariants by `drydock sim list`.
pub const EVENTUAL: &[(&str, &str)] = &[
    ("convergence", "after faults heal, desired state equals actual state within a bounded simulated time"),
    ("quiescence", "once converged, no object is rewritten while nothing changes (no oscillation at rest)"),
    ("no-oscillation", "after faults heal, no object is written more than 30 times with no client acting"),
];

/// The first invariant `view` violates, with its message.
pub fn check_all(view: &View<'_>) -> Option<(&'static str, String)> {
    INVARIANTS.iter().find_map(|inv| (inv.check)(view).err().map(|message| (inv.name, message)))
}

#[cfg(test)]
mod tests;
