//! JSON answers: the one way every handler, and every error `Status`, is written out.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// A JSON answer.
pub fn json_response(code: StatusCode, value: &Value) -> Response {
    let body = serde_json::to_vec(value).unwrap_or_default();
    (code, [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response()
}

/// A JSON answer with `Warning` headers: `299 - "<text>"`, the text a quoted string (`"` and `\`
/// escaped), as the API server sends them and kubectl prints them (`Warning: <text>`).
pub fn json_with_warnings(code: StatusCode, value: &Value, warnings: &[String]) -> Response {
    let mut response = json_response(code, value);
    for warning in warnings {
        let text = format!("299 - \"{}\"", warning.replace('\\', "\\\\").replace('"', "\\\""));
        if let Ok(value) = HeaderValue::from_str(&text) {
            response.headers_mut().append(header::WARNING, value);
        }
    }
    response
}
