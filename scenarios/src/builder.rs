//! [`ScenarioBuilder`]: a user's kinds and controllers (the [`Components`] a production binary
//! runs too), workload, invariants and convergence conditions put together into a [`Scenario`],
//! beside the built-in ones.
//!
//! *Guarantees*: the built-in controllers, invariants and convergence condition stay on; the
//! user's controllers run after the built-in ones in every engine process and every life of it
//! (each life gets fresh ones from the factory), and the user's invariants are checked after the
//! built-in ones, after every event that can change what they read.
//!
//! *Assumptions*: the factories are pure: a controller or invariant made twice behaves the same,
//! or the same seed would not give the same run.

use crate::{Generate, MakeWorld, Scenario};
use drydock_engine::Components;
use drydock_sim::checker::{Invariant, View};
use drydock_sim::probes::Probe;
use drydock_sim::workload::Workload;
use drydock_sim::{Convergence, Extensions, WorldConfig};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;

/// An adjustment of the world a scenario runs in.
type Adjust = Arc<dyn Fn(&mut WorldConfig) + Send + Sync>;

/// Builds a [`Scenario`]; see [`Scenario::builder`].
pub struct ScenarioBuilder {
    name: String,
    description: String,
    generate: Option<Generate>,
    world: MakeWorld,
    components: Components,
    extensions: Extensions,
    configure: Vec<Adjust>,
    faults: bool,
    expect_failures: bool,
}

impl Scenario {
    /// A scenario of one's own: by default one engine process, the built-in controllers and
    /// invariants, swarm faults, and an empty workload until [`ScenarioBuilder::workload`].
    pub fn builder(name: &str) -> ScenarioBuilder {
        ScenarioBuilder {
            name: name.to_string(),
            description: String::new(),
            generate: None,
            world: Arc::new(WorldConfig::default),
            components: Components::new(),
            extensions: Extensions::default(),
            configure: Vec::new(),
            faults: true,
            expect_failures: false,
        }
    }
}

impl ScenarioBuilder {
    /// One line saying what the scenario does (shown by `sim list`).
    pub fn description(mut self, description: &str) -> Self {
        self.description = description.to_string();
        self
    }

    /// What clients and external actors do: called once per seed with the seed's workload stream.
    pub fn workload(mut self, generate: impl Fn(&mut ChaCha8Rng) -> Workload + Send + Sync + 'static) -> Self {
        self.generate = Some(Arc::new(generate));
        self
    }

    /// Add a user's kinds (registered with the store: their validation runs on admission, and
    /// they are stored like the built-in ones) and controllers (run in every engine process
    /// beside the built-in ones; each factory is called for every process and every life of it:
    /// a crash loses the controller's memory). The same [`Components`] a production binary runs
    /// (`drydock::Drydock::components`), so a kind and its controller are registered once.
    pub fn components(mut self, components: Components) -> Self {
        self.components = self.components.with(components);
        self
    }

    /// Check an invariant after every event, beside the built-in ones. `make` is called once per
    /// run: the invariant may keep the history it observes.
    pub fn invariant<I: Invariant + 'static>(mut self, make: impl Fn() -> I + Send + Sync + 'static) -> Self {
        self.extensions.invariants.push(Arc::new(move || Box::new(make())));
        self
    }

    /// A condition the world must reach once faults have healed, beside the built-in
    /// desired-equals-actual: a run that does not reach it within the convergence bound fails
    /// `convergence` with `[name]` and the condition's message.
    pub fn converges_when(
        mut self,
        name: &str,
        check: impl Fn(&View<'_>) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.extensions.convergence.push(Convergence::new(name, check));
        self
    }

    /// Probes the scenario's own controllers can lead to though its workload alone would not
    /// (say, a controller that creates `PhysicalContainer`s in a workload of namespaces only).
    /// A sweep lists a probe as never reached only if some seed could reach it: by default, as
    /// its world, workload and faults allow ([`drydock_sim::probes::reachable`]), which knows
    /// nothing of what a user's controllers create.
    pub fn may_reach(mut self, probes: &[Probe]) -> Self {
        self.extensions.reachable_probes.extend(probes.iter().copied());
        self
    }

    /// Engine processes sharing the store and the runtime (one by default).
    pub fn processes(self, count: usize) -> Self {
        self.configure(move |config| config.processes.count = count)
    }

    /// Start from another world shape (a built-in scenario's, or one's own).
    pub fn world(mut self, make: impl Fn() -> WorldConfig + Send + Sync + 'static) -> Self {
        self.world = Arc::new(make);
        self
    }

    /// Adjust the world: knobs of its components, the store's admission, timeouts.
    pub fn configure(mut self, adjust: impl Fn(&mut WorldConfig) + Send + Sync + 'static) -> Self {
        self.configure.push(Arc::new(adjust));
        self
    }

    /// No faults: every seed runs a calm world.
    pub fn without_faults(mut self) -> Self {
        self.faults = false;
        self
    }

    /// The scenario is built around a known bug: its seeds are expected to fail (a sweep of it
    /// still exits 1; `drydock sim list` says so).
    pub fn expect_failures(mut self) -> Self {
        self.expect_failures = true;
        self
    }

    pub fn build(self) -> Scenario {
        let ScenarioBuilder {
            name,
            description,
            generate,
            world,
            components,
            extensions,
            configure,
            faults,
            expect_failures,
        } = self;
        let make_world = move || {
            let mut config = world();
            for kind in components.kinds() {
                config.registry.register(kind.clone());
            }
            config.extensions.controllers.extend(components.controller_factories().iter().cloned());
            config.extensions.invariants.extend(extensions.invariants.iter().cloned());
            config.extensions.convergence.extend(extensions.convergence.iter().cloned());
            config.extensions.reachable_probes.extend(extensions.reachable_probes.iter().copied());
            for adjust in &configure {
                adjust(&mut config);
            }
            config
        };
        Scenario {
            name,
            description,
            generate: generate.unwrap_or_else(|| Arc::new(|_: &mut ChaCha8Rng| Workload::default())),
            world: Arc::new(make_world),
            faults,
            expect_failures,
            excluded_faults: Vec::new(),
            sized: None,
            size: None,
        }
    }
}
