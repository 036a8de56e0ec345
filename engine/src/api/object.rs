use super::meta::{ObjectMeta, OwnerReference};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// Where an object lives: kind, namespace (none for cluster-scoped kinds) and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ObjectKey {
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectKey {
    pub fn new(kind: &str, namespace: Option<&str>, name: &str) -> Self {
        ObjectKey { kind: kind.to_string(), namespace: namespace.map(str::to_string), name: name.to_string() }
    }

    pub fn cluster(kind: &str, name: &str) -> Self {
        Self::new(kind, None, name)
    }

    pub fn namespaced(kind: &str, namespace: &str, name: &str) -> Self {
        Self::new(kind, Some(namespace), name)
    }
}

impl fmt::Display for ObjectKey {
    /// `Kind/name` or `Kind/namespace/name`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{}/{}/{}", self.kind, ns, self.name),
            None => write!(f, "{}/{}", self.kind, self.name),
        }
    }
}

/// An API object. `spec` is what a client wants, `status` what the controllers observed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Object {
    /// The group and version a client named (`v1`, `drydock.dev/v1`): checked against the kind
    /// on admission and not stored (the kind's registration says it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    pub kind: String,
    pub metadata: ObjectMeta,
    #[serde(default = "empty_map")]
    pub spec: Value,
    #[serde(default = "empty_map")]
    pub status: Value,
}

fn empty_map() -> Value {
    Value::Object(serde_json::Map::new())
}

impl Object {
    pub fn new(kind: &str, metadata: ObjectMeta, spec: Value) -> Self {
        Object { api_version: None, kind: kind.to_string(), metadata, spec, status: empty_map() }
    }

    /// A new object of a typed kind.
    pub fn from_spec<R: Resource>(metadata: ObjectMeta, spec: &R::Spec) -> Self {
        let spec = serde_json::to_value(spec).unwrap_or_else(|_| empty_map());
        Object::new(R::KIND, metadata, spec)
    }

    pub fn key(&self) -> ObjectKey {
        ObjectKey {
            kind: self.kind.clone(),
            namespace: self.metadata.namespace.clone(),
            name: self.metadata.name.clone(),
        }
    }

    /// An owner reference pointing at this object.
    pub fn owner_reference(&self, controller: bool) -> OwnerReference {
        OwnerReference {
            kind: self.kind.clone(),
            name: self.metadata.name.clone(),
            uid: self.metadata.uid.clone(),
            controller,
            block_owner_deletion: false,
        }
    }

    /// The typed spec. Fails only if the object was not admitted through the store.
    pub fn spec<R: Resource>(&self) -> Result<R::Spec, TypedError> {
        decode(&self.spec, self, "spec")
    }

    /// The typed status; an empty status decodes to the kind's default.
    pub fn status<R: Resource>(&self) -> Result<R::Status, TypedError> {
        match &self.status {
            Value::Object(map) if map.is_empty() => Ok(R::Status::default()),
            Value::Null => Ok(R::Status::default()),
            status => decode(status, self, "status"),
        }
    }

    pub fn set_status<R: Resource>(&mut self, status: &R::Status) {
        self.status = serde_json::to_value(status).unwrap_or_else(|_| empty_map());
    }
}

fn decode<T: DeserializeOwned>(value: &Value, obj: &Object, part: &str) -> Result<T, TypedError> {
    // Admitted objects decode: the plain deserializer first, and only for an error a second pass
    // that tracks the path to it (tracking it costs about a third of every decode).
    if let Ok(typed) = T::deserialize(value) {
        return Ok(typed);
    }
    serde_path_to_error::deserialize(value).map_err(|e| TypedError {
        key: obj.key().to_string(),
        path: match e.path().to_string().as_str() {
            "." => part.to_string(),
            path => format!("{part}.{path}"),
        },
        message: e.inner().to_string(),
    })
}

/// A spec or status that does not decode as its kind's type.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{key}: field {path}: {message}")]
pub struct TypedError {
    pub key: String,
    pub path: String,
    pub message: String,
}

/// A kind with a typed spec and status.
pub trait Resource {
    const KIND: &'static str;
    const NAMESPACED: bool;
    type Spec: Serialize + DeserializeOwned + Clone + PartialEq + fmt::Debug + 'static;
    type Status: Serialize + DeserializeOwned + Clone + PartialEq + fmt::Debug + Default + 'static;
}
