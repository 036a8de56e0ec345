//! Containers: one record per container, the name index, the state machine
//! (created -> running -> exited) and the event log.

use super::SimRuntime;
use drydock_engine::WallTime;
use drydock_engine::api::container::{Mount, PortMapping};
use drydock_engine::api::is_runtime_name;
use drydock_engine::runtime::{
    ContainerCreate, ContainerInfo, ContainerState, EventAction, PublishedPort, RuntimeError, RuntimeEvent,
    RuntimeReply, RuntimeResult,
};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Exit code of a container stopped by `stop` (SIGKILL after the grace period, as for a `sleep`
/// that ignores SIGTERM).
pub const STOPPED_EXIT_CODE: i64 = 137;

/// A container: what `inspect` shows, and what it was created with.
#[derive(Clone, Debug)]
pub(super) struct SimContainer {
    info: ContainerInfo,
    /// The command it runs: the create's, else its image's default. Empty for an inserted
    /// container, which then never exits by itself.
    command: Vec<String>,
    mounts: Vec<Mount>,
    /// The ports it publishes; those without a host port get one at each start.
    requested_ports: Vec<PortMapping>,
    /// The id of the image it was created from; `None` for a container inserted with an image
    /// that is not present.
    image_id: Option<String>,
}

impl SimRuntime {
    pub fn containers(&self) -> impl Iterator<Item = &ContainerInfo> {
        self.containers.values().map(|c| &c.info)
    }

    pub fn container(&self, id_or_name: &str) -> Option<&ContainerInfo> {
        self.resolve(id_or_name).ok().and_then(|id| self.containers.get(&id)).map(|c| &c.info)
    }

    /// Insert a container as-is (tests, external actors). It uses its image if that is present.
    /// A container of the same id is replaced, keeping what it was created with.
    pub fn insert(&mut self, info: ContainerInfo) {
        let image_id = self.images.resolve(&info.image).map(|image| image.id.clone());
        self.names.insert(info.name.clone(), info.id.clone());
        match self.containers.get_mut(&info.id) {
            Some(existing) => {
                if existing.info.name != info.name && self.names.get(&existing.info.name) == Some(&info.id) {
                    self.names.remove(&existing.info.name);
                }
                if image_id.is_some() {
                    existing.image_id = image_id;
                }
                existing.info = info;
            }
            None => {
                let record = SimContainer {
                    info,
                    command: Vec::new(),
                    mounts: Vec::new(),
                    requested_ports: Vec::new(),
                    image_id,
                };
                self.containers.insert(record.info.id.clone(), record);
            }
        }
    }

    /// The daemon restarts (no live-restore): every running container is stopped, as `dockerd`
    /// does on shutdown. Returns how many stopped. Their `die` events are recorded, but whoever
    /// was streaming events loses the stream (the world drops them).
    pub fn restart_daemon(&mut self) -> usize {
        let running: Vec<String> = self
            .containers
            .values()
            .filter(|c| c.info.state == ContainerState::Running)
            .map(|c| c.info.id.clone())
            .collect();
        for id in &running {
            self.exit(id, STOPPED_EXIT_CODE);
        }
        running.len()
    }

    /// Remove a container behind the engine's back (`docker rm -f`).
    pub fn remove_externally(&mut self, id_or_name: &str) -> bool {
        self.remove_container(id_or_name, true).is_ok()
    }

    pub(super) fn create_container(&mut self, create: &ContainerCreate) -> RuntimeResult {
        if !is_runtime_name(&create.name) {
            return Err(RuntimeError::Transient(format!(
                "400: Invalid container name ({}), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed",
                create.name
            )));
        }
        let Some(image) = self.images.resolve(&create.image) else {
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
        let info = ContainerInfo {
            ports: Vec::new(),
            id: id.clone(),
            name: create.name.clone(),
            image: create.image.clone(),
            labels: create.labels.clone(),
            state: ContainerState::Created,
            exit_code: None,
            error: None,
        };
        let record = SimContainer {
            info,
            command,
            mounts: create.mounts.clone(),
            requested_ports: create.ports.clone(),
            image_id: Some(image_id),
        };
        self.names.insert(create.name.clone(), id.clone());
        self.containers.insert(id.clone(), record);
        self.event(&id, EventAction::Create);
        Ok(RuntimeReply::Created { id })
    }

    pub(super) fn start_container(&mut self, id_or_name: &str) -> RuntimeResult {
        let id = self.resolve(id_or_name)?;
        let Some(container) = self.containers.get_mut(&id) else { return Err(not_found(&id)) };
        if container.info.state == ContainerState::Running {
            return Ok(RuntimeReply::Done);
        }
        let exits = exits_at_once(&container.command, &container.mounts);
        container.info.ports = assign_host_ports(&container.requested_ports, &mut self.next_host_port);
        container.info.state = ContainerState::Running;
        container.info.exit_code = None;
        self.event(&id, EventAction::Start);
        if let Some(code) = exits {
            self.exit(&id, code);
        }
        Ok(RuntimeReply::Done)
    }

    pub(super) fn stop_container(&mut self, id_or_name: &str) -> RuntimeResult {
        let id = self.resolve(id_or_name)?;
        if self.is_running(&id) {
            self.exit(&id, STOPPED_EXIT_CODE);
        }
        Ok(RuntimeReply::Done)
    }

    pub(super) fn remove_container(&mut self, id_or_name: &str, force: bool) -> RuntimeResult {
        let id = self.resolve(id_or_name)?;
        let running = self.is_running(&id);
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
            self.names.remove(&removed.info.name);
        }
        Ok(RuntimeReply::Done)
    }

    pub(super) fn inspect_container(&self, id_or_name: &str) -> RuntimeResult {
        let id = self.resolve(id_or_name)?;
        self.containers.get(&id).map(|c| RuntimeReply::Container(c.info.clone())).ok_or_else(|| not_found(&id))
    }

    pub(super) fn list_containers(&self, labels: &BTreeMap<String, String>) -> RuntimeReply {
        RuntimeReply::Containers(
            self.containers().filter(|c| labels.iter().all(|(k, v)| c.labels.get(k) == Some(v))).cloned().collect(),
        )
    }

    pub(super) fn container_events(&self, id_or_name: &str, since: WallTime) -> RuntimeReply {
        let id = self.resolve(id_or_name).unwrap_or_else(|_| id_or_name.to_string());
        RuntimeReply::Events(self.events.iter().filter(|e| e.container_id == id && e.time >= since).cloned().collect())
    }

    /// The id of the first container (by id) created from image `image_id` that `which` accepts.
    pub(super) fn first_container_using(
        &self,
        image_id: &str,
        which: impl Fn(&ContainerInfo) -> bool,
    ) -> Option<String> {
        self.containers
            .values()
            .filter(|c| c.image_id.as_deref() == Some(image_id))
            .map(|c| &c.info)
            .find(|c| which(c))
            .map(|c| c.id.clone())
    }

    fn is_running(&self, id: &str) -> bool {
        self.containers.get(id).is_some_and(|c| c.info.state == ContainerState::Running)
    }

    fn exit(&mut self, id: &str, code: i64) {
        if let Some(c) = self.containers.get_mut(id) {
            c.info.state = ContainerState::Exited;
            c.info.exit_code = Some(code);
            c.info.ports.clear();
        }
        self.event(id, EventAction::Die { exit_code: Some(code) });
    }

    fn event(&mut self, id: &str, action: EventAction) {
        let labels = self.containers.get(id).map(|c| c.info.labels.clone()).unwrap_or_default();
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

/// Host ports for a container being started: the requested ones, or the next ephemeral port.
fn assign_host_ports(requested: &[PortMapping], next_host_port: &mut u16) -> Vec<PublishedPort> {
    let mut ports: Vec<PublishedPort> = requested
        .iter()
        .map(|p| {
            let host_port = p.host_port.unwrap_or_else(|| {
                *next_host_port = (*next_host_port).max(32_768).wrapping_add(1).max(32_769);
                *next_host_port
            });
            PublishedPort { container_port: p.container_port, protocol: p.protocol, host_port }
        })
        .collect();
    ports.sort();
    ports
}

/// The exit code of a command that ends as soon as it starts: `true`, `false`,
/// `sh -c 'exit N'`; `None` for anything that keeps running.
/// `sh -c 'test -d PATH'` succeeds for `/` and for the targets of the container's mounts (and
/// the directories above them): the only file system the model has.
fn exits_at_once(command: &[String], mounts: &[Mount]) -> Option<i64> {
    match command {
        [c] if c == "true" => Some(0),
        [c] if c == "false" => Some(1),
        [sh, c, script] if (sh == "sh" || sh == "/bin/sh") && c == "-c" => {
            let script = script.trim();
            if let Some(path) = script.strip_prefix("test -d ") {
                let path = path.trim().trim_end_matches('/');
                let exists = path.is_empty()
                    || mounts.iter().any(|m| m.target == path || m.target.starts_with(&format!("{path}/")));
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
    use super::super::test_support::{create, id_of};
    use super::*;
    use drydock_engine::runtime::RuntimeRequest;

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
    fn inserting_again_replaces_the_container_and_its_name() {
        let mut rt = SimRuntime::new(1);
        let info = |name: &str, state| ContainerInfo {
            id: "c1".into(),
            name: name.into(),
            image: "absent".into(),
            labels: BTreeMap::new(),
            state,
            exit_code: None,
            error: None,
            ports: Vec::new(),
        };
        rt.insert(info("a", ContainerState::Running));
        rt.insert(info("b", ContainerState::Exited));
        assert_eq!(rt.containers().count(), 1);
        assert!(rt.container("a").is_none(), "the old name is free again");
        assert_eq!(rt.container("b").map(|c| c.state), Some(ContainerState::Exited));
        assert!(rt.remove_externally("b"));
        assert!(rt.container("c1").is_none() && rt.containers().next().is_none());
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
