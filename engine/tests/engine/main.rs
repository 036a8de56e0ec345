//! The engine's integration tests, in one binary: its contract driven by hand, deletion and
//! namespace cleanup end to end, and the public toolkit from a user's side.
#![allow(clippy::unwrap_used)]

mod contract;
mod gc;
mod toolkit;
