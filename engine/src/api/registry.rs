//! [`KindInfo`]: what the store, the engine and the daemon know of one kind (its scope, names,
//! default finalizers, validation, claims, what settled means, its cleanup rank), and
//! [`Registry`], the set of kinds. Each built-in kind's registration lives with its types (its
//! module's `kind_info`); [`Registry::builtin`] lists them, in `api`'s root.

use super::RuntimeObject;
use super::object::{Object, Resource};
use super::validation::{Claim, FieldError};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The API group and version of drydock's own kinds.
pub const DRYDOCK_GROUP_VERSION: &str = "drydock.dev/v1";

type Validate = Arc<dyn Fn(&Object) -> Vec<FieldError> + Send + Sync>;
type ValidateUpdate = Arc<dyn Fn(&Object, &Object) -> Vec<FieldError> + Send + Sync>;
type Claims = Arc<dyn Fn(&Object) -> Vec<Claim> + Send + Sync>;
type Settled = Arc<dyn Fn(&Object) -> bool + Send + Sync>;

/// What the store knows about one kind.
#[derive(Clone)]
pub struct KindInfo {
    pub kind: String,
    /// The API group and version of the kind, as clients name it in `apiVersion`: `v1` for the
    /// core kinds (Namespace), `drydock.dev/v1` for drydock's.
    pub group_version: String,
    pub namespaced: bool,
    /// The lowercase plural clients name the kind by (`kubectl get physicalcontainers`): the
    /// kind in lowercase with an `s`, unless [`KindInfo::with_names`] says otherwise.
    pub plural: String,
    /// Short names clients may use instead (`pc`); none unless [`KindInfo::with_names`].
    pub short_names: Vec<String>,
    /// Finalizers the store puts on every new object of this kind (like Kubernetes'
    /// namespace finalizer), so no controller has to win a race to add them.
    pub default_finalizers: Vec<String>,
    /// Order in which namespace cleanup deletes this kind: lower first.
    pub cleanup_rank: u8,
    /// The runtime object each object of this kind stands for, if any (see
    /// [`KindInfo::with_runtime_object`]).
    runtime_object: Option<RuntimeObject>,
    validate: Validate,
    validate_update: ValidateUpdate,
    /// What an object of this kind holds alone in its namespace; `None`: nothing.
    claims: Option<Claims>,
    /// Whether an object of this kind has reached a state a client waiting for it can stop at;
    /// `None`: the kind does not say.
    settled: Option<Settled>,
}

impl KindInfo {
    /// A kind whose spec and status are any JSON object.
    pub fn untyped(kind: &str, namespaced: bool) -> Self {
        KindInfo {
            kind: kind.to_string(),
            group_version: DRYDOCK_GROUP_VERSION.to_string(),
            namespaced,
            plural: format!("{}s", kind.to_ascii_lowercase()),
            short_names: Vec::new(),
            default_finalizers: Vec::new(),
            cleanup_rank: 50,
            runtime_object: None,
            validate: Arc::new(|o| match *o.spec {
                serde_json::Value::Object(_) => Vec::new(),
                _ => vec![FieldError::new("spec", "must be an object")],
            }),
            validate_update: Arc::new(|_, _| Vec::new()),
            claims: None,
            settled: None,
        }
    }

    /// A kind whose spec must decode as `R::Spec` (unknown fields rejected, with their path) and
    /// then pass `check`.
    pub fn typed<R: Resource + 'static>(check: fn(&R::Spec) -> Vec<FieldError>) -> Self {
        KindInfo {
            validate: Arc::new(move |o| match o.spec::<R>() {
                Ok(spec) => check(&spec),
                Err(e) => vec![FieldError::new(e.path, e.message)],
            }),
            ..KindInfo::untyped(R::KIND, R::NAMESPACED)
        }
    }

    pub fn with_update_check<R: Resource + 'static>(
        mut self,
        check: fn(&R::Spec, &R::Spec) -> Vec<FieldError>,
    ) -> Self {
        self.validate_update = Arc::new(move |old, new| match (old.spec::<R>(), new.spec::<R>()) {
            (Ok(old), Ok(new)) => check(&old, &new),
            _ => Vec::new(), // shape errors are reported by `validate`
        });
        self
    }

    /// Objects of this kind hold what `claims` returns alone in their namespace: the store
    /// refuses a create (or a spec change) that claims what another object holds, unless one of
    /// the two is the other's controller (see [`crate::store`]'s claims). `claims` must depend
    /// only on the object's namespace, name and spec.
    pub fn with_claims<R: Resource + 'static>(mut self, claims: fn(&Object, &R::Spec) -> Vec<Claim>) -> Self {
        self.claims = Some(Arc::new(move |o| match o.spec::<R>() {
            Ok(spec) => claims(o, &spec),
            Err(_) => Vec::new(), // shape errors are reported by `validate`
        }));
        self
    }

    /// What "settled" means for objects of this kind (`drydock up --wait` waits for it): a
    /// function of the object's spec and status. An object whose spec or status does not decode
    /// is settled (admission reports the shape; nothing will change it).
    pub fn with_settled<R: Resource + 'static>(mut self, settled: fn(&R::Spec, &R::Status) -> bool) -> Self {
        self.settled = Some(Arc::new(move |o| match (o.spec::<R>(), o.status::<R>()) {
            (Ok(spec), Ok(status)) => settled(&spec, &status),
            _ => true,
        }));
        self
    }

    /// Whether `object` is settled, if the kind says (see [`KindInfo::with_settled`]).
    pub fn settled(&self, object: &Object) -> Option<bool> {
        self.settled.as_ref().map(|settled| settled(object))
    }

    /// The kind's group and version, if not drydock's (`v1` for core kinds).
    pub fn with_group_version(mut self, group_version: &str) -> Self {
        self.group_version = group_version.to_string();
        self
    }

    /// The kind's plural and short names, as the daemon serves them to clients.
    pub fn with_names(mut self, plural: &str, short_names: &[&str]) -> Self {
        self.plural = plural.to_string();
        self.short_names = short_names.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Each object of this kind stands for one runtime `object` of its own (a network, a
    /// volume) that drydock creates for it under the name in its spec's `<object>Name` (or
    /// `<namespace>-<name>`), labels with its owner, namespace and retention, adopts by
    /// `<object>Id`, and replaces under `replaceExisting`; as the runtime resource kinds do.
    pub fn with_runtime_object(mut self, object: RuntimeObject) -> Self {
        self.runtime_object = Some(object);
        self
    }

    /// The runtime object each object of this kind stands for, if any.
    pub fn runtime_object(&self) -> Option<RuntimeObject> {
        self.runtime_object
    }

    pub fn with_finalizer(mut self, finalizer: &str) -> Self {
        self.default_finalizers.push(finalizer.to_string());
        self
    }

    pub fn with_cleanup_rank(mut self, rank: u8) -> Self {
        self.cleanup_rank = rank;
        self
    }

    pub fn validate(&self, object: &Object) -> Vec<FieldError> {
        (self.validate)(object)
    }

    pub fn validate_update(&self, old: &Object, new: &Object) -> Vec<FieldError> {
        (self.validate_update)(old, new)
    }

    /// Whether objects of this kind claim anything.
    pub fn has_claims(&self) -> bool {
        self.claims.is_some()
    }

    /// What `object` holds alone in its namespace.
    pub fn claims(&self, object: &Object) -> Vec<Claim> {
        self.claims.as_ref().map(|claims| claims(object)).unwrap_or_default()
    }
}

impl std::fmt::Debug for KindInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KindInfo").field("kind", &self.kind).field("namespaced", &self.namespaced).finish()
    }
}

/// The set of kinds, shared by the store and the engine.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    kinds: BTreeMap<String, KindInfo>,
}

impl Registry {
    pub fn register(&mut self, info: KindInfo) {
        self.kinds.insert(info.kind.clone(), info);
    }

    pub fn get(&self, kind: &str) -> Option<&KindInfo> {
        self.kinds.get(kind)
    }

    pub fn kinds(&self) -> impl Iterator<Item = &KindInfo> {
        self.kinds.values()
    }

    /// Namespaced kinds in cleanup order.
    pub fn namespaced_in_cleanup_order(&self) -> Vec<&KindInfo> {
        let mut kinds: Vec<&KindInfo> = self.kinds.values().filter(|k| k.namespaced).collect();
        kinds.sort_by(|a, b| (a.cleanup_rank, &a.kind).cmp(&(b.cleanup_rank, &b.kind)));
        kinds
    }
}
