//! Watches in the turmoil tests: a consumer's view built from a watcher's events, and the check
//! that it saw every change of the server's history once, in order.

use super::*;

/// A consumer's view, built from a watcher's events, and the events it saw.
#[derive(Default)]
pub(super) struct View {
    pub(super) objects: BTreeMap<String, u64>,
    /// (resourceVersion, type, name), or (resourceVersion, None, "") for a restart.
    pub(super) seen: Vec<(u64, Option<EventType>, String)>,
    /// The watcher's, when it was done.
    pub(super) stats: WatcherStats,
}

impl View {
    pub(super) fn apply(&mut self, event: WatchEvent) {
        let rv = event.resource_version();
        match event {
            WatchEvent::Restarted { objects, .. } => {
                self.objects = objects.iter().map(|o| (name_of(o), rv_of(o))).collect();
                self.seen.push((rv, None, String::new()));
            }
            WatchEvent::Added(o) => {
                self.objects.insert(name_of(&o), rv);
                self.seen.push((rv, Some(EventType::Added), name_of(&o)));
            }
            WatchEvent::Modified(o) => {
                self.objects.insert(name_of(&o), rv);
                self.seen.push((rv, Some(EventType::Modified), name_of(&o)));
            }
            WatchEvent::Deleted(o) => {
                self.objects.remove(&name_of(&o));
                self.seen.push((rv, Some(EventType::Deleted), name_of(&o)));
            }
        }
    }
}

pub(super) fn rv_of(object: &Value) -> u64 {
    object["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

/// Watch until the watcher reached `target` (set when the writers are done).
pub(super) async fn watch_until(
    mut watcher: Watcher<SimConnector>,
    target: Arc<AtomicU64>,
    view: Arc<Mutex<View>>,
) -> turmoil::Result {
    loop {
        if let Ok(event) = tokio::time::timeout(Duration::from_millis(200), watcher.next()).await {
            view.lock().apply(event.map_err(|e| format!("watch: {e}"))?);
        }
        let target = target.load(Ordering::SeqCst);
        if target != 0 && watcher.resource_version().is_some_and(|rv| rv >= target) {
            let stats = watcher.stats();
            assert_eq!(stats.stale_dropped, 0, "the server sent a change twice or out of order: {stats:?}");
            view.lock().stats = stats;
            return Ok(());
        }
    }
}

/// The consumer saw every change of the server's history once, in order, except those a relist
/// after `410 Gone` replaced; and its view is the server's final state.
pub(super) fn check_watch(
    view: &View,
    history: &[(u64, EventType, String)],
    stored: &BTreeMap<String, Value>,
    gone_allowed: bool,
) {
    let mut cursor = None;
    let mut restarts = 0;
    for (rv, kind, name) in &view.seen {
        if let Some(cursor) = cursor {
            assert!(*rv > cursor, "versions not increasing: {cursor} then {rv}");
        }
        match kind {
            None => {
                restarts += 1;
                assert!(cursor.is_none() || gone_allowed, "a relist although the log reached back: {:?}", view.seen);
            }
            Some(kind) => {
                let at = history.iter().find(|(h, _, _)| h == rv);
                assert_eq!(at, Some(&(*rv, *kind, name.clone())), "an event the server's history does not have");
                let skipped: Vec<_> =
                    history.iter().filter(|(h, _, _)| cursor.is_some_and(|c| *h > c) && h < rv).collect();
                assert!(skipped.is_empty(), "changes missed before {rv}: {skipped:?}");
            }
        }
        cursor = Some(*rv);
    }
    assert!(restarts >= 1, "the watcher never listed");
    let last = history.last().map_or(0, |(rv, _, _)| *rv);
    assert!(cursor.unwrap_or(0) >= last, "the consumer stopped at {cursor:?}, before {last}");
    let want: BTreeMap<String, u64> =
        stored.iter().map(|(name, o)| (name.clone(), o["resourceVersion"].as_u64().unwrap())).collect();
    assert_eq!(view.objects, want, "the consumer's view is not the server's state");
}
