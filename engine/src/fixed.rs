//! Hash maps for the core that stay deterministic: insertion-ordered ([`indexmap`]) and hashed
//! with a fixed seed ([`foldhash`]'s `FixedState`), never with the OS-seeded `RandomState`.
//!
//! *Why*: a `BTreeMap` keyed by object keys compares strings at every level of its tree, so its
//! lookups grow with the number of objects; the work queue, the backoff counts and the engine's
//! per-key bookkeeping are looked up several times per event. These maps hash instead.
//!
//! *Guarantees*: iteration is in insertion order (as modified by `swap_remove`), the same on
//! every run and machine; hash values never decide anything observable.
//!
//! *Caveats*: use them only where nothing iterates them to decide behaviour in key order; where
//! order matters, a `BTreeMap` says so.

/// The hasher: a fixed seed, so two runs lay out their tables alike.
pub type FixedState = foldhash::fast::FixedState;

/// An insertion-ordered hash map with a fixed-seed hasher.
pub type FixedMap<K, V> = indexmap::IndexMap<K, V, FixedState>;

/// An insertion-ordered hash set with a fixed-seed hasher.
pub type FixedSet<K> = indexmap::IndexSet<K, FixedState>;

/// A map looked up by hash and iterated in key order: a [`FixedMap`] holds the entries, a
/// `BTreeSet` their keys' order.
///
/// *Why*: the store's and the cache's objects are read by key many times per event and iterated
/// (listed) in key order far less often. In a `BTreeMap` every read compares strings at each level
/// of a tree as deep as the world is large; here a read hashes the key once, and only a new key
/// or a removal walks the tree.
///
/// *Guarantees*: [`iter`](Self::iter) and [`range`](Self::range) visit entries in key order,
/// exactly as a `BTreeMap` of the same entries would; replacing the value of a present key does
/// not touch the order.
///
/// *Caveats*: each key is stored twice (clone it cheaply or accept the memory).
#[derive(Clone)]
pub struct SortedMap<K, V> {
    entries: FixedMap<K, V>,
    order: std::collections::BTreeSet<K>,
}

impl<K, V> Default for SortedMap<K, V> {
    fn default() -> Self {
        SortedMap { entries: FixedMap::default(), order: std::collections::BTreeSet::new() }
    }
}

impl<K: std::fmt::Debug + Ord + std::hash::Hash + Clone, V: std::fmt::Debug> std::fmt::Debug for SortedMap<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: Ord + std::hash::Hash + Clone, V> SortedMap<K, V> {
    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: std::borrow::Borrow<Q>,
        Q: std::hash::Hash + Eq + ?Sized,
    {
        self.entries.get(key)
    }

    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: std::borrow::Borrow<Q>,
        Q: std::hash::Hash + Eq + ?Sized,
    {
        self.entries.get_mut(key)
    }

    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: std::borrow::Borrow<Q>,
        Q: std::hash::Hash + Eq + ?Sized,
    {
        self.entries.contains_key(key)
    }

    /// Insert or replace; returns the value replaced.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.entries.entry(key) {
            indexmap::map::Entry::Occupied(mut slot) => Some(slot.insert(value)),
            indexmap::map::Entry::Vacant(slot) => {
                self.order.insert(slot.key().clone());
                slot.insert(value);
                None
            }
        }
    }

    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
        Q: std::hash::Hash + Ord + Eq + ?Sized,
    {
        let value = self.entries.swap_remove(key)?;
        self.order.remove(key);
        Some(value)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.order.iter().filter_map(|key| self.entries.get_key_value(key))
    }

    /// The values in key order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.iter().map(|(_, value)| value)
    }

    /// The entries whose keys are in `range`, in key order.
    pub fn range<R: std::ops::RangeBounds<K>>(&self, range: R) -> impl Iterator<Item = (&K, &V)> {
        self.order.range(range).filter_map(|key| self.entries.get_key_value(key))
    }

    /// The keys in `range`, in key order, without reading their values.
    pub fn keys_range<R: std::ops::RangeBounds<K>>(&self, range: R) -> impl Iterator<Item = &K> {
        self.order.range(range)
    }
}

impl<K: Ord + std::hash::Hash + Clone, V> FromIterator<(K, V)> for SortedMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(entries: I) -> Self {
        let mut map = SortedMap::default();
        for (key, value) in entries {
            map.insert(key, value);
        }
        map
    }
}

#[cfg(test)]
mod tests {
    use super::SortedMap;
    use std::collections::BTreeMap;

    /// Any sequence of inserts and removes leaves a `SortedMap` iterating, ranging and reading
    /// exactly as a `BTreeMap` given the same sequence.
    #[test]
    fn a_sorted_map_reads_and_iterates_as_a_btree_map() {
        let mut sorted: SortedMap<String, u32> = SortedMap::default();
        let mut btree: BTreeMap<String, u32> = BTreeMap::new();
        let mut state = 0x9e37_79b9_u32;
        for step in 0..5_000u32 {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let key = format!("k{}", (state >> 8) % 300);
            if (state >> 4).is_multiple_of(3) {
                assert_eq!(sorted.remove(&key), btree.remove(&key), "remove {key} at step {step}");
            } else {
                assert_eq!(sorted.insert(key.clone(), step), btree.insert(key, step), "insert at step {step}");
            }
            assert_eq!(sorted.len(), btree.len());
        }
        assert!(sorted.iter().eq(btree.iter()), "iteration order differs");
        let (low, high) = ("k1".to_string(), "k5".to_string());
        assert!(sorted.range(low.clone()..high.clone()).eq(btree.range(low..high)), "range differs");
        for i in 0..300 {
            let key = format!("k{i}");
            assert_eq!(sorted.get(&key), btree.get(&key));
            assert_eq!(sorted.contains_key(key.as_str()), btree.contains_key(key.as_str()));
        }
        let collected: SortedMap<String, u32> = btree.clone().into_iter().collect();
        assert!(collected.values().eq(btree.values()));
    }
}
