//! Sources by kind, and what each reads from an object's current snapshot (DCP's `LogSource`
//! contract): the stream, and whether the source is complete.

use super::{Channel, LogHub, Subject};
use crate::api::logical::LogicalContainer;
use crate::api::{ContainerImage, Object, ObjectKey, PhysicalContainer, Resource, Uid};
use crate::controllers::logical::{backing_name, image_name};
use std::sync::Arc;

/// A log source, as a client names it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Source {
    Stdout,
    Stderr,
    System,
    /// A logical container's owned inline image's acquisition output.
    StartupStdout,
    StartupStderr,
}

const CONTAINER: &[Source] = &[Source::Stdout, Source::Stderr, Source::System];
const LOGICAL: &[Source] =
    &[Source::Stdout, Source::Stderr, Source::StartupStdout, Source::StartupStderr, Source::System];
const OTHER: &[Source] = &[Source::System];

/// The sources objects of `kind` have: physical containers and images their runtime output and
/// `system`; logical containers also their image's startup output; every other kind (a user's
/// too) `system`.
pub fn sources_of(kind: &str) -> &'static [Source] {
    match kind {
        PhysicalContainer::KIND | ContainerImage::KIND => CONTAINER,
        LogicalContainer::KIND => LOGICAL,
        _ => OTHER,
    }
}

/// The source a request without one reads: `stdout` where there is one (as `kubectl logs`).
pub fn default_source(kind: &str) -> Source {
    sources_of(kind)[0]
}

/// A source name the kind does not have.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind} has no log source {given:?}: the sources are {}", .allowed.join(", "))]
pub struct UnknownSource {
    pub kind: String,
    pub given: String,
    pub allowed: Vec<&'static str>,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Stdout => "stdout",
            Source::Stderr => "stderr",
            Source::System => "system",
            Source::StartupStdout => "startup_stdout",
            Source::StartupStderr => "startup_stderr",
        }
    }

    /// The source of `kind` called `name`.
    pub fn parse(kind: &str, name: &str) -> Result<Source, UnknownSource> {
        let sources = sources_of(kind);
        sources.iter().copied().find(|s| s.name() == name).ok_or_else(|| UnknownSource {
            kind: kind.to_string(),
            given: name.to_string(),
            allowed: sources.iter().map(|s| s.name()).collect(),
        })
    }
}

/// What a source reads now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// This stream; `complete`: the source will add nothing to what the stream holds now.
    Stream { subject: Subject, channel: Channel, complete: bool },
    /// Nothing to read yet: what the source reads does not exist yet (a logical container's
    /// backing or image before they are created).
    Waiting,
    /// Nothing to read, ever: an externally referenced image's startup output, or the output of
    /// a logical container that failed before it had a backing.
    Empty,
}

/// What `source` of `object` reads now, given the hub and the store (`lookup`: the object of a
/// key, as the store or a cache has it).
pub fn source(
    hub: &LogHub,
    object: &Object,
    source: Source,
    lookup: &dyn Fn(&ObjectKey) -> Option<Arc<Object>>,
) -> Resolved {
    let own = Subject::Object(object.metadata.uid.clone());
    match (object.kind.as_str(), source) {
        (_, Source::System) => Resolved::Stream { subject: own, channel: Channel::System, complete: false },
        (PhysicalContainer::KIND, Source::Stdout | Source::Stderr) => container_output(hub, object, channel_of(source)),
        (ContainerImage::KIND, Source::Stdout | Source::Stderr) => {
            Resolved::Stream { subject: own, channel: channel_of(source), complete: image_done(object) }
        }
        (LogicalContainer::KIND, Source::Stdout | Source::Stderr) => logical_output(hub, object, source, lookup),
        (LogicalContainer::KIND, Source::StartupStdout | Source::StartupStderr) => {
            logical_startup(object, source, lookup)
        }
        _ => Resolved::Empty,
    }
}

fn channel_of(source: Source) -> Channel {
    match source {
        Source::Stdout | Source::StartupStdout => Channel::Stdout,
        Source::Stderr | Source::StartupStderr => Channel::Stderr,
        Source::System => Channel::System,
    }
}

fn phase(object: &Object) -> &str {
    object.status.get("phase").and_then(|p| p.as_str()).unwrap_or("Pending")
}

fn runtime_id(object: &Object) -> Option<Subject> {
    object.status.get("runtimeId").and_then(|i| i.as_str()).map(|id| Subject::Container(id.to_string()))
}

/// A physical container's output is its runtime container's (the one its status records), and
/// complete once that capture ended (the container exited and its output was drained, or it was
/// removed) and the object is past being created (a container created and not yet started has
/// no output yet), or when it never ran and never will (`Failed`), or its container is gone
/// (`Missing`). Before it records a container there is nothing to read, unless it failed.
fn container_output(hub: &LogHub, physical: &Object, channel: Channel) -> Resolved {
    let phase = phase(physical);
    let over = matches!(phase, "Failed" | "Missing");
    match runtime_id(physical) {
        Some(subject) => {
            let complete = over || (phase != "Pending" && hub.is_ended(&subject, channel));
            Resolved::Stream { subject, channel, complete }
        }
        None if over => Resolved::Empty,
        None => Resolved::Waiting,
    }
}

/// Whether what `resolved` reads is complete (nothing to read, ever, is).
fn is_complete(resolved: &Resolved) -> bool {
    match resolved {
        Resolved::Stream { complete, .. } => *complete,
        Resolved::Empty => true,
        Resolved::Waiting => false,
    }
}

/// An image's acquisition output is complete once it is settled, one way or the other.
fn image_done(image: &Object) -> bool {
    matches!(phase(image), "Ready" | "Failed" | "Unavailable")
}

/// The child of `owner` called `name`, if the store has it and `owner` controls it.
fn owned_child(
    owner: &Object,
    kind: &str,
    name: &str,
    lookup: &dyn Fn(&ObjectKey) -> Option<Arc<Object>>,
) -> Option<Arc<Object>> {
    let namespace = owner.metadata.namespace.as_deref().unwrap_or_default();
    lookup(&ObjectKey::namespaced(kind, namespace, name))
        .filter(|child| child.metadata.owner_references.iter().any(|r| r.controller && r.uid == owner.metadata.uid))
}

/// A logical container's output is its backing's runtime container's (the one its status
/// names now: a follower moves on when it changes); complete once the logical container has
/// settled for good (`Exited`, `Failed`) and that output is complete (or the backing is gone).
fn logical_output(
    hub: &LogHub,
    logical: &Object,
    source: Source,
    lookup: &dyn Fn(&ObjectKey) -> Option<Arc<Object>>,
) -> Resolved {
    let channel = channel_of(source);
    let settled = matches!(phase(logical), "Exited" | "Failed");
    let Some(subject) = runtime_id(logical) else {
        return if phase(logical) == "Failed" { Resolved::Empty } else { Resolved::Waiting };
    };
    let backing = logical.status.get("backingUid").and_then(|u| u.as_str()).map(|u| Uid(u.to_string()));
    let physical = owned_child(logical, PhysicalContainer::KIND, &backing_name(&logical.metadata.name), lookup)
        .filter(|p| Some(&p.metadata.uid) == backing.as_ref());
    let backing_done = match physical {
        // The backing records another container than the logical status shows yet: not settled.
        Some(p) if runtime_id(&p).as_ref() != Some(&subject) => false,
        Some(p) => is_complete(&container_output(hub, &p, channel)),
        None => hub.is_ended(&subject, channel) || !hub.exists(&subject, channel),
    };
    Resolved::Stream { subject, channel, complete: settled && backing_done }
}

/// A logical container's startup output is its owned inline image's acquisition output; an
/// externally referenced image contributes nothing (its output is on its own endpoint).
fn logical_startup(logical: &Object, source: Source, lookup: &dyn Fn(&ObjectKey) -> Option<Arc<Object>>) -> Resolved {
    let inline = logical.spec.get("image").is_some_and(|i| !i.is_null());
    if !inline {
        return Resolved::Empty;
    }
    match owned_child(logical, ContainerImage::KIND, &image_name(&logical.metadata.name), lookup) {
        Some(image) => Resolved::Stream {
            subject: Subject::Object(image.metadata.uid.clone()),
            channel: channel_of(source),
            complete: image_done(&image),
        },
        // Past its image, or failed before it: the image will not come (any more).
        None if phase(logical) != "Pending" => Resolved::Empty,
        None => Resolved::Waiting,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_names_its_sources_and_an_unknown_one_lists_them() {
        assert_eq!(Source::parse("LogicalContainer", "startup_stdout"), Ok(Source::StartupStdout));
        assert_eq!(default_source("PhysicalContainer"), Source::Stdout);
        assert_eq!(default_source("Namespace"), Source::System);
        let Err(error) = Source::parse("PhysicalContainer", "startup_stdout") else {
            panic!("a physical container has no startup output")
        };
        assert_eq!(
            error.to_string(),
            "PhysicalContainer has no log source \"startup_stdout\": the sources are stdout, stderr, system"
        );
    }
}
