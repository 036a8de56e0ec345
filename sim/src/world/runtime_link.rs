//! The link between engine processes and the runtime daemon: request latency, and the runtime
//! faults. Before a request applies: `slow-runtime` (it takes many times its latency),
//! `hung-runtime` (it never answers, applied or not), `transient-runtime-error` (a 500, not
//! applied), `notfound-after-create` (a fresh container not yet visible to inspection; with a lost
//! create reply, not yet listed either while its name is already held, as Docker does while a
//! create completes), a daemon
//! restarting (`runtime-restart`: refused while it is down), a build broken off halfway
//! (`build-interrupted`), a copy refused partway (`copy-refused`). After it applied:
//! `uncertain-create` and `uncertain-remove` (the reply is lost). Throughout: `runtime-overload`
//! (each request takes longer the more requests are queued inside the daemon, and now and then
//! the daemon stalls whole: requests reaching it wait for it to come back, then apply in order).
//!
//! A request its process gave up on is either *cancelled* (a read, a pull: if it has not applied
//! it never will) or *detached* (a change: it goes on inside the daemon, as Docker goes on with a
//! request whose client went away, and its reply goes back to the process, which learns from it
//! that the request has left the runtime).
//!
//! *Guarantees*: a request cancelled before it applies never applies; a detached one applies as
//! if nothing happened; a hung request is never answered (until it is cancelled, or its process
//! dies).
//!
//! *Caveats*: healing stops new faults only: a container hidden just before stays hidden for its
//! moment, and a daemon restarting comes back at its time.

use super::env::{Disruption, Env, Event};
use super::latency::{Factor, Latency};
use crate::runtime::SimRuntime;
use crate::trace::{Fault, Record};
use drydock_engine::api::container::CopiedFile;
use drydock_engine::runtime::{RuntimeError, RuntimeObject, RuntimeReply, RuntimeRequest, RuntimeResult, Verb};
use drydock_engine::{MonoTime, OpId};
use drydock_faults::{FaultKind, unit};
use rand_core::RngCore;
use std::collections::{BTreeMap, BTreeSet};

/// The link between processes and the runtime daemon, and the magnitudes of its faults
/// (`slow-runtime`, `hung-runtime`, `notfound-after-create`, `runtime-restart`; the others have
/// none).
#[derive(Clone, Debug)]
pub struct RuntimeLinkKnobs {
    /// How long a request takes to reach the daemon and apply.
    pub latency: Latency,
    /// How long a pull takes (it is in flight all that time).
    pub pull_latency: Latency,
    /// A reply takes this fraction (1/n) of a fresh request latency draw.
    pub reply_divisor: u32,
    /// slow-runtime: a request takes this many times its latency...
    pub slow_factor: Factor,
    /// ...a pull this many times.
    pub slow_pull_factor: Factor,
    /// hung-runtime: the share of hung requests that never applied (the others applied, then hung).
    pub hung_unapplied: f64,
    /// notfound-after-create: a fresh container stays invisible to inspection this long.
    pub hidden_for: Latency,
    /// runtime-restart: the daemon refuses requests this long.
    pub restart_downtime: Latency,
    /// A container being removed shows `removing` this long; the remove request answers after.
    pub removal_takes: Latency,
    /// A network create takes this long between Docker's check of its name and the network
    /// existing (130-150 ms on Docker 20.10); the create answers after.
    pub network_create_takes: Latency,
    /// disrupt-while-uncertain: the outside act comes this long after the create applied (the
    /// window before the engine has verified what its create did).
    pub disrupt_within: Latency,
    /// runtime-overload: a request's latency grows by its base for every this many requests
    /// queued inside the daemon before it...
    pub overload_per: u32,
    /// ...and a stall lasts this long.
    pub stall_for: Latency,
}

impl Default for RuntimeLinkKnobs {
    fn default() -> Self {
        RuntimeLinkKnobs {
            latency: Latency::millis(5, 80),
            pull_latency: Latency::millis(200, 3_000),
            reply_divisor: 4,
            slow_factor: Factor { min: 5.0, max: 40.0 },
            slow_pull_factor: Factor { min: 2.0, max: 8.0 },
            hung_unapplied: 0.5,
            hidden_for: Latency::millis(200, 2_000),
            restart_downtime: Latency::millis(300, 3_000),
            removal_takes: Latency::millis(5, 500),
            network_create_takes: Latency::millis(50, 300),
            disrupt_within: Latency::millis(0, 400),
            overload_per: 4,
            // Longer than a runtime timeout (30 s), so requests are given up on inside it.
            stall_for: Latency::millis(5_000, 45_000),
        }
    }
}

/// How a request that applied met the daemon.
pub(super) struct Met {
    /// What the daemon did (or the fault that kept it from applying).
    pub result: RuntimeResult,
    /// The answer will never come.
    pub hangs: bool,
    /// The container an inspection was told is not there.
    pub hidden: Option<String>,
    /// The request completes then (a removal in progress), and no answer comes before.
    pub busy_until: Option<MonoTime>,
}

pub(super) struct RuntimeLink {
    knobs: RuntimeLinkKnobs,
    /// Requests cancelled by their process before they applied.
    cancelled: BTreeSet<(usize, OpId)>,
    /// Requests that will never be answered, until cancelled or their process dies.
    hung: BTreeSet<(usize, OpId)>,
    /// Containers hidden from inspection until a time.
    hidden: BTreeMap<String, MonoTime>,
    /// Containers whose create is still completing until a time: Docker holds the name (a second
    /// create gets a conflict) but neither lists nor inspects the container yet.
    completing: BTreeMap<String, MonoTime>,
    /// The daemon is restarting until then: requests fail without being applied.
    down_until: Option<MonoTime>,
    /// When the world wakes next for the runtime's own clock (a main process ending by itself).
    due_at: Option<MonoTime>,
    /// Requests sent and not yet met by the daemon.
    queued: u32,
    /// runtime-overload: the daemon answers nothing until then.
    stalled_until: Option<MonoTime>,
}

impl RuntimeLink {
    pub fn new(knobs: &RuntimeLinkKnobs) -> Self {
        RuntimeLink {
            knobs: knobs.clone(),
            cancelled: BTreeSet::new(),
            hung: BTreeSet::new(),
            hidden: BTreeMap::new(),
            completing: BTreeMap::new(),
            down_until: None,
            due_at: None,
            queued: 0,
            stalled_until: None,
        }
    }

    /// `process` sent `request`: it reaches the daemon after its latency.
    pub fn send(&mut self, env: &mut Env, now: MonoTime, process: usize, id: OpId, request: RuntimeRequest) {
        let pull = matches!(request, RuntimeRequest::PullImage { .. } | RuntimeRequest::BuildImage(_));
        let mut latency = env.draw(if pull { self.knobs.pull_latency } else { self.knobs.latency });
        if env.fires(FaultKind::SlowRuntime) {
            let factor = if pull { self.knobs.slow_pull_factor } else { self.knobs.slow_factor };
            latency = latency.mul_f64(factor.draw(&mut env.rng));
            env.record(Record::Fault(Fault::SlowRuntime { id, takes: latency }));
        }
        if env.active(FaultKind::RuntimeOverload) {
            latency = self.overloaded(env, now, latency, pull);
        }
        self.queued += 1;
        env.owe(now + latency, Event::RuntimeApply { process, id, request: Box::new(request) });
    }

    /// runtime-overload: `latency` grown by the requests queued before this one (not a pull's or
    /// a build's: their time is the registry's and the builder's, and a stall holds them up
    /// anyway); and perhaps the daemon stalls from now on.
    fn overloaded(
        &mut self,
        env: &mut Env,
        now: MonoTime,
        latency: std::time::Duration,
        long: bool,
    ) -> std::time::Duration {
        let queued = if long { 0 } else { self.queued / self.knobs.overload_per.max(1) };
        let latency = latency * (1 + queued);
        if env.fires(FaultKind::RuntimeOverload) && !self.stalled_at(now) {
            let until = now + env.draw(self.knobs.stall_for);
            self.stalled_until = Some(until);
            env.record(Record::Fault(Fault::RuntimeStalls { until, queued: self.queued }));
        }
        latency
    }

    fn stalled_at(&self, now: MonoTime) -> bool {
        self.stalled_until.is_some_and(|until| now < until)
    }

    /// A request reaches the daemon at `now`: while it is stalled, the request waits for it
    /// (returns when it goes on); otherwise it leaves the queue.
    pub fn arrive(&mut self, now: MonoTime) -> Option<MonoTime> {
        match self.stalled_until {
            Some(until) if now < until => Some(until),
            _ => {
                self.queued = self.queued.saturating_sub(1);
                None
            }
        }
    }

    /// `process` cancelled request `id`: if it has not applied it never will. Returns whether it
    /// was hung.
    pub fn cancel(&mut self, process: usize, id: OpId) -> bool {
        self.cancelled.insert((process, id));
        self.hung.remove(&(process, id))
    }

    /// Whether request `id` hangs (it will never be answered).
    pub fn is_hung(&self, process: usize, id: OpId) -> bool {
        self.hung.contains(&(process, id))
    }

    /// Whether request `id` was cancelled before it could apply (and so never applies).
    pub fn take_cancelled(&mut self, process: usize, id: OpId) -> bool {
        self.cancelled.remove(&(process, id))
    }

    /// The process died: its connections close, so its hung requests are over, and the daemon
    /// aborts the pulls whose client went away (`pulls`).
    pub fn close(&mut self, process: usize, requests: &[OpId], pulls: &[OpId]) {
        for id in pulls {
            self.cancelled.insert((process, *id));
        }
        for id in requests {
            self.hung.remove(&(process, *id));
        }
    }

    /// The daemon restarts: running containers stop and it refuses requests for a moment. Returns
    /// how many containers stopped and when it is back.
    pub fn restart_daemon(&mut self, env: &mut Env, runtime: &mut SimRuntime, now: MonoTime) -> (usize, MonoTime) {
        let stopped = runtime.restart_daemon();
        let until = now + env.draw(self.knobs.restart_downtime);
        self.down_until = Some(until);
        (stopped, until)
    }

    /// The request reaches the daemon: a fault may keep it from applying; otherwise the runtime
    /// applies it. `None`: it hung before it applied (no effect, no answer).
    pub fn meet(
        &mut self,
        env: &mut Env,
        runtime: &mut SimRuntime,
        now: MonoTime,
        process: usize,
        id: OpId,
        request: &RuntimeRequest,
    ) -> Option<Met> {
        let daemon_down = self.down_until.is_some_and(|until| now < until);
        let mut busy_until = None;
        let hangs = !matches!(request, RuntimeRequest::PullImage { .. } | RuntimeRequest::BuildImage(_))
            && env.fires(FaultKind::HungRuntime);
        let mut hidden = None;
        let result = if daemon_down {
            env.record(Record::Fault(Fault::DaemonRestarting));
            Err(RuntimeError::Transient(
                "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"
                    .into(),
            ))
        } else if hangs && unit(&mut env.rng) < self.knobs.hung_unapplied {
            env.record(Record::Fault(Fault::HungUnapplied));
            self.hung.insert((process, id));
            env.paid();
            return None;
        } else if env.fires(FaultKind::TransientRuntimeError) {
            env.record(Record::Fault(Fault::TransientRuntimeError));
            env.stats.other_faults += 1;
            Err(RuntimeError::Transient("500: Internal Server Error: the daemon is busy".into()))
        } else if let Some((asked, container)) = self.hidden_from_inspection(runtime, now, request) {
            env.record(Record::Fault(Fault::NotFoundAfterCreate));
            env.stats.other_faults += 1;
            hidden = Some(container);
            Err(RuntimeError::NotFound(format!("No such container: {asked}")))
        } else if let RuntimeRequest::BuildImage(_) = request
            && env.fires(FaultKind::BuildInterrupted)
        {
            Self::interrupted_build(env, runtime, request)
        } else if let RuntimeRequest::CopyFiles { id, files } = request
            && env.fires(FaultKind::CopyRefused)
        {
            Self::refused_copy(env, runtime, id, files)
        } else if let RuntimeRequest::StopContainer { id, timeout_secs } = request {
            // The request answers once the process has ended: on TERM, or by KILL when the
            // grace period ends; the container runs until then.
            runtime.begin_stop(id, *timeout_secs).map(|done| {
                busy_until = Some(super::processes::mono_at(done).max(now));
                RuntimeReply::Done
            })
        } else if let RuntimeRequest::CreateNetwork(create) = request {
            // Overlapping creates of one name all pass Docker's check of it.
            runtime.begin_network_create(create).map(|creating| {
                let done = now + env.draw(self.knobs.network_create_takes);
                busy_until = Some(done);
                let id = creating.id().to_string();
                env.owe(done, Event::NetworkCreateDone(creating));
                RuntimeReply::Created { id }
            })
        } else if let RuntimeRequest::RemoveContainer { id, force } = request {
            // The request answers once the container is gone.
            self.begin_removal(env, runtime, now, id, *force).map(|done| {
                busy_until = Some(done);
                RuntimeReply::Done
            })
        } else {
            self.unlisted_while_completing(now, runtime.execute(request))
        };
        Some(Met { result, hangs, hidden, busy_until })
    }

    /// `build-interrupted`: the build's stream breaks off. Mostly the builder stopped halfway
    /// and tagged nothing; sometimes it had just finished (tagged) when the connection broke.
    /// Either way the caller cannot tell.
    fn interrupted_build(env: &mut Env, runtime: &mut SimRuntime, request: &RuntimeRequest) -> RuntimeResult {
        if env.rng.next_u32().is_multiple_of(4) {
            let applied = runtime.execute(request);
            env.record(Record::Fault(Fault::BuildInterrupted { applied: Some(applied.is_ok()) }));
        } else {
            env.record(Record::Fault(Fault::BuildInterrupted { applied: None }));
        }
        env.stats.other_faults += 1;
        Err(RuntimeError::Uncertain("error reading the build's output: unexpected EOF".into()))
    }

    /// `copy-refused`: the disk fills up partway through the archive: the files before the one
    /// that failed are written, as Docker's extraction leaves them.
    fn refused_copy(env: &mut Env, runtime: &mut SimRuntime, id: &str, files: &[CopiedFile]) -> RuntimeResult {
        let written = (env.rng.next_u64() % files.len().max(1) as u64) as usize;
        let before = RuntimeRequest::CopyFiles { id: id.to_string(), files: files[..written].to_vec() };
        runtime.execute(&before)?;
        env.stats.other_faults += 1;
        let Some(failed) = files.get(written) else { return Ok(RuntimeReply::Done) };
        env.record(Record::Fault(Fault::CopyRefused { written, files: files.len() }));
        let path = failed.destination.clone();
        Err(RuntimeError::Invalid(format!(
            "Error processing tar file(exit status 1): write {path}: no space left on device"
        )))
    }

    /// Docker removes a container in two steps: `removing` at once (a running one is killed
    /// first when forced), gone a moment later. Returns when it will be gone.
    pub fn begin_removal(
        &mut self,
        env: &mut Env,
        runtime: &mut SimRuntime,
        now: MonoTime,
        id_or_name: &str,
        force: bool,
    ) -> Result<MonoTime, RuntimeError> {
        let container = runtime.begin_removal(id_or_name, force)?;
        let done = now + env.draw(self.knobs.removal_takes);
        env.owe(done, Event::RemovalDone { container });
        Ok(done)
    }

    /// Wake the world when the runtime's next main process ends by itself.
    pub fn follow_runtime_clock(&mut self, env: &mut Env, runtime: &SimRuntime) {
        let Some(due) = runtime.next_due().map(super::processes::mono_at) else { return };
        if self.due_at.is_some_and(|at| at <= due && at >= env.now()) {
            return;
        }
        self.due_at = Some(due);
        env.at(due, Event::RuntimeDue);
    }

    /// The wake for the runtime's clock at `now` happened.
    pub fn runtime_clock_woke(&mut self, now: MonoTime) {
        if self.due_at.is_some_and(|at| at <= now) {
            self.due_at = None;
        }
    }

    /// A list leaves out containers whose create is still completing.
    fn unlisted_while_completing(&mut self, now: MonoTime, result: RuntimeResult) -> RuntimeResult {
        let Ok(RuntimeReply::Containers(found)) = result else { return result };
        self.completing.retain(|_, until| *until > now);
        Ok(RuntimeReply::Containers(found.into_iter().filter(|c| !self.completing.contains_key(&c.id)).collect()))
    }

    /// A just-created container the notfound-after-create fault still hides from an inspection:
    /// the name or id the inspection asked for, and the container's id.
    fn hidden_from_inspection(
        &mut self,
        runtime: &SimRuntime,
        now: MonoTime,
        request: &RuntimeRequest,
    ) -> Option<(String, String)> {
        let RuntimeRequest::InspectContainer { id } = request else { return None };
        let container = runtime.container(id)?.id.clone();
        self.hidden.retain(|_, until| *until > now);
        self.hidden.contains_key(&container).then(|| (id.clone(), container))
    }

    /// The faults that strike once a request applied: a fresh container hidden from inspection for
    /// a moment, a lost reply. Returns what the caller will be told, and whether the reply was lost.
    pub fn after_apply(
        &mut self,
        env: &mut Env,
        now: MonoTime,
        request: &RuntimeRequest,
        result: RuntimeResult,
    ) -> (RuntimeResult, bool) {
        let mut told = result;
        let mut lost = false;
        if let RuntimeRequest::CreateContainer(_) = request
            && told.is_ok()
        {
            env.stats.runtime_creates += 1;
            if let Ok(RuntimeReply::Created { id }) = &told
                && env.fires(FaultKind::NotFoundAfterCreate)
            {
                let until = now + env.draw(self.knobs.hidden_for);
                self.hidden.insert(id.clone(), until);
            }
            if env.fires(FaultKind::UncertainCreate) {
                env.stats.uncertain_creates += 1;
                env.record(Record::Fault(Fault::UncertainCreate));
                if let Ok(RuntimeReply::Created { id }) = &told
                    && env.fires(FaultKind::NotFoundAfterCreate)
                {
                    // The client went away mid-create (as a killed engine does): Docker holds the
                    // name at once but shows the container only once the create completes.
                    env.record(Record::Fault(Fault::CreateCompletesLater));
                    let until = now + env.draw(self.knobs.hidden_for);
                    self.hidden.insert(id.clone(), until);
                    self.completing.insert(id.clone(), until);
                }
                told = Err(RuntimeError::Uncertain("connection reset by peer after the request was sent".into()));
                lost = true;
            }
        }
        // Any other object's create (a network's, a volume's: every kind the contract classifies
        // as one) may lose its reply the same way.
        let (object, verb) = request.class();
        if verb == Verb::Create
            && object != RuntimeObject::Container
            && told.is_ok()
            && env.fires(FaultKind::UncertainCreate)
        {
            env.stats.uncertain_creates += 1;
            env.record(Record::Fault(Fault::UncertainCreate));
            told = Err(RuntimeError::Uncertain("connection reset by peer after the request was sent".into()));
            lost = true;
        }
        // Any removal but an image's (the engine never removes images it pulled).
        if verb == Verb::Remove
            && object != RuntimeObject::Image
            && told.is_ok()
            && env.fires(FaultKind::UncertainRemove)
        {
            env.record(Record::Fault(Fault::UncertainRemove));
            env.stats.other_faults += 1;
            told = Err(RuntimeError::Uncertain("context deadline exceeded after the request was sent".into()));
            lost = true;
        }
        (told, lost)
    }

    /// A create applied but its caller will not learn so (its reply lost, or it hangs):
    /// `disrupt-while-uncertain` may schedule an outside act on it within the window.
    pub fn disrupt_uncertain_create(&self, env: &mut Env, now: MonoTime, request: &RuntimeRequest) {
        let RuntimeRequest::CreateContainer(create) = request else { return };
        if !env.fires(FaultKind::DisruptWhileUncertain) {
            return;
        }
        // A daemon restart is a runtime restart: a plan without those (as `scale`'s, where a
        // restart stops the whole world) removes the container instead. One draw either way.
        let restarts = env.enables(FaultKind::RuntimeRestart);
        let disruption = match env.rng.next_u32() % 3 {
            0 => Disruption::RemoveImage(create.image.clone()),
            1 if restarts => Disruption::RestartDaemon,
            _ => Disruption::RemoveContainer(create.name.clone()),
        };
        let at = now + env.draw(self.knobs.disrupt_within);
        env.stats.other_faults += 1;
        env.record(Record::Fault(Fault::DisruptScheduled { disruption: disruption.traced(), at }));
        // Owed: a disruption drawn before the heal that lands after it is still the fault's act,
        // and the world is not quiet (nor judged converged) until it happened.
        env.owe(at, Event::Disrupt(disruption));
    }

    /// The answer to an applied request goes back (not before `busy_until`, when the request
    /// completes), unless the request hangs.
    #[allow(clippy::too_many_arguments)]
    pub fn reply(
        &mut self,
        env: &mut Env,
        now: MonoTime,
        process: usize,
        id: OpId,
        result: RuntimeResult,
        hangs: bool,
        busy_until: Option<MonoTime>,
    ) {
        if hangs {
            env.record(Record::Fault(Fault::HungApplied));
            self.hung.insert((process, id));
            env.paid();
            return;
        }
        let at = (now + env.draw(self.knobs.latency) / self.knobs.reply_divisor).max(busy_until.unwrap_or(now));
        // The request's debt carries over to its reply.
        env.at(at, Event::RuntimeReply { process, id, result: Box::new(result) });
    }
}
