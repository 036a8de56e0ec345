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
}

impl FaultKind {
    pub const ALL: [FaultKind; 6] = [
        FaultKind::UncertainCreate,
        FaultKind::StaleCache,
        FaultKind::UncertainRemove,
        FaultKind::TransientRuntimeError,
        FaultKind::NotFoundAfterCreate,
        FaultKind::StoreConflict,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FaultKind::UncertainCreate => "uncertain-create",
            FaultKind::StaleCache => "stale-cache",
            FaultKind::UncertainRemove => "uncertain-remove",
            FaultKind::TransientRuntimeError => "transient-runtime-error",
            FaultKind::NotFoundAfterCreate => "notfound-after-create",
            FaultKind::StoreConflict => "store-conflict",
        }
    }

    /// The bug class this fault models.
    pub fn models(self) -> &'static str {
        match self {
            FaultKind::UncertainCreate => {
                "a timeout or broken connection after the daemon created the container (Docker CLI returning an id and an error); retrying blindly leaks or duplicates containers"
            }
            FaultKind::StaleCache => {
                "informer lag: a controller acts on an outdated view (Sieve's stale-state bugs, kube-rs#712)"
            }
            FaultKind::UncertainRemove => {
                "a remove whose reply was lost: the caller must treat NotFound on retry as done, not as an error to retry forever (RDD #188's NotFound churn)"
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
        }
    }

    /// The range a swarm plan draws this kind's rate from.
    fn rate_range(self) -> (f64, f64) {
        match self {
            FaultKind::UncertainCreate => (0.05, 0.5),
            FaultKind::StaleCache => (0.05, 0.6),
            FaultKind::UncertainRemove => (0.05, 0.5),
            FaultKind::TransientRuntimeError => (0.02, 0.3),
            FaultKind::NotFoundAfterCreate => (0.1, 0.8),
            FaultKind::StoreConflict => (0.02, 0.2),
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
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultPlan {
    rates: BTreeMap<FaultKind, f64>,
    healed: bool,
}

impl FaultPlan {
    /// No faults at all.
    pub fn none() -> Self {
        FaultPlan::default()
    }

    /// Swarm testing: each kind is enabled with probability 1/2, at a rate drawn from its range.
    pub fn swarm(rng: &mut impl RngCore) -> Self {
        let mut plan = FaultPlan::none();
        for kind in FaultKind::ALL {
            let enabled = rng.next_u32().is_multiple_of(2);
            let (lo, hi) = kind.rate_range();
            let rate = lo + (hi - lo) * unit(rng);
            if enabled {
                plan.rates.insert(kind, rate);
            }
        }
        plan
    }

    pub fn with(mut self, kind: FaultKind, rate: f64) -> Self {
        self.rates.insert(kind, rate.clamp(0.0, 1.0));
        self
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
    pub fn fires(&self, kind: FaultKind, rng: &mut impl RngCore) -> bool {
        let rate = self.rate(kind);
        rate > 0.0 && unit(rng) < rate
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
        for kind in FaultKind::ALL {
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
