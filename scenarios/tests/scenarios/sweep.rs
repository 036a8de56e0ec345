//! A few hundred seeds of `basic`: no failures, stable digests, distinct runs, faults really fired.

use std::collections::BTreeSet;

const SEEDS: u64 = 300;

#[test]
fn basic_sweep_has_no_failures_and_stable_distinct_digests() {
    let scenario = drydock_scenarios::find("basic").unwrap();
    let mut digests = BTreeSet::new();
    let (mut uncertain, mut stale, mut creates, mut events, mut other) = (0, 0, 0, 0, 0);
    for seed in 0..SEEDS {
        let report = scenario.run(seed, false);
        assert!(report.ok, "seed {seed} failed: {:?}", report.violations);
        let again = scenario.run(seed, false);
        assert_eq!(report.digest, again.digest, "seed {seed} is not deterministic");
        assert_eq!(report.events, again.events);
        digests.insert(report.digest);
        uncertain += report.stats.uncertain_creates;
        stale += report.stats.stale_deliveries;
        creates += report.stats.runtime_creates;
        other += report.stats.other_faults;
        events += report.events;
    }
    assert_eq!(digests.len() as u64, SEEDS, "different seeds must give different runs");
    assert!(uncertain > 50, "uncertain creates fired only {uncertain} times");
    assert!(stale > 500, "stale deliveries happened only {stale} times");
    assert!(creates > 1000, "only {creates} runtime creates");
    assert!(other > 100, "the other fault kinds fired only {other} times");
    assert!(events > 30_000, "only {events} events");
}

#[test]
fn calm_runs_inject_no_faults() {
    let scenario = drydock_scenarios::find("basic-calm").unwrap();
    for seed in 0..20 {
        let report = scenario.run(seed, false);
        assert!(report.ok, "seed {seed}: {:?}", report.violations);
        assert_eq!(
            (report.stats.uncertain_creates, report.stats.stale_deliveries, report.stats.other_faults),
            (0, 0, 0)
        );
        assert_eq!(report.faults, "none");
    }
}

#[test]
fn a_trace_is_kept_on_request_and_matches_the_digest() {
    let scenario = drydock_scenarios::find("basic").unwrap();
    let report = scenario.run(7, true);
    let events = report.trace.as_ref().unwrap();
    assert_eq!(events.len() as u64, report.events);
    assert!(events.iter().any(|e| e.line.contains("client create Namespace/")));
    assert_eq!(scenario.run(7, false).digest, report.digest, "keeping the trace does not change the run");
}

/// Every scenario, a few dozen seeds each: no failures, deterministic.
#[test]
fn every_scenario_passes_a_short_sweep() {
    for scenario in drydock_scenarios::all().iter().filter(|s| !s.expect_failures) {
        for seed in 0..40 {
            let report = scenario.run(seed, false);
            assert!(report.ok, "{} seed {seed} failed: {:?}", scenario.name, report.violations);
            // What `probes::reachable` leaves out is never hit: it only leaves out what cannot be.
            for probe in report.probes.keys() {
                assert!(
                    report.probes_reachable.contains(probe),
                    "{} seed {seed} hit {probe}, which it says the run cannot reach",
                    scenario.name
                );
            }
        }
        let (a, b) = (scenario.run(3, false), scenario.run(3, false));
        assert_eq!(a.digest, b.digest, "{} is not deterministic", scenario.name);
    }
}

/// The probes a run can reach follow from what it is made of: a world of namespaces only (the
/// example controller's) reaches no pull, lease, container or log probe; `mixed`, with
/// everything, can reach every probe.
#[test]
fn the_probes_a_run_can_reach_follow_from_its_workload_and_faults() {
    use drydock_sim::probes::Probe;
    let union = |name: &str| -> BTreeSet<Probe> {
        let scenario = drydock_scenarios::find(name).unwrap();
        (0..20).flat_map(|seed| scenario.run(seed, false).probes_reachable).collect()
    };
    let namespaces_only = union("rdd-namespaces");
    for probe in [
        Probe::PullCancelled,
        Probe::PullAvoidedUnderLease,
        Probe::LeaseContended,
        Probe::NamespaceDeletedDuringPull,
        Probe::CrashDuringCreate,
        Probe::StartFailedForGood,
        Probe::PersistentReused,
        Probe::FollowerEndedByDeletion,
    ] {
        assert!(!namespaces_only.contains(&probe), "rdd-namespaces could reach {probe}");
    }
    assert!(namespaces_only.contains(&Probe::ConflictRetried), "{namespaces_only:?}");
    let mixed = union("mixed");
    assert_eq!(
        mixed.len(),
        Probe::ALL.len(),
        "mixed cannot reach {:?}",
        Probe::ALL.iter().filter(|p| !mixed.contains(p)).collect::<Vec<_>>()
    );

    // Faults make the probes that need them reachable: none, then the one.
    let basic = drydock_scenarios::find("basic").unwrap();
    let calm = basic.run_with(1, false, &drydock_scenarios::FaultSelection::parse("none").unwrap());
    assert!(!calm.probes_reachable.contains(&Probe::RelistAfterGone));
    assert!(!calm.probes_reachable.contains(&Probe::HungRequestTimedOut));
    let gone = basic.run_with(1, false, &drydock_scenarios::FaultSelection::parse("watch-gone").unwrap());
    assert!(gone.probes_reachable.contains(&Probe::RelistAfterGone), "{:?}", gone.probes_reachable);
}

/// The framework finds a bug in a controller it did not ship with: the example with RDD PR #188's
/// reconciler fails within a few hundred seeds on a generic invariant, and the fixed one does not.
#[test]
fn the_buggy_example_controller_is_caught_and_the_fixed_one_passes() {
    let buggy = drydock_scenarios::find("rdd-namespaces-buggy").unwrap();
    let first = (0..300).map(|seed| buggy.run(seed, false)).find(|r| !r.ok).expect("the buggy controller is caught");
    let invariant = first.violations[0].invariant.as_str();
    assert!(["ownership-stable", "no-owner-cycles", "no-oscillation"].contains(&invariant), "caught by {invariant}");
    let fixed = drydock_scenarios::find("rdd-namespaces").unwrap();
    for seed in 0..300 {
        let report = fixed.run(seed, false);
        assert!(report.ok, "fixed variant, seed {seed}: {:?}", report.violations);
    }
}

/// The world checks a scenario's own invariants beside the built-in ones: one that forbids the
/// second runtime container fails the run when a second container appears, with its own name.
#[test]
fn a_scenarios_own_invariant_is_checked_by_the_world() {
    use drydock_sim::checker::{Invariant, View};
    #[derive(Default)]
    struct AtMostOneContainer;
    impl Invariant for AtMostOneContainer {
        fn name(&self) -> &str {
            "at-most-one-container"
        }
        fn description(&self) -> &str {
            "the runtime never holds two containers"
        }
        fn check(&self, view: &View<'_>) -> Result<(), String> {
            let n = view.runtime.containers().count();
            if n > 1 { Err(format!("{n} containers")) } else { Ok(()) }
        }
    }
    fn invariants() -> Vec<Box<dyn Invariant>> {
        let mut all = drydock_sim::checker::builtin();
        all.push(Box::new(AtMostOneContainer));
        all
    }
    let scenario = drydock_scenarios::find("basic").unwrap();
    let (workload, faults) = scenario.materialize(1);
    let mut config = (scenario.world)();
    assert!(drydock_sim::World::new(&config, &workload, faults.clone(), 1, false).run().ok, "basic seed 1 passes");
    config.make_invariants = invariants;
    let report = drydock_sim::World::new(&config, &workload, faults, 1, false).run();
    assert_eq!(report.violations[0].invariant, "at-most-one-container", "{:?}", report.violations);
    assert_eq!(report.violations[0].message, "2 containers");
}

/// `disrupt-while-uncertain` restarts the daemon only where the plan has `runtime-restart` too: a
/// plan without restarts (as `scale`'s) never stops every container, by a disruption or otherwise.
#[test]
fn a_disruption_restarts_the_daemon_only_where_restarts_are_faults() {
    use drydock_faults::FaultSelection;
    let scenario = drydock_scenarios::find("basic").unwrap();
    let count = |faults: &str| {
        let selection = FaultSelection::parse(faults).unwrap();
        let (mut disruptions, mut restarts) = (0, 0);
        for seed in 0..40 {
            let report = scenario.run_with(seed, true, &selection);
            assert!(report.ok, "seed {seed} with {faults}: {:?}", report.violations);
            for event in report.trace.as_ref().unwrap() {
                disruptions += event.line.matches("[fault disrupt-while-uncertain:").count();
                restarts += event.line.matches("[fault disrupt-while-uncertain: RestartDaemon").count();
            }
        }
        (disruptions, restarts)
    };
    let (disruptions, restarts) = count("uncertain-create=0.5,disrupt-while-uncertain=1");
    assert!(disruptions > 20, "only {disruptions} disruptions");
    assert_eq!(restarts, 0, "a daemon restart in a plan without runtime-restart");
    let (disruptions, restarts) = count("uncertain-create=0.5,disrupt-while-uncertain=1,runtime-restart=0.01");
    assert!(restarts > 3 && restarts < disruptions, "{restarts} restarts of {disruptions} disruptions");
}
