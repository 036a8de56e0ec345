//! Small helpers shared by the workload generators.

use drydock_engine::MonoTime;
use drydock_faults::unit;
use drydock_sim::workload::{ClientOp, TimedOp};
use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;
use std::time::Duration;

pub fn between(rng: &mut ChaCha8Rng, lo_ms: u64, hi_ms: u64) -> Duration {
    Duration::from_millis(lo_ms + rng.next_u64() % (hi_ms - lo_ms + 1))
}

pub fn chance(rng: &mut ChaCha8Rng, p: f64) -> bool {
    unit(rng) < p
}

pub fn pick<'a, T>(rng: &mut ChaCha8Rng, items: &'a [T]) -> &'a T {
    &items[(rng.next_u64() % items.len() as u64) as usize]
}

/// Collects timed operations; `finish` sorts them by time (stable: equal times keep their order).
#[derive(Default)]
pub struct Ops(Vec<TimedOp>);

impl Ops {
    pub fn at(&mut self, t: Duration, op: ClientOp) {
        self.0.push(TimedOp { at: MonoTime::from_duration(t), op });
    }

    pub fn finish(mut self) -> Vec<TimedOp> {
        self.0.sort_by_key(|o| o.at);
        self.0
    }
}

/// Spellings of one image that normalize to the same reference.
pub fn spellings(repository: &str, tag: &str) -> Vec<String> {
    let mut all = vec![format!("{repository}:{tag}"), format!("docker.io/library/{repository}:{tag}")];
    if tag == "latest" {
        all.push(repository.to_string());
        all.push(format!("library/{repository}"));
    }
    all
}
