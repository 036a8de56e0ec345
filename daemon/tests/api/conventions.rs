//! One test per API convention, in-process.

use crate::common::*;
use axum::http::StatusCode;
use drydock_daemon::api::ApiOptions;
use serde_json::json;
use tower::ServiceExt;

#[tokio::test]
async fn discovery_lists_groups_kinds_and_short_names() {
    let app = app();
    let (code, api) = app.get("/api").await;
    assert_eq!((code, api["versions"].clone()), (StatusCode::OK, json!(["v1"])));
    let (_, core) = app.get("/api/v1").await;
    let ns = core["resources"].as_array().unwrap().iter().find(|r| r["name"] == "namespaces").unwrap();
    assert_eq!((ns["namespaced"].clone(), ns["shortNames"].clone()), (json!(false), json!(["ns"])));
    let (_, groups) = app.get("/apis").await;
    assert_eq!(groups["groups"][0]["name"], "drydock.dev");
    assert_eq!(groups["groups"][0]["preferredVersion"]["groupVersion"], "drydock.dev/v1");
    let (code, group) = app.get("/apis/drydock.dev").await;
    assert_eq!((code, group["kind"].clone()), (StatusCode::OK, json!("APIGroup")));
    let (_, list) = app.get("/apis/drydock.dev/v1").await;
    let names: Vec<&str> = list["resources"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    for plural in ["physicalcontainers", "physicalcontainers/status", "containerimages", "logicalcontainers", "leases"]
    {
        assert!(names.contains(&plural), "{plural} in {names:?}");
    }
    let pc = list["resources"].as_array().unwrap().iter().find(|r| r["name"] == "physicalcontainers").unwrap();
    assert_eq!((pc["kind"].clone(), pc["namespaced"].clone()), (json!("PhysicalContainer"), json!(true)));
    assert!(pc["shortNames"].as_array().unwrap().contains(&json!("pc")));
    assert!(pc["verbs"].as_array().unwrap().contains(&json!("watch")));
    let (code, body) = app.get("/apis/nope.dev/v1").await;
    assert_status(code, &body, 404, "NotFound");
    let (code, version) = app.get("/version").await;
    assert_eq!((code, version["major"].clone()), (StatusCode::OK, json!("1")));
    for health in ["/healthz", "/readyz", "/livez"] {
        assert_eq!(app.get(health).await, (StatusCode::OK, json!("ok")));
    }
    let (code, openapi) = app.get("/openapi/v3").await;
    assert_eq!(code, StatusCode::OK);
    let url = openapi["paths"]["apis/drydock.dev/v1"]["serverRelativeURL"].as_str().unwrap();
    let (code, doc) = app.get(url).await;
    let patch = &doc["paths"]["/apis/drydock.dev/v1/namespaces/{namespace}/physicalcontainers/{name}"]["patch"];
    assert_eq!(
        (code, patch["x-kubernetes-group-version-kind"]["kind"].clone()),
        (StatusCode::OK, json!("PhysicalContainer"))
    );
}

#[tokio::test]
async fn a_token_is_required_when_configured() {
    let app = app_with(store(100), ApiOptions { token: Some("s3cret".into()), ..ApiOptions::default() });
    for call in [
        Call::new("GET", "/api"),
        Call::new("GET", "/healthz"),
        Call::new("GET", "/version"),
        Call::new("GET", "/healthz").token("wrong"),
        Call::new("GET", PCS).token("s3cre"),
        Call::new("POST", "/livez"),
    ] {
        let (code, body) = app.send(call).await;
        assert_status(code, &body, 401, "Unauthorized");
    }
    assert_eq!(app.send(Call::new("GET", "/api").token("s3cret")).await.0, StatusCode::OK);
    // The probes a supervisor sends without credentials, as the API server serves them.
    for probe in ["/livez", "/readyz"] {
        assert_eq!(app.send(Call::new("GET", probe)).await, (StatusCode::OK, json!("ok")), "{probe}");
    }
}

#[tokio::test]
async fn create_get_list_carry_api_version_and_resource_versions() {
    let app = app();
    app.namespace().await;
    let created = app.container("a", json!({"app": "web"})).await;
    assert_eq!(created["apiVersion"], "drydock.dev/v1");
    assert_eq!(created["metadata"]["resourceVersion"], "2");
    assert!(created["metadata"]["uid"].as_str().is_some_and(|u| !u.is_empty()));
    assert!(created["metadata"]["creationTimestamp"].as_str().unwrap().ends_with('Z'));
    let (code, got) = app.get(&format!("{PCS}/a")).await;
    assert_eq!((code, got["spec"]["image"].clone()), (StatusCode::OK, json!("busybox:1.36")));
    let (code, list) = app.get(PCS).await;
    assert_eq!(
        (code, list["kind"].clone(), list["metadata"]["resourceVersion"].clone()),
        (StatusCode::OK, json!("PhysicalContainerList"), json!("2"))
    );
    assert_eq!(list["items"][0]["apiVersion"], "drydock.dev/v1");
    let (_, all) = app.get("/apis/drydock.dev/v1/physicalcontainers").await;
    assert_eq!(all["items"].as_array().unwrap().len(), 1);
    let (code, body) = app.get(&format!("{PCS}/missing")).await;
    assert_status(code, &body, 404, "NotFound");
    assert_eq!(body["details"]["name"], "missing");
    let (code, body) = app
        .post(PCS, json!({"kind": "PhysicalContainer", "metadata": {"name": "a"}, "spec": {"image": "busybox"}}))
        .await;
    assert_status(code, &body, 409, "AlreadyExists");
    let (code, generated) = app
        .post(
            PCS,
            json!({"kind": "PhysicalContainer", "metadata": {"generateName": "gen-"}, "spec": {"image": "busybox"}}),
        )
        .await;
    assert_eq!(code, StatusCode::CREATED, "{generated}");
    let name = generated["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
    let (code, ns) = app.get("/api/v1/namespaces/demo").await;
    assert_eq!((code, ns["apiVersion"].clone()), (StatusCode::OK, json!("v1")));
}

#[tokio::test]
async fn selectors_filter_lists_and_bad_ones_are_400() {
    let app = app();
    app.namespace().await;
    app.container("a", json!({"a": "b", "e": "x", "g": ""})).await;
    app.container("b", json!({"a": "b", "e": "y", "g": "1", "f": "1"})).await;
    app.container("c", json!({"a": "b", "c": "d", "e": "x", "g": ""})).await;
    app.container("d", json!({"a": "z"})).await;
    let names = |list: &serde_json::Value| -> Vec<String> {
        list["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap().to_string()).collect()
    };
    let (code, list) = app.get(&format!("{PCS}?labelSelector=a%3Db%2Cc!%3Dd%2Ce%20in%20(x%2Cy)%2C!f%2Cg")).await;
    assert_eq!((code, names(&list)), (StatusCode::OK, vec!["a".to_string()]));
    let (_, list) = app.get(&format!("{PCS}?fieldSelector=metadata.name%3Dd")).await;
    assert_eq!(names(&list), vec!["d"]);
    let (_, list) = app.get(&format!("{PCS}?fieldSelector=metadata.name!%3Dd,metadata.namespace%3Ddemo")).await;
    assert_eq!(names(&list), vec!["a", "b", "c"]);
    for bad in
        ["labelSelector=a%20in%20x", "labelSelector=(", "fieldSelector=spec.image%3Dx", "fieldSelector=metadata.name"]
    {
        let (code, body) = app.get(&format!("{PCS}?{bad}")).await;
        assert_status(code, &body, 400, "BadRequest");
    }
}

#[tokio::test]
async fn update_with_a_stale_resource_version_is_a_conflict() {
    let app = app();
    app.namespace().await;
    let mut object = app.container("a", json!({})).await;
    object["metadata"]["labels"] = json!({"v": "1"});
    let (code, updated) = app.put(&format!("{PCS}/a"), object.clone()).await;
    assert_eq!((code, updated["metadata"]["labels"]["v"].clone()), (StatusCode::OK, json!("1")));
    object["metadata"]["labels"] = json!({"v": "2"});
    let (code, body) = app.put(&format!("{PCS}/a"), object.clone()).await; // still the old resourceVersion
    assert_status(code, &body, 409, "Conflict");
    object["metadata"].as_object_mut().unwrap().remove("resourceVersion");
    let (code, _) = app.put(&format!("{PCS}/a"), object.clone()).await; // unconditional
    assert_eq!(code, StatusCode::OK);
    object["metadata"]["name"] = json!("b");
    let (code, body) = app.put(&format!("{PCS}/a"), object).await;
    assert_status(code, &body, 400, "BadRequest");
}

#[tokio::test]
async fn merge_json_and_strategic_patches_apply() {
    let app = app();
    app.namespace().await;
    app.container("a", json!({"keep": "1"})).await;
    let uri = format!("{PCS}/a");
    let (code, body) =
        app.patch(&uri, "application/merge-patch+json", json!({"metadata": {"labels": {"m": "1"}}})).await;
    assert_eq!((code, body["metadata"]["labels"].clone()), (StatusCode::OK, json!({"keep": "1", "m": "1"})));
    let (code, body) = app.patch(&uri, "application/json-patch+json", json!([{"op": "add", "path": "/metadata/labels/j", "value": "2"}, {"op": "remove", "path": "/metadata/labels/keep"}])).await;
    assert_eq!((code, body["metadata"]["labels"].clone()), (StatusCode::OK, json!({"j": "2", "m": "1"})));
    let (code, body) = app
        .patch(
            &uri,
            "application/strategic-merge-patch+json",
            json!({"metadata": {"labels": {"s": "3"}}, "$patch": "merge"}),
        )
        .await;
    assert_eq!((code, body["metadata"]["labels"]["s"].clone()), (StatusCode::OK, json!("3")));
    let (code, body) = app
        .patch(
            &uri,
            "application/json-patch+json",
            json!([{"op": "test", "path": "/metadata/labels/j", "value": "nope"}]),
        )
        .await;
    assert_status(code, &body, 422, "Invalid");
    let (code, body) = app
        .patch(
            &uri,
            "application/merge-patch+json",
            json!({"metadata": {"resourceVersion": "1", "labels": {"x": "y"}}}),
        )
        .await;
    assert_status(code, &body, 409, "Conflict");
    let (code, body) = app.patch(&uri, "text/plain", json!({})).await;
    assert_status(code, &body, 415, "UnsupportedMediaType");
    let (code, body) = app.patch(&uri, "application/merge-patch+json", json!({"spec": {"image": "other"}})).await;
    assert_status(code, &body, 422, "Invalid");
    let (code, body) = app.patch(&format!("{PCS}/missing"), "application/merge-patch+json", json!({})).await;
    assert_status(code, &body, 404, "NotFound");
    // Server-side apply creates, then merges.
    let apply =
        "apiVersion: drydock.dev/v1\nkind: PhysicalContainer\nmetadata:\n  name: ssa\nspec:\n  image: busybox\n";
    let call = |body: &str| Call {
        body: body.as_bytes().to_vec(),
        ..Call::new("PATCH", "/apis/drydock.dev/v1/namespaces/demo/physicalcontainers/ssa?fieldManager=t")
            .content_type("application/apply-patch+yaml")
    };
    assert_eq!(app.send(call(apply)).await.0, StatusCode::CREATED);
    let (code, body) = app.send(call(&format!("{apply}  stop: true\n"))).await;
    assert_eq!((code, body["spec"]["stop"].clone()), (StatusCode::OK, json!(true)));
}

#[tokio::test]
async fn delete_honours_propagation_and_preconditions() {
    let app = app();
    app.namespace().await;
    let a = app.container("a", json!({})).await;
    let uri = format!("{PCS}/a");
    let delete = |body: serde_json::Value| Call::new("DELETE", "").json(&body);
    let (code, body) = app.send(Call { uri: &uri, ..delete(json!({"preconditions": {"uid": "not-it"}})) }).await;
    assert_status(code, &body, 409, "Conflict");
    let (code, body) = app.send(Call { uri: &uri, ..delete(json!({"preconditions": {"resourceVersion": "1"}})) }).await;
    assert_status(code, &body, 409, "Conflict");
    let (code, body) = app.send(Call { uri: &uri, ..delete(json!({"propagationPolicy": "Sideways"})) }).await;
    assert_status(code, &body, 400, "BadRequest");
    let rv = a["metadata"]["resourceVersion"].clone();
    let uid = a["metadata"]["uid"].clone();
    let (code, body) = app.send(Call { uri: &uri, ..delete(json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground", "preconditions": {"uid": uid, "resourceVersion": rv}})) }).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert!(body["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(body["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    app.container("b", json!({})).await;
    let (code, body) = app.send(Call::new("DELETE", &format!("{PCS}/b?propagationPolicy=Orphan"))).await;
    assert_eq!((code, body["metadata"]["finalizers"].clone()), (StatusCode::OK, json!(["orphan"])));
    app.container("c", json!({})).await;
    let (code, _) = app.send(Call::new("DELETE", &format!("{PCS}/c"))).await;
    assert_eq!(code, StatusCode::OK);
    let (code, _) = app.get(&format!("{PCS}/c")).await;
    assert_eq!(code, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_status_subresource_writes_only_status() {
    let app = app();
    app.namespace().await;
    let mut object = app.container("a", json!({})).await;
    object["status"] = json!({"phase": "Running"});
    let (code, body) = app.put(&format!("{PCS}/a"), object.clone()).await;
    assert_eq!((code, body["status"].clone()), (StatusCode::OK, json!({})));
    object["metadata"]["labels"] = json!({"ignored": "yes"});
    let (code, body) = app.put(&format!("{PCS}/a/status"), object).await;
    assert_eq!((code, body["status"]["phase"].clone()), (StatusCode::OK, json!("Running")));
    assert_eq!(body["metadata"].get("labels"), None);
    let (code, body) = app
        .patch(&format!("{PCS}/a/status"), "application/merge-patch+json", json!({"status": {"runtimeId": "abc"}}))
        .await;
    assert_eq!((code, body["status"]["runtimeId"].clone()), (StatusCode::OK, json!("abc")));
    let (code, body) = app.get(&format!("{PCS}/a/status")).await;
    assert_eq!((code, body["status"]["phase"].clone()), (StatusCode::OK, json!("Running")));
    let (code, body) = app.send(Call::new("POST", &format!("{PCS}/a/status")).json(&json!({}))).await;
    assert_status(code, &body, 405, "MethodNotAllowed");
}

#[tokio::test]
async fn invalid_objects_carry_field_causes() {
    let app = app();
    app.namespace().await;
    let (code, body) =
        app.post(PCS, json!({"kind": "PhysicalContainer", "metadata": {"name": "a"}, "spec": {"image": 5}})).await;
    assert_status(code, &body, 422, "Invalid");
    assert_eq!(body["details"]["causes"][0]["field"], "spec.image", "{body}");
    // An unknown spec field is pruned (with a warning) unless the client asked for Strict, as
    // the API server prunes what a kind's schema does not know.
    let typo =
        json!({"kind": "PhysicalContainer", "metadata": {"name": "pruned"}, "spec": {"image": "busybox", "bogus": 1}});
    let (code, body) = app.post(&format!("{PCS}?fieldValidation=Strict"), typo.clone()).await;
    assert_status(code, &body, 400, "BadRequest");
    assert!(body["message"].as_str().unwrap().contains("spec.bogus"), "{body}");
    let response = app.router.clone().oneshot(Call::new("POST", PCS).json(&typo).request()).await.unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    let warning = response.headers().get("warning").map(|w| w.to_str().unwrap().to_string()).unwrap_or_default();
    assert!(warning.contains("unknown field") && warning.contains("spec.bogus"), "{warning}");
    let (_, stored) = app.get(&format!("{PCS}/pruned")).await;
    assert_eq!(stored["spec"], json!({"image": "busybox"}));
    let (code, body) = app
        .post(
            PCS,
            json!({"kind": "PhysicalContainer", "metadata": {"name": "Not_A_Name"}, "spec": {"image": "busybox"}}),
        )
        .await;
    assert_status(code, &body, 422, "Invalid");
    assert_eq!(body["details"]["kind"], "physicalcontainers");
    let (code, body) = app.post(PCS, json!({"kind": "ContainerImage", "metadata": {"name": "a"}})).await;
    assert_status(code, &body, 400, "BadRequest");
    let (code, body) =
        app.post(PCS, json!({"apiVersion": "v1", "kind": "PhysicalContainer", "metadata": {"name": "a"}})).await;
    assert_status(code, &body, 400, "BadRequest");
    let (code, body) =
        app.send(Call { body: b"{not json".to_vec(), ..Call::new("POST", PCS).content_type("application/json") }).await;
    assert_status(code, &body, 400, "BadRequest");
    let (code, body) = app
        .post(
            &format!("{PCS}?fieldValidation=Strict"),
            json!({"kind": "PhysicalContainer", "metadata": {"name": "a", "what": 1}, "spec": {"image": "busybox"}}),
        )
        .await;
    assert_status(code, &body, 400, "BadRequest");
    let (code, body) = app
        .post(
            "/apis/drydock.dev/v1/namespaces/nowhere/physicalcontainers",
            json!({"kind": "PhysicalContainer", "metadata": {"name": "a"}, "spec": {"image": "busybox"}}),
        )
        .await;
    assert_status(code, &body, 404, "NotFound");
    let (code, body) = app.send(Call::new("GET", PCS).accept("application/vnd.kubernetes.protobuf")).await;
    assert_status(code, &body, 406, "NotAcceptable");
}

#[tokio::test]
async fn a_terminating_namespace_is_forbidden() {
    let app = app();
    app.namespace().await;
    let (code, ns) = app.send(Call::new("DELETE", "/api/v1/namespaces/demo")).await;
    assert_eq!(code, StatusCode::OK);
    assert!(ns["metadata"]["deletionTimestamp"].is_string(), "the namespace finalizer keeps it: {ns}");
    let (code, body) = app
        .post(PCS, json!({"kind": "PhysicalContainer", "metadata": {"name": "a"}, "spec": {"image": "busybox"}}))
        .await;
    assert_status(code, &body, 403, "Forbidden");
    assert!(body["message"].as_str().unwrap().contains("because it is being terminated"));
}

#[tokio::test]
async fn bodies_over_the_limit_are_413() {
    let app = app_with(store(100), ApiOptions { max_body_bytes: 1024, ..ApiOptions::default() });
    app.namespace().await;
    let big = json!({"kind": "PhysicalContainer", "metadata": {"name": "a", "annotations": {"x": "y".repeat(2000)}}, "spec": {"image": "busybox"}});
    let (code, body) = app.post(PCS, big).await;
    assert_status(code, &body, 413, "RequestEntityTooLarge");
}

#[tokio::test]
async fn tables_show_columns_and_partial_objects() {
    let app = app();
    app.namespace().await;
    app.container("a", json!({})).await;
    let (code, table) =
        app.send(Call::new("GET", PCS).accept("application/json;as=Table;v=v1;g=meta.k8s.io,application/json")).await;
    assert_eq!((code, table["kind"].clone()), (StatusCode::OK, json!("Table")));
    let columns: Vec<&str> =
        table["columnDefinitions"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(columns, ["Name", "Phase", "Reason", "Container", "Image", "Age"]);
    assert_eq!(table["rows"][0]["cells"][0], "a");
    assert_eq!(table["rows"][0]["cells"][4], "busybox:1.36");
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(table["rows"][0]["object"]["metadata"]["name"], "a");
    let (_, table) = app
        .send(
            Call::new("GET", &format!("{PCS}?includeObject=Object"))
                .accept("application/json;as=Table;v=v1;g=meta.k8s.io"),
        )
        .await;
    assert_eq!(table["rows"][0]["object"]["kind"], "PhysicalContainer");
    let (_, table) =
        app.send(Call::new("GET", "/api/v1/namespaces").accept("application/json;as=Table;v=v1;g=meta.k8s.io")).await;
    assert_eq!(table["columnDefinitions"][1]["name"], "Status");
}

#[tokio::test]
async fn unknown_fields_are_warned_about_by_default() {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let app = app();
    app.namespace().await;
    let body = json!({"kind": "PhysicalContainer", "metadata": {"name": "a", "color": "red"}, "spec": {"image": "busybox"}, "extra": 1});
    let response = app.router.clone().oneshot(Call::new("POST", PCS).json(&body).request()).await.unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    let warnings: Vec<String> =
        response.headers().get_all("warning").iter().map(|v| v.to_str().unwrap().to_string()).collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings.iter().any(|w| w.contains("metadata.color")), "{warnings:?}");
    let created: serde_json::Value =
        serde_json::from_slice(&response.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(created["metadata"].get("color"), None);
}

#[tokio::test]
async fn a_create_repeated_with_its_request_id_answers_the_first_object() {
    let app = app();
    app.namespace().await;
    let pc = |metadata: serde_json::Value| {
        json!({"apiVersion": "drydock.dev/v1", "kind": "PhysicalContainer", "metadata": metadata,
            "spec": {"image": "busybox:1.36"}})
    };
    let named = pc(json!({"name": "a", "annotations": {"drydock.dev/request-id": "r1"}}));
    let (code, first) = app.post(PCS, named.clone()).await;
    assert_eq!(code, StatusCode::CREATED, "{first}");
    let (code, again) = app.post(PCS, named).await;
    assert_eq!(code, StatusCode::OK, "{again}");
    assert_eq!(again["metadata"]["uid"], first["metadata"]["uid"]);
    // Another request for the same name is still refused.
    let (code, body) = app.post(PCS, pc(json!({"name": "a", "annotations": {"drydock.dev/request-id": "r2"}}))).await;
    assert_status(code, &body, 409, "AlreadyExists");
    let (code, body) = app.post(PCS, pc(json!({"name": "a"}))).await;
    assert_status(code, &body, 409, "AlreadyExists");
    // generateName: the repeat is answered with the generated object, not a second one.
    let generated = pc(json!({"generateName": "g-", "annotations": {"drydock.dev/request-id": "r3"}}));
    let (code, first) = app.post(PCS, generated.clone()).await;
    assert_eq!(code, StatusCode::CREATED, "{first}");
    let (code, again) = app.post(PCS, generated).await;
    assert_eq!((code, again["metadata"]["name"].clone()), (StatusCode::OK, first["metadata"]["name"].clone()));
    let (_, list) = app.get(PCS).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 2, "{list}");
}
