//! The invariants judge what changed after each event, not the whole world (so a check costs the
//! size of the change): here every scenario's first seeds run with `cross_check`, which also
//! judges the whole state after every event and fails the run where the two disagree. A run
//! must end exactly as it does without it: same digest, same violations.

use drydock_scenarios::Scenario;
use std::sync::Arc;

const SEEDS: u64 = 30;

fn cross_checked(scenario: &Scenario) -> Scenario {
    let world = scenario.world.clone();
    Scenario {
        world: Arc::new(move || {
            let mut config = world();
            config.cross_check = true;
            config
        }),
        ..scenario.clone()
    }
}

#[test]
fn judging_changes_finds_what_judging_the_whole_state_finds() {
    let mut runs = 0;
    for scenario in drydock_scenarios::all() {
        let checked = cross_checked(scenario);
        for seed in 0..SEEDS {
            let plain = scenario.run(seed, false);
            let both = checked.run(seed, false);
            assert_eq!(
                both.violations, plain.violations,
                "{} seed {seed}: with the whole state judged too, the run ended otherwise",
                scenario.name
            );
            assert_eq!(both.digest, plain.digest, "{} seed {seed}: cross-checking changed the run", scenario.name);
            runs += 1;
        }
    }
    assert!(runs > 400, "{runs} runs");
}

#[test]
fn a_bigger_world_is_judged_the_same_way() {
    let scale = drydock_scenarios::find("scale").unwrap().with_size(250).unwrap();
    let checked = cross_checked(&scale);
    for seed in 0..2 {
        let (plain, both) = (scale.run(seed, false), checked.run(seed, false));
        assert_eq!(both.violations, plain.violations, "scale --size 250 seed {seed}");
    }
}
