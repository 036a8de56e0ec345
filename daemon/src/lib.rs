//! drydock's daemon: the engine's production home.
//!
//! - [`api`]: the Kubernetes-style HTTP API over a [`drydock_adapters::SharedStore`] (discovery,
//!   CRUD, patch, watch, tables, `Status` errors, bearer-token auth, a body size limit), as an
//!   `axum::Router` that can be served over any listener and tested in-process.
//! - [`state_dir`]: the daemon's state directory: its lock, token, certificate and kubeconfig.
//! - [`tls`]: the server's rustls configuration from the state dir's certificate.
//! - [`server`]: serving the router over TCP (TLS or not) until a shutdown signal, and running the
//!   engine's driver beside it.

pub mod api;
pub mod server;
pub mod state_dir;
pub mod tls;
