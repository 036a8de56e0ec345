//! Every bug switch is still caught: each fixed bug, put back (`drydock_engine::bugs`), fails a
//! short sweep by the invariant that caught it, and the seed that catches it passes without it.
//!
//! A regression schedule pins a run; this pins the bug. When an engine change moves a bug out of
//! its sweep's reach, this test fails and says so: find a sweep that catches it again with
//! `cargo run --release -p drydock-cli --features bug-switches -- sim run ...` and `DRYDOCK_BUG=NAME`,
//! and update its entry here. Sweeps stop at the first seed that catches the bug.

use drydock_engine::bugs::{self, Bug};
use drydock_faults::FaultSelection;

/// Where a switched-on bug is caught: a scenario, its faults, the seeds to sweep (from 0), and
/// the invariant that must name it.
struct Catch {
    bug: Bug,
    scenario: &'static str,
    faults: &'static str,
    seeds: u64,
    invariant: &'static str,
}

/// Each found with `DRYDOCK_BUG=NAME drydock sim run` (a `bug-switches` build): how many of a
/// sweep's seeds fail with the bug is in the comment; none fails without it.
const CATCHES: &[Catch] = &[
    // 46 of 4,000 seeds.
    Catch {
        bug: Bug::LogicalCleanupRelistsAtOnce,
        scenario: "session",
        faults: "stale-cache=1,coalesced-watch=0.6,uncertain-store-write=0.3",
        seeds: 1_000,
        invariant: "lists-paced",
    },
    // 11 of 2,000 seeds.
    Catch {
        bug: Bug::RemoveRetriedWithoutLooking,
        scenario: "resources",
        faults: "uncertain-remove=1,transient-runtime-error=0.5",
        seeds: 2_000,
        invariant: "removes-only-its-own",
    },
    // 8 of 2,000 seeds.
    Catch {
        bug: Bug::AbandonedVolumesKept,
        scenario: "resources",
        faults: "none",
        seeds: 2_000,
        invariant: "convergence",
    },
    // 4 of 4,000 seeds.
    Catch {
        bug: Bug::GcDeletesWithoutVersion,
        scenario: "physical",
        faults: "uncertain-store-write=0.5,stale-cache=0.8,coalesced-watch=0.3",
        seeds: 4_000,
        invariant: "deletes-only-garbage",
    },
    // 24 of 300 seeds.
    Catch {
        bug: Bug::LeaseExpiryByTimestamps,
        scenario: "pull-storm",
        faults: "default",
        seeds: 300,
        invariant: "lease-exclusive",
    },
    // 29 of 100 seeds.
    Catch {
        bug: Bug::PullWithoutLease,
        scenario: "pull-storm",
        faults: "default",
        seeds: 100,
        invariant: "single-pull-per-ref",
    },
    // 9 of 3,000 seeds (the guard against a second pull by the same process keeps it to two
    // processes).
    Catch {
        bug: Bug::RenewalRetriedLate,
        scenario: "pull-storm",
        faults: "store-conflict=0.6,slow-runtime=1",
        seeds: 3_000,
        invariant: "single-pull-per-ref",
    },
    // 6 of 2,000 seeds.
    Catch {
        bug: Bug::PullBeforeAttemptCounted,
        scenario: "pull-storm",
        faults: "default",
        seeds: 2_000,
        invariant: "pull-attempts-within-limit",
    },
    // 137 of 1,000 seeds.
    Catch {
        bug: Bug::CleanupDeletesFromCache,
        scenario: "namespace-teardown",
        faults: "default",
        seeds: 200,
        invariant: "namespace-cleanup-order",
    },
    // 108 of 3,000 seeds.
    Catch {
        bug: Bug::RetainedContainersKeepNetwork,
        scenario: "persistent-reuse",
        faults: "default",
        seeds: 300,
        invariant: "convergence",
    },
    // 13 of 5,000 seeds (the first at 1,788).
    Catch {
        bug: Bug::LeaseFailureBacksOffKey,
        scenario: "pull-storm",
        faults: "stale-cache=1,coalesced-watch=1,store-conflict=0.4,slow-runtime=1,uncertain-store-write=0.5",
        seeds: 3_000,
        invariant: "single-pull-per-ref",
    },
    // 3 of 3,000 seeds (the first at 390).
    Catch {
        bug: Bug::FailedContainerNamedForEver,
        scenario: "resources",
        faults: "external-removal=1,disrupt-while-uncertain=1,uncertain-create=0.5,uncertain-store-write=0.3",
        seeds: 1_000,
        invariant: "convergence",
    },
    // Planted (see `oracles`): 33 of 1,000 seeds.
    Catch {
        bug: Bug::RemovedResourceRecreated,
        scenario: "resources",
        faults: "default",
        seeds: 300,
        invariant: "no-stray-runtime-objects",
    },
    // Planted (see `oracles`): 41 of 1,000 seeds.
    Catch {
        bug: Bug::BackingAdoptedByName,
        scenario: "session",
        faults: "default",
        seeds: 300,
        invariant: "adopts-only-its-own",
    },
    // 151 of 1,000 seeds (found as session 890's `efficiency` failure after the heal).
    Catch {
        bug: Bug::WriteNotFoundKeptCached,
        scenario: "namespace-teardown",
        faults: "default",
        seeds: 100,
        invariant: "notfound-is-final",
    },
    // Planted (see `oracles`): 71 of 1,000 seeds.
    Catch {
        bug: Bug::RelistKeepsTheUnlisted,
        scenario: "physical",
        faults: "default",
        seeds: 300,
        invariant: "relist-forgets-the-unlisted",
    },
    // Planted (see `oracles`): 51 of 1,000 seeds.
    Catch {
        bug: Bug::GcWaitsForUnseenOwners,
        scenario: "physical",
        faults: "default",
        seeds: 300,
        invariant: "garbage-collected",
    },
    // Planted (see `oracles`): 228 of 1,000 seeds.
    Catch {
        bug: Bug::RemoveNotFoundRetried,
        scenario: "basic",
        faults: "default",
        seeds: 100,
        invariant: "notfound-is-final",
    },
    // Planted: 12 of 300 seeds.
    Catch {
        bug: Bug::RuntimeBoundIgnored,
        scenario: "basic",
        faults: "default",
        seeds: 300,
        invariant: "runtime-requests-bounded",
    },
    // Planted: 11 of 300 seeds (hung and slow runtimes, overload stalls).
    Catch {
        bug: Bug::ChangeSentBesideItsCopy,
        scenario: "basic",
        faults: "default",
        seeds: 300,
        invariant: "change-not-resent-while-running",
    },
    // Planted: 17 of 300 seeds.
    Catch {
        bug: Bug::CleanupBesideDetachedChange,
        scenario: "basic",
        faults: "default",
        seeds: 300,
        invariant: "finalizer-after-runtime-cleanup",
    },
    // Planted from a surviving mutant (docs/mutation-testing.md): the mutation sweep's kill
    // was resources seed 0.
    Catch {
        bug: Bug::FailedImageKeepsOldMessage,
        scenario: "resources",
        faults: "default",
        seeds: 100,
        invariant: "failure-quotes-the-runtime",
    },
    // Planted from a surviving mutant: the mutation sweep's kill was session seed 0.
    Catch {
        bug: Bug::FailedWithoutReason,
        scenario: "session",
        faults: "default",
        seeds: 100,
        invariant: "terminal-status-has-reason",
    },
];

#[test]
fn every_bug_switch_has_a_catch() {
    for bug in Bug::ALL {
        assert!(CATCHES.iter().any(|c| c.bug == *bug), "bug switch {bug} has no sweep that catches it");
    }
}

#[test]
fn every_switched_on_bug_is_caught() {
    let mut missed = Vec::new();
    for catch in CATCHES {
        match first_catch(catch) {
            Some(seed) => {
                let scenario = drydock_scenarios::find(catch.scenario).unwrap();
                let faults = FaultSelection::parse(catch.faults).unwrap();
                let without = scenario.run_with(seed, false, &faults);
                assert!(
                    without.ok,
                    "{} seed {seed} fails without bug {} too: {:?}",
                    catch.scenario, catch.bug, without.violations
                );
            }
            None => missed.push(format!(
                "{}: no seed of {} 0..{} with --faults {} fails {}; find a sweep that does (DRYDOCK_BUG={} on a bug-switches build) and update its entry",
                catch.bug, catch.scenario, catch.seeds, catch.faults, catch.invariant, catch.bug
            )),
        }
    }
    assert!(missed.is_empty(), "bugs the simulator no longer catches:\n{}", missed.join("\n"));
}

/// The first seed of `catch`'s sweep that fails by its invariant with its bug switched on.
fn first_catch(catch: &Catch) -> Option<u64> {
    let scenario = drydock_scenarios::find(catch.scenario).unwrap();
    let faults = FaultSelection::parse(catch.faults).unwrap();
    bugs::with(catch.bug, || {
        (0..catch.seeds).find(|seed| {
            let report = scenario.run_with(*seed, false, &faults);
            report.violations.iter().any(|v| v.invariant == catch.invariant)
        })
    })
}
