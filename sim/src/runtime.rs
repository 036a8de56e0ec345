//! The simulated container runtime: a model of Docker's observable contract.
//!
//! What it promises is the engine's runtime contract (`drydock_engine::runtime`): unique names,
//! `NotFound` for anything missing, `Conflict` for a taken name and for removing a running
//! container without force, created -> running -> exited, label filters, image presence. Its
//! fidelity is checked by running the same conformance cases against real Docker.
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
use std::collections::BTreeMap;

/// Exit code of a container stopped by `stop` (SIGKILL after the grace period, as for a `sleep`
/// that ignores SIGTERM).
pub const STOPPED_EXIT_CODE: i64 = 137;

/// The command images get when none is given (`docker import -c 'CMD ...'`).
pub const DEFAULT_IMAGE_COMMAND: [&str; 2] = ["sleep", "3600"];

#[derive(Clone, Debug)]
struct SimImage {
    info: ImageInfo,
    command: Vec<String>,
}

#[derive(Clone, Debug, Default)]
pub struct SimRuntime {
    containers: BTreeMap<String, ContainerInfo>,
    commands: BTreeMap<String, Vec<String>>,
    names: BTreeMap<String, String>,
    /// normalized reference -> image.
    images: BTreeMap<String, SimImage>,
    events: Vec<RuntimeEvent>,
    now: WallTime,
    ids: u64,
    seed: u64,
    /// Containers ever created, for reports.
    pub creates: u64,
}

impl SimRuntime {
    /// A runtime whose container ids are derived from `seed`.
    pub fn new(seed: u64) -> Self {
        SimRuntime { seed, ..SimRuntime::default() }
    }

    /// Set the wall clock that stamps events.
    pub fn set_now(&mut self, now: WallTime) {
        self.now = now;
    }

    /// Make an image present (as `docker load` or `docker import` would), with the default command.
    pub fn add_image(&mut self, reference: &str) {
        let normalized = normalize_image_reference(reference);
        let id = format!("sha256:{}", hex::encode(Sha256::digest(normalized.as_bytes())));
        let info = ImageInfo { id, tags: vec![familiar_image_reference(reference)] };
        let command = DEFAULT_IMAGE_COMMAND.iter().map(|s| s.to_string()).collect();
        self.images.insert(normalized, SimImage { info, command });
    }

    pub fn has_image(&self, reference: &str) -> bool {
        self.image(reference).is_some()
    }

    pub fn containers(&self) -> impl Iterator<Item = &ContainerInfo> {
        self.containers.values()
    }

    pub fn container(&self, id_or_name: &str) -> Option<&ContainerInfo> {
        self.resolve(id_or_name).ok().and_then(|id| self.containers.get(&id))
    }

    /// Insert a container as-is (tests, external actors).
    pub fn insert(&mut self, info: ContainerInfo) {
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
                let Some(image) = self.image(&create.image) else {
                    return Err(RuntimeError::NotFound(format!("No such image: {}", create.image)));
                };
                let command = if create.command.is_empty() { image.command.clone() } else { create.command.clone() };
                if let Some(existing) = self.names.get(&create.name) {
                    return Err(RuntimeError::Conflict(format!(
                        "Conflict. The container name \"/{}\" is already in use by container \"{existing}\". You have to remove (or rename) that container to be able to reuse that name.",
                        create.name
                    )));
                }
                let id = self.next_id();
                self.creates += 1;
                self.commands.insert(id.clone(), command);
                self.insert(ContainerInfo {
                    id: id.clone(),
                    name: create.name.clone(),
                    image: create.image.clone(),
                    labels: create.labels.clone(),
                    state: ContainerState::Created,
                    exit_code: None,
                });
                self.event(&id, EventAction::Create);
                Ok(RuntimeReply::Created { id })
            }
            RuntimeRequest::StartContainer { id } => {
                let id = self.resolve(id)?;
                if self.containers.get(&id).is_some_and(|c| c.state == ContainerState::Running) {
                    return Ok(RuntimeReply::Done);
                }
                let exits = self.commands.get(&id).and_then(|c| exits_at_once(c));
                if let Some(c) = self.containers.get_mut(&id) {
                    c.state = ContainerState::Running;
                    c.exit_code = None;
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
                .image(reference)
                .map(|i| RuntimeReply::Image(i.info.clone()))
                .ok_or_else(|| RuntimeError::NotFound(format!("No such image: {reference}"))),
            RuntimeRequest::PullImage { reference } => Err(RuntimeError::NotFound(format!(
                "pull access denied for {reference}: no registry (not modelled yet)"
            ))),
            RuntimeRequest::RemoveImage { reference, .. } => {
                let normalized = normalize_image_reference(reference);
                self.images
                    .remove(&normalized)
                    .map(|_| RuntimeReply::Done)
                    .ok_or_else(|| RuntimeError::NotFound(format!("No such image: {reference}")))
            }
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

    /// Remove a container behind the engine's back (`docker rm -f`).
    pub fn remove_externally(&mut self, id_or_name: &str) -> bool {
        self.execute(&RuntimeRequest::RemoveContainer { id: id_or_name.to_string(), force: true }).is_ok()
    }

    fn image(&self, reference: &str) -> Option<&SimImage> {
        self.images.get(&normalize_image_reference(reference)).or_else(|| {
            let id = reference.strip_prefix("sha256:").unwrap_or(reference);
            self.images.values().find(|i| id.len() >= 12 && i.info.id.trim_start_matches("sha256:").starts_with(id))
        })
    }

    fn exit(&mut self, id: &str, code: i64) {
        if let Some(c) = self.containers.get_mut(id) {
            c.state = ContainerState::Exited;
            c.exit_code = Some(code);
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

/// The exit code of a command that ends as soon as it starts: `true`, `false`,
/// `sh -c 'exit N'`; `None` for anything that keeps running.
fn exits_at_once(command: &[String]) -> Option<i64> {
    match command {
        [c] if c == "true" => Some(0),
        [c] if c == "false" => Some(1),
        [sh, c, script] if (sh == "sh" || sh == "/bin/sh") && c == "-c" => {
            let code = script.trim().strip_prefix("exit")?.trim();
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
}
