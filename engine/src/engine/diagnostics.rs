//! What the engine writes to an object's `system` stream on its own: the runtime requests that
//! change the world (as `RuntimeRequest::changes_world` says) and how they failed, and every
//! change of `status.phase`, `reason` or `message` (so every terminal failure, in the words its
//! status gives).

use crate::api::Object;
use serde_json::Value;

/// The line for a status write from `old` (the cached object) to `new`, if its phase, reason or
/// message change: `phase Pending -> Failed (StartFailed): the runtime's message`.
pub(super) fn status_line(old: &Object, new: &Object) -> Option<String> {
    let field = |object: &Object, name: &str| object.status.get(name).and_then(Value::as_str).map(str::to_string);
    let [(old_phase, new_phase), (old_reason, reason), (old_message, message)] =
        ["phase", "reason", "message"].map(|name| (field(old, name), field(new, name)));
    if (&old_phase, &old_reason, &old_message) == (&new_phase, &reason, &message) {
        return None;
    }
    let mut line = match (&old_phase, &new_phase) {
        (old, Some(new)) if old.as_ref() != Some(new) => {
            format!("phase {} -> {new}", old.as_deref().unwrap_or("(none)"))
        }
        (_, Some(phase)) => format!("phase {phase}"),
        (_, None) => "status".to_string(),
    };
    if let Some(reason) = reason {
        line.push_str(&format!(" ({reason})"));
    }
    if let Some(message) = message {
        line.push_str(&format!(": {message}"));
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ObjectMeta;
    use serde_json::json;

    fn with_status(status: Value) -> Object {
        let mut object = Object::new("PhysicalContainer", ObjectMeta::named(Some("ns"), "a"), json!({}));
        object.status = status;
        object
    }

    #[test]
    fn a_status_line_says_what_changed_and_nothing_when_nothing_did() {
        let pending = with_status(json!({"phase": "Pending"}));
        let failed = with_status(json!({"phase": "Failed", "reason": "StartFailed", "message": "exec: \"nosuch\""}));
        assert_eq!(
            status_line(&pending, &failed).as_deref(),
            Some("phase Pending -> Failed (StartFailed): exec: \"nosuch\"")
        );
        assert_eq!(status_line(&failed, &failed), None);
        let exit = with_status(json!({"phase": "Pending", "exitCode": 3}));
        assert_eq!(status_line(&pending, &exit), None, "other fields are not diagnostics");
        let message = with_status(json!({"phase": "Pending", "message": "waiting for image"}));
        assert_eq!(status_line(&pending, &message).as_deref(), Some("phase Pending: waiting for image"));
    }
}
