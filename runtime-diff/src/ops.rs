//! The operations a differential run generates, over a few named slots, and the reference state
//! machine (`proptest-state-machine`) that generates and shrinks their sequences.
//!
//! An operation names slots (`c0`, `n1`, `v0`, `img1`), never ids: the same sequence runs on any
//! runtime, and a shrunk one still means something when an operation before it is deleted. Every
//! operation is valid in every state (a start of a container never created is a `NotFound` both
//! runtimes must agree on), so the reference state only steers generation towards operations
//! that do something; it never has to hold for a shrunk sequence to run.

use proptest::prelude::*;
use proptest_state_machine::ReferenceStateMachine;

/// How many containers, networks, volumes and built images a sequence works with: few enough
/// that operations meet the same objects again, enough for conflicts between them.
pub const CONTAINERS: u8 = 3;
pub const NETWORKS: u8 = 2;
pub const VOLUMES: u8 = 2;
pub const BUILDS: u8 = 2;

/// What a container's main process does. Each has one behaviour on a busybox image that does
/// not depend on timing within a second, so a step's outcome is the same on every run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Program {
    /// The image's default command, `sleep 3600`: PID 1 ignores TERM, so a stop kills it when
    /// the grace period ends (137).
    Default,
    /// `exit N` at once.
    Exit(u8),
    /// Prints a line to each stream, then exits 3.
    Chatty,
    /// Traps TERM and exits 7 on it (within a second: the trap runs after the current `sleep 1`).
    TrapsTerm,
    /// Prints the copied file and the file in its volume (or why not), then exits 0.
    ReadsFiles,
    /// A script of the shell model's reach: a variable, a `for` loop, `printf`, a pipeline,
    /// a file appended to in the container (kept across its starts) and in its volume (shared
    /// with the volume's other containers), each read back; then exits 0.
    Writes,
}

/// Whether a container of `program` on `image` ends by itself (at once): a start waits for it
/// to have ended, so that what follows does not race with it. A built image's default command
/// prints a file and ends.
pub fn ends_by_itself(program: Program, image: ImageChoice) -> bool {
    match program {
        Program::Default => matches!(image, ImageChoice::Built(_)),
        Program::Exit(_) | Program::Chatty | Program::ReadsFiles | Program::Writes => true,
        Program::TrapsTerm => false,
    }
}

/// Where a container's image comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageChoice {
    /// The run's busybox image.
    Base,
    /// The image a `Build` of this slot tagged (missing until one succeeds).
    Built(u8),
}

/// A network a container is put on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetworkChoice {
    Own(u8),
    /// Docker's default `bridge`.
    Bridge,
}

/// A port a container publishes (container port 80/tcp).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortChoice {
    /// Host port 0: the runtime picks one.
    Ephemeral,
    /// The sequence's one fixed host port, which two containers cannot both hold.
    Fixed,
}

/// One step of a sequence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Create {
        c: u8,
        program: Program,
        image: ImageChoice,
        volume: Option<u8>,
        network: Option<NetworkChoice>,
        port: Option<PortChoice>,
    },
    /// A start, and for a program that ends by itself, waiting until it has.
    Start {
        c: u8,
    },
    Stop {
        c: u8,
        timeout_secs: u32,
    },
    Remove {
        c: u8,
        force: bool,
    },
    Inspect {
        c: u8,
    },
    /// The sequence's containers, by its label.
    List,
    /// Container `c`'s events since the sequence began.
    Events {
        c: u8,
    },
    /// What container `c` printed so far.
    Logs {
        c: u8,
    },
    /// A file copied into container `c`, at `/copied/f` or, `into_volume`, under its volume's
    /// mount point.
    Copy {
        c: u8,
        into_volume: bool,
    },
    NetworkCreate {
        n: u8,
    },
    NetworkRemove {
        n: u8,
    },
    NetworkInspect {
        n: u8,
    },
    NetworkList,
    Connect {
        n: NetworkChoice,
        c: u8,
        alias: bool,
    },
    Disconnect {
        n: NetworkChoice,
        c: u8,
    },
    VolumeCreate {
        v: u8,
    },
    VolumeRemove {
        v: u8,
    },
    VolumeInspect {
        v: u8,
    },
    VolumeList,
    /// Build image slot `b` from its context (a step that fails, with `fails`).
    Build {
        b: u8,
        fails: bool,
    },
    ImageInspect {
        b: u8,
    },
    ImageRemove {
        b: u8,
        force: bool,
    },
    /// Two operations issued at once: Docker's outcome must be one the model gives in some
    /// order.
    Together(Box<Op>, Box<Op>),
}

impl Op {
    /// How many runtime operations this step issues.
    pub fn count(&self) -> usize {
        match self {
            Op::Together(a, b) => a.count() + b.count(),
            _ => 1,
        }
    }
}

/// What generation knows about a sequence so far: which slots probably hold something. Only a
/// guide (an operation that failed on a runtime is not undone here).
#[derive(Clone, Debug, Default)]
pub struct Plan {
    containers: [Option<(Program, ImageChoice)>; CONTAINERS as usize],
    /// Started, with a program that does not end by itself.
    running: [bool; CONTAINERS as usize],
    networks: [bool; NETWORKS as usize],
    volumes: [bool; VOLUMES as usize],
}

/// The reference state machine: generates sequences of [`Op`]s that mostly act on what exists,
/// and shrinks them (proptest-state-machine deletes steps, then simplifies each).
pub struct Sequences;

impl ReferenceStateMachine for Sequences {
    type State = Plan;
    type Transition = Op;

    fn init_state() -> BoxedStrategy<Plan> {
        Just(Plan::default()).boxed()
    }

    fn transitions(plan: &Plan) -> BoxedStrategy<Op> {
        let single = single_op(plan);
        // With nothing made yet, most steps make something: a sequence of NotFounds checks little.
        let making = if plan.is_empty() { 12 } else { 2 };
        let pair = (single.clone(), single.clone()).prop_map(|(a, b)| Op::Together(Box::new(a), Box::new(b)));
        let choices = prop_oneof![12 => single.clone(), making => create(plan), 1 => pair];
        let running = plan.running();
        if running.is_empty() {
            return choices.boxed();
        }
        // What runs is stopped now and then, with a grace period, and met by other operations
        // meanwhile.
        let stop = (proptest::sample::select(running), prop_oneof![Just(0u32), Just(2u32)])
            .prop_map(|(c, timeout_secs)| Op::Stop { c, timeout_secs });
        let during = (stop.clone(), single).prop_map(|(a, b)| Op::Together(Box::new(a), Box::new(b)));
        prop_oneof![14 => choices, 2 => stop, 1 => during].boxed()
    }

    fn apply(mut plan: Plan, op: &Op) -> Plan {
        plan.note(op);
        plan
    }
}

impl Plan {
    fn note(&mut self, op: &Op) {
        match op {
            Op::Create { c, program, image, .. } => self.containers[usize::from(*c)] = Some((*program, *image)),
            Op::Start { c } => {
                let lasting =
                    self.containers[usize::from(*c)].is_some_and(|(program, image)| !ends_by_itself(program, image));
                self.running[usize::from(*c)] |= lasting;
            }
            Op::Stop { c, .. } => self.running[usize::from(*c)] = false,
            Op::Remove { c, .. } => {
                self.containers[usize::from(*c)] = None;
                self.running[usize::from(*c)] = false;
            }
            Op::NetworkCreate { n } => self.networks[usize::from(*n)] = true,
            Op::NetworkRemove { n } => self.networks[usize::from(*n)] = false,
            Op::VolumeCreate { v } => self.volumes[usize::from(*v)] = true,
            Op::VolumeRemove { v } => self.volumes[usize::from(*v)] = false,
            Op::Together(a, b) => {
                self.note(a);
                self.note(b);
            }
            _ => {}
        }
    }

    /// Container slots probably running.
    fn running(&self) -> Vec<u8> {
        (0..CONTAINERS).filter(|c| self.running[usize::from(*c)]).collect()
    }

    fn is_empty(&self) -> bool {
        self.containers.iter().all(Option::is_none)
    }

    /// Container slots that hold one (all of them if none does: a step on a missing one is a
    /// fine operation too).
    fn existing_containers(&self) -> Vec<u8> {
        let existing: Vec<u8> = (0..CONTAINERS).filter(|c| self.containers[usize::from(*c)].is_some()).collect();
        if existing.is_empty() { (0..CONTAINERS).collect() } else { existing }
    }

    /// Container slots that hold none (all of them if every one does: a create on a taken name
    /// is a fine operation too).
    fn free_containers(&self) -> Vec<u8> {
        let free: Vec<u8> = (0..CONTAINERS).filter(|c| self.containers[usize::from(*c)].is_none()).collect();
        if free.is_empty() { (0..CONTAINERS).collect() } else { free }
    }

    /// Networks that exist, mostly, and now and then one that does not, or `bridge`.
    fn networks(&self) -> BoxedStrategy<NetworkChoice> {
        let existing: Vec<NetworkChoice> =
            (0..NETWORKS).filter(|n| self.networks[usize::from(*n)]).map(NetworkChoice::Own).collect();
        let any = prop_oneof![3 => (0..NETWORKS).prop_map(NetworkChoice::Own), 1 => Just(NetworkChoice::Bridge)];
        if existing.is_empty() {
            any.boxed()
        } else {
            prop_oneof![3 => proptest::sample::select(existing), 1 => any].boxed()
        }
    }
}

fn single_op(plan: &Plan) -> BoxedStrategy<Op> {
    let any_c = 0..CONTAINERS;
    let known_c = proptest::sample::select(plan.existing_containers());
    let n = 0..NETWORKS;
    let v = 0..VOLUMES;
    let b = 0..BUILDS;
    let network_choice = plan.networks();
    prop_oneof![
        4 => create(plan),
        5 => known_c.clone().prop_map(|c| Op::Start { c }),
        3 => (known_c.clone(), prop_oneof![Just(0u32), Just(2u32)]).prop_map(|(c, timeout_secs)| Op::Stop { c, timeout_secs }),
        3 => (known_c.clone(), any::<bool>()).prop_map(|(c, force)| Op::Remove { c, force }),
        3 => any_c.clone().prop_map(|c| Op::Inspect { c }),
        1 => Just(Op::List),
        2 => known_c.clone().prop_map(|c| Op::Events { c }),
        2 => known_c.clone().prop_map(|c| Op::Logs { c }),
        2 => (known_c.clone(), any::<bool>()).prop_map(|(c, into_volume)| Op::Copy { c, into_volume }),
        2 => n.clone().prop_map(|n| Op::NetworkCreate { n }),
        1 => n.clone().prop_map(|n| Op::NetworkRemove { n }),
        1 => n.prop_map(|n| Op::NetworkInspect { n }),
        1 => Just(Op::NetworkList),
        2 => (network_choice.clone(), known_c.clone(), any::<bool>()).prop_map(|(n, c, alias)| Op::Connect { n, c, alias }),
        1 => (network_choice, known_c).prop_map(|(n, c)| Op::Disconnect { n, c }),
        2 => v.clone().prop_map(|v| Op::VolumeCreate { v }),
        1 => v.clone().prop_map(|v| Op::VolumeRemove { v }),
        1 => v.prop_map(|v| Op::VolumeInspect { v }),
        1 => Just(Op::VolumeList),
        1 => (b.clone(), prop::bool::weighted(0.2)).prop_map(|(b, fails)| Op::Build { b, fails }),
        1 => b.clone().prop_map(|b| Op::ImageInspect { b }),
        1 => (b, any::<bool>()).prop_map(|(b, force)| Op::ImageRemove { b, force }),
    ]
    .boxed()
}

fn create(plan: &Plan) -> BoxedStrategy<Op> {
    let program = prop_oneof![
        4 => Just(Program::Default),
        1 => prop_oneof![Just(0u8), Just(3u8)].prop_map(Program::Exit),
        2 => Just(Program::Chatty),
        2 => Just(Program::TrapsTerm),
        2 => Just(Program::ReadsFiles),
        2 => Just(Program::Writes),
    ];
    let image = prop_oneof![4 => Just(ImageChoice::Base), 1 => (0..BUILDS).prop_map(ImageChoice::Built)];
    let network = prop::option::weighted(0.4, plan.networks());
    let port = prop::option::weighted(0.3, prop_oneof![Just(PortChoice::Ephemeral), Just(PortChoice::Fixed)]);
    let volume = prop::option::weighted(0.4, 0..VOLUMES);
    (proptest::sample::select(plan.free_containers()), program, image, volume, network, port)
        .prop_map(|(c, program, image, volume, network, port)| Op::Create { c, program, image, volume, network, port })
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{RngAlgorithm, TestRng, TestRunner};

    fn sequence(seed: u8, length: usize) -> Vec<Op> {
        let mut runner = TestRunner::new_with_rng(
            proptest::test_runner::Config::default(),
            TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]),
        );
        let tree = Sequences::sequential_strategy(length..=length).new_tree(&mut runner).expect("a sequence");
        tree.current().1
    }

    #[test]
    fn a_seed_gives_the_same_sequence_every_time() {
        assert_eq!(sequence(3, 20), sequence(3, 20));
        assert_ne!(sequence(3, 20), sequence(4, 20));
        assert_eq!(sequence(3, 20).len(), 20);
    }

    #[test]
    fn sequences_cover_every_kind_of_object() {
        let ops: Vec<Op> = (0..20).flat_map(|seed| sequence(seed, 20)).collect();
        let has = |f: fn(&Op) -> bool| ops.iter().any(f);
        assert!(has(|op| matches!(op, Op::Create { .. })));
        assert!(has(|op| matches!(op, Op::Stop { timeout_secs: 2, .. })));
        assert!(has(|op| matches!(op, Op::Together(..))));
        assert!(has(|op| matches!(op, Op::Build { .. })));
        assert!(has(|op| matches!(op, Op::Copy { into_volume: true, .. })));
        assert!(has(|op| matches!(op, Op::Connect { .. })));
        assert!(has(|op| matches!(op, Op::VolumeRemove { .. })));
    }
}
