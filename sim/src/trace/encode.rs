//! The stable encoding the digest hashes: each record as its tag and its fields in a fixed form.
//! Unsigned integers are LEB128 (seven bits a byte, low first, the high bit set on all bytes but
//! the last: a process number or a count is one byte, a time in nanoseconds five or six), signed
//! ones zigzag then LEB128, booleans one byte, strings their length then their UTF-8 bytes, an
//! `Option` a presence byte then its value, a list its length then its items; an enum (a record
//! kind, a fault, a runtime request, an engine value such as a container state) is its tag, a
//! number, then its fields.
//!
//! Each concept keeps its table of tags beside its types (`record`, `store`, `runtime`, `acts`;
//! the engine's values here), so a new kind of record, request or fault is one file. The tables'
//! numbers do not overlap, though only the enum being decoded needs them distinct.
//!
//! *Guarantees*: the encoding reads no `Display` or `Debug` text, so rewording a trace line
//! changes no digest; tags are explicit numbers, so reordering or adding variants changes none
//! either (two variants of one table with one number do not compile). A field's value, or a
//! record's kind, changes the bytes. The encoding is unambiguous: the bytes of one event decode
//! to one sequence of records.
//!
//! *Never renumber a tag*: every golden digest would change. A new kind takes a new number.

use drydock_engine::api::logical::LogicalMode;
use drydock_engine::logs::{Channel, Subject, UnknownSource};
use drydock_engine::runtime::{ContainerState, EventAction};
use drydock_engine::store::{EventType, Propagation};
use drydock_engine::{MonoTime, OpId};
use drydock_faults::{FaultKind, FaultPlan};
use std::collections::BTreeMap;
use std::time::Duration;

/// What is encoded: the bytes of the current event, hashed when it ends.
#[derive(Default)]
pub struct Encoder {
    bytes: Vec<u8>,
}

impl Encoder {
    /// An enum's tag (each concept's `Tag`), as a number.
    pub fn tag(&mut self, tag: impl Into<u16>) {
        self.u64(u64::from(tag.into()));
    }

    /// LEB128: seven bits a byte, low bits first.
    pub fn u64(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.bytes.push(value as u8 | 0x80);
            value >>= 7;
        }
        self.bytes.push(value as u8);
    }

    pub fn usize(&mut self, value: usize) {
        self.u64(value as u64);
    }

    /// Zigzag (0, -1, 1, -2... as 0, 1, 2, 3...), then LEB128.
    pub fn i64(&mut self, value: i64) {
        self.u64(((value << 1) ^ (value >> 63)) as u64);
    }

    /// Its IEEE 754 bits, 8 bytes little-endian.
    pub fn float(&mut self, value: f64) {
        self.bytes.extend_from_slice(&value.to_bits().to_le_bytes());
    }

    pub fn bool(&mut self, value: bool) {
        self.bytes.push(u8::from(value));
    }

    pub fn str(&mut self, value: &str) {
        self.usize(value.len());
        self.bytes.extend_from_slice(value.as_bytes());
    }

    pub fn option<T>(&mut self, value: Option<T>, mut each: impl FnMut(&mut Self, T)) {
        self.bool(value.is_some());
        if let Some(value) = value {
            each(self, value);
        }
    }

    pub fn opt_str(&mut self, value: Option<&str>) {
        self.option(value, Self::str);
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn clear(&mut self) {
        self.bytes.clear();
    }
}

/// A value with a stable encoding.
pub trait Encode {
    fn encode(&self, out: &mut Encoder);
}

/// The tags of engine values and of JSON values (a client's patch): explicit numbers, never changed
/// (renumbering one changes every golden digest; a new kind takes a new number).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
enum Tag {
    Added = 272,
    Modified = 273,
    Deleted = 274,
    StateCreated = 280,
    StateRunning = 281,
    StateExited = 282,
    StateRemoving = 283,
    Background = 288,
    Foreground = 289,
    Orphan = 290,
    Session = 296,
    Persistent = 297,
    Existing = 298,
    Stdout = 304,
    Stderr = 305,
    System = 306,
    ActionCreate = 312,
    ActionStart = 313,
    ActionDie = 314,
    ActionDestroy = 315,
    SubjectObject = 320,
    SubjectContainer = 321,
    JsonNull = 336,
    JsonBool = 337,
    JsonUnsigned = 338,
    JsonSigned = 339,
    JsonFloat = 340,
    JsonString = 341,
    JsonArray = 342,
    JsonObject = 343,
}

impl From<Tag> for u16 {
    fn from(tag: Tag) -> u16 {
        tag as u16
    }
}

impl Encode for OpId {
    fn encode(&self, out: &mut Encoder) {
        out.u64(self.0);
    }
}

impl Encode for MonoTime {
    fn encode(&self, out: &mut Encoder) {
        out.u64(self.0);
    }
}

impl Encode for Duration {
    fn encode(&self, out: &mut Encoder) {
        out.u64(self.as_secs());
        out.u64(u64::from(self.subsec_nanos()));
    }
}

impl Encode for FaultKind {
    /// By its name, which never changes (fault plans and saved schedules name kinds so).
    fn encode(&self, out: &mut Encoder) {
        out.str(self.name());
    }
}

impl Encode for FaultPlan {
    /// Its kinds by name, in name order, each with its rate in hundredths (as the plan describes
    /// itself). The script a replay follows is not part of it: a replay has its seed's digest.
    fn encode(&self, out: &mut Encoder) {
        let mut rates: Vec<(&'static str, u64)> = self.enabled().map(|(k, r)| (k.name(), hundredths(r))).collect();
        rates.sort_unstable();
        out.usize(rates.len());
        for (name, rate) in rates {
            out.str(name);
            out.u64(rate);
        }
    }
}

/// `rate` in hundredths, rounded half to even on its exact binary value: the digits `{:.2}`
/// prints (a rate is in `[0, 1]`; anything else, or not a number, is 0).
pub(super) fn hundredths(rate: f64) -> u64 {
    if rate.is_nan() || rate <= 0.0 || rate > 1.0 {
        return 0;
    }
    // rate = mantissa * 2^exponent exactly, with a 53-bit mantissa and a negative exponent.
    let bits = rate.to_bits();
    let raw_exponent = ((bits >> 52) & 0x7ff) as i32;
    let (mantissa, exponent) = if raw_exponent == 0 {
        (bits & ((1 << 52) - 1), -1074)
    } else {
        ((bits & ((1 << 52) - 1)) | (1 << 52), raw_exponent - 1075)
    };
    let scaled = u128::from(mantissa) * 100;
    let shift = (-exponent) as u32;
    if shift >= 128 {
        return 0;
    }
    let (whole, rest) = ((scaled >> shift) as u64, scaled & ((1u128 << shift) - 1));
    let half = 1u128 << (shift - 1);
    if rest > half || (rest == half && whole % 2 == 1) { whole + 1 } else { whole }
}

impl Encode for EventType {
    fn encode(&self, out: &mut Encoder) {
        out.tag(match self {
            EventType::Added => Tag::Added,
            EventType::Modified => Tag::Modified,
            EventType::Deleted => Tag::Deleted,
        });
    }
}

impl Encode for ContainerState {
    fn encode(&self, out: &mut Encoder) {
        out.tag(match self {
            ContainerState::Created => Tag::StateCreated,
            ContainerState::Running => Tag::StateRunning,
            ContainerState::Exited => Tag::StateExited,
            ContainerState::Removing => Tag::StateRemoving,
        });
    }
}

impl Encode for Propagation {
    fn encode(&self, out: &mut Encoder) {
        out.tag(match self {
            Propagation::Background => Tag::Background,
            Propagation::Foreground => Tag::Foreground,
            Propagation::Orphan => Tag::Orphan,
        });
    }
}

impl Encode for LogicalMode {
    fn encode(&self, out: &mut Encoder) {
        out.tag(match self {
            LogicalMode::Session => Tag::Session,
            LogicalMode::Persistent => Tag::Persistent,
            LogicalMode::Existing => Tag::Existing,
        });
    }
}

impl Encode for Channel {
    fn encode(&self, out: &mut Encoder) {
        out.tag(match self {
            Channel::Stdout => Tag::Stdout,
            Channel::Stderr => Tag::Stderr,
            Channel::System => Tag::System,
        });
    }
}

impl Encode for EventAction {
    fn encode(&self, out: &mut Encoder) {
        match self {
            EventAction::Create => out.tag(Tag::ActionCreate),
            EventAction::Start => out.tag(Tag::ActionStart),
            EventAction::Die { exit_code } => {
                out.tag(Tag::ActionDie);
                out.option(*exit_code, Encoder::i64);
            }
            EventAction::Destroy => out.tag(Tag::ActionDestroy),
        }
    }
}

impl Encode for Subject {
    fn encode(&self, out: &mut Encoder) {
        match self {
            Subject::Object(uid) => {
                out.tag(Tag::SubjectObject);
                out.str(&uid.0);
            }
            Subject::Container(id) => {
                out.tag(Tag::SubjectContainer);
                out.str(id);
            }
        }
    }
}

impl Encode for UnknownSource {
    fn encode(&self, out: &mut Encoder) {
        out.str(&self.kind);
        out.str(&self.given);
        out.usize(self.allowed.len());
        for source in &self.allowed {
            out.str(source);
        }
    }
}

/// Labels (or files) in key order.
pub(super) fn encode_map(map: &BTreeMap<String, String>, out: &mut Encoder) {
    out.usize(map.len());
    for (key, value) in map {
        out.str(key);
        out.str(value);
    }
}

impl Encode for serde_json::Value {
    /// Objects in key order, whatever order the map keeps.
    fn encode(&self, out: &mut Encoder) {
        use serde_json::Value;
        match self {
            Value::Null => out.tag(Tag::JsonNull),
            Value::Bool(b) => {
                out.tag(Tag::JsonBool);
                out.bool(*b);
            }
            Value::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => {
                    out.tag(Tag::JsonUnsigned);
                    out.u64(u);
                }
                (None, Some(i)) => {
                    out.tag(Tag::JsonSigned);
                    out.i64(i);
                }
                (None, None) => {
                    out.tag(Tag::JsonFloat);
                    out.float(n.as_f64().unwrap_or(f64::NAN));
                }
            },
            Value::String(s) => {
                out.tag(Tag::JsonString);
                out.str(s);
            }
            Value::Array(items) => {
                out.tag(Tag::JsonArray);
                out.usize(items.len());
                for item in items {
                    item.encode(out);
                }
            }
            Value::Object(map) => {
                out.tag(Tag::JsonObject);
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                out.usize(entries.len());
                for (key, value) in entries {
                    out.str(key);
                    value.encode(out);
                }
            }
        }
    }
}
