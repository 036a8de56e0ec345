//! Running a reconcile and accounting for what it asked: its store and runtime requests become
//! outputs with deadlines and diagnostics, it stays in progress until its store requests have
//! replied, and its outcome (errors, writes or only reads, requeue, retry) decides its backoff
//! and when it runs again.

use super::{ActiveReconcile, Engine, HeldRuntime, Origin, Output, PendingOp, Trigger, Via, WorkKey, diagnostics};
use crate::controller::{Action, Context, Issued, OpId};
use crate::logs::Channel;
use crate::store::{StoreReply, StoreRequest, StoreResult};
use crate::time::Now;

impl Engine {
    pub(super) fn reconcile(&mut self, now: Now, work: WorkKey) {
        self.holding.swap_remove(&work);
        if !self.responsible_for(&work.1) {
            // Another engine's now: forget any retry we owed it.
            self.backoff.reset(&work);
            self.retries.swap_remove(&work);
            self.queue.done(&work);
            return;
        }
        let (index, key) = &work;
        let earlier_lives_settle_at = self.earlier_lives_settle_at(now);
        let controller = &mut self.controllers[*index];
        let span = tracing::debug_span!("reconcile", controller = controller.name(), key = %key);
        let _entered = span.enter();
        self.stats.reconciles += 1;
        let mut ctx = Context {
            now,
            identity: &self.config.identity,
            cache: &self.cache,
            registry: &self.registry,
            next_op: &mut self.next_op,
            issued: Vec::new(),
            earlier_lives_settle_at,
            seen_created: &self.seen_created,
            failure_handled: Vec::new(),
            detached_changes: self.detached.of(&work),
            detached_left_at: self.detached.left_at(now.mono, &work),
        };
        let result = controller.reconcile(&mut ctx, key);
        let issued = std::mem::take(&mut ctx.issued);
        let failure_handled = std::mem::take(&mut ctx.failure_handled);
        let origin = Origin::new(&self.names[*index], key, self.stats.reconciles, self.triggers.take(&work));
        let first_output = self.outbox.len();
        let mut outstanding = 0;
        let (mut made_reads, mut made_writes) = (false, false);
        for request in issued {
            match request {
                Issued::Store(id, request) => {
                    outstanding += 1;
                    let handled = failure_handled.contains(&id);
                    made_reads |= request.is_read();
                    made_writes |= !request.is_read() && !handled;
                    self.stats.store_requests += 1;
                    let op = PendingOp {
                        work: work.clone(),
                        store_read: Some(request.is_read()),
                        issued_at: now.mono,
                        deadline: None,
                        what: None,
                        failure_handled: handled,
                        writes_to: written_object(&request, &self.cache),
                        detaches: false,
                    };
                    self.pending.insert(id, op);
                    if let StoreRequest::UpdateStatus { object } = &request
                        && let Some(line) =
                            self.cache.get(&object.key()).and_then(|o| diagnostics::status_line(o, object))
                    {
                        self.log(now, key, Channel::System, vec![line]);
                    }
                    self.outbox.push_back(Output::Store { id, request, origin: origin.clone(), write_follows: false });
                }
                Issued::Runtime(id, request) => {
                    self.stats.runtime_requests += 1;
                    let timeout = if super::gate::is_long(&request) {
                        self.config.pull_timeout
                    } else {
                        self.config.runtime_timeout
                    };
                    let turn = super::gate::turn_key(&request);
                    let op = PendingOp {
                        work: work.clone(),
                        store_read: None,
                        issued_at: now.mono,
                        deadline: None,
                        what: request.changes_world().then(|| request.describe().into_boxed_str()),
                        failure_handled: false,
                        writes_to: None,
                        detaches: turn.is_some(),
                    };
                    self.pending.insert(id, op);
                    self.gate.hold(id, turn, HeldRuntime { request, origin: origin.clone(), timeout });
                    // It goes at once if it may: in its place among the reconcile's outputs.
                    self.send_held(now);
                }
                Issued::Cancel(id) => {
                    // Only runtime requests of this same controller can be cancelled.
                    let ours = self.pending.get(&id).is_some_and(|p| p.store_read.is_none() && p.work.0 == work.0);
                    if ours && let Some(op) = self.pending.swap_remove(&id) {
                        if let Some(deadline) = op.deadline {
                            self.deadlines.remove(&(deadline, id));
                        }
                        self.give_up(now, id, &op);
                    }
                }
            }
        }
        mark_writes_that_follow(self.outbox.range_mut(first_output..));
        let active =
            ActiveReconcile { outstanding, made_reads, made_writes, write_error: None, handled_failure: None, result };
        if outstanding == 0 {
            self.finish(now, work, active);
        } else {
            self.active.insert(work, active);
        }
    }

    pub(super) fn store_done(&mut self, now: Now, id: OpId, result: StoreResult) {
        let Some(op) = self.pending.swap_remove(&id) else { return };
        let is_read = op.store_read == Some(true);
        if !is_read && let Ok(StoreReply::Object(object)) = &result {
            // Read your own writes: later controllers see this state without waiting for the watch.
            let others = self.namespaces_not_ours(Some(object));
            if let Some(change) = self.cache.apply_own_write(object) {
                let object = object.clone();
                self.dispatch_change(now.mono, Via::OwnWrite, change, &object);
                self.dispatch_newly_ours(now.mono, others);
            }
        }
        if let Err(e) = &result
            && e.is_not_found()
            && let Some((written, uid)) = &op.writes_to
            && !crate::bugs::on(crate::bugs::Bug::WriteNotFoundKeptCached)
            && let Some(gone) = self.cache.forget_gone(written, uid)
        {
            self.seen_created.swap_remove(uid);
            self.dispatch(now.mono, Via::FoundGone, &gone);
        }
        let (controller, key) = &op.work;
        self.controllers[*controller].on_store_result(now, key, id, &result);
        let Some(active) = self.active.get_mut(&op.work) else { return };
        active.outstanding -= 1;
        if let Err(e) = &result {
            if op.failure_handled {
                active.handled_failure.get_or_insert_with(|| e.to_string());
            } else if !is_read {
                active.write_error.get_or_insert_with(|| e.to_string());
            }
        }
        if active.outstanding == 0
            && let Some(done) = self.active.swap_remove(&op.work)
        {
            self.finish(now, op.work, done);
        }
    }

    pub(super) fn finish(&mut self, now: Now, work: WorkKey, done: ActiveReconcile) {
        let ActiveReconcile { made_reads, made_writes, write_error, handled_failure, result, .. } = done;
        self.queue.done(&work);
        let error = match (result, write_error) {
            (Err(e), _) => Some(e.0),
            (Ok(_), Some(e)) => Some(e),
            (Ok(Action { requeue_after, retry }), None) => {
                // Only writes that went through end a run of failed writes: a reconcile that
                // only read or asked the runtime in between must not restart the backoff (a
                // status write conflicting with a stale cache would retry every few ms).
                if made_writes {
                    self.backoff.reset(&work);
                } else {
                    self.backoff.settled(&work);
                }
                if retry {
                    if !self.retries.contains(&work) {
                        self.retries.insert(work.clone());
                    }
                } else {
                    self.retries.swap_remove(&work);
                }
                if let Some(delay) = requeue_after {
                    self.triggers.add(&mut self.queue, work.clone(), now.mono + delay, || Trigger::RequeueAfter);
                }
                None
            }
        };
        if let Some(error) = error {
            self.stats.reconcile_errors += 1;
            let delay = self.backoff.next_delay(work.clone(), &mut self.rng);
            tracing::debug!(key = %work.1, %error, ?delay, "reconcile failed; backing off");
            self.holding.insert(work.clone(), now.mono + delay);
            self.triggers.add(&mut self.queue, work, now.mono + delay, || Trigger::Retry { error });
        } else if let Some(error) = handled_failure {
            self.triggers.add(&mut self.queue, work, now.mono, || Trigger::AfterHandledFailure { error });
        } else if made_reads {
            self.triggers.add(&mut self.queue, work, now.mono, || Trigger::AfterReads);
        }
    }
}

/// The existing object a store write addresses, by key and uid: what its NotFound shows gone.
fn written_object(
    request: &StoreRequest,
    cache: &crate::cache::Cache,
) -> Option<(crate::api::ObjectKey, crate::api::Uid)> {
    match request {
        StoreRequest::Update { object } | StoreRequest::UpdateStatus { object } => {
            Some((object.key(), object.metadata.uid.clone()))
        }
        StoreRequest::Delete { key, options } => {
            let uid = options.precondition_uid.clone().or_else(|| cache.get(key).map(|o| o.metadata.uid.clone()))?;
            Some((key.clone(), uid))
        }
        _ => None,
    }
}

/// Set `write_follows` on every store write of one reconcile's outputs that another write follows
/// directly.
fn mark_writes_that_follow<'a>(outputs: impl DoubleEndedIterator<Item = &'a mut Output>) {
    let mut next_is_write = false;
    for output in outputs.rev() {
        next_is_write = match output {
            Output::Store { request, write_follows, .. } => {
                *write_follows = next_is_write;
                !request.is_read()
            }
            // Log lines are no request: they do not separate two writes.
            Output::Log(_) => next_is_write,
            _ => false,
        };
    }
}
