//! What one request may cost: the size of a stored object, the depth and decoded size of a JSON
//! or YAML body, and what a JSON patch may build. The numbers are the Kubernetes API server's
//! where it has one.
//!
//! What was slow or big before (issue 47; measured on a 2-core x86-64 host, release build, the
//! decoders alone) and why the bounds here make it linear:
//! - **Flow-style YAML nesting** (`{a: {a: ...}}`, `[[[...]]]`, also JSON sent as YAML): libyaml
//!   scans the whole body before anything is decoded, and for every token walks its stack of
//!   possible simple keys, one entry per open flow collection: time is tokens × depth, quadratic.
//!   A 195 KiB `{a: ` chain took 5.9 to 7.3 s to refuse (12 KiB: 28 ms, 48 KiB: 389 ms), the
//!   same nesting as JSON sent as YAML 4.5 s, a 195 KiB `[` chain 0.4 to 0.55 s; serde_yaml_ng's
//!   recursion limit (128) only acts after that scan. [`check_yaml`] now runs first: one pass
//!   that follows libyaml's own tokenizing rules (quotes, comments, block scalars and plain
//!   scalars by indentation, simple keys) and refuses the body as soon as more than
//!   [`MAX_DEPTH`] flow collections are open, so libyaml never walks a stack deeper than that:
//!   at most [`MAX_DEPTH`] steps per token. The three bodies are now refused in under 10 µs.
//! - **`%TAG` directives**: libyaml compares each new directive with every earlier one: 16,000
//!   of them (400 KB) took 0.65 to 0.73 s, a 3 MiB body would take about 40 s. At most
//!   [`MAX_YAML_DIRECTIVES`] are accepted (refused in 1 µs).
//! - **YAML aliases**: each alias replays what its anchor names, up to 100 times the document's
//!   events: 1,000 aliases of a 100 KiB list (a 104 KiB body) took 1.2 to 1.4 s and decoded to
//!   about 100 MB. The decoder here counts the JSON it builds and stops at
//!   [`MAX_DECODED_BYTES`]: refused in 51 ms.
//! - **Block-style YAML nesting and JSON nesting** were already linear (serde_json and
//!   serde_yaml_ng stop at 128 levels: 195 KiB in 0.01 ms and 1 ms); the decoder here refuses
//!   more than [`MAX_DEPTH`] levels for both, with one message, in the same time.
//! - **JSON patch**: operations that each copy `/spec` into a new key of itself double the
//!   object each time: 20 of them made 32 MB of JSON in 0.37 s and 81 MiB; 22 took the daemon
//!   from 520 MiB to 3.2 GiB. [`apply_json_patch`] applies the operations one by one, keeping
//!   the exact JSON size of the document, and refuses the operation that would take it past
//!   [`MAX_OBJECT_BYTES`] before making it (operation /15 here, in 30 ms); what `copy` and `move`
//!   may copy in all is bounded too, so the work of a patch is linear in its body and the
//!   object.
//!
//! Legitimate bodies cost what they did: 1 MiB of YAML in 67 ms (68 before), 1 MiB of JSON in
//! 8.7 ms (the same); 1 MiB of JSON sent as YAML, as `kubectl apply` sends it, in 50 ms (42
//! before: the pre-scan).
//!
//! *Guarantees*
//! - A JSON or YAML body decodes in time linear in its size (for YAML: at most [`MAX_DEPTH`]
//!   steps per token), to a value at most [`MAX_DEPTH`] levels deep and at most
//!   [`MAX_DECODED_BYTES`] of JSON; anything past a bound is refused before the parser sees it
//!   (depth of YAML flow collections, directives) or as soon as the decoder reaches it.
//! - A JSON patch has at most [`MAX_JSON_PATCH_OPERATIONS`] operations, and the document it
//!   patches never exceeds [`MAX_OBJECT_BYTES`] of JSON nor [`MAX_DEPTH`] levels between two
//!   operations: the peak is the document plus one value it copies.
//!
//! *Caveats*
//! - [`check_yaml`] mirrors the tokenizer of libyaml 0.2 (`unsafe-libyaml` 0.2.11, which
//!   serde_yaml_ng 0.10 uses) rule for rule up to the first error libyaml would report, and may
//!   count anything after it; another YAML parser needs its own pre-scan.
//! - Sizes are of compact JSON (serde_json's), not of the body as sent; the decoded size of a
//!   string is its length without JSON escapes.
//! - The depth a JSON patch may reach is checked against the deepest the document has been
//!   (removing a deep part does not lower it), and `move` counts against the copy bound as
//!   `copy` does (the API server counts copies only).
//! - Decoding still runs on the request's task: a legitimate 3 MiB body takes its ~150 ms there.

use json_patch::PatchOperation;
use json_patch::jsonptr::Pointer;
use serde::Serialize;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::cell::Cell;
use std::fmt;

/// The most bytes of JSON a stored object may take: etcd's default request limit, 1.5 MiB, as
/// the Kubernetes API server enforces it.
pub const MAX_OBJECT_BYTES: usize = 1_572_864;

/// How deep objects and lists may nest in a body or a patched object.
pub const MAX_DEPTH: usize = 100;

/// The most operations one JSON patch may have (the Kubernetes API server's limit).
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The most bytes of JSON the `copy` and `move` operations of one JSON patch may copy or move in
/// all: twice the object limit.
pub const MAX_JSON_PATCH_COPY_BYTES: usize = 2 * MAX_OBJECT_BYTES;

/// The most bytes of JSON a body may decode to (YAML aliases repeat what they name): twice the
/// object limit.
pub const MAX_DECODED_BYTES: usize = 2 * MAX_OBJECT_BYTES;

/// The most YAML directives (`%YAML`, `%TAG` lines) a body may have.
pub const MAX_YAML_DIRECTIVES: usize = 10;

/// Why a body was not decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error(
        "the body nests objects and lists more than {MAX_DEPTH} levels deep: at most {MAX_DEPTH} levels are decoded"
    )]
    TooDeep,
    #[error(
        "the body decodes to more than {MAX_DECODED_BYTES} bytes of JSON (YAML aliases repeat what they name): write the repeated parts once, or send less"
    )]
    TooLarge,
    #[error("the body has more than {MAX_YAML_DIRECTIVES} YAML directives (`%YAML` or `%TAG` lines)")]
    TooManyDirectives,
    /// The parser's own refusal.
    #[error("{0}")]
    Syntax(String),
}

/// An object over [`MAX_OBJECT_BYTES`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the object is {size} bytes of JSON, more than the limit of {MAX_OBJECT_BYTES} bytes (1.5 MiB) an object may have: keep large data out of the object (in a file on the host or an image it names), or split it across several objects"
)]
pub struct ObjectTooLarge {
    pub size: usize,
}

/// The size of `object` as compact JSON, refused past [`MAX_OBJECT_BYTES`].
pub fn check_object_size<T: Serialize + ?Sized>(object: &T) -> Result<usize, ObjectTooLarge> {
    match json_len(object) {
        size if size > MAX_OBJECT_BYTES => Err(ObjectTooLarge { size }),
        size => Ok(size),
    }
}

/// Why a JSON patch was not applied.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    #[error(
        "the JSON patch has {count} operations: at most {MAX_JSON_PATCH_OPERATIONS} are allowed; send it as several patches"
    )]
    TooManyOperations { count: usize },
    #[error(
        "operation /{operation} ({op}) of the JSON patch would make the object {size} bytes of JSON, more than the limit of {MAX_OBJECT_BYTES} bytes (1.5 MiB) an object may have: keep large data out of the object (in a file or an image it names)"
    )]
    TooLarge { operation: usize, op: &'static str, size: usize },
    #[error(
        "operation /{operation} ({op}) of the JSON patch would copy or move more than {MAX_JSON_PATCH_COPY_BYTES} bytes of JSON in all: write the values into the patch, or send several patches"
    )]
    CopiesTooMuch { operation: usize, op: &'static str },
    #[error("operation /{operation} ({op}) of the JSON patch would nest the object more than {MAX_DEPTH} levels deep")]
    TooDeep { operation: usize, op: &'static str },
    /// An operation that does not apply (json_patch's wording).
    #[error("operation '/{operation}' failed at path '{path}': {reason}")]
    Failed { operation: usize, path: String, reason: String },
}

// ---------------------------------------------------------------------------------------------
// Sizes.

/// A writer that only counts.
struct Count(usize);

impl std::io::Write for Count {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The length of `value` as compact JSON (what serde_json writes), counted without building it;
/// `usize::MAX` if it does not serialize.
pub fn json_len<T: Serialize + ?Sized>(value: &T) -> usize {
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
}

/// How many objects and lists deep `value` is (a scalar: 0, `[]`: 1), without recursion.
pub fn depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 1)];
    while let Some((value, level)) = stack.pop() {
        match value {
            Value::Array(items) => {
                deepest = deepest.max(level);
                stack.extend(items.iter().map(|item| (item, level + 1)));
            }
            Value::Object(map) => {
                deepest = deepest.max(level);
                stack.extend(map.values().map(|item| (item, level + 1)));
            }
            _ => {}
        }
    }
    deepest
}

mod decode;
mod patching;
mod yaml_scan;

pub use decode::{decode_json, decode_yaml};
pub use patching::apply_json_patch;
pub use yaml_scan::check_yaml;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::patching::Meter;
    use super::yaml_scan::FlowScan;
    use super::*;
    use serde_json::json;

    /// The most flow collections libyaml has open at once in `text` (as the scan counts them).
    fn flow_depth(text: &str) -> usize {
        (0..).find(|&limit| FlowScan::new(text.as_bytes(), limit).run().is_ok()).unwrap()
    }

    #[test]
    fn the_scan_counts_flow_collections_as_libyaml_opens_them() {
        let cases = [
            ("[[[]]]", 3),
            ("{a: {b: [1]}}", 3),
            (r#"{"a":{"b":[{"c":"]}"}]}}"#, 4),
            // Quotes, comments and plain scalars hide brackets; closers in them close nothing.
            ("a: '[[[' # [[[\nb: \"[[\\\"[\"", 0),
            ("['a]', \"b]\", [c]]", 2),
            ("[ \"]\" [ \"]\" [ ]]]", 3),
            ("a: x[y\n- it's [not\nc: d#[[", 0),
            // A block scalar hides its lines; the next key's flow counts.
            ("a: |\n  [[[\n  {{\nb: [c]\n", 1),
            // A quote inside a plain scalar or a block scalar starts nothing: the list between
            // it and the next quote is counted.
            ("a: it's\nb: [[[x]]]\nc: '\n", 3),
            ("a: |\n  'x\nb: [[x]]\nc: '", 2),
            ("a: >-\n  \"\n   [\nb: [[[[y]]]]\n# \"", 4),
            // A multi-line plain scalar, then a line indented less: a new token.
            ("a:\n  b: foo\nc: [[z]]", 2),
            // Tags and anchors: `!<...>` may hold brackets, an anchor ends at one.
            ("!<a]b> [x]", 1),
            ("[!<a]b> x, &y [*y]]", 2),
            // Document markers and a BOM.
            ("\u{feff}--- [a, [b]]\n...\n--- {c: [d]}", 2),
        ];
        for (text, depth) in cases {
            assert_eq!(flow_depth(text), depth, "{text:?}");
        }
    }

    fn nested(open: &str, inner: &str, close: &str, levels: usize) -> String {
        format!("{}{inner}{}", open.repeat(levels), close.repeat(levels))
    }

    #[test]
    fn bodies_nest_at_most_the_limit() {
        let block = |levels: usize| (0..levels).map(|d| format!("{}a:\n", " ".repeat(d))).collect::<String>();
        for levels in [MAX_DEPTH, MAX_DEPTH + 1, 5_000] {
            let want = if levels > MAX_DEPTH { Err(DecodeError::TooDeep) } else { Ok(()) };
            let yaml_flow = nested("{a: ", "1", "}", levels);
            let yaml_seq = nested("[", "", "]", levels);
            let json = nested("{\"a\":", "1", "}", levels);
            assert_eq!(decode_yaml(yaml_flow.as_bytes()).map(drop), want, "flow {levels}");
            assert_eq!(decode_yaml(yaml_seq.as_bytes()).map(drop), want, "sequence {levels}");
            assert_eq!(decode_yaml(json.as_bytes()).map(drop), want, "JSON as YAML {levels}");
            assert_eq!(decode_json(json.as_bytes()).map(drop), want, "JSON {levels}");
            assert_eq!(decode_yaml(block(levels).as_bytes()).map(drop), want, "block {levels}");
        }
    }

    #[test]
    fn decoding_builds_what_serde_builds() {
        let yaml = "a: &x [1, -2, 3.5, 1e3, ~, true, 'q', \"\\u00e9\"]\nb: *x\n? c\n: {d: e}\nf: |\n  text\n'1': 18446744073709551615\n";
        assert_eq!(decode_yaml(yaml.as_bytes()).unwrap(), serde_yaml_ng::from_slice::<Value>(yaml.as_bytes()).unwrap());
        let json = br#"{"a":[1,-2,3.5,1e3,null,true,"q\u00e9"],"b":{},"c":[],"d":18446744073709551615}"#;
        assert_eq!(decode_json(json).unwrap(), serde_json::from_slice::<Value>(json).unwrap());
        assert!(matches!(decode_json(b"{\"a\":1} x"), Err(DecodeError::Syntax(_))));
        assert!(matches!(decode_yaml(b"a: [1"), Err(DecodeError::Syntax(_))));
        assert!(matches!(decode_yaml(b"a: 1\n---\nb: 2\n"), Err(DecodeError::Syntax(_))));
    }

    #[test]
    fn aliases_expand_within_the_budget() {
        let mut laughs = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for i in 1..9 {
            laughs.push_str(&format!("a{i}: &a{i} [{}]\n", vec![format!("*a{}", i - 1); 10].join(", ")));
        }
        // serde_yaml_ng stops this one itself (more than 100 alias jumps per event).
        assert!(matches!(decode_yaml(laughs.as_bytes()), Err(DecodeError::Syntax(e)) if e.contains("repetition")));
        // 400 aliases of a 10,000-item list (63 KiB): 4 million strings, past the budget.
        let big = format!("a: &a [{}]\nb: [{}]\n", vec!["lol"; 10_000].join(", "), vec!["*a"; 400].join(", "));
        assert_eq!(decode_yaml(big.as_bytes()), Err(DecodeError::TooLarge));
        // Three levels (1,000 strings) fit.
        let few: String = laughs.lines().take(4).map(|l| format!("{l}\n")).collect();
        assert_eq!(decode_yaml(few.as_bytes()).unwrap()["a3"][9][9][9][9], "lol");
    }

    #[test]
    fn directives_are_bounded() {
        let directives = |n: usize| (0..n).map(|i| format!("%TAG !a{i}! tag:x,{i}:\n")).collect::<String>() + "--- x\n";
        assert_eq!(decode_yaml(directives(MAX_YAML_DIRECTIVES).as_bytes()).unwrap(), "x");
        assert_eq!(decode_yaml(directives(MAX_YAML_DIRECTIVES + 1).as_bytes()), Err(DecodeError::TooManyDirectives));
    }

    fn ops(patch: Value) -> Vec<PatchOperation> {
        serde_json::from_value::<json_patch::Patch>(patch).unwrap().0
    }

    /// Every operation kind, on objects and arrays, with errors where json_patch has them.
    fn patches() -> Vec<Value> {
        vec![
            json!([{"op": "add", "path": "/spec/env/-", "value": {"name": "X", "value": "é\"\n"}},
                   {"op": "add", "path": "/spec/env/0", "value": {"name": "Y"}},
                   {"op": "add", "path": "/metadata/labels/a~1b", "value": "c"},
                   {"op": "replace", "path": "/spec/image", "value": ["a", {"b": null}]},
                   {"op": "remove", "path": "/spec/env/1"},
                   {"op": "move", "from": "/spec/env", "path": "/spec/moved"},
                   {"op": "copy", "from": "/metadata", "path": "/spec/moved/-"},
                   {"op": "move", "from": "/spec/moved/0", "path": "/spec/moved/1"},
                   {"op": "test", "path": "/metadata/labels/a~1b", "value": "c"},
                   {"op": "remove", "path": "/metadata/labels"},
                   {"op": "add", "path": "/metadata/labels", "value": {}},
                   {"op": "move", "from": "/spec/image", "path": "/spec/image"},
                   {"op": "add", "path": "/spec/one", "value": 1},
                   {"op": "remove", "path": "/spec/one"}]),
            json!([{"op": "add", "path": "", "value": {"a": [1, 2, 3]}},
                   {"op": "remove", "path": "/a/0"}, {"op": "remove", "path": "/a/0"},
                   {"op": "remove", "path": "/a/0"}, {"op": "add", "path": "/a/0", "value": "x"}]),
            json!([{"op": "replace", "path": "", "value": 5}]),
            json!([{"op": "test", "path": "/spec/image", "value": "other"}]),
            json!([{"op": "remove", "path": "/spec/nothing"}]),
            json!([{"op": "add", "path": "/spec/env/9", "value": 1}]),
            json!([{"op": "add", "path": "/spec/env/01", "value": 1}]),
            json!([{"op": "move", "from": "/spec", "path": "/spec/inner"}]),
            json!([{"op": "move", "from": "/nothing", "path": "/a"}]),
            json!([{"op": "copy", "from": "/nothing", "path": "/a"}]),
            json!([{"op": "remove", "path": "/spec/env/-"}]),
            json!([{"op": "remove", "path": ""}]),
            json!([{"op": "add", "path": "/spec/image/x", "value": 1}]),
        ]
    }

    fn object() -> Value {
        json!({"metadata": {"name": "a", "labels": {"x": "y"}},
               "spec": {"image": "busybox", "env": [{"name": "A", "value": "1"}]}})
    }

    #[test]
    fn json_patches_apply_as_json_patch_applies_them_and_the_size_is_exact() {
        for patch in patches() {
            let ops = ops(patch.clone());
            let mut want = object();
            let want = json_patch::patch(&mut want, &ops).map(|()| want).map_err(|e| e.to_string());
            let got = apply_json_patch(object(), &ops).map_err(|e| e.to_string());
            assert_eq!(got, want, "{patch}");
            // The size kept is the document's after every operation that applies.
            let (mut doc, mut meter) =
                (object(), Meter { size: json_len(&object()), depth: 3, copied: 0, operation: 0, op: "" });
            for op in &ops {
                if meter.apply(&mut doc, op).is_err() {
                    break;
                }
                assert_eq!(meter.size, json_len(&doc), "{patch} after {op:?}");
            }
        }
    }

    #[test]
    fn json_patches_are_bounded() {
        // Twenty-two self-copies would double the object 22 times: refused once past the limit.
        let copies: Vec<_> =
            (0..22).map(|i| json!({"op": "copy", "from": "/spec", "path": format!("/spec/x{i}")})).collect();
        let big = json!({"spec": {"data": "x".repeat(1000)}});
        match apply_json_patch(big.clone(), &ops(Value::from(copies))) {
            Err(PatchError::TooLarge { operation, op: "copy", size }) => {
                assert_eq!(operation, 10, "{size}");
                assert!(size > MAX_OBJECT_BYTES && size < 2 * MAX_OBJECT_BYTES + 10_000);
            }
            other => panic!("{other:?}"),
        }
        // Copies that do not grow the object are bounded by what they copy.
        let half = json!({"a": "x".repeat(MAX_OBJECT_BYTES / 3)});
        let swaps = vec![json!({"op": "copy", "from": "/a", "path": "/a"}); 10];
        assert!(matches!(
            apply_json_patch(half, &ops(Value::from(swaps))),
            Err(PatchError::CopiesTooMuch { operation: 5, .. })
        ));
        // Too many operations, too deep.
        let tests = vec![json!({"op": "test", "path": "", "value": 1}); MAX_JSON_PATCH_OPERATIONS + 1];
        assert_eq!(
            apply_json_patch(big.clone(), &ops(Value::from(tests))),
            Err(PatchError::TooManyOperations { count: 10_001 })
        );
        let deeper = ops(json!([{"op": "add", "path": "/a", "value": nested_value(60)},
                                {"op": "add", "path": format!("{}/b", "/a".repeat(59)), "value": nested_value(60)}]));
        assert!(matches!(apply_json_patch(json!({}), &deeper), Err(PatchError::TooDeep { operation: 1, op: "add" })));
        let copied = ops(json!([{"op": "add", "path": "/a", "value": nested_value(60)},
                                {"op": "copy", "from": "/a", "path": format!("{}/b", "/a".repeat(59))}]));
        assert!(matches!(apply_json_patch(json!({}), &copied), Err(PatchError::TooDeep { operation: 1, op: "copy" })));
    }

    /// `{"a": {"a": ... {}}}`, `levels` objects deep.
    fn nested_value(levels: usize) -> Value {
        (1..levels).fold(json!({}), |inner, _| json!({"a": inner}))
    }

    #[test]
    fn object_sizes_are_checked() {
        assert_eq!(json_len(&json!({"a": [1, "x"]})), 13);
        assert_eq!(depth(&json!({"a": [1, {"b": []}]})), 4);
        assert!(check_object_size(&json!({"a": "x".repeat(MAX_OBJECT_BYTES - 8)})).is_ok());
        assert_eq!(
            check_object_size(&json!({"a": "x".repeat(MAX_OBJECT_BYTES - 7)})),
            Err(ObjectTooLarge { size: MAX_OBJECT_BYTES + 1 })
        );
    }
}
