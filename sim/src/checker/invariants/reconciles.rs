//! Invariants about how an engine runs its reconciles, read from the requests it hands out.

use super::named;
use crate::checker::{Happening, HappeningKind, Invariant, Seen, View};
use drydock_engine::OpId;
use drydock_engine::api::{ObjectKey, Uid};
use drydock_engine::fixed::FixedMap;
use drydock_engine::store::StoreRequest;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// A controller and key in one process (shared with the request's origin, not copied).
type Work = (usize, Arc<str>, Arc<ObjectKey>);

/// Two reconciles of one key by one controller never overlap in one process.
///
/// What "in progress" means, observably: the engine tags every request with the number of the
/// reconcile that issued it ([`Origin`](drydock_engine::Origin)); a reconcile is in progress from
/// its first request until the replies to all its *store* requests were handed back to the
/// process. (Its runtime requests are not waited for: their replies queue a later reconcile, so a
/// runtime request outstanding is no overlap.) A request of another reconcile of the same
/// controller and key while one is in progress is two reconciles running at once: each acts on
/// what it read without the other's writes, which is what the work queue's one-at-a-time
/// guarantee is for.
///
/// Per process life: a crash ends everything in progress (the new life's reconciles start afresh
/// and its requests are numbered anew). Across processes there is no such rule: two engines may
/// act on one key (a namespace not assigned to either, or one whose assignment a stale cache has
/// not shown yet) and contend through resource versions and leases.
#[derive(Default)]
pub(super) struct ReconcilesNeverOverlap {
    /// Per (process, controller, key): the reconcile in progress and its unanswered store requests.
    open: FixedMap<Work, (u64, BTreeSet<OpId>)>,
    /// Per (process, store request): the reconcile it belongs to.
    requests: FixedMap<(usize, OpId), Work>,
    seen: Seen,
}

impl Invariant for ReconcilesNeverOverlap {
    named!(ReconcilesNeverOverlap);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::Requested, HappeningKind::Answered, HappeningKind::Crashed]
    }

    fn observe(&mut self, _view: &View<'_>, happening: &Happening<'_>) {
        match happening {
            Happening::Requested { process, id, origin, store } => {
                let work: Work = (*process, origin.controller.clone(), origin.key.clone());
                // A runtime request of an earlier reconcile may leave later: the engine held it
                // while the runtime was full or its object's earlier change was still inside.
                if let Some((reconcile, outstanding)) = self.open.get(&work)
                    && *reconcile != origin.reconcile
                    && (*store || origin.reconcile > *reconcile)
                    && !outstanding.is_empty()
                {
                    let ids: Vec<String> = outstanding.iter().map(ToString::to_string).collect();
                    self.seen.flag(format!(
                        "p{process} reconcile {} of {} {} sent request {id} while its reconcile {reconcile} still waited for the replies to store requests {}",
                        origin.reconcile,
                        origin.controller,
                        origin.key,
                        ids.join(", ")
                    ));
                }
                if *store {
                    let entry = self.open.entry(work.clone()).or_default();
                    if entry.0 != origin.reconcile {
                        *entry = (origin.reconcile, BTreeSet::new());
                    }
                    entry.1.insert(*id);
                    self.requests.insert((*process, *id), work);
                }
            }
            Happening::Answered { process, id } => {
                let Some(work) = self.requests.swap_remove(&(*process, *id)) else { return };
                if let Some((_, outstanding)) = self.open.get_mut(&work) {
                    outstanding.remove(id);
                    if outstanding.is_empty() {
                        self.open.swap_remove(&work);
                    }
                }
            }
            Happening::Crashed { process } => {
                self.open.retain(|(p, _, _), _| p != process);
                self.requests.retain(|(p, _), _| p != process);
            }
            _ => {}
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

/// Uncached lists one controller may send for one key, in one process, per [`LIST_WINDOW_MS`].
pub const LISTS_PER_WINDOW: u32 = 20;
/// The window [`LISTS_PER_WINDOW`] counts over: 10 s of simulated (wall) time.
pub const LIST_WINDOW_MS: u64 = 10_000;

/// Lists are paced: no controller sends more than [`LISTS_PER_WINDOW`] uncached store lists for
/// one key, in one process, within [`LIST_WINDOW_MS`].
///
/// A list is the most expensive read there is (the API server reads every object of the range
/// from its storage), and a list repeated until the watch catches up is a hot loop that no
/// liveness check sees if the watch catches up before the faults heal. The engine's lists wait
/// for the watch or back off (the namespace cleanup relists every second at most, a logical
/// container's cleanup from 500 ms doubling), so twenty in ten seconds is twice what they need.
/// Checked at all times, faults or not: the loop is named when it happens, by key.
#[derive(Default)]
pub(super) struct ListsPaced {
    /// Store requests handed out and not yet applied: who sent them.
    pending: FixedMap<(usize, OpId), Work>,
    /// Per sender: the window (its index) and the lists sent in it.
    lists: FixedMap<Work, (u64, u32)>,
    seen: Seen,
}

impl Invariant for ListsPaced {
    named!(ListsPaced);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::Requested, HappeningKind::StoreApplying, HappeningKind::Crashed]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        match happening {
            Happening::Requested { process, id, origin, store: true } => {
                self.pending.insert((*process, *id), (*process, origin.controller.clone(), origin.key.clone()));
            }
            Happening::StoreApplying { process, id, request } => {
                let Some(work) = self.pending.swap_remove(&(*process, *id)) else { return };
                let drydock_engine::store::StoreRequest::List { kind, namespace } = request else { return };
                let window = view.now.0 / LIST_WINDOW_MS;
                let count = self.lists.entry(work.clone()).or_insert((window, 0));
                if count.0 != window {
                    *count = (window, 0);
                }
                count.1 += 1;
                if count.1 > LISTS_PER_WINDOW {
                    let (process, controller, key) = &work;
                    let range = format!("{}/{}", kind.as_deref().unwrap_or("*"), namespace.as_deref().unwrap_or("*"));
                    self.seen.flag(format!(
                        "p{process} {controller} sent {} uncached lists for {key} within {} s (the last of {range}): a list loop",
                        count.1,
                        LIST_WINDOW_MS / 1000
                    ));
                }
            }
            Happening::Crashed { process } => {
                self.pending.retain(|(p, _), _| p != process);
                self.lists.retain(|(p, _, _), _| p != process);
            }
            _ => {}
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

/// NotFound is final: a process told that something does not exist never acts on it again in
/// that life. Told, for a runtime container: a reconcile of an object sent a remove of it that
/// was answered NotFound (and the answer handed back); reconciles of that object then send no
/// start, stop or remove for it. (Another object's reconcile may act on a snapshot taken before:
/// the harvester removing what its list showed; one extra remove, no loop.) For a store object:
/// a write of the process to the object's uid (an update, a status update, a delete) was answered
/// NotFound; the process then sends no write to that uid (its cache forgets the object).
///
/// Container ids and uids are never reused, so the answer is the truth for good. A reconcile
/// that takes it for a passing failure retries until something else tells it (a remove retried
/// for ever, and the object whose cleanup waits for it never goes; a write retried from a cache
/// the watch has not corrected yet, by every controller of the object), which only convergence
/// or the work budgets after the heal would see. Only a remove's NotFound tells of a container:
/// Docker answers a start NotFound also when a network the container is attached to is gone (the
/// container stays, and the engine inspects it to learn which), and an inspection of a
/// just-created container can miss it. A write sent before the answer came back is not judged
/// (it crossed the answer). A crash ends what the life was told. The answer to a remove its
/// process gave up on (detached) tells no controller: the engine learns from it only that the
/// remove has left the runtime.
#[derive(Default)]
pub(super) struct NotFoundIsFinal {
    /// Removes sent in their process's current life and not applied yet: (process, op) ->
    /// (the object whose reconcile sent it, container id). (A request of an earlier life may
    /// still apply: its answer tells nobody.)
    removes: FixedMap<(usize, OpId), (ObjectKey, String)>,
    /// Removes the runtime answered NotFound, not yet handed back.
    answered: FixedMap<(usize, OpId), (ObjectKey, String)>,
    /// The last of those settled: its reply is handed back next, if its process is up.
    settled: Option<((usize, OpId), (ObjectKey, String))>,
    /// Per process and object: the containers its reconciles were told do not exist.
    told: BTreeSet<(usize, ObjectKey, String)>,
    /// Store requests handed out and not applied yet: when (in happenings observed).
    sent: FixedMap<(usize, OpId), u64>,
    /// The store write applying now, and the uid it addresses.
    applying: Option<((usize, OpId), Uid)>,
    /// Store writes answered NotFound, not yet handed back: (process, op) -> uid.
    answered_writes: FixedMap<(usize, OpId), Uid>,
    /// Per process and uid it was told is gone: when.
    told_gone: BTreeMap<(usize, Uid), u64>,
    /// Happenings observed so far: the order of sends and answers.
    clock: u64,
    seen: Seen,
}

/// The container a start, stop or remove acts on.
fn acted_on(request: &drydock_engine::runtime::RuntimeRequest) -> Option<&str> {
    use drydock_engine::runtime::RuntimeRequest as R;
    match request {
        R::StartContainer { id } | R::StopContainer { id, .. } | R::RemoveContainer { id, .. } => Some(id),
        _ => None,
    }
}

/// The uid of the existing object a store write addresses, if it names one.
fn written_uid<'a>(view: &View<'a>, request: &'a StoreRequest) -> Option<&'a Uid> {
    match request {
        StoreRequest::Update { object } | StoreRequest::UpdateStatus { object } => Some(&object.metadata.uid),
        StoreRequest::Delete { key, options } => {
            options.precondition_uid.as_ref().or_else(|| view.store.get(key).map(|o| &o.metadata.uid))
        }
        _ => None,
    }
}

impl Invariant for NotFoundIsFinal {
    named!(NotFoundIsFinal);

    fn observes(&self) -> &'static [HappeningKind] {
        &[
            HappeningKind::RuntimeSent,
            HappeningKind::RuntimeApplied,
            HappeningKind::RuntimeSettled,
            HappeningKind::RuntimeDetached,
            HappeningKind::Requested,
            HappeningKind::StoreApplying,
            HappeningKind::StoreApplied,
            HappeningKind::Answered,
            HappeningKind::Crashed,
        ]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        self.clock += 1;
        match happening {
            Happening::RuntimeSent { process, id, request, issuer } => {
                let Some(container) = acted_on(request) else { return };
                let told = (*process, (*issuer).clone(), container.to_string());
                if let drydock_engine::runtime::RuntimeRequest::RemoveContainer { .. } = request {
                    self.removes.insert((*process, *id), (told.1.clone(), told.2.clone()));
                }
                if self.told.contains(&told) {
                    self.seen.flag(format!(
                        "p{process} sent {} for {issuer} (request {id}) after the runtime told it that container {container} does not exist",
                        request.describe()
                    ));
                }
            }
            Happening::RuntimeApplied { process, id, result, .. } => {
                if let Some(container) = self.removes.swap_remove(&(*process, *id))
                    && matches!(result, Err(drydock_engine::runtime::RuntimeError::NotFound(_)))
                {
                    self.answered.insert((*process, *id), container);
                }
            }
            Happening::RuntimeDetached { process, id } => {
                self.removes.swap_remove(&(*process, *id));
                self.answered.swap_remove(&(*process, *id));
            }
            Happening::RuntimeSettled { process, id } => {
                self.removes.swap_remove(&(*process, *id));
                self.settled = self.answered.swap_remove(&(*process, *id)).map(|c| ((*process, *id), c));
            }
            Happening::Requested { process, id, store: true, .. } => {
                self.sent.insert((*process, *id), self.clock);
            }
            Happening::StoreApplying { process, id, request } => {
                self.applying = None;
                let Some(sent) = self.sent.swap_remove(&(*process, *id)) else { return };
                let Some(uid) = written_uid(view, request) else { return };
                if let Some(told) = self.told_gone.get(&(*process, uid.clone()))
                    && *told < sent
                {
                    self.seen.flag(format!(
                        "p{process} sent {} (request {id}) after the store told it that the object with uid {uid} does not exist",
                        request.describe()
                    ));
                }
                self.applying = Some(((*process, *id), uid.clone()));
            }
            Happening::StoreApplied { result, .. } => {
                let applying = self.applying.take();
                if let (Err(e), Some((op, uid))) = (result, applying)
                    && e.is_not_found()
                {
                    self.answered_writes.insert(op, uid);
                }
            }
            Happening::Answered { process, id } => {
                if let Some((op, (issuer, container))) = self.settled.take_if(|(op, _)| *op == (*process, *id)) {
                    self.told.insert((op.0, issuer, container));
                } else if let Some(uid) = self.answered_writes.swap_remove(&(*process, *id)) {
                    self.told_gone.insert((*process, uid), self.clock);
                }
            }
            Happening::Crashed { process } => {
                self.removes.retain(|(p, _), _| p != process);
                self.answered.retain(|(p, _), _| p != process);
                self.told.retain(|(p, _, _)| p != process);
                self.sent.retain(|(p, _), _| p != process);
                self.answered_writes.retain(|(p, _), _| p != process);
                self.told_gone.retain(|(p, _), _| p != process);
            }
            _ => {}
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

/// Runtime requests one object's reconciles may send, in one process, per [`LIST_WINDOW_MS`]:
/// over 1,000 seeds of every scenario and the regression corpus the most was 22 (a network's
/// inspect, list and remove during its namespace's deletion under faults), so about twice that.
pub const RUNTIME_REQUESTS_PER_WINDOW: u32 = 50;

/// Runtime requests are paced: no object's reconciles (or the harvester's passes) send more than
/// [`RUNTIME_REQUESTS_PER_WINDOW`] runtime requests in one process within [`LIST_WINDOW_MS`],
/// faults or not. A retry that does not back off (against a failing or stopped daemon) is a hot
/// loop that the work budgets after the heal never see if it ends before the heal.
#[derive(Default)]
pub(super) struct RuntimeRequestsPaced {
    /// Per process and issuer: the window (its index) and the requests sent in it.
    sent: BTreeMap<(usize, ObjectKey), (u64, u32)>,
    seen: Seen,
}

impl Invariant for RuntimeRequestsPaced {
    named!(RuntimeRequestsPaced);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::RuntimeSent, HappeningKind::Crashed]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        match happening {
            Happening::RuntimeSent { process, request, issuer, .. } => {
                let window = view.now.0 / LIST_WINDOW_MS;
                let count = self.sent.entry((*process, (*issuer).clone())).or_insert((window, 0));
                if count.0 != window {
                    *count = (window, 0);
                }
                count.1 += 1;
                if count.1 > RUNTIME_REQUESTS_PER_WINDOW {
                    self.seen.flag(format!(
                        "p{process} sent {} runtime requests for {issuer} within {} s (the last: {}): a retry loop",
                        count.1,
                        LIST_WINDOW_MS / 1000,
                        request.describe()
                    ));
                }
            }
            Happening::Crashed { process } => self.sent.retain(|(p, _), _| p != process),
            _ => {}
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}
