//! What happened during a run that the final state no longer shows: pulls in flight, lease
//! claims, external removals, and violations observed as events. The world records it; the
//! invariants read it.

use drydock_engine::api::Uid;
use drydock_engine::{OpId, WallTime};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug)]
pub struct History {
    /// Pulls issued and not yet applied or cancelled, per normalized reference.
    pub pulls_in_flight: BTreeMap<String, BTreeSet<(usize, OpId)>>,
    /// Pulls ever issued, per normalized reference.
    pub pulls_issued: BTreeMap<String, u64>,
    /// Every ContainerImage ever seen: uid -> (normalized reference, pull retry limit).
    pub image_budgets: BTreeMap<Uid, (String, u32)>,
    /// Lease claims made by successful writes: lease name -> holder -> held until.
    pub lease_claims: BTreeMap<String, BTreeMap<String, WallTime>>,
    /// The first image id each ContainerImage pinned.
    pub pinned: BTreeMap<Uid, String>,
    /// Owner uids whose runtime container someone removed behind drydock's back.
    pub externally_removed: BTreeSet<String>,
    /// Runtime mutations (create, start, stop, remove) in flight, per owner uid.
    pub mutations_in_flight: BTreeMap<String, u32>,
    /// Runtime creates applied per logical container uid.
    pub logical_creates: BTreeMap<String, u32>,
    /// Drydock-created containers removed by an engine: name -> the lifecycle key they carried.
    pub removed_by_engine: BTreeMap<String, Option<String>>,
    /// Violations seen as they happened: (invariant, message).
    pub flagged: Vec<(&'static str, String)>,
}

impl History {
    pub const fn new() -> Self {
        History {
            pulls_in_flight: BTreeMap::new(),
            pulls_issued: BTreeMap::new(),
            image_budgets: BTreeMap::new(),
            lease_claims: BTreeMap::new(),
            pinned: BTreeMap::new(),
            externally_removed: BTreeSet::new(),
            mutations_in_flight: BTreeMap::new(),
            logical_creates: BTreeMap::new(),
            removed_by_engine: BTreeMap::new(),
            flagged: Vec::new(),
        }
    }

    pub fn flag(&mut self, invariant: &'static str, message: String) {
        self.flagged.push((invariant, message));
    }

    /// The first flagged violation of `invariant`.
    pub fn flagged(&self, invariant: &str) -> Option<&str> {
        self.flagged.iter().find(|(i, _)| *i == invariant).map(|(_, m)| m.as_str())
    }
}

impl Default for History {
    fn default() -> Self {
        History::new()
    }
}

/// An empty history, for checking a state on its own.
pub static EMPTY: History = History::new();
