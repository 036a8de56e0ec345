//! The oracles added for bugs that used to slip past, each shown catching the bug class it was
//! made for: the bug, planted with its switch (`drydock_engine::bugs`), is caught by the named
//! invariant within 1,000 seeds, and the failing schedule shrinks to at most 20 steps that
//! still fail by that invariant.

use drydock_engine::bugs::{self, Bug};
use drydock_faults::FaultSelection;

/// A bug class, the scenario and faults that reach it, and the oracle that must name it.
struct Plant {
    bug: Bug,
    scenario: &'static str,
    faults: &'static str,
    invariant: &'static str,
}

const PLANTS: &[Plant] = &[
    // A relist loop while the watch lags (mixed 130812): named as it happens, not as a
    // liveness failure after the heal.
    Plant {
        bug: Bug::LogicalCleanupRelistsAtOnce,
        scenario: "session",
        faults: "stale-cache=1,coalesced-watch=0.6,uncertain-store-write=0.3",
        invariant: "lists-paced",
    },
    // A network removed behind drydock's back made again under the old record: the object ends
    // Ready, so nothing else sees it.
    Plant {
        bug: Bug::RemovedResourceRecreated,
        scenario: "resources",
        faults: "default",
        invariant: "no-stray-runtime-objects",
    },
    // A client's physical container holding a backing's name, adopted as the backing: taken over
    // as it happens (before, only a later delete of it could show, as deletes-only-garbage).
    Plant { bug: Bug::BackingAdoptedByName, scenario: "session", faults: "default", invariant: "adopts-only-its-own" },
    // A relist merged into the cache: a ghost of an object deleted while the watch was broken,
    // named at the relist (before, only a world that did not settle could show it).
    Plant {
        bug: Bug::RelistKeepsTheUnlisted,
        scenario: "physical",
        faults: "default",
        invariant: "relist-forgets-the-unlisted",
    },
    // The garbage collector waiting for an event of an owner that is gone: the dependent named
    // 60 s on (before, convergence after the heal).
    Plant { bug: Bug::GcWaitsForUnseenOwners, scenario: "physical", faults: "default", invariant: "garbage-collected" },
    // A remove's NotFound retried: named at the second remove (before, convergence or efficiency
    // after the heal).
    Plant { bug: Bug::RemoveNotFoundRetried, scenario: "basic", faults: "default", invariant: "notfound-is-final" },
    // Its store half: a write's NotFound left the object cached until the watch caught up, and
    // every controller of it wrote again (session 890, found as `efficiency` after the heal).
    Plant {
        bug: Bug::WriteNotFoundKeptCached,
        scenario: "namespace-teardown",
        faults: "default",
        invariant: "notfound-is-final",
    },
];

#[test]
fn each_oracle_catches_its_planted_bug_within_1000_seeds_and_shrinks_it_to_20_steps() {
    for plant in PLANTS {
        let scenario = drydock_scenarios::find(plant.scenario).unwrap();
        let faults = FaultSelection::parse(plant.faults).unwrap();
        bugs::with(plant.bug, || {
            let (seed, report) = (0..1_000)
                .map(|seed| (seed, scenario.run_with(seed, false, &faults)))
                .find(|(_, report)| report.violations.first().is_some_and(|v| v.invariant == plant.invariant))
                .unwrap_or_else(|| panic!("{}: no seed of 0..1000 fails {}", plant.bug, plant.invariant));
            let schedule = scenario.recorded_schedule(seed, &faults, report.fault_decisions.clone());
            let world = (scenario.world)();
            let (shrunk, _runs) = schedule.shrink(&world, plant.invariant);
            assert!(
                shrunk.steps() <= 20,
                "{}: seed {seed} shrank from {} to {} steps, more than 20",
                plant.bug,
                schedule.steps(),
                shrunk.steps()
            );
            let again = shrunk.replay_in(&world, false);
            assert_eq!(
                again.violations.first().map(|v| v.invariant.as_str()),
                Some(plant.invariant),
                "{}: the shrunk schedule fails by its oracle",
                plant.bug
            );
            eprintln!("{}: seed {seed}, {} -> {} steps", plant.bug, schedule.steps(), shrunk.steps());
        });
    }
}
