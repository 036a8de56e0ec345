//! Networks: create, lookups, removal, attachments and starts (what Docker 20.10 answers; see
//! the module doc and the conformance suite).

use super::super::test_support::{create, id_of};
use super::*;
use drydock_engine::api::container::NetworkAttachment;
use drydock_engine::runtime::{BUILTIN_NETWORKS, ContainerCreate, ContainerState, RuntimeRequest};

fn runtime() -> SimRuntime {
    let mut rt = SimRuntime::new(1);
    rt.add_image("busybox");
    rt
}

fn create_network(rt: &mut SimRuntime, name: &str, labels: &[(&str, &str)]) -> RuntimeResult {
    let labels = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    rt.execute(&RuntimeRequest::CreateNetwork(NetworkCreate { name: name.into(), labels }))
}

fn network(rt: &mut SimRuntime, id: &str) -> Result<NetworkInfo, RuntimeError> {
    match rt.execute(&RuntimeRequest::InspectNetwork { id: id.into() }) {
        Ok(RuntimeReply::Network(info)) => Ok(info),
        Ok(other) => panic!("inspect-network replied {other:?}"),
        Err(e) => Err(e),
    }
}

fn on(name: &str, networks: &[&str]) -> RuntimeRequest {
    let RuntimeRequest::CreateContainer(c) = create(name, "busybox") else { unreachable!() };
    let networks = networks.iter().map(|n| NetworkAttachment { name: n.to_string(), aliases: vec![] }).collect();
    RuntimeRequest::CreateContainer(ContainerCreate { networks, ..c })
}

fn start(rt: &mut SimRuntime, id: &str) -> RuntimeResult {
    rt.execute(&RuntimeRequest::StartContainer { id: id.into() })
}

fn connect(rt: &mut SimRuntime, network: &str, container: &str) -> RuntimeResult {
    rt.execute(&RuntimeRequest::ConnectNetwork {
        network: network.into(),
        container: container.into(),
        aliases: vec!["alias".into()],
    })
}

fn disconnect(rt: &mut SimRuntime, network: &str, container: &str) -> RuntimeResult {
    rt.execute(&RuntimeRequest::DisconnectNetwork { network: network.into(), container: container.into() })
}

fn remove(rt: &mut SimRuntime, id: &str) -> RuntimeResult {
    rt.execute(&RuntimeRequest::RemoveNetwork { id: id.into() })
}

#[test]
fn create_inspect_list_remove() {
    let mut rt = runtime();
    let id = id_of(create_network(&mut rt, "n1", &[("app", "a")]));
    assert_eq!(id.len(), 64);
    let info = network(&mut rt, "n1").expect("by name");
    assert_eq!((info.id.as_str(), info.name.as_str()), (id.as_str(), "n1"));
    assert_eq!(info.labels.get("app").map(String::as_str), Some("a"));
    assert_eq!(network(&mut rt, &id[..6]).expect("by id prefix").id, id);
    assert_eq!(
        create_network(&mut rt, "n1", &[]),
        Err(RuntimeError::Conflict("network with name n1 already exists".into()))
    );
    assert_eq!(
        create_network(&mut rt, "", &[]),
        Err(RuntimeError::Conflict("network with name  already exists".into()))
    );
    id_of(create_network(&mut rt, "n2", &[("app", "b")]));
    let listed = |rt: &mut SimRuntime, labels: &[(&str, &str)]| match rt.execute(&RuntimeRequest::ListNetworks {
        labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
    }) {
        Ok(RuntimeReply::Networks(list)) => list.into_iter().map(|n| n.name).collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    assert_eq!(listed(&mut rt, &[("app", "a")]), ["n1"]);
    assert_eq!(listed(&mut rt, &[]), ["bridge", "host", "n1", "n2", "none"], "the built-in ones too, by name");
    remove(&mut rt, "n1").expect("removed");
    assert_eq!(network(&mut rt, &id), Err(RuntimeError::NotFound(format!("network {id} not found"))));
    assert_eq!(remove(&mut rt, "n1"), Err(RuntimeError::NotFound("network n1 not found".into())));
    assert_eq!(SimRuntime::new(1).tap_network("n1"), id, "ids come from the seed and a counter");
}

impl SimRuntime {
    fn tap_network(mut self, name: &str) -> String {
        id_of(create_network(&mut self, name, &[]))
    }
}

#[test]
fn built_in_networks_are_there_and_cannot_be_made_or_removed() {
    let mut rt = runtime();
    for name in BUILTIN_NETWORKS {
        let info = network(&mut rt, name).expect("present");
        assert_eq!(
            create_network(&mut rt, name, &[]),
            Err(RuntimeError::Invalid(format!("operation is not permitted on predefined {name} network ")))
        );
        let refused = Err(RuntimeError::Invalid(format!("{name} is a pre-defined network and cannot be removed")));
        assert_eq!(remove(&mut rt, name), refused);
        assert_eq!(remove(&mut rt, &info.id[..12]), refused, "by id too");
    }
}

#[test]
fn two_networks_of_one_name_are_ambiguous() {
    let mut rt = runtime();
    id_of(create_network(&mut rt, "n1", &[]));
    rt.insert_network("n1", BTreeMap::new());
    assert_eq!(
        network(&mut rt, "n1"),
        Err(RuntimeError::Invalid("2 matches found based on name: network n1 is ambiguous".into()))
    );
    assert_eq!(
        remove(&mut rt, "n1"),
        Err(RuntimeError::Invalid("network n1 is ambiguous (2 matches found based on name)".into()))
    );
}

#[test]
fn overlapping_creates_of_one_name_all_make_a_network() {
    let mut rt = runtime();
    let create = NetworkCreate { name: "n1".into(), labels: BTreeMap::new() };
    let first = rt.begin_network_create(&create).expect("the name is free");
    let second = rt.begin_network_create(&create).expect("the first is not there yet");
    assert_ne!(first.id(), second.id());
    assert!(matches!(network(&mut rt, "n1"), Err(RuntimeError::NotFound(_))), "nothing is visible yet");
    let (a, b) = (rt.finish_network_create(first), rt.finish_network_create(second));
    assert!(matches!(network(&mut rt, &a), Ok(info) if info.name == "n1"));
    assert!(matches!(network(&mut rt, &b), Ok(info) if info.name == "n1"));
    assert!(matches!(network(&mut rt, "n1"), Err(RuntimeError::Invalid(_))), "ambiguous by name");
    assert_eq!(
        rt.begin_network_create(&create),
        Err(RuntimeError::Conflict("network with name n1 already exists".into())),
        "a create after they finished sees them"
    );
}

#[test]
fn only_running_containers_have_endpoints() {
    let mut rt = runtime();
    let net = id_of(create_network(&mut rt, "n1", &[]));
    let a = id_of(rt.execute(&on("ca", &[&net])));
    let b = id_of(rt.execute(&on("cb", &["n1"])));
    assert!(network(&mut rt, "n1").expect("n1").containers.is_empty(), "created containers have no endpoint");
    start(&mut rt, &b).expect("b");
    start(&mut rt, &a).expect("a");
    let mut both = vec![a.clone(), b.clone()];
    both.sort();
    assert_eq!(network(&mut rt, "n1").expect("n1").containers, both, "in id order");
    rt.execute(&RuntimeRequest::StopContainer { id: a.clone(), timeout_secs: 0 }).expect("stop");
    assert_eq!(network(&mut rt, "n1").expect("n1").containers, std::slice::from_ref(&b));
    assert!(!network(&mut rt, "bridge").expect("bridge").containers.contains(&b), "n1 replaces the default");
}

#[test]
fn a_network_with_a_running_container_cannot_be_removed_one_with_others_can() {
    let mut rt = runtime();
    let net = id_of(create_network(&mut rt, "n1", &[]));
    let running = id_of(rt.execute(&on("running", &["n1"])));
    start(&mut rt, &running).expect("start");
    let stopped = id_of(rt.execute(&on("stopped", &["n1"])));
    start(&mut rt, &stopped).expect("start");
    rt.execute(&RuntimeRequest::StopContainer { id: stopped.clone(), timeout_secs: 0 }).expect("stop");
    let created = id_of(rt.execute(&on("created", &["n1"])));
    assert_eq!(
        remove(&mut rt, "n1"),
        Err(RuntimeError::Conflict(format!("error while removing network: network n1 id {net} has active endpoints")))
    );
    rt.execute(&RuntimeRequest::RemoveContainer { id: running, force: true }).expect("rm");
    remove(&mut rt, "n1").expect("only stopped and created containers left");
    // The one that ran looks the network up by its id, the one that never ran by its name.
    assert_eq!(start(&mut rt, &stopped), Err(RuntimeError::NotFound(format!("network {net} not found"))));
    assert_eq!(start(&mut rt, &created), Err(RuntimeError::NotFound("network n1 not found".into())));
    let info = rt.container(&created).cloned().expect("still there");
    assert_eq!((info.state, info.exit_code), (ContainerState::Created, Some(128)));
    assert_eq!(info.error.as_deref(), Some("network n1 not found"));
    let info = rt.container(&stopped).cloned().expect("still there");
    assert_eq!((info.state, info.exit_code), (ContainerState::Exited, Some(137)), "keeps its exit code");
    // A new network of the name serves the one that never ran, not the other.
    id_of(create_network(&mut rt, "n1", &[]));
    start(&mut rt, &created).expect("found by name");
    assert!(matches!(start(&mut rt, &stopped), Err(RuntimeError::NotFound(_))));
}

#[test]
fn create_with_a_missing_network_succeeds_and_its_start_fails() {
    let mut rt = runtime();
    let id = id_of(rt.execute(&on("c1", &["nope"])));
    assert_eq!(start(&mut rt, &id), Err(RuntimeError::NotFound("network nope not found".into())));
    assert_eq!(rt.container(&id).map(|c| c.state), Some(ContainerState::Created));
    id_of(create_network(&mut rt, "nope", &[]));
    start(&mut rt, &id).expect("there now");
}

#[test]
fn connect_and_disconnect_follow_the_container_state() {
    let mut rt = runtime();
    id_of(create_network(&mut rt, "n1", &[]));
    let c = id_of(rt.execute(&create("c1", "busybox")));
    assert_eq!(connect(&mut rt, "n1", "nope"), Err(RuntimeError::NotFound("No such container: nope".into())));
    assert_eq!(connect(&mut rt, "zzz", "nope"), Err(RuntimeError::NotFound("No such container: nope".into())));
    // Not running: recorded, never checked; a second connect changes nothing.
    connect(&mut rt, "n1", &c).expect("created");
    connect(&mut rt, "n1", &c).expect("again");
    connect(&mut rt, "zzz", &c).expect("a missing network too");
    disconnect(&mut rt, "zzz", &c).expect("it was recorded");
    assert_eq!(
        disconnect(&mut rt, "zzz", &c),
        Err(RuntimeError::NotFound(format!("container {c} is not connected to the network zzz")))
    );
    start(&mut rt, &c).expect("start");
    assert_eq!(network(&mut rt, "n1").expect("n1").containers, std::slice::from_ref(&c));
    assert!(network(&mut rt, "bridge").expect("bridge").containers.contains(&c), "still on the default");
    // Running: the network must exist, and be new to it.
    assert_eq!(
        connect(&mut rt, "n1", &c),
        Err(RuntimeError::Conflict("endpoint with name c1 already exists in network n1".into()))
    );
    assert_eq!(connect(&mut rt, "zzz", &c), Err(RuntimeError::NotFound("network zzz not found".into())));
    let n2 = id_of(create_network(&mut rt, "n2", &[]));
    connect(&mut rt, &n2[..12], &c).expect("by id prefix");
    assert_eq!(network(&mut rt, "n2").expect("n2").containers, std::slice::from_ref(&c), "an endpoint at once");
    disconnect(&mut rt, "n1", &c).expect("running");
    assert!(network(&mut rt, "n1").expect("n1").containers.is_empty());
    assert_eq!(
        disconnect(&mut rt, "n1", &c),
        Err(RuntimeError::NotFound(format!("container {c} is not connected to network n1")))
    );
    assert_eq!(disconnect(&mut rt, "zzz", &c), Err(RuntimeError::NotFound("network zzz not found".into())));
    // Stopped: keeps its attachments; a disconnect by id finds the attachment by name.
    rt.execute(&RuntimeRequest::StopContainer { id: c.clone(), timeout_secs: 0 }).expect("stop");
    disconnect(&mut rt, &n2, &c).expect("stopped, by id");
    assert_eq!(
        disconnect(&mut rt, &n2, &c),
        Err(RuntimeError::NotFound(format!("container {c} is not connected to the network n2")))
    );
}

/// The endpoint index against its definition: after any sequence of creates, starts, stops,
/// connects, disconnects, removals (of containers and networks) and daemon restarts, a network's
/// endpoints are exactly the running containers with an attachment to it, in id order.
#[test]
fn the_endpoint_index_agrees_with_a_scan_of_every_container() {
    use rand_chacha::ChaCha8Rng;
    use rand_core::{RngCore, SeedableRng};
    let scan = |rt: &SimRuntime, network_id: &str| -> Vec<String> {
        rt.containers
            .values()
            .filter(|c| c.state() == ContainerState::Running)
            .filter(|c| c.networks.values().any(|a| a.network_id.as_deref() == Some(network_id)))
            .map(|c| c.id().to_string())
            .collect()
    };
    let mut endpoints_seen = 0;
    for seed in 0..150 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut rt = runtime();
        rt.set_now(drydock_engine::time::WallTime(1_000_000));
        for net in ["n1", "n2"] {
            let _ = create_network(&mut rt, net, &[]);
        }
        for _ in 0..80 {
            let container = format!("c{}", rng.next_u32() % 3);
            let net = ["n1", "n2", "bridge"][(rng.next_u32() % 3) as usize];
            let _ = match rng.next_u32() % 10 {
                0 => rt.execute(&on(&container, &[net])),
                1 | 2 => start(&mut rt, &container),
                3 => rt.execute(&RuntimeRequest::StopContainer { id: container, timeout_secs: 0 }),
                4 => connect(&mut rt, net, &container),
                5 => disconnect(&mut rt, net, &container),
                6 => rt.execute(&RuntimeRequest::RemoveContainer { id: container, force: true }),
                7 => remove(&mut rt, net).or_else(|_| create_network(&mut rt, net, &[])),
                8 => Ok(RuntimeReply::Done).inspect(|_| {
                    rt.restart_daemon();
                }),
                _ => Ok(RuntimeReply::Done).inspect(|_| {
                    // What is due: a removal finishing, a stopped container's exit.
                    if let Some(due) = rt.next_due() {
                        rt.advance(due);
                    }
                }),
            };
            let ids: Vec<String> = rt.networks.all().map(|n| n.id.clone()).collect();
            for id in ids {
                let indexed = rt.endpoints(&id);
                assert_eq!(indexed, scan(&rt, &id), "seed {seed}: network {id}");
                endpoints_seen += indexed.len();
            }
        }
    }
    assert!(endpoints_seen > 1000, "the sequences attach running containers: {endpoints_seen} endpoints seen");
}

fn connect_with(rt: &mut SimRuntime, network: &str, container: &str, aliases: &[&str]) -> RuntimeResult {
    let aliases = aliases.iter().map(|a| a.to_string()).collect();
    rt.execute(&RuntimeRequest::ConnectNetwork { network: network.into(), container: container.into(), aliases })
}

fn invalid(result: RuntimeResult) -> String {
    match result {
        Err(RuntimeError::Invalid(message)) => message,
        other => panic!("expected Invalid, got {other:?}"),
    }
}

/// Docker 20.10.24: aliases need a user-defined network; a connect is refused at once, a
/// create's first network only when the container starts (exit code 128, the error kept).
#[test]
fn aliases_on_a_built_in_network_are_invalid() {
    let mut rt = runtime();
    id_of(create_network(&mut rt, "n1", &[]));
    let c = id_of(rt.execute(&create("c1", "busybox")));
    assert_eq!(invalid(connect_with(&mut rt, "bridge", &c, &["web"])), ALIASES_NEED_A_USER_DEFINED_NETWORK);
    connect_with(&mut rt, "bridge", &c, &[]).expect("without aliases: already on it, nothing changes");
    connect_with(&mut rt, "n1", &c, &["web"]).expect("a user-defined network takes aliases");
    let RuntimeRequest::CreateContainer(spec) = create("c2", "busybox") else { unreachable!() };
    let first = NetworkAttachment { name: "bridge".into(), aliases: vec!["web".into()] };
    let first_only = ContainerCreate { networks: vec![first.clone()], ..spec.clone() };
    let c2 = id_of(rt.execute(&RuntimeRequest::CreateContainer(first_only)));
    for _ in 0..2 {
        assert_eq!(invalid(start(&mut rt, &c2)), ALIASES_NEED_A_USER_DEFINED_NETWORK, "every start");
    }
    let info = rt.container(&c2).cloned().expect("c2");
    assert_eq!((info.state, info.exit_code), (ContainerState::Created, Some(128)));
    assert_eq!(info.error.as_deref(), Some(ALIASES_NEED_A_USER_DEFINED_NETWORK));
    let n1 = NetworkAttachment { name: "n1".into(), aliases: vec![] };
    let second = ContainerCreate { name: "c3".into(), networks: vec![n1, first], ..spec };
    let before = rt.containers().count();
    assert_eq!(invalid(rt.execute(&RuntimeRequest::CreateContainer(second))), ALIASES_NEED_A_USER_DEFINED_NETWORK);
    assert_eq!(rt.containers().count(), before, "a refused connect refuses the create: nothing made");
    rt.check().expect("consistent");
}

/// Docker 20.10.24: `host` and `none` exclude any other network, running or not, with three
/// messages (see the module doc); a create naming such a pair is refused and makes nothing.
#[test]
fn host_and_none_exclude_any_other_network() {
    let mut rt = runtime();
    id_of(create_network(&mut rt, "n1", &[]));
    let host = id_of(rt.execute(&on("ho", &["host"])));
    let none = id_of(rt.execute(&on("zz", &["none"])));
    let bridged = id_of(rt.execute(&create("br", "busybox")));
    for running in [false, true] {
        let refused =
            |rt: &mut SimRuntime, network: &str, container: &str| invalid(connect_with(rt, network, container, &[]));
        assert_eq!(refused(&mut rt, "n1", &host), SHARED_NAMESPACE_ONLY_ALONE, "running: {running}");
        assert_eq!(refused(&mut rt, "bridge", &host), SHARED_NAMESPACE_ONLY_ALONE, "running: {running}");
        assert_eq!(refused(&mut rt, "none", &host), SHARED_NAMESPACE_ONLY_ALONE, "running: {running}");
        assert_eq!(refused(&mut rt, "n1", &none), NONE_ONLY_ALONE, "running: {running}");
        assert_eq!(refused(&mut rt, "host", &none), HOST_ONLY_ALONE, "running: {running}");
        assert_eq!(refused(&mut rt, "host", &bridged), HOST_ONLY_ALONE, "running: {running}");
        assert_eq!(refused(&mut rt, "none", &bridged), NONE_ONLY_ALONE, "running: {running}");
        for id in [&host, &none, &bridged] {
            start(&mut rt, id).expect("start");
        }
    }
    assert_eq!(network(&mut rt, "host").expect("host").containers, std::slice::from_ref(&host));
    let before = rt.containers().count();
    for (networks, message) in [
        (&["host", "n1"][..], SHARED_NAMESPACE_ONLY_ALONE),
        (&["n1", "host"][..], HOST_ONLY_ALONE),
        (&["none", "n1"][..], NONE_ONLY_ALONE),
        (&["n1", "none"][..], NONE_ONLY_ALONE),
    ] {
        assert_eq!(invalid(rt.execute(&on("pair", networks))), message, "{networks:?}");
    }
    assert_eq!(rt.containers().count(), before, "nothing made");
    id_of(rt.execute(&on("twice", &["host", "host"])));
    // A network that does not exist (yet) is no network to conflict with; `host` is refused to
    // any container not on it, before that.
    id_of(rt.execute(&on("later", &["zzz", "none"])));
    assert_eq!(invalid(rt.execute(&on("nowhere", &["zzz", "host"]))), HOST_ONLY_ALONE);
    rt.check().expect("consistent");
}
