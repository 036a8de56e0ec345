//! Invariants about what a process knows of the store: its cache, read right after a full list.

use super::named;
use crate::checker::{Happening, HappeningKind, Invariant, Seen, View};

/// A relist replaces what the process knew: right after a process took a full list of the store
/// (its watch broke with 410 Gone, or it started after a crash), its cache holds exactly the
/// objects the list held, by name and uid.
///
/// What it catches, as it happens: a relist merged into the cache instead of replacing it. An
/// object deleted while the watch was broken is in no event the process will ever get (the
/// deletion fell in the watch's gap), so the list is the only news of it: a cache that keeps it
/// keeps a ghost for good. Controllers act on the ghost (an owner that keeps its dependents, a
/// container reconciled for an object that is gone), which only convergence would see, long
/// after, as a world that does not settle. An object of another uid under a listed name (deleted
/// and made again in the gap) is the same ghost.
///
/// Judged against the store as it is at the relist: the world hands the list over in the same
/// step it takes it, so the store is the listed state.
#[derive(Default)]
pub(super) struct RelistForgetsTheUnlisted {
    seen: Seen,
}

impl Invariant for RelistForgetsTheUnlisted {
    named!(RelistForgetsTheUnlisted);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::Relisted]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        let Happening::Relisted { process, cache } = happening else { return };
        for cached in cache.list("*", None) {
            let key = cached.key();
            match view.store.get(&key) {
                None => self.seen.flag(format!(
                    "p{process} relisted and its cache still holds {key} (uid {}), which the list did not hold: a ghost no event will remove",
                    cached.metadata.uid
                )),
                Some(stored) if stored.metadata.uid != cached.metadata.uid => self.seen.flag(format!(
                    "p{process} relisted and its cache holds {key} with uid {}, where the list held uid {}: a ghost under a reused name",
                    cached.metadata.uid, stored.metadata.uid
                )),
                Some(_) => {}
            }
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}
