//! The bearer-token check and the per-request tracing span.
//!
//! *Guarantees*: when a token is configured, a request whose `Authorization` is not exactly
//! `Bearer <token>` gets a 401 `Status` before any handler runs; the comparison takes the same
//! time wherever the strings differ (`subtle`), and the token is never logged (the span holds only
//! the method and path). The two probes, `GET /livez` and `GET /readyz`, need no token, as a
//! Kubernetes API server serves them to anyone (a supervisor's health check has no credentials);
//! they tell only that the daemon answers. Everything else, `/healthz` and `/version` included,
//! needs it.

use super::ApiOptions;
use super::status::ApiError;
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;
use tracing::Instrument;

/// The paths anyone may `GET`.
const PUBLIC_PROBES: [&str; 2] = ["/livez", "/readyz"];

pub async fn require_token(State(options): State<ApiOptions>, request: Request, next: Next) -> Response {
    let Some(expected) = options.token.as_deref() else { return next.run(request).await };
    if request.method() == axum::http::Method::GET && PUBLIC_PROBES.contains(&request.uri().path()) {
        return next.run(request).await;
    }
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    match presented {
        Some(token) if token_matches(token, expected) => next.run(request).await,
        _ => {
            let mut response = ApiError::Unauthorized.into_response();
            response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
            response
        }
    }
}

/// Constant-time in the contents; the lengths are not secret.
fn token_matches(presented: &str, expected: &str) -> bool {
    presented.len() == expected.len() && bool::from(presented.as_bytes().ct_eq(expected.as_bytes()))
}

/// A span per request with its method and path (never its headers).
pub async fn trace_request(request: Request, next: Next) -> Response {
    let span = tracing::info_span!("request", method = %request.method(), path = %request.uri().path());
    async move {
        let response = next.run(request).await;
        tracing::debug!(status = response.status().as_u16(), "answered");
        response
    }
    .instrument(span)
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_match_exactly() {
        assert!(token_matches("abc", "abc"));
        assert!(!token_matches("abd", "abc"));
        assert!(!token_matches("ab", "abc"));
        assert!(!token_matches("", "abc"));
    }
}
