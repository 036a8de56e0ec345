//! A user's scenario through the public API: their kind (untyped), generic client operations,
//! their invariant and their convergence condition, reported under their own names.

use drydock_scenarios::draw::Ops;
use drydock_scenarios::engine::Components;
use drydock_scenarios::engine::api::Object;
use drydock_scenarios::engine::store::KindInfo;
use drydock_scenarios::harness::SimTest;
use drydock_scenarios::sim::checker::{Invariant, View};
use drydock_scenarios::sim::workload::{ClientOp, Target, Workload};
use drydock_scenarios::{FaultSelection, Scenario};
use serde_json::json;
use std::time::Duration;

/// Widgets created, patched and updated, one deleted.
fn widgets(_: &mut drydock_scenarios::ChaCha8Rng) -> Workload {
    let widget = |name: &str| Target { kind: "Widget".into(), namespace: None, name: name.into() };
    let mut ops = Ops::default();
    let create = |name: &str| ClientOp::Create {
        target: widget(name),
        spec: json!({"size": 1, "colour": "red"}),
        labels: Default::default(),
        owner: None,
    };
    ops.at(Duration::from_millis(10), create("a"));
    ops.at(Duration::from_millis(20), create("b"));
    ops.at(
        Duration::from_millis(30),
        ClientOp::Patch { target: widget("a"), patch: json!({"size": 5, "colour": null}) },
    );
    ops.at(Duration::from_millis(40), ClientOp::Update { target: widget("b"), spec: json!({"size": 2}) });
    ops.at(Duration::from_millis(50), ClientOp::Delete { target: widget("b"), propagation: Default::default() });
    Workload { ops: ops.finish(), ..Workload::default() }
}

fn widget_kind() -> KindInfo {
    KindInfo::untyped("Widget", false).with_group_version("example.dev/v1")
}

fn size(object: &Object) -> Option<i64> {
    object.spec.get("size").and_then(serde_json::Value::as_i64)
}

/// No widget is ever bigger than 3.
#[derive(Default)]
struct SmallWidgets;

impl Invariant for SmallWidgets {
    fn name(&self) -> &str {
        "widgets-stay-small"
    }

    fn description(&self) -> &str {
        "no widget is bigger than 3"
    }

    fn check(&self, view: &View<'_>) -> Result<(), String> {
        match view.store.list(Some("Widget"), None).into_iter().find(|w| size(w) > Some(3)) {
            Some(big) => Err(format!("{} has size {:?}", big.key(), size(&big))),
            None => Ok(()),
        }
    }
}

fn calm(builder: drydock_scenarios::ScenarioBuilder) -> Scenario {
    builder.components(Components::new().kind(widget_kind())).workload(widgets).without_faults().build()
}

#[test]
fn generic_operations_act_on_a_users_kind_and_their_invariant_is_reported_by_name() {
    let scenario = calm(Scenario::builder("widgets").invariant(|| SmallWidgets));
    let report = scenario.run(0, true);
    let violation = report.violations.first().expect("the patch to size 5 is caught");
    assert_eq!(violation.invariant, "widgets-stay-small");
    assert!(violation.message.contains("Widget/a has size Some(5)"), "{}", violation.message);
    let trace: Vec<String> = report.trace.unwrap().into_iter().map(|e| e.line).collect();
    let trace = trace.join("\n");
    assert!(trace.contains("client patch Widget/a"), "{trace}");

    // The same through the harness: the failure names the invariant and the seed.
    let failure = SimTest::new(scenario).seeds(3).without_regressions().first_failure().unwrap();
    assert_eq!((failure.invariant.as_str(), failure.seed), ("widgets-stay-small", Some(0)));
    assert!(failure.steps.1 <= 3, "shrunk to the create and the patch: {failure}");
}

#[test]
fn without_the_users_invariant_the_widgets_run_passes_and_the_operations_applied() {
    let probe = |view: &View<'_>| {
        let a = view.store.list(Some("Widget"), None).into_iter().find(|w| w.metadata.name == "a");
        let b_gone = view.store.list(Some("Widget"), None).iter().all(|w| w.metadata.name != "b");
        match a {
            Some(a) if size(&a) == Some(5) && a.spec.get("colour").is_none() && b_gone => Ok(()),
            other => Err(format!("a is {other:?}, b gone: {b_gone}")),
        }
    };
    let scenario = calm(Scenario::builder("widgets-applied").converges_when("widgets-applied", probe));
    let report = scenario.run(0, false);
    assert!(report.ok, "{:?}", report.violations);
}

#[test]
fn a_convergence_condition_never_met_fails_convergence_with_its_name() {
    let scenario = Scenario::builder("never")
        .components(Components::new().kind(widget_kind()))
        .workload(widgets)
        .converges_when("widgets-blue", |_| Err("no widget is blue".into()))
        .build();
    let report = scenario.run_with(1, false, &FaultSelection::None);
    let violation = report.violations.first().expect("never converges");
    assert_eq!(violation.invariant, "convergence");
    assert!(violation.message.contains("[widgets-blue] no widget is blue"), "{}", violation.message);
}

/// No widget is bigger than 3; the message counts the widgets there are, which the shrunk run
/// (without the other widget) counts differently from the seed.
#[derive(Default)]
struct SmallWidgetsCounted;

impl Invariant for SmallWidgetsCounted {
    fn name(&self) -> &str {
        "widgets-stay-small"
    }

    fn description(&self) -> &str {
        "no widget is bigger than 3"
    }

    fn check(&self, view: &View<'_>) -> Result<(), String> {
        let widgets = view.store.list(Some("Widget"), None);
        match widgets.iter().find(|w| size(w) > Some(3)) {
            Some(big) => Err(format!("{} has size {:?} among {} widgets", big.key(), size(big), widgets.len())),
            None => Ok(()),
        }
    }
}

#[test]
fn the_seed_is_reported_with_its_own_message_and_the_shrunk_run_with_its_own() {
    let scenario = calm(Scenario::builder("widgets-counted").invariant(|| SmallWidgetsCounted));
    let failure = SimTest::new(scenario).seeds(1).without_regressions().first_failure().unwrap();
    assert_eq!(failure.seed, Some(0));
    assert!(failure.message.ends_with("has size Some(5) among 2 widgets"), "the seed's own: {failure}");
    let shrunk = failure.shrunk_message.as_deref().unwrap_or_default();
    assert!(shrunk.ends_with("has size Some(5) among 1 widgets"), "the shrunk run's own: {failure}");
    let text = failure.to_string();
    assert!(text.contains(&format!("  message:   {}\n", failure.message)), "{text}");
    assert!(text.contains(&format!("  the shrunk run's message: {shrunk}\n")), "{text}");
    assert!(text.contains("repro: DRYDOCK_SEED=0 "), "{text}");
}

/// Run by `the_printed_repro_of_an_ignored_test_runs_it`, through `--ignored`.
#[test]
#[ignore = "run through --ignored by the_printed_repro_of_an_ignored_test_runs_it"]
fn an_ignored_harness_test() {
    let scenario = calm(Scenario::builder("widgets").invariant(|| SmallWidgets));
    let failure = SimTest::new(scenario).seeds(1).without_regressions().first_failure().unwrap();
    println!("repro: {}", failure.repro);
    assert!(failure.repro.contains(" -- builder::an_ignored_harness_test --exact --include-ignored"), "{failure}");
}

#[test]
fn the_printed_repro_of_an_ignored_test_runs_it() {
    let exe = std::env::current_exe().unwrap();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(&exe).args(args).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{args:?}: {stdout}{}", String::from_utf8_lossy(&out.stderr));
        stdout
    };
    let first = run(&["builder::an_ignored_harness_test", "--exact", "--ignored", "--nocapture"]);
    assert!(first.contains("1 passed"), "{first}");
    let repro = first.lines().find_map(|l| l.strip_prefix("repro: ")).unwrap_or_else(|| panic!("no repro: {first}"));
    // What the repro hands the test binary, after cargo's `--`.
    let (_, test_args) = repro.split_once(" -- ").unwrap_or_else(|| panic!("{repro}"));
    let again = run(&test_args.split_whitespace().collect::<Vec<_>>());
    assert!(again.contains("test result: ok. 1 passed"), "the repro runs the ignored test: {again}");
}
