//! The golden digests: every pinned seed and regression schedule still gives its committed digest,
//! on this machine as on the one that wrote the file.

use drydock_scenarios::golden::{self, Golden};

#[test]
fn every_run_gives_its_pinned_digest() {
    let pinned = Golden::load(&golden::default_path()).unwrap();
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let actual = Golden::compute(jobs, &golden::regressions_dir()).unwrap();
    let differences = actual.differences(&pinned);
    let shown: Vec<String> = differences.iter().take(20).map(|d| d.to_string()).collect();
    assert!(
        differences.is_empty(),
        "{} of {} runs differ from {}:\n{}\nIf the behaviour change is intended, run \
         `cargo run --release -p drydock-cli -- sim golden --update` and commit the reviewed diff.",
        differences.len(),
        actual.digests.len(),
        golden::default_path().display(),
        shown.join("\n")
    );
    assert!(pinned.digests.len() as u64 >= golden::GOLDEN_SEEDS * 10, "the file pins too few runs");
}
