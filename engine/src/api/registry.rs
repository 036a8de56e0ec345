//! [`KindInfo`]: what the store, the engine and the daemon know of one kind (its scope, names,
//! default finalizers, validation, claims, what settled means, its cleanup rank), and
//! [`Registry`], the set of kinds. Each built-in kind's registration lives with its types (its
//! module's `kind_info`); [`Registry::builtin`] lists them, in `api`'s root.
//!
//! A typed kind ([`KindInfo::typed`]) also has the OpenAPI v3 schemas of its spec and status
//! ([`KindSchema`]), generated from the Rust types with `schemars`, their doc comments as the
//! fields' descriptions: what the daemon serves to `kubectl explain`, and what it checks a body's
//! fields against. They are generated the first time they are asked for, never on the engine's
//! paths.

use super::RuntimeObject;
use super::object::{Object, Resource};
use super::validation::{Claim, FieldError};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

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
    /// What the kind is, in a sentence or two, for clients (`kubectl explain`); empty: nothing said.
    pub description: String,
    /// The schemas of its spec and status, generated when first asked for; `None`: an untyped
    /// kind, whose spec and status are any object.
    schema: Option<LazySchema>,
}

/// The OpenAPI v3 schemas (structural, every subschema inline, as Kubernetes wants a custom
/// resource's) of a kind's `spec` and `status`, with each field's doc comment as its
/// `description`.
#[derive(Clone, Debug, PartialEq)]
pub struct KindSchema {
    pub spec: Value,
    pub status: Value,
}

/// A [`KindSchema`] generated once, on first use, and shared by the clones of its [`KindInfo`].
#[derive(Clone)]
struct LazySchema {
    generate: fn() -> KindSchema,
    generated: Arc<OnceLock<KindSchema>>,
}

fn generate_schema<R: Resource>() -> KindSchema
where
    R::Spec: JsonSchema,
    R::Status: JsonSchema,
{
    KindSchema { spec: openapi_schema::<R::Spec>(), status: openapi_schema::<R::Status>() }
}

/// The OpenAPI v3 schema of `T` as Kubernetes serves a custom resource's: every subschema inline
/// (no `$ref` to resolve), an enum of strings as one `enum` (its variants' doc comments joined
/// into its description when the field has none), and a value of any shape as
/// `x-kubernetes-preserve-unknown-fields`. An object schema lists its fields in `properties`:
/// fields it does not list are unknown, unless it has `additionalProperties` (a map) or preserves
/// unknown fields.
pub fn openapi_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::openapi3()
        .with(|settings| {
            settings.inline_subschemas = true;
            settings.meta_schema = None;
        })
        .into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(root) = &mut value {
        root.remove("title");
    }
    structural(&mut value);
    value
}

/// Rewrite a generated schema the way Kubernetes wants it (see [`openapi_schema`]).
fn structural(value: &mut Value) {
    let Value::Object(schema) = value else {
        // `true`: anything goes.
        *value = serde_json::json!({"x-kubernetes-preserve-unknown-fields": true});
        return;
    };
    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
        schema.remove("additionalProperties");
        schema.entry("properties").or_insert_with(|| Value::Object(Map::new()));
    }
    hoist_string_enum(schema);
    if let Some(Value::String(description)) = schema.get_mut("description") {
        *description = unwrap_lines(description);
    }
    let keyword_children = ["items", "additionalProperties", "not"];
    for keyword in keyword_children {
        if let Some(child @ Value::Object(_)) = schema.get_mut(keyword) {
            structural(child);
        }
    }
    for keyword in ["properties", "patternProperties"] {
        if let Some(Value::Object(children)) = schema.get_mut(keyword) {
            children.values_mut().for_each(structural);
        }
    }
    for keyword in ["oneOf", "anyOf", "allOf"] {
        if let Some(Value::Array(children)) = schema.get_mut(keyword) {
            children.iter_mut().for_each(structural);
        }
    }
    let any_shape = schema.keys().all(|k| matches!(k.as_str(), "description" | "default" | "nullable" | "example"));
    if any_shape {
        schema.insert("x-kubernetes-preserve-unknown-fields".into(), Value::Bool(true));
    }
}

/// A doc comment's text as one paragraph per paragraph: its lines joined with spaces (clients
/// wrap the text themselves).
fn unwrap_lines(text: &str) -> String {
    text.split("\n\n").map(|p| p.split_whitespace().collect::<Vec<_>>().join(" ")).collect::<Vec<_>>().join("\n\n")
}

/// `oneOf` branches that are each strings from an `enum` (a Rust enum whose variants have doc
/// comments): one `enum` of them all, its description the field's, or else the variants' docs.
fn hoist_string_enum(schema: &mut Map<String, Value>) {
    let Some(Value::Array(branches)) = schema.get("oneOf") else { return };
    let mut values = Vec::new();
    let mut documented = Vec::new();
    for branch in branches {
        let Some(branch) = branch.as_object() else { return };
        let strings = branch.get("type").and_then(Value::as_str) == Some("string");
        let Some(Value::Array(enum_values)) = branch.get("enum") else { return };
        if !strings || branch.keys().any(|k| !matches!(k.as_str(), "type" | "enum" | "description")) {
            return;
        }
        for v in enum_values {
            match (v.as_str(), branch.get("description").and_then(Value::as_str)) {
                (Some(name), Some(doc)) => documented.push(format!("`{name}`: {doc}")),
                (Some(_), None) => {}
                (None, _) => return,
            }
            values.push(v.clone());
        }
    }
    schema.remove("oneOf");
    schema.insert("type".into(), Value::String("string".into()));
    schema.insert("enum".into(), Value::Array(values));
    if !schema.contains_key("description") && !documented.is_empty() {
        schema.insert("description".into(), Value::String(documented.join("; ")));
    }
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
            description: String::new(),
            schema: None,
        }
    }

    /// A kind whose spec must decode as `R::Spec` (unknown fields rejected, with their path) and
    /// then pass `check`. Its schema ([`KindInfo::schema`]) is generated from `R::Spec` and
    /// `R::Status`: their doc comments are what `kubectl explain` prints.
    pub fn typed<R: Resource + 'static>(check: fn(&R::Spec) -> Vec<FieldError>) -> Self
    where
        R::Spec: JsonSchema,
        R::Status: JsonSchema,
    {
        KindInfo {
            validate: Arc::new(move |o| match o.spec::<R>() {
                Ok(spec) => check(&spec),
                Err(e) => vec![FieldError::new(e.path, e.message)],
            }),
            schema: Some(LazySchema { generate: generate_schema::<R>, generated: Arc::default() }),
            ..KindInfo::untyped(R::KIND, R::NAMESPACED)
        }
    }

    /// The schemas of the kind's spec and status (generated on the first call); `None` for an
    /// untyped kind.
    pub fn schema(&self) -> Option<&KindSchema> {
        self.schema.as_ref().map(|lazy| lazy.generated.get_or_init(lazy.generate))
    }

    /// What the kind is, for clients (`kubectl explain <kind>`).
    pub fn with_description(mut self, description: &str) -> Self {
        self.description = description.to_string();
        self
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::api::logical::{LogicalContainer, LogicalMode};

    #[test]
    fn a_typed_kind_has_structural_schemas_with_its_doc_comments() {
        let registry = Registry::builtin();
        for info in registry.kinds() {
            let schema = info.schema().unwrap_or_else(|| panic!("{} has no schema", info.kind));
            for part in [&schema.spec, &schema.status] {
                assert_eq!(part["type"], "object", "{}: {part}", info.kind);
                assert!(part["properties"].is_object(), "{}: {part}", info.kind);
                let text = part.to_string();
                for absent in ["$ref", "oneOf", "anyOf", "additionalProperties\":false", "$schema", "[`"] {
                    assert!(!text.contains(absent), "{}: {absent} in {text}", info.kind);
                }
            }
            assert!(!info.description.is_empty(), "{} has no description", info.kind);
        }
        let lc = registry.get(LogicalContainer::KIND).unwrap().schema().unwrap();
        let mode = &lc.spec["properties"]["mode"];
        assert_eq!(mode["type"], "string");
        assert_eq!(mode["enum"], serde_json::json!(["session", "persistent", "existing"]));
        let description = mode["description"].as_str().unwrap();
        assert!(description.starts_with("How the container relates to runtime containers: `session`"), "{description}");
        assert!(!description.contains('\n'), "doc comment lines are joined: {description}");
        // Every spec field says what it is.
        for (field, property) in lc.spec["properties"].as_object().unwrap() {
            assert!(property["description"].as_str().is_some_and(|d| !d.is_empty()), "spec.{field}: {property}");
        }
        // Times are strings on the wire; the enum of phases is one enum.
        let condition = &lc.status["properties"]["conditions"]["items"]["properties"];
        assert_eq!(condition["lastTransitionTime"]["format"], "date-time");
        assert!(lc.status["properties"]["phase"]["enum"].as_array().unwrap().contains(&"NotFound".into()));
        assert_eq!(serde_json::to_value(LogicalMode::Persistent).unwrap(), "persistent");
    }

    #[test]
    fn a_schema_is_generated_once_and_shared_by_clones() {
        let info = Registry::builtin().get(LogicalContainer::KIND).cloned().unwrap();
        let copy = info.clone();
        assert!(std::ptr::eq(info.schema().unwrap(), copy.schema().unwrap()));
        assert!(KindInfo::untyped("Widget", true).schema().is_none());
    }

    #[test]
    fn any_value_preserves_unknown_fields_and_enum_docs_join() {
        /// A user's enum.
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        enum Speed {
            /// Slowly.
            Slow,
            /// Quickly.
            Fast,
        }
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Spec {
            /// Anything at all.
            extra: serde_json::Value,
            speed: Speed,
        }
        let schema = openapi_schema::<Spec>();
        assert_eq!(schema["properties"]["extra"]["x-kubernetes-preserve-unknown-fields"], true, "{schema}");
        assert_eq!(schema["properties"]["speed"]["enum"], serde_json::json!(["Slow", "Fast"]), "{schema}");
        assert_eq!(schema["properties"]["speed"]["description"], "A user's enum.", "{schema}");
    }
}
