//! Errors as Kubernetes `Status` objects.
//!
//! *Guarantees*: every [`ApiError`] renders as `{"kind":"Status","apiVersion":"v1","status":
//! "Failure", message, reason, code, details}` with the HTTP code Kubernetes uses for its reason;
//! `Invalid` carries one `details.causes[]` entry per admission field error, with its field path.
//! Store errors map like the apiserver's: `NamespaceNotActive` is 403 Forbidden, `Gone` is 410
//! Expired, any `Unavailable` 503.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use drydock_engine::store::{FieldError, StoreError};
use serde_json::{Value, json};

/// What the object of an error is, for `details`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subject {
    pub name: String,
    pub group: String,
    /// The plural resource name, as Kubernetes puts in `details.kind`.
    pub kind: String,
}

/// Why the API refused a request.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("Unauthorized")]
    Unauthorized,
    #[error("{message}")]
    Forbidden { message: String, subject: Subject },
    #[error("{message}")]
    NotFound { message: String, subject: Subject },
    #[error("{message}")]
    AlreadyExists { message: String, subject: Subject },
    #[error("{message}")]
    Conflict { message: String, subject: Subject },
    /// A server-side apply that sets fields other managers own: one cause per field.
    #[error("{message}")]
    ApplyConflict { message: String, subject: Subject, fields: Vec<FieldError> },
    #[error("{message}")]
    Invalid { message: String, subject: Subject, causes: Vec<FieldError> },
    #[error("the server does not allow this method on the requested resource")]
    MethodNotAllowed,
    #[error("the server has received a request body larger than the limit of {limit} bytes")]
    TooLarge { limit: usize },
    /// Another 413: an object, a patched object or a decoded body over its limit (see
    /// [`limits`](super::limits)), with what to do about it.
    #[error("{0}")]
    EntityTooLarge(String),
    #[error("the body of the request was in an unknown format - accepted media types include: {accepted}")]
    UnsupportedMediaType { accepted: String },
    #[error("only the following media types are accepted: {accepted}")]
    NotAcceptable { accepted: String },
    #[error("{0}")]
    Expired(String),
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    pub fn code(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden { .. } => StatusCode::FORBIDDEN,
            ApiError::NotFound { .. } => StatusCode::NOT_FOUND,
            ApiError::AlreadyExists { .. } | ApiError::Conflict { .. } | ApiError::ApplyConflict { .. } => {
                StatusCode::CONFLICT
            }
            ApiError::Invalid { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::TooLarge { .. } | ApiError::EntityTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType { .. } => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::NotAcceptable { .. } => StatusCode::NOT_ACCEPTABLE,
            ApiError::Expired(_) => StatusCode::GONE,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn reason(&self) -> &'static str {
        match self {
            ApiError::BadRequest(_) => "BadRequest",
            ApiError::Unauthorized => "Unauthorized",
            ApiError::Forbidden { .. } => "Forbidden",
            ApiError::NotFound { .. } => "NotFound",
            ApiError::AlreadyExists { .. } => "AlreadyExists",
            ApiError::Conflict { .. } | ApiError::ApplyConflict { .. } => "Conflict",
            ApiError::Invalid { .. } => "Invalid",
            ApiError::MethodNotAllowed => "MethodNotAllowed",
            ApiError::TooLarge { .. } | ApiError::EntityTooLarge(_) => "RequestEntityTooLarge",
            ApiError::UnsupportedMediaType { .. } => "UnsupportedMediaType",
            ApiError::NotAcceptable { .. } => "NotAcceptable",
            ApiError::Expired(_) => "Expired",
            ApiError::Unavailable(_) => "ServiceUnavailable",
            ApiError::Internal(_) => "InternalError",
        }
    }

    pub fn not_found(subject: Subject) -> Self {
        let message = if subject.name.is_empty() {
            "the server could not find the requested resource".to_string()
        } else {
            format!("{} \"{}\" not found", qualified(&subject), subject.name)
        };
        ApiError::NotFound { message, subject }
    }

    /// A store refusal about `subject`.
    pub fn from_store(error: StoreError, subject: Subject) -> Self {
        let what = format!("{} \"{}\"", qualified(&subject), subject.name);
        match error {
            StoreError::NotFound { .. } => ApiError::not_found(subject),
            StoreError::AlreadyExists { .. } => {
                ApiError::AlreadyExists { message: format!("{what} already exists"), subject }
            }
            StoreError::Conflict { reason, .. } => ApiError::Conflict {
                message: format!(
                    "Operation cannot be fulfilled on {what}: {reason}; the object has been modified; please apply your changes to the latest version and try again"
                ),
                subject,
            },
            StoreError::Invalid { errors, .. } => {
                let list = errors.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
                ApiError::Invalid { message: format!("{what} is invalid: {list}"), subject, causes: errors }
            }
            StoreError::NamespaceNotActive { namespace, reason, .. } if reason.contains("does not exist") => {
                ApiError::not_found(Subject { name: namespace, group: String::new(), kind: "namespaces".into() })
            }
            StoreError::NamespaceNotActive { namespace, reason, .. } => ApiError::Forbidden {
                message: format!(
                    "{what} is forbidden: unable to create new content in namespace {namespace} because it is being terminated ({reason})"
                ),
                subject,
            },
            StoreError::Gone { .. } => ApiError::Expired(error.to_string()),
            other => match other.code() {
                "Unavailable" | "Uncertain" => ApiError::Unavailable(other.to_string()),
                _ => ApiError::Internal(other.to_string()),
            },
        }
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.to_string(),
            "reason": self.reason(),
            "code": self.code().as_u16(),
        });
        if let Some(details) = self.details() {
            status["details"] = details;
        }
        status
    }

    fn details(&self) -> Option<Value> {
        let (subject, causes, reason) = match self {
            ApiError::Forbidden { subject, .. }
            | ApiError::NotFound { subject, .. }
            | ApiError::AlreadyExists { subject, .. }
            | ApiError::Conflict { subject, .. } => (subject, &[][..], ""),
            ApiError::Invalid { subject, causes, .. } => (subject, &causes[..], "FieldValueInvalid"),
            ApiError::ApplyConflict { subject, fields, .. } => (subject, &fields[..], "FieldManagerConflict"),
            _ => return None,
        };
        let mut details = json!({"name": subject.name, "group": subject.group, "kind": subject.kind});
        if !causes.is_empty() {
            details["causes"] =
                causes.iter().map(|c| json!({"reason": reason, "message": c.message, "field": c.path})).collect();
        }
        Some(details)
    }
}

/// `physicalcontainers.drydock.dev`, or `namespaces` for the core group.
fn qualified(subject: &Subject) -> String {
    if subject.group.is_empty() { subject.kind.clone() } else { format!("{}.{}", subject.kind, subject.group) }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if matches!(self, ApiError::Internal(_) | ApiError::Unavailable(_)) {
            tracing::warn!(reason = self.reason(), error = %self, "request failed");
        } else {
            tracing::debug!(reason = self.reason(), error = %self, "request refused");
        }
        super::respond::json_response(self.code(), &self.to_status())
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn subject() -> Subject {
        Subject { name: "a".into(), group: "drydock.dev".into(), kind: "physicalcontainers".into() }
    }

    #[test]
    fn invalid_carries_field_causes() {
        let error = StoreError::Invalid { key: "k".into(), errors: vec![FieldError::new("spec.image", "required")] };
        let status = ApiError::from_store(error, subject()).to_status();
        assert_eq!(status["code"], 422);
        assert_eq!(status["reason"], "Invalid");
        assert_eq!(status["details"]["causes"][0]["field"], "spec.image");
    }

    #[test]
    fn terminating_namespace_is_forbidden() {
        let error =
            StoreError::NamespaceNotActive { key: "k".into(), namespace: "n".into(), reason: "is terminating".into() };
        let error = ApiError::from_store(error, subject());
        assert_eq!(error.code(), StatusCode::FORBIDDEN);
        assert!(error.to_string().contains("because it is being terminated"));
    }

    #[test]
    fn an_unanswered_store_is_unavailable() {
        let error =
            ApiError::from_store(StoreError::Uncertain { key: "k".into(), reason: "timeout".into() }, subject());
        assert_eq!((error.code().as_u16(), error.reason()), (503, "ServiceUnavailable"));
    }

    #[test]
    fn gone_is_expired() {
        let error = ApiError::from_store(StoreError::Gone { requested: 1, oldest: 5 }, subject());
        assert_eq!((error.code().as_u16(), error.reason()), (410, "Expired"));
    }
}
