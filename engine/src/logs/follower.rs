//! One reader of a source: a cursor into the hub.

use super::source::{Resolved, Source, source};
use super::{Channel, LogHub, LogLine, Subject};
use crate::api::{Object, ObjectKey, Uid};
use crate::time::WallTime;
use std::sync::Arc;

/// What a reader asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FollowOptions {
    /// Wait for more until the source completes or the object is deleted; otherwise end after
    /// what there is now.
    pub follow: bool,
    /// Start this many lines before the end of what the first stream holds.
    pub tail_lines: Option<u64>,
    /// Skip lines stamped before this.
    pub since: Option<WallTime>,
}

/// Lines for a reader.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chunk {
    pub lines: Vec<LogLine>,
    /// Lines the reader missed before these: it fell behind the hub's window.
    pub dropped: u64,
}

/// What a follower has for its reader now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Lines(Chunk),
    /// Nothing now; poll again when the hub or the store changes.
    Pending,
    /// The source completed (and was read to its end), the object was deleted, or the reader did
    /// not ask to follow: nothing more will come.
    End,
}

/// One reader of one source of one object (bound to the object's uid at open).
///
/// *Guarantees*: lines of a stream come in order, each once; a logical container's follower moves
/// to a new backing once it has read what the one it was reading holds, and reads the new one
/// from its first line; once [`Step::End`] is returned, it is returned for ever.
///
/// *Caveats*: a line the old backing's capture adds after the move is not read (a capture
/// outlives its container only by the time its stream takes to close).
#[derive(Clone, Debug)]
pub struct Follower {
    key: ObjectKey,
    uid: Uid,
    source: Source,
    options: FollowOptions,
    reading: Option<(Subject, Channel)>,
    next: u64,
    ended: bool,
}

impl Follower {
    /// A follower of `source` of `object` (whose kind has it: see [`Source::parse`]).
    pub fn open(object: &Object, source: Source, options: FollowOptions) -> Follower {
        Follower {
            key: object.key(),
            uid: object.metadata.uid.clone(),
            source,
            options,
            reading: None,
            next: 1,
            ended: false,
        }
    }

    pub fn key(&self) -> &ObjectKey {
        &self.key
    }

    /// The uid of the object it follows.
    pub fn uid(&self) -> &Uid {
        &self.uid
    }

    pub fn source(&self) -> Source {
        self.source
    }

    /// The stream being read, once there is one.
    pub fn reading(&self) -> Option<&(Subject, Channel)> {
        self.reading.as_ref()
    }

    pub fn is_ended(&self) -> bool {
        self.ended
    }

    /// The next step, with at most `max` lines. `lookup` is the store (or a cache of it).
    pub fn poll(&mut self, hub: &LogHub, lookup: &dyn Fn(&ObjectKey) -> Option<Arc<Object>>, max: usize) -> Step {
        if self.ended {
            return Step::End;
        }
        let object = lookup(&self.key).filter(|o| o.metadata.uid == self.uid);
        let resolved = object.as_deref().map(|o| source(hub, o, self.source, lookup));
        if let Some(Resolved::Stream { subject, channel, .. }) = &resolved {
            let target = (subject.clone(), *channel);
            match &self.reading {
                None => self.begin(hub, target),
                Some(current) if *current != target => {
                    if let Some(chunk) = self.read(hub, max) {
                        return Step::Lines(chunk);
                    }
                    self.reading = Some(target);
                    self.next = 1;
                }
                Some(_) => {}
            }
        }
        if let Some(chunk) = self.read(hub, max) {
            return Step::Lines(chunk);
        }
        let complete = match &resolved {
            None => true, // deleted, and what it had is read
            Some(Resolved::Stream { complete, .. }) => *complete,
            Some(Resolved::Empty) => true,
            Some(Resolved::Waiting) => false,
        };
        if complete || !self.options.follow {
            self.ended = true;
            return Step::End;
        }
        Step::Pending
    }

    /// Start on the first stream: where `tailLines` and `sinceSeconds` say.
    fn begin(&mut self, hub: &LogHub, (subject, channel): (Subject, Channel)) {
        let end = hub.next_number(&subject, channel);
        let mut next = self.options.tail_lines.map_or(1, |tail| end.saturating_sub(tail).max(1));
        if let Some(since) = self.options.since {
            next = next.max(hub.first_since(&subject, channel, since));
        }
        self.next = next;
        self.reading = Some((subject, channel));
    }

    fn read(&mut self, hub: &LogHub, max: usize) -> Option<Chunk> {
        let (subject, channel) = self.reading.as_ref()?;
        let read = hub.read(subject, *channel, self.next, max);
        self.next = read.next;
        (!read.lines.is_empty() || read.dropped > 0).then_some(Chunk { lines: read.lines, dropped: read.dropped })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{ObjectMeta, OwnerReference};
    use serde_json::json;
    use std::collections::BTreeMap;

    struct World {
        hub: LogHub,
        objects: BTreeMap<ObjectKey, Arc<Object>>,
    }

    impl World {
        fn put(
            &mut self,
            kind: &str,
            name: &str,
            uid: &str,
            spec: serde_json::Value,
            status: serde_json::Value,
        ) -> Arc<Object> {
            let mut meta = ObjectMeta::named(Some("ns"), name);
            meta.uid = Uid(uid.into());
            let mut object = Object::new(kind, meta, spec);
            object.status = status;
            let object = Arc::new(object);
            self.objects.insert(object.key(), object.clone());
            object
        }

        fn own(&mut self, key: &ObjectKey, owner: &str) {
            let mut object = (*self.objects[key]).clone();
            object.metadata.owner_references.push(OwnerReference {
                kind: "LogicalContainer".into(),
                name: "web".into(),
                uid: Uid(owner.into()),
                controller: true,
                block_owner_deletion: true,
            });
            self.objects.insert(key.clone(), Arc::new(object));
        }

        fn poll(&self, follower: &mut Follower) -> Step {
            let lookup = |key: &ObjectKey| self.objects.get(key).cloned();
            follower.poll(&self.hub, &lookup, 100)
        }
    }

    fn texts(step: Step) -> Vec<String> {
        match step {
            Step::Lines(chunk) => chunk.lines.into_iter().map(|l| l.text).collect(),
            other => panic!("expected lines, got {other:?}"),
        }
    }

    fn world() -> World {
        World { hub: LogHub::default(), objects: BTreeMap::new() }
    }

    fn container(id: &str) -> Subject {
        Subject::Container(id.into())
    }

    #[test]
    fn a_follower_waits_for_the_container_then_ends_when_its_output_is_drained() {
        let mut w = world();
        let pc = w.put("PhysicalContainer", "a", "pa", json!({}), json!({"phase": "Pending"}));
        let mut follower = Follower::open(&pc, Source::Stdout, FollowOptions { follow: true, ..Default::default() });
        assert_eq!(w.poll(&mut follower), Step::Pending, "no container yet");
        w.put("PhysicalContainer", "a", "pa", json!({}), json!({"phase": "Pending", "runtimeId": "c1"}));
        w.hub.append(&container("c1"), Channel::Stdout, WallTime(1), "one");
        assert_eq!(texts(w.poll(&mut follower)), ["one"]);
        w.hub.append(&container("c1"), Channel::Stdout, WallTime(2), "two");
        w.hub.end(&container("c1"), Channel::Stdout);
        assert_eq!(texts(w.poll(&mut follower)), ["two"], "what is left comes before the end");
        assert_eq!(w.poll(&mut follower), Step::Pending, "ended, but the object still says Pending: not started yet");
        w.put("PhysicalContainer", "a", "pa", json!({}), json!({"phase": "Exited", "runtimeId": "c1"}));
        assert_eq!(w.poll(&mut follower), Step::End);
        assert_eq!(w.poll(&mut follower), Step::End);
    }

    #[test]
    fn deletion_ends_a_follower_and_a_re_created_object_is_not_followed() {
        let mut w = world();
        let pc = w.put("PhysicalContainer", "a", "pa", json!({}), json!({"phase": "Running", "runtimeId": "c1"}));
        let mut follower = Follower::open(&pc, Source::Stdout, FollowOptions { follow: true, ..Default::default() });
        assert_eq!(w.poll(&mut follower), Step::Pending);
        w.put("PhysicalContainer", "a", "pa2", json!({}), json!({"phase": "Running"}));
        assert_eq!(w.poll(&mut follower), Step::End, "another object of that name is not ours");
    }

    #[test]
    fn a_logical_follower_moves_to_a_new_container_and_tail_applies_to_the_first() {
        let mut w = world();
        let status = |phase: &str, id: &str| json!({"phase": phase, "backingUid": "b", "runtimeId": id});
        let web = w.put("LogicalContainer", "web", "l", json!({"image": "busybox"}), status("Running", "c1"));
        let key = w
            .put("PhysicalContainer", "web-backing", "b", json!({}), json!({"phase": "Running", "runtimeId": "c1"}))
            .key();
        w.own(&key, "l");
        for text in ["a", "b", "c"] {
            w.hub.append(&container("c1"), Channel::Stdout, WallTime(1), text);
        }
        let options = FollowOptions { follow: true, tail_lines: Some(2), since: None };
        let mut follower = Follower::open(&web, Source::Stdout, options);
        assert_eq!(texts(w.poll(&mut follower)), ["b", "c"]);
        w.hub.append(&container("c1"), Channel::Stdout, WallTime(2), "d");
        w.hub.end(&container("c1"), Channel::Stdout);
        w.put("LogicalContainer", "web", "l", json!({"image": "busybox"}), status("Running", "c2"));
        let key = w
            .put("PhysicalContainer", "web-backing", "b", json!({}), json!({"phase": "Running", "runtimeId": "c2"}))
            .key();
        w.own(&key, "l");
        w.hub.append(&container("c2"), Channel::Stdout, WallTime(3), "e");
        assert_eq!(texts(w.poll(&mut follower)), ["d"], "the old container first");
        assert_eq!(texts(w.poll(&mut follower)), ["e"], "then the new one from its start");
        assert_eq!(w.poll(&mut follower), Step::Pending, "running: more may come");
        w.put("LogicalContainer", "web", "l", json!({"image": "busybox"}), status("Exited", "c2"));
        w.put("PhysicalContainer", "web-backing", "b", json!({}), json!({"phase": "Exited", "runtimeId": "c2"}));
        w.own(&key, "l");
        assert_eq!(w.poll(&mut follower), Step::Pending, "exited, but its output is not drained yet");
        w.hub.end(&container("c2"), Channel::Stdout);
        assert_eq!(w.poll(&mut follower), Step::End);
    }

    #[test]
    fn startup_output_of_an_external_image_is_empty_at_once() {
        let mut w = world();
        let web = w.put("LogicalContainer", "web", "l", json!({"imageRef": "shared"}), json!({"phase": "Pending"}));
        let mut follower =
            Follower::open(&web, Source::StartupStdout, FollowOptions { follow: true, ..Default::default() });
        assert_eq!(w.poll(&mut follower), Step::End);
        let web = w.put("LogicalContainer", "web2", "l2", json!({"image": "busybox"}), json!({"phase": "Pending"}));
        let mut follower =
            Follower::open(&web, Source::StartupStdout, FollowOptions { follow: true, ..Default::default() });
        assert_eq!(w.poll(&mut follower), Step::Pending, "its own image is not there yet");
    }
}
