//! `drydock daemon`: the engine and the Docker driver of `drydock up`, plus the Kubernetes-style
//! API over HTTPS, on a state directory held by one daemon at a time.

use anyhow::{Context as _, Result};
use clap::Args;
use drydock_daemon::{DaemonOptions, Ready};
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args)]
#[command(after_help = "\
Needs a running Docker (DOCKER_HOST or /var/run/docker.sock). When ready it prints two lines to \
stdout:
  drydock daemon listening on https://127.0.0.1:PORT
  kubeconfig: PATH
then e.g. `kubectl --kubeconfig PATH get --raw /healthz`. Every request needs the bearer token \
(in the kubeconfig; generated at first start in <state-dir>/token, mode 0600). Logs go to \
stderr (DRYDOCK_LOG=debug for more, default info); the token is never logged.
Exit status: 0 after SIGTERM or SIGINT (in-flight requests finished, engine stopped), 2 on an \
error (for instance another daemon holds the state dir, or Docker is unreachable).")]
pub struct DaemonArgs {
    /// The state directory: lock, bearer token, identity, CA and server certificate, store,
    /// default kubeconfig. Created with mode 0700. One daemon per state directory: a second one
    /// is refused. [default: $XDG_STATE_HOME/drydock, else ~/.local/state/drydock]
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Address to serve HTTPS on. Port 0 picks a free port. Anything but a loopback address
    /// exposes the API (token-protected) to whoever can reach it, and is logged as a warning.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Where to write the client kubeconfig (mode 0600; an existing kubeconfig with other
    /// clusters is refused, not overwritten). [default: <state-dir>/kubeconfig]
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// How long in-flight requests may take to finish after SIGTERM or SIGINT (open watches and
    /// `logs -f` followers are ended at once, not waited for).
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    shutdown_grace_secs: u64,
}

pub fn run(args: DaemonArgs, components: &drydock_adapters::Components) -> Result<ExitCode> {
    let state_dir = match args.state_dir {
        Some(dir) => dir,
        None => drydock_daemon::state_dir::default_path()?,
    };
    let options = DaemonOptions {
        state_dir,
        listen: args.listen,
        kubeconfig: args.kubeconfig,
        shutdown_grace: Duration::from_secs(args.shutdown_grace_secs),
        components: components.clone(),
    };
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("start the tokio runtime")?;
    runtime.block_on(drydock_daemon::run(options, print_ready))?;
    Ok(ExitCode::SUCCESS)
}

/// The two lines scripts and tests wait for, flushed at once.
fn print_ready(ready: &Ready) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "drydock daemon listening on {}", ready.url);
    let _ = writeln!(out, "kubeconfig: {}", ready.kubeconfig.display());
    let _ = out.flush();
}
