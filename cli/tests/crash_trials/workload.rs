//! A trial's workload: the seeded generator (SplitMix64, small and stable across versions), the
//! API's kinds, and the writes with the client's log of what the API acknowledged.

use super::*;

// ---------------------------------------------------------------------------------------------
// The seeded generator: SplitMix64, small and stable across versions.

pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5eed_c7a5_4d1e_0001)
    }

    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

// ---------------------------------------------------------------------------------------------
// The API's kinds.

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Kind {
    Namespace,
    Physical,
    Logical,
    Image,
}

impl Kind {
    pub(super) const ALL: [Kind; 4] = [Kind::Namespace, Kind::Physical, Kind::Logical, Kind::Image];

    pub(super) fn resource(self) -> ApiResource {
        let (group, kind, plural) = match self {
            Kind::Namespace => ("", "Namespace", "namespaces"),
            Kind::Physical => ("drydock.dev", "PhysicalContainer", "physicalcontainers"),
            Kind::Logical => ("drydock.dev", "LogicalContainer", "logicalcontainers"),
            Kind::Image => ("drydock.dev", "ContainerImage", "containerimages"),
        };
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural)
    }

    pub(super) fn api(self, client: &Client, namespace: Option<&str>) -> Api<DynamicObject> {
        match namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &self.resource()),
            None => Api::all_with(client.clone(), &self.resource()),
        }
    }

    pub(super) fn short(self) -> &'static str {
        match self {
            Kind::Namespace => "ns",
            Kind::Physical => "pc",
            Kind::Logical => "lc",
            Kind::Image => "img",
        }
    }

    /// Running, ended or failed for good (`phase::settled` of `drydock up --wait`).
    pub(super) fn settled(self, phase: &str) -> bool {
        match self {
            Kind::Physical => matches!(phase, "Running" | "Exited" | "Failed" | "Missing"),
            Kind::Logical => matches!(phase, "Running" | "Exited" | "Failed" | "NotFound"),
            Kind::Image => matches!(phase, "Ready" | "Failed" | "Unavailable"),
            Kind::Namespace => true,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Key {
    pub(super) kind: Kind,
    pub(super) namespace: Option<String>,
    pub(super) name: String,
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {ns}/{}", self.kind.short(), self.name),
            None => write!(f, "{} {}", self.kind.short(), self.name),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The workload and the client's log of writes.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    Create,
    Delete,
}

#[derive(Clone, Debug)]
pub(super) enum Outcome {
    /// 2xx: the uid and resourceVersion the answer carried.
    Acked { uid: String, rv: String },
    /// The API refused it (the store is unchanged).
    Refused(String),
    /// No answer: the daemon died around it; it may or may not have happened.
    Unknown(String),
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Acked { uid, rv } => write!(f, "acked uid={uid} rv={rv}"),
            Outcome::Refused(message) => write!(f, "refused: {message}"),
            Outcome::Unknown(error) => write!(f, "unknown: {error}"),
        }
    }
}

#[derive(Clone, Debug)]
pub(super) struct Write {
    pub(super) key: Key,
    pub(super) op: Op,
    pub(super) body: Option<Value>,
    pub(super) outcome: Option<Outcome>,
}

impl Write {
    pub(super) fn acked(&self) -> bool {
        matches!(self.outcome, Some(Outcome::Acked { .. }))
    }

    pub(super) fn unknown(&self) -> bool {
        matches!(self.outcome, Some(Outcome::Unknown(_)))
    }
}

/// What the client believes exists: objects it created (and had acknowledged) and not deleted.
pub(super) struct Model {
    pub(super) prefix: String,
    pub(super) counter: u64,
    pub(super) namespaces: Vec<String>,
    pub(super) objects: Vec<Key>,
}

impl Model {
    /// The next write, drawn from `rng` over what exists now.
    pub(super) fn next_write(&mut self, rng: &mut Rng) -> Write {
        self.counter += 1;
        let n = self.counter;
        let roll = rng.below(100);
        if self.namespaces.is_empty() || (self.namespaces.len() < 3 && roll < 12) {
            let name = format!("{}ns{n}", self.prefix);
            let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
            return Write {
                key: Key { kind: Kind::Namespace, namespace: None, name },
                op: Op::Create,
                body: Some(body),
                outcome: None,
            };
        }
        let delete_namespace = roll >= 94 && self.namespaces.len() >= 2;
        if delete_namespace {
            let name = self.namespaces[rng.below(self.namespaces.len() as u64) as usize].clone();
            return Write {
                key: Key { kind: Kind::Namespace, namespace: None, name },
                op: Op::Delete,
                body: None,
                outcome: None,
            };
        }
        if roll >= 68 && !self.objects.is_empty() {
            let key = self.objects[rng.below(self.objects.len() as u64) as usize].clone();
            return Write { key, op: Op::Delete, body: None, outcome: None };
        }
        let ns = self.namespaces[rng.below(self.namespaces.len() as u64) as usize].clone();
        let (kind, name, spec) = if !(40..68).contains(&roll) {
            (Kind::Physical, format!("pc{n}"), json!({"image": TEST_IMAGE, "command": SLEEPER}))
        } else if roll < 56 {
            (Kind::Logical, format!("session{n}"), json!({"mode": "session", "image": TEST_IMAGE, "command": SLEEPER}))
        } else {
            let container = format!("{}persistent{n}", self.prefix);
            (
                Kind::Logical,
                format!("persistent{n}"),
                json!({"mode": "persistent", "image": TEST_IMAGE, "containerName": container, "command": SLEEPER}),
            )
        };
        let resource = kind.resource();
        let body = json!({"apiVersion": resource.api_version, "kind": resource.kind,
            "metadata": {"name": name, "namespace": ns}, "spec": spec});
        Write { key: Key { kind, namespace: Some(ns), name }, op: Op::Create, body: Some(body), outcome: None }
    }

    /// `write` was acknowledged.
    pub(super) fn apply(&mut self, write: &Write) {
        match (write.op, write.key.kind) {
            (Op::Create, Kind::Namespace) => self.namespaces.push(write.key.name.clone()),
            (Op::Create, _) => self.objects.push(write.key.clone()),
            (Op::Delete, Kind::Namespace) => {
                self.namespaces.retain(|n| *n != write.key.name);
                self.objects.retain(|k| k.namespace.as_ref() != Some(&write.key.name));
            }
            (Op::Delete, _) => self.objects.retain(|k| *k != write.key),
        }
    }
}

pub(super) fn op_name(op: Op) -> &'static str {
    match op {
        Op::Create => "create",
        Op::Delete => "delete",
    }
}

pub(super) async fn perform(client: &Client, write: &Write) -> Outcome {
    let api = write.key.kind.api(client, write.key.namespace.as_deref());
    let answer = match write.op {
        Op::Create => {
            let object: DynamicObject = serde_json::from_value(write.body.clone().unwrap()).unwrap();
            api.create(&PostParams::default(), &object)
                .await
                .map(|o| (o.metadata.uid.unwrap_or_default(), o.metadata.resource_version.unwrap_or_default()))
        }
        Op::Delete => api.delete(&write.key.name, &DeleteParams::default()).await.map(|answer| {
            answer.either(
                |o| (o.metadata.uid.unwrap_or_default(), o.metadata.resource_version.unwrap_or_default()),
                |status| (status.details.map(|d| d.uid).unwrap_or_default(), String::new()),
            )
        }),
    };
    match answer {
        Ok((uid, rv)) => Outcome::Acked { uid, rv },
        Err(kube::Error::Api(status)) => {
            Outcome::Refused(format!("{} {}: {}", status.code, status.reason, status.message))
        }
        Err(other) => Outcome::Unknown(other.to_string()),
    }
}
