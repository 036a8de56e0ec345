//! The ContainerSet controller under drydock's simulator, as a user's `cargo test` runs it.

use drydock_scenarios::harness::SimTest;
use user_controller::{Variant, scenario};

/// The whole simulation test of a controller: seeds 0..100 (`DRYDOCK_SEEDS` raises it), the
/// saved regressions replayed first, a failure shrunk, saved and reported with its repro.
#[test]
fn the_fixed_controller_passes() {
    SimTest::new(scenario(Variant::Fixed)).regressions("sim-regressions/containerset.json").run();
}

/// The buggy controller is caught by the user's own invariant within 100 seeds.
#[test]
fn the_buggy_controller_is_caught_by_its_invariant() {
    let test = SimTest::new(scenario(Variant::Buggy)).seeds(100);
    let failure = test.first_failure().expect("the buggy controller is caught within 100 seeds");
    assert_eq!(failure.invariant, "containerset-never-over-replicated", "{failure}");
    assert!(failure.steps.1 <= failure.steps.0, "{failure}");
    assert!(failure.repro.contains("-p user-controller --test simulation"), "{failure}");
    // The shrunk schedule still fails the same way.
    let again = test.replay(&failure.schedule, false);
    assert_eq!(again.violations.first().map(|v| v.invariant.as_str()), Some("containerset-never-over-replicated"));
}

/// The committed regressions, shrunk and saved by the harness: the buggy controller's failure
/// (which still fails it with the same invariant), and one the fixed controller had before it
/// stopped creating in a terminating namespace (seed 9243, `efficiency`). The fixed controller
/// passes both: each entry keeps meaning what it was saved for.
#[test]
fn the_saved_regression_replays() {
    let fixed = SimTest::new(scenario(Variant::Fixed)).regressions("sim-regressions/containerset.json");
    let buggy = SimTest::new(scenario(Variant::Buggy));
    let saved = fixed.saved_regressions().expect("the regressions file reads");
    assert!(!saved.is_empty(), "sim-regressions/containerset.json holds the buggy controller's failure");
    assert!(saved.iter().any(|e| e.schedule.scenario == "containerset-buggy"));
    for entry in saved {
        // What was recorded for the buggy controller still fails it the same way.
        if entry.schedule.scenario == "containerset-buggy" {
            let report = buggy.replay(&entry.schedule, false);
            assert_eq!(report.violations.first().map(|v| v.invariant.clone()), Some(entry.invariant.clone()));
        }
        let report = fixed.replay(&entry.schedule, false);
        assert!(report.ok, "the fixed controller fails a saved regression: {:?}", report.violations);
    }
}

/// How `sim-regressions/containerset.json` was made: the harness run on the buggy controller fails,
/// shrinks the failure and saves it there, as it would in a user's crate before the fix.
/// `cargo test -p user-controller --test simulation -- --ignored record --nocapture`
#[test]
#[ignore = "records the regressions file; run by hand"]
fn record_the_buggy_controllers_failure() {
    let test = SimTest::new(scenario(Variant::Buggy)).regressions("sim-regressions/containerset.json");
    match test.check() {
        Ok(_) => panic!("the buggy controller passed"),
        Err(failure) => println!("{failure}"),
    }
}
