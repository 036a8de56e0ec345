//! Content negotiation: what a client accepts, what it sends, and how big it may be.
//!
//! *Guarantees*: answers are JSON. `Accept` may ask for JSON (`application/json`, `*/*`, or
//! none), for a server-side `Table` (`as=Table;g=meta.k8s.io`) or for `PartialObjectMetadata`;
//! the first range we can serve wins, and a request we can serve none of (protobuf only) is a 406.
//! Bodies are read up to the configured limit (413 beyond) and must be JSON (also when no
//! `Content-Type` is sent) or YAML (415 else); a body that does not parse is a 400. Decoding
//! takes time linear in the body and stops at [`limits`]' bounds: nested more than 100 levels,
//! or too many YAML directives, is a 400; decoding (YAML aliases) to more than twice the object
//! limit is a 413.

use super::limits::{self, DecodeError};
use super::status::{ApiError, ApiResult};
use axum::body::Body;
use axum::http::{HeaderMap, header};
use bytes::Bytes;
use serde_json::Value;

/// The form of a read's answer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Table,
    /// `PartialObjectMetadata` / `PartialObjectMetadataList`.
    Metadata,
}

const ACCEPTED: &str = "application/json, application/json;as=Table;v=v1;g=meta.k8s.io, application/yaml";

/// The form the client wants, from its `Accept` header.
pub fn accept(headers: &HeaderMap) -> ApiResult<Format> {
    let Some(accept) = headers.get(header::ACCEPT) else { return Ok(Format::Json) };
    let accept = accept.to_str().map_err(|_| ApiError::NotAcceptable { accepted: ACCEPTED.into() })?;
    if accept.trim().is_empty() {
        return Ok(Format::Json);
    }
    accept.split(',').find_map(media_range_format).ok_or(ApiError::NotAcceptable { accepted: ACCEPTED.into() })
}

fn media_range_format(range: &str) -> Option<Format> {
    let mut parts = range.split(';').map(str::trim);
    let media = parts.next()?.to_ascii_lowercase();
    if !matches!(media.as_str(), "application/json" | "*/*" | "application/*") {
        return None;
    }
    let params: Vec<(String, String)> = parts
        .filter_map(|p| p.split_once('=').map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string())))
        .collect();
    let param = |name: &str| params.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    match (param("as"), param("g")) {
        (None, _) => Some(Format::Json),
        (Some("Table"), Some("meta.k8s.io")) => Some(Format::Table),
        (Some("PartialObjectMetadata" | "PartialObjectMetadataList"), Some("meta.k8s.io")) => Some(Format::Metadata),
        _ => None,
    }
}

/// The body, at most `limit` bytes.
pub async fn read_body(body: Body, limit: usize) -> ApiResult<Bytes> {
    axum::body::to_bytes(body, limit).await.map_err(|_| ApiError::TooLarge { limit })
}

/// The media type of the body, lowercased, without parameters.
pub fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// Parse a create/update body: JSON or YAML. A body without a `Content-Type` is JSON, as the
/// API server reads it (the official Python client sends none).
pub fn parse_object_body(headers: &HeaderMap, body: &[u8]) -> ApiResult<Value> {
    match content_type(headers).as_str() {
        "application/json" | "" => parse_json(body),
        "application/yaml" | "application/x-yaml" | "text/yaml" => parse_yaml(body),
        "application/vnd.kubernetes.protobuf" => super::protobuf::decode(body),
        _ => Err(ApiError::UnsupportedMediaType { accepted: "application/json, application/yaml".into() }),
    }
}

/// A JSON body, decoded within [`limits`]' bounds.
pub fn parse_json(body: &[u8]) -> ApiResult<Value> {
    limits::decode_json(body).map_err(|e| decode_error(e, "the body is not valid JSON"))
}

/// A YAML body (one document), decoded within [`limits`]' bounds.
pub fn parse_yaml(body: &[u8]) -> ApiResult<Value> {
    limits::decode_yaml(body).map_err(|e| decode_error(e, "the body is not valid YAML"))
}

/// A refused decode as a `Status`: 413 for a body that decodes too large, 400 else (a syntax
/// error prefixed with `invalid`).
pub fn decode_error(error: DecodeError, invalid: &str) -> ApiError {
    match error {
        DecodeError::TooLarge => ApiError::EntityTooLarge(error.to_string()),
        DecodeError::TooDeep | DecodeError::TooManyDirectives => ApiError::BadRequest(error.to_string()),
        DecodeError::Syntax(e) => ApiError::BadRequest(format!("{invalid}: {e}")),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with_accept(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn kubectl_get_asks_for_a_table() {
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(accept(&with_accept(kubectl)).unwrap(), Format::Table);
        assert_eq!(accept(&HeaderMap::new()).unwrap(), Format::Json);
        assert_eq!(
            accept(&with_accept(
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
            ))
            .unwrap(),
            Format::Json
        );
        assert!(accept(&with_accept("application/vnd.kubernetes.protobuf")).is_err());
    }
}
