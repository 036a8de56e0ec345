//! The server-side `Table` form `kubectl get` shows.
//!
//! *Guarantees*: every kind has a `Name` column first and an `Age` column last; the built-in kinds
//! show their phase and reason and what a user looks for (a container's id, 12 characters, and
//! image; an image's reference and id; a logical container's mode, container and backing physical
//! container; a lease's key and holder). Rows carry the object as `PartialObjectMetadata`
//! (`includeObject=Metadata`, the default), whole (`Object`) or not at all (`None`).

use super::status::{ApiError, ApiResult};
use drydock_engine::WallTime;
use serde_json::{Value, json};

/// What a row carries, from `?includeObject=`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum IncludeObject {
    None,
    #[default]
    Metadata,
    Object,
}

impl IncludeObject {
    pub fn parse(value: Option<&str>) -> ApiResult<Self> {
        match value {
            None | Some("") | Some("Metadata") => Ok(IncludeObject::Metadata),
            Some("None") => Ok(IncludeObject::None),
            Some("Object") => Ok(IncludeObject::Object),
            Some(other) => {
                Err(ApiError::BadRequest(format!("includeObject must be None, Metadata or Object, not {other:?}")))
            }
        }
    }
}

/// One column: header, type, and where its cell comes from.
struct Column {
    name: &'static str,
    kind: &'static str,
    cell: fn(&Value, &Context) -> Value,
}

/// What cells may need beyond the object.
pub struct Context<'a> {
    pub now: WallTime,
    /// The name of the object with this uid (a logical container's backing).
    pub name_of_uid: &'a dyn Fn(&str) -> Option<String>,
}

fn text(value: &Value, pointer: &str) -> Value {
    Value::String(value.pointer(pointer).and_then(Value::as_str).unwrap_or("").to_string())
}

fn short_id(value: &Value, pointer: &str) -> Value {
    let id = value.pointer(pointer).and_then(Value::as_str).unwrap_or("");
    let id = id.strip_prefix("sha256:").unwrap_or(id);
    Value::String(id.chars().take(12).collect())
}

fn columns(kind: &str) -> Vec<Column> {
    let name = Column { name: "Name", kind: "string", cell: |v, _| text(v, "/metadata/name") };
    let phase = Column { name: "Phase", kind: "string", cell: |v, _| text(v, "/status/phase") };
    let reason = Column { name: "Reason", kind: "string", cell: |v, _| text(v, "/status/reason") };
    let age = Column { name: "Age", kind: "string", cell: age_cell };
    let middle: Vec<Column> = match kind {
        "Namespace" => vec![Column { name: "Status", kind: "string", cell: |v, _| namespace_phase(v) }],
        "PhysicalContainer" => vec![
            phase,
            reason,
            Column { name: "Container", kind: "string", cell: |v, _| short_id(v, "/status/runtimeId") },
            Column { name: "Image", kind: "string", cell: |v, _| physical_image(v) },
        ],
        "ContainerImage" => vec![
            phase,
            reason,
            Column { name: "Image", kind: "string", cell: |v, _| text(v, "/spec/image") },
            Column { name: "Image ID", kind: "string", cell: |v, _| short_id(v, "/status/imageId") },
        ],
        "LogicalContainer" => vec![
            phase,
            reason,
            Column { name: "Mode", kind: "string", cell: |v, _| logical_mode(v) },
            Column { name: "Container", kind: "string", cell: |v, _| short_id(v, "/status/runtimeId") },
            Column { name: "Physical", kind: "string", cell: backing_name },
        ],
        "Lease" => vec![
            Column { name: "Key", kind: "string", cell: |v, _| text(v, "/spec/key") },
            Column { name: "Holder", kind: "string", cell: |v, _| text(v, "/spec/holder") },
        ],
        _ => vec![phase],
    };
    std::iter::once(name).chain(middle).chain(std::iter::once(age)).collect()
}

/// The phase the engine wrote, else what the metadata says (`Terminating` once marked).
fn namespace_phase(v: &Value) -> Value {
    match v.pointer("/status/phase").and_then(Value::as_str) {
        Some(phase) => Value::String(phase.to_string()),
        None if v.pointer("/metadata/deletionTimestamp").is_some() => Value::String("Terminating".into()),
        None => Value::String("Active".into()),
    }
}

fn physical_image(v: &Value) -> Value {
    match v.pointer("/spec/image").and_then(Value::as_str) {
        Some(image) => Value::String(image.to_string()),
        None => short_id(v, "/spec/imageRef"),
    }
}

fn logical_mode(v: &Value) -> Value {
    Value::String(v.pointer("/spec/mode").and_then(Value::as_str).unwrap_or("session").to_string())
}

fn backing_name(v: &Value, ctx: &Context) -> Value {
    let uid = v.pointer("/status/backingUid").and_then(Value::as_str).unwrap_or("");
    Value::String(if uid.is_empty() { String::new() } else { (ctx.name_of_uid)(uid).unwrap_or_default() })
}

fn age_cell(v: &Value, ctx: &Context) -> Value {
    let created = v.pointer("/metadata/creationTimestamp").and_then(Value::as_u64);
    Value::String(
        created.map_or_else(|| "<unknown>".to_string(), |ms| short_duration(ctx.now.0.saturating_sub(ms) / 1000)),
    )
}

/// Like Kubernetes' `ShortHumanDuration`: `42s`, `5m3s`, `3h4m`, `2d5h`, `400d`.
pub fn short_duration(secs: u64) -> String {
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 600 => format!("{}m{}s", s / 60, s % 60),
        s if s < 3 * 3600 => format!("{}m", s / 60),
        s if s < 8 * 3600 => format!("{}h{}m", s / 3600, s % 3600 / 60),
        s if s < 48 * 3600 => format!("{}h", s / 3600),
        s if s < 8 * 86_400 => format!("{}d{}h", s / 86_400, s % 86_400 / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// The column definitions for `kind`.
pub fn column_definitions(kind: &str) -> Value {
    columns(kind)
        .iter()
        .map(|c| {
            let format = if c.name == "Name" { "name" } else { "" };
            json!({"name": c.name, "type": c.kind, "format": format, "description": c.name, "priority": 0})
        })
        .collect()
}

/// A row. `engine_json` is the engine's serialization (numeric timestamps), `wire` the object as
/// sent to clients.
pub fn row(kind: &str, engine_json: &Value, wire: &Value, include: IncludeObject, ctx: &Context) -> Value {
    let cells: Vec<Value> = columns(kind).iter().map(|c| (c.cell)(engine_json, ctx)).collect();
    let mut row = json!({"cells": cells});
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => {
            row["object"] = json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                "metadata": wire.get("metadata").cloned().unwrap_or(Value::Null)});
        }
        IncludeObject::Object => row["object"] = wire.clone(),
    }
    row
}

/// A table of `rows` at `resource_version`.
pub fn table(kind: &str, rows: Vec<Value>, resource_version: u64, with_columns: bool) -> Value {
    let columns = if with_columns { column_definitions(kind) } else { Value::Array(Vec::new()) };
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": resource_version.to_string()},
        "columnDefinitions": columns, "rows": rows})
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn physical_rows_show_a_short_id_and_the_image() {
        let engine = json!({"metadata": {"name": "a", "creationTimestamp": 1000},
            "spec": {"image": "busybox"}, "status": {"phase": "Running", "runtimeId": "0123456789abcdef0123"}});
        let ctx = Context { now: WallTime(66_000), name_of_uid: &|_| None };
        let row = row("PhysicalContainer", &engine, &engine, IncludeObject::None, &ctx);
        assert_eq!(row["cells"], json!(["a", "Running", "", "0123456789ab", "busybox", "65s"]));
        assert_eq!(column_definitions("PhysicalContainer").as_array().unwrap().len(), 6);
    }

    #[test]
    fn durations_read_like_kubectl() {
        assert_eq!(short_duration(5), "5s");
        assert_eq!(short_duration(303), "5m3s");
        assert_eq!(short_duration(3 * 3600 + 240), "3h4m");
        assert_eq!(short_duration(2 * 86_400 + 5 * 3600), "2d5h");
    }
}
