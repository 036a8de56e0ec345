//! drydock-scenarios: named scenarios (a workload generator plus a world shape) and the function
//! that runs one seed of one.
//!
//! A seed is split into independent streams (workload, faults, world) so that changing how one is
//! drawn does not reshuffle the others.
//!
//! It is also the crate a controller author's tests use: [`Scenario::builder`] puts their kinds,
//! controllers, invariants, convergence conditions and workload beside the built-in ones, and
//! [`harness::SimTest`] runs them in `cargo test` (regressions replayed first, seeds swept across
//! threads, failures shrunk, saved and reported with a one-line repro). The [`guide`] walks through
//! it; the simulator, the engine and the randomness types are re-exported.

mod basic;
mod builder;
pub mod draw;
pub mod examples;
pub mod golden;
pub mod harness;
/// The guide: your controller under drydock's simulator, from a kind to 10,000 seeds in CI.
#[doc = include_str!("../README.md")]
pub mod guide {}
mod logical;
mod logs;
mod physical;
mod pull_storm;
mod rdd;
mod resources;
mod scale;
pub mod schedule;
mod shapes;
mod teardown;

pub use builder::ScenarioBuilder;
pub use drydock_engine::Components;
pub use drydock_faults::FaultSelection;
use drydock_faults::{FaultKind, FaultPlan};
use drydock_sim::sweep::{SweepConfig, SweepReport};
use drydock_sim::workload::Workload;
use drydock_sim::{RunReport, World, WorldConfig};
use std::sync::{Arc, LazyLock};

/// The randomness a workload generator draws from, re-exported so a user's crate need not pin
/// drydock's `rand_chacha` and `rand_core` versions by hand.
pub use rand_chacha::ChaCha8Rng;
pub use rand_core::{RngCore, SeedableRng};
/// The crates a user's simulation test needs, re-exported at the versions drydock uses.
pub use {drydock_engine as engine, drydock_faults as faults, drydock_sim as sim};

/// Makes a seed's workload from its workload stream.
pub type Generate = Arc<dyn Fn(&mut ChaCha8Rng) -> Workload + Send + Sync>;
/// Makes the world a scenario runs in (called once per run: it is cheap).
pub type MakeWorld = Arc<dyn Fn() -> WorldConfig + Send + Sync>;
/// Makes the workload generator of a world of the given size (a scenario's `--size` knob).
pub type GenerateSized = Arc<dyn Fn(usize) -> Generate + Send + Sync>;

/// A named scenario: a workload generator and a world shape. The built-in ones are [`all`]; a
/// user's are made with [`Scenario::builder`].
#[derive(Clone)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub generate: Generate,
    pub world: MakeWorld,
    /// Whether faults are drawn per seed (swarm) or off.
    pub faults: bool,
    /// A scenario built around a known bug: its seeds are expected to fail.
    pub expect_failures: bool,
    /// Fault kinds its default (swarm) plans leave out.
    pub excluded_faults: Vec<FaultKind>,
    /// Its size knob, if it has one: the generator for a world of a given size.
    pub sized: Option<GenerateSized>,
    /// The size `generate` makes, for a scenario with a size knob.
    pub size: Option<usize>,
}

impl std::fmt::Debug for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scenario")
            .field("name", &self.name)
            .field("faults", &self.faults)
            .field("expect_failures", &self.expect_failures)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

/// A built-in scenario from plain functions.
fn builtin(
    name: &str,
    description: &str,
    generate: fn(&mut ChaCha8Rng) -> Workload,
    world: fn() -> WorldConfig,
) -> Scenario {
    Scenario {
        name: name.to_string(),
        description: description.to_string(),
        generate: Arc::new(generate),
        world: Arc::new(world),
        faults: true,
        expect_failures: false,
        excluded_faults: Vec::new(),
        sized: None,
        size: None,
    }
}

/// Every built-in scenario, by name.
pub fn all() -> &'static [Scenario] {
    static ALL: LazyLock<Vec<Scenario>> = LazyLock::new(|| {
        vec![
            builtin(
                "basic",
                "namespaces and physical containers created, stopped and deleted over time, deletes racing creates, under swarm faults (uncertain creates, stale caches)",
                basic::generate,
                WorldConfig::default,
            ),
            builtin(
                "pull-storm",
                "many images with equivalent references pulled across two engine processes: leases, policies, retry limits, moving tags, external image removal, deletes during pulls",
                pull_storm::generate,
                pull_storm::world,
            ),
            builtin(
                "namespace-teardown",
                "namespaces deleted while their pulls and creates are in flight, creates racing the delete, namespaces re-created",
                teardown::generate,
                teardown::world,
            ),
            builtin(
                "physical",
                "the full physical layer: image references, strangers holding names, replaceExisting, retain, hostile caller labels, external removal, owners, stops and deletes",
                physical::generate,
                physical::world,
            ),
            builtin(
                "session",
                "session logical containers with inline images and image references, created and deleted, in namespaces that get deleted",
                logical::session,
                logical::two_processes,
            ),
            builtin(
                "persistent-reuse",
                "a persistent workload started, torn down and started again against a runtime that keeps its containers, with edits that do and do not change the lifecycle key",
                logical::persistent_reuse,
                logical::two_processes,
            ),
            builtin(
                "adopt-existing",
                "containers created and removed outside drydock; existing-mode logical containers wait for them and adopt them, persistent ones adopt strangers",
                logical::adopt_existing,
                logical::two_processes,
            ),
            builtin(
                "mixed",
                "everything at random: session, persistent and existing logical containers beside the physical layer (the default scenario)",
                logical::mixed,
                logical::two_processes,
            ),
            builtin(
                "logs",
                "log sources under faults: containers printing bursts, ticks and both streams, pulls, failed starts; fast, slow, early, cancelled and stalled readers of every source; deletions with readers attached",
                logs::generate,
                logical::two_processes,
            ),
            builtin(
                "resources",
                "networks, volumes, built images and copied files beside containers: strangers holding names, replaceExisting, retain, the built-in bridge tracked, containers attached with aliases and mounting volumes (some before these exist), strangers' containers using them, deletes while in use, external removal, builds that succeed or fail, namespace deletes",
                resources::generate,
                logical::two_processes,
            ),
            Scenario {
                excluded_faults: scale::WORLD_SIZED_FAULTS.to_vec(),
                sized: Some(Arc::new(|size| Arc::new(move |rng: &mut ChaCha8Rng| scale::generate(size, rng)))),
                size: Some(scale::DEFAULT_SIZE),
                ..builtin(
                    "scale",
                    "a world of --size N containers (default 10) in namespaces of 100, physical and session logical, with images and a network each, then churn in proportion: for measuring cost per event against world size (sim bench); faults that relist the whole world are left out",
                    |rng| scale::generate(scale::DEFAULT_SIZE, rng),
                    logical::two_processes,
                )
            },
            rdd::scenario(true),
            rdd::scenario(false),
            Scenario {
                faults: false,
                ..builtin(
                    "basic-calm",
                    "the basic workload with no faults: the baseline for throughput",
                    basic::generate,
                    WorldConfig::default,
                )
            },
        ]
    });
    &ALL
}

impl Scenario {
    /// The same scenario in a world of `size`, if it has a size knob (`--size N`).
    pub fn with_size(&self, size: usize) -> Result<Scenario, String> {
        let Some(sized) = &self.sized else {
            let knobbed: Vec<&str> = all().iter().filter(|s| s.sized.is_some()).map(|s| s.name.as_str()).collect();
            return Err(format!("scenario {} has no size knob; scenarios with one: {}", self.name, knobbed.join(", ")));
        };
        if size == 0 {
            return Err("a world of size 0 has nothing in it: give a size of 1 or more".into());
        }
        Ok(Scenario { generate: sized(size), size: Some(size), ..self.clone() })
    }
}

/// The built-in scenario called `name`.
pub fn find(name: &str) -> Option<&'static Scenario> {
    all().iter().find(|s| s.name == name)
}

/// The names of all built-in scenarios, for error messages.
pub fn names() -> Vec<&'static str> {
    all().iter().map(|s| s.name.as_str()).collect()
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
        let mut plan = faults.plan(self.faults, &mut s.faults);
        if self.faults && *faults == FaultSelection::Default {
            for kind in &self.excluded_faults {
                plan = plan.without(*kind);
            }
            // Drawn after the others, and only where the workload has what they act on: no
            // other run changes.
            if logs::reads_logs(&workload) {
                plan = plan.swarm_also(FaultKind::ReaderStall, &mut s.faults);
            }
            if resources::builds_images(&workload) {
                plan = plan.swarm_also(FaultKind::BuildInterrupted, &mut s.faults);
            }
            if resources::copies_files(&workload) {
                plan = plan.swarm_also(FaultKind::CopyRefused, &mut s.faults);
            }
            for kind in FaultKind::SWARM_LATER {
                plan = plan.swarm_also(kind, &mut s.faults);
                if self.excluded_faults.contains(&kind) {
                    plan = plan.without(kind);
                }
            }
        }
        (workload, plan)
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
