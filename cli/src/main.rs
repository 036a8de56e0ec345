//! `drydock`: the container-lifecycle engine and its deterministic simulator.

mod client;
mod daemon;
mod manifest;
mod sim;
mod state;
mod up;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "drydock", version, about = "Container-lifecycle controller engine and its deterministic simulator")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the engine in the deterministic simulator: seed sweeps, single-seed repros, the catalog.
    #[command(subcommand)]
    Sim(sim::SimCommand),
    /// Apply a manifest (keeping its objects in a state dir beside it), run the engine against
    /// Docker, and tear everything down on Ctrl-C or SIGTERM; with --wait, return once all settled.
    Up(up::UpArgs),
    /// Run the engine against Docker with a Kubernetes-style API over HTTPS (bearer token, its
    /// own CA) and write a kubeconfig for kubectl; stop cleanly on SIGTERM or Ctrl-C.
    Daemon(daemon::DaemonArgs),
    /// Tear down what `drydock up --wait` left running (by its manifest or state dir).
    Down(up::DownArgs),
    /// Create or update the objects of a manifest in a running daemon (kubectl apply).
    Apply(client::ApplyArgs),
    /// Show objects as a table, or as json, yaml or names (kubectl get).
    Get(client::GetArgs),
    /// Delete objects by name or by manifest (kubectl delete).
    Delete(client::DeleteArgs),
    /// Show one object in detail (kubectl describe).
    Describe(client::DescribeArgs),
    /// Wait until an object meets a condition or is deleted (kubectl wait).
    Wait(client::WaitArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // In the simulator, faults are injected on purpose: the engine's warnings about them are
    // noise unless asked for with DRYDOCK_LOG.
    let default_level = match cli.command {
        Command::Sim(_) => "error",
        Command::Daemon(_) => "info",
        _ => "warn",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("DRYDOCK_LOG").unwrap_or_else(|_| default_level.into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let result = match cli.command {
        Command::Sim(command) => sim::run(command),
        Command::Up(args) => up::run(&args),
        Command::Daemon(args) => daemon::run(args),
        Command::Down(args) => up::down(&args),
        Command::Apply(args) => client::apply(&args),
        Command::Get(args) => client::get(&args),
        Command::Delete(args) => client::delete(&args),
        Command::Describe(args) => client::describe(&args),
        Command::Wait(args) => client::wait(&args),
    };
    match result {
        Ok(code) => code,
        // The reader went away (`drydock sim repro --trace | head`): not an error of ours.
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error
        .chain()
        .any(|e| e.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe))
}
