//! Client actors and external actors: they act on the store, the runtime and the registry
//! directly, at the times the workload says. The external acts are faults of their own
//! (`external-removal`: `docker rm -f`, `docker rmi`; `foreign-lease`: a process that takes a pull
//! lease and dies): each happens only if its fault fires.

use super::World;
use super::env::Disruption;
use crate::checker::Happening;
use crate::facts::process_identity;
use crate::probes::Probe;
use crate::trace::{ClientAct, ExternalAct, Fault, Key, Record, outcome};
use crate::workload::{ClientOp, ContainerOp, ExternalOp, Owner, Target, merge_patch};
use drydock_engine::MonoTime;
use drydock_engine::api::container::{Mount, NetworkAttachment};
use drydock_engine::api::logical::LogicalContainer;
use drydock_engine::api::{
    ContainerImage, ContainerImageSpec, Lease, LeaseSpec, Namespace, NamespaceSpec, Object, ObjectKey, ObjectMeta,
    PhysicalContainer, PhysicalContainerSpec, Resource, names,
};
use drydock_engine::controllers::image::pull_lease_name;
use drydock_engine::runtime::{ContainerCreate, NetworkCreate, RuntimeReply, RuntimeRequest, VolumeCreate};
use drydock_engine::store::{DeleteOptions, Propagation, StoreError, StoreReply};
use drydock_faults::FaultKind;
use std::sync::Arc;

impl World<'_> {
    pub(super) fn client(&mut self, now: MonoTime, index: usize) {
        self.env.stats.client_ops += 1;
        let wall = super::true_now(now).wall;
        let op = self.workload.ops[index].op.clone();
        let result: Result<Arc<Object>, StoreError> = match &op {
            ClientOp::CreateNamespace { name, engine, workload } => {
                self.env.record(Record::Client(ClientAct::Create { key: Key::new(Namespace::KIND, None, name) }));
                let mut meta = ObjectMeta::named(None, name);
                if let Some(engine) = engine {
                    meta.annotations.insert(names::ANNOTATION_ENGINE.into(), process_identity(*engine));
                }
                if let Some(workload) = workload {
                    meta.annotations.insert(names::ANNOTATION_WORKLOAD.into(), workload.clone());
                }
                self.store.create(wall, Object::from_spec::<Namespace>(meta, &NamespaceSpec {}))
            }
            ClientOp::DeleteNamespace { name } => {
                let key = ObjectKey::cluster(Namespace::KIND, name);
                self.client_deletes(&key, Propagation::Background);
                self.store.delete(wall, &key, &DeleteOptions::default())
            }
            ClientOp::CreateImage { namespace, name, image, pull_policy, pull_retry_limit } => {
                let key = Key::new(ContainerImage::KIND, Some(namespace), name);
                self.env.record(Record::Client(ClientAct::CreateImage { key, image }));
                let spec = ContainerImageSpec {
                    image: image.clone(),
                    pull_policy: *pull_policy,
                    pull_retry_limit: *pull_retry_limit,
                    build: None,
                };
                self.store
                    .create(wall, Object::from_spec::<ContainerImage>(ObjectMeta::named(Some(namespace), name), &spec))
            }
            ClientOp::DeleteImage { namespace, name } => {
                let key = ObjectKey::namespaced(ContainerImage::KIND, namespace, name);
                self.client_deletes(&key, Propagation::Background);
                self.store.delete(wall, &key, &DeleteOptions::default())
            }
            ClientOp::CreateContainer(c) => {
                let key = Key::new(PhysicalContainer::KIND, Some(&c.namespace), &c.name);
                self.env.record(Record::Client(ClientAct::Create { key }));
                let object = self.container_object(c);
                self.store.create(wall, object)
            }
            ClientOp::CreateLogical { namespace, name, spec } => {
                let key = Key::new(LogicalContainer::KIND, Some(namespace), name);
                self.env.record(Record::Client(ClientAct::CreateLogical { key, mode: spec.mode }));
                let object = Object::from_spec::<LogicalContainer>(ObjectMeta::named(Some(namespace), name), &**spec);
                self.store.create(wall, object)
            }
            ClientOp::DeleteLogical { namespace, name, propagation } => {
                let key = ObjectKey::namespaced(LogicalContainer::KIND, namespace, name);
                let options = DeleteOptions { propagation: *propagation, ..Default::default() };
                self.client_deletes(&key, *propagation);
                self.store.delete(wall, &key, &options)
            }
            ClientOp::StopLogical { namespace, name } => {
                let key = ObjectKey::namespaced(LogicalContainer::KIND, namespace, name);
                self.env.record(Record::Client(ClientAct::Stop { key: (&key).into() }));
                self.set_stop(key)
            }
            ClientOp::StopContainer { namespace, name } => {
                let key = ObjectKey::namespaced(PhysicalContainer::KIND, namespace, name);
                self.env.record(Record::Client(ClientAct::Stop { key: (&key).into() }));
                match self.store.get(&key).map(|o| (**o).clone()) {
                    Some(mut object) => {
                        if let Some(spec) = object.spec_mut().as_object_mut() {
                            spec.insert("stop".into(), serde_json::Value::Bool(true));
                        }
                        self.store.update(object)
                    }
                    None => Err(StoreError::NotFound { key: key.to_string() }),
                }
            }
            ClientOp::DeleteContainer { namespace, name, propagation } => {
                let key = ObjectKey::namespaced(PhysicalContainer::KIND, namespace, name);
                let options = DeleteOptions { propagation: *propagation, ..Default::default() };
                self.client_deletes(&key, *propagation);
                self.store.delete(wall, &key, &options)
            }
            ClientOp::Create { target, spec, labels, owner } => {
                self.env.record(Record::Client(ClientAct::Create { key: target_key(target) }));
                let object = self.generic_object(target, spec, labels, owner.as_ref());
                self.store.create(wall, object)
            }
            ClientOp::Update { target, spec } => {
                self.env.record(Record::Client(ClientAct::Update { key: target_key(target) }));
                self.rewrite_spec(&target.key(), |current| *current = spec.clone())
            }
            ClientOp::Patch { target, patch } => {
                self.env.record(Record::Client(ClientAct::Patch { key: target_key(target), patch }));
                self.rewrite_spec(&target.key(), |current| merge_patch(current, patch))
            }
            ClientOp::Delete { target, propagation } => {
                let key = target.key();
                let options = DeleteOptions { propagation: *propagation, ..Default::default() };
                self.client_deletes(&key, *propagation);
                self.store.delete(wall, &key, &options)
            }
            ClientOp::ReadLogs(read) => {
                self.open_reader(now, read);
                return;
            }
            ClientOp::External(op) => {
                let fault = match op {
                    ExternalOp::RemoveContainer { .. } | ExternalOp::RemoveImage { .. } => {
                        Some(FaultKind::ExternalRemoval)
                    }
                    ExternalOp::HoldLease { .. } => Some(FaultKind::ForeignLease),
                    ExternalOp::RemoveNetwork { .. } | ExternalOp::RemoveVolume { .. } => {
                        Some(FaultKind::ExternalRemoval)
                    }
                    ExternalOp::CreateContainer { .. }
                    | ExternalOp::Push { .. }
                    | ExternalOp::Leftover { .. }
                    | ExternalOp::CreateNetwork { .. }
                    | ExternalOp::CreateVolume { .. }
                    | ExternalOp::RemoveOwn { .. }
                    | ExternalOp::WriteContext { .. }
                    | ExternalOp::RunUsing { .. } => None,
                };
                if let Some(kind) = fault
                    && !self.env.fires(kind)
                {
                    self.env.record(Record::ExternalSkipped { op, fault: kind });
                    return;
                }
                let kind =
                    if fault.is_some() { crate::trace::EventKind::Fault } else { crate::trace::EventKind::Client };
                self.explain(kind, None);
                self.external(now, op);
                self.broadcast_runtime_events(now);
                self.runtime_link.follow_runtime_clock(&mut self.env, &self.runtime);
                return;
            }
        };
        if let Some(explainer) = &mut self.explainer {
            explainer.kind(crate::trace::EventKind::Client, None);
            if let Ok(object) = &result {
                explainer.object(&object.key());
            }
        }
        if let Err(StoreError::Invalid { .. }) = &result {
            self.probes.hit(Probe::AdmissionRefused);
        }
        if let Ok(object) = &result {
            self.observe(Happening::ClientWrote { object });
            if matches!(op, ClientOp::DeleteNamespace { .. }) && self.facts.in_flight.any_pull() {
                self.probes.hit(Probe::NamespaceDeletedDuringPull);
            }
        }
        self.describe_store_result(&result.map(StoreReply::Object));
        self.watches.broadcast(&mut self.env, &self.store, &self.processes, now);
    }

    /// Record a client's delete of `key`.
    fn client_deletes(&mut self, key: &ObjectKey, propagation: Propagation) {
        let act = ClientAct::Delete { key: key.into(), propagation };
        self.env.record(Record::Client(act));
    }

    fn set_stop(&mut self, key: ObjectKey) -> Result<Arc<Object>, StoreError> {
        match self.store.get(&key).map(|o| (**o).clone()) {
            Some(mut object) => {
                object.spec_mut()["stop"] = serde_json::Value::Bool(true);
                self.store.update(object)
            }
            None => Err(StoreError::NotFound { key: key.to_string() }),
        }
    }

    /// Rewrite the spec of the object at `key` as it is now (a client that read it just before).
    fn rewrite_spec(
        &mut self,
        key: &ObjectKey,
        edit: impl FnOnce(&mut serde_json::Value),
    ) -> Result<Arc<Object>, StoreError> {
        let Some(mut object) = self.store.get(key).map(|o| (**o).clone()) else {
            return Err(StoreError::NotFound { key: key.to_string() });
        };
        edit(object.spec_mut());
        self.store.update(object)
    }

    /// The object a generic create makes: an owner named but absent is left out (the create
    /// then makes an orphan, as a client with a stale read of its owner would).
    fn generic_object(
        &self,
        target: &Target,
        spec: &serde_json::Value,
        labels: &std::collections::BTreeMap<String, String>,
        owner: Option<&Owner>,
    ) -> Object {
        let mut meta = ObjectMeta::named(target.namespace.as_deref(), &target.name);
        meta.labels.clone_from(labels);
        if let Some(owner) = owner
            && let Some(o) = self.store.get(&ObjectKey::new(&owner.kind, target.namespace.as_deref(), &owner.name))
        {
            let mut reference = o.owner_reference(owner.controller);
            reference.block_owner_deletion = owner.block_owner_deletion;
            meta.owner_references.push(reference);
        }
        Object::new(&target.kind, meta, spec.clone())
    }

    fn container_object(&self, c: &ContainerOp) -> Object {
        let mut meta = ObjectMeta::named(Some(&c.namespace), &c.name);
        if let Some(owner) = &c.owner
            && let Some(o) = self.store.get(&ObjectKey::namespaced(PhysicalContainer::KIND, &c.namespace, owner))
        {
            let mut reference = o.owner_reference(false);
            reference.block_owner_deletion = c.block_owner_deletion;
            meta.owner_references.push(reference);
        }
        let spec = PhysicalContainerSpec {
            image: c.image.clone(),
            image_ref: c.image_ref.clone(),
            retain: c.retain,
            replace_existing: c.replace_existing,
            labels: c.labels.clone(),
            command: c.command.clone(),
            ports: c.ports.clone(),
            mounts: c.mounts.clone(),
            env: c.env.clone(),
            container_name: c.container_name.clone(),
            networks: c.networks.clone(),
            files: c.files.clone(),
            ..Default::default()
        };
        Object::from_spec::<PhysicalContainer>(meta, &spec)
    }

    /// Write a pull lease as a holder that will never renew it.
    fn hold_lease(&mut self, now: MonoTime, reference: &str, seconds: u64) {
        let normalized = crate::runtime::reference_key(reference);
        let name = pull_lease_name(reference);
        let wall = super::true_now(now).wall;
        let spec = LeaseSpec {
            key: normalized,
            holder: Some("dead-engine/0".into()),
            acquire_time: Some(wall),
            renew_time: Some(wall),
            duration_ms: seconds * 1000,
        };
        let key = ObjectKey::cluster(Lease::KIND, &name);
        let result = match self.store.get(&key).map(|o| (**o).clone()) {
            Some(mut existing) => {
                // A well-behaved contender: it takes only a lease that is really free. (Judging by
                // the holder's timestamps would be wrong under clock skew; the world knows the
                // true expiry of every claim.)
                let live = existing.spec::<Lease>().ok().and_then(|s| s.holder).filter(|holder| {
                    self.facts.leases.of(&name).and_then(|claims| claims.get(holder)).is_some_and(|u| *u > wall)
                });
                if let Some(holder) = live {
                    self.env.record(Record::External(ExternalAct::LeaseHeld { name: &name, holder: &holder }));
                    return;
                }
                existing.spec = Arc::new(serde_json::to_value(&spec).unwrap_or_default());
                self.store.update(existing)
            }
            None => self.store.create(wall, Object::from_spec::<Lease>(ObjectMeta::named(None, &name), &spec)),
        };
        self.env.record(Record::External(ExternalAct::HoldLease { name: &name, seconds }));
        if let Ok(object) = &result
            && self.facts.leases.record(object, 0)
        {
            self.probes.hit(Probe::LeaseTakenOver);
        }
        self.describe_store_result(&result.map(StoreReply::Object));
        self.watches.broadcast(&mut self.env, &self.store, &self.processes, now);
    }

    /// `disrupt-while-uncertain` strikes: the act it scheduled for an uncertain create happens.
    pub(super) fn disrupt(&mut self, now: MonoTime, disruption: Disruption) {
        self.env.record(Record::Fault(Fault::Disrupts));
        match disruption {
            Disruption::RemoveContainer(name) => self.external(now, &ExternalOp::RemoveContainer { name }),
            Disruption::RemoveImage(reference) => self.external(now, &ExternalOp::RemoveImage { reference }),
            Disruption::RestartDaemon => self.restart_runtime(now),
        }
        self.broadcast_runtime_events(now);
        self.runtime_link.follow_runtime_clock(&mut self.env, &self.runtime);
    }

    fn external(&mut self, now: MonoTime, op: &ExternalOp) {
        self.runtime.set_now(super::true_now(now).wall);
        match op {
            ExternalOp::RemoveContainer { name } => {
                // `docker rm -f` takes a moment: the container shows `removing` meanwhile.
                let container = self.runtime.container(name).cloned();
                let removing = self.runtime_link.begin_removal(&mut self.env, &mut self.runtime, now, name, true);
                if let (Ok(_), Some(container)) = (&removing, &container) {
                    self.observe(Happening::ExternallyRemoved { container });
                }
                self.env.record(Record::External(ExternalAct::RemoveContainer { name, outcome: outcome(&removing) }));
            }
            ExternalOp::CreateContainer { name, image } => {
                let create = ContainerCreate {
                    name: name.clone(),
                    image: image.clone(),
                    command: Vec::new(),
                    env: Default::default(),
                    labels: Default::default(),
                    ..Default::default()
                };
                let result = self.runtime.execute(&RuntimeRequest::CreateContainer(create));
                let outcome = outcome(&result);
                self.env.record(Record::External(ExternalAct::CreateContainer { name, image, outcome }));
            }
            ExternalOp::RemoveImage { reference } => {
                let result =
                    self.runtime.execute(&RuntimeRequest::RemoveImage { reference: reference.clone(), force: true });
                self.env.record(Record::External(ExternalAct::RemoveImage { reference, outcome: outcome(&result) }));
            }
            ExternalOp::HoldLease { reference, seconds } => self.hold_lease(now, reference, *seconds),
            ExternalOp::Leftover { namespace, name, image, creator, retained } => {
                self.leftover(namespace, name, image, *creator, *retained)
            }
            ExternalOp::CreateNetwork { name } => {
                let create = NetworkCreate { name: name.clone(), labels: Default::default() };
                let result = self.runtime.execute(&RuntimeRequest::CreateNetwork(create));
                self.env.record(Record::External(ExternalAct::CreateNetwork { name, outcome: outcome(&result) }));
            }
            ExternalOp::RemoveNetwork { name } => {
                let result = self.runtime.execute(&RuntimeRequest::RemoveNetwork { id: name.clone() });
                self.env.record(Record::External(ExternalAct::RemoveNetwork { name, outcome: outcome(&result) }));
            }
            ExternalOp::CreateVolume { name } => {
                let create = VolumeCreate { name: name.clone(), labels: Default::default() };
                let result = self.runtime.execute(&RuntimeRequest::CreateVolume(create));
                self.env.record(Record::External(ExternalAct::CreateVolume { name, outcome: outcome(&result) }));
            }
            ExternalOp::RemoveVolume { name } => {
                let result = self.runtime.execute(&RuntimeRequest::RemoveVolume { name: name.clone() });
                self.env.record(Record::External(ExternalAct::RemoveVolume { name, outcome: outcome(&result) }));
            }
            ExternalOp::WriteContext { dir, files } => {
                self.runtime.add_build_context(dir, files.clone());
                self.env.record(Record::External(ExternalAct::WriteContext { dir, files: files.len() }));
            }
            ExternalOp::RemoveOwn { name } => {
                let result = self.runtime.execute(&RuntimeRequest::RemoveContainer { id: name.clone(), force: true });
                self.env.record(Record::External(ExternalAct::RemoveOwn { name, outcome: outcome(&result) }));
            }
            ExternalOp::RunUsing { name, seconds, network, volume } => self.run_using(name, *seconds, network, volume),
            ExternalOp::Push { reference } => {
                let digest = self.runtime.registry_push(reference);
                self.env.record(Record::External(ExternalAct::Push { reference, digest: &digest }));
            }
        }
    }

    /// A stranger's running container, attached to `network` and mounting `volume` at `/data`.
    fn run_using(&mut self, name: &str, seconds: u64, network: &Option<String>, volume: &Option<String>) {
        let create = ContainerCreate {
            name: name.to_string(),
            image: "busybox:latest".into(),
            command: vec!["sleep".into(), seconds.to_string()],
            mounts: volume
                .iter()
                .map(|v| Mount { source: v.clone(), target: "/data".into(), read_only: false })
                .collect(),
            networks: network.iter().map(|n| NetworkAttachment { name: n.clone(), aliases: Vec::new() }).collect(),
            ..Default::default()
        };
        let result = self.runtime.execute(&RuntimeRequest::CreateContainer(create)).and_then(|reply| match reply {
            RuntimeReply::Created { id } => self.runtime.execute(&RuntimeRequest::StartContainer { id }),
            other => Ok(other),
        });
        let (network, volume, outcome) = (network.as_deref(), volume.as_deref(), outcome(&result));
        self.env.record(Record::External(ExternalAct::RunUsing { name, network, volume, outcome }));
    }

    /// Plant a container an earlier life of engine `creator` made for an object the store lost.
    fn leftover(&mut self, namespace: &str, name: &str, image: &str, creator: usize, retained: bool) {
        let ns_key = ObjectKey::cluster(drydock_engine::api::Namespace::KIND, namespace);
        let Some(ns_uid) = self.store.get(&ns_key).map(|ns| ns.metadata.uid.0.clone()) else {
            self.env.record(Record::External(ExternalAct::LeftoverSkipped { namespace, name }));
            return;
        };
        let creator = process_identity(creator % self.processes.len());
        let owner = format!("lost-{namespace}-{name}");
        self.facts.lost_owners.insert(owner.clone());
        let mut labels = std::collections::BTreeMap::from([
            (names::LABEL_OWNER_UID.to_string(), owner),
            (names::LABEL_NAMESPACE.to_string(), namespace.to_string()),
            (names::LABEL_NAMESPACE_UID.to_string(), ns_uid),
            (names::LABEL_CREATOR.to_string(), creator.clone()),
        ]);
        if retained {
            labels.insert(names::LABEL_RETAIN.to_string(), "true".to_string());
        }
        let runtime_name = format!("{namespace}-{name}");
        let create =
            ContainerCreate { name: runtime_name.clone(), image: image.to_string(), labels, ..Default::default() };
        let result = self.runtime.execute(&RuntimeRequest::CreateContainer(create));
        let (container, outcome) = (runtime_name.as_str(), outcome(&result));
        self.env.record(Record::External(ExternalAct::Leftover { creator: &creator, retained, container, outcome }));
    }
}

/// The key of a generic act's target.
fn target_key(target: &Target) -> Key<'_> {
    Key::new(&target.kind, target.namespace.as_deref(), &target.name)
}
