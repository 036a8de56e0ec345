//! The way out to the runtime: how many requests may be inside it at once, and one change at a
//! time per runtime object, counting the changes the engine gave up waiting for.
//!
//! A reconcile's runtime requests are *held* here until they may go: while
//! [`EngineConfig::max_runtime_in_flight`](super::EngineConfig::max_runtime_in_flight) requests
//! are inside the runtime, and while an earlier change of the same runtime object may still be
//! running in it. A request's timeout starts when it goes, not when it was issued: waiting here
//! is not the runtime being slow.
//!
//! A change the engine stopped waiting for (its timeout) is *detached*, not forgotten: Docker
//! carries on with a request whose client went away, so the change may still land. It keeps its
//! place among those inside, and its object's turn, until the driver reports its reply (it has
//! left the runtime) or, failing that, until
//! [`EngineConfig::detached_patience`](super::EngineConfig::detached_patience) has passed, when
//! the engine cancels it for good. Without this, a runtime that has stopped answering got the
//! same remove again at every timeout, thousands deep.
//!
//! *Guarantees*: at most `limit` requests are sent or detached at any time; a change is never
//! sent while an earlier change of the same object (its [`TurnKey`]) is sent or detached; held
//! requests go in the order they were issued, except that one waiting for its object's turn
//! lets later requests for other objects pass.
//!
//! *Assumptions*: the driver reports a detached request's reply when it comes, with
//! `Input::RuntimeDone` (reports of a request it no longer knows are ignored).
//!
//! *Caveats*: the turn of a container is keyed by the name or id a request names it by: a create
//! by name and a later remove by id are different keys (the remove cannot be sent before the
//! create's reply gave its id, except after a restart, where the runtime's own name lock holds).

use crate::bugs::{self, Bug};
use crate::controller::OpId;
use crate::fixed::FixedMap;
use crate::runtime::{RuntimeObject, RuntimeRequest};
use crate::time::MonoTime;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

/// The runtime object a change acts on, for its turn: its kind and the name or id the request
/// names it by (a connect or disconnect: the network and the container).
pub(super) type TurnKey = (RuntimeObject, String);

/// The turn a request takes, if it takes one: a change of a named runtime object. Reads take
/// none (they can go beside anything), nor do pulls and builds (long by nature, and a lease
/// already keeps them one at a time per image).
pub(super) fn turn_key(request: &RuntimeRequest) -> Option<TurnKey> {
    if !request.changes_world() || is_long(request) {
        return None;
    }
    let (object, _) = request.class();
    let name = match request {
        RuntimeRequest::CreateContainer(create) => create.name.clone(),
        RuntimeRequest::CreateNetwork(create) => create.name.clone(),
        RuntimeRequest::CreateVolume(create) => create.name.clone(),
        RuntimeRequest::ConnectNetwork { network, container, .. }
        | RuntimeRequest::DisconnectNetwork { network, container } => format!("{network}\u{0}{container}"),
        other => other.target()?.to_string(),
    };
    Some((object, name))
}

/// Pulls and builds: they take minutes by nature and have their own timeout.
pub(super) fn is_long(request: &RuntimeRequest) -> bool {
    matches!(request, RuntimeRequest::PullImage { .. } | RuntimeRequest::BuildImage(_))
}

/// A request waiting to go.
#[derive(Debug)]
pub(super) struct Held<T> {
    pub id: OpId,
    pub turn: Option<TurnKey>,
    pub item: T,
}

/// A request given up on that may still run inside the runtime: its turn, when it is given up
/// for good, and what the engine keeps of it (`D`).
#[derive(Debug)]
struct Detached<D> {
    turn: Option<TurnKey>,
    abandon_at: MonoTime,
    item: D,
}

/// What [`Gate::cancel`] did with a request.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Cancelled {
    /// It was still held: it never went, and nothing needs saying.
    WasHeld,
    /// It went and may still change the world: the driver lets it finish and reports its reply.
    Detached,
    /// It went: the driver may drop it.
    Dropped,
    /// The gate does not know it.
    Unknown,
}

/// What [`Gate::answered`] found a reply to be for.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Answer<D> {
    /// A request sent and waited for.
    Awaited,
    /// A request the engine had stopped waiting for (what the engine kept of it): it has now
    /// left the runtime.
    Detached(D),
    Unknown,
}

/// The requests held, sent and detached (see the module's doc). `T` is what a held request
/// carries until it goes, `D` what the engine keeps of a detached one.
#[derive(Debug)]
pub(super) struct Gate<T, D> {
    limit: usize,
    patience: Duration,
    held: VecDeque<Held<T>>,
    /// Requests sent and not answered, cancelled or detached, with their turn.
    sent: FixedMap<OpId, Option<TurnKey>>,
    /// Requests given up on that may still run inside the runtime.
    detached: FixedMap<OpId, Detached<D>>,
    /// When each detached request is given up for good.
    abandon_at: BTreeSet<(MonoTime, OpId)>,
    /// Turns taken, by the request holding each.
    turns: BTreeMap<TurnKey, OpId>,
    /// Something was held, or a place or a turn came free, since the held queue was looked at.
    changed: bool,
    peak_inside: usize,
}

impl<T, D> Gate<T, D> {
    pub fn new(limit: usize, patience: Duration) -> Self {
        Gate {
            limit: limit.max(1),
            patience,
            held: VecDeque::new(),
            sent: FixedMap::default(),
            detached: FixedMap::default(),
            abandon_at: BTreeSet::new(),
            turns: BTreeMap::new(),
            changed: false,
            peak_inside: 0,
        }
    }

    /// Requests sent or detached: what may be inside the runtime.
    pub fn inside(&self) -> usize {
        self.sent.len() + self.detached.len()
    }

    /// The most requests that were ever inside at once.
    pub fn peak_inside(&self) -> usize {
        self.peak_inside
    }

    pub fn held(&self) -> usize {
        self.held.len()
    }

    pub fn detached(&self) -> usize {
        self.detached.len()
    }

    /// Queue a request to go when it may.
    pub fn hold(&mut self, id: OpId, turn: Option<TurnKey>, item: T) {
        self.held.push_back(Held { id, turn, item });
        self.changed = true;
    }

    /// The next held request that may go now, if any; it counts as sent from here on.
    pub fn next_to_send(&mut self) -> Option<Held<T>> {
        if !self.changed {
            return None;
        }
        if self.inside() >= self.limit && !bugs::on(Bug::RuntimeBoundIgnored) {
            self.changed = false;
            return None;
        }
        let turn_free = |h: &Held<T>| {
            h.turn.as_ref().is_none_or(|t| !self.turns.contains_key(t)) || bugs::on(Bug::ChangeSentBesideItsCopy)
        };
        let Some(index) = self.held.iter().position(turn_free) else {
            self.changed = false;
            return None;
        };
        let held = self.held.remove(index)?;
        if let Some(turn) = &held.turn {
            self.turns.insert(turn.clone(), held.id);
        }
        self.sent.insert(held.id, held.turn.clone());
        self.peak_inside = self.peak_inside.max(self.inside());
        Some(held)
    }

    /// The reply to `id` came.
    pub fn answered(&mut self, id: OpId) -> Answer<D> {
        if let Some(turn) = self.sent.swap_remove(&id) {
            self.free(id, turn);
            Answer::Awaited
        } else if let Some(detached) = self.detached.swap_remove(&id) {
            self.abandon_at.remove(&(detached.abandon_at, id));
            self.free(id, detached.turn);
            Answer::Detached(detached.item)
        } else {
            Answer::Unknown
        }
    }

    /// The engine stops waiting for `id` at `now`. `detach`: it may still change the world, so
    /// (if it went) it keeps its place until it is answered or abandoned, with what the engine
    /// keeps of it.
    pub fn cancel(&mut self, now: MonoTime, id: OpId, detach: Option<D>) -> Cancelled {
        if let Some(index) = self.held.iter().position(|h| h.id == id) {
            self.held.remove(index);
            return Cancelled::WasHeld;
        }
        let Some(turn) = self.sent.swap_remove(&id) else { return Cancelled::Unknown };
        if let Some(item) = detach {
            let abandon_at = now + self.patience;
            self.detached.insert(id, Detached { turn, abandon_at, item });
            self.abandon_at.insert((abandon_at, id));
            Cancelled::Detached
        } else {
            self.free(id, turn);
            Cancelled::Dropped
        }
    }

    /// Detached requests whose patience ran out by `now`, with what the engine kept of them:
    /// given up for good, their places freed.
    pub fn abandon_due(&mut self, now: MonoTime) -> Vec<(OpId, D)> {
        let mut due = Vec::new();
        while let Some(&(at, id)) = self.abandon_at.first()
            && at <= now
        {
            self.abandon_at.pop_first();
            if let Some(detached) = self.detached.swap_remove(&id) {
                self.free(id, detached.turn);
                due.push((id, detached.item));
            }
        }
        due
    }

    /// When the next detached request is given up for good.
    pub fn next_abandon(&self) -> Option<MonoTime> {
        self.abandon_at.first().map(|(at, _)| *at)
    }

    fn free(&mut self, id: OpId, turn: Option<TurnKey>) {
        if let Some(turn) = turn
            && self.turns.get(&turn) == Some(&id)
        {
            self.turns.remove(&turn);
        }
        self.changed = true;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn key(name: &str) -> Option<TurnKey> {
        Some((RuntimeObject::Container, name.to_string()))
    }

    fn drain(gate: &mut Gate<(), &'static str>) -> Vec<u64> {
        std::iter::from_fn(|| gate.next_to_send()).map(|h| h.id.0).collect()
    }

    #[test]
    fn at_most_the_limit_go_and_an_answer_lets_the_next_one_go() {
        let mut gate = Gate::new(2, Duration::from_secs(60));
        for id in 1..=4 {
            gate.hold(OpId(id), None, ());
        }
        assert_eq!(drain(&mut gate), [1, 2]);
        assert_eq!(gate.answered(OpId(1)), Answer::Awaited);
        assert_eq!(drain(&mut gate), [3]);
        assert_eq!((gate.inside(), gate.held(), gate.peak_inside()), (2, 1, 2));
    }

    #[test]
    fn a_change_waits_for_its_objects_turn_and_lets_others_pass() {
        let mut gate = Gate::new(8, Duration::from_secs(60));
        gate.hold(OpId(1), key("a"), ());
        gate.hold(OpId(2), key("a"), ());
        gate.hold(OpId(3), key("b"), ());
        gate.hold(OpId(4), None, ());
        assert_eq!(drain(&mut gate), [1, 3, 4]);
        gate.answered(OpId(1));
        assert_eq!(drain(&mut gate), [2]);
    }

    #[test]
    fn a_detached_change_keeps_its_place_and_turn_until_answered_or_abandoned() {
        let at = |ms| MonoTime::from_duration(Duration::from_millis(ms));
        let mut gate = Gate::new(1, Duration::from_secs(60));
        gate.hold(OpId(1), key("a"), ());
        assert_eq!(drain(&mut gate), [1]);
        assert_eq!(gate.cancel(at(30_000), OpId(1), Some("first")), Cancelled::Detached);
        gate.hold(OpId(2), key("a"), ());
        assert_eq!(drain(&mut gate), Vec::<u64>::new(), "the retry waits for the first copy");
        assert_eq!(gate.next_abandon(), Some(at(90_000)));
        assert!(gate.abandon_due(at(89_999)).is_empty());
        assert_eq!(gate.abandon_due(at(90_000)), [(OpId(1), "first")]);
        assert_eq!(drain(&mut gate), [2]);
        assert_eq!(gate.answered(OpId(1)), Answer::Unknown, "a reply after it was abandoned is nobody's");
        assert_eq!(gate.cancel(at(90_001), OpId(2), Some("retry")), Cancelled::Detached);
        assert_eq!(gate.answered(OpId(2)), Answer::Detached("retry"));
        assert_eq!((gate.inside(), gate.next_abandon()), (0, None));
    }

    #[test]
    fn a_held_request_cancelled_never_goes_and_a_dropped_one_frees_its_place() {
        let mut gate = Gate::new(1, Duration::from_secs(60));
        gate.hold(OpId(1), None, ());
        gate.hold(OpId(2), None, ());
        assert_eq!(drain(&mut gate), [1]);
        assert_eq!(gate.cancel(MonoTime::ZERO, OpId(2), None), Cancelled::WasHeld);
        assert_eq!(gate.cancel(MonoTime::ZERO, OpId(1), None), Cancelled::Dropped);
        gate.hold(OpId(3), None, ());
        assert_eq!(drain(&mut gate), [3]);
    }
}
