//! TEMPORARY STUB of the API module (issue 12, the shell's branch only).
//!
//! The real Kubernetes-style API lives in `daemon/src/api/` on the API branch and replaces this
//! file at merge. This stub keeps exactly its public interface ([`ApiOptions`], [`router`]) and
//! just enough behaviour for the shell's tests: `GET /healthz` answers `ok`, and every request
//! must carry the bearer token (compared in constant time) or gets a 401 Kubernetes `Status`.

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use drydock_adapters::SharedStore;
use std::sync::Arc;
use subtle::ConstantTimeEq as _;

/// How the API router behaves.
#[derive(Clone, Debug)]
pub struct ApiOptions {
    /// The bearer token every request must carry; `None` accepts all (tests only).
    pub token: Option<String>,
    /// The largest request body accepted.
    pub max_body_bytes: usize,
}

impl Default for ApiOptions {
    fn default() -> Self {
        ApiOptions { token: None, max_body_bytes: 3 * 1024 * 1024 }
    }
}

/// STUB: `/healthz` behind the bearer-token check.
pub fn router(_store: Arc<SharedStore>, options: ApiOptions) -> Router {
    let token: Arc<Option<String>> = Arc::new(options.token);
    Router::new()
        .route("/healthz", axum::routing::get(|| async { "ok" }))
        .layer(middleware::from_fn_with_state(token, authenticate))
}

async fn authenticate(State(token): State<Arc<Option<String>>>, request: Request, next: Next) -> Response {
    let Some(expected) = token.as_deref() else { return next.run(request).await };
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    if bool::from(given.as_bytes().ct_eq(expected.as_bytes())) {
        return next.run(request).await;
    }
    let status = serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "Unauthorized", "reason": "Unauthorized", "code": 401,
    });
    (StatusCode::UNAUTHORIZED, [(header::CONTENT_TYPE, "application/json")], status.to_string()).into_response()
}
