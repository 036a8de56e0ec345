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
