//! The runtime contract over Docker's Engine API, through bollard.
//!
//! Error mapping: 404 -> `NotFound`, 409 -> `Conflict`, 304 -> success (start a running
//! container, stop a stopped one), timeouts and broken connections -> `Uncertain` (the request may
//! have been applied: the engine verifies), anything else -> `Transient` with the daemon's message.
//! A pull's errors may also arrive inside its progress stream: a missing manifest or repository
//! ("manifest unknown", "not found", "pull access denied") is `NotFound` there too.
//!
//! Works against anything that speaks Docker's API: the local socket, `DOCKER_HOST`, or Podman's
//! Docker-compatible socket through `DOCKER_HOST=unix:///run/podman/podman.sock`.

use crate::runtime::Runtime;
use bollard::Docker;
use bollard::errors::Error as BollardError;
use bollard::models::CreateImageInfo;
use bollard::models::{
    ContainerCreateBody, ContainerInspectResponse, ContainerStateStatusEnum, HostConfig, PortBinding,
};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, CreateImageOptionsBuilder, EventsOptionsBuilder, ListContainersOptions,
    RemoveContainerOptionsBuilder, RemoveImageOptionsBuilder, StopContainerOptionsBuilder,
};
use drydock_engine::WallTime;
use drydock_engine::api::container::{PortMapping, Protocol};
use drydock_engine::api::{names, normalize_image_reference};
use drydock_engine::runtime::{
    ContainerCreate, ContainerInfo, ContainerState, EventAction, ImageInfo, PublishedPort, RuntimeError, RuntimeEvent,
    RuntimeReply, RuntimeRequest, RuntimeResult,
};
use futures_util::StreamExt;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;
use tokio::sync::mpsc;

/// Why the Docker runtime could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum DockerError {
    #[error("cannot connect to the Docker daemon ({host}): {source}; is it running, and may this user use its socket?")]
    Connect { host: String, source: BollardError },
    #[error("the Docker daemon at {host} did not answer a version request: {source}")]
    Version { host: String, source: BollardError },
}

/// A Docker (or Docker-compatible) daemon.
#[derive(Clone, Debug)]
pub struct DockerRuntime {
    docker: Docker,
}

/// How long one API call may take before its outcome is treated as unknown.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

impl DockerRuntime {
    /// Connect through `DOCKER_HOST` (default: the local socket) and negotiate the API version
    /// before anything else, so an older daemon (Debian's speaks 1.41) is spoken to in its version.
    pub async fn connect() -> Result<Self, DockerError> {
        let host = std::env::var("DOCKER_HOST").unwrap_or_else(|_| "unix:///var/run/docker.sock".into());
        let docker = Docker::connect_with_defaults()
            .map_err(|source| DockerError::Connect { host: host.clone(), source })?
            .with_timeout(REQUEST_TIMEOUT);
        let docker = docker.negotiate_version().await.map_err(|source| DockerError::Version { host, source })?;
        Ok(DockerRuntime { docker })
    }

    /// The underlying client, for what the contract does not cover (tests, image import).
    pub fn client(&self) -> &Docker {
        &self.docker
    }

    async fn create(&self, c: ContainerCreate) -> RuntimeResult {
        let options = CreateContainerOptionsBuilder::default().name(&c.name).build();
        let port_key = |p: &PortMapping| format!("{}/{}", p.container_port, protocol_name(p.protocol));
        let mut bindings: HashMap<String, Option<Vec<PortBinding>>> = HashMap::new();
        for p in &c.ports {
            let binding = PortBinding { host_ip: p.host_ip.clone(), host_port: p.host_port.map(|h| h.to_string()) };
            bindings.entry(port_key(p)).or_insert_with(|| Some(Vec::new())).get_or_insert_with(Vec::new).push(binding);
        }
        let binds: Vec<String> = c
            .mounts
            .iter()
            .map(|m| format!("{}:{}{}", m.source, m.target, if m.read_only { ":ro" } else { "" }))
            .collect();
        let host_config = HostConfig {
            port_bindings: (!bindings.is_empty()).then_some(bindings),
            binds: (!binds.is_empty()).then_some(binds),
            ..Default::default()
        };
        let body = ContainerCreateBody {
            image: Some(c.image),
            cmd: (!c.command.is_empty()).then_some(c.command),
            env: (!c.env.is_empty()).then(|| c.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
            labels: Some(c.labels.into_iter().collect()),
            exposed_ports: (!c.ports.is_empty()).then(|| c.ports.iter().map(port_key).collect()),
            host_config: Some(host_config),
            ..Default::default()
        };
        let created = self.docker.create_container(Some(options), body).await.map_err(map_error)?;
        Ok(RuntimeReply::Created { id: created.id })
    }

    async fn inspect(&self, id: &str) -> Result<ContainerInfo, RuntimeError> {
        let response = self.docker.inspect_container(id, None).await.map_err(map_error)?;
        container_info(response)
    }

    async fn list(&self, labels: BTreeMap<String, String>) -> RuntimeResult {
        let filters: HashMap<String, Vec<String>> =
            HashMap::from([("label".to_string(), labels.iter().map(|(k, v)| format!("{k}={v}")).collect())]);
        let options = ListContainersOptions { all: true, filters: Some(filters), ..Default::default() };
        let summaries = self.docker.list_containers(Some(options)).await.map_err(map_error)?;
        // The list lacks exit codes: inspect each (a label-filtered list is short).
        let mut containers = Vec::with_capacity(summaries.len());
        for id in summaries.into_iter().filter_map(|s| s.id) {
            match self.inspect(&id).await {
                Ok(info) => containers.push(info),
                Err(RuntimeError::NotFound(_)) => {} // removed since the list
                Err(e) => return Err(e),
            }
        }
        containers.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(RuntimeReply::Containers(containers))
    }

    async fn inspect_image(&self, reference: &str) -> RuntimeResult {
        let image = self.docker.inspect_image(reference).await.map_err(map_error)?;
        Ok(RuntimeReply::Image(ImageInfo {
            id: image.id.unwrap_or_default(),
            tags: image.repo_tags.unwrap_or_default(),
        }))
    }

    /// Pull through `POST /images/create?fromImage=...`, collecting the progress stream as lines.
    /// The reference is normalized first so it always carries a tag or a digest: a bare name
    /// would make the daemon pull every tag of the repository.
    async fn pull(&self, reference: &str) -> RuntimeResult {
        let from = normalize_image_reference(reference);
        let options = CreateImageOptionsBuilder::default().from_image(&from).build();
        let mut stream = self.docker.create_image(Some(options), None, None);
        let mut lines = Vec::new();
        while let Some(message) = stream.next().await {
            add_progress(&mut lines, message.map_err(map_pull_error)?);
        }
        Ok(RuntimeReply::Pulled { progress: lines.into_iter().map(|l| l.text).collect() })
    }

    async fn events(&self, id: &str, since: WallTime) -> RuntimeResult {
        let now = crate::clock::wall_now();
        let seconds = |t: WallTime| format!("{}.{:03}", t.0 / 1000, t.0 % 1000);
        let filters = HashMap::from([("container", vec![id]), ("type", vec!["container"])]);
        let options =
            EventsOptionsBuilder::default().since(&seconds(since)).until(&seconds(now)).filters(&filters).build();
        let mut stream = self.docker.events(Some(options));
        let mut events = Vec::new();
        while let Some(message) = stream.next().await {
            events.extend(runtime_event(message.map_err(map_error)?));
        }
        Ok(RuntimeReply::Events(events))
    }

    /// Follow the daemon's container events for containers drydock created, reconnecting after
    /// a broken stream. Events are hints: the engine re-inspects, so a gap costs only latency.
    fn follow_events(&self) -> mpsc::UnboundedReceiver<RuntimeEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        let docker = self.docker.clone();
        tokio::spawn(async move {
            let filters = HashMap::from([("type", vec!["container"]), ("label", vec![names::LABEL_OWNER_UID])]);
            loop {
                let options = EventsOptionsBuilder::default().filters(&filters).build();
                let mut stream = docker.events(Some(options));
                while let Some(message) = stream.next().await {
                    match message {
                        Ok(message) => {
                            if let Some(event) = runtime_event(message)
                                && tx.send(event).is_err()
                            {
                                return;
                            }
                        }
                        Err(error) => {
                            tracing::warn!(%error, "docker event stream broke; reconnecting");
                            break;
                        }
                    }
                }
                if tx.is_closed() {
                    return;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        rx
    }
}

/// Docker attributes that are not container labels.
const NON_LABEL_ATTRIBUTES: [&str; 5] = ["exitCode", "image", "name", "signal", "execDuration"];

fn runtime_event(message: bollard::models::EventMessage) -> Option<RuntimeEvent> {
    let actor = message.actor.unwrap_or_default();
    let attributes = actor.attributes.unwrap_or_default();
    let action = match message.action.as_deref() {
        Some("create") => EventAction::Create,
        Some("start") => EventAction::Start,
        Some("die") => EventAction::Die { exit_code: attributes.get("exitCode").and_then(|c| c.parse().ok()) },
        Some("destroy") => EventAction::Destroy,
        _ => return None,
    };
    let millis = message.time_nano.map_or(message.time.unwrap_or(0) * 1000, |n| n / 1_000_000);
    let labels =
        attributes.into_iter().filter(|(k, _)| !NON_LABEL_ATTRIBUTES.contains(&k.as_str())).collect::<BTreeMap<_, _>>();
    Some(RuntimeEvent {
        container_id: actor.id.unwrap_or_default(),
        action,
        time: WallTime(u64::try_from(millis).unwrap_or(0)),
        labels,
    })
}

impl Runtime for DockerRuntime {
    fn events(&self) -> Option<mpsc::UnboundedReceiver<RuntimeEvent>> {
        Some(self.follow_events())
    }

    async fn execute(&self, request: RuntimeRequest) -> RuntimeResult {
        let d = &self.docker;
        match request {
            RuntimeRequest::CreateContainer(c) => self.create(c).await,
            RuntimeRequest::StartContainer { id } => {
                d.start_container(&id, None).await.map_err(map_error)?;
                Ok(RuntimeReply::Done)
            }
            RuntimeRequest::StopContainer { id, timeout_secs } => {
                let t = i32::try_from(timeout_secs).unwrap_or(i32::MAX);
                d.stop_container(&id, Some(StopContainerOptionsBuilder::default().t(t).build()))
                    .await
                    .map_err(map_error)?;
                Ok(RuntimeReply::Done)
            }
            RuntimeRequest::RemoveContainer { id, force } => {
                let options = RemoveContainerOptionsBuilder::default().force(force).build();
                d.remove_container(&id, Some(options)).await.map_err(map_error)?;
                Ok(RuntimeReply::Done)
            }
            RuntimeRequest::InspectContainer { id } => self.inspect(&id).await.map(RuntimeReply::Container),
            RuntimeRequest::ListContainers { labels } => self.list(labels).await,
            RuntimeRequest::InspectImage { reference } => self.inspect_image(&reference).await,
            RuntimeRequest::ContainerEvents { id, since } => self.events(&id, since).await,
            RuntimeRequest::PullImage { reference } => self.pull(&reference).await,
            RuntimeRequest::RemoveImage { reference, force } => {
                let options = RemoveImageOptionsBuilder::default().force(force).build();
                d.remove_image(&reference, Some(options), None).await.map_err(map_error)?;
                Ok(RuntimeReply::Done)
            }
        }
    }
}

fn protocol_name(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Tcp => "tcp",
        Protocol::Udp => "udp",
    }
}

fn container_info(response: ContainerInspectResponse) -> Result<ContainerInfo, RuntimeError> {
    let config = response.config.unwrap_or_default();
    let state = response.state.unwrap_or_default();
    let (state, exit_code) = match state.status {
        Some(ContainerStateStatusEnum::CREATED) => (ContainerState::Created, None),
        Some(
            ContainerStateStatusEnum::RUNNING | ContainerStateStatusEnum::PAUSED | ContainerStateStatusEnum::RESTARTING,
        ) => (ContainerState::Running, None),
        Some(
            ContainerStateStatusEnum::EXITED | ContainerStateStatusEnum::DEAD | ContainerStateStatusEnum::REMOVING,
        ) => (ContainerState::Exited, state.exit_code),
        other => return Err(RuntimeError::Transient(format!("unexpected container status {other:?}"))),
    };
    let mut ports: Vec<PublishedPort> = response
        .network_settings
        .and_then(|n| n.ports)
        .unwrap_or_default()
        .into_iter()
        .filter(|_| state == ContainerState::Running)
        .flat_map(|(key, bindings)| {
            let (port, protocol) = key.split_once('/').unwrap_or((key.as_str(), "tcp"));
            let container_port: u16 = port.parse().unwrap_or(0);
            let protocol = if protocol == "udp" { Protocol::Udp } else { Protocol::Tcp };
            bindings
                .unwrap_or_default()
                .into_iter()
                .filter_map(move |b| {
                    Some(PublishedPort { container_port, protocol, host_port: b.host_port?.parse().ok()? })
                })
                .collect::<Vec<_>>()
        })
        .collect();
    // Docker lists a binding once per address family (0.0.0.0 and ::): one per port is enough.
    ports.sort();
    ports.dedup();
    Ok(ContainerInfo {
        ports,
        id: response.id.unwrap_or_default(),
        name: response.name.unwrap_or_default().trim_start_matches('/').to_string(),
        image: config.image.unwrap_or_default(),
        labels: config.labels.unwrap_or_default().into_iter().collect(),
        state,
        exit_code,
        error: None,
    })
}

/// One progress message as the line `docker pull` prints (`latest: Pulling from library/busybox`,
/// `0fc83a29e590: Downloading 1024/2065920`, `Digest: sha256:...`). A message repeating the
/// previous line's id and status (a download advancing) replaces it, so a big pull stays short.
fn add_progress(lines: &mut Vec<ProgressLine>, info: CreateImageInfo) {
    let Some(status) = info.status.filter(|s| !s.is_empty()) else { return };
    let mut text = match &info.id {
        Some(id) if !id.is_empty() => format!("{id}: {status}"),
        _ => status.clone(),
    };
    if let Some(detail) = info.progress_detail
        && let (Some(current), Some(total)) = (detail.current, detail.total)
        && total > 0
    {
        text = format!("{text} {current}/{total}");
    }
    match lines.last_mut() {
        Some(last) if last.id == info.id && last.status == status => last.text = text,
        _ => lines.push(ProgressLine { id: info.id, status, text }),
    }
}

struct ProgressLine {
    id: Option<String>,
    status: String,
    text: String,
}

/// A pull's error, from the response or from inside its stream: a missing manifest, tag or
/// repository is `NotFound`, whatever status the daemon chose for it.
fn map_pull_error(error: BollardError) -> RuntimeError {
    let missing = |message: &str| {
        let m = message.to_ascii_lowercase();
        ["manifest unknown", "not found", "pull access denied", "repository does not exist"]
            .iter()
            .any(|s| m.contains(s))
    };
    match error {
        BollardError::DockerStreamError { error } if missing(&error) => RuntimeError::NotFound(error),
        BollardError::DockerStreamError { error } => RuntimeError::Transient(error),
        BollardError::DockerResponseServerError { status_code, message } if status_code != 409 && missing(&message) => {
            RuntimeError::NotFound(message)
        }
        other => map_error(other),
    }
}

/// Docker's answer as the engine's error kinds.
pub fn map_error(error: BollardError) -> RuntimeError {
    match error {
        BollardError::DockerResponseServerError { status_code: 404, message } => RuntimeError::NotFound(message),
        BollardError::DockerResponseServerError { status_code: 409, message } => RuntimeError::Conflict(message),
        BollardError::DockerResponseServerError { status_code, message } => {
            RuntimeError::Transient(format!("{status_code}: {message}"))
        }
        BollardError::RequestTimeoutError
        | BollardError::IOError { .. }
        | BollardError::HyperResponseError { .. }
        | BollardError::HttpClientError { .. } => RuntimeError::Uncertain(error.to_string()),
        other => RuntimeError::Transient(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_mapping() {
        let server = |status_code: u16| BollardError::DockerResponseServerError { status_code, message: "m".into() };
        assert_eq!(map_error(server(404)), RuntimeError::NotFound("m".into()));
        assert_eq!(map_error(server(409)), RuntimeError::Conflict("m".into()));
        assert_eq!(map_error(server(500)), RuntimeError::Transient("500: m".into()));
        assert!(matches!(map_error(BollardError::RequestTimeoutError), RuntimeError::Uncertain(_)));
        let io = BollardError::IOError { err: std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset") };
        assert!(matches!(map_error(io), RuntimeError::Uncertain(_)));
    }

    #[test]
    fn pull_error_mapping() {
        let stream = |error: &str| BollardError::DockerStreamError { error: error.into() };
        let server = |status_code: u16, message: &str| BollardError::DockerResponseServerError {
            status_code,
            message: message.into(),
        };
        let unknown = "manifest for 127.0.0.1:5000/a:1 not found: manifest unknown: manifest unknown";
        assert!(matches!(map_pull_error(server(404, unknown)), RuntimeError::NotFound(_)));
        assert!(matches!(map_pull_error(server(500, unknown)), RuntimeError::NotFound(_)));
        assert!(matches!(map_pull_error(stream(unknown)), RuntimeError::NotFound(_)));
        let denied = "pull access denied for nosuch, repository does not exist or may require 'docker login'";
        assert!(matches!(map_pull_error(stream(denied)), RuntimeError::NotFound(_)));
        let refused = "Get \"http://127.0.0.1:5999/v2/\": dial tcp 127.0.0.1:5999: connect: connection refused";
        assert_eq!(map_pull_error(server(500, refused)), RuntimeError::Transient(format!("500: {refused}")));
        assert_eq!(map_pull_error(stream("unexpected EOF")), RuntimeError::Transient("unexpected EOF".into()));
        assert!(matches!(map_pull_error(BollardError::RequestTimeoutError), RuntimeError::Uncertain(_)));
    }

    #[test]
    fn pull_progress_lines() {
        let info = |id: Option<&str>, status: &str, progress: Option<(i64, i64)>| CreateImageInfo {
            id: id.map(str::to_string),
            status: Some(status.into()),
            progress_detail: progress
                .map(|(current, total)| bollard::models::ProgressDetail { current: Some(current), total: Some(total) }),
            ..Default::default()
        };
        let mut lines = Vec::new();
        for message in [
            info(Some("latest"), "Pulling from library/busybox", None),
            info(Some("0fc83a29e590"), "Pulling fs layer", None),
            info(Some("0fc83a29e590"), "Downloading", Some((1, 10))),
            info(Some("0fc83a29e590"), "Downloading", Some((10, 10))),
            info(Some("0fc83a29e590"), "Pull complete", None),
            info(None, "Digest: sha256:66b6", None),
            info(None, "Status: Downloaded newer image for busybox:latest", None),
        ] {
            add_progress(&mut lines, message);
        }
        let text: Vec<String> = lines.into_iter().map(|l| l.text).collect();
        assert_eq!(
            text,
            [
                "latest: Pulling from library/busybox",
                "0fc83a29e590: Pulling fs layer",
                "0fc83a29e590: Downloading 10/10",
                "0fc83a29e590: Pull complete",
                "Digest: sha256:66b6",
                "Status: Downloaded newer image for busybox:latest",
            ]
        );
    }
}
