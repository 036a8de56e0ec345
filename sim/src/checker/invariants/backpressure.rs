//! Invariants about how an engine treats the runtime under load, read from the requests it
//! sends and what the daemon did with them.

use super::named;
use crate::checker::{Happening, HappeningKind, Invariant, Seen, View};

/// Each process keeps at most its bound of runtime requests inside the runtime.
///
/// *Counted*: every runtime request a process sent, from the moment it leaves the process until
/// its reply came back, it was cancelled, or its process died; a request the process gave up
/// on but let finish (detached) counts until its reply comes, since it may still run inside the
/// daemon. A runtime that slows down under load otherwise gets every request its clients have,
/// each holding a connection until its timeout.
#[derive(Default)]
pub(super) struct RuntimeRequestsBounded {
    seen: Seen,
}

impl Invariant for RuntimeRequestsBounded {
    named!(RuntimeRequestsBounded);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::RuntimeSent]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        let Happening::RuntimeSent { process, id, .. } = happening else { return };
        let Some(bound) = view.facts.runtime_bound else { return };
        let inside = view.facts.in_flight.count(*process);
        if inside > bound {
            self.seen.flag(format!(
                "p{process} sent runtime request {id} with {} others inside the runtime: its bound is {bound}",
                inside - 1
            ));
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

/// No process sends a change while an earlier copy of it may still be running inside the
/// daemon: the same verb on the same runtime object (the sim's own reading of a request, see
/// [`change_of`](crate::facts::change_of)) from the same process, not yet applied, or applied
/// and still running (a stop waiting for its process, a removal in progress).
///
/// A client that resends a remove at each timeout while the first is stuck inside a struggling
/// Docker piles thousands of them up in it; and a create resent beside its first copy races it
/// for the name. Across processes there is no such rule: two engines cannot see each other's
/// requests.
#[derive(Default)]
pub(super) struct ChangeNotResentWhileRunning {
    seen: Seen,
}

impl Invariant for ChangeNotResentWhileRunning {
    named!(ChangeNotResentWhileRunning);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::RuntimeSent]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        let Happening::RuntimeSent { process, id, .. } = happening else { return };
        let in_flight = &view.facts.in_flight;
        let Some(change) = in_flight.get(*process, *id).and_then(|sent| sent.change.clone()) else { return };
        let earlier =
            in_flight.making(*process, &change).find(|(other, sent)| other != id && sent.may_run_at(view.now));
        if let Some((other, sent)) = earlier {
            let (verb, object) = &change;
            let state = if sent.applied { "still running inside the daemon" } else { "not applied yet" };
            let given_up = if sent.detached { ", given up on by its process" } else { "" };
            self.seen.flag(format!(
                "p{process} sent {verb} {object} as {id} while its earlier copy {other} was {state}{given_up}"
            ));
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}
