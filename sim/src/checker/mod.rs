//! The state checker: *always* invariants, evaluated after every event that can change what they
//! read, and the *eventually* properties checked once faults are healed.
//!
//! An invariant is one [`Invariant`]: it checks a [`View`] of the state (store, runtime, the
//! world's [`Facts`], the time), and, if the state alone cannot show a violation (a container
//! created a second time, an owner reference that changed), it observes what happens
//! ([`Happening`]) and keeps its own history. Built-in invariants are listed, with their names and
//! descriptions, in one table ([`InvariantId`]); a [`Checker`] also takes invariants a user
//! supplies.
//!
//! Checkers are oracles: they decide what is right from the workload, the store, the runtime and
//! what happened, never by asking the engine.

mod changes;
mod convergence;
pub mod efficiency;
mod happening;
mod invariants;
mod naming;
mod runs_as_specified;

pub use changes::{Changes, Recorded};
pub use convergence::desired_equals_actual;
pub use happening::{Happening, HappeningKind};
pub use invariants::{InvariantId, builtin};

use crate::facts::{self, Facts};
use crate::logs::Logs;
use crate::runtime::{Journal, SimRuntime};
use drydock_engine::WallTime;
use drydock_engine::store::Store;

/// What a checker may look at: the store, the runtime and the world's facts, never the engine's
/// memory.
pub struct View<'a> {
    pub store: &'a Store,
    pub runtime: &'a SimRuntime,
    pub facts: &'a Facts,
    /// The log hub and the log readers.
    pub logs: &'a Logs,
    /// The world's true wall time.
    pub now: WallTime,
}

impl<'a> View<'a> {
    /// A state on its own: no facts, at time zero.
    pub fn of(store: &'a Store, runtime: &'a SimRuntime) -> Self {
        View { store, runtime, facts: &facts::NONE, logs: &NO_LOGS, now: WallTime(0) }
    }
}

/// No logs and no readers, for a view of a state on its own.
static NO_LOGS: std::sync::LazyLock<Logs> = std::sync::LazyLock::new(Logs::default);

/// A safety property that must hold in every state of every run.
///
/// *Guarantees* (from the world): `observe` is called with every happening of a kind listed by
/// `observes`, in the order they happen, with the view as it is right then (for
/// [`Happening::StoreApplying`], before the request applies; otherwise after); `check` is called
/// after every event that may have changed the store, the runtime or what was observed. The first
/// invariant whose `check` fails ends the run.
pub trait Invariant {
    /// A stable kebab-case name, as reported and listed.
    fn name(&self) -> &str;

    /// What must hold, in one line.
    fn description(&self) -> &str;

    /// The kinds of happenings `observe` wants (none: the invariant reads only the state).
    fn observes(&self) -> &'static [HappeningKind] {
        &[]
    }

    /// Something happened; remember what `check` will need.
    fn observe(&mut self, _view: &View<'_>, _happening: &Happening<'_>) {}

    /// `Err` with a message saying what is wrong, in words.
    fn check(&self, view: &View<'_>) -> Result<(), String>;

    /// The same judgement after `changes`, knowing that it held before them: the world calls
    /// this after every event, `check` only where no history is known (a state on its own). The
    /// default judges the whole state; an invariant whose `check` reads every object overrides
    /// it to look at what changed and what that touches, and must then find every violation
    /// `check` would (`WorldConfig::cross_check` runs both and fails a run where they disagree).
    fn check_changes(&mut self, view: &View<'_>, changes: &Changes<'_>) -> Result<(), String> {
        let _ = changes;
        self.check(view)
    }
}

/// A violation seen as it happened (the state afterwards may not show it): the first one is kept.
#[derive(Clone, Debug, Default)]
pub struct Seen(Option<String>);

impl Seen {
    pub fn flag(&mut self, message: String) {
        self.0.get_or_insert(message);
    }

    pub fn check(&self) -> Result<(), String> {
        self.0.clone().map_or(Ok(()), Err)
    }
}

/// A set of invariants, with each happening routed only to those that observe its kind.
pub struct Checker {
    invariants: Vec<Box<dyn Invariant>>,
    observers: Vec<Vec<usize>>,
    /// The store's resource version at the last [`Checker::check_changes`].
    checked: Option<u64>,
    recorded: Recorded,
}

impl Checker {
    /// The built-in invariants, in table order.
    pub fn builtin() -> Self {
        Checker::new(builtin())
    }

    pub fn new(invariants: Vec<Box<dyn Invariant>>) -> Self {
        let mut observers = vec![Vec::new(); HappeningKind::ALL.len()];
        for (index, invariant) in invariants.iter().enumerate() {
            for kind in invariant.observes() {
                observers[*kind as usize].push(index);
            }
        }
        Checker { invariants, observers, checked: None, recorded: Recorded::default() }
    }

    /// Add an invariant after the others.
    pub fn push(&mut self, invariant: Box<dyn Invariant>) {
        let index = self.invariants.len();
        for kind in invariant.observes() {
            self.observers[*kind as usize].push(index);
        }
        self.invariants.push(invariant);
    }

    pub fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        for index in &self.observers[happening.kind() as usize] {
            self.invariants[*index].observe(view, happening);
        }
    }

    /// The first invariant `view` violates, with its message, judging the whole state.
    pub fn check(&self, view: &View<'_>) -> Option<(&str, String)> {
        self.invariants.iter().find_map(|inv| inv.check(view).err().map(|message| (inv.name(), message)))
    }

    /// The first invariant `view` violates, with its message, judging what changed since the
    /// last call (the store's events since then, and `runtime`: what the runtime journalled):
    /// the first call judges everything.
    pub fn check_changes(&mut self, view: &View<'_>, runtime: &Journal) -> Option<(&str, String)> {
        let since = self.checked.map(|rv| view.store.events_since(rv));
        let (everything, objects) = match since {
            Some(Ok(events)) => (false, events.collect::<Vec<_>>()),
            _ => (true, Vec::new()),
        };
        if everything {
            self.recorded.rebuild(view.store);
        } else {
            for event in &objects {
                self.recorded.follow(event);
            }
        }
        self.checked = Some(view.store.resource_version());
        let changes = Changes { everything, objects, runtime, recorded: &self.recorded };
        for invariant in &mut self.invariants {
            if let Err(message) = invariant.check_changes(view, &changes) {
                return Some((invariant.name(), message));
            }
        }
        None
    }

    pub fn invariants(&self) -> impl Iterator<Item = &dyn Invariant> {
        self.invariants.iter().map(|i| &**i)
    }
}

/// The first built-in invariant a state on its own violates (nothing observed).
pub fn check_all(view: &View<'_>) -> Option<(String, String)> {
    Checker::builtin().check(view).map(|(name, message)| (name.to_string(), message))
}

/// Eventual properties, listed with the invariants by `drydock sim list`.
pub const EVENTUAL: &[(&str, &str)] = &[
    ("convergence", "after faults heal, desired state equals actual state within a bounded simulated time"),
    ("quiescence", "once converged, no object is rewritten while nothing changes (no oscillation at rest)"),
    ("no-oscillation", "after faults heal, no object is written more than 30 times with no client acting"),
    (
        "efficiency",
        "after faults heal, no object causes more than 60 runtime requests or 40 store writes a simulated minute, and no process runs more than 60 reconciles a minute per object (no hot loops)",
    ),
];

#[cfg(test)]
mod tests;
