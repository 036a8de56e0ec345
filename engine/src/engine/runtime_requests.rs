//! Runtime requests on their way back: answers handed to their controllers, deadlines that
//! pass (a change given up on is detached, anything else cancelled), detached changes answered
//! late or abandoned after their patience, and held requests sent as room frees up.

use super::{Engine, HeldRuntime, Output, PendingOp, Trigger, WorkKey, gate};
use crate::controller::OpId;
use crate::logs::Channel;
use crate::runtime::{RuntimeReply, RuntimeResult};
use crate::time::Now;

impl Engine {
    /// The runtime answered request `id`: hand the result to its controller and queue its key
    /// (a detached change's answer only tells that it has left the runtime).
    pub(super) fn runtime_done(&mut self, now: Now, id: OpId, result: RuntimeResult) {
        match self.gate.answered(id) {
            gate::Answer::Awaited => {}
            gate::Answer::Detached(detached) => return self.detached_answered(now, id, detached, &result),
            gate::Answer::Unknown => return,
        }
        let Some(op) = self.pending.swap_remove(&id) else { return };
        if let Some(deadline) = op.deadline {
            self.deadlines.remove(&(deadline, id));
        }
        let (controller, key) = &op.work;
        match (&result, &op.what) {
            (Err(error), Some(what)) => self.log(now, key, Channel::System, vec![format!("{what}: {error}")]),
            (Ok(RuntimeReply::Pulled { progress } | RuntimeReply::Built { progress }), _) if !progress.is_empty() => {
                self.log(now, key, Channel::Stdout, progress.clone())
            }
            _ => {}
        }
        self.controllers[*controller].on_runtime_result(now, key, id, &result);
        self.triggers.add(&mut self.queue, op.work, now.mono, || Trigger::RuntimeReply { id });
    }

    /// Runtime requests past their deadline: give up on each and tell its controller the outcome
    /// is unknown, as for a lost reply. A change is detached (it may still run inside the
    /// runtime), anything else cancelled.
    pub(super) fn expire_deadlines(&mut self, now: Now) {
        while let Some(&(deadline, id)) = self.deadlines.first()
            && deadline <= now.mono
        {
            self.deadlines.pop_first();
            let Some(op) = self.pending.swap_remove(&id) else { continue };
            self.stats.runtime_timeouts += 1;
            let (controller, key) = &op.work;
            tracing::warn!(key = %key, op = %id, "runtime request timed out; giving up on it");
            let waited = deadline.since(op.issued_at);
            let error = crate::runtime::RuntimeError::Uncertain(if op.detaches {
                format!(
                    "no answer from the runtime within {waited:?}; the request may still be running inside it, and \
                     this object's next change waits until it is done"
                )
            } else {
                format!(
                    "no answer from the runtime within {waited:?}; the request was cancelled and may have been applied"
                )
            });
            if let Some(what) = &op.what {
                let line = format!("{what}: {error}");
                let key = key.clone();
                self.log(now, &key, Channel::System, vec![line]);
            }
            self.controllers[*controller].on_runtime_result(now, key, id, &Err(error));
            self.give_up(now, id, &op);
            self.triggers.add(&mut self.queue, op.work, now.mono, || Trigger::RuntimeTimeout { id });
        }
    }

    /// Stop waiting for runtime request `id`: detach it (a change that went) or cancel it.
    pub(super) fn give_up(&mut self, now: Now, id: OpId, op: &PendingOp) {
        let detach = op.detaches.then(|| (op.work.clone(), op.what.clone()));
        match self.gate.cancel(now.mono, id, detach) {
            gate::Cancelled::Detached => {
                self.detached.detached(&op.work);
                self.outbox.push_back(Output::Detach { id });
            }
            gate::Cancelled::Dropped => self.outbox.push_back(Output::Cancel { id }),
            gate::Cancelled::WasHeld | gate::Cancelled::Unknown => {}
        }
    }

    /// Detached requests whose patience ran out: cancel them for good, so their objects' next
    /// changes may go.
    pub(super) fn abandon_detached(&mut self, now: Now) {
        for (id, (work, what)) in self.gate.abandon_due(now.mono) {
            self.stats.runtime_abandoned += 1;
            self.outbox.push_back(Output::Cancel { id });
            self.detached.left(now.mono, &work);
            let key = work.1.clone();
            self.triggers.add(&mut self.queue, work, now.mono, || Trigger::RuntimeTimeout { id });
            if let Some(what) = what {
                let patience = self.config.detached_patience;
                let line =
                    format!("{what}: still no answer {patience:?} after it was given up on; no longer waiting for it");
                self.log(now, &key, Channel::System, vec![line]);
            }
        }
    }

    /// The reply to a detached request came: it has left the runtime. Its controller was told
    /// long ago the outcome is unknown; it looks again now that its object's turn is free.
    fn detached_answered(
        &mut self,
        now: Now,
        id: OpId,
        (work, what): (WorkKey, Option<Box<str>>),
        result: &RuntimeResult,
    ) {
        self.detached.left(now.mono, &work);
        if let Some(what) = what {
            let outcome = match result {
                Ok(_) => "done".to_string(),
                Err(error) => error.to_string(),
            };
            self.log(
                now,
                &work.1,
                Channel::System,
                vec![format!("{what}: answered after it was given up on: {outcome}")],
            );
        }
        self.triggers.add(&mut self.queue, work, now.mono, || Trigger::RuntimeReply { id });
    }

    /// Send the held runtime requests that may go now: their timeouts start here.
    pub(super) fn send_held(&mut self, now: Now) {
        while let Some(held) = self.gate.next_to_send() {
            let gate::Held { id, item: HeldRuntime { request, origin, timeout }, .. } = held;
            let Some(op) = self.pending.get_mut(&id) else { continue };
            let deadline = now.mono + timeout;
            op.issued_at = now.mono;
            op.deadline = Some(deadline);
            self.deadlines.insert((deadline, id));
            if let Some(what) = op.what.clone() {
                let key = op.work.1.clone();
                self.log(now, &key, Channel::System, vec![what.to_string()]);
            }
            self.outbox.push_back(Output::Runtime { id, request, origin });
        }
    }
}
