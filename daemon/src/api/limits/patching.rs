//! JSON patch, one operation at a time, within the size, depth and copy bounds.

use super::*;

/// Apply a JSON patch to `doc` one operation at a time, as `json_patch::patch` would (the same
/// operations, errors and wording), refusing an operation before it takes the document past
/// [`MAX_OBJECT_BYTES`] of JSON or [`MAX_DEPTH`] levels, or the copies and moves of the patch
/// past [`MAX_JSON_PATCH_COPY_BYTES`].
///
/// *Guarantees*: the size kept is the exact length of the document as compact JSON after every
/// operation; each operation measures only the values it adds, copies, moves or drops, so the
/// work is linear in the patch, the document and what is copied. On an error the document is
/// gone (the caller's copy is untouched: it was moved in).
pub fn apply_json_patch(doc: Value, ops: &[PatchOperation]) -> Result<Value, PatchError> {
    if ops.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(PatchError::TooManyOperations { count: ops.len() });
    }
    let mut meter = Meter { size: json_len(&doc), depth: depth(&doc), copied: 0, operation: 0, op: "" };
    let mut doc = doc;
    for (operation, op) in ops.iter().enumerate() {
        meter.operation = operation;
        meter.apply(&mut doc, op)?;
    }
    Ok(doc)
}

/// The document's size and depth, and what the patch copied, as the operations go.
pub(super) struct Meter {
    pub(super) size: usize,
    pub(super) depth: usize,
    pub(super) copied: usize,
    pub(super) operation: usize,
    pub(super) op: &'static str,
}

/// The index in an array of `len` items that `token` names; `incl`: `-` and `len` allowed.
fn array_index(token: &::json_patch::jsonptr::Token, len: usize, incl: bool) -> Option<usize> {
    let index = token.to_index().ok()?;
    if incl { index.for_len_incl(len).ok() } else { index.for_len(len).ok() }
}

impl Meter {
    fn failed(&self, path: &Pointer, reason: &str) -> PatchError {
        PatchError::Failed { operation: self.operation, path: path.to_string(), reason: reason.into() }
    }

    pub(super) fn apply(&mut self, doc: &mut Value, op: &PatchOperation) -> Result<(), PatchError> {
        use PatchOperation as Op;
        match op {
            Op::Add(o) => {
                self.op = "add";
                self.deepen(&o.path, &o.value)?;
                self.add(doc, &o.path, o.value.clone(), json_len(&o.value))
            }
            Op::Remove(o) => {
                self.op = "remove";
                self.remove(doc, &o.path, &o.path, "path is invalid").map(drop)
            }
            Op::Replace(o) => {
                self.op = "replace";
                self.deepen(&o.path, &o.value)?;
                self.replace(doc, &o.path, o.value.clone())
            }
            Op::Move(o) => {
                self.op = "move";
                self.mov(doc, &o.from, &o.path)
            }
            Op::Copy(o) => {
                self.op = "copy";
                self.copy(doc, &o.from, &o.path)
            }
            Op::Test(o) => {
                self.op = "test";
                match doc.pointer(o.path.as_str()) {
                    None => Err(self.failed(&o.path, "path is invalid")),
                    Some(found) if *found != o.value => Err(self.failed(&o.path, "value did not match")),
                    Some(_) => Ok(()),
                }
            }
        }
    }

    /// Refuse `value` at `path` if it would nest the document too deep.
    fn deepen(&mut self, path: &Pointer, value: &Value) -> Result<(), PatchError> {
        let depth = path.count() + depth(value);
        if depth > MAX_DEPTH && depth > self.depth {
            return Err(PatchError::TooDeep { operation: self.operation, op: self.op });
        }
        self.depth = self.depth.max(depth);
        Ok(())
    }

    /// The size after dropping `removed` bytes and adding `added`, refused past the limit.
    fn resize(&mut self, removed: usize, added: usize) -> Result<(), PatchError> {
        let size = self.size.saturating_sub(removed).saturating_add(added);
        if size > MAX_OBJECT_BYTES {
            return Err(PatchError::TooLarge { operation: self.operation, op: self.op, size });
        }
        self.size = size;
        Ok(())
    }

    /// Count `len` bytes copied or moved, refused past the limit.
    fn charge_copy(&mut self, len: usize) -> Result<(), PatchError> {
        self.copied = self.copied.saturating_add(len);
        if self.copied > MAX_JSON_PATCH_COPY_BYTES {
            return Err(PatchError::CopiesTooMuch { operation: self.operation, op: self.op });
        }
        Ok(())
    }

    /// json_patch's `add`: `value` (`len` bytes of JSON) at `path`.
    fn add(&mut self, doc: &mut Value, path: &Pointer, value: Value, len: usize) -> Result<(), PatchError> {
        let Some((parent, last)) = path.split_back() else {
            self.resize(self.size, len)?;
            *doc = value;
            return Ok(());
        };
        let invalid = || self.failed(path, "path is invalid");
        match doc.pointer_mut(parent.as_str()) {
            Some(Value::Object(map)) => {
                let key = last.decoded();
                let (removed, added) = match map.get(key.as_ref()) {
                    Some(old) => (json_len(old), len),
                    None => (0, json_len(key.as_ref()) + 1 + len + usize::from(!map.is_empty())),
                };
                self.resize(removed, added)?;
                map.insert(key.into_owned(), value);
                Ok(())
            }
            Some(Value::Array(items)) => {
                let index = array_index(&last, items.len(), true).ok_or_else(invalid)?;
                self.resize(0, len + usize::from(!items.is_empty()))?;
                items.insert(index, value);
                Ok(())
            }
            _ => Err(invalid()),
        }
    }

    /// json_patch's `remove`: the value at `path`, taken out; an error names `reported` and
    /// `reason`.
    fn remove(
        &mut self,
        doc: &mut Value,
        path: &Pointer,
        reported: &Pointer,
        reason: &str,
    ) -> Result<Value, PatchError> {
        let invalid = || self.failed(reported, reason);
        let (parent, last) = path.split_back().ok_or_else(invalid)?;
        let (removed, overhead) = match doc.pointer_mut(parent.as_str()) {
            Some(Value::Object(map)) => {
                let key = last.decoded();
                let comma = usize::from(map.len() > 1);
                (map.remove(key.as_ref()).ok_or_else(invalid)?, json_len(key.as_ref()) + 1 + comma)
            }
            Some(Value::Array(items)) => {
                let index = array_index(&last, items.len(), false).ok_or_else(invalid)?;
                let comma = usize::from(items.len() > 1);
                (items.remove(index), comma)
            }
            _ => return Err(invalid()),
        };
        self.resize(json_len(&removed) + overhead, 0)?;
        Ok(removed)
    }

    fn replace(&mut self, doc: &mut Value, path: &Pointer, value: Value) -> Result<(), PatchError> {
        let len = json_len(&value);
        let Some(target) = doc.pointer_mut(path.as_str()) else {
            return Err(self.failed(path, "path is invalid"));
        };
        let old = json_len(target);
        self.resize(old, len)?;
        *target = value;
        Ok(())
    }

    fn mov(&mut self, doc: &mut Value, from: &Pointer, path: &Pointer) -> Result<(), PatchError> {
        if path.starts_with(from) && path.len() != from.len() {
            return Err(self.failed(path, "cannot move the value inside itself"));
        }
        let value = self.remove(doc, from, path, "\"from\" path is invalid")?;
        let len = json_len(&value);
        self.charge_copy(len)?;
        self.deepen(path, &value)?;
        self.add(doc, path, value, len)
    }

    fn copy(&mut self, doc: &mut Value, from: &Pointer, path: &Pointer) -> Result<(), PatchError> {
        let Some(source) = doc.pointer(from.as_str()) else {
            return Err(self.failed(path, "\"from\" path is invalid"));
        };
        let len = json_len(source);
        self.charge_copy(len)?;
        self.deepen(path, source)?;
        let value = source.clone();
        self.add(doc, path, value, len)
    }
}
