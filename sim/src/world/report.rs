//! What a run produced.

use super::env::RunStats;
use crate::probes::Probe;
use drydock_faults::{Decisions, FaultKind};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// A violated invariant or eventual property.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Violation {
    pub invariant: String,
    pub message: String,
    /// Simulated time of the violation, in seconds.
    pub at: String,
    /// The number of the event after which it was found (events count from 1).
    #[serde(skip)]
    pub event: u64,
}

/// Everything a run produced.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    pub seed: u64,
    pub ok: bool,
    pub digest: String,
    pub events: u64,
    /// Simulated time at the end of the run.
    pub sim_nanos: u64,
    pub faults: String,
    /// How many times each fault kind fired.
    pub fault_counts: BTreeMap<FaultKind, u64>,
    /// Which draws of each kind fired: saved in a schedule, they replay this run exactly.
    #[serde(skip)]
    pub fault_decisions: Decisions,
    pub violations: Vec<Violation>,
    /// Hits per probe; probes not hit are absent.
    pub probes: BTreeMap<Probe, u64>,
    /// The probes the run could reach by construction ([`crate::probes::reachable`]).
    pub probes_reachable: BTreeSet<Probe>,
    pub stats: RunStats,
    /// Every event, explained, if the run kept its trace.
    #[serde(skip)]
    pub trace: Option<Vec<crate::trace::TraceEvent>>,
}
