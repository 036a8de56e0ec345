//! Log readers: clients that open an object's log, read it at their pace, stall when the
//! `reader-stall` fault strikes, and close it when they give up. Every read is a happening the
//! log invariants check.

use super::World;
use super::env::Event;
use super::processes::true_now;
use crate::checker::Happening;
use crate::logs::{Reader, Received};
use crate::probes::Probe;
use crate::trace::{Fault, Key, ReaderStep, Record};
use crate::workload::LogRead;
use drydock_engine::MonoTime;
use drydock_engine::api::{Object, ObjectKey};
use drydock_engine::logs::{FollowOptions, Follower, Source, Step};
use drydock_faults::FaultKind;
use rand_core::RngCore;
use std::sync::Arc;
use std::time::Duration;

/// How long a stalled reader stops reading, at most.
const LONGEST_STALL_MS: u64 = 20_000;

impl World<'_> {
    /// A client starts reading `read` now.
    pub(super) fn open_reader(&mut self, now: MonoTime, read: &LogRead) {
        let index = self.logs.readers.len();
        let target = &read.target;
        let key = Key::new(&target.kind, target.namespace.as_deref(), &target.name);
        let step = ReaderStep::Opens { key, source: &read.source, follow: read.follow };
        self.env.record(Record::Reader { reader: index, step });
        self.logs.readers.push(Reader::new(read.clone(), now));
        self.read_logs(now, index);
    }

    /// Reader `index` reads once (opening its follower first if it has none), unless it is
    /// stalled or gives up; then it comes back after its pace.
    pub(super) fn read_logs(&mut self, now: MonoTime, index: usize) {
        let reader = &mut self.logs.readers[index];
        if reader.done() {
            return;
        }
        let pace = Duration::from_millis(reader.read.every_ms.max(1));
        if reader.stalled_until.is_some_and(|until| now < until) {
            return;
        }
        let resumed = reader.stalled_until.take().is_some();
        if now >= reader.opened_at + Duration::from_millis(reader.read.close_after_ms) {
            reader.closed = true;
            self.env.record(Record::Reader { reader: index, step: ReaderStep::Closes });
            return;
        }
        if self.env.fires(FaultKind::ReaderStall) {
            let stall = Duration::from_millis(1 + self.env.rng.next_u64() % LONGEST_STALL_MS);
            let reader = &mut self.logs.readers[index];
            reader.stalled_until = Some(now + stall);
            reader.stalled = true;
            self.env.record(Record::Fault(Fault::ReaderStall { reader: index, stall }));
            self.env.at(now + stall, Event::ReadLogs { reader: index });
            return;
        }
        if self.logs.readers[index].follower.is_none() && !self.open_follower(index) {
            if !self.logs.readers[index].done() {
                self.env.at(now + pace, Event::ReadLogs { reader: index });
            }
            return;
        }
        let step = self.poll_reader(now, index, resumed);
        self.observe(Happening::LogRead { reader: index, step: &step });
        if step != Step::End {
            self.env.at(now + pace, Event::ReadLogs { reader: index });
        }
    }

    /// Open reader `index`'s follower on its object as the store has it now. False if there is
    /// none: a reader that follows tries again; one that does not gives up (a 404). A source the
    /// kind does not have is a 400: it gives up.
    fn open_follower(&mut self, index: usize) -> bool {
        let read = &self.logs.readers[index].read;
        let key = read.target.key();
        let Some(object) = self.store.get(&key).cloned() else {
            let follow = read.follow;
            let step = ReaderStep::NotFound { key: (&key).into() };
            self.env.record(Record::Reader { reader: index, step });
            self.logs.readers[index].closed = !follow;
            return false;
        };
        let source = match Source::parse(&object.kind, &read.source) {
            Ok(source) => source,
            Err(error) => {
                self.env.record(Record::Reader { reader: index, step: ReaderStep::Refused { error: &error } });
                self.logs.readers[index].closed = true;
                return false;
            }
        };
        let options = FollowOptions { follow: read.follow, tail_lines: read.tail_lines, since: None };
        self.logs.readers[index].follower = Some(Follower::open(&object, source, options));
        true
    }

    /// Capture what containers printed by now, then take one step of reader `index`'s follower.
    fn poll_reader(&mut self, now: MonoTime, index: usize, resumed: bool) -> Step {
        let wall = true_now(now).wall;
        self.logs.capture(&self.runtime, wall);
        let store = &self.store;
        let lookup = |key: &ObjectKey| -> Option<Arc<Object>> { store.get(key).cloned() };
        let logs = &mut self.logs;
        let reader = &mut logs.readers[index];
        let Some(follower) = reader.follower.as_mut() else { return Step::End };
        let batch = reader.read.batch.max(1);
        let step = follower.poll(&logs.hub, &lookup, batch);
        let reading = follower.reading().cloned();
        let first_read = reader.received.is_empty() && reader.dropped == 0;
        match &step {
            Step::Lines(chunk) => {
                let Some((subject, channel)) = reading else { return step };
                reader.dropped += chunk.dropped;
                if chunk.dropped > 0 {
                    self.probes.hit(Probe::ReaderToldWhatItMissed);
                }
                reader.received.extend(chunk.lines.iter().map(|l| Received {
                    subject: subject.clone(),
                    channel,
                    number: l.number,
                    text: l.text.clone(),
                }));
                let (first, last) =
                    (chunk.lines.first().map_or(0, |l| l.number), chunk.lines.last().map_or(0, |l| l.number));
                let step = ReaderStep::Lines { first, last, subject: &subject, channel, missed: chunk.dropped };
                self.env.record(Record::Reader { reader: index, step });
            }
            Step::Pending => {
                if first_read {
                    self.probes.hit(Probe::FollowerWaitedForItsSource);
                }
                self.env.record(Record::Reader { reader: index, step: ReaderStep::Waiting });
            }
            Step::End => {
                reader.ended = true;
                let key = follower.key().clone();
                let gone = store.get(&key).is_none_or(|o| Some(&o.metadata.uid) != follower_uid(reader).as_ref());
                if gone && reader.read.follow {
                    self.probes.hit(Probe::FollowerEndedByDeletion);
                }
                if gone && resumed {
                    self.probes.hit(Probe::DeletedWhileReaderStalled);
                }
                self.env.record(Record::Reader { reader: index, step: ReaderStep::End });
            }
        }
        step
    }
}

/// The uid of the object reader's follower is bound to.
fn follower_uid(reader: &Reader) -> Option<drydock_engine::api::Uid> {
    reader.follower.as_ref().map(|f| f.uid().clone())
}
