//! Invariants about how an engine runs its reconciles, read from the requests it hands out.

use super::named;
use crate::checker::{Happening, HappeningKind, Invariant, Seen, View};
use drydock_engine::OpId;
use drydock_engine::api::ObjectKey;
use drydock_engine::fixed::FixedMap;
use std::collections::BTreeSet;
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
                if let Some((reconcile, outstanding)) = self.open.get(&work)
                    && *reconcile != origin.reconcile
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
