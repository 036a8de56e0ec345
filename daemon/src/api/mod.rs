//! The daemon's Kubernetes-compatible HTTP API over a [`SharedStore`].
//!
//! [`router`] builds an `axum::Router` that kubectl (v1.32) and kube-rs talk to as to a small
//! Kubernetes API server: discovery, OpenAPI v3, CRUD with `Status` errors, three patch types,
//! the `status` subresource, watches and server-side tables.
//!
//! Layout:
//! - [`kinds`]: plural, singular and short names and scope of each registered kind;
//! - [`status`]: [`ApiError`](status::ApiError), rendered as a metav1 `Status`;
//! - [`wire`]: engine [`Object`](drydock_engine::api::Object) <-> Kubernetes JSON;
//! - [`times`]: the store's milliseconds <-> RFC 3339 strings;
//! - [`selectors`]: label and field selectors;
//! - [`negotiate`]: Accept / Content-Type handling and the body size limit;
//! - [`limits`]: what a request may cost: object size, body depth and decoded size, JSON patches;
//! - [`discovery`], [`openapi`]: what clients ask before they make a request;
//! - [`table`]: the `Table` form `kubectl get` shows;
//! - [`protobuf`]: the protobuf Namespace `kubectl create namespace` sends;
//! - [`paging`]: lists in pages (`limit`, `continue`) from one snapshot;
//! - [`list_types`]: how each list of the served types merges (keys, sets, atomic);
//! - [`strategic`]: strategic merge patch, merging lists by those keys;
//! - [`managed`]: managed fields: who set which field, server-side apply's conflicts;
//! - [`patch`]: merge, JSON and strategic-merge patches, and server-side apply;
//! - [`watch`]: newline-delimited watch streams with bookmarks and `410 Gone`;
//! - [`resource`]: the handlers of `/api/v1/...` and `/apis/{group}/{version}/...`;
//! - [`system_finalizers`]: drydock's own finalizers, which no API write may add or remove;
//! - [`auth`]: the bearer-token check.
//!
//! *Guarantees*: every request passes the token check first (when a token is configured), gets a
//! `tracing` span with its method and path, and every refusal is a `Status` with a reason and an
//! HTTP code. A refused request never changes the store.
//!
//! Every write takes `dryRun=All`; lists page (`limit`, `continue`); collections can be deleted
//! by selector; `/livez` and `/readyz` need no token.
//!
//! *Caveats*: no protobuf answers (clients that ask only for it get 406) and protobuf bodies only
//! for `Namespace`; field selectors only on `metadata.name` and `metadata.namespace`.

pub mod auth;
pub mod discovery;
pub mod kinds;
pub mod limits;
pub mod list_types;
pub mod log;
pub mod managed;
pub mod negotiate;
pub mod openapi;
pub mod paging;
pub mod patch;
pub mod protobuf;
pub mod resource;
pub mod respond;
pub mod route;
pub mod selectors;
pub mod status;
pub mod strategic;
pub mod system_finalizers;
pub mod table;
pub mod times;
pub mod watch;
pub mod wire;

use axum::Router;
use axum::routing::get;
use drydock_adapters::{RuntimeHealth, SharedLogs, SharedStore};
use std::sync::Arc;
use std::time::Duration;

/// How the API behaves.
#[derive(Clone, Debug)]
pub struct ApiOptions {
    /// The bearer token every request must carry; `None`: no authentication (tests, examples).
    pub token: Option<String>,
    /// Request bodies larger than this are refused with 413.
    pub max_body_bytes: usize,
    /// How long an idle watch that asked for bookmarks waits before it sends one (10 s).
    pub bookmark_interval: Duration,
    /// How long a paged list's `continue` token stays good (5 minutes, as the API server's
    /// compaction interval); see [`paging`].
    pub continue_ttl: Duration,
    /// The engine's view of its runtime: `/readyz` answers 503 while the runtime holds a request
    /// longer than `runtime_patience`. `None` (tests, no engine): the API alone decides.
    pub runtime_health: Option<RuntimeHealth>,
    /// How long the runtime may hold a request before readiness calls it degraded (60 s: half
    /// Docker's request timeout, so a supervisor hears of a hung runtime before the engine's
    /// requests time out).
    pub runtime_patience: Duration,
    /// Fires when the server shuts down: every open watch and followed log then ends at once,
    /// cleanly (the end of the stream, as at `timeoutSeconds`), so shutdown need not wait for
    /// them. The default never fires.
    pub stopping: Stopping,
}

/// The API's side of a server's shutdown: see [`ApiOptions::stopping`].
#[derive(Clone, Debug, Default)]
pub struct Stopping(Option<tokio::sync::watch::Receiver<bool>>);

impl Stopping {
    /// A signal, and what fires it: `send(true)` (or dropping it).
    pub fn channel() -> (tokio::sync::watch::Sender<bool>, Stopping) {
        let (fire, fired) = tokio::sync::watch::channel(false);
        (fire, Stopping(Some(fired)))
    }

    /// Resolves once the signal has fired (never, for the default).
    pub async fn stopped(&self) {
        match &self.0 {
            // An error is the sender gone: the server is gone too.
            Some(fired) => {
                let _ = fired.clone().wait_for(|stop| *stop).await;
            }
            None => std::future::pending().await,
        }
    }
}

impl Default for ApiOptions {
    fn default() -> Self {
        ApiOptions {
            token: None,
            max_body_bytes: 3 * 1024 * 1024,
            bookmark_interval: Duration::from_secs(10),
            continue_ttl: Duration::from_secs(300),
            runtime_health: None,
            runtime_patience: Duration::from_secs(60),
            stopping: Stopping::default(),
        }
    }
}

/// What every handler gets.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<SharedStore>,
    pub options: ApiOptions,
    /// How long an idle watch waits before it sends a bookmark (when asked for bookmarks).
    pub bookmark_interval: Duration,
    /// Held across the check-then-create of a create that carries a request id
    /// ([`REQUEST_ID_ANNOTATION`]), so two copies of one create cannot both create.
    pub create_lock: Arc<parking_lot::Mutex<()>>,
    /// What the `log` subresource serves (the driver fills it).
    pub logs: SharedLogs,
    /// The lists being read page by page.
    pub snapshots: Arc<paging::Snapshots>,
}

/// The annotation that makes a create idempotent: a create whose object carries it, arriving when
/// an object of the same kind and namespace already carries the same value, is answered `200 OK`
/// with that object instead of creating another one (or failing with `409 AlreadyExists`). A
/// client that retries a create whose reply it lost sends the same id again and so neither
/// duplicates the object nor reports a failure for a write that happened.
///
/// *Caveats*: the id is remembered only as long as the object exists: a retry that arrives after
/// the object was deleted creates it again. Ids are compared within one kind and namespace.
pub const REQUEST_ID_ANNOTATION: &str = "drydock.dev/request-id";

/// The API as an `axum::Router`: serve it over any listener, or call it in-process. Its `log`
/// subresource serves an empty hub: see [`router_with_logs`].
pub fn router(store: Arc<SharedStore>, options: ApiOptions) -> Router {
    router_with_logs(store, SharedLogs::default(), options)
}

/// The API, with the `log` subresource serving `logs` (a driver's: [`Driver::logs`]).
///
/// [`Driver::logs`]: drydock_adapters::Driver::logs
pub fn router_with_logs(store: Arc<SharedStore>, logs: SharedLogs, options: ApiOptions) -> Router {
    let state = AppState {
        store,
        options: options.clone(),
        bookmark_interval: options.bookmark_interval,
        create_lock: Arc::default(),
        logs,
        snapshots: Arc::default(),
    };
    Router::new()
        .route("/version", get(discovery::version))
        .route("/healthz", get(discovery::healthy))
        .route("/readyz", get(discovery::ready))
        .route("/livez", get(discovery::healthy))
        .route("/api", get(discovery::core_versions))
        .route("/api/", get(discovery::core_versions))
        .route("/api/v1", get(discovery::core_resources))
        .route("/api/v1/events", get(discovery::no_events))
        .route("/api/v1/namespaces/{namespace}/events", get(discovery::no_events))
        .route("/apis", get(discovery::groups))
        .route("/apis/", get(discovery::groups))
        .route("/apis/{group}", get(discovery::group))
        .route("/apis/{group}/{version}", get(discovery::group_resources))
        .route("/openapi/v2", get(openapi::v2))
        .route("/openapi/v3", get(openapi::v3_root))
        .route("/openapi/v3/{*path}", get(openapi::v3_group_version))
        .fallback(route::dispatch)
        .with_state(state)
        .layer(axum::middleware::from_fn_with_state(options, auth::require_token))
        .layer(axum::middleware::from_fn(auth::trace_request))
}
