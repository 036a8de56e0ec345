//! The scenarios' integration tests, in one binary: sweeps of every scenario, the regression
//! corpus, and the golden digests.
#![allow(clippy::unwrap_used)]

mod golden;
mod regressions;
mod sweep;
