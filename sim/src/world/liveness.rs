//! The eventual properties. During the *safety* phase the workload plays and faults fire. When the
//! workload is done the faults heal and the *liveness* phase begins: the world must reach desired ==
//! actual within the convergence bound (`convergence`), with no object rewritten over and over on
//! the way (`no-oscillation`), and then stay quiet for the settle time (`quiescence`).

use crate::checker::View;
use crate::checker::efficiency::{WorkCounter, WorkLimits, WorkPeaks};
use drydock_engine::MonoTime;
use drydock_engine::api::ObjectKey;
use drydock_engine::fixed::FixedMap;
use drydock_engine::store::{Store, StoreReply, StoreRequest, StoreResult};
use std::collections::BTreeMap;
use std::time::Duration;

/// The eventual properties' bounds.
#[derive(Clone, Debug)]
pub struct LivenessKnobs {
    /// After faults heal, desired must equal actual within this much simulated time.
    pub convergence_bound: Duration,
    /// Once converged, the store must stay unwritten this long.
    pub settle: Duration,
    /// Writes to one object after faults heal, with no client acting, beyond which it oscillates.
    pub oscillation_bound: u32,
    /// A run that takes more events than this fails (a livelock guard).
    pub max_events: u64,
    /// The work objects and processes may do after the heal (the efficiency checker).
    pub work: WorkLimits,
}

impl Default for LivenessKnobs {
    fn default() -> Self {
        LivenessKnobs {
            convergence_bound: Duration::from_secs(120),
            settle: Duration::from_secs(65),
            oscillation_bound: 30,
            max_events: 2_000_000,
            work: WorkLimits::default(),
        }
    }
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum Phase {
    Safety,
    Liveness { healed_at: MonoTime },
    Settling { converged_at: MonoTime, revision: u64 },
}

/// Why the world is not quiet.
#[derive(Copy, Clone, Debug)]
pub(super) enum Busy {
    InFlight(u64),
    ProcessEnding(MonoTime),
    Down(usize),
    Relisting(usize),
    Waiting(usize, usize),
    Retrying(usize, usize),
    Settling(usize),
    WorkDue(usize),
}

impl std::fmt::Display for Busy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Busy::InFlight(n) => write!(f, "{n} requests, deliveries or fault acts still in flight"),
            Busy::ProcessEnding(at) => write!(f, "a container's main process ends by itself at {at}"),
            Busy::Down(p) => write!(f, "process p{p} is down"),
            Busy::Relisting(p) => write!(f, "process p{p} has not relisted yet"),
            Busy::Waiting(p, n) => write!(f, "process p{p} waits for {n} replies"),
            Busy::Retrying(p, n) => write!(f, "process p{p} has {n} reconciles backing off after failures"),
            Busy::Settling(p) => write!(f, "process p{p} waits for a change it gave up on to settle"),
            Busy::WorkDue(p) => write!(f, "process p{p} has work due"),
        }
    }
}

/// Where a run stands after an event.
pub(super) enum Verdict {
    Running,
    Done,
    Failed(&'static str, String),
}

pub(super) struct Liveness {
    knobs: LivenessKnobs,
    phase: Phase,
    /// When faults healed.
    healed_at: Option<MonoTime>,
    /// Store writes per object since faults healed (the oscillation detector).
    heal_writes: FixedMap<ObjectKey, u32>,
    /// The objects written more than the bound allows since the heal, by their printed key, with
    /// their writes: kept as the writes happen, so the judge reads the first rather than scanning
    /// every object written since the heal after every event.
    oscillating: BTreeMap<String, u32>,
    /// Work since faults healed (the efficiency checker), and its first excess.
    work: WorkCounter,
    wasted: Option<String>,
    /// When the judge must look next, whatever else happens (taken by the world).
    wake: Option<MonoTime>,
    /// Simulated seconds from heal to convergence.
    pub convergence_secs: f64,
}

impl Liveness {
    pub fn new(knobs: &LivenessKnobs) -> Self {
        Liveness {
            knobs: knobs.clone(),
            phase: Phase::Safety,
            healed_at: None,
            heal_writes: FixedMap::default(),
            oscillating: BTreeMap::new(),
            work: WorkCounter::new(knobs.work.clone()),
            wasted: None,
            wake: None,
            convergence_secs: 0.0,
        }
    }

    /// Faults healed at `now`: the liveness phase begins.
    pub fn heal(&mut self, now: MonoTime) {
        self.phase = Phase::Liveness { healed_at: now };
        self.healed_at = Some(now);
        self.wake = Some(now + self.knobs.convergence_bound + Duration::from_millis(1));
    }

    /// When the judge must look at the world next even if nothing happens, once.
    pub fn take_wake(&mut self) -> Option<MonoTime> {
        self.wake.take()
    }

    /// A reconcile of `key` sent a request at `now` (`runtime`: to the runtime, else a store
    /// write; `changes`: it would change something, as a create, start, stop, remove or pull
    /// does): after the heal, it counts against the object's work budget, and once the world has
    /// converged a change is work a quiet world must not do.
    pub fn sent(
        &mut self,
        now: MonoTime,
        key: &ObjectKey,
        runtime: bool,
        changes: bool,
        what: impl FnOnce() -> String,
    ) {
        let Some(healed_at) = self.healed_at else { return };
        if changes && matches!(self.phase, Phase::Settling { .. }) && self.wasted.is_none() {
            self.wasted = Some(format!("{key} sent `{}` after the world converged with nothing changing", what()));
            return;
        }
        if self.wasted.is_none()
            && let Err(message) = self.work.sent(now.since(healed_at), key, runtime, what)
        {
            self.wasted = Some(message);
        }
    }

    /// The most work any object did in one window after the heal.
    pub fn work_peaks(&self) -> WorkPeaks {
        self.work.peaks.clone()
    }

    /// A store request of an engine applied: after the heal, count the rewrites it made.
    ///
    /// A write that hands a lease over (`handed_over`: another holder, or none) is not counted:
    /// it is parties taking turns, each bounded by its own work (a pull lease let go while a
    /// failed pull backs off, taken by the next resource of the reference). A holder renewing
    /// its lease counts.
    pub fn stored(&mut self, request: &StoreRequest, result: &StoreResult, handed_over: bool) {
        if let (false, false, false, Ok(StoreReply::Object(object))) =
            (matches!(self.phase, Phase::Safety), request.is_read(), handed_over, result)
        {
            let writes = self.heal_writes.entry(object.key()).or_default();
            *writes += 1;
            if *writes > self.knobs.oscillation_bound {
                self.oscillating.insert(object.key().to_string(), *writes);
            }
        }
    }

    /// Judge the run after an event at `now`. `busy` says what keeps the world from being quiet;
    /// `reconciles` is each process's reconcile count so far.
    pub fn judge(
        &mut self,
        now: MonoTime,
        events: u64,
        view: &View<'_>,
        reconciles: impl Iterator<Item = u64>,
        busy: impl Fn() -> Option<Busy>,
        converged: impl Fn(&View<'_>) -> Result<(), String>,
    ) -> Verdict {
        if let Some(healed_at) = self.healed_at {
            let objects = view.store.len();
            for (process, total) in reconciles.enumerate() {
                if self.wasted.is_none()
                    && let Err(message) = self.work.reconciled(now.since(healed_at), process, total, objects)
                {
                    self.wasted = Some(message);
                }
            }
        }
        if let Some(message) = self.wasted.take() {
            return Verdict::Failed("efficiency", message);
        }
        if events >= self.knobs.max_events {
            let message = format!("the run did not finish within {} events", self.knobs.max_events);
            return Verdict::Failed("event-budget", message);
        }
        if let Some((key, writes)) = self.oscillating.iter().next() {
            let message =
                format!("{key} was written {writes} times after faults healed, with no client acting: it oscillates");
            return Verdict::Failed("no-oscillation", message);
        }
        match self.phase {
            Phase::Safety => Verdict::Running,
            Phase::Liveness { healed_at } => {
                if busy().is_none() && converged(view).is_ok() {
                    self.convergence_secs = now.since(healed_at).as_secs_f64();
                    self.phase = Phase::Settling { converged_at: now, revision: view.store.resource_version() };
                    self.wake = Some(now + self.knobs.settle);
                    return Verdict::Running;
                }
                if now.since(healed_at) > self.knobs.convergence_bound {
                    let why = converged(view)
                        .err()
                        .unwrap_or_else(|| busy().map_or_else(|| "not quiet".into(), |b| b.to_string()));
                    let message =
                        format!("not converged {}s after faults healed: {why}", self.knobs.convergence_bound.as_secs());
                    return Verdict::Failed("convergence", message);
                }
                Verdict::Running
            }
            Phase::Settling { converged_at, revision } => {
                if view.store.resource_version() != revision {
                    let changed = first_change(view.store, revision);
                    let message = format!("{changed} was rewritten after the world converged with nothing changing");
                    return Verdict::Failed("quiescence", message);
                }
                if now.since(converged_at) >= self.knobs.settle { Verdict::Done } else { Verdict::Running }
            }
        }
    }
}

/// The key of the first object written after `revision`.
fn first_change(store: &Store, revision: u64) -> String {
    store.events_since(revision).ok().and_then(|mut e| e.next().map(|e| e.object.key().to_string())).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::SimRuntime;
    use drydock_engine::api::{Object, ObjectMeta};
    use drydock_engine::store::{Registry, StoreConfig};

    fn status_write(liveness: &mut Liveness, name: &str) {
        let meta = ObjectMeta { name: name.into(), namespace: Some("ns".into()), ..Default::default() };
        let object = Object::new("PhysicalContainer", meta, serde_json::json!({}));
        let request = StoreRequest::UpdateStatus { object: object.clone() };
        liveness.stored(&request, &Ok(StoreReply::Object(object.into())), false);
    }

    /// An object rewritten more often than the bound after the heal fails the run as
    /// `no-oscillation`, naming the first such object in key order with its writes so far; writes
    /// before the heal and writes up to the bound do not count against anyone.
    #[test]
    fn an_object_rewritten_past_the_bound_after_the_heal_oscillates() {
        let knobs = LivenessKnobs { oscillation_bound: 3, ..Default::default() };
        let mut liveness = Liveness::new(&knobs);
        let store = Store::in_memory(Registry::builtin(), StoreConfig::default());
        let runtime = SimRuntime::new(1);
        let view = View::of(&store, &runtime);
        let judge = |liveness: &mut Liveness| match liveness.judge(
            MonoTime::ZERO,
            0,
            &view,
            std::iter::empty(),
            || None,
            |_: &View<'_>| Err("not yet".to_string()),
        ) {
            Verdict::Failed(invariant, message) => Some((invariant, message)),
            Verdict::Running | Verdict::Done => None,
        };
        for _ in 0..10 {
            status_write(&mut liveness, "before-heal");
        }
        liveness.heal(MonoTime::ZERO);
        for _ in 0..3 {
            status_write(&mut liveness, "b");
            status_write(&mut liveness, "a");
        }
        assert_eq!(judge(&mut liveness), None, "three writes each are within the bound");
        status_write(&mut liveness, "b");
        status_write(&mut liveness, "b");
        status_write(&mut liveness, "a");
        let first =
            "PhysicalContainer/ns/a was written 4 times after faults healed, with no client acting: it oscillates";
        let (invariant, message) = judge(&mut liveness).expect("two objects past the bound");
        assert_eq!(invariant, "no-oscillation");
        assert_eq!(message, first);
        assert_eq!(judge(&mut liveness).map(|(_, m)| m).as_deref(), Some(first), "the verdict stands");
    }

    /// A lease handed from holder to holder is not rewritten by anyone in particular: those
    /// writes do not count, and its holder's renewals do.
    #[test]
    fn lease_hand_overs_do_not_count_as_rewrites() {
        let knobs = LivenessKnobs { oscillation_bound: 3, ..Default::default() };
        let mut liveness = Liveness::new(&knobs);
        liveness.heal(MonoTime::ZERO);
        let lease =
            Object::new("Lease", ObjectMeta { name: "pull-x".into(), ..Default::default() }, serde_json::json!({}));
        let write = |liveness: &mut Liveness, handed_over: bool| {
            let request = StoreRequest::Update { object: lease.clone() };
            liveness.stored(&request, &Ok(StoreReply::Object(lease.clone().into())), handed_over);
        };
        for _ in 0..10 {
            write(&mut liveness, true);
        }
        assert!(liveness.oscillating.is_empty(), "hand-overs: {:?}", liveness.oscillating);
        for _ in 0..4 {
            write(&mut liveness, false);
        }
        assert_eq!(liveness.oscillating.get("Lease/pull-x"), Some(&4), "renewals count");
    }
}
