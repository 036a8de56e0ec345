//! The hub: every object's streams, as bounded windows of numbered lines.

use super::{Channel, LogLine, LogRecord, Subject};
use crate::api::Uid;
use crate::time::WallTime;
use std::collections::VecDeque;

/// How much the hub keeps.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Lines kept per stream: the oldest go first.
    pub lines: usize,
    /// Bytes of text kept per stream (at least the newest line is always kept).
    pub bytes: usize,
    /// Deleted objects whose streams are still kept for late readers; the oldest deletion goes first.
    pub deleted_objects: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { lines: 10_000, bytes: 4 << 20, deleted_objects: 256 }
    }
}

#[derive(Clone, Debug)]
struct Stream {
    lines: VecDeque<LogLine>,
    /// The number the next line gets.
    next: u64,
    bytes: usize,
    /// The capture reached the end of the source (until a line comes again).
    ended: bool,
}

impl Default for Stream {
    fn default() -> Self {
        Stream { lines: VecDeque::new(), next: 1, bytes: 0, ended: false }
    }
}

/// Lines read from a stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Read {
    pub lines: Vec<LogLine>,
    /// Lines from `from` on that the hub no longer keeps.
    pub dropped: u64,
    /// Where to read from next.
    pub next: u64,
}

/// Every object's streams.
///
/// *Guarantees*: lines of a stream are numbered 1, 2, ... in the order they were appended, and a
/// number is never reused; memory is bounded by [`Limits`] per stream, whatever the readers do.
#[derive(Clone, Debug, Default)]
pub struct LogHub {
    /// Hashed: looked up per line; nothing observable depends on its order.
    streams: crate::fixed::FixedMap<(Subject, Channel), Stream>,
    limits: Limits,
    /// Deleted objects and removed containers, oldest first, whose streams go when more than
    /// `limits.deleted_objects` follow.
    deleted: VecDeque<Subject>,
    /// Changes so far: a reader waiting for news waits for this to move.
    revision: u64,
}

impl LogHub {
    pub fn new(limits: Limits) -> Self {
        LogHub { limits, ..LogHub::default() }
    }

    /// Changes so far (appends, ends, forgets).
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Append a line; a stream that had ended is open again (its source came back, e.g. a
    /// container started again). Returns the line's number.
    pub fn append(&mut self, subject: &Subject, channel: Channel, time: WallTime, text: impl Into<String>) -> u64 {
        self.revision += 1;
        let limits = self.limits;
        let stream = self.streams.entry((subject.clone(), channel)).or_default();
        let line = LogLine { number: stream.next, time, text: text.into() };
        stream.next += 1;
        stream.ended = false;
        stream.bytes += line.text.len();
        stream.lines.push_back(line);
        while stream.lines.len() > limits.lines.max(1) || (stream.bytes > limits.bytes && stream.lines.len() > 1) {
            if let Some(old) = stream.lines.pop_front() {
                stream.bytes -= old.text.len();
            }
        }
        stream.next - 1
    }

    /// The source of a stream reached its end: a container exited and its output is drained, or
    /// it was removed.
    pub fn end(&mut self, subject: &Subject, channel: Channel) {
        self.revision += 1;
        self.streams.entry((subject.clone(), channel)).or_default().ended = true;
    }

    /// The stream's source is back (a container started again): it has not ended any more,
    /// though nothing new may be in it yet.
    pub fn reopen(&mut self, subject: &Subject, channel: Channel) {
        if let Some(stream) = self.streams.get_mut(&(subject.clone(), channel)) {
            self.revision += 1;
            stream.ended = false;
        }
    }

    /// Whether the stream's source reached its end.
    pub fn is_ended(&self, subject: &Subject, channel: Channel) -> bool {
        self.streams.get(&(subject.clone(), channel)).is_some_and(|s| s.ended)
    }

    /// Whether anything was ever captured or ended for the stream.
    pub fn exists(&self, subject: &Subject, channel: Channel) -> bool {
        self.streams.contains_key(&(subject.clone(), channel))
    }

    /// The number the stream's next line will get (1 for a stream with nothing yet).
    pub fn next_number(&self, subject: &Subject, channel: Channel) -> u64 {
        self.streams.get(&(subject.clone(), channel)).map_or(1, |s| s.next)
    }

    /// Up to `max` lines from line number `from` on.
    pub fn read(&self, subject: &Subject, channel: Channel, from: u64, max: usize) -> Read {
        let Some(stream) = self.streams.get(&(subject.clone(), channel)) else {
            return Read { lines: Vec::new(), dropped: 0, next: from };
        };
        let oldest = stream.lines.front().map_or(stream.next, |l| l.number);
        let start = from.max(oldest);
        let dropped = start - from.min(start);
        let skip = usize::try_from(start - oldest).unwrap_or(usize::MAX);
        let lines: Vec<LogLine> = stream.lines.iter().skip(skip).take(max).cloned().collect();
        let next = lines.last().map_or(start, |l| l.number + 1);
        Read { lines, dropped, next }
    }

    /// Lines of the stream stamped at or after `since`: the number of the first of them.
    pub fn first_since(&self, subject: &Subject, channel: Channel, since: WallTime) -> u64 {
        let Some(stream) = self.streams.get(&(subject.clone(), channel)) else { return 1 };
        stream.lines.iter().find(|l| l.time >= since).map_or(stream.next, |l| l.number)
    }

    /// Take what the engine emitted: the lines, and for `system`, their copies in the owner's.
    pub fn apply(&mut self, record: &LogRecord) {
        let subject = Subject::Object(record.uid.clone());
        for line in &record.lines {
            self.append(&subject, record.channel, record.time, line.as_str());
        }
        if let (Some(owner), Channel::System) = (&record.forward_to, record.channel) {
            let name = format!("{}/{}", record.key.kind, record.key.name);
            let owner = Subject::Object(owner.clone());
            for line in &record.lines {
                self.append(&owner, Channel::System, record.time, format!("{name}: {line}"));
            }
        }
    }

    /// The object with `uid` was deleted: see [`LogHub::forget_subject`].
    pub fn forget(&mut self, uid: &Uid) {
        self.forget_subject(Subject::Object(uid.clone()));
    }

    /// `subject` is gone (a deleted object, a removed container): its streams stay for late
    /// readers until [`Limits::deleted_objects`] more are gone.
    pub fn forget_subject(&mut self, subject: Subject) {
        if self.deleted.contains(&subject) {
            return;
        }
        self.deleted.push_back(subject);
        while self.deleted.len() > self.limits.deleted_objects {
            if let Some(gone) = self.deleted.pop_front() {
                self.revision += 1;
                self.streams.retain(|(u, _), _| *u != gone);
            }
        }
    }

    /// Lines kept in all streams, for reports.
    pub fn lines_kept(&self) -> usize {
        self.streams.values().map(|s| s.lines.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uid(s: &str) -> Subject {
        Subject::Object(Uid(s.into()))
    }

    #[test]
    fn numbers_lines_and_reads_from_any_number() {
        let mut hub = LogHub::default();
        for text in ["a", "b", "c"] {
            hub.append(&uid("u"), Channel::Stdout, WallTime(1), text);
        }
        let read = hub.read(&uid("u"), Channel::Stdout, 2, 10);
        assert_eq!(read.lines.iter().map(|l| (l.number, l.text.as_str())).collect::<Vec<_>>(), [(2, "b"), (3, "c")]);
        assert_eq!((read.dropped, read.next), (0, 4));
        assert_eq!(hub.read(&uid("u"), Channel::Stdout, 4, 10).lines, []);
        assert_eq!(hub.read(&uid("u"), Channel::Stderr, 1, 10).next, 1, "an empty stream");
    }

    #[test]
    fn keeps_a_bounded_window_and_says_what_a_late_reader_missed() {
        let mut hub = LogHub::new(Limits { lines: 2, bytes: 1 << 20, deleted_objects: 1 });
        for i in 1..=5 {
            hub.append(&uid("u"), Channel::Stdout, WallTime(i), format!("{i}"));
        }
        let read = hub.read(&uid("u"), Channel::Stdout, 1, 10);
        assert_eq!(read.dropped, 3);
        assert_eq!(read.lines.iter().map(|l| l.number).collect::<Vec<_>>(), [4, 5]);
        let mut hub = LogHub::new(Limits { lines: 100, bytes: 4, deleted_objects: 1 });
        for text in ["aa", "bb", "cc"] {
            hub.append(&uid("u"), Channel::Stdout, WallTime(1), text);
        }
        assert_eq!(hub.read(&uid("u"), Channel::Stdout, 1, 10).dropped, 1, "4 bytes: two lines of two");
    }

    #[test]
    fn an_end_is_undone_by_a_new_line_or_a_reopening() {
        let mut hub = LogHub::default();
        hub.end(&uid("u"), Channel::Stdout);
        assert!(hub.is_ended(&uid("u"), Channel::Stdout));
        hub.append(&uid("u"), Channel::Stdout, WallTime(1), "again");
        assert!(!hub.is_ended(&uid("u"), Channel::Stdout));
        hub.end(&uid("u"), Channel::Stdout);
        hub.reopen(&uid("u"), Channel::Stdout);
        assert!(!hub.is_ended(&uid("u"), Channel::Stdout));
    }

    #[test]
    fn system_lines_are_forwarded_to_the_owner_and_deleted_objects_go_in_turn() {
        let mut hub = LogHub::new(Limits { deleted_objects: 1, ..Limits::default() });
        hub.apply(&LogRecord {
            uid: Uid("child".into()),
            key: crate::api::ObjectKey::namespaced("PhysicalContainer", "ns", "web-backing"),
            channel: Channel::System,
            time: WallTime(3),
            lines: vec!["start 3f2a failed".into()],
            forward_to: Some(Uid("owner".into())),
        });
        let owner = hub.read(&uid("owner"), Channel::System, 1, 10);
        assert_eq!(owner.lines[0].text, "PhysicalContainer/web-backing: start 3f2a failed");
        hub.forget(&Uid("child".into()));
        assert!(hub.exists(&uid("child"), Channel::System), "kept for late readers");
        hub.forget(&Uid("owner".into()));
        assert!(!hub.exists(&uid("child"), Channel::System));
        assert!(hub.exists(&uid("owner"), Channel::System));
    }
}
