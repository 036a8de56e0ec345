//! Manifests: YAML or JSON files of API objects, validated as a whole before anything is applied.

use anyhow::{Context as _, Result, bail};
use drydock_engine::WallTime;
use drydock_engine::api::Object;
use drydock_engine::store::{Registry, Store, StoreConfig, StoreError};
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;

/// Read `path` and return its objects in apply order (cluster-scoped first), or an error naming
/// the file, the object and the field. Every object is admitted against a scratch store first, so
/// an error means nothing was applied anywhere.
pub fn load(path: &Path, registry: &Registry) -> Result<Vec<Object>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read manifest {}", path.display()))?;
    let file = path.display().to_string();
    let documents = parse_documents(&text, path).with_context(|| format!("{file}: not valid YAML or JSON"))?;
    let mut items = Vec::new();
    for document in documents {
        match document {
            Value::Null => {}
            Value::Array(list) => items.extend(list),
            Value::Object(mut map) if map.contains_key("items") && !map.contains_key("kind") => {
                match map.remove("items") {
                    Some(Value::Array(list)) => items.extend(list),
                    _ => bail!("{file}: `items` must be a list of objects"),
                }
            }
            other => items.push(other),
        }
    }
    if items.is_empty() {
        bail!("{file}: no objects in the manifest");
    }
    let mut objects = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let label = describe(i, &item);
        let object: Object = serde_path_to_error::deserialize(item)
            .map_err(|e| anyhow::anyhow!("{file}: {label}: field {}: {}", e.path(), e.inner()))?;
        objects.push((i, object));
    }
    // Namespaces (and other cluster-scoped objects) before what lives in them; otherwise file order.
    objects.sort_by_key(|(_, o)| o.metadata.namespace.is_some());
    admit_all(&file, &objects, registry)?;
    Ok(objects.into_iter().map(|(_, o)| o).collect())
}

fn parse_documents(text: &str, path: &Path) -> Result<Vec<Value>> {
    if path.extension().is_some_and(|e| e == "json") {
        return Ok(vec![serde_json::from_str(text)?]);
    }
    let mut documents = Vec::new();
    for document in serde_yaml_ng::Deserializer::from_str(text) {
        documents.push(Value::deserialize(document)?);
    }
    Ok(documents)
}

/// `object #2 (PhysicalContainer demo/web)`, from whatever the raw item has.
fn describe(index: usize, item: &Value) -> String {
    let kind = item.get("kind").and_then(Value::as_str).unwrap_or("?");
    let meta = item.get("metadata");
    let name = meta.and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("?");
    match meta.and_then(|m| m.get("namespace")).and_then(Value::as_str) {
        Some(ns) => format!("object #{} ({kind} {ns}/{name})", index + 1),
        None => format!("object #{} ({kind} {name})", index + 1),
    }
}

fn admit_all(file: &str, objects: &[(usize, Object)], registry: &Registry) -> Result<()> {
    let mut scratch = Store::in_memory(registry.clone(), StoreConfig::default());
    for (i, object) in objects {
        if let Err(error) = scratch.create(WallTime(0), object.clone()) {
            let label = format!("object #{} ({})", i + 1, object.key());
            match error {
                StoreError::Invalid { errors, .. } => {
                    let fields: Vec<String> =
                        errors.iter().map(|e| format!("field {}: {}", e.path, e.message)).collect();
                    bail!("{file}: {label}: {}", fields.join("; "));
                }
                StoreError::NamespaceNotActive { namespace, .. } => {
                    bail!(
                        "{file}: {label}: namespace {namespace:?} is not in the manifest; add a Namespace object for it"
                    )
                }
                other => bail!("{file}: {label}: {other}"),
            }
        }
    }
    Ok(())
}
