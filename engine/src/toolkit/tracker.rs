//! [`OpTracker`]: the operations a controller has in flight, one per object, and what it keeps
//! about each object between reconciles.
//!
//! A controller embeds one tracker (as it embeds a [`crate::lease::LeaseClient`]). A reconcile
//! asks it for the object's entry, returns early while the entry is busy or waiting, and otherwise
//! starts at most one operation through it; the reply, handed to `on_store_result` or
//! `on_runtime_result`, is routed back to the entry with [`OpTracker::claim`]. The tracker owns
//! the routing of its op ids and never waits.
//!
//! *Guarantees*
//! - At most one tracked operation per object is in flight: starting one replaces the entry's
//!   in-flight op (a controller checks [`Tracked::blocked`] first, so there is none).
//! - [`OpTracker::claim`] hands out a reply only if its op is the current in-flight op of a live
//!   entry, and only once: replies to replaced, cancelled or unknown ops, and to ops of
//!   forgotten objects, are ignored (`None`).
//! - [`OpTracker::forget`] drops the entries of a key but keeps one whose op is still in flight,
//!   so its reply is still claimed (a controller forgets a key when its object is gone from the
//!   cache, which a stale cache can make look true for a moment).
//! - Nothing here reads a clock or draws randomness: times come from the [`Context`] or the
//!   caller, and iteration is in uid order.
//!
//! *Assumptions*: entries are keyed by uid, which the store never reuses; the key of a uid never
//! changes. Op ids are unique within an engine (the engine allocates them).
//!
//! *Caveats*: entries live in memory only. After a crash the controller starts with an empty
//! tracker and must rebuild from the store and the runtime. An entry whose object is never
//! reconciled again once gone (no further event for its key) stays until the key is forgotten.

use super::retry::RetryGate;
use crate::api::{Object, ObjectKey, Uid};
use crate::controller::{Action, Context, OpId};
use crate::fixed::FixedMap;
use crate::runtime::RuntimeRequest;
use crate::store::StoreRequest;
use crate::time::MonoTime;
use std::collections::BTreeSet;

/// Whether an operation is a store request or a runtime request.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RequestKind {
    Store,
    Runtime,
}

/// An operation in flight: its id, the controller's name for it, and when it was issued.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InFlight<Op> {
    pub id: OpId,
    pub op: Op,
    pub kind: RequestKind,
    pub issued_at: MonoTime,
}

/// What a controller tracks for one object: its in-flight op, its retry gate and the
/// controller's own state `S`.
#[derive(Debug)]
pub struct Tracked<Op, S> {
    uid: Uid,
    key: ObjectKey,
    in_flight: Option<InFlight<Op>>,
    /// Failures in a row per operation kind, and the time before which no new operation starts.
    pub retry: RetryGate<Op>,
    /// The controller's own per-object state.
    pub state: S,
}

impl<Op, S> Tracked<Op, S> {
    pub fn uid(&self) -> &Uid {
        &self.uid
    }

    pub fn key(&self) -> &ObjectKey {
        &self.key
    }

    pub fn in_flight(&self) -> Option<&InFlight<Op>> {
        self.in_flight.as_ref()
    }

    /// Whether an operation is in flight.
    pub fn is_busy(&self) -> bool {
        self.in_flight.is_some()
    }

    /// What a reconcile should return instead of doing anything at `now`: `Action::done()` while
    /// an operation is in flight (its reply reconciles the key again), `Action::retry_after` the
    /// rest of the wait while the retry gate holds. `None` when the object may proceed.
    pub fn blocked(&self, now: MonoTime) -> Option<Action> {
        if self.is_busy() {
            return Some(Action::done());
        }
        self.retry.retry_action(now)
    }
}

/// The tracker. `Op` is the controller's own enum of operation kinds; `S` its per-object state.
#[derive(Debug)]
pub struct OpTracker<Op, S> {
    /// The entries by uid: hashed, looked up several times per reconcile. Their order is
    /// restored (sorted by uid) before anything iterates them.
    objects: FixedMap<Uid, Tracked<Op, S>>,
    /// Which object each op in flight belongs to.
    routes: FixedMap<OpId, Uid>,
    /// The entries of each key (more than one while an earlier object of that name still has an
    /// op in flight), in uid order.
    by_key: FixedMap<ObjectKey, BTreeSet<Uid>>,
}

impl<Op, S> Default for OpTracker<Op, S> {
    fn default() -> Self {
        OpTracker { objects: FixedMap::default(), routes: FixedMap::default(), by_key: FixedMap::default() }
    }
}

impl<Op, S> OpTracker<Op, S> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Objects tracked.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    pub fn get(&self, uid: &Uid) -> Option<&Tracked<Op, S>> {
        self.objects.get(uid)
    }

    pub fn get_mut(&mut self, uid: &Uid) -> Option<&mut Tracked<Op, S>> {
        self.objects.get_mut(uid)
    }

    /// The entry of `object`, created with state `init()` if it has none.
    pub fn entry_with(&mut self, object: &Object, init: impl FnOnce() -> S) -> &mut Tracked<Op, S> {
        let uid = &object.metadata.uid;
        let by_key = &mut self.by_key;
        self.objects.entry(uid.clone()).or_insert_with(|| {
            let key = object.key();
            by_key.entry(key.clone()).or_default().insert(uid.clone());
            Tracked { uid: uid.clone(), key, in_flight: None, retry: RetryGate::default(), state: init() }
        })
    }

    /// The entry of `object`, created with the default state if it has none.
    pub fn entry(&mut self, object: &Object) -> &mut Tracked<Op, S>
    where
        S: Default,
    {
        self.entry_with(object, S::default)
    }

    /// The entries of `key` (more than one while an earlier object of that name still has an op
    /// in flight).
    /// (A scan of every entry: [`OpTracker::for_key_each`] looks them up instead.)
    pub fn for_key_mut<'a>(&'a mut self, key: &'a ObjectKey) -> impl Iterator<Item = &'a mut Tracked<Op, S>> + 'a {
        self.iter_mut().filter(move |t| t.key == *key)
    }

    /// Call `f` with each entry of `key`, in uid order (looked up, not scanned).
    pub fn for_key_each(&mut self, key: &ObjectKey, mut f: impl FnMut(&mut Tracked<Op, S>)) {
        let Some(uids) = self.by_key.get(key) else { return };
        for uid in uids {
            if let Some(tracked) = self.objects.get_mut(uid) {
                f(tracked);
            }
        }
    }

    /// Every entry, in uid order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Tracked<Op, S>> {
        self.objects.sort_unstable_keys();
        self.objects.values_mut()
    }

    /// Ask the runtime for `request` as operation `op` of the object `uid`, through `ctx`.
    /// Returns the op id, or `None` (and issues nothing) if `uid` has no entry.
    pub fn start_runtime(&mut self, ctx: &mut Context<'_>, uid: &Uid, op: Op, request: RuntimeRequest) -> Option<OpId> {
        self.start(ctx, uid, op, RequestKind::Runtime, |ctx| ctx.runtime(request))
    }

    /// Ask the store for `request` as operation `op` of the object `uid`, through `ctx`.
    /// Returns the op id, or `None` (and issues nothing) if `uid` has no entry.
    pub fn start_store(&mut self, ctx: &mut Context<'_>, uid: &Uid, op: Op, request: StoreRequest) -> Option<OpId> {
        self.start(ctx, uid, op, RequestKind::Store, |ctx| ctx.store(request))
    }

    fn start(
        &mut self,
        ctx: &mut Context<'_>,
        uid: &Uid,
        op: Op,
        kind: RequestKind,
        issue: impl FnOnce(&mut Context<'_>) -> OpId,
    ) -> Option<OpId> {
        let Some(tracked) = self.objects.get_mut(uid) else {
            tracing::warn!(%uid, "operation for an untracked object: not issued");
            return None;
        };
        let id = issue(ctx);
        tracked.in_flight = Some(InFlight { id, op, kind, issued_at: ctx.now().mono });
        self.routes.insert(id, uid.clone());
        Some(id)
    }

    /// The entry whose current in-flight op is `id`, with that op, which is no longer in flight.
    /// `None` for any other reply: it is not this tracker's, or it is stale.
    pub fn claim(&mut self, id: OpId) -> Option<(InFlight<Op>, &mut Tracked<Op, S>)> {
        let uid = self.routes.swap_remove(&id)?;
        let tracked = self.objects.get_mut(&uid)?;
        let in_flight = tracked.in_flight.take_if(|f| f.id == id)?;
        Some((in_flight, tracked))
    }

    /// Cancel the in-flight runtime op of `uid` through `ctx`: no reply will be claimed for it.
    /// A store op cannot be cancelled and stays in flight. Returns the cancelled op.
    pub fn cancel(&mut self, ctx: &mut Context<'_>, uid: &Uid) -> Option<InFlight<Op>> {
        let tracked = self.objects.get_mut(uid)?;
        let cancelled = tracked.in_flight.take_if(|f| f.kind == RequestKind::Runtime)?;
        ctx.cancel(cancelled.id);
        self.routes.swap_remove(&cancelled.id);
        Some(cancelled)
    }

    /// Drop the entries of `key` that have no operation in flight.
    pub fn forget(&mut self, key: &ObjectKey) {
        let Some(uids) = self.by_key.get_mut(key) else { return };
        uids.retain(|uid| {
            let idle = self.objects.get(uid).is_none_or(|t| t.in_flight.is_none());
            if idle {
                self.objects.swap_remove(uid);
            }
            !idle
        });
        if uids.is_empty() {
            self.by_key.swap_remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::controller::Issued;
    use crate::toolkit::RetryPolicy;
    use crate::toolkit::testing::{Harness, widget};
    use std::time::Duration;

    #[derive(Copy, Clone, Debug, PartialEq, Eq)]
    enum Op {
        Inspect,
        Read,
    }

    type Tracker = OpTracker<Op, u32>;

    fn inspect(name: &str) -> RuntimeRequest {
        RuntimeRequest::InspectContainer { id: name.into() }
    }

    /// Start an inspect for `object` at `ms`; returns its id.
    fn start(h: &mut Harness, tracker: &mut Tracker, object: &Object, ms: u64) -> OpId {
        tracker.entry(object);
        let (id, _) = h.run(ms, |ctx| tracker.start_runtime(ctx, &object.metadata.uid, Op::Inspect, inspect("x")));
        id.unwrap()
    }

    #[test]
    fn a_reply_is_claimed_once_by_the_object_whose_op_it_is() {
        let (mut h, mut tracker) = (Harness::default(), Tracker::new());
        let (a, b) = (widget("a"), widget("b"));
        let op_a = start(&mut h, &mut tracker, &a, 5);
        let op_b = start(&mut h, &mut tracker, &b, 7);
        assert!(tracker.get(&a.metadata.uid).unwrap().is_busy());

        let (done, tracked) = tracker.claim(op_b).unwrap();
        assert_eq!((done.op, done.kind, done.issued_at), (Op::Inspect, RequestKind::Runtime, MonoTime(7_000_000)));
        assert_eq!(tracked.key(), &b.key());
        tracked.state = 42;
        assert!(!tracked.is_busy());
        assert!(tracker.claim(op_b).is_none(), "claimed once");
        assert!(tracker.claim(OpId(999)).is_none(), "not ours");
        assert!(tracker.get(&a.metadata.uid).unwrap().is_busy(), "a's op is still in flight");
        assert_eq!(tracker.claim(op_a).unwrap().1.uid(), &a.metadata.uid);
        assert_eq!(tracker.get(&b.metadata.uid).unwrap().state, 42);
    }

    #[test]
    fn the_reply_to_a_replaced_op_is_ignored() {
        let (mut h, mut tracker) = (Harness::default(), Tracker::new());
        let a = widget("a");
        let first = start(&mut h, &mut tracker, &a, 1);
        let second = start(&mut h, &mut tracker, &a, 2);
        assert!(tracker.claim(first).is_none());
        assert_eq!(tracker.claim(second).unwrap().0.id, second);
    }

    #[test]
    fn store_ops_are_tracked_like_runtime_ops() {
        let (mut h, mut tracker) = (Harness::default(), Tracker::new());
        let a = widget("a");
        tracker.entry(&a);
        let request = StoreRequest::Get { key: a.key() };
        let (id, issued) = h.run(3, |ctx| tracker.start_store(ctx, &a.metadata.uid, Op::Read, request));
        assert!(matches!(issued[..], [Issued::Store(i, StoreRequest::Get { .. })] if Some(i) == id));
        let (done, _) = tracker.claim(id.unwrap()).unwrap();
        assert_eq!((done.op, done.kind), (Op::Read, RequestKind::Store));
    }

    #[test]
    fn nothing_is_issued_for_an_untracked_object() {
        let (mut h, mut tracker) = (Harness::default(), Tracker::new());
        let (id, issued) = h.run(1, |ctx| tracker.start_runtime(ctx, &Uid("nobody".into()), Op::Inspect, inspect("x")));
        assert_eq!(id, None);
        assert!(issued.is_empty());
    }

    #[test]
    fn forget_keeps_an_object_whose_op_is_in_flight_until_its_reply() {
        let (mut h, mut tracker) = (Harness::default(), Tracker::new());
        let (a, b) = (widget("a"), widget("b"));
        let op = start(&mut h, &mut tracker, &a, 1);
        tracker.entry(&b);
        tracker.forget(&a.key());
        tracker.forget(&b.key());
        assert_eq!(tracker.len(), 1, "b is forgotten, a is not");
        assert!(tracker.claim(op).is_some(), "the reply still reaches a");
        tracker.forget(&a.key());
        assert!(tracker.is_empty());
    }

    #[test]
    fn the_reply_to_an_op_of_a_forgotten_object_is_ignored() {
        let (mut h, mut tracker) = (Harness::default(), Tracker::new());
        let a = widget("a");
        let op = start(&mut h, &mut tracker, &a, 1);
        let ((), _) = h.run(2, |ctx| assert!(tracker.cancel(ctx, &a.metadata.uid).is_some()));
        tracker.forget(&a.key());
        tracker.entry(&a);
        assert!(tracker.claim(op).is_none());
    }

    #[test]
    fn cancel_stops_the_runtime_op_and_leaves_a_store_op_in_flight() {
        let (mut h, mut tracker) = (Harness::default(), Tracker::new());
        let a = widget("a");
        let op = start(&mut h, &mut tracker, &a, 1);
        let (cancelled, issued) = h.run(2, |ctx| tracker.cancel(ctx, &a.metadata.uid));
        assert_eq!(cancelled.unwrap().id, op);
        assert!(matches!(issued[..], [Issued::Cancel(id)] if id == op));
        assert!(tracker.claim(op).is_none(), "no reply is claimed for a cancelled op");

        let request = StoreRequest::Get { key: a.key() };
        let (read, _) = h.run(3, |ctx| tracker.start_store(ctx, &a.metadata.uid, Op::Read, request));
        let (cancelled, issued) = h.run(4, |ctx| tracker.cancel(ctx, &a.metadata.uid));
        assert!(cancelled.is_none() && issued.is_empty());
        assert!(tracker.claim(read.unwrap()).is_some());
    }

    #[test]
    fn blocked_while_busy_or_backing_off() {
        let (mut h, mut tracker) = (Harness::default(), Tracker::new());
        let a = widget("a");
        let policy = RetryPolicy::fixed(Duration::from_millis(500));
        let op = start(&mut h, &mut tracker, &a, 1_000);
        let now = MonoTime(1_000 * 1_000_000);
        assert_eq!(tracker.get(&a.metadata.uid).unwrap().blocked(now), Some(Action::done()));
        let (_, tracked) = tracker.claim(op).unwrap();
        assert_eq!(
            tracked.retry.fail(Op::Inspect, now, &policy),
            crate::toolkit::Retry::After(Duration::from_millis(500))
        );
        assert_eq!(
            tracked.blocked(now + Duration::from_millis(100)),
            Some(Action::retry_after(Duration::from_millis(400)))
        );
        assert_eq!(tracked.blocked(now + Duration::from_millis(500)), None);
    }

    #[test]
    fn an_entry_is_created_once_and_keeps_its_state() {
        let mut tracker = Tracker::new();
        let a = widget("a");
        tracker.entry_with(&a, || 7).state += 1;
        assert_eq!(tracker.entry_with(&a, || unreachable!("exists")).state, 8);
        assert_eq!(tracker.for_key_mut(&a.key()).count(), 1);
        assert_eq!(tracker.for_key_mut(&widget("b").key()).count(), 0);
    }
}
