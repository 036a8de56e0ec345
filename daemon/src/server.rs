//! Serving the API over TLS until a shutdown signal, with the engine's driver beside it: the
//! daemon's main loop ([`run`]).
//!
//! Start-up order: lock the state dir → token, identity, certificates → open the store →
//! connect to Docker → bind the listener → write the kubeconfig → ready (the `on_ready`
//! callback) → serve and drive until SIGTERM or SIGINT.
//!
//! *Guarantees*: on the signal the listener closes at once (no new connections), in-flight
//! requests get up to [`DaemonOptions::shutdown_grace`] to finish (HTTP/2 connections get a
//! GOAWAY, idle HTTP/1 connections are closed; open watches and followed logs end at once, their
//! streams closed cleanly, see [`ApiOptions::stopping`]), then the driver stops, then the store is closed,
//! and [`run`] returns `Ok`. Store writes are synchronous calls made inside a request or a driver
//! turn, so stopping between them never cuts one in half. Nothing the daemon logs contains the
//! token.
//!
//! *Guarantees* (bounded connections, [`ServerOptions`]): a connection holds a descriptor only
//! while it is useful. The TLS handshake has a deadline; a connection that sends no request
//! within the header-read timeout, or stays idle (no request in flight: a watch in flight is not
//! idle) past the idle timeout, is closed; a connection whose request was refused with 401 is
//! closed once the 401 is sent (`Connection: close` on HTTP/1, GOAWAY on HTTP/2). At most
//! [`ServerOptions::max_connections`] are open at once (fewer when `ulimit -n` is low): beyond
//! that a new connection is accepted and closed at once, so the daemon never runs out of
//! descriptors and the connections already open keep working. An HTTP/2 connection carries at
//! most [`ServerOptions::max_concurrent_streams`] requests at once. None of this touches the
//! store, so `/livez` and `/readyz` answer however busy the API is.
//!
//! The serving loop is transport-agnostic: [`serve_with`] takes any [`Listener`] and a
//! per-connection `establish` step; [`serve`] is it over TCP with a TLS handshake (production),
//! [`serve_plain`] over any listener in plain HTTP (the tests on turmoil's simulated network,
//! `daemon/tests/turmoil/`, which has no TLS).
//!
//! *Caveats*: connections still open after the grace period (a slow request, a stuck client) are
//! dropped when the runtime ends. The connection cap is shared by everyone who can reach the
//! port: clients without the token can fill it (a connection that sends nothing is closed at the
//! header-read timeout; one that asks only for `/livez` or `/readyz`, which need no token, is kept
//! like any other), and while it is full new connections are refused; established ones keep
//! working. A bind to a non-loopback address is allowed (the
//! user asked for it) and logged as a warning: anyone who can reach it and holds the token can use
//! the daemon.

use crate::api::{self, ApiOptions};
use crate::kubeconfig::{self, KubeconfigError};
use crate::state_dir::{StateDir, StateDirError};
use crate::tls::{self, CertError};
use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::http::{HeaderValue, Request, StatusCode, Version, header};
use axum::response::Response;
use drydock_adapters::{Components, DockerError, DockerRuntime, Driver, Predecessor, SharedStore};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, watch};
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt as _;

/// How long a connection told to close (idle, or after a 401) may take to finish the goodbye
/// (the last response, HTTP/2's GOAWAY exchange) before it is dropped.
const CLOSE_LINGER: Duration = Duration::from_secs(5);

/// Descriptors kept out of the connection cap's reach, at the least: the store, Docker, logs,
/// the runtime's own (the cap leaves a quarter of `ulimit -n`, and never less than this).
const RESERVED_DESCRIPTORS: usize = 64;

/// The highest connection cap there is (Linux's highest descriptor limit by default, `nr_open`).
const MOST_CONNECTIONS: usize = 1 << 20;

/// How often refused connections are logged at most (a flood must not flood the log).
const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// The bounds on the connections the daemon serves: timeouts and caps. [`Default`] is what
/// `drydock daemon` uses; tests shorten them.
///
/// *Guarantees*: every connection is closed when the first of these passes: the handshake
/// timeout (TLS not done), the header-read timeout (no request yet), the idle timeout (no
/// request in flight since the last one ended), a 401. A connection told to close gets
/// 5 s to say goodbye (its last response, HTTP/2's GOAWAY exchange), then is dropped.
///
/// *Caveats*: the idle clock counts requests, not bytes: HTTP/2 pings and partial headers do not
/// keep a connection open; one request in flight (a watch, a slow upload) keeps it open as long
/// as it lasts (an HTTP/2 peer that stops answering pings is closed even then).
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// How long a client may take to finish its TLS handshake, from the accept (10 s: a loopback
    /// handshake takes milliseconds; this leaves room for a loaded machine).
    pub handshake_timeout: Duration,
    /// How long a connection may take to send the headers of its first request, from the end of
    /// its handshake (10 s: kubectl and the client libraries send it at once). Applies to
    /// HTTP/1, HTTP/2, and to a connection that sent nothing at all.
    pub header_read_timeout: Duration,
    /// How long a connection with no request in flight stays open after its last request ended
    /// (60 s: long enough that clients reuse connections between commands and polls, shorter
    /// than most clients' own idle timeouts, so the server, not the client, decides). HTTP/1
    /// keep-alive and HTTP/2 alike; a watch in flight is a request in flight.
    pub idle_timeout: Duration,
    /// The most connections open at once, those still in their handshake included (1,024: each
    /// client needs one HTTP/2 connection, or a few HTTP/1 ones). Lowered to three quarters of
    /// the descriptor limit (`ulimit -n`) when that is smaller, so the store and Docker always
    /// have descriptors. Beyond it, a new connection is accepted and closed at once.
    pub max_connections: usize,
    /// The most requests in flight on one HTTP/2 connection (250, as Go's HTTP/2 server, which
    /// client-go expects); HTTP/1 serves one at a time.
    pub max_concurrent_streams: u32,
    /// How long an HTTP/2 connection may stay silent before it is pinged (30 s); a peer that
    /// does not answer within 20 s is gone, and its connection, watches included, is closed.
    /// `None`: never pinged.
    pub http2_keep_alive_interval: Option<Duration>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            handshake_timeout: Duration::from_secs(10),
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: 1024,
            max_concurrent_streams: 250,
            http2_keep_alive_interval: Some(Duration::from_secs(30)),
        }
    }
}

impl ServerOptions {
    /// [`max_connections`](Self::max_connections), lowered to what the descriptor limit leaves
    /// room for (at least 1).
    pub fn connection_cap(&self) -> usize {
        connection_cap(self.max_connections, descriptor_limit())
    }
}

/// `configured`, lowered to three quarters of `descriptors` (keeping at least
/// [`RESERVED_DESCRIPTORS`] back), between 1 and [`MOST_CONNECTIONS`].
fn connection_cap(configured: usize, descriptors: Option<usize>) -> usize {
    let room = descriptors.map_or(usize::MAX, |limit| limit.saturating_sub((limit / 4).max(RESERVED_DESCRIPTORS)));
    configured.min(room).clamp(1, MOST_CONNECTIONS)
}

/// The soft limit on open descriptors (`ulimit -n`), from `/proc/self/limits`; `None` where
/// there is no such file (not Linux) or the limit is `unlimited`.
fn descriptor_limit() -> Option<usize> {
    open_files_limit(&std::fs::read_to_string("/proc/self/limits").ok()?)
}

/// The soft `Max open files` of a `/proc/<pid>/limits` text.
fn open_files_limit(limits: &str) -> Option<usize> {
    let line = limits.lines().find_map(|line| line.strip_prefix("Max open files"))?;
    line.split_whitespace().next()?.parse().ok()
}

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
    crate::state_dir::restrict_umask(); // what SQLite creates (`-wal`, `-shm`) is 0600 too
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
    let (stop_api, stopping) = api::Stopping::channel();
    let options_api =
        ApiOptions { token: Some(token), runtime_health: Some(driver.health()), stopping, ..ApiOptions::default() };
    let router = api::router_with_logs(store.clone(), driver.logs(), options_api);
    let ready = Ready { addr, url, kubeconfig: kubeconfig_path, state_dir: state.path().to_path_buf(), identity };
    tracing::info!(url = %ready.url, kubeconfig = %ready.kubeconfig.display(), identity = %ready.identity, "ready");
    on_ready(&ready);

    let (stop_driver, driver_stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = async {
        // Open watches and followed logs end as shutdown starts, so the grace is for requests
        // that finish by themselves.
        let shutdown = async {
            shutdown.await;
            stop_api.send_replace(true);
        };
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
/// finish for up to `grace`; connections bounded by the [`ServerOptions`] defaults.
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
    serve_tls(listener, tls, router, shutdown, grace, ServerOptions::default()).await;
}

/// [`serve`], with connections bounded by `options`.
///
/// *Guarantees*: as [`serve`]'s and [`ServerOptions`]'.
pub async fn serve_tls(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
    options: ServerOptions,
) {
    let acceptor = TlsAcceptor::from(tls);
    let handshake = move |tcp: TcpStream, peer: SocketAddr| {
        let acceptor = acceptor.clone();
        async move {
            acceptor.accept(tcp).await.inspect_err(|error| tracing::debug!(%peer, %error, "TLS handshake failed")).ok()
        }
    };
    serve_with(listener, handshake, router, shutdown, grace, options).await;
}

/// Serve `router` in plain HTTP (no TLS) on any [`Listener`], connections bounded by the
/// [`ServerOptions`] defaults: what the tests on turmoil's simulated network run. Production
/// never serves plain HTTP; it uses [`serve`].
pub async fn serve_plain<L: Listener>(listener: L, router: Router, shutdown: impl Future<Output = ()>, grace: Duration)
where
    L::Conn: AsyncRead + AsyncWrite + Unpin,
{
    let plain = |conn: L::Conn, _peer| async move { Some(conn) };
    serve_with(listener, plain, router, shutdown, grace, ServerOptions::default()).await;
}

/// Serve `router` on `listener`: each accepted connection goes through `establish` (a TLS
/// handshake, or nothing) in its own task, then HTTP/2 or HTTP/1.1 until it closes. Stops
/// accepting when `shutdown` resolves, then lets in-flight requests finish for up to `grace`.
///
/// *Guarantees*: as [`serve`]'s and [`ServerOptions`]', for any transport: the API does not know
/// what carries it. A connection beyond the cap is dropped as soon as it is accepted.
pub async fn serve_with<L, E, F, Io>(
    mut listener: L,
    establish: E,
    router: Router,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
    options: ServerOptions,
) where
    L: Listener,
    E: Fn(L::Conn, SocketAddr) -> F,
    F: Future<Output = Option<Io>> + Send + 'static,
    Io: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let cap = options.connection_cap();
    tracing::info!(max_connections = cap, "serving");
    let slots = Arc::new(Semaphore::new(cap));
    let (stop, stopping) = watch::channel(false);
    let options = Arc::new(options);
    let mut refusals = Refusals::default();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((conn, peer)) => {
                let Ok(slot) = slots.clone().try_acquire_owned() else {
                    refusals.refused(peer, cap);
                    continue; // `conn` is dropped: closed at once.
                };
                let established = establish(conn, peer);
                let serving = Serving { router: router.clone(), options: options.clone(), stopping: stopping.clone() };
                tokio::spawn(serving.run(established, peer, slot));
            }
            Err(error) => {
                tracing::warn!(%error, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    drop(listener);
    stop.send_replace(true);
    tracing::info!(?grace, "no longer accepting; waiting for in-flight requests");
    let all_closed = slots.acquire_many(u32::try_from(cap).unwrap_or(u32::MAX));
    tokio::select! {
        _ = all_closed => tracing::info!("all connections closed"),
        () = tokio::time::sleep(grace) => tracing::warn!(?grace, "connections still open after the grace period: dropping them"),
    }
}

/// Counts the connections refused at the cap, and logs them now and then.
#[derive(Default)]
struct Refusals {
    since_logged: u64,
    logged_at: Option<Instant>,
}

impl Refusals {
    fn refused(&mut self, peer: SocketAddr, cap: usize) {
        self.since_logged += 1;
        tracing::debug!(%peer, "connection refused: at the connection cap");
        if self.logged_at.is_none_or(|at| at.elapsed() >= REFUSAL_LOG_INTERVAL) {
            tracing::warn!(
                max_connections = cap,
                refused = self.since_logged,
                "at the connection cap: refusing new connections until some close"
            );
            self.since_logged = 0;
            self.logged_at = Some(Instant::now());
        }
    }
}

/// What a connection's task needs besides its connection.
struct Serving {
    router: Router,
    options: Arc<ServerOptions>,
    /// Turns `true` when the daemon shuts down.
    stopping: watch::Receiver<bool>,
}

impl Serving {
    /// Establish the connection (within the handshake timeout), then serve it; `_slot` is its
    /// place under the connection cap, given back when this returns.
    async fn run<F, Io>(mut self, established: F, peer: SocketAddr, _slot: OwnedSemaphorePermit)
    where
        F: Future<Output = Option<Io>>,
        Io: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let io = tokio::select! {
            io = tokio::time::timeout(self.options.handshake_timeout, established) => io,
            () = stopped(&mut self.stopping) => return,
        };
        match io {
            Ok(Some(io)) => self.connection(io, peer).await,
            Ok(None) => {}
            Err(_) => tracing::debug!(%peer, "handshake timed out"),
        }
    }

    /// One established connection: HTTP/2 or HTTP/1.1 (by ALPN or preface) until it closes, or
    /// is closed for one of the reasons of [`Closing`].
    async fn connection<Io>(mut self, io: Io, peer: SocketAddr)
    where
        Io: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let activity = Arc::new(Activity::new());
        let builder = http_builder(&self.options);
        let service = tracked(self.router.clone(), activity.clone());
        let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
        let mut conn = std::pin::pin!(conn);
        let closing = tokio::select! {
            ended = conn.as_mut() => return log_end(peer, ended),
            closing = activity.until_closing(&self.options) => closing,
            () = stopped(&mut self.stopping) => Closing::Shutdown,
        };
        tracing::debug!(%peer, ?closing, "closing the connection");
        conn.as_mut().graceful_shutdown();
        match closing {
            Closing::Shutdown => log_end(peer, conn.await),
            _ => match tokio::time::timeout(CLOSE_LINGER, conn).await {
                Ok(ended) => log_end(peer, ended),
                Err(_) => tracing::debug!(%peer, "connection did not close in time: dropped"),
            },
        }
    }
}

/// Resolves when the daemon shuts down (or the server is gone).
async fn stopped(stopping: &mut watch::Receiver<bool>) {
    let _ = stopping.wait_for(|stop| *stop).await;
}

fn log_end<E: std::fmt::Display>(peer: SocketAddr, ended: Result<(), E>) {
    if let Err(error) = ended {
        tracing::debug!(%peer, %error, "connection ended with an error");
    }
}

/// HTTP/2 or HTTP/1.1 with `options`' limits.
///
/// HTTP/1's own header-read timer is off: the connection's [`Activity`] clock covers the first
/// request's headers, keep-alive, and the protocol sniffing before either (which has no timer of
/// its own).
fn http_builder(options: &ServerOptions) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().header_read_timeout(None);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(options.max_concurrent_streams)
        .keep_alive_interval(options.http2_keep_alive_interval);
    builder
}

/// Why the server closes a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Closing {
    /// No request within the header-read timeout.
    NoRequest,
    /// No request in flight for the idle timeout.
    Idle,
    /// A request was refused with 401.
    Unauthenticated,
    /// The daemon is shutting down.
    Shutdown,
}

/// What one connection's requests are doing, for its idle clock.
struct Activity {
    state: parking_lot::Mutex<ActivityState>,
    changed: Notify,
}

struct ActivityState {
    in_flight: usize,
    requests: u64,
    /// When the connection was established, or its last request ended.
    since: Instant,
    unauthenticated: bool,
}

/// What the idle clock does next.
enum Next {
    Close(Closing),
    /// Wait for a change, or until the instant (when no request is in flight).
    Wait(Option<Instant>),
}

impl Activity {
    fn new() -> Activity {
        let state = ActivityState { in_flight: 0, requests: 0, since: Instant::now(), unauthenticated: false };
        Activity { state: parking_lot::Mutex::new(state), changed: Notify::new() }
    }

    fn update(&self, change: impl FnOnce(&mut ActivityState)) {
        change(&mut self.state.lock());
        self.changed.notify_waiters();
    }

    fn next(&self, options: &ServerOptions) -> Next {
        let state = self.state.lock();
        if state.unauthenticated {
            return Next::Close(Closing::Unauthenticated);
        }
        if state.in_flight > 0 {
            return Next::Wait(None);
        }
        let (timeout, closing) = match state.requests {
            0 => (options.header_read_timeout, Closing::NoRequest),
            _ => (options.idle_timeout, Closing::Idle),
        };
        match state.since.checked_add(timeout) {
            Some(deadline) if deadline <= Instant::now() => Next::Close(closing),
            deadline => Next::Wait(deadline), // `None`: a timeout too long to be reached.
        }
    }

    /// Resolves when the connection should be closed, and why (never [`Closing::Shutdown`]).
    async fn until_closing(&self, options: &ServerOptions) -> Closing {
        loop {
            let changed = self.changed.notified();
            match self.next(options) {
                Next::Close(closing) => return closing,
                Next::Wait(None) => changed.await,
                Next::Wait(Some(deadline)) => {
                    tokio::select! {
                        () = changed => {}
                        () = tokio::time::sleep_until(deadline) => {}
                    }
                }
            }
        }
    }
}

/// One request in flight on a connection, from its headers to the end of its response's body
/// (a watch's stream included).
struct InFlight(Arc<Activity>);

impl InFlight {
    fn begin(activity: Arc<Activity>) -> InFlight {
        activity.update(|state| {
            state.in_flight += 1;
            state.requests += 1;
        });
        InFlight(activity)
    }

    /// Close the connection once this request's response is sent.
    fn close_connection(&self) {
        self.0.update(|state| state.unauthenticated = true);
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.update(|state| {
            state.in_flight -= 1;
            state.since = Instant::now();
        });
    }
}

/// A response body that keeps its request [`InFlight`] until it is sent (or dropped).
struct TrackedBody {
    body: Body,
    _in_flight: InFlight,
}

impl HttpBody for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// `router` as the connection's service: each request counts as in flight on `activity` until
/// its response is sent, and a 401 closes the connection after it.
fn tracked(
    router: Router,
    activity: Arc<Activity>,
) -> impl hyper::service::Service<Request<Incoming>, Response = Response, Error = Infallible, Future: Send> + Clone {
    let service = move |request: Request<Incoming>| {
        let in_flight = InFlight::begin(activity.clone());
        let router = router.clone();
        async move { Ok::<_, Infallible>(respond(router, request, in_flight).await) }
    };
    hyper::service::service_fn(service)
}

async fn respond(router: Router, request: Request<Incoming>, in_flight: InFlight) -> Response {
    let http1 = request.version() < Version::HTTP_2;
    let Ok(mut response) = router.oneshot(request).await;
    if response.status() == StatusCode::UNAUTHORIZED {
        in_flight.close_connection();
        if http1 {
            response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
    }
    response.map(|body| Body::new(TrackedBody { body, _in_flight: in_flight }))
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

    #[test]
    fn the_cap_leaves_descriptors_for_the_rest() {
        assert_eq!(connection_cap(1024, None), 1024);
        assert_eq!(connection_cap(1024, Some(20_000)), 1024);
        assert_eq!(connection_cap(1024, Some(1024)), 768, "a quarter kept back");
        assert_eq!(connection_cap(1024, Some(256)), 192);
        assert_eq!(connection_cap(1024, Some(100)), 36, "at least 64 kept back");
        assert_eq!(connection_cap(1024, Some(10)), 1, "never zero");
        assert_eq!(connection_cap(0, None), 1);
        assert_eq!(connection_cap(usize::MAX, None), MOST_CONNECTIONS);
    }

    #[test]
    fn open_files_limit_is_read_from_proc_limits() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max cpu time              unlimited            unlimited            seconds   \n\
                      Max open files            256                  524288               files     \n";
        assert_eq!(open_files_limit(limits), Some(256));
        assert_eq!(open_files_limit("Max open files            unlimited   unlimited   files\n"), None);
        assert_eq!(open_files_limit(""), None);
    }
}
