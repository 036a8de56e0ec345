//! Invariants about terminal failures: what a `Failed` status tells its reader.
//!
//! The engine's rule is that a permanent failure ends in a visible terminal state *with the
//! runtime's own message*. The checker does not read how the engine builds the message: it hears
//! every answer the runtime gave to a request each object's reconciles sent (errors, and the
//! error a container records on itself), and requires the message to quote one of them.

use super::named;
use crate::checker::{Happening, HappeningKind, Invariant, Seen, View};
use drydock_engine::OpId;
use drydock_engine::api::{
    ContainerImage, ContainerNetwork, ContainerVolume, ObjectKey, PhysicalContainer, Resource, reasons,
};
use drydock_engine::runtime::{RuntimeError, RuntimeReply};
use drydock_engine::store::StoreRequest;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The kinds whose own reconciles talk to the runtime, so whose failures have a runtime answer
/// to quote (a logical container passes its backing's failure up, under the backing's name).
const RUNTIME_KINDS: [&str; 4] =
    [ContainerImage::KIND, PhysicalContainer::KIND, ContainerNetwork::KIND, ContainerVolume::KIND];

/// The reasons that say the runtime refused something: each message must carry what it said.
/// (`NameTaken`, `NetworksRefused`, `NotVerified`, `ImageFailed`, `DependencyFailed` are the
/// engine's own findings, and `PullFailed` may end on a timeout of the engine's own.)
const RUNTIME_REASONS: [&str; 6] = [
    reasons::CREATE_REFUSED,
    reasons::IMAGE_NOT_FOUND,
    reasons::REFERENCE_REFUSED,
    reasons::BUILD_FAILED,
    reasons::FILE_COPY_FAILED,
    reasons::START_FAILED,
];

/// A status turning `Failed` for a reason the runtime gave quotes the runtime's own words: its
/// message contains the text of an answer the runtime gave a request of that object's.
#[derive(Default)]
pub(super) struct FailureQuotesTheRuntime {
    /// Runtime requests sent and not yet answered: whose reconcile sent them.
    issuers: BTreeMap<(usize, OpId), ObjectKey>,
    /// Per object (by key, across its lives and its processes): what the runtime said to it.
    heard: BTreeMap<ObjectKey, BTreeSet<String>>,
    seen: Seen,
}

impl Invariant for FailureQuotesTheRuntime {
    named!(FailureQuotesTheRuntime);

    fn observes(&self) -> &'static [HappeningKind] {
        &[
            HappeningKind::RuntimeSent,
            HappeningKind::RuntimeApplied,
            HappeningKind::RuntimeSettled,
            HappeningKind::StoreApplying,
        ]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        match happening {
            Happening::RuntimeSent { process, id, issuer, .. } if RUNTIME_KINDS.contains(&issuer.kind.as_str()) => {
                self.issuers.insert((*process, *id), (*issuer).clone());
            }
            Happening::RuntimeApplied { process, id, result, .. } => {
                let Some(issuer) = self.issuers.remove(&(*process, *id)) else { return };
                let said = self.heard.entry(issuer).or_default();
                match result {
                    Err(error) => {
                        said.insert(error_text(error).to_string());
                    }
                    Ok(RuntimeReply::Container(info)) => said.extend(info.error.clone()),
                    Ok(RuntimeReply::Containers(infos)) => said.extend(infos.iter().filter_map(|i| i.error.clone())),
                    Ok(_) => {}
                }
            }
            // Never applied (hung, cancelled, its process gone): nothing was said.
            Happening::RuntimeSettled { process, id } => {
                self.issuers.remove(&(*process, *id));
            }
            Happening::StoreApplying { request: StoreRequest::UpdateStatus { object }, .. } => {
                let field = |o: &drydock_engine::api::Object, name: &str| {
                    o.status.get(name).and_then(Value::as_str).unwrap_or_default().to_string()
                };
                let reason = field(object, "reason");
                if !RUNTIME_KINDS.contains(&object.kind.as_str())
                    || field(object, "phase") != "Failed"
                    || !RUNTIME_REASONS.contains(&reason.as_str())
                {
                    return;
                }
                let message = field(object, "message");
                let stored = view.store.get(&object.key()).filter(|o| o.metadata.uid == object.metadata.uid);
                if stored.is_some_and(|o| field(o, "phase") == "Failed" && field(o, "message") == message) {
                    return;
                }
                let said = self.heard.get(&object.key());
                let quotes =
                    said.is_some_and(|said| said.iter().any(|s| !s.is_empty() && message.contains(s.as_str())));
                if !quotes {
                    let heard: Vec<&str> = said.into_iter().flatten().map(String::as_str).collect();
                    self.seen.flag(format!(
                        "{} is about to be stored Failed ({reason}: {message:?}) without the runtime's own words; the runtime told it: {heard:?}",
                        object.key()
                    ));
                }
            }
            _ => {}
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

/// A status turning `Failed` or `Missing` names its reason, the machine-readable word
/// (`drydock_engine::api::reasons`) clients and `kubectl` columns switch on, and says what
/// happened in its message, for the person reading it. An
/// image turning `Unavailable` (gone from the runtime, never pulled again) says why, in either.
#[derive(Default)]
pub(super) struct TerminalStatusHasReason {
    seen: Seen,
}

impl Invariant for TerminalStatusHasReason {
    named!(TerminalStatusHasReason);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::StoreApplying]
    }

    fn observe(&mut self, _view: &View<'_>, happening: &Happening<'_>) {
        let Happening::StoreApplying { request: StoreRequest::UpdateStatus { object }, .. } = happening else { return };
        let text = |name: &str| object.status.get(name).and_then(Value::as_str).unwrap_or_default();
        let phase = text("phase");
        if matches!(phase, "Failed" | "Missing") && (text("reason").is_empty() || text("message").is_empty()) {
            self.seen.flag(format!(
                "{} is about to be stored {phase} with reason {:?} and message {:?}: it must name both",
                object.key(),
                text("reason"),
                text("message")
            ));
        }
        // An image gone from the runtime for good (it is not pulled again) says so in words.
        if phase == "Unavailable" && text("reason").is_empty() && text("message").is_empty() {
            self.seen.flag(format!("{} is about to be stored Unavailable saying nothing of why", object.key()));
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

/// A physical container turning `Failed` with `NetworksRefused` has networks Docker 20.10 would
/// refuse, by the checker's own reading of its spec: aliases on a built-in network (`bridge`,
/// `host`, `none`), or `host` or `none` beside another network. Docker allows everything else,
/// so refusing it would fail a container that runs.
#[derive(Default)]
pub(super) struct NetworksRefusedAsDockerWould {
    seen: Seen,
}

impl Invariant for NetworksRefusedAsDockerWould {
    named!(NetworksRefusedAsDockerWould);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::StoreApplying]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        let Happening::StoreApplying { request: StoreRequest::UpdateStatus { object }, .. } = happening else { return };
        let text = |name: &str| object.status.get(name).and_then(Value::as_str).unwrap_or_default();
        if object.kind != PhysicalContainer::KIND
            || text("phase") != "Failed"
            || text("reason") != reasons::NETWORKS_REFUSED
        {
            return;
        }
        let Some(stored) = view.store.get(&object.key()).filter(|o| o.metadata.uid == object.metadata.uid) else {
            return;
        };
        let Ok(spec) = stored.spec::<PhysicalContainer>() else { return };
        let ns = stored.metadata.namespace.as_deref().unwrap_or_default();
        // The built-in network a ContainerNetwork object tracks, if it tracks one.
        let built_in = |name: &str| {
            let network = view.store.get(&ObjectKey::namespaced(ContainerNetwork::KIND, ns, name))?;
            let tracked = network.spec.get("networkId").and_then(Value::as_str)?;
            ["bridge", "host", "none"].contains(&tracked).then(|| tracked.to_string())
        };
        let refused = spec.networks.iter().any(|attachment| {
            built_in(&attachment.name).is_some_and(|network| {
                !attachment.aliases.is_empty() || (network != "bridge" && spec.networks.len() > 1)
            })
        });
        if !refused {
            self.seen.flag(format!(
                "{} is about to be stored Failed (NetworksRefused: {:?}), but Docker would take its networks {:?}",
                object.key(),
                text("message"),
                spec.networks
            ));
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

fn error_text(error: &RuntimeError) -> &str {
    let (RuntimeError::NotFound(text)
    | RuntimeError::Conflict(text)
    | RuntimeError::Uncertain(text)
    | RuntimeError::Invalid(text)
    | RuntimeError::Transient(text)) = error;
    text
}
