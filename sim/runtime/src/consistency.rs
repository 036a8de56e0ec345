//! The runtime's consistency: each part keeps its own guarantees, and says whether they hold
//! (its `check`); the runtime checks them all here.

use super::SimRuntime;

impl SimRuntime {
    /// Whether the runtime is consistent: every part's guarantees hold. Reads everything: for
    /// tests, not for every step of a run.
    pub fn check(&self) -> Result<(), String> {
        self.events.check()?;
        self.outputs.check()
    }
}

#[cfg(test)]
#[path = "consistency_tests.rs"]
mod tests;
