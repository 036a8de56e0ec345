//! The scenario driven by kube-rs (the Rust client), through its typed and dynamic APIs as a
//! controller author would use them. kube-rs shows a success without its HTTP code, so a
//! success is reported as 200; an error carries the server's code and reason.

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, ValidationDirective,
    WatchEvent, WatchParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The steps, as the Python driver prints them.
#[derive(Default)]
struct Steps(Vec<Value>);

impl Steps {
    fn report(&mut self, step: &str, code: u16, fields: Value) {
        let mut line = json!({"step": step, "code": code});
        if let (Some(line), Value::Object(fields)) = (line.as_object_mut(), fields) {
            line.extend(fields);
        }
        self.0.push(line);
    }

    /// The result, reporting 200 or the error's code, reason and kind.
    fn attempt<T>(&mut self, step: &str, result: kube::Result<T>) -> Option<T> {
        match result {
            Ok(value) => {
                self.report(step, 200, json!({}));
                Some(value)
            }
            Err(kube::Error::Api(e)) => {
                self.report(step, e.code, json!({"reason": e.reason, "message": e.message, "kind": "Status"}));
                None
            }
            Err(other) => {
                self.report(step, 0, json!({"message": other.to_string()}));
                None
            }
        }
    }
}

fn resource(input: &Value, plural: &str, kind: &str) -> ApiResource {
    let (group, version) = (input["group"].as_str().unwrap(), input["version"].as_str().unwrap());
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: format!("{group}/{version}"),
        kind: kind.into(),
        plural: plural.into(),
    }
}

fn object(body: &Value) -> DynamicObject {
    serde_json::from_value(body.clone()).unwrap()
}

fn name_of(body: &Value) -> String {
    body["metadata"]["name"].as_str().unwrap().to_string()
}

pub async fn drive(input: &Value) -> Vec<Value> {
    let kubeconfig = Kubeconfig::read_from(input["kubeconfig"].as_str().unwrap()).unwrap();
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await.unwrap();
    let client = Client::try_from(config).unwrap();
    let ns = input["namespace"].as_str().unwrap();
    let mut steps = Steps::default();

    let namespaces: Api<Namespace> = Api::all(client.clone());
    let mut namespace = Namespace::default();
    namespace.metadata.name = Some(ns.to_string());
    steps.attempt("create namespace", namespaces.create(&PostParams::default(), &namespace).await);
    if let Some(typed) = steps.attempt("read namespace typed", namespaces.get(ns).await) {
        let created = typed.metadata.creation_timestamp.map(|t| t.0.to_string());
        steps.report("typed namespace times", 200, json!({"created": created}));
    }
    for entry in input["objects"].as_array().unwrap() {
        let (plural, body) = (entry["plural"].as_str().unwrap(), &entry["body"]);
        let ar = resource(input, plural, body["kind"].as_str().unwrap());
        let api: Api<DynamicObject> = match entry["cluster"] == true {
            true => Api::all_with(client.clone(), &ar),
            false => Api::namespaced_with(client.clone(), ns, &ar),
        };
        let name = name_of(body);
        steps.attempt(&format!("create {plural}"), api.create(&PostParams::default(), &object(body)).await);
        if let Some(got) = steps.attempt(&format!("get {plural}"), api.get(&name).await) {
            let api_version = got.types.as_ref().map(|t| t.api_version.clone());
            steps.report(
                &format!("got {plural}"),
                200,
                json!({"name": got.metadata.name, "apiVersion": api_version, "spec": got.data["spec"]}),
            );
        }
        if entry["cluster"] == true {
            steps.attempt(&format!("delete {plural}"), api.delete(&name, &DeleteParams::default()).await);
        }
    }

    let paged = &input["paged"];
    let plural = paged["plural"].as_str().unwrap();
    let first_body = &paged["bodies"][0];
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), ns, &resource(input, plural, first_body["kind"].as_str().unwrap()));
    for body in paged["bodies"].as_array().unwrap() {
        steps.attempt("create for paging", api.create(&PostParams::default(), &object(body)).await);
    }
    let (mut names, mut pages, mut token) = (Vec::new(), 0, None::<String>);
    loop {
        let mut params = ListParams::default().limit(1);
        if let Some(token) = &token {
            params = params.continue_token(token);
        }
        let Some(page) = steps.attempt("list page", api.list(&params).await) else { break };
        pages += 1;
        names.extend(page.items.iter().filter_map(|o| o.metadata.name.clone()));
        token = page.metadata.continue_.filter(|t| !t.is_empty());
        if token.is_none() || pages > 100 {
            break;
        }
    }
    steps.report("list paged", 200, json!({"names": names, "pages": pages}));

    let name = name_of(first_body);
    let label = |object: Option<DynamicObject>, key: &str| {
        object.and_then(|o| o.metadata.labels.and_then(|l| l.get(key).cloned()))
    };
    let merge = Patch::Merge(json!({"metadata": {"labels": {"merge": "yes"}}}));
    let merged = steps.attempt("patch merge", api.patch(&name, &PatchParams::default(), &merge).await);
    steps.report("patched merge", 200, json!({"label": label(merged, "merge")}));
    let add: json_patch::Patch =
        serde_json::from_value(json!([{"op": "add", "path": "/metadata/labels/json", "value": "yes"}])).unwrap();
    let jsoned = steps.attempt("patch json", api.patch(&name, &PatchParams::default(), &Patch::Json::<()>(add)).await);
    steps.report("patched json", 200, json!({"label": label(jsoned, "json")}));
    let strategic = Patch::Strategic(json!({"metadata": {"labels": {"strategic": "yes"}}}));
    let patched =
        steps.attempt("patch strategic namespace", namespaces.patch(ns, &PatchParams::default(), &strategic).await);
    let strategic_label = patched.and_then(|n| n.metadata.labels.and_then(|l| l.get("strategic").cloned()));
    steps.report("patched strategic", 200, json!({"label": strategic_label}));

    // Server-side apply: a label the manager drops goes, another manager's different value is a
    // conflict, and force takes it.
    let applying = |labels: Value| {
        let mut body = first_body.clone();
        body["metadata"] = json!({"name": name, "labels": labels});
        Patch::Apply(body)
    };
    let owner = applying(json!({"applied": "a", "dropped": "x"}));
    steps.attempt("apply owner", api.patch(&name, &PatchParams::apply("compat-a"), &owner).await);
    let dropped = applying(json!({"applied": "a"}));
    let applied = steps.attempt("apply dropped", api.patch(&name, &PatchParams::apply("compat-a"), &dropped).await);
    steps.report("applied labels", 200, json!({"labels": applied.and_then(|o| o.metadata.labels)}));
    let other = applying(json!({"applied": "b"}));
    steps.attempt("apply conflict", api.patch(&name, &PatchParams::apply("compat-b"), &other).await);
    let forced = steps.attempt("apply forced", api.patch(&name, &PatchParams::apply("compat-b").force(), &other).await);
    steps.report("forced", 200, json!({"label": label(forced, "applied")}));

    let current = steps.attempt("get for watch", api.get(&name).await);
    let before = current.as_ref().and_then(|c| c.metadata.resource_version.clone()).unwrap_or_default();
    let watched = Patch::Merge(json!({"metadata": {"labels": {"watched": "yes"}}}));
    steps.attempt("patch for watch", api.patch(&name, &PatchParams::default(), &watched).await);
    let mut seen = None;
    if let Ok(stream) = api.watch(&WatchParams::default().timeout(10), &before).await {
        let mut stream = Box::pin(stream);
        while let Some(Ok(event)) = stream.next().await {
            if let WatchEvent::Modified(o) = &event
                && o.metadata.name.as_deref() == Some(&name)
                && o.metadata.labels.as_ref().and_then(|l| l.get("watched")).is_some_and(|v| v == "yes")
            {
                seen = Some("MODIFIED");
                break;
            }
        }
    }
    steps.report("watch from version", 200, json!({"seen": seen}));

    if let Some(mut stale) = current {
        stale.metadata.labels = Some([("stale".to_string(), "yes".to_string())].into());
        steps.attempt("replace stale", api.replace(&name, &PostParams::default(), &stale).await);
    }

    let dry = &paged["dry_run_body"];
    let dry_run = PostParams { dry_run: true, ..PostParams::default() };
    steps.attempt("create dry run", api.create(&dry_run, &object(dry)).await);
    steps.attempt("get after dry run", api.get(&name_of(dry)).await);

    let mut bad = first_body.clone();
    bad["metadata"] = json!({"name": "Not_A_Name"});
    steps.attempt("create invalid", api.create(&PostParams::default(), &object(&bad)).await);
    let mut typo = dry.clone();
    typo["metadata"] = json!({"name": "typo"});
    typo["spec"] = json!({"volumeNme": "x"});
    // kube-rs takes fieldValidation on patches: a server-side apply creates.
    let apply = |validation| PatchParams { field_validation: Some(validation), ..PatchParams::apply("compat") };
    let typo_patch = Patch::Apply(typo.clone());
    steps.attempt(
        "create unknown field strict",
        api.patch("typo", &apply(ValidationDirective::Strict), &typo_patch).await,
    );
    steps.attempt(
        "create unknown field ignored",
        api.patch("typo", &apply(ValidationDirective::Ignore), &typo_patch).await,
    );
    let pruned = steps.attempt("get unknown field ignored", api.get("typo").await);
    steps.report("pruned", 200, json!({"spec": pruned.map(|p| p.data["spec"].clone())}));
    steps.attempt("delete unknown field ignored", api.delete("typo", &DeleteParams::default()).await);
    steps.attempt("get missing", api.get("missing").await);
    steps.attempt("list bad selector", api.list(&ListParams::default().labels("a===b")).await);

    let cond = &input["conditions"];
    let lcs: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        ns,
        &resource(input, cond["plural"].as_str().unwrap(), "LogicalContainer"),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut parsed = Vec::new();
    while parsed.is_empty() && Instant::now() < deadline {
        if let Some(got) = steps.attempt("get for conditions", lcs.get(cond["name"].as_str().unwrap()).await) {
            let conditions = got.data["status"]["conditions"].clone();
            if let Ok(typed) =
                serde_json::from_value::<Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>>(conditions)
            {
                parsed = typed.iter().map(|c| c.last_transition_time.0.to_string()).collect();
            }
        }
        if parsed.is_empty() {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    steps.report("typed condition times", 200, json!({"parsed": parsed}));

    let bodies = paged["bodies"].as_array().unwrap();
    let propagations = [
        ("Background", DeleteParams::background()),
        ("Foreground", DeleteParams::foreground()),
        ("Orphan", DeleteParams::orphan()),
    ];
    for ((propagation, params), body) in propagations.into_iter().zip(bodies) {
        steps.attempt(&format!("delete {propagation}"), api.delete(&name_of(body), &params).await);
    }
    let wanted_gone: Vec<String> = bodies.iter().map(name_of).collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut left = Vec::new();
    while Instant::now() < deadline {
        let listed = steps.attempt("list after deletes", api.list(&ListParams::default()).await);
        left = listed.map(|l| l.items.into_iter().filter_map(|o| o.metadata.name).collect()).unwrap_or_default();
        left.sort();
        if !left.iter().any(|n| wanted_gone.contains(n)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    steps.report("deleted", 200, json!({"left": left}));
    let collection = &paged["collection"];
    for body in collection["bodies"].as_array().unwrap() {
        steps.attempt("create for collection", api.create(&PostParams::default(), &object(body)).await);
    }
    let selector = ListParams::default().labels(collection["selector"].as_str().unwrap());
    let gone = steps.attempt("delete collection", api.delete_collection(&DeleteParams::default(), &selector).await);
    let mut gone_names: Vec<String> = gone
        .and_then(|either| either.left())
        .map(|list| list.items.into_iter().filter_map(|o| o.metadata.name).collect())
        .unwrap_or_default();
    gone_names.sort();
    steps.report("deleted collection", 200, json!({"names": gone_names}));
    steps.attempt("delete namespace", namespaces.delete(ns, &DeleteParams::default()).await);
    steps.0
}
