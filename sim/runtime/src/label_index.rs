//! The runtime's index of container labels: which containers carry a label with a value, in id
//! order, found without reading every container (`docker ps --filter label=K=V`).
//!
//! *Guarantees*: [`LabelIndex::ids`] yields the ids carrying the pair in the order of their
//! `String`s, as a `BTreeSet<String>` would.
//!
//! *Caveats*: an id's first eight bytes are kept beside it and settle most comparisons, so that an
//! insert into the set of a label every container carries (the creator's, a namespace's) does not
//! read a cold string at each step of its descent. Pairs are found by hash: nothing reads them in
//! order.

use drydock_engine::fixed::FixedMap;
use std::collections::{BTreeMap, BTreeSet};

/// A container id, ordered exactly as its `String`: first by its first eight bytes as a
/// big-endian number (zero-padded), which is their lexicographic order, then by the whole id.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct OrderedId {
    head: u64,
    id: String,
}

impl OrderedId {
    fn new(id: &str) -> Self {
        let mut head = [0u8; 8];
        let n = id.len().min(8);
        head[..n].copy_from_slice(&id.as_bytes()[..n]);
        OrderedId { head: u64::from_be_bytes(head), id: id.to_string() }
    }
}

#[derive(Clone, Debug, Default)]
pub(super) struct LabelIndex {
    /// (label, value) -> the ids of the containers carrying it.
    by_pair: FixedMap<(String, String), BTreeSet<OrderedId>>,
}

impl LabelIndex {
    /// Index container `id` under each of its `labels`.
    pub(super) fn add(&mut self, id: &str, labels: &BTreeMap<String, String>) {
        for (label, value) in labels {
            self.by_pair.entry((label.clone(), value.clone())).or_default().insert(OrderedId::new(id));
        }
    }

    /// Forget container `id` under each of its `labels`.
    pub(super) fn remove(&mut self, id: &str, labels: &BTreeMap<String, String>) {
        let id = OrderedId::new(id);
        for (label, value) in labels {
            let key = (label.clone(), value.clone());
            if let Some(ids) = self.by_pair.get_mut(&key) {
                ids.remove(&id);
                if ids.is_empty() {
                    self.by_pair.swap_remove(&key);
                }
            }
        }
    }

    /// Every (label, value, id) indexed, in no particular order (for checks).
    pub(super) fn entries(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.by_pair
            .iter()
            .flat_map(|((label, value), ids)| ids.iter().map(move |o| (label.as_str(), value.as_str(), o.id.as_str())))
    }

    /// The ids of the containers carrying `label` with `value`, in id order.
    pub(super) fn ids<'a>(&'a self, label: &str, value: &str) -> impl Iterator<Item = &'a str> + 'a {
        self.by_pair.get(&(label.to_string(), value.to_string())).into_iter().flatten().map(|o| o.id.as_str())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::{RngCore, SeedableRng};

    #[test]
    fn ids_order_as_their_strings() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        // Prefixes of one another, NULs, bytes above ASCII, lengths around the eight kept inline.
        let alphabet = ["", "\0", "a", "ab", "b", "\u{e9}", "0", "f", "zz"];
        let mut ids: Vec<String> = Vec::new();
        for _ in 0..2_000 {
            let parts = (rng.next_u32() % 12) as usize;
            ids.push((0..parts).map(|_| alphabet[rng.next_u32() as usize % alphabet.len()]).collect());
        }
        for pair in ids.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            assert_eq!(OrderedId::new(a).cmp(&OrderedId::new(b)), a.cmp(b), "{a:?} against {b:?}");
        }
        let mut index = LabelIndex::default();
        let labels = BTreeMap::from([("k".to_string(), "v".to_string())]);
        for id in &ids {
            index.add(id, &labels);
        }
        let expected: BTreeSet<&str> = ids.iter().map(String::as_str).collect();
        assert!(index.ids("k", "v").eq(expected.iter().copied()));
        for id in ids.iter().step_by(2) {
            index.remove(id, &labels);
        }
        let kept: BTreeSet<&str> = ids
            .iter()
            .skip(1)
            .step_by(2)
            .map(String::as_str)
            .filter(|id| !ids.iter().step_by(2).any(|r| r == id))
            .collect();
        assert!(index.ids("k", "v").eq(kept.iter().copied()));
        assert_eq!(index.ids("k", "other").count(), 0);
    }
}
