//! The differential check against the local Docker: the model agrees with it, and a bug planted
//! in the model is found and shrunk.
#![allow(clippy::unwrap_used)]

use drydock_adapters::testing::docker_or_skip;
use drydock_engine::WallTime;
use drydock_engine::runtime::{RuntimeError, RuntimeRequest, RuntimeResult};
use drydock_runtime_diff::sides::{Model, SimTarget, Target};
use drydock_runtime_diff::{Diff, Options, Report};
use drydock_sim_runtime::{NetworkCreating, SimRuntime};
use std::sync::Arc;

fn options(sequences: usize, seed: u64) -> Options {
    Options { sequences, length: 15, seed, concurrency: 4, shrink_runs: 40, show_steps: false }
}

async fn run<M: Model + 'static>(test: &str, model: fn(SimRuntime) -> M, options: &Options) -> Option<Report> {
    let docker = docker_or_skip(test).await?;
    let diff = Diff::with_model(Arc::new(docker), model);
    diff.prepare().await.unwrap();
    let report = diff.run(options, &|line| eprintln!("{line}")).await;
    diff.cleanup(options.sequences).await;
    Some(report.unwrap())
}

/// The model as it is, but a stop answers at once, whatever the process does with TERM: the
/// bug the simulator had before it modelled the grace period.
struct HastyStops(SimTarget);

impl Target for HastyStops {
    async fn execute(&self, request: RuntimeRequest) -> RuntimeResult {
        self.0.execute(request).await
    }

    async fn stop(&self, request: RuntimeRequest) -> (RuntimeResult, u64) {
        (self.0.execute(request).await, 0)
    }

    async fn logs(&self, name: &str) -> Result<(Vec<String>, Vec<String>), RuntimeError> {
        self.0.logs(name).await
    }

    async fn settle(&self, name: &str) {
        self.0.settle(name).await
    }
}

impl Model for HastyStops {
    fn fork(&self) -> Self {
        HastyStops(self.0.fork())
    }

    fn begin_removal(&self, name: &str, force: bool) -> Result<String, RuntimeError> {
        self.0.begin_removal(name, force)
    }

    fn finish_removal(&self, id: &str) {
        self.0.finish_removal(id)
    }

    fn begin_network_create(&self, request: &RuntimeRequest) -> Result<NetworkCreating, RuntimeError> {
        self.0.begin_network_create(request)
    }

    fn finish_network_create(&self, creating: NetworkCreating) -> String {
        self.0.finish_network_create(creating)
    }

    /// The planted bug: the stop answers at once.
    fn begin_stop(&self, request: &RuntimeRequest) -> Result<(WallTime, WallTime), RuntimeError> {
        let now = self.0.0.lock().now();
        self.0.0.lock().execute(request).map(|_| (now, now))
    }

    fn finish_stop(&self, _done: WallTime) {}
}

#[tokio::test(flavor = "multi_thread")]
async fn the_model_agrees_with_docker() {
    let options = options(20, 44);
    let Some(report) = run("the_model_agrees_with_docker", SimTarget::new, &options).await else { return };
    assert_eq!(report.sequences, 20);
    assert!(report.operations >= 300, "{} operations", report.operations);
    let found: Vec<String> =
        report.disagreements.iter().map(|d| format!("{:?} -> model {:?}\n{}", d.steps, d.model, d.case)).collect();
    assert!(found.is_empty(), "the model disagrees with Docker:\n{}", found.join("\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_planted_model_bug_is_found_and_shrunk() {
    let options = options(20, 44);
    let test = "a_planted_model_bug_is_found_and_shrunk";
    let Some(report) = run(test, |runtime| HastyStops(SimTarget::new(runtime)), &options).await else { return };
    let found = report.disagreements.first().expect("the planted bug is found");
    let last = found.steps.last().unwrap();
    // The step where they part is a stop Docker held for its grace period (alone, or issued
    // together with another operation).
    assert!(last.operation.contains("Stop {"), "{:?}", found.steps);
    assert!(last.docker.to_string().contains(r#""held_grace_period":true"#), "{last:?}");
    assert!(found.model.iter().all(|seen| !seen.to_string().contains(r#""held_grace_period":true"#)));
    assert!(found.shrunk_steps <= 4 && found.shrunk_steps < found.generated_steps, "{:?}", found.steps);
    assert!(found.case.contains("fx.replay(&["), "{}", found.case);
}
