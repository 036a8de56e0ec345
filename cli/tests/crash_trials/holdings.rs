//! What the store and Docker hold after a restart, and the checks against it: durability of
//! acknowledged writes, Docker against the store, convergence.

use super::*;

// ---------------------------------------------------------------------------------------------
// What the store and Docker hold.

#[derive(Clone, Debug)]
pub(super) struct Seen {
    pub(super) uid: String,
    pub(super) deleting: bool,
    pub(super) phase: String,
    pub(super) runtime_id: Option<String>,
}

#[derive(Clone, Debug)]
pub(super) struct DockerContainer {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) state: String,
    pub(super) owner_uid: String,
    pub(super) retained: bool,
}

pub(super) struct Snapshot {
    pub(super) objects: BTreeMap<Key, Seen>,
    /// The highest list resourceVersion the store answered with (numeric ones only).
    pub(super) store_rv: Option<u64>,
    pub(super) docker: Vec<DockerContainer>,
}

pub(super) async fn snapshot(client: &Client, identity: &str) -> Result<Snapshot, String> {
    let mut objects = BTreeMap::new();
    let mut store_rv = None;
    for kind in Kind::ALL {
        let list =
            kind.api(client, None).list(&ListParams::default()).await.map_err(|e| format!("list {kind:?}: {e}"))?;
        let rv = list.metadata.resource_version.as_deref().and_then(|rv| rv.parse::<u64>().ok());
        store_rv = store_rv.max(rv);
        for object in list.items {
            let key = Key {
                kind,
                namespace: object.metadata.namespace.clone(),
                name: object.metadata.name.clone().unwrap_or_default(),
            };
            let status = object.data.get("status");
            let field = |f: &str| status.and_then(|s| s.get(f)).and_then(Value::as_str).map(str::to_string);
            let seen = Seen {
                uid: object.metadata.uid.clone().unwrap_or_default(),
                deleting: object.metadata.deletion_timestamp.is_some(),
                phase: field("phase").unwrap_or_else(|| "Pending".into()),
                runtime_id: field("runtimeId"),
            };
            objects.insert(key, seen);
        }
    }
    Ok(Snapshot { objects, store_rv, docker: docker_containers(identity) })
}

/// Every container (running or not) whose creator label is `identity`.
pub(super) fn docker_containers(identity: &str) -> Vec<DockerContainer> {
    let format = format!(
        "{{{{.ID}}}}|{{{{.Names}}}}|{{{{.State}}}}|{{{{.Label \"{}\"}}}}|{{{{.Label \"{}\"}}}}",
        names::LABEL_OWNER_UID,
        names::LABEL_RETAIN
    );
    let filter = format!("label={}={identity}", names::LABEL_CREATOR);
    let out = docker_bounded(&["ps", "-a", "--no-trunc", "--filter", &filter, "--format", &format])
        .unwrap_or_else(|error| panic!("{error}"));
    assert!(out.status.success(), "docker ps: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let f: Vec<&str> = line.split('|').collect();
            DockerContainer {
                id: f[0].to_string(),
                name: f.get(1).unwrap_or(&"").to_string(),
                state: f.get(2).unwrap_or(&"").to_string(),
                owner_uid: f.get(3).unwrap_or(&"").to_string(),
                retained: f.get(4) == Some(&"true"),
            }
        })
        .collect()
}

/// `docker rm -f` every container `identity` created.
pub(super) fn remove_containers(identity: &str) {
    let ids: Vec<String> = docker_containers(identity).into_iter().map(|c| c.id).collect();
    if !ids.is_empty() {
        let args: Vec<&str> = ["rm", "-f"].into_iter().chain(ids.iter().map(String::as_str)).collect();
        if let Err(error) = docker_bounded(&args) {
            eprintln!("cleanup: {error}");
        }
    }
}

/// Check 2: what Docker holds against what the store wants.
pub(super) fn docker_problems(snap: &Snapshot) -> Vec<String> {
    let mut problems = Vec::new();
    let live: BTreeSet<&str> = snap.objects.values().filter(|o| !o.deleting).map(|o| o.uid.as_str()).collect();
    let mut by_owner: BTreeMap<&str, Vec<&DockerContainer>> = BTreeMap::new();
    for c in &snap.docker {
        if c.owner_uid.is_empty() {
            continue;
        }
        by_owner.entry(c.owner_uid.as_str()).or_default().push(c);
        if !c.retained && !live.contains(c.owner_uid.as_str()) {
            problems.push(format!(
                "leak: container {} ({}, {}) of owner uid {} that no live object has",
                c.name,
                short(&c.id),
                c.state,
                c.owner_uid
            ));
        }
    }
    for (owner, containers) in by_owner {
        if containers.len() > 1 {
            let list: Vec<String> =
                containers.iter().map(|c| format!("{} ({}, {})", c.name, short(&c.id), c.state)).collect();
            problems.push(format!(
                "owner uid {owner} has {} runtime containers: {}",
                containers.len(),
                list.join(", ")
            ));
        }
    }
    let running: BTreeSet<&str> = snap.docker.iter().filter(|c| c.state == "running").map(|c| c.id.as_str()).collect();
    for (key, seen) in &snap.objects {
        if key.kind == Kind::Physical && seen.phase == "Running" && !seen.deleting {
            match &seen.runtime_id {
                Some(id) if running.contains(id.as_str()) => {}
                other => problems
                    .push(format!("{key} is Running but its runtime container {other:?} is not running in Docker")),
            }
        }
    }
    problems
}

/// Not converged yet: what is unsettled, deleting, or wrong in Docker.
pub(super) fn convergence_problems(snap: &Snapshot) -> Vec<String> {
    let mut problems = Vec::new();
    for (key, seen) in &snap.objects {
        if seen.deleting {
            problems.push(format!("{key} still deleting ({})", seen.phase));
        } else if !key.kind.settled(&seen.phase) {
            problems.push(format!("{key} not settled ({})", seen.phase));
        }
    }
    problems.extend(docker_problems(snap));
    problems
}

pub(super) fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

/// Check 1 (and 3): every acknowledged write is in the store. `settled`: the store has converged,
/// so an acknowledged delete must be complete (and nothing may be deleting).
pub(super) fn durability_problems(log: &[Write], snap: &Snapshot, settled: bool) -> Vec<String> {
    let mut problems = Vec::new();
    let when = if settled { "after convergence" } else { "right after the restart" };
    for (i, write) in log.iter().enumerate() {
        let Some(Outcome::Acked { uid, .. }) = &write.outcome else { continue };
        let later = &log[i + 1..];
        let deleted_by = |pred: &dyn Fn(&Write) -> bool| later.iter().any(|w| w.op == Op::Delete && pred(w));
        let is_it = |w: &Write| w.key == write.key;
        let its_namespace =
            |w: &Write| w.key.kind == Kind::Namespace && write.key.namespace.as_ref() == Some(&w.key.name);
        let seen = snap.objects.get(&write.key);
        match write.op {
            Op::Create => {
                let own_delete = deleted_by(&|w: &Write| w.acked() && is_it(w));
                let namespace_delete = deleted_by(&|w: &Write| w.acked() && its_namespace(w));
                let acked_delete = own_delete || namespace_delete;
                let maybe_deleted = deleted_by(&|w: &Write| w.unknown() && (is_it(w) || its_namespace(w)));
                // A namespace delete reaches its objects through the namespace controller, later:
                // until the namespace is gone they may still be there, not yet deleting.
                let namespace_gone = write.key.namespace.as_ref().is_some_and(|ns| {
                    let key = Key { kind: Kind::Namespace, namespace: None, name: ns.clone() };
                    !snap.objects.contains_key(&key)
                });
                match seen {
                    Some(s) if s.uid != *uid => {
                        problems.push(format!(
                            "{} {when}: uid {} where the acknowledged create gave {uid}",
                            write.key, s.uid
                        ));
                    }
                    Some(s)
                        if (own_delete && (settled || !s.deleting))
                            || (namespace_delete && (settled || namespace_gone)) =>
                    {
                        problems.push(format!(
                            "{} {when}: present (deleting: {}) after an acknowledged delete",
                            write.key, s.deleting
                        ));
                    }
                    Some(s) if settled && s.deleting => {
                        problems.push(format!("{} {when}: still deleting", write.key));
                    }
                    None if !acked_delete && !maybe_deleted => {
                        problems.push(format!("{} {when}: absent after an acknowledged create (uid {uid})", write.key));
                    }
                    _ => {}
                }
            }
            Op::Delete => {
                let recreated = later.iter().any(|w| w.op == Op::Create && w.key == write.key);
                if let Some(s) = seen
                    && !recreated
                    && (settled || !s.deleting)
                {
                    let stuck = if write.key.kind == Kind::Namespace { " (stuck namespace delete)" } else { "" };
                    problems.push(format!(
                        "{} {when}: present (deleting: {}) after an acknowledged delete{stuck}",
                        write.key, s.deleting
                    ));
                }
            }
        }
    }
    let acked_rv = log
        .iter()
        .filter_map(|w| match &w.outcome {
            Some(Outcome::Acked { rv, .. }) => rv.parse::<u64>().ok(),
            _ => None,
        })
        .max();
    if let (Some(acked), Some(store)) = (acked_rv, snap.store_rv)
        && store < acked
    {
        problems.push(format!("{when}: the store's resourceVersion {store} is behind an acknowledged {acked}"));
    }
    problems
}
