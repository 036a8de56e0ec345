//! Every schedule in `scenarios/regressions/` replays without a violation.

use drydock_scenarios::schedule::Schedule;

#[test]
fn every_regression_schedule_passes() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let mut replayed = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let schedule: Schedule = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{}: not a schedule: {e}", path.display()));
        let report = schedule.replay(false).unwrap();
        assert!(report.ok, "{} fails again: {:?}", path.display(), report.violations);
        assert_eq!(schedule.replay(false).unwrap().digest, report.digest, "{} is not deterministic", path.display());
        replayed += 1;
    }
    assert!(replayed >= 1, "no regression schedules in {}", dir.display());
}
