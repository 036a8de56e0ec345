//! A settled container runs what its spec asks for: part of convergence.
//!
//! The other settled checks compare phases with runtime states: a container could run the wrong
//! image, or lose its ports on the way from a logical container to its backing, and still be
//! `Running`. Here the runtime container a `Running` or `Exited` object records is compared with
//! the object's own spec, by what the simulated Docker says it was created with
//! ([`drydock_sim_runtime::Creation`]), never by the engine's intermediate objects.
//!
//! *Compared*: the image (the runtime container's image is one the spec's reference, or its
//! `ContainerImage`'s, has named in this runtime: a tag that moved since still named it), every
//! environment variable, port, label (but the engine's own, under `drydock.dev/`) and mount
//! target the spec asks for (the engine adds labels of its own, and maps a mount's source to a
//! runtime volume name), and a physical container's
//! command when its spec gives one.
//!
//! *Not compared*: what a container tracks rather than makes (`containerId`, mode `Existing`),
//! built images (their tags are the build's), copied files (the container's processes may write
//! over them), networks (their own checks), a logical container's command and args.

use super::View;
use drydock_engine::api::container::{Mount, PortMapping};
use drydock_engine::api::logical::{LogicalContainer, LogicalMode, LogicalPhase};
use drydock_engine::api::{ContainerImage, ContainerPhase, Object, ObjectKey, PhysicalContainer, Resource};
use drydock_sim_runtime::Creation;
use std::collections::BTreeMap;

/// `Ok` when every settled container the engine made runs what its spec asks for.
pub(super) fn containers_run_their_specs(view: &View<'_>) -> Result<(), String> {
    for pc in view.store.list(Some(PhysicalContainer::KIND), None) {
        let (Ok(spec), Ok(status)) = (pc.spec::<PhysicalContainer>(), pc.status::<PhysicalContainer>()) else {
            continue;
        };
        if spec.container_id.is_some() || !matches!(status.phase, ContainerPhase::Running | ContainerPhase::Exited) {
            continue;
        }
        let Some(created) = status.runtime_id.as_deref().and_then(|id| view.runtime.created_with(id)) else {
            continue;
        };
        let asked = Asked {
            image: image_asked(view, &pc, spec.image.as_deref(), spec.image_ref.as_deref()),
            command: &spec.command,
            env: spec.env.clone(),
            ports: &spec.ports,
            mounts: &spec.mounts,
            labels: &spec.labels,
        };
        asked.compare(view, &created).map_err(|why| format!("{} runs a container {why}", pc.key()))?;
    }
    for lc in view.store.list(Some(LogicalContainer::KIND), None) {
        let (Ok(spec), Ok(status)) = (lc.spec::<LogicalContainer>(), lc.status::<LogicalContainer>()) else {
            continue;
        };
        if spec.mode == LogicalMode::Existing || !matches!(status.phase, LogicalPhase::Running | LogicalPhase::Exited) {
            continue;
        }
        let Some(created) = status.runtime_id.as_deref().and_then(|id| view.runtime.created_with(id)) else {
            continue;
        };
        let built = !spec.build_digests.is_empty();
        let asked = Asked {
            image: if built { None } else { image_asked(view, &lc, spec.image.as_deref(), spec.image_ref.as_deref()) },
            command: &[],
            // A later entry of a name wins, as in Docker's `Config.Env`.
            env: spec.env.iter().map(|e| (e.name.clone(), e.value.clone())).collect(),
            ports: &spec.ports,
            mounts: &spec.mounts,
            labels: &spec.labels,
        };
        asked.compare(view, &created).map_err(|why| format!("{} runs a container {why}", lc.key()))?;
    }
    Ok(())
}

/// The prefix of the labels the engine sets itself.
const DRYDOCK_LABELS: &str = "drydock.dev/";

/// What a spec asks its runtime container to be created with.
struct Asked<'a> {
    /// The reference the image must have been named by, if the checker knows it.
    image: Option<String>,
    command: &'a [String],
    env: BTreeMap<String, String>,
    ports: &'a [PortMapping],
    mounts: &'a [Mount],
    labels: &'a BTreeMap<String, String>,
}

impl Asked<'_> {
    fn compare(&self, view: &View<'_>, created: &Creation<'_>) -> Result<(), String> {
        if let (Some(reference), Some(id)) = (&self.image, created.image_id)
            && !view.runtime.has_named(reference, id)
            && !id.trim_start_matches("sha256:").starts_with(reference.trim_start_matches("sha256:"))
        {
            return Err(format!("from image {id}, which {reference} never named"));
        }
        if !self.command.is_empty() && created.command != self.command {
            return Err(format!("with command {:?}, not {:?}", created.command, self.command));
        }
        if let Some((name, value)) = self.env.iter().find(|(name, value)| created.env.get(*name) != Some(value)) {
            return Err(format!("without {name}={value} (it has {:?})", created.env.get(name)));
        }
        if let Some(port) = self.ports.iter().find(|p| !created.ports.contains(p)) {
            return Err(format!("without port {port:?} (it has {:?})", created.ports));
        }
        // Labels under drydock.dev/ are the engine's own (owner, namespace, creator, retain,
        // lifecycle key): its values win over a client's.
        let differs = |(name, value): &(&String, &String)| {
            !name.starts_with(DRYDOCK_LABELS) && created.labels.get(*name) != Some(*value)
        };
        if let Some((name, value)) = self.labels.iter().find(differs) {
            return Err(format!("without label {name}={value}"));
        }
        let mounted = |m: &Mount| created.mounts.iter().any(|c| c.target == m.target && c.read_only == m.read_only);
        if let Some(mount) = self.mounts.iter().find(|m| !mounted(m)) {
            return Err(format!("without a mount at {} (read-only {})", mount.target, mount.read_only));
        }
        Ok(())
    }
}

/// The reference a container's image must have been named by: the spec's own, or that of the
/// `ContainerImage` it refers to (unless that one builds: a build's tag names what it built).
fn image_asked(view: &View<'_>, object: &Object, image: Option<&str>, image_ref: Option<&str>) -> Option<String> {
    if let Some(reference) = image {
        return Some(reference.to_string());
    }
    let ns = object.metadata.namespace.as_deref().unwrap_or_default();
    let resource = view.store.get(&ObjectKey::namespaced(ContainerImage::KIND, ns, image_ref?))?;
    let spec = resource.spec::<ContainerImage>().ok()?;
    spec.build.is_none().then_some(spec.image)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::runtime::SimRuntime;
    use drydock_engine::WallTime;
    use drydock_engine::api::container::Protocol;
    use drydock_engine::api::{Namespace, NamespaceSpec, ObjectMeta, PhysicalContainerSpec, PhysicalContainerStatus};
    use drydock_engine::runtime::{ContainerCreate, RuntimeReply, RuntimeRequest};
    use drydock_engine::store::{Registry, Store, StoreConfig};

    fn port(container_port: u16) -> PortMapping {
        PortMapping { protocol: Protocol::Tcp, host_port: None, container_port, host_ip: None }
    }

    /// A runtime holding busybox and alpine, and a container created from `create`; a store with
    /// physical container `pc` asking for `spec`, Running on that container.
    fn world(spec: PhysicalContainerSpec, create: ContainerCreate) -> (Store, SimRuntime) {
        let mut runtime = SimRuntime::new(1);
        runtime.add_image("busybox");
        runtime.add_image("alpine");
        let Ok(RuntimeReply::Created { id }) = runtime.execute(&RuntimeRequest::CreateContainer(create)) else {
            panic!("the create failed")
        };
        let mut store = Store::in_memory(Registry::builtin(), StoreConfig::default());
        store
            .create(WallTime(1), Object::from_spec::<Namespace>(ObjectMeta::named(None, "ns"), &NamespaceSpec {}))
            .unwrap();
        let pc = Object::from_spec::<PhysicalContainer>(ObjectMeta::named(Some("ns"), "pc"), &spec);
        let mut pc = (*store.create(WallTime(1), pc).unwrap()).clone();
        pc.set_status::<PhysicalContainer>(&PhysicalContainerStatus {
            phase: ContainerPhase::Running,
            runtime_id: Some(id),
            ..Default::default()
        });
        store.update_status(pc).unwrap();
        (store, runtime)
    }

    fn judged(spec: PhysicalContainerSpec, create: ContainerCreate) -> Result<(), String> {
        let (store, runtime) = world(spec, create);
        containers_run_their_specs(&View::of(&store, &runtime))
    }

    fn asking() -> PhysicalContainerSpec {
        PhysicalContainerSpec {
            image: Some("busybox".into()),
            env: BTreeMap::from([("A".into(), "1".into())]),
            ports: vec![port(80)],
            labels: BTreeMap::from([("app".into(), "web".into()), ("drydock.dev/creator".into(), "mallory".into())]),
            ..Default::default()
        }
    }

    fn made() -> ContainerCreate {
        ContainerCreate {
            name: "ns-pc".into(),
            image: "docker.io/library/busybox:latest".into(),
            env: BTreeMap::from([("A".into(), "1".into())]),
            ports: vec![port(80)],
            labels: BTreeMap::from([("app".into(), "web".into()), ("drydock.dev/creator".into(), "engine-0".into())]),
            ..Default::default()
        }
    }

    #[test]
    fn a_container_made_as_asked_passes_and_the_engines_own_labels_win() {
        assert_eq!(judged(asking(), made()), Ok(()));
    }

    #[test]
    fn a_container_missing_what_its_spec_asks_is_caught() {
        let cases: [(&str, ContainerCreate); 4] = [
            ("image", ContainerCreate { image: "alpine".into(), ..made() }),
            ("env", ContainerCreate { env: BTreeMap::new(), ..made() }),
            ("port", ContainerCreate { ports: vec![port(81)], ..made() }),
            ("label", ContainerCreate { labels: BTreeMap::new(), ..made() }),
        ];
        for (what, create) in cases {
            let judged = judged(asking(), create);
            assert!(judged.as_ref().is_err_and(|e| e.contains("PhysicalContainer/ns/pc")), "{what}: {judged:?}");
        }
    }

    #[test]
    fn an_image_a_moved_tag_once_named_still_counts() {
        let (store, mut runtime) = world(asking(), made());
        // The tag moves to another image, as a pull after a push would move it.
        runtime.registry_push("busybox");
        runtime.execute(&RuntimeRequest::PullImage { reference: "busybox".into() }).unwrap();
        let Ok(RuntimeReply::Image(now)) =
            runtime.execute(&RuntimeRequest::InspectImage { reference: "busybox".into() })
        else {
            panic!("busybox is gone")
        };
        let id = runtime.containers().next().unwrap().id.clone();
        assert_ne!(runtime.created_with(&id).unwrap().image_id, Some(now.id.as_str()), "the tag moved");
        assert_eq!(containers_run_their_specs(&View::of(&store, &runtime)), Ok(()));
    }
}
