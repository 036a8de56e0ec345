//! The runtime contract over Docker's Engine API, through bollard.
//!
//! Docker's answers as the engine's error kinds ([`map_error`], [`map_pull_error`]), each
//! mapping for the Docker 20.10 (API 1.41) behaviour it encodes (the conformance suite pins each
//! against the daemon and the simulated runtime):
//!
//! | Docker answers | kind | because |
//! | --- | --- | --- |
//! | 304 | success | start of a running container, stop of a stopped one: already so |
//! | 400 | `Invalid` | Docker's invalid parameter: a create it refuses (name, env, image reference, duplicate mount point, volume name) or a start whose command runc cannot run (`executable file not found in $PATH`, exit 127): the same request can never succeed |
//! | 403 | `Invalid` | Docker refuses it as asked: a built-in network created or removed |
//! | 403 `has active endpoints`, `already exists in network` | `Conflict` | a network removed while a running container is attached; a running container connected twice |
//! | 404 | `NotFound` | no such container, image, network or volume (also a start whose network is gone) |
//! | 409 | `Conflict` | a name taken (a container's, a network's), a running container removed without force, a removal already in progress, a start of a container being removed, an image or volume in use |
//! | 500 `unable to start container process: exec: ...` | `Invalid` | runc could not run the command; 20.10 answers 400 when the error names the command, but an engine that does not translate it (an older Docker, Podman's API) answers 500: a missing executable does not appear later |
//! | 500 `invalid volume specification` | `Invalid` | a mount spec Docker cannot parse (relative target, target `/`, empty part): 20.10 answers 500, but it never succeeds |
//! | 500 `Multiple IDs found with provided prefix` | `Invalid` | an ambiguous id prefix names no one container: only a longer id can (the engine sends full ids) |
//! | 500 `invalid reference format` | `Invalid` | a build's tag outside the reference grammar |
//! | 500 `Error processing tar file` | `Invalid` | a copy into a container whose file system refuses one of its files (under a read-only mount, below a file, a full disk): the files before it were written, the same copy fails again |
//! | 500 `is not connected to` | `NotFound` | a disconnect of a container that is not on the network: there is nothing to detach |
//! | 500 `port is already allocated`, `address already in use` | `Transient` | a host port held by another container or a host process: it may be freed; the engine bounds how often it retries a start |
//! | other 5xx | `Transient` | the daemon failed this time |
//! | timeout, broken connection | `Uncertain` | the request may have been applied: the engine verifies |
//!
//! A pull's errors may also arrive inside its progress stream: a missing manifest or repository
//! ("manifest unknown", "not found", "pull access denied") is `NotFound`; a registry that cannot
//! be reached (`dial tcp ...: connection refused`, `no such host`, a timeout) is `Transient`
//! with Docker's text, never `NotFound`: nothing is known about the image.
//!
//! `container_info` reports a `created` (or `exited`) container whose start failed with its
//! exit code and Docker's `State.Error`, and `removing` as `Removing`.
//!
//! Networks, volumes, builds and copied files are in `resources` (its doc has their answers). A
//! create with networks makes the container on the first (Docker 20.10 refuses more than one
//! endpoint at create: "Container cannot be connected to network endpoints") and connects the
//! others before it answers; a connect that fails removes the container again and answers that
//! failure.
//!
//! Works against anything that speaks Docker's API: the local socket, `DOCKER_HOST`, or Podman's
//! Docker-compatible socket through `DOCKER_HOST=unix:///run/podman/podman.sock`.

mod log_frames;
mod resources;

use crate::runtime::{CaptureStream, CapturedLine, ProgressSink, Runtime, RuntimeNotice};
use bollard::Docker;
use bollard::container::LogOutput;
use bollard::errors::Error as BollardError;
use bollard::models::CreateImageInfo;
use bollard::models::{
    ContainerCreateBody, ContainerInspectResponse, ContainerStateStatusEnum, EndpointSettings, HostConfig,
    NetworkingConfig, PortBinding,
};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, CreateImageOptionsBuilder, EventsOptionsBuilder, ListContainersOptions,
    LogsOptionsBuilder, RemoveContainerOptionsBuilder, RemoveImageOptionsBuilder, StopContainerOptionsBuilder,
};
use drydock_engine::WallTime;
use drydock_engine::api::container::{PortMapping, Protocol};
use drydock_engine::api::{names, normalize_image_reference};
use drydock_engine::logs::Channel;
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

    /// Connect to the Docker API on the Unix socket at `path` (a proxy in front of the daemon, a
    /// rootless daemon), negotiating the version as [`DockerRuntime::connect`] does.
    pub async fn connect_unix(path: &std::path::Path) -> Result<Self, DockerError> {
        let host = format!("unix://{}", path.display());
        let docker = Docker::connect_with_unix(&host, REQUEST_TIMEOUT.as_secs(), bollard::API_DEFAULT_VERSION)
            .map_err(|source| DockerError::Connect { host: host.clone(), source })?;
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
        let (first, others) = match c.networks.split_first() {
            Some((first, others)) => (Some(first.clone()), others.to_vec()),
            None => (None, Vec::new()),
        };
        let host_config = HostConfig {
            port_bindings: (!bindings.is_empty()).then_some(bindings),
            binds: (!binds.is_empty()).then_some(binds),
            network_mode: first.as_ref().map(|n| n.name.clone()),
            ..Default::default()
        };
        let networking_config = first.map(|n| NetworkingConfig {
            endpoints_config: Some(HashMap::from([(
                n.name,
                EndpointSettings { aliases: (!n.aliases.is_empty()).then_some(n.aliases), ..Default::default() },
            )])),
        });
        let body = ContainerCreateBody {
            image: Some(c.image),
            cmd: (!c.command.is_empty()).then_some(c.command),
            env: (!c.env.is_empty()).then(|| c.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
            labels: Some(c.labels.into_iter().collect()),
            exposed_ports: (!c.ports.is_empty()).then(|| c.ports.iter().map(port_key).collect()),
            host_config: Some(host_config),
            networking_config,
            ..Default::default()
        };
        let created = self.docker.create_container(Some(options), body).await.map_err(map_error)?;
        for network in others {
            if let Err(error) = self.connect_network(&network.name, &created.id, network.aliases).await {
                let options = RemoveContainerOptionsBuilder::default().force(true).v(true).build();
                let _ = self.docker.remove_container(&created.id, Some(options)).await;
                return Err(error);
            }
        }
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
    async fn pull(&self, reference: &str, progress: Option<&ProgressSink>) -> RuntimeResult {
        let from = normalize_image_reference(reference);
        let options = CreateImageOptionsBuilder::default().from_image(&from).build();
        let mut stream = self.docker.create_image(Some(options), None, None);
        let mut lines: Vec<ProgressLine> = Vec::new();
        while let Some(message) = stream.next().await {
            let before = lines.len();
            add_progress(&mut lines, message.map_err(map_pull_error)?);
            // A line is final once another follows it (until then a download advancing
            // rewrites it).
            if let (Some(sink), true) = (progress, lines.len() > before && before > 0) {
                sink(&lines[before - 1].text);
            }
        }
        if let (Some(sink), Some(last)) = (progress, lines.last()) {
            sink(&last.text);
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

    /// Follow the daemon's container events for containers drydock created (those labelled with
    /// an owner uid), from the moment of this call on.
    ///
    /// *Guarantees*: after the stream breaks (Docker restarted, the socket went away), it waits
    /// until Docker answers a ping, backing off from 250 ms doubling to 30 s, reconnects from the
    /// last event seen (Docker replays from `since`; the event at `since` may come twice), and
    /// then sends [`RuntimeNotice::Resynced`], so the engine re-inspects what it knows: a restart
    /// stops containers without every `die` reaching a stream. A stream that keeps breaking at
    /// once is reopened no faster than the backoff allows. Events are hints: the engine
    /// re-inspects anyway.
    fn follow_events(&self) -> mpsc::UnboundedReceiver<RuntimeNotice> {
        let (tx, rx) = mpsc::unbounded_channel();
        let docker = self.docker.clone();
        tokio::spawn(follow(docker, crate::clock::wall_now(), tx));
        rx
    }
}

const RECONNECT_FIRST: Duration = Duration::from_millis(250);
const RECONNECT_MAX: Duration = Duration::from_secs(30);
/// A stream that lasted this long counts as healthy: the next break starts the backoff afresh.
const STREAM_HEALTHY_AFTER: Duration = Duration::from_secs(30);

async fn follow(docker: Docker, mut since: WallTime, tx: mpsc::UnboundedSender<RuntimeNotice>) {
    let filters = HashMap::from([("type", vec!["container"]), ("label", vec![names::LABEL_OWNER_UID])]);
    let mut backoff = RECONNECT_FIRST;
    let mut reconnecting = false;
    loop {
        if reconnecting {
            while let Err(error) = docker.ping().await {
                tracing::warn!(%error, retry_in = ?backoff, "docker does not answer; the event stream waits");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(RECONNECT_MAX);
                if tx.is_closed() {
                    return;
                }
            }
        }
        let from = format!("{}.{:03}", since.0 / 1000, since.0 % 1000);
        let options = EventsOptionsBuilder::default().since(&from).filters(&filters).build();
        let mut stream = docker.events(Some(options));
        if reconnecting {
            tracing::info!("docker event stream reconnected; the engine re-inspects what it knows");
            if tx.send(RuntimeNotice::Resynced).is_err() {
                return;
            }
        }
        let opened = tokio::time::Instant::now();
        while let Some(message) = stream.next().await {
            match message {
                Ok(message) => {
                    let Some(event) = runtime_event(message) else { continue };
                    since = since.max(event.time);
                    if tx.send(RuntimeNotice::Event(event)).is_err() {
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
        if opened.elapsed() >= STREAM_HEALTHY_AFTER {
            backoff = RECONNECT_FIRST;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(RECONNECT_MAX);
        reconnecting = true;
    }
}

/// The lines of one frame of `docker logs --timestamps` output: each begins with the daemon's
/// RFC 3339 stamp and a space.
fn captured_lines(channel: Channel, message: &[u8]) -> Vec<CapturedLine> {
    let text = String::from_utf8_lossy(message);
    text.split_terminator('\n')
        .map(|line| {
            let line = line.strip_suffix('\r').unwrap_or(line);
            let (stamp, text) = match line.split_once(' ') {
                Some((stamp, text)) => match parse_stamp(stamp) {
                    Some(nanos) => (Some(nanos), text),
                    None => (None, line),
                },
                None => match parse_stamp(line) {
                    Some(nanos) => (Some(nanos), ""),
                    None => (None, line),
                },
            };
            let stamp = stamp.unwrap_or_else(|| u128::from(crate::clock::wall_now().0) * 1_000_000);
            let millis = u64::try_from(stamp / 1_000_000).unwrap_or(u64::MAX);
            CapturedLine { channel, time: WallTime(millis), stamp, text: text.to_string() }
        })
        .collect()
}

/// `2024-05-01T10:00:00.123456789Z` in nanoseconds since the epoch (UTC only, as Docker writes
/// them).
fn parse_stamp(stamp: &str) -> Option<u128> {
    let stamp = stamp.strip_suffix('Z')?;
    let (date, time) = stamp.split_once('T')?;
    let mut date = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (year, month, day) = (date.next()??, date.next()??, date.next()??);
    let (clock, fraction) = time.split_once('.').unwrap_or((time, "0"));
    let mut clock = clock.splitn(3, ':').map(|p| p.parse::<i64>().ok());
    let (hour, minute, second) = (clock.next()??, clock.next()??, clock.next()??);
    if !fraction.bytes().all(|b| b.is_ascii_digit()) || fraction.len() > 9 {
        return None;
    }
    let nanos: u128 = format!("{fraction:0<9}").parse().ok()?;
    // Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let seconds = u128::try_from(days * 86_400 + hour * 3_600 + minute * 60 + second).ok()?;
    Some(seconds * 1_000_000_000 + nanos)
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
        labels: labels.into(),
    })
}

impl Runtime for DockerRuntime {
    fn events(&self) -> Option<mpsc::UnboundedReceiver<RuntimeNotice>> {
        Some(self.follow_events())
    }

    async fn execute_reporting(&self, request: RuntimeRequest, progress: ProgressSink) -> RuntimeResult {
        match request {
            RuntimeRequest::PullImage { reference } => self.pull(&reference, Some(&progress)).await,
            RuntimeRequest::BuildImage(build) => self.build(build, Some(&progress)).await,
            other => self.execute(other).await,
        }
    }

    /// `docker logs [--follow] --timestamps [--since]`: Docker's logs API, non-TTY, its stdout
    /// and stderr demultiplexed by bollard; each line stamped by the daemon.
    fn capture(&self, id: &str, follow: bool, since: Option<u128>) -> Option<CaptureStream> {
        let mut options = LogsOptionsBuilder::default().follow(follow).stdout(true).stderr(true).timestamps(true);
        if let Some(since) = since {
            options = options.since(i32::try_from(since / 1_000_000_000).unwrap_or(i32::MAX));
        }
        let options = options.build();
        // A line over 16 KiB comes as several frames (see `log_frames`); what is left of one
        // when the stream ends is a line too.
        let frames = self.docker.logs(id, Some(options)).map(Some).chain(futures_util::stream::iter([None]));
        let stream = frames
            .scan(log_frames::Frames::default(), |joined, item| {
                let lines: Vec<Result<CapturedLine, RuntimeError>> = match item {
                    Some(Ok(LogOutput::StdOut { message } | LogOutput::Console { message })) => {
                        joined.push(Channel::Stdout, &message).into_iter().map(Ok).collect()
                    }
                    Some(Ok(LogOutput::StdErr { message })) => {
                        joined.push(Channel::Stderr, &message).into_iter().map(Ok).collect()
                    }
                    Some(Ok(LogOutput::StdIn { .. })) => Vec::new(),
                    Some(Err(error)) => vec![Err(map_error(error))],
                    None => joined.finish().into_iter().map(Ok).collect(),
                };
                std::future::ready(Some(futures_util::stream::iter(lines)))
            })
            .flatten();
        Some(Box::pin(stream))
    }

    async fn execute(&self, request: RuntimeRequest) -> RuntimeResult {
        let d = &self.docker;
        match request {
            RuntimeRequest::CreateContainer(c) => self.create(c).await,
            RuntimeRequest::StartContainer { id } => done(d.start_container(&id, None).await),
            RuntimeRequest::StopContainer { id, timeout_secs } => {
                let t = i32::try_from(timeout_secs).unwrap_or(i32::MAX);
                done(d.stop_container(&id, Some(StopContainerOptionsBuilder::default().t(t).build())).await)
            }
            RuntimeRequest::RemoveContainer { id, force } => {
                // `v`: with its anonymous volumes, which nothing else would ever remove.
                let options = RemoveContainerOptionsBuilder::default().force(force).v(true).build();
                d.remove_container(&id, Some(options)).await.map_err(map_error)?;
                Ok(RuntimeReply::Done)
            }
            RuntimeRequest::InspectContainer { id } => self.inspect(&id).await.map(RuntimeReply::Container),
            RuntimeRequest::ListContainers { labels } => self.list(labels).await,
            RuntimeRequest::InspectImage { reference } => self.inspect_image(&reference).await,
            RuntimeRequest::ContainerEvents { id, since } => self.events(&id, since).await,
            RuntimeRequest::PullImage { reference } => self.pull(&reference, None).await,
            RuntimeRequest::RemoveImage { reference, force } => {
                let options = RemoveImageOptionsBuilder::default().force(force).build();
                d.remove_image(&reference, Some(options), None).await.map_err(map_error)?;
                Ok(RuntimeReply::Done)
            }
            RuntimeRequest::CopyFiles { id, files } => self.copy_files(&id, files).await,
            RuntimeRequest::BuildImage(build) => self.build(build, None).await,
            RuntimeRequest::CreateNetwork(create) => self.create_network(create).await,
            RuntimeRequest::InspectNetwork { id } => self.inspect_network(&id).await.map(RuntimeReply::Network),
            RuntimeRequest::ListNetworks { labels } => self.list_networks(labels).await,
            RuntimeRequest::RemoveNetwork { id } => {
                d.remove_network(&id).await.map_err(map_error)?;
                Ok(RuntimeReply::Done)
            }
            RuntimeRequest::ConnectNetwork { network, container, aliases } => {
                self.connect_network(&network, &container, aliases).await
            }
            RuntimeRequest::DisconnectNetwork { network, container } => {
                self.disconnect_network(&network, &container).await
            }
            RuntimeRequest::CreateVolume(create) => self.create_volume(create).await,
            RuntimeRequest::InspectVolume { name } => self.inspect_volume(&name).await,
            RuntimeRequest::ListVolumes { labels } => self.list_volumes(labels).await,
            RuntimeRequest::RemoveVolume { name } => self.remove_volume(&name).await,
        }
    }
}

fn protocol_name(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Tcp => "tcp",
        Protocol::Udp => "udp",
    }
}

/// Docker's inspection as the contract's container. Docker reports exit code 0 and an empty
/// error for a container that never ran; the contract reports `None` for both, and an exit code
/// only for a container that exited (or is being removed after it ran) or whose start failed
/// (`created`, or `exited` from an earlier run, with `State.Error` set: 127 for a missing
/// command, 128 for a port that is taken).
pub(crate) fn container_info(response: ContainerInspectResponse) -> Result<ContainerInfo, RuntimeError> {
    let config = response.config.unwrap_or_default();
    let state = response.state.unwrap_or_default();
    let error = state.error.filter(|e| !e.is_empty());
    let ran = state.finished_at.as_deref().is_some_and(|t| !t.is_empty() && !t.starts_with("0001-01-01"));
    let (state, exit_code) = match state.status {
        Some(ContainerStateStatusEnum::CREATED) => {
            (ContainerState::Created, state.exit_code.filter(|_| error.is_some()))
        }
        Some(
            ContainerStateStatusEnum::RUNNING | ContainerStateStatusEnum::PAUSED | ContainerStateStatusEnum::RESTARTING,
        ) => (ContainerState::Running, None),
        Some(ContainerStateStatusEnum::EXITED | ContainerStateStatusEnum::DEAD) => {
            (ContainerState::Exited, state.exit_code)
        }
        Some(ContainerStateStatusEnum::REMOVING) => {
            (ContainerState::Removing, state.exit_code.filter(|_| ran || error.is_some()))
        }
        other => return Err(RuntimeError::Transient(format!("unexpected container status {other:?}"))),
    };
    let bindings = response
        .network_settings
        .and_then(|n| n.ports)
        .unwrap_or_default()
        .into_iter()
        .filter(|_| state == ContainerState::Running)
        .flat_map(|(key, bindings)| {
            let (port, protocol) = key.split_once('/').unwrap_or((key.as_str(), "tcp"));
            let container_port: u16 = port.parse().unwrap_or(0);
            let protocol = if protocol == "udp" { Protocol::Udp } else { Protocol::Tcp };
            bindings.unwrap_or_default().into_iter().filter_map(move |b| {
                let port = PublishedPort { container_port, protocol, host_port: b.host_port?.parse().ok()? };
                Some((b.host_ip, port))
            })
        });
    let ports = published_ports(bindings);
    Ok(ContainerInfo {
        ports,
        id: response.id.unwrap_or_default(),
        name: response.name.unwrap_or_default().trim_start_matches('/').to_string(),
        image: config.image.unwrap_or_default(),
        labels: std::sync::Arc::new(config.labels.unwrap_or_default().into_iter().collect()),
        state,
        exit_code,
        error,
    })
}

/// The ports a container publishes, from Docker's bindings (host address, port).
///
/// Docker lists a binding once per address family, `0.0.0.0` and `::`, where the host has IPv6;
/// Docker 20.10 may even give the two different ephemeral host ports. A port published on both
/// is reported once, with its IPv4 host port; a port bound to an IPv6 address only keeps it, and
/// two host ports asked for one container port are both kept.
fn published_ports(bindings: impl IntoIterator<Item = (Option<String>, PublishedPort)>) -> Vec<PublishedPort> {
    let bindings: Vec<(bool, PublishedPort)> =
        bindings.into_iter().map(|(ip, port)| (ip.is_some_and(|ip| ip.contains(':')), port)).collect();
    let on_ipv4: std::collections::BTreeSet<(u16, Protocol)> =
        bindings.iter().filter(|(ipv6, _)| !ipv6).map(|(_, p)| (p.container_port, p.protocol)).collect();
    let mut ports: Vec<PublishedPort> = bindings
        .into_iter()
        .filter(|(ipv6, p)| !ipv6 || !on_ipv4.contains(&(p.container_port, p.protocol)))
        .map(|(_, port)| port)
        .collect();
    ports.sort();
    ports.dedup();
    ports
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
/// repository is `NotFound`, whatever status the daemon chose for it; a registry that cannot be
/// reached is `Transient`, with Docker's text.
pub fn map_pull_error(error: BollardError) -> RuntimeError {
    match error {
        BollardError::DockerStreamError { error } if is_unreachable(&error) => RuntimeError::Transient(error),
        BollardError::DockerStreamError { error } if is_missing(&error) => RuntimeError::NotFound(error),
        BollardError::DockerStreamError { error } => RuntimeError::Transient(error),
        BollardError::DockerResponseServerError { status_code, message }
            if status_code != 409 && !is_unreachable(&message) && is_missing(&message) =>
        {
            RuntimeError::NotFound(message)
        }
        other => map_error(other),
    }
}

/// The registry says the image is not there.
fn is_missing(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    ["manifest unknown", "not found", "pull access denied", "repository does not exist"].iter().any(|s| m.contains(s))
}

/// The daemon could not talk to the registry at all (Docker's dial and TLS errors).
fn is_unreachable(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    ["dial tcp", "connection refused", "no such host", "i/o timeout", "tls handshake timeout", "network is unreachable"]
        .iter()
        .any(|s| m.contains(s))
}

/// Docker's answer as the engine's error kinds (the table in the module doc).
pub fn map_error(error: BollardError) -> RuntimeError {
    match error {
        BollardError::DockerResponseServerError { status_code: 400, message } => RuntimeError::Invalid(message),
        BollardError::DockerResponseServerError { status_code: 403, message }
            if message.contains("has active endpoints") || message.contains("already exists in network") =>
        {
            RuntimeError::Conflict(message)
        }
        BollardError::DockerResponseServerError { status_code: 403, message } => RuntimeError::Invalid(message),
        BollardError::DockerResponseServerError { status_code: 404, message } => RuntimeError::NotFound(message),
        BollardError::DockerResponseServerError { status_code: 409, message } => RuntimeError::Conflict(message),
        BollardError::DockerResponseServerError { status_code: 500, message }
            if message.starts_with("invalid volume specification")
                || message.starts_with("Multiple IDs found with provided prefix")
                || message.starts_with("invalid reference format")
                || message.starts_with("Error processing tar file")
                || message.contains("unable to start container process: exec:") =>
        {
            RuntimeError::Invalid(message)
        }
        BollardError::DockerResponseServerError { status_code: 500, message }
            if message.contains("is not connected to") =>
        {
            RuntimeError::NotFound(message)
        }
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

/// A start or stop: done, also when Docker answers 304 (it already was so). bollard reports 304
/// as success; this keeps it so whatever the client does.
fn done(result: Result<(), BollardError>) -> RuntimeResult {
    match result {
        Ok(()) | Err(BollardError::DockerResponseServerError { status_code: 304, .. }) => Ok(RuntimeReply::Done),
        Err(error) => Err(map_error(error)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_log_lines_carry_the_daemons_stamp() {
        assert_eq!(parse_stamp("1970-01-01T00:00:01.5Z"), Some(1_500_000_000));
        assert_eq!(parse_stamp("2024-02-29T12:00:00.000000001Z"), Some(1_709_208_000_000_000_001));
        assert_eq!(parse_stamp("2024-02-29 12:00:00"), None);
        let lines = captured_lines(Channel::Stderr, b"2024-02-29T12:00:00.25Z oh no\n2024-02-29T12:00:01Z \n");
        let texts: Vec<(&str, u64)> = lines.iter().map(|l| (l.text.as_str(), l.time.0)).collect();
        assert_eq!(texts, [("oh no", 1_709_208_000_250), ("", 1_709_208_001_000)]);
        assert!(lines.iter().all(|l| l.channel == Channel::Stderr));
    }

    fn server(status_code: u16, message: &str) -> BollardError {
        BollardError::DockerResponseServerError { status_code, message: message.into() }
    }

    /// Docker 20.10's answers, verbatim, and what each becomes.
    #[test]
    fn error_mapping() {
        let invalid = [
            (400, "Invalid container name (a), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed"),
            (400, "invalid environment variable: =x"),
            (400, "invalid reference format"),
            (400, "invalid reference format: repository name must be lowercase"),
            (400, "Duplicate mount point: /data"),
            (
                400,
                "create rel/src: \"rel/src\" includes invalid characters for a local volume name, only \"[a-zA-Z0-9][a-zA-Z0-9_.-]\" are allowed. If you intended to pass a host directory, use absolute path",
            ),
            (
                400,
                "failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: \"nosuch\": executable file not found in $PATH: unknown",
            ),
            (
                500,
                "invalid volume specification: '/tmp:data': invalid mount config for type \"bind\": invalid mount path: 'data' mount path must be absolute",
            ),
            (
                500,
                "invalid volume specification: '/tmp:/': invalid mount config for type \"bind\": invalid specification: destination can't be '/'",
            ),
            (500, "Multiple IDs found with provided prefix: 0"),
        ];
        let untranslated = "OCI runtime create failed: runc create failed: unable to start container process: exec: \"/entry\": stat /entry: no such file or directory: unknown";
        assert_eq!(map_error(server(500, untranslated)), RuntimeError::Invalid(untranslated.into()));
        for (status, message) in invalid {
            assert_eq!(map_error(server(status, message)), RuntimeError::Invalid(message.into()), "{message}");
        }
        assert_eq!(
            map_error(server(404, "No such container: x")),
            RuntimeError::NotFound("No such container: x".into())
        );
        let in_progress = "removal of container x is already in progress";
        assert_eq!(map_error(server(409, in_progress)), RuntimeError::Conflict(in_progress.into()));
        let marked = "container is marked for removal and cannot be started";
        assert_eq!(map_error(server(409, marked)), RuntimeError::Conflict(marked.into()));
        for taken in [
            "driver failed programming external connectivity on endpoint web (7065d91f): Bind for 0.0.0.0:18555 failed: port is already allocated",
            "driver failed programming external connectivity on endpoint web (c9cb3c97): Error starting userland proxy: listen tcp4 0.0.0.0:18556: bind: address already in use",
        ] {
            assert_eq!(map_error(server(500, taken)), RuntimeError::Transient(format!("500: {taken}")), "may be freed");
        }
        assert_eq!(map_error(server(500, "m")), RuntimeError::Transient("500: m".into()));
        assert_eq!(map_error(server(503, "m")), RuntimeError::Transient("503: m".into()));
        assert!(matches!(map_error(BollardError::RequestTimeoutError), RuntimeError::Uncertain(_)));
        let io = BollardError::IOError { err: std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset") };
        assert!(matches!(map_error(io), RuntimeError::Uncertain(_)));
        assert_eq!(done(Err(server(304, ""))), Ok(RuntimeReply::Done), "already started or stopped");
        assert_eq!(done(Ok(())), Ok(RuntimeReply::Done));
        assert_eq!(done(Err(server(409, marked))), Err(RuntimeError::Conflict(marked.into())));
    }

    #[test]
    fn pull_error_mapping() {
        let stream = |error: &str| BollardError::DockerStreamError { error: error.into() };
        let unknown = "manifest for 127.0.0.1:5000/a:1 not found: manifest unknown: manifest unknown";
        assert!(matches!(map_pull_error(server(404, unknown)), RuntimeError::NotFound(_)));
        assert!(matches!(map_pull_error(server(500, unknown)), RuntimeError::NotFound(_)));
        assert!(matches!(map_pull_error(stream(unknown)), RuntimeError::NotFound(_)));
        let denied = "pull access denied for nosuch, repository does not exist or may require 'docker login'";
        assert!(matches!(map_pull_error(stream(denied)), RuntimeError::NotFound(_)));
        // An unreachable registry says nothing about the image: never NotFound.
        let refused = "Get \"http://127.0.0.1:5999/v2/\": dial tcp 127.0.0.1:5999: connect: connection refused";
        assert_eq!(map_pull_error(server(500, refused)), RuntimeError::Transient(format!("500: {refused}")));
        let no_host = "Get \"https://nosuchhost.invalid/v2/\": dial tcp: lookup nosuchhost.invalid on 10.255.255.53:53: no such host";
        assert_eq!(map_pull_error(server(500, no_host)), RuntimeError::Transient(format!("500: {no_host}")));
        let not_found_host = "Get \"https://registry.example/v2/\": dial tcp: lookup registry.example: not found";
        assert!(matches!(map_pull_error(stream(not_found_host)), RuntimeError::Transient(_)), "unreachable first");
        assert_eq!(
            map_pull_error(server(400, "invalid reference format")),
            RuntimeError::Invalid("invalid reference format".into())
        );
        assert_eq!(map_pull_error(stream("unexpected EOF")), RuntimeError::Transient("unexpected EOF".into()));
        assert!(matches!(map_pull_error(BollardError::RequestTimeoutError), RuntimeError::Uncertain(_)));
    }

    fn inspected(status: ContainerStateStatusEnum, exit_code: i64, error: &str, finished_at: &str) -> ContainerInfo {
        let response = ContainerInspectResponse {
            id: Some("c1".into()),
            name: Some("/web".into()),
            state: Some(bollard::models::ContainerState {
                status: Some(status),
                exit_code: Some(exit_code),
                error: Some(error.into()),
                finished_at: Some(finished_at.into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        container_info(response).expect("a known status")
    }

    #[test]
    fn container_states_exit_codes_and_errors() {
        use ContainerStateStatusEnum as S;
        const NEVER: &str = "0001-01-01T00:00:00Z";
        const THEN: &str = "2026-12-01T02:34:58.9Z";
        let facts = |c: ContainerInfo| (c.state, c.exit_code, c.error);
        assert_eq!(facts(inspected(S::CREATED, 0, "", NEVER)), (ContainerState::Created, None, None));
        let missing = "failed to create shim task: ... executable file not found in $PATH: unknown";
        assert_eq!(
            facts(inspected(S::CREATED, 127, missing, NEVER)),
            (ContainerState::Created, Some(127), Some(missing.into())),
            "a start that failed"
        );
        assert_eq!(facts(inspected(S::RUNNING, 0, "", NEVER)), (ContainerState::Running, None, None));
        assert_eq!(facts(inspected(S::EXITED, 3, "", THEN)), (ContainerState::Exited, Some(3), None));
        let taken = "driver failed programming external connectivity ...: port is already allocated";
        assert_eq!(
            facts(inspected(S::EXITED, 3, taken, THEN)),
            (ContainerState::Exited, Some(3), Some(taken.into())),
            "a restart that failed keeps the earlier exit code"
        );
        assert_eq!(facts(inspected(S::REMOVING, 137, "", THEN)), (ContainerState::Removing, Some(137), None));
        assert_eq!(facts(inspected(S::REMOVING, 0, "", NEVER)), (ContainerState::Removing, None, None), "never ran");
        assert_eq!(inspected(S::CREATED, 0, "", NEVER).name, "web");
    }

    /// Docker 20.10 on a host with IPv6: `{"80/tcp":[{"HostIp":"0.0.0.0","HostPort":"32773"},
    /// {"HostIp":"::","HostPort":"32772"}]}` (seen on this project's machines) is one port.
    #[test]
    fn a_port_bound_on_both_address_families_is_reported_once_with_its_ipv4_host_port() {
        let port = |container_port, protocol, host_port| PublishedPort { container_port, protocol, host_port };
        let v4 = Some("0.0.0.0".to_string());
        let v6 = Some("::".to_string());
        let bindings = [
            (v4.clone(), port(80, Protocol::Tcp, 32773)),
            (v6.clone(), port(80, Protocol::Tcp, 32772)),
            (v4.clone(), port(53, Protocol::Udp, 32769)),
            (v6.clone(), port(53, Protocol::Udp, 32769)),
            // Two host ports asked for one container port: both are published.
            (v4.clone(), port(8080, Protocol::Tcp, 8080)),
            (v4.clone(), port(8080, Protocol::Tcp, 9090)),
            // Bound to an IPv6 address only, or over UDP only: nothing to prefer it to.
            (Some("::1".to_string()), port(443, Protocol::Tcp, 8443)),
            (v6.clone(), port(80, Protocol::Udp, 32800)),
        ];
        assert_eq!(
            published_ports(bindings),
            [
                port(53, Protocol::Udp, 32769),
                port(80, Protocol::Tcp, 32773),
                port(80, Protocol::Udp, 32800),
                port(443, Protocol::Tcp, 8443),
                port(8080, Protocol::Tcp, 8080),
                port(8080, Protocol::Tcp, 9090),
            ]
        );
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
