//! drydock-scenarios: named scenarios (a workload generator plus a world shape) and the function
//! that runs one seed of one.
//!
//! A seed is split into independent streams (workload, faults, world) so that changing how one is
//! drawn does not reshuffle the others.

mod basic;
mod draw;
pub mod examples;
pub mod golden;
mod logical;
mod physical;
mod pull_storm;
mod rdd;
pub mod schedule;
mod shapes;
mod teardown;

use drydock_faults::FaultPlan;
pub use drydock_faults::FaultSelection;
use drydock_sim::sweep::{SweepConfig, SweepReport};
use drydock_sim::workload::Workload;
use drydock_sim::{RunReport, World, WorldConfig};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// A named scenario.
pub struct Scenario {
    pub name: &'static str,
    pub description: &'static str,
    pub generate: fn(&mut ChaCha8Rng) -> Workload,
    pub world: fn() -> WorldConfig,
    /// Whether faults are drawn per seed (swarm) or off.
    pub faults: bool,
    /// A scenario built around a known bug: its seeds are expected to fail.
    pub expect_failures: bool,
}

/// Every scenario, by name.
pub fn all() -> &'static [Scenario] {
    &[
        Scenario {
            name: "basic",
            description: "namespaces and physical containers created, stopped and deleted over time, deletes racing creates, under swarm faults (uncertain creates, stale caches)",
            generate: basic::generate,
            world: WorldConfig::default,
            faults: true,
            expect_failures: false,
        },
        Scenario {
            name: "pull-storm",
            description: "many images with equivalent references pulled across two engine processes: leases, policies, retry limits, moving tags, external image removal, deletes during pulls",
            generate: pull_storm::generate,
            world: pull_storm::world,
            faults: true,
            expect_failures: false,
        },
        Scenario {
            name: "namespace-teardown",
            description: "namespaces deleted while their pulls and creates are in flight, creates racing the delete, namespaces re-created",
            generate: teardown::generate,
            world: teardown::world,
            faults: true,
            expect_failures: false,
        },
        Scenario {
            name: "physical",
            description: "the full physical layer: image references, strangers holding names, replaceExisting, retain, hostile caller labels, external removal, owners, stops and deletes",
            generate: physical::generate,
            world: physical::world,
            faults: true,
            expect_failures: false,
        },
        Scenario {
            name: "session",
            description: "session logical containers with inline images and image references, created and deleted, in namespaces that get deleted",
            generate: logical::session,
            world: logical::two_processes,
            faults: true,
            expect_failures: false,
        },
        Scenario {
            name: "persistent-reuse",
            description: "a persistent workload started, torn down and started again against a runtime that keeps its containers, with edits that do and do not change the lifecycle key",
            generate: logical::persistent_reuse,
            world: logical::two_processes,
            faults: true,
            expect_failures: false,
        },
        Scenario {
            name: "adopt-existing",
            description: "containers created and removed outside drydock; existing-mode logical containers wait for them and adopt them, persistent ones adopt strangers",
            generate: logical::adopt_existing,
            world: logical::two_processes,
            faults: true,
            expect_failures: false,
        },
        Scenario {
            name: "mixed",
            description: "everything at random: session, persistent and existing logical containers beside the physical layer (the default scenario)",
            generate: logical::mixed,
            world: logical::two_processes,
            faults: true,
            expect_failures: false,
        },
        Scenario {
            name: "rdd-namespaces-buggy",
            description: "example user controller with RDD PR #188's bug (ownerReference from whichever namespace triggered): expected to FAIL",
            generate: rdd::generate,
            world: rdd::world_buggy,
            faults: true,
            expect_failures: true,
        },
        Scenario {
            name: "rdd-namespaces",
            description: "the same example controller, fixed: one owner, reconciled from one namespace",
            generate: rdd::generate,
            world: rdd::world_fixed,
            faults: true,
            expect_failures: false,
        },
        Scenario {
            name: "basic-calm",
            description: "the basic workload with no faults: the baseline for throughput",
            generate: basic::generate,
            world: WorldConfig::default,
            faults: false,
            expect_failures: false,
        },
    ]
}

pub fn find(name: &str) -> Option<&'static Scenario> {
    all().iter().find(|s| s.name == name)
}

/// The names of all scenarios, for error messages.
pub fn names() -> Vec<&'static str> {
    all().iter().map(|s| s.name).collect()
}

/// The three independent streams of one seed.
pub(crate) struct Streams {
    workload: ChaCha8Rng,
    faults: ChaCha8Rng,
    world: u64,
}

pub(crate) fn streams(seed: u64) -> Streams {
    let mut root = ChaCha8Rng::seed_from_u64(seed);
    Streams {
        workload: ChaCha8Rng::seed_from_u64(root.next_u64()),
        faults: ChaCha8Rng::seed_from_u64(root.next_u64()),
        world: root.next_u64(),
    }
}

impl Scenario {
    /// The workload and fault plan of `seed`.
    pub fn materialize(&self, seed: u64) -> (Workload, FaultPlan) {
        self.materialize_with(seed, &FaultSelection::Default)
    }

    /// The workload of `seed` and its fault plan under `faults`.
    pub fn materialize_with(&self, seed: u64, faults: &FaultSelection) -> (Workload, FaultPlan) {
        let mut s = streams(seed);
        let workload = (self.generate)(&mut s.workload);
        (workload, faults.plan(self.faults, &mut s.faults))
    }

    /// Run one seed. `keep_trace` keeps every trace line in the report.
    pub fn run(&self, seed: u64, keep_trace: bool) -> RunReport {
        self.run_with(seed, keep_trace, &FaultSelection::Default)
    }

    /// Run seeds `config.start..config.start + config.seeds` across `config.jobs` threads (see
    /// [`drydock_sim::sweep`]); `on_report` sees each seed's report as it arrives.
    pub fn sweep(
        &self,
        config: &SweepConfig,
        faults: &FaultSelection,
        on_report: impl FnMut(&RunReport),
    ) -> SweepReport {
        drydock_sim::sweep::sweep(config, |seed| self.run_with(seed, false, faults), on_report)
    }

    /// Run one seed with a fault selection other than the scenario's default.
    pub fn run_with(&self, seed: u64, keep_trace: bool, faults: &FaultSelection) -> RunReport {
        let (workload, faults) = self.materialize_with(seed, faults);
        let config = (self.world)();
        let mut report = World::new(&config, &workload, faults, streams(seed).world, keep_trace).run();
        report.seed = seed;
        report
    }
}
