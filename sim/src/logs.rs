//! The world's logs: the hub every log source reads from (the engine's own [`LogHub`]), the
//! capture of what containers print into it, and the clients reading it.
//!
//! The capture plays the production driver's part: one capture per container, shared by every
//! reader, copying what the runtime's model printed by now into the container's streams, and
//! ending them once its main process ended (or it was removed) and all it printed is copied. It
//! runs before every read, so a reader sees exactly what was printed by the time it reads.
//!
//! Readers keep what they received, stream by stream, for the checkers (see
//! `checker::invariants::logs`).

use crate::runtime::{SimRuntime, Stream};
use crate::workload::LogRead;
use drydock_engine::logs::{Channel, Follower, Limits, LogHub, Subject};
use drydock_engine::{MonoTime, WallTime};
use std::collections::BTreeMap;

/// Lines the world's hub keeps per stream: fewer than a container may print in one burst (the
/// model's `OUTPUT_LIMIT`), so readers that fall behind the window are exercised too.
pub const HUB_WINDOW_LINES: usize = 512;

#[derive(Clone, Debug)]
pub struct Logs {
    pub hub: LogHub,
    /// Container id -> how much of its output is in the hub.
    captured: BTreeMap<String, Captured>,
    pub readers: Vec<Reader>,
}

#[derive(Clone, Debug, Default)]
struct Captured {
    lines: usize,
    ended: bool,
}

impl Default for Logs {
    fn default() -> Self {
        Logs {
            hub: LogHub::new(Limits { lines: HUB_WINDOW_LINES, bytes: 1 << 20, deleted_objects: usize::MAX }),
            captured: BTreeMap::new(),
            readers: Vec::new(),
        }
    }
}

/// The channel a runtime stream is captured into.
pub fn channel_of(stream: Stream) -> Channel {
    match stream {
        Stream::Stdout => Channel::Stdout,
        Stream::Stderr => Channel::Stderr,
    }
}

impl Logs {
    /// Copy into the hub what containers printed by `now`; end the streams of those whose output
    /// is complete.
    pub fn capture(&mut self, runtime: &SimRuntime, now: WallTime) {
        for (id, output) in runtime.outputs() {
            let captured = self.captured.entry(id.clone()).or_default();
            let finished = output.finished_by(now);
            if captured.ended && finished {
                continue;
            }
            let subject = Subject::Container(id.clone());
            let printed = output.printed_by(now);
            for line in printed.get(captured.lines..).unwrap_or_default() {
                self.hub.append(&subject, channel_of(line.stream), line.at, line.text.as_str());
            }
            captured.lines = printed.len();
            if finished && !captured.ended {
                self.hub.end(&subject, Channel::Stdout);
                self.hub.end(&subject, Channel::Stderr);
            } else if !finished && captured.ended {
                // Started (again): more will come, even if nothing has yet.
                self.hub.reopen(&subject, Channel::Stdout);
                self.hub.reopen(&subject, Channel::Stderr);
            }
            captured.ended = finished;
        }
    }
}

/// One line a reader received, and the stream it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Received {
    pub subject: Subject,
    pub channel: Channel,
    pub number: u64,
    pub text: String,
}

/// A client reading an object's log.
#[derive(Clone, Debug)]
pub struct Reader {
    pub read: LogRead,
    /// Once the object was there to open.
    pub follower: Option<Follower>,
    pub opened_at: MonoTime,
    pub received: Vec<Received>,
    /// Lines it was told it missed (it fell behind the hub's window).
    pub dropped: u64,
    /// Its follower ended.
    pub ended: bool,
    /// It gave up: closed the stream, or found nothing to open.
    pub closed: bool,
    /// Stalled (the reader-stall fault) until then.
    pub stalled_until: Option<MonoTime>,
    /// It stalled at least once.
    pub stalled: bool,
}

impl Reader {
    pub fn new(read: LogRead, now: MonoTime) -> Self {
        Reader {
            read,
            follower: None,
            opened_at: now,
            received: Vec::new(),
            dropped: 0,
            ended: false,
            closed: false,
            stalled_until: None,
            stalled: false,
        }
    }

    /// It reads no more.
    pub fn done(&self) -> bool {
        self.ended || self.closed
    }

    /// It has seen every line of what it read so far: it read from the start, was never told it
    /// missed lines, and never stalled.
    pub fn kept_up(&self) -> bool {
        self.read.tail_lines.is_none() && self.dropped == 0 && !self.stalled
    }
}
