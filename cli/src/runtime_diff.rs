//! `drydock runtime diff`: check the simulated runtime against the Docker this machine has.

use anyhow::{Context as _, Result};
use clap::{Args, Subcommand};
use drydock_adapters::DockerRuntime;
use drydock_runtime_diff::{Diff, Options, Report};
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Subcommand)]
pub enum RuntimeCommand {
    /// Run seeded sequences of runtime operations (containers, images, builds, networks,
    /// volumes, copies, logs, events, stops with timeouts; some issued at once) on the local
    /// Docker and on the simulated runtime, and compare what each step observed. A disagreement
    /// is shrunk to the shortest sequence that still disagrees and printed as a conformance case
    /// to paste.
    Diff(DiffArgs),
}

#[derive(Args)]
#[command(after_help = "\
Needs a running Docker (DOCKER_HOST or /var/run/docker.sock) and Debian's busybox-static: the \
run builds its image (drydock-diff/busybox:1) from /bin/busybox, offline. Every object it makes \
is named ddiff-<run>-... and labelled drydock.diff.run=<run>; each sequence's objects are removed \
when it ends, and all of the run's on Ctrl-C. Progress goes to stderr, a line per sequence.
Exit status: 0 if Docker and the model agreed on every step, 1 if they disagreed somewhere, 2 on \
an error (no Docker, no busybox).")]
pub struct DiffArgs {
    /// How many sequences.
    #[arg(long, default_value_t = 30)]
    sequences: usize,
    /// Steps per sequence (a step issuing two operations at once counts one).
    #[arg(long, default_value_t = 15)]
    length: usize,
    /// The seed of the sequences: the same seed generates the same ones. [default: random,
    /// printed]
    #[arg(long)]
    seed: Option<u64>,
    /// How many sequences run at once.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// How many reruns shrinking one disagreement may take.
    #[arg(long, default_value_t = 200)]
    shrink_runs: usize,
    /// Print every step of every sequence, with what Docker observed, to stderr.
    #[arg(long)]
    steps: bool,
    /// Print one JSON object as the last line of stdout: seed, sequences, length, operations,
    /// disagreements (each with its shrunk steps and its case), seconds.
    #[arg(long)]
    json: bool,
}

pub fn run(command: RuntimeCommand) -> Result<ExitCode> {
    let RuntimeCommand::Diff(args) = command;
    if args.sequences == 0 || args.length == 0 {
        anyhow::bail!("--sequences and --length must be at least 1");
    }
    let seed = args.seed.unwrap_or_else(random_seed);
    let options = Options {
        sequences: args.sequences,
        length: args.length,
        seed,
        concurrency: args.concurrency.max(1),
        shrink_runs: args.shrink_runs,
        show_steps: args.steps,
    };
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("start the tokio runtime")?;
    let report = runtime.block_on(diff(options))?;
    let Some(report) = report else {
        eprintln!("interrupted: removed what the run made");
        return Ok(ExitCode::from(130));
    };
    print(&report, args.json)?;
    Ok(if report.disagreements.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// The run, or `None` when Ctrl-C ended it (after removing what it made).
async fn diff(options: Options) -> Result<Option<Report>> {
    let docker = DockerRuntime::connect().await.context("connect to Docker")?;
    let diff = Diff::new(Arc::new(docker));
    eprintln!(
        "runtime diff: seed {} ({} sequences of {} steps, {} at once; run {}); reproduce with --seed {}",
        options.seed, options.sequences, options.length, options.concurrency, diff.run, options.seed
    );
    let progress = |line: String| eprintln!("{line}");
    let work = async {
        diff.prepare().await?;
        diff.run(&options, &progress).await
    };
    let outcome = tokio::select! {
        outcome = work => Some(outcome),
        _ = tokio::signal::ctrl_c() => None,
    };
    diff.cleanup(options.sequences).await;
    match outcome {
        Some(report) => Ok(Some(report?)),
        None => Ok(None),
    }
}

fn print(report: &Report, json: bool) -> Result<()> {
    let mut out = std::io::stdout().lock();
    for found in &report.unconfirmed {
        writeln!(
            out,
            "unconfirmed: sequence {} disagreed at {}, but its shrunk sequence agreed in every rerun (Docker varied there)",
            found.sequence,
            found.steps.last().map_or("?", |s| s.operation.as_str())
        )?;
    }
    for found in &report.disagreements {
        writeln!(
            out,
            "DISAGREEMENT in sequence {} ({} steps, shrunk to {}; the shrunk sequence disagreed again in {} reruns):",
            found.sequence, found.generated_steps, found.shrunk_steps, found.reproduced
        )?;
        for step in &found.steps {
            writeln!(out, "  {}\n    docker: {}", step.operation, step.docker)?;
        }
        for seen in &found.model {
            writeln!(out, "    model:  {seen}")?;
        }
        writeln!(out, "as a conformance case:\n{}", found.case)?;
    }
    writeln!(
        out,
        "{} sequences, {} operations, {} disagreements ({} unconfirmed) in {:.1}s (seed {})",
        report.sequences,
        report.operations,
        report.disagreements.len(),
        report.unconfirmed.len(),
        report.seconds,
        report.seed
    )?;
    if json {
        writeln!(out, "{}", serde_json::to_string(report)?)?;
    }
    Ok(())
}

fn random_seed() -> u64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    u64::try_from(nanos % 1_000_000).unwrap_or(0)
}
