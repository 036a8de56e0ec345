//! The shape of a world: one group of knobs per component (each defined beside its component,
//! with the magnitudes of that component's faults). Scenarios adjust them.

pub use super::liveness::LivenessKnobs;
pub use super::processes::ProcessKnobs;
pub use super::runtime_link::RuntimeLinkKnobs;
pub use super::store_link::StoreLinkKnobs;
pub use super::watches::{KindLag, WatchKnobs, WatchOrdering};
use crate::checker::{self, Invariant};
use drydock_engine::Controller;
use drydock_engine::controllers::{self, ControllerConfig};
use drydock_engine::store::{Backend, Registry, StoreConfig};

/// The shape of the world. Scenarios adjust it.
#[derive(Clone, Debug)]
pub struct WorldConfig {
    pub processes: ProcessKnobs,
    pub watch: WatchKnobs,
    pub runtime_link: RuntimeLinkKnobs,
    pub store_link: StoreLinkKnobs,
    pub liveness: LivenessKnobs,
    pub controllers: ControllerConfig,
    pub make_controllers: fn(&ControllerConfig) -> Vec<Box<dyn Controller>>,
    /// The invariants checked after every event: the built-in ones, plus any a scenario adds.
    pub make_invariants: fn() -> Vec<Box<dyn Invariant>>,
    pub registry: Registry,
    pub store: StoreConfig,
    /// What keeps the store's data: `None` (the default) is the engine's memory backend. A
    /// test may plug another backend here (drydock-store-sqlite's, over an in-memory database,
    /// in the scenarios' equivalence test); the simulator itself never does I/O.
    pub store_backend: Option<fn() -> Box<dyn Backend>>,
}

impl Default for WorldConfig {
    fn default() -> Self {
        WorldConfig {
            processes: ProcessKnobs::default(),
            watch: WatchKnobs::default(),
            runtime_link: RuntimeLinkKnobs::default(),
            store_link: StoreLinkKnobs::default(),
            liveness: LivenessKnobs::default(),
            controllers: ControllerConfig::default(),
            make_controllers: controllers::builtin,
            make_invariants: checker::builtin,
            registry: Registry::builtin(),
            store: StoreConfig::default(),
            store_backend: None,
        }
    }
}
