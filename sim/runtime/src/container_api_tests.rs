//! The container API: creation and its checks, inspection, lists, names and ids.

use super::super::test_support::{a_moment_later, create, id_of};
use super::super::{EVENTS_KEPT, STOPPED_EXIT_CODE};
use super::*;
use drydock_engine::api::container::Mount;
use drydock_engine::runtime::RuntimeRequest;

#[test]
fn docker_contract_basics() {
    let mut rt = SimRuntime::new(1);
    assert!(matches!(rt.execute(&create("web", "busybox")), Err(RuntimeError::NotFound(_))), "image must be present");
    rt.add_image("busybox");
    let id = id_of(rt.execute(&create("web", "docker.io/library/busybox:latest")));
    assert!(matches!(rt.execute(&create("web", "busybox")), Err(RuntimeError::Conflict(_))), "names are unique");
    assert_eq!(rt.container("web").map(|c| c.state), Some(ContainerState::Created));
    rt.execute(&RuntimeRequest::StartContainer { id: id.clone() }).expect("start");
    rt.execute(&RuntimeRequest::StartContainer { id: id[..12].to_string() }).expect("start twice is fine");
    let rm = RuntimeRequest::RemoveContainer { id: id.clone(), force: false };
    assert!(matches!(rt.execute(&rm), Err(RuntimeError::Conflict(_))), "running needs force");
    rt.execute(&RuntimeRequest::StopContainer { id: id.clone(), timeout_secs: 1 }).expect("stop");
    rt.execute(&RuntimeRequest::StopContainer { id: id.clone(), timeout_secs: 1 }).expect("stop twice is fine");
    assert_eq!(rt.container(&id).and_then(|c| c.exit_code), Some(STOPPED_EXIT_CODE));
    rt.execute(&rm).expect("remove stopped");
    assert!(matches!(rt.execute(&RuntimeRequest::InspectContainer { id }), Err(RuntimeError::NotFound(_))));
    id_of(rt.execute(&create("web", "busybox")));
}

#[test]
fn a_daemon_restart_stops_running_containers_only() {
    let mut rt = SimRuntime::new(1);
    rt.add_image("busybox");
    let running = id_of(rt.execute(&create("web", "busybox")));
    rt.execute(&RuntimeRequest::StartContainer { id: running.clone() }).expect("start");
    let created = id_of(rt.execute(&create("db", "busybox")));
    let events = rt.recorded_events();
    assert_eq!(rt.restart_daemon(), 1);
    assert_eq!(rt.container(&running).map(|c| (c.state, c.exit_code)), Some((ContainerState::Exited, Some(137))));
    assert_eq!(rt.container(&created).map(|c| c.state), Some(ContainerState::Created));
    assert_eq!(rt.recorded_events(), events + 1, "one die event");
    assert_eq!(rt.restart_daemon(), 0, "nothing left running");
}

/// Docker replays at most its last 256 events (`since` or not); its live streams see them all.
#[test]
fn a_replay_reaches_back_only_to_the_last_256_events() {
    let mut rt = SimRuntime::new(1);
    rt.add_image("busybox");
    let first = id_of(rt.execute(&create("first", "busybox")));
    let streamed = rt.take_events().len();
    for n in 0..150 {
        let id = id_of(rt.execute(&create(&format!("c{n}"), "busybox")));
        rt.execute(&RuntimeRequest::RemoveContainer { id, force: false }).expect("remove");
    }
    let last = id_of(rt.execute(&create("last", "busybox")));
    let since_epoch = |rt: &mut SimRuntime, id: &str| match rt
        .execute(&RuntimeRequest::ContainerEvents { id: id.to_string(), since: WallTime(0) })
    {
        Ok(RuntimeReply::Events(events)) => events.len(),
        other => panic!("expected events, got {other:?}"),
    };
    assert_eq!(since_epoch(&mut rt, &first), 0, "the first container's create fell out of the replay buffer");
    assert_eq!(since_epoch(&mut rt, &last), 1, "the last container's create is still there");
    assert_eq!(rt.recent_events().count(), EVENTS_KEPT);
    assert_eq!(rt.recorded_events(), 1 + 300 + 1);
    assert_eq!(streamed + rt.take_events().len(), 302, "the streams see every event");
    assert!(rt.take_events().is_empty(), "and each once");
}

#[test]
fn inserting_again_replaces_the_container_and_its_name() {
    let mut rt = SimRuntime::new(1);
    let info = |name: &str, state| ContainerInfo {
        id: "c1".into(),
        name: name.into(),
        image: "absent".into(),
        labels: Default::default(),
        state,
        exit_code: None,
        error: None,
        ports: Vec::new(),
    };
    rt.insert(info("a", ContainerState::Running));
    rt.insert(info("b", ContainerState::Exited));
    assert_eq!(rt.containers().count(), 1);
    assert!(rt.container("web").is_none(), "the old name is free again");
    assert_eq!(rt.container("b").map(|c| c.state), Some(ContainerState::Exited));
    assert!(rt.remove_externally("b"));
    assert!(rt.container("c1").is_none() && rt.containers().next().is_none());
}

#[test]
fn label_filters_match_all_labels() {
    let mut rt = SimRuntime::new(1);
    rt.add_image("busybox");
    id_of(rt.execute(&create("web", "busybox")));
    id_of(rt.execute(&create("db", "busybox")));
    let list = |labels: &[(&str, &str)]| match rt.clone().execute(&RuntimeRequest::ListContainers {
        labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
    }) {
        Ok(RuntimeReply::Containers(c)) => c.into_iter().map(|c| c.name).collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    assert_eq!(list(&[]).len(), 2);
    assert_eq!(list(&[("app", "db")]), vec!["db".to_string()]);
    assert!(list(&[("app", "db"), ("x", "y")]).is_empty());
}

fn invalid(r: RuntimeResult) -> String {
    match r {
        Err(RuntimeError::Invalid(m)) => m,
        other => panic!("expected Invalid, got {other:?}"),
    }
}

fn spec(name: &str) -> ContainerCreate {
    ContainerCreate { name: name.into(), image: "busybox".into(), ..Default::default() }
}

fn mount(source: &str, target: &str) -> Mount {
    Mount { source: source.into(), target: target.into(), read_only: false }
}

fn create_with(rt: &mut SimRuntime, spec: ContainerCreate) -> RuntimeResult {
    rt.execute(&RuntimeRequest::CreateContainer(spec))
}

#[test]
fn invalid_creates_are_refused_with_dockers_messages_and_create_nothing() {
    let mut rt = SimRuntime::new(1);
    rt.add_image("busybox");
    let cases: Vec<(ContainerCreate, &str)> = vec![
        (spec("a"), "Invalid container name (a), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed"),
        (spec("bad name!"), "Invalid container name (bad name!), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed"),
        (
            ContainerCreate { env: BTreeMap::from([(String::new(), "x".into())]), ..spec("ok") },
            "invalid environment variable: =x",
        ),
        (ContainerCreate { image: "app-".into(), ..spec("ok") }, "invalid reference format"),
        (ContainerCreate { image: "app:-x".into(), ..spec("ok") }, "invalid reference format"),
        (
            ContainerCreate { image: "App".into(), ..spec("ok") },
            "invalid reference format: repository name must be lowercase",
        ),
        (
            ContainerCreate { mounts: vec![mount("rel/src", "/data")], ..spec("ok") },
            "create rel/src: \"rel/src\" includes invalid characters for a local volume name, only \"[a-zA-Z0-9][a-zA-Z0-9_.-]\" are allowed. If you intended to pass a host directory, use absolute path",
        ),
        (
            ContainerCreate { mounts: vec![mount("/tmp", "data")], ..spec("ok") },
            "invalid volume specification: '/tmp:data': invalid mount config for type \"bind\": invalid mount path: 'data' mount path must be absolute",
        ),
        (
            ContainerCreate { mounts: vec![mount("/tmp", "/d/../")], ..spec("ok") },
            "invalid volume specification: '/tmp:/d/../': invalid mount config for type \"bind\": invalid specification: destination can't be '/'",
        ),
        (
            ContainerCreate { mounts: vec![mount("vol", "/")], ..spec("ok") },
            "invalid volume specification: 'vol:/': invalid mount config for type \"volume\": invalid specification: destination can't be '/'",
        ),
        (
            ContainerCreate { mounts: vec![mount("/tmp", "/a"), mount("/var", "/a/")], ..spec("ok") },
            "Duplicate mount point: /a",
        ),
        (ContainerCreate { mounts: vec![mount("", "/a")], ..spec("ok") }, "invalid volume specification: ':/a'"),
        (
            ContainerCreate { mounts: vec![mount("a", "/a")], ..spec("ok") },
            "create a: volume name is too short, names should be at least two alphanumeric characters",
        ),
    ];
    for (create, message) in cases {
        assert_eq!(invalid(create_with(&mut rt, create.clone())), message, "{create:?}");
    }
    assert_eq!(rt.containers().count(), 0, "nothing was created");
    assert!(rt.recent_events().next().is_none(), "no event");
    assert_eq!(rt.volumes().count(), 0);
    assert_eq!(
        id_of(create_with(&mut rt, spec("ok"))),
        crate::containers::Containers::new(1).next_id(),
        "failed creates use up no id"
    );
}

#[test]
fn create_checks_come_in_dockers_order() {
    let mut rt = SimRuntime::new(1);
    rt.add_image("busybox");
    id_of(create_with(&mut rt, spec("taken")));
    let bad_env = BTreeMap::from([(String::new(), "x".into())]);
    let env_first = ContainerCreate { env: bad_env, image: "nosuch".into(), ..spec("x") };
    assert_eq!(invalid(create_with(&mut rt, env_first)), "invalid environment variable: =x");
    let image_before_name = ContainerCreate { image: "nosuch".into(), ..spec("x") };
    assert!(matches!(create_with(&mut rt, image_before_name), Err(RuntimeError::NotFound(_))));
    let name_before_mounts = ContainerCreate { mounts: vec![mount("/tmp", "rel")], ..spec("x") };
    assert!(invalid(create_with(&mut rt, name_before_mounts)).starts_with("Invalid container name"));
    let taken_before_mounts = ContainerCreate { mounts: vec![mount("/tmp", "rel")], ..spec("taken") };
    assert!(matches!(create_with(&mut rt, taken_before_mounts), Err(RuntimeError::Conflict(_))));
}

#[test]
fn named_volumes_are_created_at_create_and_outlive_their_container() {
    let mut rt = SimRuntime::new(1);
    rt.add_image("busybox");
    let id = id_of(create_with(&mut rt, ContainerCreate { mounts: vec![mount("data", "/data")], ..spec("c1") }));
    assert_eq!(rt.volumes().collect::<Vec<_>>(), vec!["data"]);
    match rt.remove_volume("data") {
        Err(RuntimeError::Conflict(m)) => assert_eq!(m, format!("remove data: volume is in use - [{id}]")),
        other => panic!("{other:?}"),
    }
    rt.execute(&RuntimeRequest::RemoveContainer { id, force: true }).expect("removed");
    assert_eq!(rt.volumes().collect::<Vec<_>>(), vec!["data"], "a removal leaves its volumes");
    rt.remove_volume("data").expect("unused now");
    assert_eq!(rt.remove_volume("data"), Err(RuntimeError::NotFound("get data: no such volume".into())));
    // A later mount failing leaves the volumes made before it, as Docker does.
    let failing = ContainerCreate { mounts: vec![mount("early", "/a"), mount("/tmp", "/a")], ..spec("c2") };
    invalid(create_with(&mut rt, failing));
    assert_eq!(rt.volumes().collect::<Vec<_>>(), vec!["early"]);
}

#[test]
fn a_create_without_a_name_gets_one() {
    let mut rt = SimRuntime::new(1);
    rt.add_image("busybox");
    let a = id_of(create_with(&mut rt, spec("")));
    let b = id_of(create_with(&mut rt, spec("")));
    let (a, b) = (rt.container(&a).map(|c| c.name.clone()), rt.container(&b).map(|c| c.name.clone()));
    let (Some(a), Some(b)) = (a, b) else { panic!("both exist") };
    assert!(is_container_name(&a) && a.contains('_'), "{a}");
    assert_ne!(a, b);
    assert_eq!(rt.container(&a).map(|c| c.name.as_str()), Some(a.as_str()), "found by its name");
}

#[test]
fn an_ambiguous_id_prefix_is_invalid_not_missing() {
    let mut rt = SimRuntime::new(1);
    rt.add_image("busybox");
    let ids: Vec<String> = (0..17).map(|i| id_of(create_with(&mut rt, spec(&format!("c{i}"))))).collect();
    let shared = ids
        .iter()
        .find_map(|a| ids.iter().find(|b| *b != a && b[..1] == a[..1]).map(|_| a[..1].to_string()))
        .expect("17 ids share a first hex digit");
    for request in [
        RuntimeRequest::InspectContainer { id: shared.clone() },
        RuntimeRequest::StartContainer { id: shared.clone() },
        RuntimeRequest::RemoveContainer { id: shared.clone(), force: true },
    ] {
        assert_eq!(
            invalid(rt.execute(&request)),
            format!("Multiple IDs found with provided prefix: {shared}"),
            "{request:?}"
        );
    }
    assert_eq!(rt.containers().count(), 17);
}

/// Docker 20.10.24: once a container is removed its logs API answers 404 "No such container";
/// the output stays for a capture that was reading it.
#[test]
fn logs_go_with_their_container() {
    let mut rt = SimRuntime::new(1);
    rt.add_image("busybox");
    let RuntimeRequest::CreateContainer(spec) = create("web", "busybox") else { unreachable!() };
    let command = ["sh", "-c", "echo hi"].map(String::from).to_vec();
    let id = id_of(rt.execute(&RuntimeRequest::CreateContainer(ContainerCreate { command, ..spec })));
    rt.execute(&RuntimeRequest::StartContainer { id: id.clone() }).expect("start");
    a_moment_later(&mut rt);
    for by in [id.as_str(), "web", &id[..6]] {
        assert_eq!(rt.open_logs(by), Ok(id.clone()), "by {by}");
    }
    rt.execute(&RuntimeRequest::RemoveContainer { id: id.clone(), force: false }).expect("remove");
    assert_eq!(rt.open_logs(&id), Err(RuntimeError::NotFound(format!("No such container: {id}"))));
    assert_eq!(rt.open_logs("web"), Err(RuntimeError::NotFound("No such container: web".into())));
    let kept = rt.output(&id).map(|o| o.printed_by(WallTime(u64::MAX)).iter().map(|l| l.text.clone()).collect());
    assert_eq!(kept, Some(vec!["hi".to_string()]), "what a capture attached before the removal received");
}

/// Docker's replay window holds its last 256 events of every type, counted as Docker 20.10.24
/// logs them: a container on a network with a volume makes 13 from its network's create to its
/// removal; then volume creates fill the window, and one more pushes the first container's
/// create out. The streams are handed container events only.
#[test]
fn the_replay_window_counts_events_of_every_type() {
    let mut rt = SimRuntime::new(1);
    rt.add_image("busybox");
    let first = id_of(rt.execute(&create("first", "busybox")));
    rt.take_events();
    let replayed = |rt: &mut SimRuntime, id: &str| match rt
        .execute(&RuntimeRequest::ContainerEvents { id: id.to_string(), since: WallTime(0) })
    {
        Ok(RuntimeReply::Events(events)) => events.len(),
        other => panic!("expected events, got {other:?}"),
    };
    let network = drydock_engine::runtime::NetworkCreate { name: "n1".into(), labels: BTreeMap::new() };
    rt.execute(&RuntimeRequest::CreateNetwork(network)).expect("network create: 1");
    // The create: the mount's volume create, the container's create: 2.
    let RuntimeRequest::CreateContainer(spec) = create("c2", "busybox") else { unreachable!() };
    let spec = ContainerCreate {
        mounts: vec![Mount { source: "v1".into(), target: "/data".into(), read_only: false }],
        networks: vec![drydock_engine::api::container::NetworkAttachment { name: "n1".into(), aliases: vec![] }],
        ..spec
    };
    let c2 = id_of(rt.execute(&RuntimeRequest::CreateContainer(spec)));
    rt.execute(&RuntimeRequest::StartContainer { id: c2.clone() }).expect("connect, mount, start: 3");
    rt.execute(&RuntimeRequest::StopContainer { id: c2.clone(), timeout_secs: 1 }).expect("kill 2, die, leave 2, stop");
    rt.execute(&RuntimeRequest::RemoveContainer { id: c2, force: false }).expect("destroy: 1");
    assert_eq!(rt.take_events().len(), 4, "the streams: create, start, die, destroy");
    let volume = || {
        RuntimeRequest::CreateVolume(drydock_engine::runtime::VolumeCreate {
            name: "v1".into(),
            labels: BTreeMap::new(),
        })
    };
    for _ in 0..EVENTS_KEPT - 1 - 13 {
        rt.execute(&volume()).expect("a volume create, also of a name taken");
    }
    assert_eq!(replayed(&mut rt, &first), 1, "the first create is the oldest of the last 256");
    rt.execute(&volume()).expect("one more");
    assert_eq!(replayed(&mut rt, &first), 0, "pushed out by a volume's event");
    assert!(rt.take_events().is_empty(), "no stream sees the volumes' events");
    rt.check().expect("consistent");
}
