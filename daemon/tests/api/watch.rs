//! Watches in-process: events from a version, initial ADDED events, bookmarks, 410 Expired.

use crate::common::*;
use axum::http::StatusCode;
use drydock_daemon::api::ApiOptions;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

async fn watch_lines(app: &App, query: &str, accept: Option<&str>) -> Vec<Value> {
    let uri = format!("{PCS}?watch=1&{query}");
    let mut call = Call::new("GET", &uri);
    call.accept = accept;
    let (code, body) = app.send(call).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let text = match body {
        Value::String(text) => text,
        Value::Null => String::new(),
        one => format!("{one}\n"),
    };
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn summary(events: &[Value]) -> Vec<(String, String)> {
    events
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap().to_string(),
                e["object"]["metadata"]["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_watch_from_a_version_sends_later_changes_and_follows() {
    let app = app();
    app.namespace().await;
    app.container("a", json!({})).await; // rv 2
    app.patch(&format!("{PCS}/a"), "application/merge-patch+json", json!({"metadata": {"labels": {"x": "1"}}})).await; // rv 3
    let store = app.store.clone();
    let writer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let app = app_with(store, ApiOptions::default());
        app.container("b", json!({})).await;
        app.send(Call::new("DELETE", &format!("{PCS}/b"))).await;
    });
    let events = watch_lines(&app, "resourceVersion=2&timeoutSeconds=1", None).await;
    writer.await.unwrap();
    let want = [("MODIFIED", "a"), ("ADDED", "b"), ("DELETED", "b")].map(|(t, n)| (t.to_string(), n.to_string()));
    assert_eq!(summary(&events), want);
    assert_eq!(events[0]["object"]["metadata"]["resourceVersion"], "3");
    assert_eq!(events[0]["object"]["apiVersion"], "drydock.dev/v1");
}

#[tokio::test]
async fn version_zero_starts_with_the_current_objects() {
    let app = app();
    app.namespace().await;
    app.container("a", json!({"app": "x"})).await;
    app.container("b", json!({})).await;
    for query in ["resourceVersion=0&timeoutSeconds=1", "timeoutSeconds=1", "resourceVersion=&timeoutSeconds=1"] {
        let events = watch_lines(&app, query, None).await;
        assert_eq!(summary(&events), [("ADDED".to_string(), "a".to_string()), ("ADDED".into(), "b".into())], "{query}");
    }
    let events = watch_lines(&app, "labelSelector=app%3Dx&timeoutSeconds=1", None).await;
    assert_eq!(summary(&events), [("ADDED".to_string(), "a".to_string())]);
}

#[tokio::test]
async fn bookmarks_carry_the_version_of_filtered_changes() {
    let app = app();
    app.namespace().await;
    let store = app.store.clone();
    let writer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let app = app_with(store, ApiOptions::default());
        let (code, _) = app
            .post(
                "/apis/drydock.dev/v1/namespaces/demo/containerimages",
                json!({"kind": "ContainerImage", "metadata": {"name": "i"}, "spec": {"image": "busybox"}}),
            )
            .await;
        assert_eq!(code, StatusCode::CREATED);
    });
    let events = watch_lines(&app, "resourceVersion=1&allowWatchBookmarks=true&timeoutSeconds=1", None).await;
    writer.await.unwrap();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "BOOKMARK");
    assert_eq!(events[0]["object"]["metadata"]["resourceVersion"], "2");
    assert_eq!(events[0]["object"]["kind"], "PhysicalContainer");
}

#[tokio::test]
async fn a_compacted_version_is_one_410_expired_event_then_the_end() {
    let app = app_with(store(4), ApiOptions::default());
    app.namespace().await;
    for i in 0..10 {
        app.container(&format!("c{i}"), json!({})).await;
    }
    let started = Instant::now();
    let events = watch_lines(&app, "resourceVersion=1&timeoutSeconds=30", None).await;
    assert!(started.elapsed() < Duration::from_secs(5), "the stream ended by itself");
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "ERROR");
    let status = &events[0]["object"];
    assert_eq!(
        (status["kind"].clone(), status["code"].clone(), status["reason"].clone()),
        (json!("Status"), json!(410), json!("Expired"))
    );
    // The current version still works.
    let events = watch_lines(&app, "resourceVersion=11&timeoutSeconds=1", None).await;
    assert!(events.is_empty());
}

#[tokio::test]
async fn watches_serve_tables_and_refuse_bad_parameters() {
    let app = app();
    app.namespace().await;
    app.container("a", json!({})).await;
    let events = watch_lines(&app, "timeoutSeconds=1", Some("application/json;as=Table;v=v1;g=meta.k8s.io")).await;
    assert_eq!(events[0]["object"]["kind"], "Table");
    assert_eq!(events[0]["object"]["rows"][0]["cells"][0], "a");
    for bad in ["resourceVersion=abc", "timeoutSeconds=soon", "allowWatchBookmarks=perhaps", "labelSelector=%3D%3D"] {
        let (code, body) = app.get(&format!("{PCS}?watch=1&{bad}")).await;
        assert_status(code, &body, 400, "BadRequest");
    }
}

#[tokio::test]
async fn objects_entering_and_leaving_a_selector_are_added_and_deleted() {
    let app = app();
    app.namespace().await;
    app.container("a", json!({"app": "x"})).await;
    app.container("b", json!({})).await;
    let store = app.store.clone();
    let writer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let app = app_with(store, ApiOptions::default());
        for (name, labels) in
            [("b", json!({"app": "x"})), ("a", json!({"app": "y"})), ("b", json!({"app": "x", "more": "1"}))]
        {
            let (code, _) = app
                .patch(
                    &format!("{PCS}/{name}"),
                    "application/merge-patch+json",
                    json!({"metadata": {"labels": labels}}),
                )
                .await;
            assert_eq!(code, StatusCode::OK);
        }
        app.send(Call::new("DELETE", &format!("{PCS}/a"))).await;
        app.send(Call::new("DELETE", &format!("{PCS}/b"))).await;
    });
    let events = watch_lines(&app, "labelSelector=app%3Dx&timeoutSeconds=1", None).await;
    writer.await.unwrap();
    let want = [("ADDED", "a"), ("ADDED", "b"), ("DELETED", "a"), ("MODIFIED", "b"), ("DELETED", "b")];
    assert_eq!(summary(&events), want.map(|(t, n)| (t.to_string(), n.to_string())));
}

#[tokio::test]
async fn send_initial_events_ends_with_an_annotated_bookmark() {
    let app = app();
    app.namespace().await;
    app.container("a", json!({})).await;
    let events = watch_lines(
        &app,
        "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1",
        None,
    )
    .await;
    assert_eq!(events[0]["type"], "ADDED");
    assert_eq!(events[1]["type"], "BOOKMARK");
    assert_eq!(events[1]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
    assert_eq!(events[1]["object"]["metadata"]["resourceVersion"], "2");
}

#[tokio::test]
async fn a_huge_timeout_is_no_timeout_not_a_panic() {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let app = app();
    app.namespace().await;
    app.container("a", json!({})).await;
    let call = Call::new(
        "GET",
        "/apis/drydock.dev/v1/namespaces/demo/physicalcontainers?watch=1&timeoutSeconds=18446744073709551615",
    );
    let response = app.router.clone().oneshot(call.request()).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    let frame = tokio::time::timeout(Duration::from_secs(5), body.frame()).await.unwrap().unwrap().unwrap();
    let line: Value = serde_json::from_slice(frame.data_ref().unwrap()).unwrap();
    assert_eq!(line["type"], "ADDED");
}

async fn relabel(app: &App, name: &str, value: &str) -> Value {
    let patch = json!({"metadata": {"labels": {"app": value}}});
    let (code, body) = app.patch(&format!("{PCS}/{name}"), "application/merge-patch+json", patch).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    body
}

#[tokio::test]
async fn a_watch_from_a_version_knows_which_objects_matched_at_that_version() {
    let app = app();
    app.namespace().await;
    app.container("a", json!({"app": "web"})).await;
    let b = app.container("b", json!({"app": "db"})).await;
    let since = b["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    relabel(&app, "a", "db").await;
    let b = relabel(&app, "b", "web").await;
    let query = format!("resourceVersion={since}&labelSelector=app%3Dweb&timeoutSeconds=1");
    let events = watch_lines(&app, &query, None).await;
    let want = [("DELETED", "a"), ("ADDED", "b")].map(|(t, n)| (t.to_string(), n.to_string()));
    assert_eq!(summary(&events), want);
    assert_eq!(events[1]["object"]["metadata"]["resourceVersion"], b["metadata"]["resourceVersion"]);
}

#[tokio::test]
async fn a_selector_watch_whose_history_is_compacted_is_one_410_expired_event() {
    let app = app_with(store(4), ApiOptions::default());
    app.namespace().await; // rv 1
    app.container("a", json!({"app": "web"})).await; // rv 2
    for i in 0..4 {
        app.container(&format!("c{i}"), json!({})).await; // rv 3..=6
    }
    relabel(&app, "a", "db").await; // rv 7: the log keeps 4..=7, not a's state at 6
    let started = Instant::now();
    let events = watch_lines(&app, "resourceVersion=6&labelSelector=app%3Dweb&timeoutSeconds=30", None).await;
    assert!(started.elapsed() < Duration::from_secs(5), "the stream ended by itself");
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "ERROR");
    let status = &events[0]["object"];
    assert_eq!(
        (status["kind"].clone(), status["code"].clone(), status["reason"].clone()),
        (json!("Status"), json!(410), json!("Expired"))
    );
    // Without a label selector, what matched at 6 does not depend on a's labels then.
    let events = watch_lines(&app, "resourceVersion=6&timeoutSeconds=1", None).await;
    assert_eq!(summary(&events), [("MODIFIED".to_string(), "a".to_string())]);
}
