//! Serving the API over TLS until a shutdown signal, with the engine's driver beside it: the
//! daemon's main loop ([`run`]).
//!
//! Start-up order: lock the state dir → token, identity, certificates → open the store →
//! connect to Docker → bind the listener → write the kubeconfig → ready (the `on_ready`
//! callback) → serve and drive until SIGTERM or SIGINT.
//!
//! *Guarantees*: on the signal the listener closes at once (no new connections), in-flight
//! requests get up to [`DaemonOptions::shutdown_grace`] to finish (HTTP/2 connections get a
//! GOAWAY, idle HTTP/1 connections are closed), then the driver stops, then the store is closed,
//! and [`run`] returns `Ok`. Store writes are synchronous calls made inside a request or a driver
//! turn, so stopping between them never cuts one in half. Nothing the daemon logs contains the
//! token.
//!
//! The serving loop is transport-agnostic: [`serve_with`] takes any [`Listener`] and a
//! per-connection `establish` step; [`serve`] is it over TCP with a TLS handshake (production),
//! [`serve_plain`] over any listener in plain HTTP (the tests on turmoil's simulated network,
//! `daemon/tests/turmoil/`, which has no TLS).
//!
//! *Caveats*: connections still open after the grace period (a long watch, a stuck client) are
//! dropped when the runtime ends. A bind to a non-loopback address is allowed (the user asked for
//! it) and logged as a warning: anyone who can reach it and holds the token can use the daemon.

use crate::api::{self, ApiOptions};
use crate::kubeconfig::{self, KubeconfigError};
use crate::state_dir::{StateDir, StateDirError};
use crate::tls::{self, CertError};
use axum::Router;
use drydock_adapters::{Components, DockerError, DockerRuntime, Driver, Predecessor, SharedStore};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

/// How long a client may take to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What `drydock daemon` was asked to do.
#[derive(Clone, Debug)]
pub struct DaemonOptions {
    pub state_dir: PathBuf,
    /// Where to listen; port 0 picks a free port.
    pub listen: SocketAddr,
    /// Where to write the kubeconfig; `None`: `<state-dir>/kubeconfig`.
    pub kubeconfig: Option<PathBuf>,
    /// How long in-flight requests may take to finish after the shutdown signal.
    pub shutdown_grace: Duration,
    /// The kinds the store admits and the API serves, and the controllers the engine runs: the
    /// built-in ones, plus a user's.
    pub components: Components,
}

impl DaemonOptions {
    /// The defaults for `state_dir`: loopback on a random free port, kubeconfig in the state
    /// dir, 10 s grace.
    pub fn new(state_dir: PathBuf) -> DaemonOptions {
        DaemonOptions {
            state_dir,
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            kubeconfig: None,
            shutdown_grace: Duration::from_secs(10),
            components: Components::new(),
        }
    }
}

/// What a ready daemon tells its caller.
#[derive(Clone, Debug)]
pub struct Ready {
    /// The address bound.
    pub addr: SocketAddr,
    /// The URL clients use (`https://127.0.0.1:PORT`; a loopback address for a wildcard bind).
    pub url: String,
    pub kubeconfig: PathBuf,
    pub state_dir: PathBuf,
    /// The engine's identity (`drydock-daemon-<id>`).
    pub identity: String,
}

/// Why the daemon could not start or serve.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    StateDir(#[from] StateDirError),
    #[error(transparent)]
    Kubeconfig(#[from] KubeconfigError),
    #[error("TLS setup failed")]
    Tls(#[from] CertError),
    #[error("cannot open the durable store")]
    Store(#[source] drydock_adapters::store::OpenError),
    #[error("cannot reach Docker, which the daemon needs (is it running? try `docker info`)")]
    Docker(#[source] DockerError),
    #[error("cannot listen on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot install the SIGTERM/SIGINT handlers")]
    Signal(#[source] std::io::Error),
}

/// Run the daemon until SIGTERM or SIGINT; `on_ready` is called once it serves.
///
/// *Guarantees*: the signal handlers are installed before anything else, so a signal that
/// arrives during start-up or right after `on_ready` still shuts down cleanly with `Ok`.
pub async fn run(options: DaemonOptions, on_ready: impl FnOnce(&Ready)) -> Result<(), DaemonError> {
    let shutdown = shutdown_signal()?;
    run_until(options, on_ready, shutdown).await
}

/// [`run`], stopping when `shutdown` resolves instead of on a signal.
pub async fn run_until(
    options: DaemonOptions,
    on_ready: impl FnOnce(&Ready),
    shutdown: impl Future<Output = ()>,
) -> Result<(), DaemonError> {
    let state = StateDir::open(&options.state_dir)?;
    tracing::info!(state_dir = %state.path().display(), "state dir locked");
    let token = state.token()?;
    let identity = state.identity()?;
    let listen = options.listen;
    if !listen.ip().is_loopback() {
        tracing::warn!(%listen, "listening beyond loopback as asked: anyone who can reach this address and holds the token can use the daemon");
    }
    // Any address but the default loopback ones goes into the certificate (127.0.0.2 too).
    let extra_ips = [listen.ip()];
    let certs = state.certificates(&extra_ips)?;
    let tls = tls::server_config(&certs.server_cert_pem, &certs.server_key_pem)?;
    let predecessor = if state.take_clean_stop()? { Predecessor::StoppedCleanly } else { Predecessor::MayHaveCrashed };
    let store = open_store_for(&state, &options.components)?;
    let docker = Arc::new(DockerRuntime::connect().await.map_err(DaemonError::Docker)?);
    let listener = TcpListener::bind(listen).await.map_err(|source| DaemonError::Bind { addr: listen, source })?;
    let addr = listener.local_addr().map_err(|source| DaemonError::Bind { addr: listen, source })?;
    let url = server_url(addr);
    let kubeconfig_path = options.kubeconfig.clone().unwrap_or_else(|| state.default_kubeconfig_path());
    kubeconfig::write(&kubeconfig_path, &url, &certs.ca_pem, &token)?;
    let mut driver = Driver::with_components(&identity, store.clone(), docker, predecessor, &options.components);
    let options_api = ApiOptions { token: Some(token), ..ApiOptions::default() };
    let router = api::router_with_logs(store.clone(), driver.logs(), options_api);
    let ready = Ready { addr, url, kubeconfig: kubeconfig_path, state_dir: state.path().to_path_buf(), identity };
    tracing::info!(url = %ready.url, kubeconfig = %ready.kubeconfig.display(), identity = %ready.identity, "ready");
    on_ready(&ready);

    let (stop_driver, driver_stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = async {
        serve(listener, tls, router, shutdown, options.shutdown_grace).await;
        let _ = stop_driver.send(());
    };
    let driving = driver.run(async {
        let _ = driver_stopped.await;
    });
    tokio::join!(serving, driving);
    // Runtime requests still in flight are waited for, so the next start need not assume a
    // crash (which holds deleted containers' finalizers for the runtime timeout).
    if driver.stop(options.shutdown_grace).await {
        state.record_clean_stop()?;
    }
    tracing::info!("driver stopped; closing the store");
    drop(store);
    drop(state); // releases the lock last
    tracing::info!("stopped");
    Ok(())
}

/// Open the durable store at `<state-dir>/store.db` (SQLite, created on first start).
///
/// *Guarantees*: a database that cannot be opened or fails its integrity check is an error naming
/// the file and what to do; it is never replaced.
pub fn open_store(state: &StateDir) -> Result<Arc<SharedStore>, DaemonError> {
    open_store_for(state, &Components::new())
}

/// [`open_store`], admitting `components`' kinds.
pub fn open_store_for(state: &StateDir, components: &Components) -> Result<Arc<SharedStore>, DaemonError> {
    let config = drydock_engine::store::StoreConfig::default();
    SharedStore::open_sqlite_for(&state.store_path(), components.registry().clone(), config).map_err(DaemonError::Store)
}

/// `https://ADDR`, with a loopback address in place of a wildcard one.
pub fn server_url(addr: SocketAddr) -> String {
    let ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    format!("https://{}", SocketAddr::new(ip, addr.port()))
}

/// Resolves on SIGTERM or SIGINT. The handlers are installed when this is called.
pub fn shutdown_signal() -> Result<impl Future<Output = ()>, DaemonError> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).map_err(DaemonError::Signal)?;
    let mut int = signal(SignalKind::interrupt()).map_err(DaemonError::Signal)?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
            _ = int.recv() => tracing::info!("SIGINT: shutting down"),
        }
    })
}

/// Where connections come from: a TCP listener in production, a simulated one (turmoil's) in
/// tests. [`serve_with`] serves the API over any of them.
pub trait Listener: Send {
    /// An accepted connection, before any handshake.
    type Conn: Send + 'static;
    /// Wait for the next connection and its peer's address.
    fn accept(&mut self) -> impl Future<Output = std::io::Result<(Self::Conn, SocketAddr)>> + Send;
}

impl Listener for TcpListener {
    type Conn = TcpStream;

    async fn accept(&mut self) -> std::io::Result<(TcpStream, SocketAddr)> {
        TcpListener::accept(self).await
    }
}

/// Serve `router` over TLS on `listener` until `shutdown` resolves, then let in-flight requests
/// finish for up to `grace`.
///
/// *Guarantees*: returns within `grace` (plus a moment) of `shutdown`; the listener is closed
/// before waiting. A failed accept (say, out of file descriptors) or handshake is logged and
/// serving goes on.
pub async fn serve(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) {
    let acceptor = TlsAcceptor::from(tls);
    let handshake = move |tcp: TcpStream, peer: SocketAddr| {
        let acceptor = acceptor.clone();
        async move {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(stream)) => Some(stream),
                Ok(Err(error)) => {
                    tracing::debug!(%peer, %error, "TLS handshake failed");
                    None
                }
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake timed out");
                    None
                }
            }
        }
    };
    serve_with(listener, handshake, router, shutdown, grace).await;
}

/// Serve `router` in plain HTTP (no TLS) on any [`Listener`]: what the tests on turmoil's
/// simulated network run. Production never serves plain HTTP; it uses [`serve`].
pub async fn serve_plain<L: Listener>(listener: L, router: Router, shutdown: impl Future<Output = ()>, grace: Duration)
where
    L::Conn: AsyncRead + AsyncWrite + Unpin,
{
    serve_with(listener, |conn: L::Conn, _peer| async move { Some(conn) }, router, shutdown, grace).await;
}

/// Serve `router` on `listener`: each accepted connection goes through `establish` (a TLS
/// handshake, or nothing) in its own task, then HTTP/2 or HTTP/1.1 until it closes. Stops
/// accepting when `shutdown` resolves, then lets in-flight requests finish for up to `grace`.
///
/// *Guarantees*: as [`serve`]'s, for any transport: the API does not know what carries it.
pub async fn serve_with<L, E, F, Io>(
    mut listener: L,
    establish: E,
    router: Router,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) where
    L: Listener,
    E: Fn(L::Conn, SocketAddr) -> F,
    F: Future<Output = Option<Io>> + Send + 'static,
    Io: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((conn, peer)) => {
                let established = establish(conn, peer);
                let router = router.clone();
                let watcher = graceful.watcher();
                tokio::spawn(async move {
                    if let Some(io) = established.await {
                        connection(io, peer, router, watcher).await;
                    }
                });
            }
            Err(error) => {
                tracing::warn!(%error, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    drop(listener);
    tracing::info!(?grace, "no longer accepting; waiting for in-flight requests");
    tokio::select! {
        () = graceful.shutdown() => tracing::info!("all connections closed"),
        () = tokio::time::sleep(grace) => tracing::warn!(?grace, "connections still open after the grace period: dropping them"),
    }
}

/// One established connection: HTTP/2 or HTTP/1.1 (by ALPN or preface) until it closes.
async fn connection<Io>(io: Io, peer: SocketAddr, router: Router, watcher: Watcher)
where
    Io: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let builder = auto::Builder::new(TokioExecutor::new());
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), TowerToHyperService::new(router));
    if let Err(error) = watcher.watch(conn).await {
        tracing::debug!(%peer, %error, "connection ended with an error");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn url_of_wildcard_is_loopback() {
        let url = |addr: &str| server_url(addr.parse().unwrap());
        assert_eq!(url("0.0.0.0:80"), "https://127.0.0.1:80");
        assert_eq!(url("[::]:80"), "https://[::1]:80");
        assert_eq!(url("127.0.0.1:5"), "https://127.0.0.1:5");
        assert_eq!(url("[::1]:5"), "https://[::1]:5");
    }
}
