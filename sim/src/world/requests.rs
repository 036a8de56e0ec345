//! The paths a request takes: out of an engine (`pump`, where the crash faults strike as a request
//! leaves its process), over its link, into the store or the runtime, and its reply back in.
//! Along the way the world records its facts and tells the checkers and probes what happened.

use super::World;
use super::runtime_link::Met;
use crate::checker::Happening;
use crate::facts::{owner_of, process_identity};
use crate::probes::Probe;
use crate::runtime::NetworkCreating;
use crate::trace::{Fault, Record, RuntimeOutcome, StoreOutcome};
use drydock_engine::api::{Lease, ObjectKey, Resource};
use drydock_engine::runtime::RuntimeRequest;
use drydock_engine::store::{StoreReply, StoreRequest, StoreResult};
use drydock_engine::{Input, MonoTime, OpId, Output};
use drydock_faults::FaultKind;

impl World<'_> {
    /// Hand `input` to `process` (if it is up), then take what it wants done.
    pub(super) fn input(&mut self, now: MonoTime, process: usize, input: Input) {
        if self.hand(now, process, input) {
            self.pump(now, process);
        }
    }

    /// Hand `input` to `process` without taking its outputs yet. False if the process is down.
    pub(super) fn hand(&mut self, now: MonoTime, process: usize, input: Input) -> bool {
        if self.processes.is_down(process) {
            return false;
        }
        let at = self.processes.now(process, now);
        crate::stamp::set(now, Some(process));
        self.processes.get_mut(process).engine.handle(at, input);
        true
    }

    /// Take every output the engine has now, send each on its way, and schedule the next wake.
    /// The crash faults strike here, right after a request left the process.
    pub(super) fn pump(&mut self, now: MonoTime, process: usize) {
        if self.processes.is_down(process) {
            return;
        }
        let at = self.processes.now(process, now);
        crate::stamp::set(now, Some(process));
        while let Some(output) = self.processes.get_mut(process).engine.poll(at) {
            let crash = match output {
                Output::Cancel { id } => {
                    self.cancel(process, id);
                    continue;
                }
                Output::Detach { id } => {
                    self.detach(process, id);
                    continue;
                }
                // Lines for the log hub: no request, nothing travels (not traced: the hub is
                // what readers see, and they trace what they read).
                Output::Log(record) => {
                    self.logs.hub.apply(&record);
                    continue;
                }
                Output::Store { id, request, write_follows, origin } => {
                    if let Some(explainer) = &mut self.explainer {
                        explainer.issued(process, id, &origin);
                    }
                    self.env.stats.store_requests += 1;
                    self.observe(Happening::Requested { process, id, origin: &origin, store: true });
                    if !request.is_read() {
                        self.liveness.sent(now, &origin.key, false, false, || request.describe());
                    }
                    let between_writes = !request.is_read() && write_follows;
                    self.store_link.send(&mut self.env, now, process, id, request);
                    (between_writes && self.env.fires(FaultKind::CrashBetweenWrites))
                        .then_some(FaultKind::CrashBetweenWrites)
                }
                Output::Runtime { id, request, origin } => {
                    if let Some(explainer) = &mut self.explainer {
                        explainer.issued(process, id, &origin);
                    }
                    self.env.stats.runtime_requests += 1;
                    self.observe(Happening::Requested { process, id, origin: &origin, store: false });
                    let changes = request.changes_world();
                    self.liveness.sent(now, &origin.key, true, changes, || request.describe());
                    self.send_runtime(now, process, id, request, &origin.key);
                    None
                }
            };
            if let Some(kind) =
                crash.or_else(|| self.env.fires(FaultKind::EngineCrash).then_some(FaultKind::EngineCrash))
            {
                self.crash(now, process, kind);
                return;
            }
        }
        self.processes.schedule_wake(&mut self.env, process);
    }

    fn send_runtime(&mut self, now: MonoTime, process: usize, id: OpId, request: RuntimeRequest, issuer: &ObjectKey) {
        // A mutation counts against the object it was sent for, not against whatever container it
        // hits: replacing a stranger that happens to be another object's container is that other
        // object's business, which its own engine cannot see.
        let owner = owner_of(&request, &self.runtime)
            .filter(|uid| self.store.get(issuer).is_none_or(|o| o.metadata.uid.0 == *uid));
        let change = crate::facts::change_of(&request, &self.runtime);
        self.facts.in_flight.send(process, id, &request, owner, change);
        self.observe(Happening::RuntimeSent { process, id, request: &request, issuer });
        self.dirty = true;
        self.runtime_link.send(&mut self.env, now, process, id, request);
    }

    /// `process` gave up on runtime request `id` (its deadline passed, or its object went away).
    /// If it has not been applied yet it never will be; a reply already on its way is ignored.
    fn cancel(&mut self, process: usize, id: OpId) {
        if self.runtime_link.cancel(process, id) {
            self.probes.hit(Probe::HungRequestTimedOut);
        }
        if self.facts.in_flight.get(process, id).is_some_and(|s| s.pull.is_some() && !s.applied) {
            self.probes.hit(Probe::PullCancelled);
        }
        self.settle(process, id);
        self.dirty = true;
    }

    /// `process` gave up on runtime request `id` but lets it finish: it goes on inside the daemon
    /// as if nothing happened, and its reply still comes back (unless it hangs).
    fn detach(&mut self, process: usize, id: OpId) {
        if self.runtime_link.is_hung(process, id) {
            self.probes.hit(Probe::HungRequestTimedOut);
        }
        self.facts.in_flight.detach(process, id);
        self.env.record(Record::RuntimeDetached { process, id });
        self.observe(Happening::RuntimeDetached { process, id });
    }

    /// Runtime request `id` will never be answered any more.
    pub(super) fn settle(&mut self, process: usize, id: OpId) {
        self.facts.in_flight.settle(process, id);
        self.observe(Happening::RuntimeSettled { process, id });
    }

    /// Kill `process`: its memory is gone (a fresh engine waits to boot); requests it sent still
    /// reach the store and the runtime, their replies and its queued deliveries go nowhere.
    fn crash(&mut self, now: MonoTime, process: usize, kind: FaultKind) {
        if self.facts.in_flight.creating(process) {
            self.probes.hit(Probe::CrashDuringCreate);
        }
        // Its connections close: a hung request is over, and the daemon aborts a pull whose client
        // went away. Other requests already sent still apply, but nobody is waiting for them: they
        // are no longer "in flight" for the safety invariants (which judge what an engine does
        // knowingly). What they do when they land is judged by convergence: a container created
        // by a dead incarnation after its object was cleaned up is a leak.
        let requests = self.facts.in_flight.of_process(process);
        let pulls: Vec<OpId> = requests
            .iter()
            .copied()
            .filter(|id| self.facts.in_flight.get(process, *id).is_some_and(|s| s.pull.is_some() && !s.applied))
            .collect();
        self.runtime_link.close(process, &requests, &pulls);
        for id in requests {
            self.settle(process, id);
        }
        self.facts.leases.drop_identity(&process_identity(process));
        self.observe(Happening::Crashed { process });
        self.dirty = true;
        let (config, explain) = (self.config, self.explainer.is_some());
        let at = self
            .processes
            .crash(&mut self.env, process, now, |index, life, seed| super::engine(config, index, life, seed, explain));
        self.watches.close(process);
        self.env.record(Record::Fault(Fault::Crash { kind, process, restarts_at: at }));
    }

    /// A store request meets the store.
    pub(super) fn store_apply(&mut self, now: MonoTime, process: usize, id: OpId, request: StoreRequest) {
        self.env.record(Record::StoreApply { process, id, op: (&request).into() });
        let before = self.explainer.as_ref().and_then(|_| {
            let key = match &request {
                StoreRequest::Create { object }
                | StoreRequest::Update { object }
                | StoreRequest::UpdateStatus { object } => object.key(),
                StoreRequest::Delete { key, .. } | StoreRequest::Get { key } => key.clone(),
                StoreRequest::List { .. } => return None,
            };
            self.store.get(&key).cloned()
        });
        let holder_before = lease_holder_before(&self.store, &request);
        if let Some(explainer) = &mut self.explainer {
            explainer.store_applied(process, id, &request);
        }
        self.observe(Happening::StoreApplying { process, id, request: &request });
        let result = match self.store_link.conflict(&mut self.env, &request) {
            Some(conflict) => Err(conflict),
            None => self.store.execute_ref(super::true_now(now).wall, &request),
        };
        let lost = self.store_link.loses_reply(&mut self.env, &request, &result);
        self.observe(Happening::StoreApplied { process, request: &request, result: &result });
        // A lease a write returns was written; one a read returns was only seen.
        if let (Ok(StoreReply::Object(object)), true) = (&result, request.changes_world())
            && self.facts.leases.record(object, self.processes.get(process).skew_ms)
        {
            self.probes.hit(Probe::LeaseTakenOver);
        }
        if let (Some(explainer), Ok(StoreReply::Object(after))) = (&mut self.explainer, &result) {
            explainer.stored(before.as_deref(), after);
        }
        let handed_over = match (&holder_before, &result) {
            (Some(before), Ok(StoreReply::Object(after))) => *before != lease_holder(after),
            _ => false,
        };
        self.liveness.stored(&request, &result, handed_over);
        self.describe_store_result(&result);
        self.watches.broadcast(&mut self.env, &self.store, &self.processes, now);
        self.store_link.reply(&mut self.env, now, process, id, &request, result, lost);
    }

    pub(super) fn describe_store_result(&mut self, result: &StoreResult) {
        self.env.record(Record::StoreResult(StoreOutcome::from(result)));
    }

    /// A runtime request meets the runtime (unless it was cancelled first).
    pub(super) fn runtime_apply(&mut self, now: MonoTime, process: usize, id: OpId, request: RuntimeRequest) {
        if let Some(until) = self.runtime_link.arrive(now) {
            self.env.record(Record::Fault(Fault::RuntimeStalled { until }));
            // Its debt carries over to the later meeting.
            self.env.at(until, super::env::Event::RuntimeApply { process, id, request: Box::new(request) });
            return;
        }
        if self.runtime_link.take_cancelled(process, id) {
            self.env.paid();
            self.env.record(Record::RuntimeCancelled { process, id, op: (&request).into() });
            return;
        }
        self.env.record(Record::RuntimeApply { process, id, op: (&request).into() });
        if let Some(explainer) = &mut self.explainer {
            explainer.runtime_applied(process, id, &request, &self.runtime);
        }
        self.runtime.set_now(super::true_now(now).wall);
        let removing = match &request {
            RuntimeRequest::RemoveContainer { id, .. } => self.runtime.container(id).cloned(),
            _ => None,
        };
        let meeting = self.runtime_link.meet(&mut self.env, &mut self.runtime, now, process, id, &request);
        let Some(Met { result, hangs, hidden, busy_until }) = meeting else { return };
        if let Some(container_id) = &hidden {
            self.observe(Happening::InspectHidden { container_id });
        }
        self.facts.in_flight.applied(process, id, busy_until.map(|t| super::true_now(t).wall));
        self.observe(Happening::RuntimeApplied {
            process,
            id,
            request: &request,
            result: &result,
            removed: removing.as_ref(),
        });
        self.env.record(Record::RuntimeResult(RuntimeOutcome::from(&result)));
        let applied_ok = result.is_ok();
        let (told, lost) = self.runtime_link.after_apply(&mut self.env, now, &request, result);
        if lost {
            self.observe(Happening::ReplyLost { process, id, request: &request });
        }
        if applied_ok && (lost || hangs) {
            self.runtime_link.disrupt_uncertain_create(&mut self.env, now, &request);
        }
        self.broadcast_runtime_events(now);
        self.runtime_link.follow_runtime_clock(&mut self.env, &self.runtime);
        self.runtime_link.reply(&mut self.env, now, process, id, told, hangs, busy_until);
    }

    /// A removal in progress completes: the container is gone (`destroy`).
    pub(super) fn removal_done(&mut self, now: MonoTime, container: &str) {
        self.env.paid();
        self.runtime.set_now(super::true_now(now).wall);
        let done = self.runtime.finish_removal(container);
        self.env.record(Record::RemovalDone { container, done });
        self.broadcast_runtime_events(now);
        self.runtime_link.follow_runtime_clock(&mut self.env, &self.runtime);
    }

    /// A network create in progress completes: the network exists.
    pub(super) fn network_create_done(&mut self, now: MonoTime, creating: NetworkCreating) {
        self.env.paid();
        self.runtime.set_now(super::true_now(now).wall);
        let network = self.runtime.finish_network_create(creating);
        self.env.record(Record::NetworkCreateDone { network: &network });
        self.broadcast_runtime_events(now);
    }

    /// Queue the runtime's new events on every live process's event stream.
    pub(super) fn broadcast_runtime_events(&mut self, now: MonoTime) {
        let fresh = self.runtime.take_events();
        self.watches.broadcast_runtime(&mut self.env, &fresh, &self.processes, now);
    }

    /// The runtime's clock reaches the end of a main process that ends by itself.
    pub(super) fn runtime_due(&mut self, now: MonoTime) {
        self.runtime_link.runtime_clock_woke(now);
        let before = self.runtime.recorded_events();
        self.runtime.advance(super::true_now(now).wall);
        let ended = self.runtime.recorded_events() - before;
        if ended > 0 {
            self.probes.hit(Probe::ProcessEndedByItself);
        }
        self.env.record(Record::RuntimeClock { ended });
        self.broadcast_runtime_events(now);
        self.runtime_link.follow_runtime_clock(&mut self.env, &self.runtime);
    }
}

/// The holder of the lease an update is about to write, as the store holds it now (`None` for any
/// other request): a write that changes it hands the lease over.
fn lease_holder_before(store: &drydock_engine::store::Store, request: &StoreRequest) -> Option<Option<String>> {
    let StoreRequest::Update { object } = request else { return None };
    if object.kind != <Lease as Resource>::KIND {
        return None;
    }
    Some(store.get(&object.key()).and_then(|lease| lease_holder(lease)))
}

fn lease_holder(object: &drydock_engine::api::Object) -> Option<String> {
    object.spec::<Lease>().ok().and_then(|spec| spec.holder)
}
