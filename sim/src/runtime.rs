//! The simulated container runtime: a model of Docker's observable contract.
//!
//! What it promises is the engine's runtime contract (`drydock_engine::runtime`): unique names,
//! `NotFound` for anything missing, `Conflict` for a taken name and for removing a running
//! container without force, created -> running -> exited, label filters, images. Its fidelity is
//! checked by running the same conformance cases against real Docker.
//!
//! Images follow Docker 20.10 (`daemon/images`):
//! - a **registry** ([`SimRuntime::registry_push`]) maps `name:tag` to a manifest digest; pushing a
//!   tag again moves it to new content. Content has an image id (the digest of its config),
//!   distinct from its manifest digest, as in Docker;
//! - the **local store** keys images by id; references (`name:tag` tags and `name@digest` repo
//!   digests, normalized) point to ids. Pulling a tag that moved re-points the local tag and leaves
//!   the old image reachable by id and by its repo digest;
//! - a container records the id of the image it was created from;
//! - removal follows `ImageService.ImageDelete` (checked against the daemon by the conformance
//!   suite). By tag (or repo digest) it *untags*, and deletes the image only with its last
//!   reference: without force that is refused while any container uses the image and the tag is
//!   its only one; with force the tag always goes, and the image too unless a *running* container
//!   uses it, in which case it stays, untagged, and the removal still succeeds. By id it deletes
//!   the image with all its references: refused while a running container uses it (even forced),
//!   and without force also while a stopped one does or it has tags in several repositories.
//!
//! Every call applies at once; latency and lost replies are the world's business, not the
//! runtime's.

use drydock_engine::WallTime;
use drydock_engine::api::{familiar_image_reference, is_runtime_name, normalize_image_reference};
use drydock_engine::runtime::{
    ContainerInfo, ContainerState, EventAction, ImageInfo, RuntimeError, RuntimeEvent, RuntimeReply, RuntimeRequest,
    RuntimeResult,
};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// Exit code of a container stopped by `stop` (SIGKILL after the grace period, as for a `sleep`
/// that ignores SIGTERM).
pub const STOPPED_EXIT_CODE: i64 = 137;

/// The command images get when none is given (`docker import -c 'CMD ...'`).
pub const DEFAULT_IMAGE_COMMAND: [&str; 2] = ["sleep", "3600"];

/// The size of the one layer each pulled image has, for the progress lines.
const SIM_LAYER_SIZE: u64 = 1_064_476;

/// A local image: its id, default command and every reference (normalized `name:tag` or
/// `name@sha256:...`) that points to it.
#[derive(Clone, Debug)]
struct SimImage {
    id: String,
    command: Vec<String>,
    refs: BTreeSet<String>,
}

/// What a manifest in the registry describes.
#[derive(Clone, Debug)]
struct Content {
    image_id: String,
    command: Vec<String>,
}

/// One repository of the registry: its tags and the manifests it holds.
#[derive(Clone, Debug, Default)]
struct Repository {
    tags: BTreeMap<String, String>,
    manifests: BTreeSet<String>,
}

/// The simulated registry (what `docker push` writes and `docker pull` reads).
#[derive(Clone, Debug, Default)]
struct Registry {
    /// Normalized repository name (`127.0.0.1:5000/a/b`, `docker.io/library/busybox`) -> repository.
    repositories: BTreeMap<String, Repository>,
    /// Manifest digest -> content.
    contents: BTreeMap<String, Content>,
    /// Content pushed so far, for fresh digests.
    pushes: u64,
}

/// A normalized reference split into its repository name and its tag or digest.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Selector {
    Tag(String),
    Digest(String),
}

fn split_reference(reference: &str) -> (String, Selector) {
    let normalized = normalize_image_reference(reference);
    if let Some((name, digest)) = normalized.split_once('@') {
        return (name.to_string(), Selector::Digest(digest.to_string()));
    }
    let slash = normalized.rfind('/').map_or(0, |i| i + 1);
    match normalized[slash..].rfind(':') {
        Some(colon) => {
            let at = slash + colon;
            (normalized[..at].to_string(), Selector::Tag(normalized[at + 1..].to_string()))
        }
        None => (normalized, Selector::Tag("latest".into())),
    }
}

fn is_tag_ref(normalized: &str) -> bool {
    !normalized.contains('@')
}

fn ref_name(normalized: &str) -> String {
    split_reference(normalized).0
}

/// `sha256:<64 hex>` or `<64 hex>`: what Docker parses as an id rather than a name.
fn full_id(reference: &str) -> Option<String> {
    let hex = reference.strip_prefix("sha256:").unwrap_or(reference);
    (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()))
        .then(|| format!("sha256:{hex}"))
}

/// Docker's `stringid.TruncateID`: 12 hex characters, without the algorithm.
fn truncate_id(id: &str) -> &str {
    let hex = id.strip_prefix("sha256:").unwrap_or(id);
    hex.get(..12).unwrap_or(hex)
}

fn sha256_of(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for part in parts {
        h.update(part);
    }
    format!("sha256:{}", hex::encode(h.finalize()))
}

/// The manifest digest of content with image id `id`: one manifest per content, so pushing the
/// same image under two tags gives one digest, as in Docker.
fn manifest_digest(id: &str) -> String {
    sha256_of(&[b"manifest", id.as_bytes()])
}

/// Which containers stop an image's deletion (`checkImageDeleteConflict`).
#[derive(Copy, Clone, PartialEq, Eq)]
enum Conflicts {
    /// A running container (cannot be forced).
    Hard,
    /// A running or stopped container, or other references (must be forced).
    All,
    /// Hard and stopped containers, but not references.
    AllButReferences,
}

#[derive(Clone, Debug, Default)]
pub struct SimRuntime {
    containers: BTreeMap<String, ContainerInfo>,
    commands: BTreeMap<String, Vec<String>>,
    /// Mounts each container was created with.
    mounts: BTreeMap<String, Vec<drydock_engine::api::container::Mount>>,
    /// Ports each container asked to publish.
    requested_ports: BTreeMap<String, Vec<drydock_engine::api::container::PortMapping>>,
    /// The next host port handed out for a port published without one (Docker's ephemeral range).
    next_host_port: u16,
    /// container id -> id of the image it was created from.
    container_images: BTreeMap<String, String>,
    names: BTreeMap<String, String>,
    /// image id -> image.
    images: BTreeMap<String, SimImage>,
    /// normalized reference -> image id.
    refs: BTreeMap<String, String>,
    registry: Registry,
    events: Vec<RuntimeEvent>,
    now: WallTime,
    ids: u64,
    seed: u64,
    /// Containers ever created, for reports.
    pub creates: u64,
    /// Pulls that succeeded, for reports.
    pub pulls: u64,
}

impl SimRuntime {
    /// A runtime whose container ids and registry content are derived from `seed`.
    pub fn new(seed: u64) -> Self {
        SimRuntime { seed, ..SimRuntime::default() }
    }

    /// Set the wall clock that stamps events.
    pub fn set_now(&mut self, now: WallTime) {
        self.now = now;
    }

    /// Make an image present under `reference` (as `docker load` or `docker import` would), with
    /// the default command; no registry involved. Its id is derived from the reference alone.
    pub fn add_image(&mut self, reference: &str) {
        let normalized = normalize_image_reference(reference);
        let id = sha256_of(&[normalized.as_bytes()]);
        let command = DEFAULT_IMAGE_COMMAND.iter().map(|s| s.to_string()).collect();
        self.images.entry(id.clone()).or_insert_with(|| SimImage { id: id.clone(), command, refs: BTreeSet::new() });
        self.set_ref(&normalized, &id);
    }

    pub fn has_image(&self, reference: &str) -> bool {
        self.resolve_image(reference).is_some()
    }

    /// Publish new content under `reference` in the registry (a `name:tag`; the tag moves if it was
    /// there) and return its manifest digest. A `name@digest` reference publishes untagged content,
    /// reachable only by the returned digest. The local store is untouched.
    pub fn registry_push(&mut self, reference: &str) -> String {
        self.registry.pushes += 1;
        let n = self.registry.pushes.to_le_bytes();
        let image_id = sha256_of(&[b"config", &self.seed.to_le_bytes(), &n]);
        let command = DEFAULT_IMAGE_COMMAND.iter().map(|s| s.to_string()).collect();
        self.publish(reference, Content { image_id, command })
    }

    /// `docker tag <image> <reference> && docker push <reference>`: publish a local image's content
    /// under `reference`, tag it locally and record its repo digest. `None` if `image` is absent.
    pub fn registry_push_image(&mut self, image: &str, reference: &str) -> Option<String> {
        let local = self.resolve_image(image)?;
        let content = Content { image_id: local.id.clone(), command: local.command.clone() };
        let id = content.image_id.clone();
        let digest = self.publish(reference, content);
        let (name, selector) = split_reference(reference);
        if let Selector::Tag(tag) = selector {
            self.set_ref(&format!("{name}:{tag}"), &id);
        }
        self.set_ref(&format!("{name}@{digest}"), &id);
        Some(digest)
    }

    /// Publish the content `existing` refers to in the registry under `reference` as well (a tag
    /// moving to content the registry already has, as `crane tag` does). `None` if `existing` is
    /// not in the registry.
    pub fn registry_tag(&mut self, existing: &str, reference: &str) -> Option<String> {
        let (digest, _) = self.registry_lookup(existing)?;
        let content = self.registry.contents.get(&digest)?.clone();
        Some(self.publish(reference, content))
    }

    /// What `reference` names in the registry: its manifest digest and the id its image has once
    /// pulled.
    pub fn registry_lookup(&self, reference: &str) -> Option<(String, String)> {
        let (name, selector) = split_reference(reference);
        let repository = self.registry.repositories.get(&name)?;
        let digest = match selector {
            Selector::Tag(tag) => repository.tags.get(&tag)?.clone(),
            Selector::Digest(digest) => repository.manifests.get(&digest)?.clone(),
        };
        let content = self.registry.contents.get(&digest)?;
        Some((digest, content.image_id.clone()))
    }

    pub fn containers(&self) -> impl Iterator<Item = &ContainerInfo> {
        self.containers.values()
    }

    pub fn container(&self, id_or_name: &str) -> Option<&ContainerInfo> {
        self.resolve(id_or_name).ok().and_then(|id| self.containers.get(&id))
    }

    /// Insert a container as-is (tests, external actors). It uses its image if that is present.
    pub fn insert(&mut self, info: ContainerInfo) {
        if let Some(image) = self.resolve_image(&info.image) {
            self.container_images.insert(info.id.clone(), image.id.clone());
        }
        self.names.insert(info.name.clone(), info.id.clone());
        self.containers.insert(info.id.clone(), info);
    }

    /// Carry out one request.
    pub fn execute(&mut self, request: &RuntimeRequest) -> RuntimeResult {
        match request {
            RuntimeRequest::CreateContainer(create) => {
                if !is_runtime_name(&create.name) {
                    return Err(RuntimeError::Transient(format!(
                        "400: Invalid container name ({}), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed",
                        create.name
                    )));
                }
                let Some(image) = self.resolve_image(&create.image) else {
                    return Err(RuntimeError::NotFound(format!("No such image: {}", create.image)));
                };
                let command = if create.command.is_empty() { image.command.clone() } else { create.command.clone() };
                let image_id = image.id.clone();
                if let Some(existing) = self.names.get(&create.name) {
                    return Err(RuntimeError::Conflict(format!(
                        "Conflict. The container name \"/{}\" is already in use by container \"{existing}\". You have to remove (or rename) that container to be able to reuse that name.",
                        create.name
                    )));
                }
                let id = self.next_id();
                self.creates += 1;
                self.commands.insert(id.clone(), command);
                self.requested_ports.insert(id.clone(), create.ports.clone());
                self.mounts.insert(id.clone(), create.mounts.clone());
                self.container_images.insert(id.clone(), image_id);
                self.names.insert(create.name.clone(), id.clone());
                self.containers.insert(
                    id.clone(),
                    ContainerInfo {
                        ports: Vec::new(),
                        id: id.clone(),
                        name: create.name.clone(),
                        image: create.image.clone(),
                        labels: create.labels.clone(),
                        state: ContainerState::Created,
                        exit_code: None,
                    },
                );
                self.event(&id, EventAction::Create);
                Ok(RuntimeReply::Created { id })
            }
            RuntimeRequest::StartContainer { id } => {
                let id = self.resolve(id)?;
                if self.containers.get(&id).is_some_and(|c| c.state == ContainerState::Running) {
                    return Ok(RuntimeReply::Done);
                }
                let targets: Vec<String> =
                    self.mounts.get(&id).map(|m| m.iter().map(|m| m.target.clone()).collect()).unwrap_or_default();
                let exits = self.commands.get(&id).and_then(|c| exits_at_once(c, &targets));
                let ports = self.publish_ports(&id);
                if let Some(c) = self.containers.get_mut(&id) {
                    c.state = ContainerState::Running;
                    c.exit_code = None;
                    c.ports = ports;
                }
                self.event(&id, EventAction::Start);
                if let Some(code) = exits {
                    self.exit(&id, code);
                }
                Ok(RuntimeReply::Done)
            }
            RuntimeRequest::StopContainer { id, .. } => {
                let id = self.resolve(id)?;
                if self.containers.get(&id).is_some_and(|c| c.state == ContainerState::Running) {
                    self.exit(&id, STOPPED_EXIT_CODE);
                }
                Ok(RuntimeReply::Done)
            }
            RuntimeRequest::RemoveContainer { id, force } => {
                let id = self.resolve(id)?;
                let running = self.containers.get(&id).is_some_and(|c| c.state == ContainerState::Running);
                if running && !force {
                    return Err(RuntimeError::Conflict(format!(
                        "You cannot remove a running container {id}. Stop the container before attempting removal or force remove"
                    )));
                }
                if running {
                    self.exit(&id, STOPPED_EXIT_CODE);
                }
                self.event(&id, EventAction::Destroy);
                if let Some(removed) = self.containers.remove(&id) {
                    self.names.remove(&removed.name);
                    self.commands.remove(&id);
                    self.requested_ports.remove(&id);
                    self.mounts.remove(&id);
                    self.container_images.remove(&id);
                }
                Ok(RuntimeReply::Done)
            }
            RuntimeRequest::InspectContainer { id } => {
                let id = self.resolve(id)?;
                self.containers.get(&id).cloned().map(RuntimeReply::Container).ok_or_else(|| not_found(&id))
            }
            RuntimeRequest::ListContainers { labels } => Ok(RuntimeReply::Containers(
                self.containers
                    .values()
                    .filter(|c| labels.iter().all(|(k, v)| c.labels.get(k) == Some(v)))
                    .cloned()
                    .collect(),
            )),
            RuntimeRequest::InspectImage { reference } => self
                .resolve_image(reference)
                .map(|i| RuntimeReply::Image(image_info(i)))
                .ok_or_else(|| RuntimeError::NotFound(format!("No such image: {reference}"))),
            RuntimeRequest::PullImage { reference } => self.pull(reference),
            RuntimeRequest::RemoveImage { reference, force } => self.remove_image(reference, *force),
            RuntimeRequest::ContainerEvents { id, since } => {
                let id = self.resolve(id).unwrap_or_else(|_| id.clone());
                Ok(RuntimeReply::Events(
                    self.events.iter().filter(|e| e.container_id == id && e.time >= *since).cloned().collect(),
                ))
            }
        }
    }

    /// Every event so far, oldest first.
    pub fn events(&self) -> &[RuntimeEvent] {
        &self.events
    }

    /// The daemon restarts (no live-restore): every running container is stopped, as `dockerd`
    /// does on shutdown. Returns how many stopped. Their `die` events are recorded, but whoever
    /// was streaming events loses the stream (the world drops them).
    pub fn restart_daemon(&mut self) -> usize {
        let running: Vec<String> =
            self.containers.values().filter(|c| c.state == ContainerState::Running).map(|c| c.id.clone()).collect();
        for id in &running {
            self.exit(id, STOPPED_EXIT_CODE);
        }
        running.len()
    }

    /// Remove a container behind the engine's back (`docker rm -f`).
    pub fn remove_externally(&mut self, id_or_name: &str) -> bool {
        self.execute(&RuntimeRequest::RemoveContainer { id: id_or_name.to_string(), force: true }).is_ok()
    }

    fn publish(&mut self, reference: &str, content: Content) -> String {
        let digest = manifest_digest(&content.image_id);
        let (name, selector) = split_reference(reference);
        self.registry.contents.insert(digest.clone(), content);
        let repository = self.registry.repositories.entry(name).or_default();
        repository.manifests.insert(digest.clone());
        if let Selector::Tag(tag) = selector {
            repository.tags.insert(tag, digest.clone());
        }
        digest
    }

    /// Docker's `pullImage`: fetch the manifest the reference names, store its image if new, point
    /// the tag (for a tag reference) and the repo digest at it.
    fn pull(&mut self, reference: &str) -> RuntimeResult {
        let (name, selector) = split_reference(reference);
        let familiar = familiar_image_reference(reference);
        let Some((digest, image_id)) = self.registry_lookup(reference) else {
            let known = self.registry.repositories.contains_key(&name);
            return Err(RuntimeError::NotFound(match name.strip_prefix("docker.io/") {
                Some(_) if !known => format!(
                    "pull access denied for {}, repository does not exist or may require 'docker login': denied: requested access to the resource is denied",
                    familiar_name(&name)
                ),
                _ => format!("manifest for {familiar} not found: manifest unknown: manifest unknown"),
            }));
        };
        let path = name.split_once('/').map_or(name.as_str(), |(_, path)| path);
        let shown = match &selector {
            Selector::Tag(tag) => tag.clone(),
            Selector::Digest(_) => normalize_image_reference(reference),
        };
        let mut progress = vec![format!("{shown}: Pulling from {path}")];
        if !self.images.contains_key(&image_id) {
            let layer = sha256_of(&[b"layer", image_id.as_bytes()]);
            let layer = truncate_id(&layer).to_string();
            let size = format!("{SIM_LAYER_SIZE}/{SIM_LAYER_SIZE}");
            for status in [
                "Pulling fs layer",
                &format!("Downloading {size}"),
                "Verifying Checksum",
                "Download complete",
                &format!("Extracting {size}"),
                "Pull complete",
            ] {
                progress.push(format!("{layer}: {status}"));
            }
            let command = self.registry.contents.get(&digest).map(|c| c.command.clone()).unwrap_or_default();
            self.images.insert(image_id.clone(), SimImage { id: image_id.clone(), command, refs: BTreeSet::new() });
        }
        // "Downloaded newer image" when the reference asked for moved; the repo digest is recorded
        // either way.
        let by_digest = self.set_ref(&format!("{name}@{digest}"), &image_id);
        let updated = match &selector {
            Selector::Tag(tag) => self.set_ref(&format!("{name}:{tag}"), &image_id),
            Selector::Digest(_) => by_digest,
        };
        self.pulls += 1;
        progress.push(format!("Digest: {digest}"));
        progress.push(if updated {
            format!("Status: Downloaded newer image for {familiar}")
        } else {
            format!("Status: Image is up to date for {familiar}")
        });
        Ok(RuntimeReply::Pulled { progress })
    }

    /// Docker 20.10's `ImageService.ImageDelete`, step by step.
    fn remove_image(&mut self, reference: &str, force: bool) -> RuntimeResult {
        let Some(image) = self.resolve_image(reference) else {
            let shown =
                if full_id(reference).is_some() { reference.to_string() } else { familiar_image_reference(reference) };
            return Err(RuntimeError::NotFound(format!("No such image: {shown}")));
        };
        let id = image.id.clone();
        // Docker's `isImageIDPrefix`.
        let is_id = id.starts_with(reference) || id["sha256:".len()..].starts_with(reference);
        let mut quiet = false;
        if !is_id {
            // A repository reference: untag it. Refused while a container uses the image and this
            // is its only tag, unless forced (the image would be left dangling).
            if !force
                && self.is_single_reference(&id)
                && let Some(container) = self.first_container_using(&id, |_| true)
            {
                return Err(RuntimeError::Conflict(format!(
                    "conflict: unable to remove repository reference \"{reference}\" (must force) - container {} is using its referenced image {}",
                    truncate_id(&container),
                    truncate_id(&id)
                )));
            }
            let removed = normalize_image_reference(reference);
            self.unset_ref(&removed);
            if is_tag_ref(&removed) {
                // With no tag of that repository left, its repo digests go too.
                let name = ref_name(&removed);
                let refs = self.refs_of(&id);
                if !refs.iter().any(|r| is_tag_ref(r) && ref_name(r) == name) {
                    for r in refs.iter().filter(|r| !is_tag_ref(r) && ref_name(r) == name) {
                        self.unset_ref(r);
                    }
                }
            }
            if !self.refs_of(&id).is_empty() {
                return Ok(RuntimeReply::Done);
            }
            quiet = true;
        } else if self.is_single_reference(&id) {
            // An id, and at most one tag: the references go first, if nothing stops the deletion.
            let conflicts = if force { Conflicts::Hard } else { Conflicts::AllButReferences };
            if let Some(conflict) = self.delete_conflict(&id, conflicts) {
                return Err(conflict.into_error(&id));
            }
            for r in self.refs_of(&id) {
                self.unset_ref(&r);
            }
        }
        let conflicts = if force { Conflicts::Hard } else { Conflicts::All };
        if let Some(conflict) = self.delete_conflict(&id, conflicts) {
            // Having untagged, a conflict over a container leaves the image, untagged, in place.
            if quiet && conflict.used {
                return Ok(RuntimeReply::Done);
            }
            return Err(conflict.into_error(&id));
        }
        for r in self.refs_of(&id) {
            self.unset_ref(&r);
        }
        self.images.remove(&id);
        Ok(RuntimeReply::Done)
    }

    /// `checkImageDeleteConflict`, in Docker's order: running containers, other references,
    /// stopped containers.
    fn delete_conflict(&self, id: &str, conflicts: Conflicts) -> Option<DeleteConflict> {
        if let Some(c) = self.first_container_using(id, |c| c.state == ContainerState::Running) {
            return Some(DeleteConflict {
                hard: true,
                used: true,
                message: format!("image is being used by running container {}", truncate_id(&c)),
            });
        }
        if conflicts == Conflicts::All && !self.refs_of(id).is_empty() {
            return Some(DeleteConflict {
                hard: false,
                used: false,
                message: "image is referenced in multiple repositories".into(),
            });
        }
        if conflicts != Conflicts::Hard
            && let Some(c) = self.first_container_using(id, |c| c.state != ContainerState::Running)
        {
            return Some(DeleteConflict {
                hard: false,
                used: true,
                message: format!("image is being used by stopped container {}", truncate_id(&c)),
            });
        }
        None
    }

    fn first_container_using(&self, image_id: &str, which: impl Fn(&ContainerInfo) -> bool) -> Option<String> {
        self.container_images
            .iter()
            .filter(|(_, image)| *image == image_id)
            .filter_map(|(c, _)| self.containers.get(c))
            .find(|c| which(c))
            .map(|c| c.id.clone())
    }

    /// Docker's `isSingleReference`: at least one reference, at most one of them a tag, all in
    /// one repository.
    fn is_single_reference(&self, id: &str) -> bool {
        let refs = self.refs_of(id);
        if refs.len() <= 1 {
            return refs.len() == 1;
        }
        let tags: Vec<&String> = refs.iter().filter(|r| is_tag_ref(r)).collect();
        if tags.len() > 1 {
            return false;
        }
        let names: BTreeSet<String> = refs.iter().map(|r| ref_name(r)).collect();
        names.len() == 1
    }

    fn refs_of(&self, id: &str) -> Vec<String> {
        self.images.get(id).map(|i| i.refs.iter().cloned().collect()).unwrap_or_default()
    }

    /// Point `reference` (normalized) at image `id`, taking it from any image it pointed to.
    /// Whether anything changed.
    fn set_ref(&mut self, reference: &str, id: &str) -> bool {
        if self.refs.get(reference).is_some_and(|old| old == id) {
            return false;
        }
        self.unset_ref(reference);
        self.refs.insert(reference.to_string(), id.to_string());
        if let Some(image) = self.images.get_mut(id) {
            image.refs.insert(reference.to_string());
        }
        true
    }

    fn unset_ref(&mut self, reference: &str) {
        if let Some(old) = self.refs.remove(reference)
            && let Some(image) = self.images.get_mut(&old)
        {
            image.refs.remove(reference);
        }
    }

    /// Docker's `GetImage`: a full id is only an id; otherwise a reference (tag or repo digest),
    /// else a unique id prefix (here of at least 12 hex characters, with or without `sha256:`).
    fn resolve_image(&self, reference: &str) -> Option<&SimImage> {
        if let Some(id) = full_id(reference) {
            return self.images.get(&id);
        }
        if let Some(image) = self.refs.get(&normalize_image_reference(reference)).and_then(|id| self.images.get(id)) {
            return Some(image);
        }
        let prefix = reference.strip_prefix("sha256:").unwrap_or(reference);
        if prefix.len() < 12 || !prefix.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let mut matches = self.images.values().filter(|i| i.id["sha256:".len()..].starts_with(prefix));
        match (matches.next(), matches.next()) {
            (Some(image), None) => Some(image),
            _ => None,
        }
    }

    /// Host ports for a container being started: the requested ones, or the next ephemeral port.
    fn publish_ports(&mut self, id: &str) -> Vec<drydock_engine::runtime::PublishedPort> {
        let requested = self.requested_ports.get(id).cloned().unwrap_or_default();
        let mut ports: Vec<drydock_engine::runtime::PublishedPort> = requested
            .iter()
            .map(|p| {
                let host_port = p.host_port.unwrap_or_else(|| {
                    self.next_host_port = self.next_host_port.max(32_768).wrapping_add(1).max(32_769);
                    self.next_host_port
                });
                drydock_engine::runtime::PublishedPort {
                    container_port: p.container_port,
                    protocol: p.protocol,
                    host_port,
                }
            })
            .collect();
        ports.sort();
        ports
    }

    fn exit(&mut self, id: &str, code: i64) {
        if let Some(c) = self.containers.get_mut(id) {
            c.state = ContainerState::Exited;
            c.exit_code = Some(code);
            c.ports.clear();
        }
        self.event(id, EventAction::Die { exit_code: Some(code) });
    }

    fn event(&mut self, id: &str, action: EventAction) {
        let labels = self.containers.get(id).map(|c| c.labels.clone()).unwrap_or_default();
        self.events.push(RuntimeEvent { container_id: id.to_string(), action, time: self.now, labels });
    }

    /// Docker resolves a full id, a name, or a unique id prefix.
    fn resolve(&self, id_or_name: &str) -> Result<String, RuntimeError> {
        if self.containers.contains_key(id_or_name) {
            return Ok(id_or_name.to_string());
        }
        if let Some(id) = self.names.get(id_or_name.trim_start_matches('/')) {
            return Ok(id.clone());
        }
        let mut matches =
            self.containers.range(id_or_name.to_string()..).take_while(|(id, _)| id.starts_with(id_or_name));
        match (matches.next(), matches.next()) {
            (Some((id, _)), None) if !id_or_name.is_empty() => Ok(id.clone()),
            (Some(_), Some(_)) => {
                Err(RuntimeError::NotFound(format!("multiple IDs found with provided prefix: {id_or_name}")))
            }
            _ => Err(not_found(id_or_name)),
        }
    }

    fn next_id(&mut self) -> String {
        self.ids += 1;
        let mut h = Sha256::new();
        h.update(self.seed.to_le_bytes());
        h.update(self.ids.to_le_bytes());
        hex::encode(h.finalize())
    }
}

/// Why an image cannot be deleted (Docker's `imageDeleteConflict`).
struct DeleteConflict {
    /// Cannot be forced.
    hard: bool,
    /// A container uses the image.
    used: bool,
    message: String,
}

impl DeleteConflict {
    fn into_error(self, id: &str) -> RuntimeError {
        let force = if self.hard { "cannot be forced" } else { "must be forced" };
        RuntimeError::Conflict(format!("conflict: unable to delete {} ({force}) - {}", truncate_id(id), self.message))
    }
}

fn image_info(image: &SimImage) -> ImageInfo {
    ImageInfo {
        id: image.id.clone(),
        tags: image.refs.iter().filter(|r| is_tag_ref(r)).map(|r| familiar_image_reference(r)).collect(),
    }
}

/// A normalized repository name in Docker's short form: `busybox`, `drydock-test/busybox`.
fn familiar_name(name: &str) -> String {
    name.strip_prefix("docker.io/library/").or_else(|| name.strip_prefix("docker.io/")).unwrap_or(name).to_string()
}

/// The exit code of a command that ends as soon as it starts: `true`, `false`,
/// `sh -c 'exit N'`; `None` for anything that keeps running.
/// `sh -c 'test -d PATH'` succeeds for `/` and for the targets of the container's mounts (and
/// the directories above them): the only file system the model has.
fn exits_at_once(command: &[String], mount_targets: &[String]) -> Option<i64> {
    match command {
        [c] if c == "true" => Some(0),
        [c] if c == "false" => Some(1),
        [sh, c, script] if (sh == "sh" || sh == "/bin/sh") && c == "-c" => {
            let script = script.trim();
            if let Some(path) = script.strip_prefix("test -d ") {
                let path = path.trim().trim_end_matches('/');
                let exists =
                    path.is_empty() || mount_targets.iter().any(|t| t == path || t.starts_with(&format!("{path}/")));
                return Some(if exists { 0 } else { 1 });
            }
            let code = script.strip_prefix("exit")?.trim();
            if code.is_empty() { Some(0) } else { code.parse().ok() }
        }
        _ => None,
    }
}

fn not_found(id: &str) -> RuntimeError {
    RuntimeError::NotFound(format!("No such container: {id}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use drydock_engine::runtime::ContainerCreate;

    fn create(name: &str, image: &str) -> RuntimeRequest {
        RuntimeRequest::CreateContainer(ContainerCreate {
            name: name.into(),
            image: image.into(),
            command: vec![],
            env: Default::default(),
            labels: BTreeMap::from([("app".to_string(), name.to_string())]),
            ..Default::default()
        })
    }

    fn id_of(r: RuntimeResult) -> String {
        match r {
            Ok(RuntimeReply::Created { id }) => id,
            other => panic!("expected Created, got {other:?}"),
        }
    }

    #[test]
    fn docker_contract_basics() {
        let mut rt = SimRuntime::new(1);
        assert!(matches!(rt.execute(&create("a", "busybox")), Err(RuntimeError::NotFound(_))), "image must be present");
        rt.add_image("busybox");
        let id = id_of(rt.execute(&create("a", "docker.io/library/busybox:latest")));
        assert!(matches!(rt.execute(&create("a", "busybox")), Err(RuntimeError::Conflict(_))), "names are unique");
        assert_eq!(rt.container("a").map(|c| c.state), Some(ContainerState::Created));
        rt.execute(&RuntimeRequest::StartContainer { id: id.clone() }).expect("start");
        rt.execute(&RuntimeRequest::StartContainer { id: id[..12].to_string() }).expect("start twice is fine");
        let rm = RuntimeRequest::RemoveContainer { id: id.clone(), force: false };
        assert!(matches!(rt.execute(&rm), Err(RuntimeError::Conflict(_))), "running needs force");
        rt.execute(&RuntimeRequest::StopContainer { id: id.clone(), timeout_secs: 1 }).expect("stop");
        rt.execute(&RuntimeRequest::StopContainer { id: id.clone(), timeout_secs: 1 }).expect("stop twice is fine");
        assert_eq!(rt.container(&id).and_then(|c| c.exit_code), Some(STOPPED_EXIT_CODE));
        rt.execute(&rm).expect("remove stopped");
        assert!(matches!(rt.execute(&RuntimeRequest::InspectContainer { id }), Err(RuntimeError::NotFound(_))));
        id_of(rt.execute(&create("a", "busybox")));
    }

    #[test]
    fn a_daemon_restart_stops_running_containers_only() {
        let mut rt = SimRuntime::new(1);
        rt.add_image("busybox");
        let running = id_of(rt.execute(&create("a", "busybox")));
        rt.execute(&RuntimeRequest::StartContainer { id: running.clone() }).expect("start");
        let created = id_of(rt.execute(&create("b", "busybox")));
        let events = rt.events().len();
        assert_eq!(rt.restart_daemon(), 1);
        assert_eq!(rt.container(&running).map(|c| (c.state, c.exit_code)), Some((ContainerState::Exited, Some(137))));
        assert_eq!(rt.container(&created).map(|c| c.state), Some(ContainerState::Created));
        assert_eq!(rt.events().len(), events + 1, "one die event");
        assert_eq!(rt.restart_daemon(), 0, "nothing left running");
    }

    #[test]
    fn label_filters_match_all_labels() {
        let mut rt = SimRuntime::new(1);
        rt.add_image("busybox");
        id_of(rt.execute(&create("a", "busybox")));
        id_of(rt.execute(&create("b", "busybox")));
        let list = |labels: &[(&str, &str)]| match rt.clone().execute(&RuntimeRequest::ListContainers {
            labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        }) {
            Ok(RuntimeReply::Containers(c)) => c.into_iter().map(|c| c.name).collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        assert_eq!(list(&[]).len(), 2);
        assert_eq!(list(&[("app", "b")]), vec!["b".to_string()]);
        assert!(list(&[("app", "b"), ("x", "y")]).is_empty());
    }

    fn image(rt: &mut SimRuntime, reference: &str) -> Result<ImageInfo, RuntimeError> {
        match rt.execute(&RuntimeRequest::InspectImage { reference: reference.into() }) {
            Ok(RuntimeReply::Image(info)) => Ok(info),
            Ok(other) => panic!("inspect-image replied {other:?}"),
            Err(e) => Err(e),
        }
    }

    fn pull(rt: &mut SimRuntime, reference: &str) -> Result<Vec<String>, RuntimeError> {
        match rt.execute(&RuntimeRequest::PullImage { reference: reference.into() }) {
            Ok(RuntimeReply::Pulled { progress }) => Ok(progress),
            Ok(other) => panic!("pull replied {other:?}"),
            Err(e) => Err(e),
        }
    }

    fn rmi(rt: &mut SimRuntime, reference: &str, force: bool) -> RuntimeResult {
        rt.execute(&RuntimeRequest::RemoveImage { reference: reference.into(), force })
    }

    fn is_sha256(s: &str) -> bool {
        s.len() == 71 && s.starts_with("sha256:") && s[7..].bytes().all(|b| b.is_ascii_hexdigit())
    }

    const REG: &str = "127.0.0.1:5000/team/app";

    #[test]
    fn add_image_keeps_working() {
        let mut rt = SimRuntime::new(1);
        rt.add_image("drydock-test/busybox:latest");
        let info = image(&mut rt, "docker.io/drydock-test/busybox").expect("present");
        assert!(is_sha256(&info.id));
        assert_eq!(info.tags, vec!["drydock-test/busybox:latest".to_string()]);
        assert_eq!(image(&mut rt, &info.id).expect("by id").id, info.id);
        assert_eq!(image(&mut rt, &info.id[7..19]).expect("by 12-char prefix").id, info.id);
        assert!(image(&mut rt, &info.id[7..15]).is_err(), "shorter prefixes are not resolved");
        rt.add_image("drydock-test/busybox:latest");
        assert_eq!(image(&mut rt, "drydock-test/busybox").expect("again").id, info.id, "adding again is a no-op");
        assert_eq!(SimRuntime::new(2).tap_add("drydock-test/busybox").id, info.id, "the id depends on the name only");
    }

    impl SimRuntime {
        fn tap_add(mut self, reference: &str) -> ImageInfo {
            self.add_image(reference);
            image(&mut self, reference).expect("just added")
        }
    }

    #[test]
    fn registry_digests_are_deterministic_and_distinct_from_ids() {
        let digests = |seed| {
            let mut rt = SimRuntime::new(seed);
            let a = rt.registry_push("busybox");
            let b = rt.registry_push("busybox");
            let (_, id) = rt.registry_lookup("busybox").expect("pushed");
            (a, b, id)
        };
        let (a, b, id) = digests(1);
        assert!(is_sha256(&a) && is_sha256(&b) && is_sha256(&id));
        assert_ne!(a, b, "pushing a tag again publishes new content");
        assert_ne!(b, id, "the manifest digest is not the image id");
        assert_eq!(digests(1), (a.clone(), b, id), "same seed, same digests");
        assert_ne!(digests(2).0, a, "another seed, other digests");
    }

    #[test]
    fn pull_stores_the_registry_content_under_its_tag_and_digest() {
        let mut rt = SimRuntime::new(1);
        let digest = rt.registry_push("busybox");
        let (_, id) = rt.registry_lookup("docker.io/library/busybox:latest").expect("normalized lookup");
        assert!(!rt.has_image("busybox"), "pushing does not make it local");
        let progress = pull(&mut rt, "busybox").expect("pull");
        assert_eq!(progress.first().map(String::as_str), Some("latest: Pulling from library/busybox"));
        assert!(progress.contains(&format!("Digest: {digest}")), "{progress:?}");
        assert_eq!(progress.last().map(String::as_str), Some("Status: Downloaded newer image for busybox:latest"));
        assert_eq!(rt.pulls, 1);
        for reference in ["busybox", "busybox:latest", "docker.io/library/busybox:latest", &format!("busybox@{digest}")]
        {
            let info = image(&mut rt, reference).unwrap_or_else(|e| panic!("{reference}: {e}"));
            assert_eq!(info.id, id, "{reference}");
            assert_eq!(info.tags, vec!["busybox:latest".to_string()]);
        }
        let again = pull(&mut rt, "docker.io/library/busybox").expect("pull again");
        assert_eq!(again.last().map(String::as_str), Some("Status: Image is up to date for busybox:latest"));
        assert!(!again.iter().any(|l| l.contains("Pull complete")), "nothing downloaded: {again:?}");
        assert_eq!(rt.pulls, 2);
    }

    #[test]
    fn pull_of_an_unknown_reference_is_not_found() {
        let mut rt = SimRuntime::new(1);
        rt.registry_push(&format!("{REG}:1"));
        let cases = [
            (format!("{REG}:2"), "manifest unknown"),
            ("127.0.0.1:5000/team/other:1".to_string(), "manifest unknown"),
            (format!("{REG}@sha256:{}", "1".repeat(64)), "manifest unknown"),
            ("nosuchimage".to_string(), "pull access denied for nosuchimage"),
        ];
        for (reference, message) in cases {
            match pull(&mut rt, &reference) {
                Err(RuntimeError::NotFound(m)) => assert!(m.contains(message), "{reference}: {m}"),
                other => panic!("{reference}: {other:?}"),
            }
        }
        rt.add_image("imported");
        assert!(
            matches!(pull(&mut rt, "imported"), Err(RuntimeError::NotFound(_))),
            "imported images have no registry"
        );
        assert_eq!(rt.pulls, 0);
    }

    #[test]
    fn pull_by_digest_records_the_digest_and_no_tag() {
        let mut rt = SimRuntime::new(1);
        let digest = rt.registry_push(&format!("{REG}:1"));
        let by_digest = format!("{REG}@{digest}");
        let progress = pull(&mut rt, &by_digest).expect("pull");
        assert_eq!(progress[0], format!("{by_digest}: Pulling from team/app"));
        assert_eq!(progress.last(), Some(&format!("Status: Downloaded newer image for {by_digest}")));
        let info = image(&mut rt, &by_digest).expect("by digest");
        assert!(info.tags.is_empty(), "{:?}", info.tags);
        assert!(matches!(image(&mut rt, &format!("{REG}:1")), Err(RuntimeError::NotFound(_))), "not tagged");
        let again = pull(&mut rt, &by_digest).expect("again");
        assert_eq!(again.last(), Some(&format!("Status: Image is up to date for {by_digest}")));
        pull(&mut rt, &format!("{REG}:1")).expect("by tag");
        assert_eq!(image(&mut rt, &format!("{REG}:1")).expect("tagged now").id, info.id);
    }

    #[test]
    fn a_moved_tag_repoints_the_local_tag_and_leaves_the_old_image() {
        let mut rt = SimRuntime::new(1);
        let tag = format!("{REG}:1");
        let first = rt.registry_push(&tag);
        pull(&mut rt, &tag).expect("first pull");
        let old = image(&mut rt, &tag).expect("old").id;
        let second = rt.registry_push(&tag);
        assert_ne!(first, second);
        assert_eq!(image(&mut rt, &tag).expect("still old locally").id, old, "the local tag moves only on pull");
        let progress = pull(&mut rt, &tag).expect("second pull");
        assert_eq!(progress.last(), Some(&format!("Status: Downloaded newer image for {tag}")));
        let new = image(&mut rt, &tag).expect("new");
        assert_ne!(new.id, old);
        assert_eq!(new.tags, vec![tag.clone()]);
        let old_info = image(&mut rt, &old).expect("old by id");
        assert!(old_info.tags.is_empty(), "{:?}", old_info.tags);
        assert_eq!(image(&mut rt, &format!("{REG}@{first}")).expect("old by digest").id, old);
        assert_eq!(image(&mut rt, &format!("{REG}@{second}")).expect("new by digest").id, new.id);
    }

    #[test]
    fn pushing_a_local_image_keeps_its_id_and_tags_it() {
        let mut rt = SimRuntime::new(1);
        rt.add_image("drydock-test/busybox");
        let id = image(&mut rt, "drydock-test/busybox").expect("local").id;
        let remote = "127.0.0.1:5000/drydock-test/busybox:latest";
        let digest = rt.registry_push_image("drydock-test/busybox", remote).expect("pushed");
        assert_eq!(rt.registry_lookup(remote), Some((digest.clone(), id.clone())));
        let info = image(&mut rt, remote).expect("tagged locally");
        assert_eq!((info.id.as_str(), info.tags.len()), (id.as_str(), 2));
        let progress = pull(&mut rt, remote).expect("pull");
        assert_eq!(progress.last(), Some(&format!("Status: Image is up to date for {remote}")));
        assert_eq!(rt.registry_push_image("absent", remote), None);
        let other = "127.0.0.1:5000/drydock-test/copy:1";
        assert_eq!(rt.registry_tag(remote, other), Some(digest), "same content, same manifest");
    }

    /// A container (created, or started) from a freshly pulled `REG:1`.
    fn used(running: bool) -> (SimRuntime, String, String) {
        let mut rt = SimRuntime::new(1);
        let tag = format!("{REG}:1");
        rt.registry_push(&tag);
        pull(&mut rt, &tag).expect("pull");
        let container = id_of(rt.execute(&create("c", &tag)));
        if running {
            rt.execute(&RuntimeRequest::StartContainer { id: container.clone() }).expect("start");
        }
        let id = image(&mut rt, &tag).expect("pulled").id;
        (rt, id, container)
    }

    fn conflict(r: RuntimeResult) -> String {
        match r {
            Err(RuntimeError::Conflict(m)) => m,
            other => panic!("expected Conflict, got {other:?}"),
        }
    }

    #[test]
    fn remove_image_while_a_container_uses_it() {
        // What Docker 20.10 answers (checked with the daemon; see the conformance suite).
        let tag = format!("{REG}:1");
        for running in [false, true] {
            let (mut rt, id, container) = used(running);
            let m = conflict(rmi(&mut rt, &tag, false));
            assert!(m.contains("(must force)") && m.contains(&container[..12]), "{m}");
            let m = conflict(rmi(&mut rt, &id, false));
            let how = if running {
                "(cannot be forced) - image is being used by running container"
            } else {
                "(must be forced) - image is being used by stopped container"
            };
            assert!(m.contains(how), "{m}");
            assert_eq!(image(&mut rt, &tag).expect("untouched").id, id);
        }
        // By id with force: refused while running, done when stopped (the container stays).
        let (mut rt, id, container) = used(true);
        let m = conflict(rmi(&mut rt, &id, true));
        assert!(m.contains("cannot be forced"), "{m}");
        let (mut rt2, id2, container2) = used(false);
        rmi(&mut rt2, &id2, true).expect("forced");
        assert!(image(&mut rt2, &id2).is_err(), "deleted");
        assert!(rt2.container(&container2).is_some(), "the container stays");
        // By tag with force while running: only untagged; the image stays, by id.
        rmi(&mut rt, &tag, true).expect("untagged");
        assert!(matches!(image(&mut rt, &tag), Err(RuntimeError::NotFound(_))));
        assert!(image(&mut rt, &id).expect("kept").tags.is_empty());
        assert_eq!(rt.container(&container).map(|c| c.state), Some(ContainerState::Running));
        // By tag with force while stopped: deleted.
        let (mut rt, id, _) = used(false);
        rmi(&mut rt, &tag, true).expect("removed");
        assert!(image(&mut rt, &id).is_err(), "deleted");
    }

    #[test]
    fn remove_unused_and_missing_images() {
        let mut rt = SimRuntime::new(1);
        let tag = format!("{REG}:1");
        let digest = rt.registry_push(&tag);
        pull(&mut rt, &tag).expect("pull");
        let id = image(&mut rt, &tag).expect("pulled").id;
        rmi(&mut rt, "127.0.0.1:5000/team/app:1", false).expect("removed");
        for reference in [tag.clone(), id.clone(), format!("{REG}@{digest}")] {
            assert!(matches!(image(&mut rt, &reference), Err(RuntimeError::NotFound(_))), "{reference}");
        }
        match rmi(&mut rt, &tag, true) {
            Err(RuntimeError::NotFound(m)) => assert_eq!(m, format!("No such image: {tag}")),
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(rmi(&mut rt, "busybox", false), Err(RuntimeError::NotFound(m)) if m == "No such image: busybox:latest")
        );
        // By id prefix.
        pull(&mut rt, &tag).expect("pull again");
        rmi(&mut rt, &id[7..19], false).expect("by id prefix");
        assert!(!rt.has_image(&id));
    }

    #[test]
    fn remove_one_of_two_tags_only_untags() {
        let mut rt = SimRuntime::new(1);
        let (a, b) = (format!("{REG}:a"), format!("{REG}:b"));
        rt.registry_push(&a);
        rt.registry_tag(&a, &b).expect("tagged");
        pull(&mut rt, &a).expect("a");
        pull(&mut rt, &b).expect("b");
        let id = image(&mut rt, &a).expect("a").id;
        assert_eq!(image(&mut rt, &b).expect("b").id, id);
        let running = id_of(rt.execute(&create("c", &a)));
        rt.execute(&RuntimeRequest::StartContainer { id: running.clone() }).expect("start");
        rmi(&mut rt, &a, false).expect("untagged although a running container uses the image");
        assert_eq!(image(&mut rt, &id).expect("kept").tags, vec![b.clone()]);
        let m = conflict(rmi(&mut rt, &b, false));
        assert!(m.contains("must force"), "the last tag: {m}");
        rt.execute(&RuntimeRequest::RemoveContainer { id: running, force: true }).expect("rm");
        rt.execute(&RuntimeRequest::PullImage { reference: a.clone() }).expect("tag a again");
        let m = conflict(rmi(&mut rt, &id, false));
        assert!(m.contains("(must be forced) - image is referenced in multiple repositories"), "{m}");
        rmi(&mut rt, &id, true).expect("by id with force: every tag goes");
        assert!(!rt.has_image(&a) && !rt.has_image(&b) && !rt.has_image(&id));
    }

    #[test]
    fn a_container_pins_the_image_id_not_the_tag() {
        let (mut rt, old, container) = used(false);
        let tag = format!("{REG}:1");
        rt.registry_push(&tag);
        pull(&mut rt, &tag).expect("moved");
        rmi(&mut rt, &tag, false).expect("the new image is unused");
        let m = conflict(rmi(&mut rt, &old, false));
        assert!(m.contains(&format!("stopped container {}", &container[..12])), "{m}");
        assert_eq!(rt.container(&container).map(|c| c.image.clone()), Some(tag), "the image as given at create");
    }
}
