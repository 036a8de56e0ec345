//! The engine's integration tests, in one binary: its contract driven by hand, deletion and
//! namespace cleanup end to end, runtime failures and how each ends, and the public toolkit from a
//! user's side.
#![allow(clippy::unwrap_used)]

mod backpressure;
mod contract;
mod failures;
mod gc;
mod toolkit;
