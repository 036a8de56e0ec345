//! drydock-sim: a deterministic discrete-event simulator for the drydock engine.
//!
//! One seed fixes everything: the workload the scenario generates, the fault plan, every latency
//! and every delivery delay are drawn from one ChaCha8 PRNG, and time is simulated. The same seed
//! gives the same trace digest on every run and every machine.

mod catalog;
pub mod checker;
pub mod facts;
pub mod logs;
pub mod markup;
pub mod probes;
/// The simulated container runtime, a crate of its own (`drydock-sim-runtime`): re-exported so
/// that `drydock_sim::runtime::...` paths keep working.
pub use drydock_sim_runtime as runtime;
pub mod scheduler;
pub mod stamp;
pub mod sweep;
pub mod timeline;
pub mod trace;
pub mod workload;
pub mod world;

pub use world::{
    ControllerFactory, Convergence, Extensions, Factor, InvariantFactory, KindLag, Latency, LivenessKnobs,
    ProcessKnobs, RunReport, RunStats, RuntimeLinkKnobs, StoreLinkKnobs, Violation, WatchKnobs, WatchOrdering, World,
    WorldConfig,
};
