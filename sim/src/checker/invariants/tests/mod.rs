//! Every built-in invariant against a hand-built violating case and a near miss. Invariants that
//! keep history are driven through the happenings they observe, as the world would.
//!
//! Here: the fixture (a store, a runtime, the world's facts, every invariant) and what concerns
//! them all; the cases of each invariant module are in the test module of the same name.

#![allow(clippy::unwrap_used)]

mod caches;
mod cleanup;
mod containers;
mod deletion;
mod failures;
mod images;
mod logical;
mod logs;
mod ownership;
mod reconciles;
mod resources;

use super::builtin;
use crate::checker::{Checker, Happening, Invariant, View, check_all};
use crate::facts::Facts;
use crate::runtime::SimRuntime;
use drydock_engine::api::logical::{LogicalContainer, LogicalContainerSpec, LogicalContainerStatus, LogicalMode};
use drydock_engine::api::{
    ContainerImage, ContainerImageSpec, ContainerImageStatus, ImagePhase, Lease, LeaseSpec, Namespace, NamespaceSpec,
    Object, ObjectKey, ObjectMeta, PhysicalContainer, PhysicalContainerSpec, PhysicalContainerStatus, Resource, names,
};
use drydock_engine::runtime::{ContainerCreate, ContainerInfo, ContainerState, RuntimeReply, RuntimeRequest};
use drydock_engine::store::{DeleteOptions, Registry, Store, StoreConfig, StoreReply, StoreRequest};
use drydock_engine::{OpId, WallTime};
use std::sync::Arc;

/// A store with namespace `ns`, a runtime, the world's facts, and one instance of every invariant.
struct Fixture {
    store: Store,
    runtime: SimRuntime,
    facts: Facts,
    checker: Checker,
    logs: crate::logs::Logs,
    ns_uid: String,
}

impl Fixture {
    fn new() -> Self {
        let mut store = Store::in_memory(Registry::builtin(), StoreConfig::default());
        let ns = store
            .create(WallTime(1), Object::from_spec::<Namespace>(ObjectMeta::named(None, "ns"), &NamespaceSpec {}))
            .unwrap();
        Fixture {
            store,
            runtime: SimRuntime::new(1),
            facts: Facts::default(),
            checker: Checker::builtin(),
            logs: crate::logs::Logs::default(),
            ns_uid: ns.metadata.uid.0.clone(),
        }
    }

    fn view(&self) -> View<'_> {
        View {
            store: &self.store,
            runtime: &self.runtime,
            facts: &self.facts,
            logs: &self.logs,
            now: self.runtime.now(),
        }
    }

    fn observe(&mut self, happening: Happening<'_>) {
        let view = View {
            store: &self.store,
            runtime: &self.runtime,
            facts: &self.facts,
            logs: &self.logs,
            now: self.runtime.now(),
        };
        self.checker.observe(&view, &happening);
    }

    /// The invariant the checker reports first, if any.
    fn violated(&self) -> Option<String> {
        self.checker.check(&self.view()).map(|(name, _)| name.to_string())
    }

    fn message(&self) -> String {
        self.checker.check(&self.view()).map(|(_, message)| message).unwrap_or_default()
    }

    /// A physical container recording runtime container `id`.
    fn pc(&mut self, name: &str, spec: PhysicalContainerSpec, id: &str) -> Arc<Object> {
        let created = self
            .store
            .create(WallTime(1), Object::from_spec::<PhysicalContainer>(ObjectMeta::named(Some("ns"), name), &spec))
            .unwrap();
        let mut next = (*created).clone();
        next.set_status::<PhysicalContainer>(&PhysicalContainerStatus {
            runtime_id: Some(id.into()),
            ..Default::default()
        });
        self.store.update_status(next).unwrap()
    }

    fn logical(&mut self, name: &str, mode: LogicalMode) -> Arc<Object> {
        let spec = match mode {
            LogicalMode::Existing => {
                LogicalContainerSpec { mode, container_name: Some(format!("{name}-1")), ..Default::default() }
            }
            _ => LogicalContainerSpec { mode, image: Some("busybox".into()), ..Default::default() },
        };
        self.store
            .create(WallTime(1), Object::from_spec::<LogicalContainer>(ObjectMeta::named(Some("ns"), name), &spec))
            .unwrap()
    }

    fn container(&mut self, id: &str, labels: &[(&str, &str)]) -> ContainerInfo {
        let info = ContainerInfo {
            ports: Vec::new(),
            id: id.into(),
            name: format!("name-{id}"),
            image: "busybox".into(),
            labels: std::sync::Arc::new(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
            state: ContainerState::Running,
            exit_code: None,
            error: None,
        };
        self.runtime.insert(info.clone());
        info
    }

    /// A container drydock created for physical container `pc`.
    fn ours(&mut self, id: &str, pc: &Object, extra: &[(&str, &str)]) -> ContainerInfo {
        let (uid, ns_uid) = (pc.metadata.uid.0.clone(), self.ns_uid.clone());
        let mut labels = vec![
            (names::LABEL_OWNER_UID, uid.as_str()),
            (names::LABEL_NAMESPACE, "ns"),
            (names::LABEL_NAMESPACE_UID, ns_uid.as_str()),
            (names::LABEL_CREATOR, "engine-0"),
        ];
        labels.extend_from_slice(extra);
        self.container(id, &labels)
    }

    /// The runtime applied `request` successfully (a create answers with a fresh id).
    fn applied(&mut self, id: u64, request: &RuntimeRequest, removed: Option<&ContainerInfo>) {
        let result = match request {
            RuntimeRequest::CreateContainer(_) => Ok(RuntimeReply::Created { id: format!("new-{id}") }),
            _ => Ok(RuntimeReply::Done),
        };
        self.observe(Happening::RuntimeApplied { process: 0, id: OpId(id), request, result: &result, removed });
    }

    /// A store request applied with its result as the store gives it.
    fn store_applied(&mut self, request: StoreRequest) {
        let result = self.store.execute(WallTime(2), request.clone());
        self.observe(Happening::StoreApplied { process: 0, request: &request, result: &result });
    }
}

fn busybox() -> PhysicalContainerSpec {
    PhysicalContainerSpec { image: Some("busybox".into()), ..Default::default() }
}

fn create(name: &str, labels: &[(&str, &str)]) -> RuntimeRequest {
    RuntimeRequest::CreateContainer(ContainerCreate {
        name: name.into(),
        image: "busybox".into(),
        labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..Default::default()
    })
}

#[test]
fn every_built_in_invariant_holds_in_an_empty_world() {
    let fixture = Fixture::new();
    assert_eq!(fixture.violated(), None);
    assert_eq!(check_all(&fixture.view()), None);
    assert_eq!(builtin().len(), super::InvariantId::ALL.len());
}

/// A user's invariant runs beside the built-in ones, observing what it asks for.
#[test]
fn a_users_invariant_observes_and_checks_like_a_built_in_one() {
    #[derive(Default)]
    struct NoPulls(u32);
    impl Invariant for NoPulls {
        fn name(&self) -> &str {
            "no-pulls"
        }
        fn description(&self) -> &str {
            "nothing is ever pulled"
        }
        fn observes(&self) -> &'static [crate::checker::HappeningKind] {
            &[crate::checker::HappeningKind::RuntimeSent]
        }
        fn observe(&mut self, _view: &View<'_>, happening: &Happening<'_>) {
            if let Happening::RuntimeSent { request: RuntimeRequest::PullImage { .. }, .. } = happening {
                self.0 += 1;
            }
        }
        fn check(&self, _view: &View<'_>) -> Result<(), String> {
            if self.0 == 0 { Ok(()) } else { Err(format!("{} pulls", self.0)) }
        }
    }
    let mut w = Fixture::new();
    w.checker = Checker::new(Vec::new());
    w.checker.push(Box::new(NoPulls::default()));
    let key = ObjectKey::namespaced(ContainerImage::KIND, "ns", "img");
    let inspect = RuntimeRequest::InspectImage { reference: "busybox".into() };
    w.observe(Happening::RuntimeSent { process: 0, id: OpId(1), request: &inspect, issuer: &key });
    assert_eq!(w.violated(), None);
    let pull = RuntimeRequest::PullImage { reference: "busybox".into() };
    w.observe(Happening::RuntimeSent { process: 0, id: OpId(2), request: &pull, issuer: &key });
    assert_eq!(w.violated().as_deref(), Some("no-pulls"));
    assert_eq!(w.message(), "1 pulls");
}
