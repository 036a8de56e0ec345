//! Just enough Kubernetes protobuf to read the one body kubectl sends that way to us: a
//! `Namespace` from `kubectl create namespace` (typed core clients write protobuf).
//!
//! *Guarantees*: a body of `application/vnd.kubernetes.protobuf` is decoded from its `k8s\0`
//! envelope (`runtime.Unknown`) into JSON with `apiVersion`, `kind` and the metadata fields
//! `name`, `generateName`, `namespace`, `resourceVersion`, `labels` and `annotations`. A body of
//! another kind is a 415 (we cannot read its spec); a malformed one is a 400.
//!
//! *Caveats*: a Namespace's `spec.finalizers` is dropped (drydock's Namespace has no spec fields).

use super::status::{ApiError, ApiResult};
use serde_json::{Map, Value, json};

const MAGIC: &[u8] = b"k8s\0";

/// One field of a message: its number and either a varint/fixed value or its bytes.
enum Field<'a> {
    Scalar,
    Bytes(&'a [u8]),
}

fn bad(what: &str) -> ApiError {
    ApiError::BadRequest(format!("the protobuf body is malformed: {what}"))
}

fn varint(data: &[u8], at: &mut usize) -> ApiResult<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *data.get(*at).ok_or_else(|| bad("truncated varint"))?;
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(bad("varint too long"))
}

fn fields(data: &[u8]) -> ApiResult<Vec<(u64, Field<'_>)>> {
    let (mut at, mut out) = (0, Vec::new());
    while at < data.len() {
        let key = varint(data, &mut at)?;
        let field = match key & 7 {
            0 => varint(data, &mut at).map(|_| Field::Scalar)?,
            1 | 5 => {
                at += if key & 7 == 1 { 8 } else { 4 };
                Field::Scalar
            }
            2 => {
                let len = usize::try_from(varint(data, &mut at)?).map_err(|_| bad("length"))?;
                let end = at.checked_add(len).filter(|end| *end <= data.len()).ok_or_else(|| bad("truncated field"))?;
                let bytes = &data[at..end];
                at = end;
                Field::Bytes(bytes)
            }
            _ => return Err(bad("unsupported wire type")),
        };
        out.push((key >> 3, field));
    }
    if at > data.len() {
        return Err(bad("truncated fixed field"));
    }
    Ok(out)
}

fn string(bytes: &[u8]) -> ApiResult<String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| bad("a string is not UTF-8"))
}

fn bytes_of<'a>(fields: &[(u64, Field<'a>)], number: u64) -> Option<&'a [u8]> {
    fields.iter().rev().find_map(|(n, f)| match f {
        Field::Bytes(b) if *n == number => Some(*b),
        _ => None,
    })
}

fn map_entries(fields: &[(u64, Field<'_>)], number: u64) -> ApiResult<Map<String, Value>> {
    let mut map = Map::new();
    for (_, field) in fields.iter().filter(|(n, _)| *n == number) {
        let Field::Bytes(entry) = field else { return Err(bad("map entry")) };
        let entry = self::fields(entry)?;
        let key = string(bytes_of(&entry, 1).unwrap_or_default())?;
        let value = string(bytes_of(&entry, 2).unwrap_or_default())?;
        map.insert(key, Value::String(value));
    }
    Ok(map)
}

fn metadata(data: &[u8]) -> ApiResult<Value> {
    let fields = fields(data)?;
    let mut meta = Map::new();
    for (number, name) in [(1, "name"), (2, "generateName"), (3, "namespace"), (6, "resourceVersion")] {
        if let Some(bytes) = bytes_of(&fields, number) {
            meta.insert(name.into(), Value::String(string(bytes)?));
        }
    }
    for (number, name) in [(11, "labels"), (12, "annotations")] {
        let map = map_entries(&fields, number)?;
        if !map.is_empty() {
            meta.insert(name.into(), Value::Object(map));
        }
    }
    Ok(Value::Object(meta))
}

/// The JSON of a protobuf-encoded Namespace.
pub fn decode(body: &[u8]) -> ApiResult<Value> {
    let envelope = body.strip_prefix(MAGIC).ok_or_else(|| bad("no k8s envelope"))?;
    let envelope = fields(envelope)?;
    let type_meta = fields(bytes_of(&envelope, 1).unwrap_or_default())?;
    let api_version = string(bytes_of(&type_meta, 1).unwrap_or_default())?;
    let kind = string(bytes_of(&type_meta, 2).unwrap_or_default())?;
    if kind != "Namespace" {
        return Err(ApiError::UnsupportedMediaType { accepted: "application/json, application/yaml".into() });
    }
    let raw = fields(bytes_of(&envelope, 2).unwrap_or_default())?;
    let metadata = metadata(bytes_of(&raw, 1).unwrap_or_default())?;
    Ok(json!({"apiVersion": api_version, "kind": kind, "metadata": metadata}))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn field(number: u8, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![(number << 3) | 2, u8::try_from(bytes.len()).unwrap()];
        out.extend_from_slice(bytes);
        out
    }

    #[test]
    fn a_namespace_decodes() {
        let type_meta = [field(1, b"v1"), field(2, b"Namespace")].concat();
        let label = [field(1, b"team"), field(2, b"a")].concat();
        let meta = [field(1, b"demo"), field(11, &label)].concat();
        let raw = [field(1, &meta), field(2, b"")].concat();
        let body = [MAGIC.to_vec(), field(1, &type_meta), field(2, &raw), field(4, b"")].concat();
        assert_eq!(
            decode(&body).unwrap(),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo", "labels": {"team": "a"}}})
        );
        assert!(decode(&body[..body.len() - 5]).is_err());
        assert!(decode(b"{}").is_err());
    }
}
