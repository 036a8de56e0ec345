use super::meta::{ObjectMeta, OwnerReference};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
pub use smol_str::SmolStr;
use std::fmt;
use std::sync::Arc;

/// Where an object lives: kind, namespace (none for cluster-scoped kinds) and name.
///
/// The parts are [`SmolStr`]s: a part of up to 23 bytes (every kind, and the names most worlds
/// use) lives inside the key, so cloning a key allocates nothing and hashing or comparing one
/// reads no other memory. Keys are the engine's most copied and most looked-up values; with three
/// heap `String`s, a lookup in a big world's maps chased three cold pointers. They order, print
/// and serialize exactly as the `String`s did; they hash by hand (see the `Hash` impl below).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ObjectKey {
    pub kind: SmolStr,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<SmolStr>,
    pub name: SmolStr,
}

impl ObjectKey {
    pub fn new(kind: &str, namespace: Option<&str>, name: &str) -> Self {
        ObjectKey { kind: kind.into(), namespace: namespace.map(SmolStr::from), name: name.into() }
    }

    pub fn cluster(kind: &str, name: &str) -> Self {
        Self::new(kind, None, name)
    }

    pub fn namespaced(kind: &str, namespace: &str, name: &str) -> Self {
        Self::new(kind, Some(namespace), name)
    }
}

/// *Why by hand*: the engine's, the store's and the checker's maps hash a key several times per
/// event (a map of one entry compares instead, so a big world hashes more often than a small one),
/// and the derived hash fed the hasher seven times: each part's bytes, a terminator after each,
/// and the namespace's `Option` tag. This feeds it three times: the name's bytes, the namespace's,
/// and one word holding the kind's length, first and last bytes and the parts' lengths. The kind
/// is one of a few names that these tell apart; the lengths keep `("ab", "c")` and `("a", "bc")`
/// apart.
///
/// *Guarantees*: equal keys hash equally (the hash reads only the parts equality compares). Two
/// kinds with the same length and ends collide only in the hash, never in equality. Hash values
/// decide nothing observable ([`crate::fixed`]).
impl std::hash::Hash for ObjectKey {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let kind = self.kind.as_bytes();
        let ends = match (kind.first(), kind.last()) {
            (Some(&first), Some(&last)) => u64::from(first) << 8 | u64::from(last),
            _ => 0,
        };
        let namespace = self.namespace.as_deref().map(str::as_bytes);
        let namespace_len = namespace.map_or(0, |ns| ns.len() as u64 + 1);
        state.write(self.name.as_bytes());
        if let Some(ns) = namespace {
            state.write(ns);
        }
        state.write_u64(
            ((kind.len() as u64) << 48)
                | (ends << 32)
                | ((namespace_len & 0xffff) << 16)
                | (self.name.len() as u64 & 0xffff),
        );
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
    pub kind: SmolStr,
    pub metadata: ObjectMeta,
    /// Shared between the versions of an object that do not change it (a status write, a new
    /// finalizer): a store keeps many versions, and most changes are status changes. Edit it
    /// with [`Object::spec_mut`].
    #[serde(default = "empty_shared_map")]
    pub spec: Arc<Value>,
    #[serde(default = "empty_map")]
    pub status: Value,
}

fn empty_shared_map() -> Arc<Value> {
    Arc::new(empty_map())
}

fn empty_map() -> Value {
    Value::Object(serde_json::Map::new())
}

impl Object {
    pub fn new(kind: &str, metadata: ObjectMeta, spec: Value) -> Self {
        Object { api_version: None, kind: kind.into(), metadata, spec: Arc::new(spec), status: empty_map() }
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
            kind: self.kind.to_string(),
            name: self.metadata.name.to_string(),
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

    /// The spec, to edit: copied first if another version of the object shares it.
    pub fn spec_mut(&mut self) -> &mut Value {
        Arc::make_mut(&mut self.spec)
    }

    pub fn set_status<R: Resource>(&mut self, status: &R::Status) {
        self.status = serde_json::to_value(status).unwrap_or_else(|_| empty_map());
    }

    /// What a status write of this object carries, but for the status itself: its kind, name,
    /// namespace, uid and resource version (the write's preconditions), with an empty spec and
    /// no labels, owners or finalizers, which a status write does not change. A status write is
    /// the engine's most frequent request; copying the whole object for it copied its spec and
    /// labels too, cold in a big world.
    pub fn status_write<R: Resource>(&self, status: &R::Status) -> Object {
        let metadata = ObjectMeta {
            name: self.metadata.name.clone(),
            namespace: self.metadata.namespace.clone(),
            uid: self.metadata.uid.clone(),
            resource_version: self.metadata.resource_version,
            ..ObjectMeta::default()
        };
        let mut write = Object {
            api_version: None,
            kind: self.kind.clone(),
            metadata,
            spec: empty_shared_map(),
            status: empty_map(),
        };
        write.set_status::<R>(status);
        write
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
