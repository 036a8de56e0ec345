//! What a step observed, normalised so that two runtimes that behave alike observe the same.
//!
//! The normalisation is all here, and short:
//! - an error is its kind (`NotFound`, `Conflict`, `Invalid`, ...), not its message;
//! - ids are the slot they were created for (`c0`, `n1`), names lose the sequence's prefix, and
//!   an image is `base` or its built tag's slot;
//! - times are left out (events keep their order and exit codes), as are build and pull
//!   progress, and a host port the runtime picked (`ephemeral`);
//! - a stop's duration is whether it held for its grace period, not how long it took;
//! - lists are sorted by name.

use crate::requests::Names;
use drydock_engine::runtime::{ContainerInfo, EventAction, RuntimeError, RuntimeReply, RuntimeResult};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Maps what a runtime names (ids it handed out, names with the sequence's prefix) to slots.
#[derive(Clone, Debug, Default)]
pub struct Slots {
    /// Full id -> slot (`c0`, `n1`).
    ids: BTreeMap<String, String>,
    /// Container name -> the id of the last container created under it.
    pub latest: BTreeMap<String, String>,
}

impl Slots {
    /// `id` was handed out for the object named `name`.
    pub fn created(&mut self, name: &str, id: &str, names: &Names) {
        self.ids.insert(id.to_string(), strip(name, names));
        self.latest.insert(name.to_string(), id.to_string());
    }

    /// The slot an id (full, or a prefix of 12 or more) or a name stands for.
    fn slot(&self, id_or_name: &str, names: &Names) -> String {
        let name = id_or_name.trim_start_matches('/');
        if let Some(slot) = self.ids.get(name) {
            return slot.clone();
        }
        if name.len() >= 12
            && let Some((_, slot)) = self.ids.iter().find(|(id, _)| id.starts_with(name))
        {
            return slot.clone();
        }
        if name.len() == 64 && name.chars().all(|c| c.is_ascii_hexdigit()) {
            return "unknown-id".to_string();
        }
        strip(name, names)
    }
}

/// `name` without the sequence's prefix; an image reference as `base`, or its tag's slot.
fn strip(name: &str, names: &Names) -> String {
    let name = name.trim_start_matches('/');
    if name == names.base_image || format!("docker.io/{name}") == names.base_image {
        return "base".to_string();
    }
    let name = name.strip_prefix("docker.io/library/").unwrap_or(name);
    name.strip_prefix(&names.prefix).map_or_else(|| name.to_string(), |rest| rest.trim_end_matches(":1").to_string())
}

/// An error as its kind.
pub fn error(error: &RuntimeError) -> Value {
    json!({ "error": error.code() })
}

/// A request's outcome.
pub fn outcome(result: &RuntimeResult, slots: &Slots, names: &Names) -> Value {
    match result {
        Err(e) => error(e),
        Ok(reply) => reply_of(reply, slots, names),
    }
}

fn reply_of(reply: &RuntimeReply, slots: &Slots, names: &Names) -> Value {
    match reply {
        RuntimeReply::Created { .. } => json!("created"),
        RuntimeReply::Done => json!("done"),
        RuntimeReply::Container(info) => container(info, slots, names),
        RuntimeReply::Containers(list) => {
            let mut listed: Vec<Value> =
                list.iter().map(|c| json!([slots.slot(&c.id, names), format!("{:?}", c.state)])).collect();
            listed.sort_by_key(Value::to_string);
            json!({ "containers": listed })
        }
        RuntimeReply::Image(image) => {
            let mut tags: Vec<String> = image.tags.iter().map(|t| strip(t, names)).collect();
            tags.sort();
            json!({ "image": tags })
        }
        RuntimeReply::Events(events) => {
            json!({ "events": events.iter().map(|e| action(&e.action)).collect::<Vec<_>>() })
        }
        RuntimeReply::Pulled { .. } => json!("pulled"),
        RuntimeReply::Built { .. } => json!("built"),
        RuntimeReply::Network(network) => {
            let mut attached: Vec<String> = network.containers.iter().map(|id| slots.slot(id, names)).collect();
            attached.sort();
            json!({ "network": strip(&network.name, names), "attached": attached })
        }
        RuntimeReply::Networks(list) => {
            let mut listed: Vec<String> = list.iter().map(|n| strip(&n.name, names)).collect();
            listed.sort();
            json!({ "networks": listed })
        }
        RuntimeReply::Volume(volume) => json!({ "volume": strip(&volume.name, names), "labels": volume.labels }),
        RuntimeReply::Volumes(list) => {
            let mut listed: Vec<String> = list.iter().map(|v| strip(&v.name, names)).collect();
            listed.sort();
            json!({ "volumes": listed })
        }
    }
}

fn container(info: &ContainerInfo, slots: &Slots, names: &Names) -> Value {
    let ports: Vec<Value> = info
        .ports
        .iter()
        .map(|p| {
            let host = if p.host_port == names.fixed_port { "fixed" } else { "ephemeral" };
            json!([p.container_port, host])
        })
        .collect();
    json!({
        "container": slots.slot(&info.name, names),
        "state": format!("{:?}", info.state),
        "exit_code": info.exit_code,
        "image": strip(&info.image, names),
        "failed_start": info.error.is_some(),
        "ports": ports,
    })
}

fn action(action: &EventAction) -> String {
    match action {
        EventAction::Create => "create".into(),
        EventAction::Start => "start".into(),
        EventAction::Die { exit_code } => match exit_code {
            Some(code) => format!("die {code}"),
            None => "die".into(),
        },
        EventAction::Destroy => "destroy".into(),
    }
}

/// A capture's lines, by stream.
pub fn logs(lines: Result<(Vec<String>, Vec<String>), RuntimeError>) -> Value {
    match lines {
        Ok((out, err)) => json!({ "stdout": out, "stderr": err }),
        Err(e) => error(&e),
    }
}

/// A stop's outcome, and whether it held for its grace period (only told for one of at least
/// a second: within a second, the two runtimes' timings are not comparable).
pub fn stop(result: &RuntimeResult, timeout_secs: u32, held_ms: u64, slots: &Slots, names: &Names) -> Value {
    let outcome = outcome(result, slots, names);
    if timeout_secs == 0 || result.is_err() {
        return outcome;
    }
    // Docker's stop returns a little after the grace period ends; well before it means the
    // process ended on TERM.
    let held = held_ms >= u64::from(timeout_secs) * 1_000 * 9 / 10;
    json!({ "stop": outcome, "held_grace_period": held })
}

/// Whether the model's observation `model` agrees with Docker's `docker`: equal, except that
/// Docker's events may be a contiguous run of the model's. Docker replays only its last 256
/// events of every client and type, so on a Docker others use too (or that runs several
/// sequences at once) a container's oldest events can be gone from a `since` query, and the
/// newest may not be logged yet (seen: a query right after a start, or during a stop, without
/// the `start`); the model sees only its own sequence's, at once.
pub fn agrees(model: &Value, docker: &Value) -> bool {
    match (model, docker) {
        (Value::Array(m), Value::Array(d)) => m.len() == d.len() && m.iter().zip(d).all(|(m, d)| agrees(m, d)),
        (Value::Object(m), Value::Object(d)) => match (m.get("events"), d.get("events")) {
            (Some(Value::Array(m)), Some(Value::Array(d))) => d.is_empty() || m.windows(d.len()).any(|w| w == &d[..]),
            _ => model == docker,
        },
        _ => model == docker,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dockers_events_are_a_contiguous_run_of_the_models() {
        let model = json!({ "events": ["create", "start", "die 0"] });
        assert!(agrees(&model, &json!({ "events": ["start", "die 0"] })));
        assert!(agrees(&model, &json!({ "events": [] })));
        assert!(agrees(&model, &json!({ "events": ["create", "start"] })), "the newest not logged yet");
        assert!(!agrees(&model, &json!({ "events": ["create", "die 0"] })), "none is skipped in between");
        assert!(!agrees(&json!({ "events": [] }), &json!({ "events": ["create"] })), "Docker has more");
        assert!(agrees(&json!(["done", model.clone()]), &json!(["done", { "events": ["die 0"] }])));
        assert!(!agrees(&json!("done"), &json!({ "error": "NotFound" })));
    }
}
