//! The shape of a world: one group of knobs per component (each defined beside its component,
//! with the magnitudes of that component's faults). Scenarios adjust them.

pub use super::liveness::LivenessKnobs;
pub use super::processes::ProcessKnobs;
pub use super::runtime_link::RuntimeLinkKnobs;
pub use super::store_link::StoreLinkKnobs;
pub use super::watches::WatchKnobs;
use crate::checker::{self, Invariant};
use drydock_engine::Controller;
use drydock_engine::controllers::{self, ControllerConfig};
use drydock_engine::store::{Registry, StoreConfig};
use drydock_faults::unit;
use rand_chacha::ChaCha8Rng;
use std::time::Duration;

/// A latency range; draws are uniform in `[min, max]`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Latency {
    pub min: Duration,
    pub max: Duration,
}

impl Latency {
    pub const fn millis(min: u64, max: u64) -> Self {
        Latency { min: Duration::from_millis(min), max: Duration::from_millis(max) }
    }

    pub(crate) fn draw(&self, rng: &mut ChaCha8Rng) -> Duration {
        self.min + (self.max.saturating_sub(self.min)).mul_f64(unit(rng))
    }
}

/// A factor range; draws are uniform in `[min, max)`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Factor {
    pub min: f64,
    pub max: f64,
}

impl Factor {
    pub(crate) fn draw(&self, rng: &mut ChaCha8Rng) -> f64 {
        self.min + (self.max - self.min) * unit(rng)
    }
}

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
        }
    }
}
