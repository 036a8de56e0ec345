//! The shape of a world: one group of knobs per component (each defined beside its component,
//! with the magnitudes of that component's faults). Scenarios adjust them.

pub use super::liveness::LivenessKnobs;
pub use super::processes::ProcessKnobs;
pub use super::runtime_link::RuntimeLinkKnobs;
pub use super::store_link::StoreLinkKnobs;
pub use super::watches::{KindLag, WatchKnobs, WatchOrdering};
use crate::checker::{self, Invariant, View};
use drydock_engine::Controller;
use drydock_engine::controllers::{self, ControllerConfig};
use drydock_engine::store::{Backend, Registry, StoreConfig};
use std::sync::Arc;

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
    /// A user's controllers, invariants and convergence conditions, beside the built-in ones.
    pub extensions: Extensions,
    /// Judge the whole state after every event too, beside what changed, and fail the run
    /// (`incremental-check`) where the two disagree: the test of the invariants' incremental
    /// checks. Slow; it changes nothing else of a run.
    pub cross_check: bool,
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
            extensions: Extensions::default(),
            cross_check: false,
        }
    }
}

/// Makes a fresh controller for every engine process and every life of it (a crash loses its
/// memory, so the factory is called again): the engine's, as [`drydock_engine::Components`] holds.
pub use drydock_engine::components::ControllerFactory;

/// Makes a fresh invariant for every run (an invariant keeps the history of its run).
pub type InvariantFactory = Arc<dyn Fn() -> Box<dyn Invariant> + Send + Sync>;

/// A condition the world must reach once faults have healed, beside the built-in
/// [`desired_equals_actual`](crate::checker::desired_equals_actual): `Err` says, in words, what is
/// not there yet.
#[derive(Clone)]
pub struct Convergence {
    pub name: String,
    pub check: ConvergenceCheck,
}

/// `Ok` once the condition holds; otherwise what is missing, in words.
pub type ConvergenceCheck = Arc<dyn Fn(&View<'_>) -> Result<(), String> + Send + Sync>;

impl Convergence {
    pub fn new(name: &str, check: impl Fn(&View<'_>) -> Result<(), String> + Send + Sync + 'static) -> Self {
        Convergence { name: name.to_string(), check: Arc::new(check) }
    }
}

/// What a user adds to a world: controllers that run in every engine process beside the
/// built-in ones, invariants checked after every event beside the built-in ones, and conditions
/// the liveness phase waits for beside desired-equals-actual.
#[derive(Clone, Default)]
pub struct Extensions {
    pub controllers: Vec<ControllerFactory>,
    pub invariants: Vec<InvariantFactory>,
    pub convergence: Vec<Convergence>,
    /// Probes the user's controllers can lead to that the run's workload alone does not make
    /// reachable (see [`crate::probes::reachable`]): a sweep reports them unreached if no seed
    /// hits them.
    pub reachable_probes: std::collections::BTreeSet<crate::probes::Probe>,
}

impl Extensions {
    /// `Ok` when every user condition holds; otherwise the first that does not, with its name.
    pub fn converged(&self, view: &View<'_>) -> Result<(), String> {
        for condition in &self.convergence {
            (condition.check)(view).map_err(|why| format!("[{}] {why}", condition.name))?;
        }
        Ok(())
    }
}

impl std::fmt::Debug for Extensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extensions")
            .field("controllers", &self.controllers.len())
            .field("invariants", &self.invariants.len())
            .field("convergence", &self.convergence.iter().map(|c| &c.name).collect::<Vec<_>>())
            .field("reachable_probes", &self.reachable_probes)
            .finish()
    }
}
