//! Logs in production: the hub behind a lock with change notification, and the capture of every
//! container drydock made into it.
//!
//! The driver writes the engine's [`LogRecord`](drydock_engine::logs::LogRecord)s into the hub and
//! runs one capture per runtime container (started when the container starts, and at boot for
//! those already there), whatever the number of readers. Readers (the daemon's `/log`
//! endpoint) hold a [`Follower`](drydock_engine::logs::Follower) each and wait for the hub's
//! revision to move.
//!
//! *Guarantees*: no reader blocks a writer: a reader takes the lock only to copy out at most a
//! batch of lines, and what it does with them (a slow client) happens outside the lock. The
//! hub's memory is bounded per stream ([`Limits`](drydock_engine::logs::Limits)).
//!
//! *Caveats*: the hub lives in memory: a restarted daemon captures containers' output again from
//! the runtime (which keeps it), but the `system` streams of its earlier life are gone.

use crate::runtime::{CapturedLine, Runtime};
use drydock_engine::logs::{Channel, LogHub, Subject};
use futures_util::StreamExt;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::watch;

/// The log hub, shared by the driver, the captures and the readers.
#[derive(Clone)]
pub struct SharedLogs {
    hub: Arc<Mutex<LogHub>>,
    changed: Arc<watch::Sender<u64>>,
}

impl Default for SharedLogs {
    fn default() -> Self {
        SharedLogs { hub: Arc::new(Mutex::new(LogHub::default())), changed: Arc::new(watch::Sender::new(0)) }
    }
}

impl SharedLogs {
    /// Change the hub; readers waiting for news wake up.
    pub fn write<T>(&self, change: impl FnOnce(&mut LogHub) -> T) -> T {
        let mut hub = self.hub.lock();
        let result = change(&mut hub);
        self.changed.send_replace(hub.revision());
        result
    }

    /// Look at the hub (briefly: writers wait meanwhile).
    pub fn read<T>(&self, look: impl FnOnce(&LogHub) -> T) -> T {
        look(&self.hub.lock())
    }

    /// A receiver that sees the hub's revision move.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

/// The captures running: one per runtime container.
pub(crate) struct Captures {
    logs: SharedLogs,
    /// Container id -> its capture task.
    running: BTreeMap<String, tokio::task::AbortHandle>,
    /// Container id -> the runtime's stamp of the last line captured, so a capture started again
    /// (the container restarted) skips what the previous one had.
    last: Arc<Mutex<BTreeMap<String, u128>>>,
}

impl Captures {
    pub(crate) fn new(logs: SharedLogs) -> Self {
        Captures { logs, running: BTreeMap::new(), last: Arc::default() }
    }

    /// Capture container `id` into its streams, unless a capture of it runs.
    pub(crate) fn start<R: Runtime>(&mut self, runtime: &Arc<R>, id: &str) {
        self.running.retain(|_, task| !task.is_finished());
        if self.running.contains_key(id) {
            return;
        }
        self.spawn(runtime, id);
    }

    /// Capture container `id` afresh: it started (again), and a capture opened before may be
    /// about to end with the run before (lines it already took are not taken twice).
    pub(crate) fn restart<R: Runtime>(&mut self, runtime: &Arc<R>, id: &str) {
        if let Some(task) = self.running.remove(id) {
            task.abort();
        }
        let subject = Subject::Container(id.to_string());
        self.logs.write(|hub| {
            hub.reopen(&subject, Channel::Stdout);
            hub.reopen(&subject, Channel::Stderr);
        });
        self.spawn(runtime, id);
    }

    /// Container `id` is gone: its streams go in turn (see `LogHub::forget_subject`), and so
    /// does what the captures remembered of it.
    pub(crate) fn forget(&mut self, id: &str) {
        self.running.remove(id);
        self.last.lock().remove(id);
        self.logs.write(|hub| hub.forget_subject(Subject::Container(id.to_string())));
    }

    fn spawn<R: Runtime>(&mut self, runtime: &Arc<R>, id: &str) {
        let Some(stream) = runtime.capture(id, true, None) else { return };
        let (logs, last, container) = (self.logs.clone(), self.last.clone(), id.to_string());
        let subject = Subject::Container(container.clone());
        let runtime = runtime.clone();
        let task = tokio::spawn(async move {
            let followed = copy(stream, &logs, &last, &subject).await;
            // Docker's follow can end at the container's exit before it delivered every line:
            // read what is there once more, from the last line taken on.
            let since = last.lock().get(&container).copied();
            if followed && let Some(rest) = runtime.capture(&container, false, since) {
                copy(rest, &logs, &last, &subject).await;
            }
            logs.write(|hub| {
                hub.end(&subject, Channel::Stdout);
                hub.end(&subject, Channel::Stderr);
            });
        });
        self.running.insert(id.to_string(), task.abort_handle());
    }
}

impl Drop for Captures {
    fn drop(&mut self) {
        for task in self.running.values() {
            task.abort();
        }
    }
}

/// Copy `stream` into the hub, skipping lines not newer than the last taken; whether it ended
/// without an error.
async fn copy(
    mut stream: crate::runtime::CaptureStream,
    logs: &SharedLogs,
    last: &Mutex<BTreeMap<String, u128>>,
    subject: &Subject,
) -> bool {
    while let Some(line) = stream.next().await {
        match line {
            Ok(line) => append(logs, last, subject, line),
            Err(error) => {
                tracing::debug!(%subject, %error, "output capture ended with an error");
                return false;
            }
        }
    }
    true
}

fn append(logs: &SharedLogs, last: &Mutex<BTreeMap<String, u128>>, subject: &Subject, line: CapturedLine) {
    let id = match subject {
        Subject::Container(id) => id.as_str(),
        Subject::Object(_) => return,
    };
    let mut last = last.lock();
    if last.get(id).is_some_and(|after| line.stamp <= *after) {
        return;
    }
    last.insert(id.to_string(), line.stamp);
    drop(last);
    logs.write(|hub| hub.append(subject, line.channel, line.time, line.text));
}
