//! drydock-faults: the fault catalog and per-seed fault plans.
//!
//! Each [`FaultKind`] names the real bug class it models. A [`FaultPlan`] is drawn per seed
//! (swarm testing: a random subset of kinds, each at a random rate), so different seeds stress
//! different combinations instead of every seed getting a thin spread of everything. The plan's
//! heal switch turns every fault off for the liveness phase, after which the system must converge.

use rand_core::RngCore;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A kind of fault the simulator can inject.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// A runtime create is applied but its reply is lost: the caller sees "outcome unknown".
    UncertainCreate,
    /// Watch events reach an engine process late, so it acts on a stale cache.
    StaleCache,
    /// A runtime remove is applied but its reply is lost.
    UncertainRemove,
    /// A runtime request fails with a daemon error (HTTP 500) and is not applied.
    TransientRuntimeError,
    /// A container just created is not yet visible to inspection (NotFound for a moment).
    NotFoundAfterCreate,
    /// A store write fails with Conflict although its precondition held (a competing writer).
    StoreConflict,
    /// A runtime request takes many times its usual latency.
    SlowRuntime,
    /// A runtime request never answers (it may or may not have been applied).
    HungRuntime,
    /// The runtime daemon restarts: running containers stop, event streams drop, requests in
    /// flight fail.
    RuntimeRestart,
    /// Someone removes a container or an image behind drydock's back (`docker rm -f`, `docker rmi`).
    ExternalRemoval,
    /// A store write is applied but its reply is lost.
    UncertainStoreWrite,
    /// An engine's watch breaks with Gone (its resource version was compacted): events in flight
    /// are lost and it must relist.
    WatchGone,
    /// Watch events for one object are coalesced: an intermediate state is never delivered.
    CoalescedWatch,
    /// An engine process crashes and restarts: all its memory is lost, requests in flight are
    /// still applied but their replies go nowhere.
    EngineCrash,
    /// An engine process crashes right after the first store write of a reconcile that issued
    /// several.
    CrashBetweenWrites,
    /// A second process takes a pull lease, then dies without releasing it.
    ForeignLease,
    /// An engine process's wall clock runs ahead of or behind the others'.
    ClockSkew,
    /// While a create's outcome is unknown (its reply lost, or it hangs), something disruptive
    /// happens to it from outside: its container or its image is removed, or the runtime daemon
    /// restarts.
    DisruptWhileUncertain,
    /// A log reader stops reading for a while (a client stuck behind a slow terminal or a
    /// stalled connection). Drawn only for workloads that read logs.
    ReaderStall,
    /// An image build breaks off halfway (the daemon restarted, the connection dropped, the
    /// builder died): some steps ran, nothing was tagged, and the caller cannot tell how far it
    /// got. Drawn only for workloads that build images.
    BuildInterrupted,
    /// A copy of files into a container fails partway (the disk filled up): the files before
    /// the one that failed are written, the rest are not. Drawn only for workloads that copy
    /// files.
    CopyRefused,
    /// The runtime daemon is overloaded: each request takes longer the more requests are inside
    /// it, and now and then it stalls whole for a while (Docker 20.10 deadlocked in its network
    /// code), answering nothing, then works through what queued up. Requests given up on still
    /// land when it comes back.
    RuntimeOverload,
}

impl FaultKind {
    /// Every kind: the swarm kinds, then those only some workloads draw.
    pub const ALL: [FaultKind; 22] = {
        let mut all = [FaultKind::ReaderStall; 22];
        let mut i = 0;
        while i < FaultKind::SWARM.len() {
            all[i] = FaultKind::SWARM[i];
            i += 1;
        }
        let mut j = 0;
        while j < FaultKind::WORKLOAD_DEPENDENT.len() {
            all[i + j] = FaultKind::WORKLOAD_DEPENDENT[j];
            j += 1;
        }
        let mut k = 0;
        while k < FaultKind::SWARM_LATER.len() {
            all[i + j + k] = FaultKind::SWARM_LATER[k];
            k += 1;
        }
        all
    };

    /// Swarm kinds added after the golden digests were pinned. A scenario draws them last, after
    /// the workload-dependent kinds, so that a seed whose plan leaves them off runs exactly as
    /// before (see `drydock_scenarios::Scenario::materialize`).
    pub const SWARM_LATER: [FaultKind; 1] = [FaultKind::RuntimeOverload];

    /// The kinds only some workloads draw (see [`FaultKind::SWARM`]).
    pub const WORKLOAD_DEPENDENT: [FaultKind; 3] =
        [FaultKind::ReaderStall, FaultKind::BuildInterrupted, FaultKind::CopyRefused];

    /// The kinds every swarm plan draws for. The others concern only some workloads (log
    /// readers, builds, copied files): a scenario draws them with [`FaultPlan::swarm_also`] when its workload has
    /// what they act on, so adding one changes no other scenario's runs.
    pub const SWARM: [FaultKind; 18] = [
        FaultKind::UncertainCreate,
        FaultKind::StaleCache,
        FaultKind::UncertainRemove,
        FaultKind::TransientRuntimeError,
        FaultKind::NotFoundAfterCreate,
        FaultKind::StoreConflict,
        FaultKind::SlowRuntime,
        FaultKind::HungRuntime,
        FaultKind::RuntimeRestart,
        FaultKind::ExternalRemoval,
        FaultKind::UncertainStoreWrite,
        FaultKind::WatchGone,
        FaultKind::CoalescedWatch,
        FaultKind::EngineCrash,
        FaultKind::CrashBetweenWrites,
        FaultKind::ForeignLease,
        FaultKind::ClockSkew,
        FaultKind::DisruptWhileUncertain,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FaultKind::UncertainCreate => "uncertain-create",
            FaultKind::StaleCache => "stale-cache",
            FaultKind::UncertainRemove => "uncertain-remove",
            FaultKind::TransientRuntimeError => "transient-runtime-error",
            FaultKind::NotFoundAfterCreate => "notfound-after-create",
            FaultKind::StoreConflict => "store-conflict",
            FaultKind::SlowRuntime => "slow-runtime",
            FaultKind::HungRuntime => "hung-runtime",
            FaultKind::RuntimeRestart => "runtime-restart",
            FaultKind::ExternalRemoval => "external-removal",
            FaultKind::UncertainStoreWrite => "uncertain-store-write",
            FaultKind::WatchGone => "watch-gone",
            FaultKind::CoalescedWatch => "coalesced-watch",
            FaultKind::EngineCrash => "engine-crash",
            FaultKind::CrashBetweenWrites => "crash-between-writes",
            FaultKind::ForeignLease => "foreign-lease",
            FaultKind::ClockSkew => "clock-skew",
            FaultKind::DisruptWhileUncertain => "disrupt-while-uncertain",
            FaultKind::ReaderStall => "reader-stall",
            FaultKind::BuildInterrupted => "build-interrupted",
            FaultKind::CopyRefused => "copy-refused",
            FaultKind::RuntimeOverload => "runtime-overload",
        }
    }

    /// The bug class this fault models.
    pub fn models(self) -> &'static str {
        match self {
            FaultKind::UncertainCreate => {
                "a timeout or broken connection after the daemon created the container, network or volume (Docker CLI returning an id and an error); retrying blindly leaks or duplicates them"
            }
            FaultKind::StaleCache => {
                "informer lag: a controller acts on an outdated view (Sieve's stale-state bugs, kube-rs#712)"
            }
            FaultKind::UncertainRemove => {
                "a remove (of a container, network or volume) whose reply was lost: the caller must treat NotFound on retry as done, not as an error to retry forever (RDD #188's NotFound churn)"
            }
            FaultKind::TransientRuntimeError => {
                "a daemon answering 500 (runtime unhealthy, a busy containerd): retries must back off and eventually succeed"
            }
            FaultKind::NotFoundAfterCreate => {
                "read-after-write lag in the runtime: an inspect right after create answers NotFound (DCP's bounded inspection retries)"
            }
            FaultKind::StoreConflict => {
                "409 Conflict from a competing writer (self-inflicted conflicts after a finalizer patch, hypershift#8192): retry after re-reading"
            }
            FaultKind::SlowRuntime => {
                "a daemon under load (Docker Desktop's VM waking, a slow disk): a controller must not start a second operation while the first is still running"
            }
            FaultKind::HungRuntime => {
                "a request that never returns (a wedged containerd shim, a half-open connection): without a deadline the object is stuck forever"
            }
            FaultKind::RuntimeRestart => {
                "dockerd restarted or Docker Desktop resumed: containers stop without drydock asking and the event stream ends (DCP's runtime health re-checks)"
            }
            FaultKind::ExternalRemoval => {
                "a user running `docker rm -f` or `docker rmi`, or `docker system prune`: the controller must notice and report, not recreate a container it was told exists"
            }
            FaultKind::UncertainStoreWrite => {
                "an API-server write that timed out after it committed: a retried create answers AlreadyExists, a retried update Conflict"
            }
            FaultKind::WatchGone => {
                "410 Gone after a watch fell behind compaction (client-go relists): state changes in the gap are seen only in the list, deletions only as absences"
            }
            FaultKind::CoalescedWatch => {
                "informers deliver the latest state, not every state: a controller that needs to see an intermediate state (a finalizer briefly present) misses it"
            }
            FaultKind::EngineCrash => {
                "the controller process killed mid-flight (OOM, laptop sleep, Aspire AppHost stopped): it must rebuild from the store and the runtime, adopting what it created"
            }
            FaultKind::CrashBetweenWrites => {
                "a crash between two dependent writes of one reconcile (a status recorded, its follow-up not): the next reconcile must finish or repair the half-done step"
            }
            FaultKind::ForeignLease => {
                "another DCP instance that took a pull lease and died: its lease must expire and be taken over, never ignored"
            }
            FaultKind::ClockSkew => {
                "wall clocks that disagree between processes (VM clock drift after sleep): lease expiry must tolerate skew well under the lease duration"
            }
            FaultKind::DisruptWhileUncertain => {
                "a user or a prune acting in the window where a create's outcome is unknown (`docker rmi` between two create attempts, `docker rm -f`, or a daemon restart where runtime-restart faults are enabled, before the create was verified): the retry meets a different world, and must not conclude from it what the first attempt did"
            }
            FaultKind::ReaderStall => {
                "a log client that stops reading (DCP's resource logging could deadlock on a blocked sink): the engine, deletion and every other reader must go on, and the stalled reader's stream must end once it reads again"
            }
            FaultKind::BuildInterrupted => {
                "a build whose stream broke off halfway (dockerd restarted mid-build, a dropped connection): nothing is tagged, so the image must be neither pinned nor failed for good on the builder's word, and the retry must count as an attempt"
            }
            FaultKind::CopyRefused => {
                "an archive upload the container's file system refused partway (`no space left on device`): the container must never be started without its files; the failure is terminal and visible, with Docker's message"
            }
            FaultKind::RuntimeOverload => {
                "a Docker slowing down under load and stalling whole (20.10 deadlocked in its network code with thousands of removes inside): a client that resends on every timeout floods it, and a change it gave up on lands later, beside its own retry"
            }
        }
    }

    /// The range a swarm plan draws this kind's rate from. For the external kinds the rate is the
    /// chance that each such act of the workload happens; for clock skew, the share of processes
    /// whose clock is off.
    fn rate_range(self) -> (f64, f64) {
        match self {
            FaultKind::UncertainCreate => (0.05, 0.5),
            FaultKind::StaleCache => (0.05, 0.6),
            FaultKind::UncertainRemove => (0.05, 0.5),
            FaultKind::TransientRuntimeError => (0.02, 0.3),
            FaultKind::NotFoundAfterCreate => (0.1, 0.8),
            FaultKind::StoreConflict => (0.02, 0.2),
            FaultKind::SlowRuntime => (0.02, 0.2),
            FaultKind::HungRuntime => (0.005, 0.05),
            FaultKind::RuntimeRestart => (0.02, 0.1),
            FaultKind::ExternalRemoval => (0.5, 1.0),
            FaultKind::UncertainStoreWrite => (0.02, 0.2),
            FaultKind::WatchGone => (0.002, 0.02),
            FaultKind::CoalescedWatch => (0.1, 0.6),
            FaultKind::EngineCrash => (0.002, 0.01),
            FaultKind::CrashBetweenWrites => (0.05, 0.5),
            FaultKind::ForeignLease => (0.5, 1.0),
            FaultKind::ClockSkew => (0.3, 1.0),
            FaultKind::DisruptWhileUncertain => (0.3, 1.0),
            FaultKind::ReaderStall => (0.05, 0.3),
            FaultKind::BuildInterrupted => (0.1, 0.5),
            FaultKind::CopyRefused => (0.05, 0.3),
            // The chance per request that the daemon stalls (if it is not already stalled).
            FaultKind::RuntimeOverload => (0.002, 0.02),
        }
    }

    pub fn from_name(name: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which faults fire in one run, and how often.
///
/// Every decision is a draw from the world's PRNG, numbered per kind (the `n`th draw of a kind).
/// The plan records which draws fired, so a run can be saved with its *fault decisions*
/// ([`FaultPlan::decisions`]) and replayed with exactly those decisions
/// ([`FaultPlan::scripted`]); a shrinker removes decisions one by one.
///
/// *Guarantees*: a scripted plan draws from the PRNG exactly as the unscripted plan did, so
/// replaying a run's own decisions reproduces the run bit for bit.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultPlan {
    rates: BTreeMap<FaultKind, f64>,
    healed: bool,
    /// Replay: per kind, the numbers of the draws that fire; every other draw does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    script: Option<Decisions>,
    #[serde(skip)]
    draws: BTreeMap<FaultKind, u64>,
    #[serde(skip)]
    fired: Decisions,
}

/// Per kind, the numbers of the draws that fired.
pub type Decisions = BTreeMap<FaultKind, std::collections::BTreeSet<u64>>;

impl FaultPlan {
    /// No faults at all.
    pub fn none() -> Self {
        FaultPlan::default()
    }

    /// Swarm testing: each kind is enabled with probability 1/2, at a rate drawn from its range.
    pub fn swarm(rng: &mut impl RngCore) -> Self {
        let mut plan = FaultPlan::none();
        for kind in FaultKind::SWARM {
            plan = plan.swarm_also(kind, rng);
        }
        plan
    }

    /// Swarm testing for one more kind: enabled with probability 1/2, at a rate drawn from its
    /// range.
    pub fn swarm_also(mut self, kind: FaultKind, rng: &mut impl RngCore) -> Self {
        let enabled = rng.next_u32().is_multiple_of(2);
        let (lo, hi) = kind.rate_range();
        let rate = lo + (hi - lo) * unit(rng);
        if enabled {
            self.rates.insert(kind, rate);
        }
        self
    }

    pub fn with(mut self, kind: FaultKind, rate: f64) -> Self {
        self.rates.insert(kind, rate.clamp(0.0, 1.0));
        self
    }

    /// The same plan without `kind`.
    pub fn without(mut self, kind: FaultKind) -> Self {
        self.rates.remove(&kind);
        if let Some(script) = &mut self.script {
            script.remove(&kind);
        }
        self
    }

    /// The same plan, deciding exactly as `decisions` say (see the type's doc).
    pub fn scripted(mut self, decisions: Decisions) -> Self {
        self.script = Some(decisions);
        self
    }

    /// The script this plan replays, if any.
    pub fn script(&self) -> Option<&Decisions> {
        self.script.as_ref()
    }

    /// The kinds enabled (before healing) with their rates.
    pub fn enabled(&self) -> impl Iterator<Item = (FaultKind, f64)> + '_ {
        self.rates.iter().map(|(k, r)| (*k, *r))
    }

    /// The current rate of `kind`: zero once healed.
    pub fn rate(&self, kind: FaultKind) -> f64 {
        if self.healed { 0.0 } else { self.rates.get(&kind).copied().unwrap_or(0.0) }
    }

    /// Whether `kind` fires now. Draws from `rng` only if the kind is enabled, so enabling one
    /// kind does not shift the random stream of runs that never use it.
    pub fn fires(&mut self, kind: FaultKind, rng: &mut impl RngCore) -> bool {
        let rate = self.rate(kind);
        if rate <= 0.0 {
            return false;
        }
        let draw = unit(rng);
        let n = self.draws.entry(kind).or_default();
        let number = *n;
        *n += 1;
        let fires = match &self.script {
            Some(script) => script.get(&kind).is_some_and(|fired| fired.contains(&number)),
            None => draw < rate,
        };
        if fires {
            self.fired.entry(kind).or_default().insert(number);
        }
        fires
    }

    /// The decisions that fired so far.
    pub fn decisions(&self) -> &Decisions {
        &self.fired
    }

    /// How many times each kind fired so far (kinds that never fired are absent).
    pub fn counts(&self) -> BTreeMap<FaultKind, u64> {
        self.fired.iter().map(|(k, fired)| (*k, fired.len() as u64)).collect()
    }

    /// Turn every fault off: the liveness phase begins.
    pub fn heal(&mut self) {
        self.healed = true;
    }

    pub fn is_healed(&self) -> bool {
        self.healed
    }

    /// `uncertain-create=0.21,stale-cache=0.40` (or `none`).
    pub fn describe(&self) -> String {
        if self.rates.is_empty() {
            return "none".into();
        }
        // The same text scripted or not: it is part of the trace, and a replay must match it.
        self.rates.iter().map(|(k, r)| format!("{k}={r:.2}")).collect::<Vec<_>>().join(",")
    }
}

/// Which faults a run gets: the scenario's default (a swarm plan per seed), none, or exactly
/// the listed kinds (at the given rate, or a rate drawn per seed).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum FaultSelection {
    #[default]
    Default,
    None,
    Only(Vec<(FaultKind, Option<f64>)>),
}

impl FaultSelection {
    /// `none`, `default`, or `KIND[=RATE],...` (e.g. `uncertain-create=0.3,stale-cache`).
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "default" => return Ok(FaultSelection::Default),
            "none" => return Ok(FaultSelection::None),
            _ => {}
        }
        let mut kinds = Vec::new();
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (name, rate) = match item.split_once('=') {
                Some((name, rate)) => {
                    let rate: f64 =
                        rate.parse().map_err(|_| format!("{item:?}: the rate must be a number between 0 and 1"))?;
                    if !(0.0..=1.0).contains(&rate) {
                        return Err(format!("{item:?}: the rate must be between 0 and 1"));
                    }
                    (name, Some(rate))
                }
                None => (item, None),
            };
            let kind = FaultKind::from_name(name).ok_or_else(|| {
                let known: Vec<&str> = FaultKind::ALL.iter().map(|k| k.name()).collect();
                format!("unknown fault kind {name:?}; known kinds: {}", known.join(", "))
            })?;
            kinds.push((kind, rate));
        }
        if kinds.is_empty() {
            return Err("no fault kinds given: use none, default, or KIND[=RATE],...".into());
        }
        Ok(FaultSelection::Only(kinds))
    }

    /// The plan of one seed under this selection; `scenario_default` says whether the scenario
    /// draws faults at all by default.
    pub fn plan(&self, scenario_default: bool, rng: &mut impl RngCore) -> FaultPlan {
        match self {
            FaultSelection::Default if scenario_default => FaultPlan::swarm(rng),
            FaultSelection::Default | FaultSelection::None => FaultPlan::none(),
            FaultSelection::Only(kinds) => {
                let mut plan = FaultPlan::none();
                for (kind, rate) in kinds {
                    let (lo, hi) = kind.rate_range();
                    let rate = rate.unwrap_or_else(|| lo + (hi - lo) * unit(rng));
                    plan = plan.with(*kind, rate);
                }
                plan
            }
        }
    }
}

/// A uniform draw in [0, 1).
pub fn unit(rng: &mut impl RngCore) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    #[test]
    fn swarm_plans_vary_by_seed_and_stay_in_range() {
        let plans: Vec<FaultPlan> = (0..64).map(|s| FaultPlan::swarm(&mut ChaCha8Rng::seed_from_u64(s))).collect();
        for kind in FaultKind::SWARM {
            let on = plans.iter().filter(|p| p.rate(kind) > 0.0).count();
            assert!(on > 10 && on < 54, "{kind} enabled in {on}/64 plans");
            let (lo, hi) = kind.rate_range();
            assert!(plans.iter().all(|p| p.rate(kind) == 0.0 || (lo..hi).contains(&p.rate(kind))));
        }
        assert_eq!(
            FaultPlan::swarm(&mut ChaCha8Rng::seed_from_u64(7)),
            FaultPlan::swarm(&mut ChaCha8Rng::seed_from_u64(7))
        );
    }

    #[test]
    fn heal_turns_everything_off() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut plan = FaultPlan::none().with(FaultKind::UncertainCreate, 1.0);
        assert!(plan.fires(FaultKind::UncertainCreate, &mut rng));
        assert!(!plan.fires(FaultKind::StaleCache, &mut rng));
        plan.heal();
        assert!(!plan.fires(FaultKind::UncertainCreate, &mut rng));
        assert_eq!(plan.enabled().count(), 1, "the plan remembers what it had");
    }

    #[test]
    fn a_script_replays_the_decisions_it_recorded_and_can_drop_some() {
        let original = FaultPlan::none().with(FaultKind::StaleCache, 0.5).with(FaultKind::UncertainCreate, 0.3);
        let run = |mut plan: FaultPlan| {
            let mut rng = ChaCha8Rng::seed_from_u64(9);
            let fired: Vec<bool> = (0..200).map(|i| plan.fires(FaultKind::ALL[i % 2], &mut rng)).collect();
            (fired, plan.decisions().clone(), rng.next_u64())
        };
        let (fired, decisions, tail) = run(original.clone());
        assert!(fired.iter().any(|f| *f) && fired.iter().any(|f| !*f));
        let replayed = run(original.clone().scripted(decisions.clone()));
        assert_eq!((fired.clone(), tail), (replayed.0, replayed.2), "same decisions, same random stream");
        // Drop one decision: exactly that draw stops firing.
        let mut fewer = decisions.clone();
        let first = *fewer[&FaultKind::StaleCache].iter().next().unwrap();
        fewer.get_mut(&FaultKind::StaleCache).unwrap().remove(&first);
        let (shrunk, _, _) = run(original.scripted(fewer));
        let differing = fired.iter().zip(&shrunk).filter(|(a, b)| a != b).count();
        assert_eq!(differing, 1);
    }

    #[test]
    fn selections_parse_and_reject_nonsense() {
        assert_eq!(FaultSelection::parse("none"), Ok(FaultSelection::None));
        assert_eq!(FaultSelection::parse("default"), Ok(FaultSelection::Default));
        let only = FaultSelection::parse("uncertain-create=0.3, stale-cache").unwrap();
        let plan = only.plan(false, &mut ChaCha8Rng::seed_from_u64(1));
        assert_eq!(plan.rate(FaultKind::UncertainCreate), 0.3);
        assert!(plan.rate(FaultKind::StaleCache) > 0.0);
        assert_eq!(plan.rate(FaultKind::StoreConflict), 0.0);
        assert!(FaultSelection::parse("bogus").unwrap_err().contains("known kinds"));
        assert!(FaultSelection::parse("stale-cache=2").is_err());
        assert!(FaultSelection::parse("").is_err());
    }

    #[test]
    fn names_round_trip() {
        for kind in FaultKind::ALL {
            assert_eq!(FaultKind::from_name(kind.name()), Some(kind));
        }
    }
}
