//! Counters for reports: the containers created and the images pulled since the runtime began.
//! Docker keeps neither (`docker info` counts only what exists now); a simulated run reports
//! them.

/// How many creates and pulls succeeded.
///
/// *Guarantees*: each count only grows, by one for each create that handed out a container id
/// and each pull that stored or confirmed an image (a build's pull of its base image included);
/// a refused or failed one counts nothing, and neither does a container inserted from outside.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counters {
    creates: u64,
    pulls: u64,
}

impl Counters {
    pub(crate) fn created(&mut self) {
        self.creates += 1;
    }

    pub(crate) fn pulled(&mut self) {
        self.pulls += 1;
    }

    pub(crate) fn creates(&self) -> u64 {
        self.creates
    }

    pub(crate) fn pulls(&self) -> u64 {
        self.pulls
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_count_grows_by_its_own_events() {
        let mut counters = Counters::default();
        counters.created();
        counters.created();
        counters.pulled();
        assert_eq!((counters.creates(), counters.pulls()), (2, 1));
    }
}
