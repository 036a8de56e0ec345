//! Lists in pages: `limit` and `continue`, as the API server serves them.
//!
//! *Guarantees*
//! - A list with `limit=n` (n > 0) answers at most n items; when more match, its
//!   `metadata.continue` is a token for the rest and `metadata.remainingItemCount` says how many.
//! - Every page of one list comes from the snapshot taken for its first page and carries that
//!   page's `resourceVersion`: an object is neither missed nor repeated however the store changes
//!   between pages (the API server's consistent continuation, which etcd's history gives it).
//! - A token is good for [`ApiOptions::continue_ttl`](super::ApiOptions) (5 minutes, the API
//!   server's compaction interval) and while it is among the newest [`HELD`] lists; after that it
//!   is a 410 `Expired`, and the client starts the list again. A daemon restart expires every
//!   token.
//! - A token given to another list (another kind, namespace or selectors) or that is not one of
//!   ours is a 400.
//!
//! *Caveats*: snapshots are held in memory. They share the objects with the store (reference
//! counted), so a held list costs a pointer per item, and at most [`HELD`] are held.

use super::status::{ApiError, ApiResult};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use drydock_engine::api::Object;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How many paged lists are held at once; a new one beyond them expires the oldest.
pub const HELD: usize = 256;

/// What the first page saw, kept for the pages after it.
struct Snapshot {
    /// The list the snapshot is of: kind, namespace, selectors.
    list: String,
    revision: u64,
    objects: Arc<Vec<Arc<Object>>>,
    taken: Instant,
}

/// The paged lists the daemon holds, by id.
pub struct Snapshots {
    held: Mutex<BTreeMap<u64, Snapshot>>,
    /// Where this process's ids start: random, so a token from before a restart names nothing.
    first_id: u64,
    next_id: std::sync::atomic::AtomicU64,
}

impl Default for Snapshots {
    fn default() -> Self {
        let mut seed = [0u8; 8];
        let _ = getrandom::fill(&mut seed);
        // The top bit clear: ids of one process never wrap around in its life.
        let first_id = u64::from_le_bytes(seed) >> 1;
        Snapshots { held: Mutex::default(), first_id, next_id: first_id.into() }
    }
}

/// What a `continue` token says.
#[derive(Serialize, Deserialize)]
struct Token {
    /// The snapshot.
    id: u64,
    /// Its revision, so a token names its list's version even to a reader that cannot open it.
    rv: u64,
    /// Where the next page starts.
    start: usize,
}

/// One page: its items, the revision of the list, and the token for the rest (if any).
pub struct Page {
    pub items: Vec<Arc<Object>>,
    pub revision: u64,
    pub next: Option<String>,
    pub remaining: usize,
}

/// The message Kubernetes gives for an expired token.
const EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. \
    You can start a new list without the continue parameter.";

impl Snapshots {
    /// The first page of `objects` (the whole list at `revision`), holding the rest if it does not
    /// fit in `limit`.
    pub fn first(
        &self,
        list: String,
        revision: u64,
        objects: Vec<Arc<Object>>,
        limit: usize,
        now: Instant,
        ttl: Duration,
    ) -> Page {
        if objects.len() <= limit {
            return Page { items: objects, revision, next: None, remaining: 0 };
        }
        let id = self.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let objects = Arc::new(objects);
        let page = page_of(id, revision, &objects, 0, limit);
        let mut held = self.held.lock();
        held.retain(|_, s| now.duration_since(s.taken) < ttl);
        held.insert(id, Snapshot { list, revision, objects, taken: now });
        while held.len() > HELD {
            held.pop_first();
        }
        page
    }

    /// The page a `continue` token points at, of the list `list`.
    pub fn next(&self, token: &str, list: &str, limit: usize, now: Instant, ttl: Duration) -> ApiResult<Page> {
        let token = decode(token)?;
        if token.id.wrapping_sub(self.first_id)
            >= self.next_id.load(std::sync::atomic::Ordering::Relaxed) - self.first_id
        {
            return Err(ApiError::Expired(EXPIRED.into())); // another process's (a restart)
        }
        let mut held = self.held.lock();
        let Some(snapshot) = held.get(&token.id).filter(|s| now.duration_since(s.taken) < ttl) else {
            held.remove(&token.id);
            return Err(ApiError::Expired(EXPIRED.into()));
        };
        if snapshot.list != list || snapshot.revision != token.rv || token.start > snapshot.objects.len() {
            return Err(ApiError::BadRequest(
                "the continue token was given for another list (kind, namespace or selectors): \
                 continue with the parameters of the first page"
                    .into(),
            ));
        }
        let objects = snapshot.objects.clone();
        let page = page_of(token.id, token.rv, &objects, token.start, limit);
        if page.next.is_none() {
            held.remove(&token.id); // read to the end: nothing will ask for it again
        }
        Ok(page)
    }
}

fn page_of(id: u64, revision: u64, objects: &Arc<Vec<Arc<Object>>>, start: usize, limit: usize) -> Page {
    let end = start.saturating_add(limit).min(objects.len());
    let items = objects[start..end].to_vec();
    let remaining = objects.len() - end;
    let next = (remaining > 0).then(|| encode(&Token { id, rv: revision, start: end }));
    Page { items, revision, next, remaining }
}

fn encode(token: &Token) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(token).unwrap_or_default())
}

fn decode(token: &str) -> ApiResult<Token> {
    let bad = || ApiError::BadRequest(format!("invalid continue token {token:?}: give the one a list answered"));
    let bytes = URL_SAFE_NO_PAD.decode(token.trim_end_matches('=')).map_err(|_| bad())?;
    serde_json::from_slice(&bytes).map_err(|_| bad())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use drydock_engine::api::ObjectMeta;

    fn objects(n: usize) -> Vec<Arc<Object>> {
        (0..n)
            .map(|i| {
                Arc::new(Object::new(
                    "PhysicalContainer",
                    ObjectMeta::named(Some("ns"), &format!("o{i}")),
                    Default::default(),
                ))
            })
            .collect()
    }

    fn names(page: &Page) -> Vec<String> {
        page.items.iter().map(|o| o.metadata.name.to_string()).collect()
    }

    const TTL: Duration = Duration::from_secs(300);

    #[test]
    fn pages_follow_one_snapshot_to_its_end() {
        let snapshots = Snapshots::default();
        let now = Instant::now();
        let first = snapshots.first("pcs".into(), 7, objects(5), 2, now, TTL);
        assert_eq!((names(&first), first.remaining, first.revision), (vec!["o0".into(), "o1".into()], 3, 7));
        let token = first.next.unwrap();
        let second = snapshots.next(&token, "pcs", 2, now, TTL).unwrap();
        assert_eq!((names(&second), second.remaining, second.revision), (vec!["o2".into(), "o3".into()], 1, 7));
        // The same token again gives the same page (a client retrying a lost answer).
        assert_eq!(names(&snapshots.next(&token, "pcs", 2, now, TTL).unwrap()), names(&second));
        let last = snapshots.next(&second.next.unwrap(), "pcs", 2, now, TTL).unwrap();
        assert_eq!((names(&last), last.next, last.remaining), (vec!["o4".to_string()], None, 0));
        assert!(snapshots.held.lock().is_empty(), "a list read to its end is let go");
        // A list that fits holds nothing.
        assert!(snapshots.first("pcs".into(), 7, objects(2), 2, now, TTL).next.is_none());
        assert!(snapshots.held.lock().is_empty());
    }

    #[test]
    fn old_tokens_expire_and_foreign_ones_are_refused() {
        let snapshots = Snapshots::default();
        let now = Instant::now();
        let token = snapshots.first("pcs".into(), 7, objects(3), 1, now, TTL).next.unwrap();
        assert_eq!(snapshots.next(&token, "pcs", 1, now + TTL, TTL).err().unwrap().reason(), "Expired");
        let token = snapshots.first("pcs".into(), 7, objects(3), 1, now, TTL).next.unwrap();
        assert_eq!(snapshots.next(&token, "other", 1, now, TTL).err().unwrap().reason(), "BadRequest");
        assert_eq!(snapshots.next("garbage!", "pcs", 1, now, TTL).err().unwrap().reason(), "BadRequest");
        // Another process's token (a restart) is expired, not someone else's list.
        let restarted = Snapshots::default();
        assert_eq!(restarted.next(&token, "pcs", 1, now, TTL).err().unwrap().reason(), "Expired");
        // Beyond HELD lists, the oldest goes.
        let oldest = snapshots.first("pcs".into(), 7, objects(3), 1, now, TTL).next.unwrap();
        for _ in 0..HELD {
            snapshots.first("pcs".into(), 7, objects(3), 1, now, TTL);
        }
        assert_eq!(snapshots.next(&oldest, "pcs", 1, now, TTL).err().unwrap().reason(), "Expired");
        assert_eq!(snapshots.held.lock().len(), HELD);
    }
}
