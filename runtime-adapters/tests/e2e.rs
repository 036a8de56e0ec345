//! End to end: the engine, through the tokio driver, makes real Docker run a namespace of three
//! physical containers, stops one through its spec, and removes everything on namespace delete.
#![allow(clippy::unwrap_used)]

use drydock_adapters::testing::{TEST_IMAGE, docker_or_skip, ensure_test_image};
use drydock_adapters::{Driver, Runtime, SharedStore};
use drydock_engine::api::{
    ContainerPhase, Namespace, NamespaceSpec, Object, ObjectKey, ObjectMeta, PhysicalContainer, PhysicalContainerSpec,
    Resource, names,
};
use drydock_engine::runtime::{ContainerState, RuntimeReply, RuntimeRequest};
use drydock_engine::store::{DeleteOptions, Store, StoreRequest};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Exits promptly (code 0) on SIGTERM, so a stop does not wait for the kill timeout.
const COMMAND: [&str; 3] = ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"];

fn phase(store: &Store, ns: &str, name: &str) -> Option<ContainerPhase> {
    let obj = store.get(&ObjectKey::namespaced(PhysicalContainer::KIND, ns, name))?;
    obj.status::<PhysicalContainer>().ok().map(|s| s.phase)
}

async fn containers_of<R: Runtime>(runtime: &R, ns: &str) -> Vec<drydock_engine::runtime::ContainerInfo> {
    let labels = BTreeMap::from([(names::LABEL_NAMESPACE.to_string(), ns.to_string())]);
    match runtime.execute(RuntimeRequest::ListContainers { labels }).await.unwrap() {
        RuntimeReply::Containers(list) => list,
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_runs_stops_and_cleans_up_a_namespace_on_docker() {
    let Some(docker) = docker_or_skip("e2e").await else { return };
    ensure_test_image().unwrap();
    let runtime = Arc::new(docker);
    let ns = format!("e2e-{}-{}", std::process::id(), drydock_adapters::clock::wall_now().0 % 100_000);
    let store = SharedStore::in_memory();
    store
        .execute(StoreRequest::Create {
            object: Object::from_spec::<Namespace>(ObjectMeta::named(None, &ns), &NamespaceSpec {}),
        })
        .unwrap();
    let names = ["web", "api", "worker"];
    for name in names {
        let spec = PhysicalContainerSpec {
            image: Some(TEST_IMAGE.into()),
            command: COMMAND.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        let object = Object::from_spec::<PhysicalContainer>(ObjectMeta::named(Some(&ns), name), &spec);
        store.execute(StoreRequest::Create { object }).unwrap();
    }
    let mut driver = Driver::builtin("e2e-test", store.clone(), runtime.clone());

    let all_running = |s: &Store| names.iter().all(|n| phase(s, &ns, n) == Some(ContainerPhase::Running));
    assert!(driver.run_for(Duration::from_secs(60), all_running).await, "not all Running within 60 s");
    let running = containers_of(runtime.as_ref(), &ns).await;
    assert_eq!(running.len(), 3);
    assert!(running.iter().all(|c| c.state == ContainerState::Running), "{running:?}");

    // Stop one through its spec.
    let key = ObjectKey::namespaced(PhysicalContainer::KIND, &ns, "api");
    let mut api = (*store.get(&key).unwrap()).clone();
    api.spec_mut()["stop"] = serde_json::Value::Bool(true);
    store.execute(StoreRequest::Update { object: api }).unwrap();
    let api_exited = |s: &Store| phase(s, &ns, "api") == Some(ContainerPhase::Exited);
    assert!(driver.run_for(Duration::from_secs(30), api_exited).await, "api did not reach Exited");
    let after = containers_of(runtime.as_ref(), &ns).await;
    let state_of = |name: &str| after.iter().find(|c| c.name == format!("{ns}-{name}")).map(|c| (c.state, c.exit_code));
    assert_eq!(state_of("api"), Some((ContainerState::Exited, Some(0))));
    assert_eq!(state_of("web").map(|s| s.0), Some(ContainerState::Running));
    assert_eq!(state_of("worker").map(|s| s.0), Some(ContainerState::Running));

    // Delete the namespace: all three runtime containers go, then the namespace.
    store
        .execute(StoreRequest::Delete {
            key: ObjectKey::cluster(Namespace::KIND, &ns),
            options: DeleteOptions::default(),
        })
        .unwrap();
    let ns_gone = |s: &Store| s.get(&ObjectKey::cluster(Namespace::KIND, &ns)).is_none();
    let gone = driver.run_for(Duration::from_secs(60), ns_gone).await;
    let leftovers = containers_of(runtime.as_ref(), &ns).await;
    for c in &leftovers {
        let _ = runtime.execute(RuntimeRequest::RemoveContainer { id: c.id.clone(), force: true }).await;
    }
    assert!(gone, "the namespace was not deleted within 60 s");
    assert!(leftovers.is_empty(), "runtime containers left behind: {leftovers:?}");
    assert!(store.read(|s| s.list(None, Some(&ns)).is_empty()), "objects left in the namespace");
}
