//! Tests of the invariants about what a process knows (`caches`).

use super::*;
use drydock_engine::cache::Cache;

/// A cache filled by a list of `objects`.
fn listed(objects: Vec<Arc<Object>>, w: &Fixture) -> Cache {
    let mut cache = Cache::default();
    let _changed = cache.resync(objects, w.store.resource_version());
    cache
}

#[test]
fn a_relist_that_keeps_what_the_list_lacked_is_caught_one_that_replaces_is_not() {
    let mut w = Fixture::new();
    let kept = w.pc("kept", busybox(), "c1");
    let gone = w.pc("gone", busybox(), "c2");
    w.store.delete(WallTime(2), &gone.key(), &DeleteOptions::default()).unwrap();
    let exact = listed(w.store.list(None, None), &w);
    w.observe(Happening::Relisted { process: 0, cache: &exact });
    assert_eq!(w.violated(), None, "the cache is the list");
    let ghost = listed(vec![kept.clone(), gone.clone()], &w);
    w.observe(Happening::Relisted { process: 1, cache: &ghost });
    assert_eq!(w.violated().as_deref(), Some("relist-forgets-the-unlisted"));
    assert!(
        w.message().contains("p1 relisted") && w.message().contains("PhysicalContainer/ns/gone"),
        "{}",
        w.message()
    );
}

#[test]
fn a_relist_that_keeps_another_uid_under_a_listed_name_is_caught() {
    let mut w = Fixture::new();
    let old = w.pc("c", busybox(), "c1");
    w.store.delete(WallTime(2), &old.key(), &DeleteOptions::default()).unwrap();
    w.pc("c", busybox(), "c2");
    let mut objects = w.store.list(None, None);
    objects.retain(|o| o.metadata.name != "c");
    objects.push(old);
    let ghost = listed(objects, &w);
    w.observe(Happening::Relisted { process: 0, cache: &ghost });
    assert_eq!(w.violated().as_deref(), Some("relist-forgets-the-unlisted"));
    assert!(w.message().contains("reused name"), "{}", w.message());
}
