//! `drydock`: the container-lifecycle engine and its deterministic simulator, as a binary and as a
//! library a user's own binary is built from.
//!
//! [`Drydock`] is the whole `drydock` command line (`sim`, `up`, `down`, `daemon` and the client
//! verbs) with a user's kinds, controllers and scenarios added to the built-in ones:
//!
//! ```no_run
//! use drydock::{Components, Drydock};
//! # struct MyController;
//! # impl drydock_engine::Controller for MyController {
//! #     fn name(&self) -> &str { "mine" }
//! #     fn watches(&self) -> Vec<drydock_engine::controller::Watch> { Vec::new() }
//! #     fn reconcile(&mut self, _: &mut drydock_engine::controller::Context<'_>, _: &drydock_engine::api::ObjectKey)
//! #         -> drydock_engine::controller::ReconcileResult { Ok(drydock_engine::controller::Action::done()) }
//! # }
//! fn main() -> std::process::ExitCode {
//!     Drydock::new("my-drydock")
//!         .components(Components::new().controller(|| MyController))
//!         .main()
//! }
//! ```

mod bench;
#[cfg(feature = "production")]
mod client;
#[cfg(feature = "production")]
mod daemon;
mod jobs;
mod logging;
#[cfg(feature = "production")]
mod manifest;
#[cfg(feature = "production")]
mod runtime_diff;
pub mod sim;
#[cfg(feature = "production")]
mod state;
#[cfg(feature = "production")]
mod up;

use clap::{CommandFactory, FromArgMatches, Subcommand};
pub use drydock_engine::Components;
use drydock_scenarios::Scenario;
use std::process::ExitCode;

/// `drydock --version`: the crate's version and the git commit it was built from (`unknown` for
/// a build without git, `-dirty` when tracked files differed from it; see `build.rs`).
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("DRYDOCK_GIT_COMMIT"), ")");

#[derive(clap::Parser)]
#[command(name = "drydock", version = VERSION, about = "Container-lifecycle controller engine and its deterministic simulator")]
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
    #[cfg(feature = "production")]
    Up(up::UpArgs),
    /// Run the engine against Docker with a Kubernetes-style API over HTTPS (bearer token, its
    /// own CA) and write a kubeconfig for kubectl; stop cleanly on SIGTERM or Ctrl-C.
    #[cfg(feature = "production")]
    Daemon(daemon::DaemonArgs),
    /// Check the simulated runtime against the local Docker (`runtime diff`).
    #[command(subcommand)]
    #[cfg(feature = "production")]
    Runtime(runtime_diff::RuntimeCommand),
    /// Tear down what `drydock up --wait` left running (by its manifest, project or state dir).
    #[cfg(feature = "production")]
    Down(up::DownArgs),
    /// Create or update the objects of a manifest in a running daemon (kubectl apply).
    #[cfg(feature = "production")]
    Apply(client::ApplyArgs),
    /// Show objects as a table, or as json, yaml or names (kubectl get).
    #[cfg(feature = "production")]
    Get(client::GetArgs),
    /// Delete objects by name or by manifest (kubectl delete).
    #[cfg(feature = "production")]
    Delete(client::DeleteArgs),
    /// Show one object in detail (kubectl describe).
    #[cfg(feature = "production")]
    Describe(client::DescribeArgs),
    /// Wait until an object meets a condition or is deleted (kubectl wait).
    #[cfg(feature = "production")]
    Wait(client::WaitArgs),
    /// Print an object's log: a container's output, an image's pull output, drydock's own
    /// diagnostics (kubectl logs); with -f, follow it until the container exits or the object
    /// is deleted.
    #[cfg(feature = "production")]
    Logs(client::LogsArgs),
}

/// The `drydock` command line with a user's kinds, controllers and scenarios beside the built-in
/// ones; see the [crate](crate) documentation.
///
/// *Guarantees*: the kinds are admitted and served by `up`, `down`, `daemon` and validated by the
/// client verbs; the controllers run in every engine `up`, `down` and `daemon` start; the
/// scenarios are known to every `sim` command (`run`, `repro`, `shrink`, `replay`, `list`), whose
/// printed commands start with the program's name.
pub struct Drydock {
    name: String,
    components: Components,
    scenarios: Vec<Scenario>,
}

impl Drydock {
    /// The built-in `drydock`, named `name` in help and in the commands it prints.
    pub fn new(name: &str) -> Self {
        Drydock { name: name.to_string(), components: Components::new(), scenarios: drydock_scenarios::all().to_vec() }
    }

    /// Add a user's kinds (admitted with their validation, served by the daemon, validated by
    /// the client verbs) and controllers (run beside the built-in ones, fresh for every engine):
    /// the same [`Components`] a scenario takes (`ScenarioBuilder::components`).
    pub fn components(mut self, components: Components) -> Self {
        self.components = self.components.with(components);
        self
    }

    /// Add a scenario to `sim`.
    pub fn scenario(mut self, scenario: Scenario) -> Self {
        self.scenarios.push(scenario);
        self
    }

    /// Parse the process's arguments, run the command, and return its exit code.
    pub fn main(self) -> ExitCode {
        let matches = Cli::command().name(self.name.clone()).bin_name(self.name.clone()).get_matches();
        let cli = match Cli::from_arg_matches(&matches) {
            Ok(cli) => cli,
            Err(error) => error.exit(),
        };
        self.run(cli.command)
    }

    fn run(&self, command: Command) -> ExitCode {
        // In the simulator, faults are injected on purpose: the engine's warnings about them are
        // noise unless asked for with DRYDOCK_LOG.
        let default_level = match command {
            Command::Sim(_) => "error",
            #[cfg(feature = "production")]
            Command::Daemon(_) => "info",
            #[cfg(feature = "production")]
            _ => "warn",
        };
        logging::init(default_level, matches!(command, Command::Sim(_)));
        let result = match command {
            Command::Sim(command) => {
                let program = invocation(&self.name);
                sim::run(command, &sim::Catalog { scenarios: &self.scenarios, program: &program })
            }
            #[cfg(feature = "production")]
            Command::Up(args) => up::run(&args, &self.components, &self.name),
            #[cfg(feature = "production")]
            Command::Daemon(args) => daemon::run(args, &self.components),
            #[cfg(feature = "production")]
            Command::Down(args) => up::down(&args, &self.components, &self.name),
            #[cfg(feature = "production")]
            Command::Runtime(command) => runtime_diff::run(command),
            #[cfg(feature = "production")]
            Command::Apply(args) => client::apply(&args, self.components.registry()),
            #[cfg(feature = "production")]
            Command::Get(args) => client::get(&args),
            #[cfg(feature = "production")]
            Command::Delete(args) => client::delete(&args, self.components.registry()),
            #[cfg(feature = "production")]
            Command::Describe(args) => client::describe(&args),
            #[cfg(feature = "production")]
            Command::Wait(args) => client::wait(&args),
            #[cfg(feature = "production")]
            Command::Logs(args) => client::logs(&args),
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
}

/// How the commands `sim` prints (repro, check, replay) start, so that they run this very
/// binary as printed: `DRYDOCK_COMMAND` if set (a CI job whose report is read elsewhere says
/// `cargo run --release -p drydock-cli --`); `name` when the first `name` on `PATH` is this binary
/// (it is installed); `cargo run [--release] -p drydock-cli [--no-default-features] --` (a user's
/// binary: `--bin NAME`) when this binary is in a cargo target directory and not installed; else
/// this binary's path.
fn invocation(name: &str) -> String {
    if let Ok(given) = std::env::var("DRYDOCK_COMMAND")
        && !given.trim().is_empty()
    {
        return given.trim().to_string();
    }
    let Ok(exe) = std::env::current_exe() else { return name.to_string() };
    let exe = exe.canonicalize().unwrap_or(exe);
    let first_on_path = std::env::var_os("PATH")
        .and_then(|path| std::env::split_paths(&path).map(|dir| dir.join(name)).find(|candidate| candidate.is_file()));
    if first_on_path.and_then(|found| found.canonicalize().ok()).is_some_and(|found| found == exe) {
        return name.to_string();
    }
    cargo_run(&exe).unwrap_or_else(|| shell_word(&exe.display().to_string()))
}

/// `cargo run ... --` for a binary cargo built: `exe` is `<target>[/<triple>]/<profile>/<bin>`
/// (or `.../<profile>/examples/<example>`), the target directory marked by cargo's
/// `CACHEDIR.TAG`.
fn cargo_run(exe: &std::path::Path) -> Option<String> {
    let stem = exe.file_stem()?.to_str()?;
    let mut dir = exe.parent()?;
    let example = dir.file_name().is_some_and(|n| n == "examples");
    if example {
        dir = dir.parent()?;
    }
    let profile = dir.file_name()?.to_str()?;
    if !dir.ancestors().skip(1).take(2).any(|target| target.join("CACHEDIR.TAG").is_file()) {
        return None;
    }
    let profile = match profile {
        "debug" => String::new(),
        "release" => " --release".to_string(),
        other => format!(" --profile {}", shell_word(other)),
    };
    let which = match (example, stem) {
        (true, _) => format!("--example {}", shell_word(stem)),
        // A binary built without the production part is run as it was built: the printed
        // command then builds no more than the one that printed it.
        (false, "drydock") if cfg!(feature = "production") => "-p drydock-cli".to_string(),
        (false, "drydock") => "-p drydock-cli --no-default-features".to_string(),
        (false, _) => format!("--bin {}", shell_word(stem)),
    };
    Some(format!("cargo run{profile} {which} --"))
}

/// `word` as one shell word: as it is if it needs no quoting, else in single quotes.
pub(crate) fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error
        .chain()
        .any(|e| e.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe))
}
