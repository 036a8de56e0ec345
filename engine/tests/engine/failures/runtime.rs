//! The scripted runtime of the failure tests: Docker's observable contract, reduced to what they
//! need (names, images, a container's state, label filters), plus the failures a test scripts
//! (creates, starts the way Docker fails them, pulls, image inspections, pulls held back), and
//! every request with its time.

use super::{IMAGE, IMAGE_ID};
use drydock_engine::runtime::{
    ContainerInfo, ContainerState, ImageInfo, RuntimeError, RuntimeReply, RuntimeRequest, RuntimeResult,
};
use std::collections::BTreeMap;

/// How the runtime answers starts.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum StartFault {
    None,
    /// A command not in the image (Docker 20.10): 400, the container stays `created` with exit
    /// code 127 and the error recorded on it.
    MissingCommand,
    /// A host port held by someone else: 500, the error recorded on the container (exit 128).
    PortTaken,
    /// The daemon fails the request (500) and records nothing on the container.
    DaemonError,
}

pub(super) const MISSING_COMMAND: &str = "failed to create shim task: OCI runtime create failed: exec: \"nope\": executable file not found in $PATH: unknown";
pub(super) const PORT_TAKEN: &str = "driver failed programming external connectivity on endpoint ns-web: Bind for 0.0.0.0:8080 failed: port is already allocated";

/// A runtime with Docker's observable contract, reduced to what these tests need, plus the
/// failures they script.
pub(super) struct Runtime {
    /// Reference -> image id.
    pub(super) images: BTreeMap<String, String>,
    pub(super) containers: BTreeMap<String, ContainerInfo>,
    pub(super) next_id: u64,
    pub(super) create_error: Option<RuntimeError>,
    pub(super) start_fault: StartFault,
    /// What every pull answers (`None`: the image arrives).
    pub(super) pull_error: Option<RuntimeError>,
    pub(super) inspect_image_error: Option<RuntimeError>,
    /// Pulls are not answered until [`World::finish_pulls`].
    pub(super) hold_pulls: bool,
    /// Every request, with the time it was made (ms).
    pub(super) requests: Vec<(u64, RuntimeRequest)>,
}

impl Runtime {
    pub(super) fn new() -> Self {
        Runtime {
            images: BTreeMap::from([(IMAGE.to_string(), IMAGE_ID.to_string())]),
            containers: BTreeMap::new(),
            next_id: 0,
            create_error: None,
            start_fault: StartFault::None,
            pull_error: None,
            inspect_image_error: None,
            hold_pulls: false,
            requests: Vec::new(),
        }
    }

    pub(super) fn resolve(&self, id_or_name: &str) -> Result<String, RuntimeError> {
        let found = self.containers.values().find(|c| c.id == id_or_name || c.name == id_or_name);
        found.map(|c| c.id.clone()).ok_or_else(|| RuntimeError::NotFound(format!("No such container: {id_or_name}")))
    }

    pub(super) fn has_image(&self, reference: &str) -> bool {
        self.images.contains_key(reference) || self.images.values().any(|id| id == reference)
    }

    pub(super) fn answer(&mut self, at_ms: u64, request: RuntimeRequest) -> RuntimeResult {
        self.requests.push((at_ms, request.clone()));
        match request {
            RuntimeRequest::CreateContainer(c) => {
                if let Some(error) = self.create_error.clone() {
                    return Err(error);
                }
                if !self.has_image(&c.image) {
                    return Err(RuntimeError::NotFound(format!("No such image: {}", c.image)));
                }
                if self.containers.values().any(|x| x.name == c.name) {
                    return Err(RuntimeError::Conflict(format!("the container name {:?} is already in use", c.name)));
                }
                self.next_id += 1;
                let id = format!("{:064x}", self.next_id);
                let info = ContainerInfo {
                    id: id.clone(),
                    name: c.name,
                    image: c.image,
                    labels: c.labels.into(),
                    state: ContainerState::Created,
                    exit_code: None,
                    error: None,
                    ports: Vec::new(),
                };
                self.containers.insert(id.clone(), info);
                Ok(RuntimeReply::Created { id })
            }
            RuntimeRequest::StartContainer { id } => {
                let id = self.resolve(&id)?;
                let fault = self.start_fault;
                let Some(c) = self.containers.get_mut(&id) else { return Err(RuntimeError::NotFound(id)) };
                let (code, error) = match fault {
                    StartFault::None => {
                        c.state = ContainerState::Running;
                        (c.exit_code, c.error) = (None, None);
                        return Ok(RuntimeReply::Done);
                    }
                    StartFault::DaemonError => return Err(RuntimeError::Transient("500: the daemon is busy".into())),
                    StartFault::MissingCommand => (127, RuntimeError::Invalid(MISSING_COMMAND.into())),
                    StartFault::PortTaken => (128, RuntimeError::Transient(PORT_TAKEN.into())),
                };
                let (RuntimeError::Invalid(message) | RuntimeError::Transient(message)) = &error else {
                    unreachable!("scripted above")
                };
                (c.exit_code, c.error) = (Some(code), Some(message.clone()));
                Err(error)
            }
            RuntimeRequest::StopContainer { id, .. } => {
                let id = self.resolve(&id)?;
                if let Some(c) = self.containers.get_mut(&id).filter(|c| c.state == ContainerState::Running) {
                    (c.state, c.exit_code) = (ContainerState::Exited, Some(137));
                }
                Ok(RuntimeReply::Done)
            }
            RuntimeRequest::RemoveContainer { id, .. } => {
                let id = self.resolve(&id)?;
                self.containers.remove(&id);
                Ok(RuntimeReply::Done)
            }
            RuntimeRequest::InspectContainer { id } => {
                let id = self.resolve(&id)?;
                Ok(RuntimeReply::Container(self.containers[&id].clone()))
            }
            RuntimeRequest::ListContainers { labels } => Ok(RuntimeReply::Containers(
                self.containers
                    .values()
                    .filter(|c| labels.iter().all(|(k, v)| c.labels.get(k) == Some(v)))
                    .cloned()
                    .collect(),
            )),
            RuntimeRequest::InspectImage { reference } => {
                if let Some(error) = self.inspect_image_error.clone() {
                    return Err(error);
                }
                // By reference or by id, as Docker does.
                match self.images.iter().find(|(r, id)| **r == reference || **id == reference) {
                    Some((r, id)) => Ok(RuntimeReply::Image(ImageInfo { id: id.clone(), tags: vec![r.clone()] })),
                    None => Err(RuntimeError::NotFound(format!("No such image: {reference}"))),
                }
            }
            RuntimeRequest::PullImage { reference } => {
                if let Some(error) = self.pull_error.clone() {
                    return Err(error);
                }
                self.images.insert(reference.clone(), format!("sha256:{reference}"));
                Ok(RuntimeReply::Pulled { progress: vec![format!("pulled {reference}")] })
            }
            RuntimeRequest::RemoveImage { .. } => Ok(RuntimeReply::Done),
            RuntimeRequest::ContainerEvents { .. } => Ok(RuntimeReply::Events(Vec::new())),
            other => Err(RuntimeError::Invalid(format!("not modelled by this test runtime: {}", other.describe()))),
        }
    }

    /// Times (ms) of the requests `which` picks.
    pub(super) fn times(&self, which: impl Fn(&RuntimeRequest) -> bool) -> Vec<u64> {
        self.requests.iter().filter(|(_, r)| which(r)).map(|(at, _)| *at).collect()
    }

    pub(super) fn starts(&self) -> Vec<u64> {
        self.times(|r| matches!(r, RuntimeRequest::StartContainer { .. }))
    }

    pub(super) fn creates(&self) -> Vec<u64> {
        self.times(|r| matches!(r, RuntimeRequest::CreateContainer(_)))
    }
}
