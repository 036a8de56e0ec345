//! A real client, kube-rs 2 with k8s-openapi, over TCP: typed and dynamic CRUD, a 409 on a stale
//! replace, and `kube::runtime::watcher` relisting after a forced compaction.

use crate::common::store;
use drydock_adapters::SharedStore;
use drydock_daemon::api::{ApiOptions, router};
use drydock_engine::api::{Object, ObjectKey, ObjectMeta};
use drydock_engine::store::{DeleteOptions, StoreRequest};
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
};
use kube::runtime::watcher::{self, Event};
use kube::{Client, Config};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

const TOKEN: &str = "kube-token";

async fn serve(store: Arc<SharedStore>) -> Client {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = router(store, ApiOptions { token: Some(TOKEN.into()), ..ApiOptions::default() });
    tokio::spawn(async move { axum::serve(listener, app).await });
    let mut config = Config::new(url.parse().unwrap());
    config.auth_info.token = Some(secrecy::SecretString::from(TOKEN.to_string()));
    Client::try_from(config).unwrap()
}

fn pcs(client: &Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("drydock.dev", "v1", "PhysicalContainer");
    Api::namespaced_with(client.clone(), "demo", &ApiResource::from_gvk_with_plural(&gvk, "physicalcontainers"))
}

fn pc(name: &str) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "drydock.dev/v1", "kind": "PhysicalContainer",
        "metadata": {"name": name, "labels": {"app": "web"}}, "spec": {"image": "busybox:1.36"}}))
    .unwrap()
}

#[tokio::test]
async fn kube_rs_creates_reads_patches_and_deletes() {
    let client = serve(store(1000)).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "demo"}})).unwrap();
    let created = namespaces.create(&PostParams::default(), &ns).await.unwrap();
    assert!(created.metadata.creation_timestamp.is_some());
    assert_eq!(namespaces.get("demo").await.unwrap().metadata.name.as_deref(), Some("demo"));
    let api = pcs(&client);
    let a = api.create(&PostParams::default(), &pc("a")).await.unwrap();
    api.create(&PostParams::default(), &pc("b")).await.unwrap();
    let listed = api.list(&ListParams::default().labels("app=web").fields("metadata.name=a")).await.unwrap();
    assert_eq!(listed.items.iter().map(|o| o.metadata.name.clone().unwrap()).collect::<Vec<_>>(), ["a"]);
    let patched = api
        .patch("a", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"x": "1"}}})))
        .await
        .unwrap();
    assert_eq!(patched.metadata.labels.unwrap()["x"], "1");
    let error = api.replace("a", &PostParams::default(), &a).await.unwrap_err();
    assert!(matches!(&error, kube::Error::Api(s) if s.code == 409 && s.reason == "Conflict"), "{error:?}");
    let error = api.get("missing").await.unwrap_err();
    assert!(matches!(&error, kube::Error::Api(s) if s.code == 404 && s.reason == "NotFound"), "{error:?}");
    api.delete("b", &DeleteParams::foreground()).await.unwrap();
    let b = api.get("b").await.unwrap();
    assert!(b.metadata.deletion_timestamp.is_some());
    assert_eq!(b.metadata.finalizers, Some(vec!["foregroundDeletion".to_string()]));
}

#[derive(Debug)]
enum Seen {
    Init,
    InitApply(String, String),
    InitDone,
    Apply(String, String),
    Delete(String),
    Error(String),
}

/// What the watcher's events say the store holds.
#[derive(Default)]
struct View {
    view: BTreeMap<String, String>,
    buffer: BTreeMap<String, String>,
    init_done: usize,
    errors: Vec<String>,
}

impl View {
    fn apply(&mut self, seen: Seen) {
        match seen {
            Seen::Init => self.buffer.clear(),
            Seen::InitApply(n, rv) => {
                self.buffer.insert(n, rv);
            }
            Seen::InitDone => {
                self.view = std::mem::take(&mut self.buffer);
                self.init_done += 1;
            }
            Seen::Apply(n, rv) => {
                self.view.insert(n, rv);
            }
            Seen::Delete(n) => {
                self.view.remove(&n);
            }
            Seen::Error(e) => self.errors.push(e),
        }
    }
}

fn name_rv(o: &DynamicObject) -> (String, String) {
    (o.metadata.name.clone().unwrap_or_default(), o.metadata.resource_version.clone().unwrap_or_default())
}

fn create(store: &SharedStore, name: &str) {
    let object = Object::new("PhysicalContainer", ObjectMeta::named(Some("demo"), name), json!({"image": "busybox"}));
    store.execute(StoreRequest::Create { object }).unwrap();
}

/// The store's PhysicalContainers in demo: name -> resourceVersion.
fn truth(store: &SharedStore) -> BTreeMap<String, String> {
    store
        .read(|s| s.list(Some("PhysicalContainer"), Some("demo")))
        .iter()
        .map(|o| (o.metadata.name.to_string(), o.metadata.resource_version.to_string()))
        .collect()
}

#[tokio::test]
async fn the_watcher_relists_after_a_forced_compaction_and_converges() {
    let store = store(4);
    store
        .execute(StoreRequest::Create { object: Object::new("Namespace", ObjectMeta::named(None, "demo"), json!({})) })
        .unwrap();
    create(&store, "p0");
    let client = serve(store.clone()).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let stream = watcher::watcher(pcs(&client), watcher::Config::default());
    tokio::spawn(stream.for_each(move |event| {
        let seen = match event {
            Ok(Event::Init) => Seen::Init,
            Ok(Event::InitApply(o)) => {
                let (n, rv) = name_rv(&o);
                Seen::InitApply(n, rv)
            }
            Ok(Event::InitDone) => Seen::InitDone,
            Ok(Event::Apply(o)) => {
                let (n, rv) = name_rv(&o);
                Seen::Apply(n, rv)
            }
            Ok(Event::Delete(o)) => Seen::Delete(name_rv(&o).0),
            Err(e) => Seen::Error(e.to_string()),
        };
        let _ = tx.send(seen);
        std::future::ready(())
    }));

    let mut w = View::default();
    // First list.
    while w.init_done < 1 {
        let seen = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.unwrap().unwrap();
        w.apply(seen);
    }
    assert_eq!(w.view, truth(&store));
    // Let the watch connect, then write more than the log keeps without yielding: this test runs
    // on one thread, so the server's watch cannot read between these writes and finds its
    // version compacted.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for i in 1..=6 {
        create(&store, &format!("p{i}"));
    }
    store
        .execute(StoreRequest::Delete {
            key: ObjectKey::namespaced("PhysicalContainer", "demo", "p0"),
            options: DeleteOptions::default(),
        })
        .unwrap();
    // The watcher gets 410, relists and converges; one more write after that arrives as an event.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut wrote_after = false;
    loop {
        let seen = tokio::time::timeout_at(deadline, rx.recv()).await.expect("the watcher converges").unwrap();
        w.apply(seen);
        if w.init_done >= 2 && !wrote_after {
            create(&store, "after");
            wrote_after = true;
        }
        if wrote_after && w.view == truth(&store) {
            break;
        }
    }
    assert!(
        w.errors.iter().any(|e| e.contains("410")
            || e.to_lowercase().contains("expired")
            || e.contains("too old")
            || e.contains("compacted")),
        "{:?}",
        w.errors
    );
    assert!(w.init_done >= 2, "relisted: {}", w.init_done);
    assert!(w.view.contains_key("after") && !w.view.contains_key("p0"));
}
