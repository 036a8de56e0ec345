//! `/readyz` tells a supervisor when the engine's runtime holds its requests (a hung Docker
//! still answers its ping; only the requests tell), while `/livez` stays `ok`.

use super::common::*;
use axum::http::StatusCode;
use drydock_adapters::{Driver, Runtime};
use drydock_daemon::api::ApiOptions;
use drydock_engine::runtime::{RuntimeRequest, RuntimeResult};
use http_body_util::BodyExt;
use std::time::Duration;
use tower::ServiceExt;

/// Answers nothing, ever.
struct Hung;

impl Runtime for Hung {
    async fn execute(&self, _request: RuntimeRequest) -> RuntimeResult {
        std::future::pending().await
    }
}

async fn probe(app: &App, path: &str) -> (StatusCode, String) {
    let request = axum::http::Request::get(path).body(axum::body::Body::empty()).unwrap();
    let response = app.router.clone().oneshot(request).await.unwrap();
    let code = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (code, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn readiness_fails_while_the_runtime_holds_a_request_and_liveness_does_not() {
    let store = store(1000);
    let driver = Driver::builtin("ready", store.clone(), std::sync::Arc::new(Hung));
    let options = ApiOptions {
        runtime_health: Some(driver.health()),
        runtime_patience: Duration::from_millis(200),
        ..ApiOptions::default()
    };
    let app = app_with(store, options);
    assert_eq!(probe(&app, "/readyz").await, (StatusCode::OK, "ok".to_string()), "nothing asked yet");
    let running = driver.spawn();
    // The engine lists its containers at start; the runtime never answers.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let (code, body) = loop {
        let (code, body) = probe(&app, "/readyz").await;
        if code != StatusCode::OK || tokio::time::Instant::now() > deadline {
            break (code, body);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(body.contains("[-]runtime failed") && body.contains("has not answered"), "{body}");
    assert_eq!(probe(&app, "/livez").await, (StatusCode::OK, "ok".to_string()), "alive all the same");
    running.stop().await;
}
