//! [`Finalizer`]: keep an object in the store until the controller has undone what it did for it,
//! in the spirit of kube-runtime's `finalizer`.
//!
//! [`Finalizer::reconcile`] looks at the object and runs one step:
//!
//! | the object                              | step                                               |
//! |-----------------------------------------|----------------------------------------------------|
//! | live, without the finalizer             | add it (one update) and wait for its event         |
//! | live, with the finalizer                | the controller's apply step                        |
//! | deleting, with the finalizer            | the cleanup step; when it reports [`Cleanup::Done`], remove the finalizer (one update) |
//! | deleting, without the finalizer         | nothing (or the cleanup step: [`Finalizer::always_clean_up`]) |
//!
//! *Guarantees*
//! - The apply step never runs on an object without the finalizer (unless the store adds it:
//!   [`Finalizer::added_by_store`]), so everything apply did is seen by a cleanup step before the
//!   object can go.
//! - The finalizer is removed only in the reconcile in which cleanup reported `Done`, and only by
//!   an update whose precondition is the resource version cleanup looked at: if the object
//!   changed meanwhile the update fails and the key is reconciled again.
//! - It never waits: the add and the removal are store requests issued through the [`Context`],
//!   whose results come back as events.
//! - The cleanup step does not run while a change the controller sent for the object and gave up
//!   on may still run inside the runtime ([`Context::detached_changes`]): a create the runtime is
//!   slow to make could land after cleanup found nothing to undo.
//!
//! *Assumptions*: only this controller adds or removes this finalizer. The store rejects adding a
//! finalizer to an object already being deleted, so an add racing a delete fails and is retried
//! as a cleanup.
//!
//! *Caveats*: an object deleted before the finalizer was added goes without a cleanup step; apply
//! has not run for it (in this life of the engine: an earlier life may have, which is why
//! runtime-facing controllers also label what they create).

use super::without_finalizer;
use crate::api::Object;
use crate::controller::{Action, Context, ReconcileError, ReconcileResult};
use crate::store::StoreRequest;

/// How long after a change given up on has left the runtime the cleanup step still waits: as
/// long as the physical containers' controller lets an uncertain create settle.
pub const DETACHED_SETTLE: std::time::Duration = std::time::Duration::from_secs(10);

/// What a cleanup step reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cleanup {
    /// Nothing is left to undo: the finalizer may go.
    Done,
    /// Still undoing (an operation in flight, a wait): keep the finalizer, and do this.
    Waiting(Action),
}

/// One finalizer and how the controller owning it uses it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Finalizer<'a> {
    name: &'a str,
    added_by_store: bool,
    always_clean_up: bool,
}

impl<'a> Finalizer<'a> {
    /// The finalizer `name`, added before apply and cleaned up while present (kube-runtime's
    /// semantics).
    pub const fn new(name: &'a str) -> Self {
        Finalizer { name, added_by_store: false, always_clean_up: false }
    }

    /// The kind's registry puts the finalizer on every new object
    /// ([`crate::store::KindInfo::with_finalizer`]), so nobody races to add it: never add it here,
    /// and run apply whether or not the object carries it.
    pub const fn added_by_store(self) -> Self {
        Finalizer { added_by_store: true, ..self }
    }

    /// Run the cleanup step for every deleting object, also one that no longer carries the
    /// finalizer: for cleanup that concerns this engine's own state (cancel an operation, release
    /// a lease), which another engine removing the finalizer does not do for it.
    pub const fn always_clean_up(self) -> Self {
        Finalizer { always_clean_up: true, ..self }
    }

    pub fn name(&self) -> &'a str {
        self.name
    }

    /// Whether a reconcile of `object` would add the finalizer (it is live and lacks it).
    pub fn needs_adding(&self, object: &Object) -> bool {
        !self.added_by_store && !object.metadata.is_deleting() && !object.metadata.has_finalizer(self.name)
    }

    /// One step for `object`: add the finalizer, or `apply`, or `cleanup` and then remove the
    /// finalizer (see the module documentation). `target` is handed to the step that runs, so
    /// both steps can be methods of the controller: `finalizer.reconcile(ctx, obj, self,
    /// Self::apply, Self::cleanup)`.
    pub fn reconcile<T: ?Sized>(
        &self,
        ctx: &mut Context<'_>,
        object: &Object,
        target: &mut T,
        apply: impl FnOnce(&mut T, &mut Context<'_>, &Object) -> ReconcileResult,
        cleanup: impl FnOnce(&mut T, &mut Context<'_>, &Object) -> Result<Cleanup, ReconcileError>,
    ) -> ReconcileResult {
        let held = object.metadata.has_finalizer(self.name);
        if object.metadata.is_deleting() {
            if !held && !self.always_clean_up {
                return Ok(Action::done());
            }
            // A change given up on may still land (a create the runtime is slow to make): what
            // the runtime shows is not final until it has left, so cleanup waits for that (the
            // key is reconciled again then).
            let waits_for_detached = !crate::bugs::on(crate::bugs::Bug::CleanupBesideDetachedChange);
            if held && ctx.detached_changes() > 0 && waits_for_detached {
                return Ok(Action::done());
            }
            // One that just left may have lost its answer on the way: the runtime may still be
            // completing it (Docker lists a container only once its create has completed).
            if held
                && waits_for_detached
                && let Some(left) = ctx.detached_left_at()
                && ctx.now().mono < left + DETACHED_SETTLE
            {
                return Ok(Action::requeue(left + DETACHED_SETTLE - ctx.now().mono));
            }
            return match cleanup(target, ctx, object)? {
                Cleanup::Waiting(action) => Ok(action),
                Cleanup::Done => {
                    if held {
                        self.remove(ctx, object);
                    }
                    Ok(Action::done())
                }
            };
        }
        if self.needs_adding(object) {
            self.add(ctx, object);
            return Ok(Action::done());
        }
        apply(target, ctx, object)
    }

    fn add(&self, ctx: &mut Context<'_>, object: &Object) {
        tracing::debug!(key = %object.key(), finalizer = self.name, "adding finalizer");
        let mut next = object.clone();
        next.metadata.finalizers.push(self.name.to_string());
        ctx.store(StoreRequest::Update { object: next });
    }

    fn remove(&self, ctx: &mut Context<'_>, object: &Object) {
        tracing::debug!(key = %object.key(), finalizer = self.name, "cleanup done: removing finalizer");
        ctx.store(StoreRequest::Update { object: without_finalizer(object, self.name) });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::controller::Issued;
    use crate::time::WallTime;
    use crate::toolkit::testing::{Harness, updates, widget};
    use std::time::Duration;

    const NAME: &str = "test.dev/cleanup";

    /// Which steps ran, and what cleanup answers.
    #[derive(Default)]
    struct Steps {
        applied: u32,
        cleaned: u32,
        cleanup: Option<Cleanup>,
    }

    impl Steps {
        fn apply(&mut self, _: &mut Context<'_>, _: &Object) -> ReconcileResult {
            self.applied += 1;
            Ok(Action::requeue(Duration::from_secs(3)))
        }

        fn cleanup(&mut self, _: &mut Context<'_>, _: &Object) -> Result<Cleanup, ReconcileError> {
            self.cleaned += 1;
            self.cleanup.clone().ok_or_else(|| ReconcileError("cleanup failed".into()))
        }
    }

    fn object(finalizer: bool, deleting: bool) -> Object {
        let mut object = widget("w");
        if finalizer {
            object.metadata.finalizers = vec!["other".into(), NAME.into()];
        }
        if deleting {
            object.metadata.deletion_timestamp = Some(WallTime(1));
        }
        object
    }

    fn run(finalizer: Finalizer<'_>, object: &Object, steps: &mut Steps) -> (ReconcileResult, Vec<Issued>) {
        Harness::default().run(1, |ctx| finalizer.reconcile(ctx, object, steps, Steps::apply, Steps::cleanup))
    }

    #[test]
    fn a_live_object_gets_the_finalizer_before_any_apply() {
        let mut steps = Steps::default();
        let (result, issued) = run(Finalizer::new(NAME), &object(false, false), &mut steps);
        assert_eq!(result, Ok(Action::done()));
        assert_eq!(steps.applied, 0);
        let added = updates(&issued);
        assert_eq!(added.len(), 1);
        assert_eq!(added[0].metadata.finalizers, [NAME]);
        assert_eq!(added[0].metadata.resource_version, 1, "precondition: the version looked at");
    }

    #[test]
    fn a_live_object_with_the_finalizer_is_applied() {
        let mut steps = Steps::default();
        let (result, issued) = run(Finalizer::new(NAME), &object(true, false), &mut steps);
        assert_eq!(result, Ok(Action::requeue(Duration::from_secs(3))));
        assert_eq!((steps.applied, steps.cleaned), (1, 0));
        assert!(issued.is_empty());
    }

    #[test]
    fn the_finalizer_goes_only_once_cleanup_is_done() {
        let deleting = object(true, true);
        let mut steps =
            Steps { cleanup: Some(Cleanup::Waiting(Action::requeue(Duration::from_secs(1)))), ..Steps::default() };
        let (result, issued) = run(Finalizer::new(NAME), &deleting, &mut steps);
        assert_eq!(result, Ok(Action::requeue(Duration::from_secs(1))));
        assert!(issued.is_empty(), "still cleaning up: the finalizer stays");

        steps.cleanup = None;
        let (result, issued) = run(Finalizer::new(NAME), &deleting, &mut steps);
        assert!(result.is_err() && issued.is_empty(), "a failed cleanup keeps it too");

        steps.cleanup = Some(Cleanup::Done);
        let (result, issued) = run(Finalizer::new(NAME), &deleting, &mut steps);
        assert_eq!(result, Ok(Action::done()));
        assert_eq!(updates(&issued).iter().map(|o| o.metadata.finalizers.clone()).collect::<Vec<_>>(), [["other"]]);
        assert_eq!((steps.applied, steps.cleaned), (0, 3));
    }

    #[test]
    fn a_deleting_object_without_the_finalizer_is_left_alone_unless_always_cleaned_up() {
        let released = object(false, true);
        let mut steps = Steps { cleanup: Some(Cleanup::Done), ..Steps::default() };
        let (result, issued) = run(Finalizer::new(NAME), &released, &mut steps);
        assert_eq!((result, issued.len(), steps.cleaned), (Ok(Action::done()), 0, 0));

        let (result, issued) = run(Finalizer::new(NAME).always_clean_up(), &released, &mut steps);
        assert_eq!(result, Ok(Action::done()));
        assert_eq!(steps.cleaned, 1);
        assert!(issued.is_empty(), "nothing to remove");
    }

    #[test]
    fn a_finalizer_the_store_adds_is_never_added_and_never_waited_for() {
        let finalizer = Finalizer::new(NAME).added_by_store();
        let mut steps = Steps::default();
        let live = object(false, false);
        assert!(!finalizer.needs_adding(&live));
        let (result, issued) = run(finalizer, &live, &mut steps);
        assert_eq!(result, Ok(Action::requeue(Duration::from_secs(3))));
        assert_eq!(steps.applied, 1);
        assert!(issued.is_empty());
        assert!(Finalizer::new(NAME).needs_adding(&live));
        assert!(!Finalizer::new(NAME).needs_adding(&object(false, true)), "never added to a deleting object");
    }
}
