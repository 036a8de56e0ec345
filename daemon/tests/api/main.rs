//! The daemon API's integration tests: in-process conventions (`conventions`, `watch`), a
//! seeded generator of malformed requests (`malformed`), and a kube-rs client over TCP
//! (`kube_client`).

#![allow(clippy::unwrap_used)]

mod apply;
mod clients;
mod common;
mod conventions;
mod finalizers;
mod hostile;
mod kube_client;
mod malformed;
mod openapi;
mod readiness;
mod watch;
