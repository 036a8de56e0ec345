//! Unit tests of the API store over the memory backend: the shared suite (`conformance`).

#![allow(clippy::unwrap_used)]

crate::store_conformance_tests!(|config| crate::store::Store::in_memory(crate::store::Registry::builtin(), config));
