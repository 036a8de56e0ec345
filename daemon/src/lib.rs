//! drydock's daemon: the engine's production home.
//!
//! - [`api`]: the Kubernetes-style HTTP API over a [`drydock_adapters::SharedStore`] (discovery,
//!   CRUD, patch, watch, tables, `Status` errors, bearer-token auth, a body size limit), as an
//!   `axum::Router` that can be served over any listener and tested in-process.
//! - [`client`]: a small API client over a transport it is given (create, get, delete, list,
//!   a resuming watch; retries with backoff; idempotent creates through a request id).
//! - [`state_dir`]: the daemon's state directory: its lock, token, identity and certificates.
//! - [`tls`]: certificates (rcgen) and the server's rustls configuration (`ring`).
//! - [`kubeconfig`]: the client configuration the daemon writes (mode 0600).
//! - [`server`]: serving the router over TLS until a shutdown signal, with the engine's driver
//!   beside it; [`server::run`] is `drydock daemon`. [`server::serve_with`] serves the router
//!   over any [`server::Listener`] (the tests use turmoil's simulated network, in plain HTTP).

pub mod api;
pub mod client;
pub mod kubeconfig;
pub mod server;
pub mod state_dir;
pub mod tls;

pub use server::{DaemonError, DaemonOptions, Ready, run};
