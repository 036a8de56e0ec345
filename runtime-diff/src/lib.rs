//! `drydock runtime diff`: the simulated runtime checked against a real Docker by generated
//! operation sequences, so that its fidelity does not depend on what someone thought to test.
//!
//! A run generates seeded sequences of runtime-contract operations ([`ops`]: containers, images,
//! builds, networks, volumes, copies, logs, events, stops with timeouts, and pairs issued at
//! once), runs each on Docker and on the simulated runtime, and compares what each step
//! observed, normalised ([`observe`]). A disagreement is shrunk (proptest's value trees, through
//! `proptest-state-machine`'s sequential strategy) to the shortest sequence that still
//! disagrees, and printed as a conformance case one can paste ([`case`]).
//!
//! *Guarantees*: the same seed generates the same sequences; every object a run makes carries
//! [`requests::RUN_LABEL`] and the run's prefix, and is removed at the end of its sequence, and
//! by [`Diff::cleanup`] (which the command calls on Ctrl-C too).
//! *Assumptions*: Docker answers on its socket; the host has Debian's `busybox-static`, from
//! which the run builds its image offline (no registry needed).
//! *Caveats*: a race Docker resolves one way on one run and another way on the next is checked
//! only for the operations a `Together` issues at once; two sequences run at once share the
//! host's ports and Docker's event log, which the sequences' names and labels keep apart.

pub mod case;
pub mod observe;
pub mod ops;
pub mod requests;
pub mod sides;

use drydock_adapters::Runtime;
use drydock_engine::WallTime;
use drydock_engine::runtime::{RuntimeError, RuntimeReply, RuntimeRequest};
use drydock_sim_runtime::SimRuntime;
use futures_util::StreamExt;
use ops::{Op, Sequences};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use proptest_state_machine::ReferenceStateMachine;
use requests::{Names, RUN_LABEL};
use serde::Serialize;
use serde_json::Value;
use sides::{Model, RuntimeTarget, Side, SimTarget};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// The image every sequence runs: busybox, default command `sleep 3600`, built offline.
pub const BASE_IMAGE: &str = "drydock-diff/busybox:1";

/// What can stop a run before it compares anything.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    #[error(
        "no busybox binary at /bin/busybox or /usr/bin/busybox: the run builds its image from it offline; install Debian's busybox-static (apt-get install busybox-static)"
    )]
    NoBusybox,
    #[error("cannot prepare {path}: {source}")]
    Files { path: String, source: std::io::Error },
    #[error("Docker could not build the run's image {BASE_IMAGE}: {0}")]
    BaseImage(RuntimeError),
    #[error("proptest could not generate a sequence: {0}")]
    Generation(String),
}

/// How a run goes.
#[derive(Clone, Debug)]
pub struct Options {
    pub sequences: usize,
    /// Steps per sequence.
    pub length: usize,
    pub seed: u64,
    /// Sequences run at once.
    pub concurrency: usize,
    /// How many runs shrinking one disagreement may take.
    pub shrink_runs: usize,
    /// Tell `progress` every step and what Docker observed.
    pub show_steps: bool,
}

/// A run's result, as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct Report {
    pub seed: u64,
    pub sequences: usize,
    pub length: usize,
    /// Runtime operations issued to Docker by the sequences (a pair issued at once counts two;
    /// shrinking's reruns are not counted).
    pub operations: usize,
    /// Disagreements that repeated when their shrunk sequence ran again.
    pub disagreements: Vec<Found>,
    /// Disagreements whose shrunk sequence then agreed in every confirming rerun: Docker's
    /// outcome varied there from run to run (seen: a `since` query of a container's events,
    /// issued during a stop, missing its `start` once in many runs). Printed, not failing.
    pub unconfirmed: Vec<Found>,
    pub seconds: f64,
}

/// How many model states a sequence follows at once (see [`Side::outcomes`]).
const MODEL_CANDIDATES: usize = 8;

/// How often a shrunk disagreement is run again to confirm it.
const CONFIRMING_RUNS: usize = 2;

/// One disagreement, shrunk.
#[derive(Debug, Serialize)]
pub struct Found {
    /// Which generated sequence.
    pub sequence: usize,
    /// How many of the reruns of the shrunk sequence disagreed again (`2/2`): fewer means
    /// Docker's outcome varies from run to run there (a race the model may have to allow).
    pub reproduced: String,
    /// Its length as generated, and shrunk.
    pub generated_steps: usize,
    pub shrunk_steps: usize,
    /// The shrunk sequence: each step with what Docker observed; the last is where the model
    /// disagreed.
    pub steps: Vec<Step>,
    /// What the model observed at the last step instead (one per order it tried).
    pub model: Vec<Value>,
    /// The shrunk sequence as a conformance case to paste.
    pub case: String,
}

#[derive(Debug, Serialize)]
pub struct Step {
    pub operation: String,
    pub docker: Value,
}

/// What running one sequence gave.
struct SequenceRun {
    operations: usize,
    /// The steps that agreed, with Docker's observations.
    agreed: Vec<(Op, Value)>,
    disagreement: Option<(Op, Value, Vec<Value>)>,
}

/// A run against one Docker, with a model made by `model` from a fresh simulated runtime
/// ([`SimTarget`] itself, unless a test plants a bug in it).
pub struct Diff<R, M = SimTarget> {
    docker: Arc<R>,
    model: fn(SimRuntime) -> M,
    /// Names this run's objects (`ddiff-<run>-...`) and labels them.
    pub run: String,
    workdir: PathBuf,
    context: String,
}

impl<R: Runtime> Diff<R> {
    /// A run with a fresh id, its files under the system's temporary directory.
    pub fn new(docker: Arc<R>) -> Self {
        Diff::with_model(docker, SimTarget::new)
    }
}

impl<R: Runtime, M: Model + 'static> Diff<R, M> {
    /// A run whose model is `model` of the simulated runtime.
    pub fn with_model(docker: Arc<R>, model: fn(SimRuntime) -> M) -> Self {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let run = format!("{:06x}", (std::process::id() ^ nanos) & 0xff_ffff);
        let workdir = std::env::temp_dir().join(format!("drydock-diff-{run}"));
        let context = workdir.join("context").display().to_string();
        Diff { docker, model, run, workdir, context }
    }

    /// The build context and the base image.
    pub async fn prepare(&self) -> Result<(), DiffError> {
        write_files(Path::new(&self.context), &requests::build_context_files(BASE_IMAGE))?;
        let present = self.docker.execute(RuntimeRequest::InspectImage { reference: BASE_IMAGE.into() }).await;
        if present.is_ok() {
            return Ok(());
        }
        let busybox = ["/bin/busybox", "/usr/bin/busybox"].into_iter().find(|p| Path::new(p).is_file());
        let busybox = busybox.ok_or(DiffError::NoBusybox)?;
        let dir = self.workdir.join("base");
        let bytes = std::fs::read(busybox).map_err(|source| DiffError::Files { path: busybox.into(), source })?;
        write_files(&dir, &BTreeMap::new())?;
        let target = dir.join("busybox");
        let written = std::fs::write(&target, bytes).and_then(|()| {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755))
        });
        written.map_err(|source| DiffError::Files { path: target.display().to_string(), source })?;
        let dockerfile = "FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\nCMD [\"sleep\", \"3600\"]\n";
        write_files(&dir, &BTreeMap::from([("Dockerfile".to_string(), dockerfile.to_string())]))?;
        let build = drydock_engine::runtime::ImageBuild {
            context: dir.display().to_string(),
            dockerfile: "Dockerfile".into(),
            build_args: BTreeMap::new(),
            target: None,
            labels: BTreeMap::new(),
            tag: BASE_IMAGE.into(),
        };
        self.docker.execute(RuntimeRequest::BuildImage(build)).await.map_err(DiffError::BaseImage)?;
        Ok(())
    }

    /// Generate and run the sequences, shrink what disagrees. `progress` hears a line per
    /// sequence and per shrink.
    pub async fn run(&self, options: &Options, progress: &(dyn Fn(String) + Sync)) -> Result<Report, DiffError> {
        let began = Instant::now();
        let mut runner = runner(options.seed);
        let strategy = Sequences::sequential_strategy(options.length..=options.length);
        let mut trees = Vec::with_capacity(options.sequences);
        for _ in 0..options.sequences {
            trees.push(strategy.new_tree(&mut runner).map_err(|e| DiffError::Generation(e.to_string()))?);
        }
        let runs: Vec<(usize, SequenceRun)> = futures_util::stream::iter(trees.iter().enumerate())
            .map(|(sequence, tree)| async move {
                let ops = tree.current().1;
                let outcome = self.sequence(&sequence.to_string(), &ops).await;
                if options.show_steps {
                    for (op, observed) in &outcome.agreed {
                        progress(format!("  [{sequence}] {op:?} -> {observed}"));
                    }
                    if let Some((op, observed, model)) = &outcome.disagreement {
                        progress(format!("  [{sequence}] {op:?} -> docker {observed}, model {model:?}"));
                    }
                }
                let verdict = if outcome.disagreement.is_some() { "DISAGREES" } else { "agrees" };
                progress(format!(
                    "sequence {}/{}: {} operations, {verdict}",
                    sequence + 1,
                    options.sequences,
                    outcome.operations
                ));
                (sequence, outcome)
            })
            .buffer_unordered(options.concurrency.max(1))
            .collect()
            .await;
        let operations = runs.iter().map(|(_, run)| run.operations).sum();
        let mut disagreeing: Vec<(usize, SequenceRun)> =
            runs.into_iter().filter(|(_, run)| run.disagreement.is_some()).collect();
        disagreeing.sort_by_key(|(sequence, _)| *sequence);
        drop(trees);
        let (mut disagreements, mut unconfirmed) = (Vec::new(), Vec::new());
        for (sequence, first) in disagreeing {
            let tree = regenerate(options, sequence)?;
            let found = self.shrink(options, sequence, tree, first, progress).await;
            if found.reproduced.starts_with('0') {
                progress(format!(
                    "sequence {}: the shrunk disagreement did not repeat; reported as unconfirmed",
                    sequence + 1
                ));
                unconfirmed.push(found);
            } else {
                disagreements.push(found);
            }
        }
        Ok(Report {
            seed: options.seed,
            sequences: options.sequences,
            length: options.length,
            operations,
            disagreements,
            unconfirmed,
            seconds: began.elapsed().as_secs_f64(),
        })
    }

    /// Shrink a disagreeing sequence: proptest simplifies the value tree while the disagreement
    /// stays, and complicates it back when it goes.
    async fn shrink(
        &self,
        options: &Options,
        sequence: usize,
        mut tree: impl ValueTree<Value = (ops::Plan, Vec<Op>, Seen)>,
        first: SequenceRun,
        progress: &(dyn Fn(String) + Sync),
    ) -> Found {
        let generated_steps = tree.current().1.len();
        let mark_seen = |tree: &dyn ValueTreeSeen, run: &SequenceRun| tree.seen(run.agreed.len() + 1);
        mark_seen(&tree, &first);
        let mut best = first;
        let mut runs = 0;
        if tree.simplify() {
            while runs < options.shrink_runs {
                runs += 1;
                let ops = tree.current().1;
                let attempt = self.sequence(&format!("{sequence}s{runs}"), &ops).await;
                if attempt.disagreement.is_some() {
                    progress(format!("sequence {}: shrunk to {} steps", sequence + 1, attempt.agreed.len() + 1));
                    mark_seen(&tree, &attempt);
                    best = attempt;
                    if !tree.simplify() {
                        break;
                    }
                } else if !tree.complicate() {
                    break;
                }
            }
        }
        let (op, docker, model) = best.disagreement.unwrap_or((Op::List, Value::Null, Vec::new()));
        let mut steps: Vec<(Op, Value)> = best.agreed;
        steps.push((op, docker));
        // A verdict must hold again: one that two more runs do not repeat is reported apart.
        let ops: Vec<Op> = steps.iter().map(|(op, _)| op.clone()).collect();
        let mut reproduced = 0;
        for rerun in 0..CONFIRMING_RUNS {
            let again = self.sequence(&format!("{sequence}c{rerun}"), &ops).await;
            reproduced += usize::from(again.disagreement.is_some());
        }
        let case = case::render(options.seed, sequence, &steps);
        Found {
            sequence,
            reproduced: format!("{reproduced}/{CONFIRMING_RUNS}"),
            generated_steps,
            shrunk_steps: steps.len(),
            steps: steps
                .iter()
                .map(|(op, docker)| Step { operation: format!("{op:?}"), docker: docker.clone() })
                .collect(),
            model,
            case,
        }
    }

    /// Run one sequence on Docker and on a fresh model, step by step, until they disagree;
    /// then remove what it made on Docker.
    async fn sequence(&self, sequence: &str, ops: &[Op]) -> SequenceRun {
        let names = Names::new(&self.run, sequence, free_port(), BASE_IMAGE, &self.context);
        let since = drydock_adapters::clock::wall_now();
        let docker = Side::new(RuntimeTarget(self.docker.clone()), names.clone(), since);
        // The model states that agree with every step so far (pairs issued at once can leave
        // several), at most MODEL_CANDIDATES of them.
        let mut models = vec![Side::new((self.model)(self.fresh_model(since)), names.clone(), since)];
        let mut run = SequenceRun { operations: 0, agreed: Vec::new(), disagreement: None };
        for op in ops {
            let observed = docker.step(op).await;
            run.operations += op.count();
            let (mut agreeing, mut tried) = (Vec::new(), Vec::new());
            for model in models {
                let (ok, seen) = model.outcomes(op, &observed).await;
                agreeing.extend(ok);
                tried.extend(seen.into_iter().filter(|s| !tried.contains(s)).collect::<Vec<_>>());
            }
            if agreeing.is_empty() {
                run.disagreement = Some((op.clone(), observed, tried));
                break;
            }
            agreeing.truncate(MODEL_CANDIDATES);
            models = agreeing;
            run.agreed.push((op.clone(), observed));
        }
        self.remove_sequence(&names).await;
        run
    }

    /// A fresh simulated runtime with the run's image and build context, at `now`.
    fn fresh_model(&self, now: WallTime) -> SimRuntime {
        let mut model = SimRuntime::new(7);
        model.advance(now);
        model.add_image(BASE_IMAGE);
        model.add_build_context(&self.context, requests::build_context_files(BASE_IMAGE));
        model
    }

    async fn remove_sequence(&self, names: &Names) {
        remove_made(self.docker.as_ref(), names).await;
    }

    /// Remove everything this run made (also what an interrupted sequence left), and its files.
    pub async fn cleanup(&self, sequences: usize) {
        let labels = BTreeMap::from([(RUN_LABEL.to_string(), self.run.clone())]);
        remove_labelled(self.docker.as_ref(), &labels, &format!("ddiff-{}-", self.run)).await;
        for sequence in 0..sequences {
            let names = Names::new(&self.run, &sequence.to_string(), 0, BASE_IMAGE, &self.context);
            for tag in names.all_tags() {
                let _ = self.docker.execute(RuntimeRequest::RemoveImage { reference: tag, force: true }).await;
            }
        }
        let _ = std::fs::remove_dir_all(&self.workdir);
    }
}

/// Replay `steps` (each with what Docker observed, as JSON) on `runtime`, names from `names`,
/// then remove what they made: `Err` names the first step whose observation differs. What a
/// case printed by a run calls (through the conformance fixture's `replay`).
pub async fn replay<R: Runtime>(runtime: Arc<R>, names: Names, steps: &[(Op, &str)]) -> Result<(), String> {
    let since = drydock_adapters::clock::wall_now();
    let side = Side::new(RuntimeTarget(runtime.clone()), names.clone(), since);
    let mut outcome = Ok(());
    for (index, (op, expected)) in steps.iter().enumerate() {
        let expected: Value = match serde_json::from_str(expected) {
            Ok(expected) => expected,
            Err(e) => {
                outcome = Err(format!("step {index}: {expected:?} is not JSON: {e}"));
                break;
            }
        };
        let seen = side.step(op).await;
        if !observe::agrees(&seen, &expected) && !observe::agrees(&expected, &seen) {
            outcome = Err(format!("step {index}, {op:?}: observed {seen}, Docker observed {expected}"));
            break;
        }
    }
    remove_made(runtime.as_ref(), &names).await;
    outcome
}

/// Remove what sequence `names` made: its containers (with their anonymous volumes), its
/// networks, the volumes named with its prefix (a mount makes them without labels), its
/// images.
async fn remove_made<R: Runtime>(runtime: &R, names: &Names) {
    remove_labelled(runtime, &names.labels(), &names.prefix).await;
    for tag in names.all_tags() {
        let _ = runtime.execute(RuntimeRequest::RemoveImage { reference: tag, force: true }).await;
    }
}

async fn remove_labelled<R: Runtime>(runtime: &R, labels: &BTreeMap<String, String>, prefix: &str) {
    if let Ok(RuntimeReply::Containers(list)) =
        runtime.execute(RuntimeRequest::ListContainers { labels: labels.clone() }).await
    {
        for container in list {
            let _ = runtime.execute(RuntimeRequest::RemoveContainer { id: container.id, force: true }).await;
        }
    }
    if let Ok(RuntimeReply::Networks(list)) =
        runtime.execute(RuntimeRequest::ListNetworks { labels: labels.clone() }).await
    {
        for network in list {
            let _ = runtime.execute(RuntimeRequest::RemoveNetwork { id: network.id }).await;
        }
    }
    if let Ok(RuntimeReply::Volumes(list)) =
        runtime.execute(RuntimeRequest::ListVolumes { labels: BTreeMap::new() }).await
    {
        for volume in list.into_iter().filter(|v| v.name.starts_with(prefix)) {
            let _ = runtime.execute(RuntimeRequest::RemoveVolume { name: volume.name }).await;
        }
    }
}

/// A sequential value tree's counter of the steps a run took.
type Seen = Option<Arc<std::sync::atomic::AtomicUsize>>;

/// The `seen` counter of a sequential value tree: how many of its steps the last run took, so
/// that shrinking first drops the steps after the disagreement.
trait ValueTreeSeen {
    fn seen(&self, steps: usize);
}

impl<T: ValueTree<Value = (ops::Plan, Vec<Op>, Seen)>> ValueTreeSeen for T {
    fn seen(&self, steps: usize) {
        if let Some(counter) = self.current().2 {
            counter.store(steps, Ordering::SeqCst);
        }
    }
}

/// The generator of a run: proptest's, on ChaCha seeded from `seed`.
fn runner(seed: u64) -> TestRunner {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

/// Sequence `sequence`'s value tree again, as the run generated it.
fn regenerate(
    options: &Options,
    sequence: usize,
) -> Result<impl ValueTree<Value = (ops::Plan, Vec<Op>, Seen)>, DiffError> {
    let mut runner = runner(options.seed);
    let strategy = Sequences::sequential_strategy(options.length..=options.length);
    let generate =
        |runner: &mut TestRunner| strategy.new_tree(runner).map_err(|e| DiffError::Generation(e.to_string()));
    for _ in 0..sequence {
        generate(&mut runner)?;
    }
    generate(&mut runner)
}

/// A host port nothing listens on, below the ephemeral range.
fn free_port() -> u16 {
    for _ in 0..100 {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let port = 20_000 + u16::try_from(nanos % 10_000).unwrap_or(0);
        if std::net::TcpListener::bind(("0.0.0.0", port)).is_ok() {
            return port;
        }
    }
    29_999
}

fn write_files(dir: &Path, files: &BTreeMap<String, String>) -> Result<(), DiffError> {
    let failed = |source| DiffError::Files { path: dir.display().to_string(), source };
    std::fs::create_dir_all(dir).map_err(failed)?;
    for (name, contents) in files {
        std::fs::write(dir.join(name), contents).map_err(failed)?;
    }
    Ok(())
}
