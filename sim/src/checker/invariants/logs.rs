//! Invariants about log sources and their readers. The checker decides from the store, the
//! runtime's model (what each container printed, and when its output was complete) and the hub
//! as readers see it, never from the engine's follower code: when a source is complete, and
//! which lines it has, is worked out here on its own.

use super::named;
use crate::checker::{Happening, HappeningKind, Invariant, Seen, View};
use crate::logs::{Reader, Received, channel_of};
use drydock_engine::api::{Object, ObjectKey};
use drydock_engine::logs::{Channel, Step, Subject};
use drydock_engine::store::StoreRequest;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

fn phase(object: &Object) -> &str {
    object.status.get("phase").and_then(Value::as_str).unwrap_or("Pending")
}

/// What runtime container `id` printed to `channel` by now, in order (nothing if it never ran).
fn printed<'v>(view: &'v View<'_>, id: &str, channel: Channel) -> Vec<&'v str> {
    let lines = view.runtime.output(id).map(|o| o.printed_by(view.now)).unwrap_or_default();
    lines.iter().filter(|l| channel_of(l.stream) == channel).map(|l| l.text.as_str()).collect()
}

fn runtime_id(object: &Object) -> Option<&str> {
    object.status.get("runtimeId").and_then(Value::as_str)
}

/// Whether physical container `physical`'s output is complete: it failed or its container is
/// gone, or it is past being created and the container it records has ended.
fn container_done(view: &View<'_>, physical: &Object) -> bool {
    if matches!(phase(physical), "Failed" | "Missing") {
        return true;
    }
    let output = runtime_id(physical).and_then(|id| view.runtime.output(id));
    phase(physical) != "Pending" && output.is_some_and(|o| o.finished_by(view.now))
}

fn image_settled(image: &Object) -> bool {
    matches!(phase(image), "Ready" | "Failed" | "Unavailable")
}

/// The object of `kind` in `owner`'s namespace that `owner` controls and `pick` accepts.
fn controlled(view: &View<'_>, owner: &Object, kind: &str, pick: impl Fn(&Object) -> bool) -> Option<Arc<Object>> {
    view.store
        .list(Some(kind), owner.metadata.namespace.as_deref())
        .into_iter()
        .find(|o| o.metadata.owner_references.iter().any(|r| r.controller && r.uid == owner.metadata.uid) && pick(o))
}

/// Why reader's source is complete (nothing more will come), if it is.
fn complete(view: &View<'_>, reader: &Reader) -> Option<String> {
    let follower = reader.follower.as_ref()?;
    let key: &ObjectKey = follower.key();
    let Some(object) = view.store.get(key).filter(|o| o.metadata.uid == *follower.uid()) else {
        return Some(format!("{key} was deleted"));
    };
    let kind = object.kind.as_str();
    let done = match (kind, reader.read.source.as_str()) {
        (_, "system") => false,
        ("PhysicalContainer", _) => container_done(view, object),
        ("ContainerImage", _) => image_settled(object),
        ("LogicalContainer", "stdout" | "stderr") => {
            let backing = object.status.get("backingUid").and_then(Value::as_str);
            let settled = matches!(phase(object), "Exited" | "Failed");
            let physical =
                backing.and_then(|uid| controlled(view, object, "PhysicalContainer", |p| p.metadata.uid.0 == uid));
            settled
                && match (runtime_id(object), physical) {
                    (None, _) => true,
                    (Some(id), Some(p)) if runtime_id(&p) == Some(id) => container_done(view, &p),
                    (Some(_), Some(_)) => false,
                    (Some(id), None) => view.runtime.output(id).is_none_or(|o| o.finished_by(view.now)),
                }
        }
        ("LogicalContainer", _) => {
            let inline = object.spec.get("image").is_some_and(|i| !i.is_null());
            !inline
                || match controlled(view, object, "ContainerImage", |_| true) {
                    Some(image) => image_settled(&image),
                    None => phase(object) != "Pending",
                }
        }
        _ => false,
    };
    done.then(|| format!("{key} ({}) has all its {} output", phase(object), reader.read.source))
}

/// A follower never waits once its source is complete or its object is deleted: it ends at the
/// first read after (so within one read interval of the reader); and it never ends before.
#[derive(Default)]
pub(super) struct LogFollowersEnd {
    seen: Seen,
}

impl Invariant for LogFollowersEnd {
    named!(LogFollowersEnd);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::LogRead]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        let Happening::LogRead { reader: index, step } = happening else { return };
        let reader = &view.logs.readers[*index];
        let (what, source) = (reader.read.target.key(), &reader.read.source);
        match (step, complete(view, reader)) {
            (Step::Pending, Some(why)) => {
                self.seen.flag(format!("log reader {index} of {what} {source} still waits although {why}"));
            }
            (Step::End, None) if reader.read.follow => {
                self.seen.flag(format!("log reader {index} of {what} {source} ended although more may come"));
            }
            _ => {}
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

/// A reader sees each stream's lines in order, each once, with the text the container printed;
/// one that keeps up (from the start, never behind the window, never stalled) reads every line
/// of a stream before it moves on to the next (a logical container's new backing), and never
/// comes back to one it left.
#[derive(Default)]
pub(super) struct LogLinesInOrderOnce {
    /// Reader -> lines already checked.
    checked: BTreeMap<usize, usize>,
    seen: Seen,
}

impl Invariant for LogLinesInOrderOnce {
    named!(LogLinesInOrderOnce);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::LogRead]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        let Happening::LogRead { reader: index, step: Step::Lines(_) } = happening else { return };
        let reader = &view.logs.readers[*index];
        let from = self.checked.insert(*index, reader.received.len()).unwrap_or(0);
        if let Err(message) = check_lines(view, reader, from) {
            self.seen.flag(format!(
                "log reader {index} of {} {}: {message}",
                reader.read.target.key(),
                reader.read.source
            ));
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

/// Check the lines reader received from `from` on, against those before.
fn check_lines(view: &View<'_>, reader: &Reader, from: usize) -> Result<(), String> {
    for i in from..reader.received.len() {
        let line = &reader.received[i];
        let previous = i.checked_sub(1).map(|p| &reader.received[p]);
        let same_stream = |a: &Received, b: &Received| a.subject == b.subject && a.channel == b.channel;
        match previous {
            Some(p) if same_stream(p, line) => {
                if line.number <= p.number {
                    return Err(format!("line {} of {} came after line {}", line.number, line.subject, p.number));
                }
                if reader.kept_up() && line.number != p.number + 1 {
                    return Err(format!("lines {}..{} of {} were skipped", p.number + 1, line.number, line.subject));
                }
            }
            _ => {
                if reader.received[..i].iter().any(|r| same_stream(r, line)) {
                    return Err(format!("it came back to {} {:?}, which it had left", line.subject, line.channel));
                }
                if let Some(p) = previous
                    && reader.kept_up()
                    && let Subject::Container(id) = &p.subject
                {
                    let all = printed(view, id, p.channel).len() as u64;
                    if p.number != all {
                        return Err(format!("it left {} after line {} of the {all} it printed", p.subject, p.number));
                    }
                }
                if reader.kept_up() && line.number != 1 {
                    return Err(format!("it began {} at line {}", line.subject, line.number));
                }
            }
        }
        if let Subject::Container(id) = &line.subject {
            let printed = printed(view, id, line.channel);
            let expected = usize::try_from(line.number - 1).ok().and_then(|n| printed.get(n));
            if expected != Some(&line.text.as_str()) {
                return Err(format!(
                    "line {} of {} {:?} reads {:?}, the container printed {:?}",
                    line.number, line.subject, line.channel, line.text, expected
                ));
            }
        }
    }
    Ok(())
}

/// Every terminal failure is in its object's `system` stream, with its message, before the
/// status that says so is stored.
#[derive(Default)]
pub(super) struct SystemRecordsTerminalFailures {
    seen: Seen,
}

impl Invariant for SystemRecordsTerminalFailures {
    named!(SystemRecordsTerminalFailures);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::StoreApplying]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        let Happening::StoreApplying { request: StoreRequest::UpdateStatus { object }, .. } = happening else { return };
        if phase(object) != "Failed" {
            return;
        }
        let message = object.status.get("message").and_then(Value::as_str).unwrap_or_default();
        let stored = view.store.get(&object.key()).filter(|o| o.metadata.uid == object.metadata.uid);
        let before = stored.map(|o| (phase(o), o.status.get("message").and_then(Value::as_str).unwrap_or_default()));
        if before == Some(("Failed", message)) {
            return;
        }
        let own = Subject::Object(object.metadata.uid.clone());
        let system = view.logs.hub.read(&own, Channel::System, 1, usize::MAX);
        if !system.lines.iter().any(|l| l.text.contains("Failed") && l.text.contains(message)) {
            self.seen.flag(format!(
                "{} is about to be stored Failed ({message:?}) but its system stream has no line saying so",
                object.key()
            ));
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}
