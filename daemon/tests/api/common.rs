//! Helpers: an in-process router over a fresh store, and one-shot calls.

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use drydock_adapters::SharedStore;
use drydock_daemon::api::{ApiOptions, router};
use drydock_engine::store::{Registry, Store, StoreConfig};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::sync::Arc;
use tower::ServiceExt;

pub const PCS: &str = "/apis/drydock.dev/v1/namespaces/demo/physicalcontainers";

pub fn store(log_capacity: usize) -> Arc<SharedStore> {
    SharedStore::new(Store::in_memory(Registry::builtin(), StoreConfig { log_capacity, ..Default::default() }))
}

pub struct App {
    pub router: Router,
    pub store: Arc<SharedStore>,
}

pub fn app() -> App {
    app_with(store(1000), ApiOptions::default())
}

pub fn app_with(store: Arc<SharedStore>, options: ApiOptions) -> App {
    App { router: router(store.clone(), options), store }
}

/// A request; `body` is sent as JSON unless `content_type` says otherwise.
pub struct Call<'a> {
    pub method: &'a str,
    pub uri: &'a str,
    pub content_type: Option<&'a str>,
    pub accept: Option<&'a str>,
    pub token: Option<&'a str>,
    pub body: Vec<u8>,
    /// More headers, sent as given.
    pub headers: Vec<(String, String)>,
}

impl<'a> Call<'a> {
    pub fn new(method: &'a str, uri: &'a str) -> Self {
        Call { method, uri, content_type: None, accept: None, token: None, body: Vec::new(), headers: Vec::new() }
    }

    pub fn json(mut self, body: &Value) -> Self {
        self.body = serde_json::to_vec(body).unwrap();
        self.content_type.get_or_insert("application/json");
        self
    }

    pub fn content_type(mut self, content_type: &'a str) -> Self {
        self.content_type = Some(content_type);
        self
    }

    pub fn accept(mut self, accept: &'a str) -> Self {
        self.accept = Some(accept);
        self
    }

    pub fn token(mut self, token: &'a str) -> Self {
        self.token = Some(token);
        self
    }

    pub fn request(&self) -> Request<Body> {
        let mut builder = Request::builder().method(self.method).uri(self.uri);
        if let Some(ct) = self.content_type {
            builder = builder.header("content-type", ct);
        }
        if let Some(accept) = self.accept {
            builder = builder.header("accept", accept);
        }
        if let Some(token) = self.token {
            builder = builder.header("authorization", format!("Bearer {token}"));
        }
        for (name, value) in &self.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        builder.body(Body::from(self.body.clone())).unwrap()
    }
}

impl App {
    pub async fn send(&self, call: Call<'_>) -> (StatusCode, Value) {
        let response = self.router.clone().oneshot(call.request()).await.unwrap();
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        (status, value)
    }

    pub async fn get(&self, uri: &str) -> (StatusCode, Value) {
        self.send(Call::new("GET", uri)).await
    }

    pub async fn post(&self, uri: &str, body: Value) -> (StatusCode, Value) {
        self.send(Call::new("POST", uri).json(&body)).await
    }

    pub async fn put(&self, uri: &str, body: Value) -> (StatusCode, Value) {
        self.send(Call::new("PUT", uri).json(&body)).await
    }

    pub async fn patch(&self, uri: &str, content_type: &str, body: Value) -> (StatusCode, Value) {
        self.send(Call::new("PATCH", uri).json(&body).content_type(content_type)).await
    }

    /// Namespace `demo`.
    pub async fn namespace(&self) {
        let (code, body) = self
            .post("/api/v1/namespaces", json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}}))
            .await;
        assert_eq!(code, StatusCode::CREATED, "{body}");
    }

    /// A physical container `name` in `demo` with `labels`.
    pub async fn container(&self, name: &str, labels: Value) -> Value {
        let (code, body) = self
            .post(
                PCS,
                json!({"apiVersion": "drydock.dev/v1", "kind": "PhysicalContainer",
                "metadata": {"name": name, "labels": labels}, "spec": {"image": "busybox:1.36"}}),
            )
            .await;
        assert_eq!(code, StatusCode::CREATED, "{body}");
        body
    }
}

/// Assert a `Status` failure with `code` and `reason`.
pub fn assert_status(code: StatusCode, body: &Value, want_code: u16, reason: &str) {
    assert_eq!(code.as_u16(), want_code, "{body}");
    assert_eq!(body["kind"], "Status", "{body}");
    assert_eq!(body["apiVersion"], "v1", "{body}");
    assert_eq!(body["status"], "Failure", "{body}");
    assert_eq!(body["code"], want_code, "{body}");
    assert_eq!(body["reason"], reason, "{body}");
}
