//! Times on the wire: the store keeps milliseconds since the epoch ([`WallTime`]); clients read
//! and write RFC 3339 strings, as Kubernetes' `metav1.Time` and `metav1.MicroTime` are.
//!
//! *Guarantees*
//! - Out: [`seconds`] is `metav1.Time` exactly (`2026-12-01T04:33:45Z`); [`precise`] adds the
//!   milliseconds when there are any (`…:45.250Z`), which every RFC 3339 parser reads (Go's
//!   `time.RFC3339`, Python's `dateutil`, chrono), so a condition read and written back keeps its
//!   time; [`micro`] is `metav1.MicroTime` (six digits, a lease's times); [`millis`] always
//!   three digits (log lines).
//! - In: [`parse`] reads RFC 3339 with any fraction and offset, and, so that objects written
//!   before times went out as strings still decode, a number of milliseconds.
//! - The fields that hold times are converted both ways by [`to_wire`] and [`from_wire`]: every
//!   condition's `lastTransitionTime` in `status.conditions`, and a lease's `spec.acquireTime` and
//!   `spec.renewTime`. Metadata times are the wire module's (the store sets them; clients' are
//!   dropped).
//!
//! *Caveats*: times before 1970 or after 9999 are not representable in the store; such a string
//! is a 400.

use super::status::{ApiError, ApiResult};
use drydock_engine::WallTime;
use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::{OffsetDateTime, UtcOffset};

fn utc(time: WallTime) -> OffsetDateTime {
    let nanos = i128::from(time.0) * 1_000_000;
    OffsetDateTime::from_unix_timestamp_nanos(nanos).unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

fn date_and_clock(time: WallTime) -> String {
    let t = utc(time);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// `2026-12-01T04:33:45Z`: `metav1.Time`, to the second.
pub fn seconds(time: WallTime) -> String {
    format!("{}Z", date_and_clock(time))
}

/// `2026-12-01T04:33:45Z`, or `2026-12-01T04:33:45.250Z` when the time has milliseconds.
pub fn precise(time: WallTime) -> String {
    match time.0 % 1000 {
        0 => seconds(time),
        ms => format!("{}.{ms:03}Z", date_and_clock(time)),
    }
}

/// `2026-12-01T04:33:45.250000Z`: `metav1.MicroTime`.
pub fn micro(time: WallTime) -> String {
    format!("{}.{:03}000Z", date_and_clock(time), time.0 % 1000)
}

/// `2026-12-01T04:33:45.250Z`: always milliseconds.
pub fn millis(time: WallTime) -> String {
    format!("{}.{:03}Z", date_and_clock(time), time.0 % 1000)
}

/// An RFC 3339 time (any fraction, any offset), or milliseconds since the epoch.
pub fn parse(value: &Value) -> Result<WallTime, String> {
    match value {
        Value::Number(n) => n.as_u64().map(WallTime).ok_or_else(|| format!("{n} is not a time")),
        Value::String(s) => {
            let t = OffsetDateTime::parse(s, &Rfc3339)
                .map_err(|e| format!("{s:?} is not an RFC 3339 time ({e})"))?
                .to_offset(UtcOffset::UTC);
            let ms = t.unix_timestamp_nanos() / 1_000_000;
            u64::try_from(ms).map(WallTime).map_err(|_| format!("{s:?} is before 1970"))
        }
        other => Err(format!("{other} is not a time")),
    }
}

/// A field that holds a time: the objects it is in (a JSON pointer to an object or an array
/// of them), its name, and how it is written.
struct TimeField {
    within: &'static str,
    name: &'static str,
    format: fn(WallTime) -> String,
}

/// Where an object of `kind` holds times.
fn time_fields(kind: &str) -> Vec<TimeField> {
    let mut fields = vec![TimeField { within: "/status/conditions", name: "lastTransitionTime", format: precise }];
    if kind == "Lease" {
        fields.push(TimeField { within: "/spec", name: "acquireTime", format: micro });
        fields.push(TimeField { within: "/spec", name: "renewTime", format: micro });
    }
    fields
}

/// The objects at `pointer`: each element if it is an array, else the one object.
fn each_object<'a>(value: &'a mut Value, pointer: &str) -> Vec<&'a mut serde_json::Map<String, Value>> {
    match value.pointer_mut(pointer) {
        Some(Value::Array(items)) => items.iter_mut().filter_map(Value::as_object_mut).collect(),
        Some(Value::Object(map)) => vec![map],
        _ => Vec::new(),
    }
}

/// The store's numbers as RFC 3339 strings, in the object's JSON.
pub fn to_wire(kind: &str, value: &mut Value) {
    for field in time_fields(kind) {
        for map in each_object(value, field.within) {
            if let Some(slot) = map.get_mut(field.name)
                && let Some(ms) = slot.as_u64()
            {
                *slot = Value::String((field.format)(WallTime(ms)));
            }
        }
    }
}

/// A client's RFC 3339 strings as the store's numbers; a string that is not a time is a 400
/// naming its field.
pub fn from_wire(kind: &str, value: &mut Value) -> ApiResult<()> {
    for field in time_fields(kind) {
        let path = field.within.trim_start_matches('/').replace('/', ".");
        for map in each_object(value, field.within) {
            if let Some(slot) = map.get_mut(field.name).filter(|v| !v.is_null()) {
                let time = parse(slot).map_err(|e| ApiError::BadRequest(format!("{path}.{}: {e}", field.name)))?;
                *slot = Value::from(time.0);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn times_are_written_as_kubernetes_writes_them() {
        assert_eq!(seconds(WallTime(0)), "1970-01-01T00:00:00Z");
        assert_eq!(seconds(WallTime(1_796_099_625_000)), "2026-12-01T04:33:45Z");
        assert_eq!(seconds(WallTime(951_782_400_999)), "2000-02-29T00:00:00Z");
        assert_eq!(precise(WallTime(1_796_099_625_000)), "2026-12-01T04:33:45Z");
        assert_eq!(precise(WallTime(1_796_099_625_250)), "2026-12-01T04:33:45.250Z");
        assert_eq!(micro(WallTime(1_500)), "1970-01-01T00:00:01.500000Z");
        assert_eq!(millis(WallTime(1_709_208_000_250)), "2024-02-29T12:00:00.250Z");
        assert_eq!(millis(WallTime(1_000)), "1970-01-01T00:00:01.000Z");
    }

    #[test]
    fn what_is_written_parses_back_to_the_same_millisecond() {
        for ms in [0, 1_500, 951_782_400_000, 1_796_099_625_250, 1_796_099_625_999] {
            for format in [precise, micro, millis] {
                assert_eq!(parse(&Value::String(format(WallTime(ms)))).unwrap(), WallTime(ms));
            }
        }
        assert_eq!(parse(&json!("2026-12-01T05:33:45+01:00")).unwrap(), WallTime(1_796_099_625_000));
        assert_eq!(parse(&json!(1_796_099_625_250u64)).unwrap(), WallTime(1_796_099_625_250));
        for bad in [json!("yesterday"), json!("1969-12-31T23:59:59Z"), json!(-1), json!(true)] {
            assert!(parse(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn conditions_and_lease_times_go_out_as_strings_and_come_back_as_numbers() {
        let mut condition = json!({"status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": 1_796_099_625_250u64},
            {"type": "Other", "status": "False"}]}});
        to_wire("LogicalContainer", &mut condition);
        assert_eq!(condition["status"]["conditions"][0]["lastTransitionTime"], "2026-12-01T04:33:45.250Z");
        assert!(condition["status"]["conditions"][1].get("lastTransitionTime").is_none());
        from_wire("LogicalContainer", &mut condition).unwrap();
        assert_eq!(condition["status"]["conditions"][0]["lastTransitionTime"], 1_796_099_625_250u64);

        let mut lease = json!({"spec": {"holderIdentity": "a", "renewTime": 1_500, "acquireTime": 1_000}});
        to_wire("Lease", &mut lease);
        assert_eq!(lease["spec"]["renewTime"], "1970-01-01T00:00:01.500000Z");
        from_wire("Lease", &mut lease).unwrap();
        assert_eq!(lease["spec"], json!({"holderIdentity": "a", "renewTime": 1_500, "acquireTime": 1_000}));

        let mut bad = json!({"status": {"conditions": [{"type": "Ready", "lastTransitionTime": "soon"}]}});
        let error = from_wire("LogicalContainer", &mut bad).unwrap_err();
        assert!(error.to_string().contains("status.conditions.lastTransitionTime"), "{error}");
    }
}
