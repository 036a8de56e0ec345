//! Helpers the runtime's unit tests share.

use super::SimRuntime;
use drydock_engine::runtime::{ContainerCreate, ImageInfo, RuntimeError, RuntimeReply, RuntimeRequest, RuntimeResult};
use std::collections::BTreeMap;

/// A create of `name` from `image`, labelled `app=<name>`.
pub(super) fn create(name: &str, image: &str) -> RuntimeRequest {
    RuntimeRequest::CreateContainer(ContainerCreate {
        name: name.into(),
        image: image.into(),
        command: vec![],
        env: Default::default(),
        labels: BTreeMap::from([("app".to_string(), name.to_string())]),
        ..Default::default()
    })
}

/// Let the briefest main process end: a program that ends at once runs this long after its
/// start answered.
pub(super) fn a_moment_later(rt: &mut SimRuntime) {
    let now = rt.now();
    rt.advance(drydock_engine::WallTime(now.0 + super::lifecycle::BRIEFEST_RUN_MS));
}

pub(super) fn id_of(r: RuntimeResult) -> String {
    match r {
        Ok(RuntimeReply::Created { id }) => id,
        other => panic!("expected Created, got {other:?}"),
    }
}

pub(super) fn image(rt: &mut SimRuntime, reference: &str) -> Result<ImageInfo, RuntimeError> {
    match rt.execute(&RuntimeRequest::InspectImage { reference: reference.into() }) {
        Ok(RuntimeReply::Image(info)) => Ok(info),
        Ok(other) => panic!("inspect-image replied {other:?}"),
        Err(e) => Err(e),
    }
}

pub(super) fn is_sha256(s: &str) -> bool {
    s.len() == 71 && s.starts_with("sha256:") && s[7..].bytes().all(|b| b.is_ascii_hexdigit())
}

pub(super) fn pull(rt: &mut SimRuntime, reference: &str) -> Result<Vec<String>, RuntimeError> {
    match rt.execute(&RuntimeRequest::PullImage { reference: reference.into() }) {
        Ok(RuntimeReply::Pulled { progress }) => Ok(progress),
        Ok(other) => panic!("pull replied {other:?}"),
        Err(e) => Err(e),
    }
}
