//! The scenarios' integration tests, in one binary: sweeps of every scenario, the regression
//! corpus, the golden digests, and the same digests with the store over SQLite.
#![allow(clippy::unwrap_used)]

mod bug_switches;
mod builder;
mod golden;
mod incremental;
mod oracles;
mod regressions;
mod sqlite;
mod sweep;
