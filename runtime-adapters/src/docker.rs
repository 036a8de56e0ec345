//! The runtime contract over Docker's Engine API, through bollard.
//!
//! Error mapping: 404 -> `NotFound`, 409 -> `Conflict`, 304 -> success (start a running
//! container, stop a stopped one), timeouts and broken connections -> `Uncertain` (the request may
//! have been applied: the engine verifies), anything else -> `Transient` with the daemon's message.
//!
//! Works against anything that speaks Docker's API: the local socket, `DOCKER_HOST`, or Podman's
//! Docker-compatible socket through `DOCKER_HOST=unix:///run/podman/podman.sock`.

use crate::runtime::Runtime;
use bollard::Docker;
use bollard::errors::Error as BollardError;
use bollard::models::{ContainerCreateBody, ContainerInspectResponse, ContainerStateStatusEnum};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, EventsOptionsBuilder, ListContainersOptions, RemoveContainerOptionsBuilder,
    StopContainerOptionsBuilder,
};
use drydock_engine::WallTime;
use drydock_engine::api::names;
use drydock_engine::runtime::{
    ContainerCreate, ContainerInfo, ContainerState, EventAction, ImageInfo, RuntimeError, RuntimeEvent, RuntimeReply,
    RuntimeRequest, RuntimeResult,
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
        let body = ContainerCreateBody {
            image: Some(c.image),
            cmd: (!c.command.is_empty()).then_some(c.command),
            env: (!c.env.is_empty()).then(|| c.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
            labels: Some(c.labels.into_iter().collect()),
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
            RuntimeRequest::PullImage { reference } => {
                Err(RuntimeError::Transient(format!("pull of {reference}: not implemented yet")))
            }
            RuntimeRequest::RemoveImage { reference, .. } => {
                Err(RuntimeError::Transient(format!("remove of {reference}: not implemented yet")))
            }
        }
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
    Ok(ContainerInfo {
        id: response.id.unwrap_or_default(),
        name: response.name.unwrap_or_default().trim_start_matches('/').to_string(),
        image: config.image.unwrap_or_default(),
        labels: config.labels.unwrap_or_default().into_iter().collect(),
        state,
        exit_code,
    })
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
}
