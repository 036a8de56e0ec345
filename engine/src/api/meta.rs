use crate::time::WallTime;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use smol_str::SmolStr;
use std::collections::BTreeMap;
use std::fmt;

/// A unique object identity, never reused. Distinguishes an object from a later one of the same
/// name.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct Uid(pub String);

/// The schema of a time as clients read and write it: an RFC 3339 string, as Kubernetes'
/// `metav1.Time` (the store keeps milliseconds since the epoch; the daemon converts both ways).
/// For `#[schemars(schema_with = ...)]` on a [`WallTime`] field.
pub(crate) fn time_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "format": "date-time"})
}

impl fmt::Display for Uid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Kubernetes-style object metadata.
///
/// *Assumptions*: `uid`, `resource_version`, `generation`, `creation_timestamp` and
/// `deletion_timestamp` are set by the store; whatever a client puts there on create is ignored,
/// and on update `resource_version` is the precondition.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectMeta {
    pub name: SmolStr,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<SmolStr>,
    #[serde(default)]
    pub uid: Uid,
    #[serde(default)]
    pub resource_version: u64,
    #[serde(default)]
    pub generation: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owner_references: Vec<OwnerReference>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<WallTime>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<WallTime>,
    /// Which manager set which fields, as Kubernetes' `metadata.managedFields`. The store keeps
    /// what a write carries and never reads it: server-side apply, in the daemon, maintains it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub managed_fields: Vec<ManagedFieldsEntry>,
}

/// One manager's fields of an object: Kubernetes' `ManagedFieldsEntry`, with `fieldsV1` kept as
/// the JSON it is on the wire.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedFieldsEntry {
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<WallTime>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub fields_type: String,
    #[serde(default, rename = "fieldsV1", skip_serializing_if = "serde_json::Value::is_null")]
    pub fields_v1: serde_json::Value,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub subresource: String,
}

impl ObjectMeta {
    pub fn named(namespace: Option<&str>, name: &str) -> Self {
        ObjectMeta { name: name.into(), namespace: namespace.map(SmolStr::from), ..ObjectMeta::default() }
    }

    pub fn has_finalizer(&self, finalizer: &str) -> bool {
        self.finalizers.iter().any(|f| f == finalizer)
    }

    pub fn is_deleting(&self) -> bool {
        self.deletion_timestamp.is_some()
    }
}

/// A reference from a dependent to its owner. Owners live in the dependent's namespace, or are
/// cluster-scoped.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OwnerReference {
    pub kind: String,
    pub name: String,
    pub uid: Uid,
    #[serde(default)]
    pub controller: bool,
    #[serde(default)]
    pub block_owner_deletion: bool,
}

/// Whether a [`Condition`] holds, as in Kubernetes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ConditionStatus {
    True,
    False,
    #[default]
    Unknown,
}

/// One observation a controller reports in an object's status, Kubernetes-style: a `type`, whether
/// it holds, a machine-readable `reason` (CamelCase) and a human-readable `message`.
///
/// *Guarantees* (through [`Condition::set`]): `lastTransitionTime` changes only when `status`
/// does, so rewriting the same observation does not change the object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(description = "One observation a controller reports in an object's status, Kubernetes-style: a `type`, \
    whether it holds, a machine-readable `reason` (CamelCase) and a human-readable `message`.")]
pub struct Condition {
    /// What the condition is about (`Ready`, `CleanupComplete`, ...).
    #[serde(rename = "type")]
    pub type_: String,
    /// Whether it holds: `True`, `False` or `Unknown`.
    pub status: ConditionStatus,
    /// Why, machine-readable (CamelCase).
    #[serde(default)]
    pub reason: String,
    /// Why, in words.
    #[serde(default)]
    pub message: String,
    /// When `status` last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "time_schema")]
    pub last_transition_time: Option<WallTime>,
}

impl Condition {
    /// A condition without a transition time (set by [`Condition::set`]).
    pub fn new(type_: &str, status: ConditionStatus, reason: &str, message: impl Into<String>) -> Self {
        Condition {
            type_: type_.to_string(),
            status,
            reason: reason.to_string(),
            message: message.into(),
            last_transition_time: None,
        }
    }

    pub fn is_true(&self) -> bool {
        self.status == ConditionStatus::True
    }

    /// The condition of type `type_` in `conditions`.
    pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
        conditions.iter().find(|c| c.type_ == type_)
    }

    /// Put `self` into `conditions`, replacing the condition of its type or appending it. The
    /// transition time is kept if the status is unchanged, and is `now` otherwise. Returns whether
    /// `conditions` changed.
    pub fn set(mut self, conditions: &mut Vec<Condition>, now: WallTime) -> bool {
        match conditions.iter_mut().find(|c| c.type_ == self.type_) {
            Some(existing) => {
                self.last_transition_time =
                    if existing.status == self.status { existing.last_transition_time } else { Some(now) };
                if *existing == self {
                    return false;
                }
                *existing = self;
            }
            None => {
                self.last_transition_time = Some(now);
                conditions.push(self);
            }
        }
        true
    }

    /// Remove the condition of type `type_`. Returns whether there was one.
    pub fn remove(conditions: &mut Vec<Condition>, type_: &str) -> bool {
        let before = conditions.len();
        conditions.retain(|c| c.type_ != type_);
        conditions.len() != before
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn condition_serializes_with_kubernetes_field_names() {
        let mut c = Condition::new("Ready", ConditionStatus::False, "Pending", "waiting");
        c.last_transition_time = Some(WallTime(5));
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"type": "Ready", "status": "False", "reason": "Pending", "message": "waiting",
                "lastTransitionTime": 5})
        );
        let back: Condition = serde_json::from_value(json).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn set_keeps_the_transition_time_unless_the_status_changes() {
        let mut conditions = Vec::new();
        assert!(Condition::new("A", ConditionStatus::False, "Pending", "2 left").set(&mut conditions, WallTime(1)));
        assert_eq!(conditions[0].last_transition_time, Some(WallTime(1)));
        // Same status, new message: changed, same transition time.
        assert!(Condition::new("A", ConditionStatus::False, "Pending", "1 left").set(&mut conditions, WallTime(2)));
        assert_eq!(conditions[0].last_transition_time, Some(WallTime(1)));
        assert_eq!(conditions[0].message, "1 left");
        // The very same observation: no change at all.
        assert!(!Condition::new("A", ConditionStatus::False, "Pending", "1 left").set(&mut conditions, WallTime(3)));
        // A new status: a transition.
        assert!(Condition::new("A", ConditionStatus::True, "Done", "").set(&mut conditions, WallTime(4)));
        assert_eq!(conditions[0].last_transition_time, Some(WallTime(4)));
        assert!(Condition::new("B", ConditionStatus::Unknown, "", "").set(&mut conditions, WallTime(5)));
        assert_eq!(conditions.len(), 2);
        assert!(Condition::find(&conditions, "A").is_some_and(Condition::is_true));
        assert!(Condition::remove(&mut conditions, "A"));
        assert!(!Condition::remove(&mut conditions, "A"));
        assert!(Condition::find(&conditions, "A").is_none());
    }
}
