//! What clients do during a run: a list of timed operations against the store.
//!
//! A workload is plain data (serde), so a run can be saved and replayed without the generator
//! that made it.

use drydock_engine::MonoTime;
use serde::{Deserialize, Serialize};

/// One client operation. Objects are named; uids are looked up when the operation runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum ClientOp {
    CreateNamespace {
        name: String,
    },
    DeleteNamespace {
        name: String,
    },
    CreateContainer {
        namespace: String,
        name: String,
        image: String,
        /// Name of a container in the same namespace that owns this one (garbage collection).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        owner: Option<String>,
    },
    /// Set `spec.stop`.
    StopContainer {
        namespace: String,
        name: String,
    },
    DeleteContainer {
        namespace: String,
        name: String,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimedOp {
    /// Simulated nanoseconds since the start of the run.
    pub at: MonoTime,
    #[serde(flatten)]
    pub op: ClientOp,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workload {
    /// Images present in the runtime from the start.
    pub images: Vec<String>,
    /// Sorted by time.
    pub ops: Vec<TimedOp>,
}

impl Workload {
    /// When the last operation runs.
    pub fn end(&self) -> MonoTime {
        self.ops.iter().map(|o| o.at).max().unwrap_or_default()
    }
}
