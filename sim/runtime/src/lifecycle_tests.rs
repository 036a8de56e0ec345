//! The state machine: failed starts, stops and their exit codes, time, removals in progress.

use super::super::test_support::{a_moment_later, id_of};
use super::*;
use drydock_engine::api::container::{PortMapping, Protocol};
use drydock_engine::runtime::{ContainerCreate, ContainerInfo, RuntimeRequest};

fn runtime() -> SimRuntime {
    let mut rt = SimRuntime::new(1);
    rt.add_image("busybox");
    rt.set_now(WallTime(1_000_000));
    rt
}

fn created(rt: &mut SimRuntime, name: &str, command: &[&str]) -> String {
    let create = ContainerCreate {
        name: name.into(),
        image: "busybox".into(),
        command: command.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    id_of(rt.execute(&RuntimeRequest::CreateContainer(create)))
}

fn with_port(rt: &mut SimRuntime, name: &str, host_port: Option<u16>) -> String {
    let create = ContainerCreate {
        name: name.into(),
        image: "busybox".into(),
        ports: vec![PortMapping { protocol: Protocol::Tcp, host_port, container_port: 80, host_ip: None }],
        ..Default::default()
    };
    id_of(rt.execute(&RuntimeRequest::CreateContainer(create)))
}

fn start(rt: &mut SimRuntime, id: &str) -> RuntimeResult {
    rt.execute(&RuntimeRequest::StartContainer { id: id.into() })
}

fn stop(rt: &mut SimRuntime, id: &str, timeout_secs: u32) {
    rt.execute(&RuntimeRequest::StopContainer { id: id.into(), timeout_secs }).expect("stop");
}

fn info(rt: &SimRuntime, id: &str) -> ContainerInfo {
    rt.container(id).cloned().expect("exists")
}

fn actions(rt: &SimRuntime, id: &str) -> Vec<EventAction> {
    rt.recent_events().filter(|e| e.container_id == id).map(|e| e.action.clone()).collect()
}

#[test]
fn a_missing_command_fails_every_start_and_leaves_the_container_created() {
    let mut rt = runtime();
    let id = created(&mut rt, "c1", &["nosuch"]);
    for _ in 0..2 {
        match start(&mut rt, &id) {
            Err(RuntimeError::Invalid(m)) => assert!(m.contains("executable file not found in $PATH"), "{m}"),
            other => panic!("{other:?}"),
        }
        let c = info(&rt, &id);
        assert_eq!((c.state, c.exit_code), (ContainerState::Created, Some(127)));
        assert!(c.error.is_some_and(|e| e.contains("exec: \"nosuch\"")));
    }
    assert_eq!(actions(&rt, &id), vec![EventAction::Create], "a failed start emits nothing");
}

#[test]
fn a_taken_host_port_fails_the_start_until_freed() {
    let mut rt = runtime();
    let holder = with_port(&mut rt, "holder", Some(8080));
    let waiting = with_port(&mut rt, "waiting", Some(8080));
    start(&mut rt, &holder).expect("free port");
    match start(&mut rt, &waiting) {
        Err(RuntimeError::Transient(m)) => {
            assert!(m.starts_with("500: driver failed programming external connectivity on endpoint waiting ("), "{m}");
            assert!(m.ends_with("Bind for 0.0.0.0:8080 failed: port is already allocated"), "{m}");
        }
        other => panic!("{other:?}"),
    }
    let c = info(&rt, &waiting);
    assert_eq!((c.state, c.exit_code), (ContainerState::Created, Some(128)));
    assert!(c.error.is_some_and(|e| e.contains("port is already allocated")));
    stop(&mut rt, &holder, 1);
    start(&mut rt, &waiting).expect("freed");
    let c = info(&rt, &waiting);
    assert_eq!((c.state, c.exit_code, c.error), (ContainerState::Running, None, None), "a good start clears the error");
    // A process on the host.
    rt.hold_host_port(9090, Protocol::Tcp);
    let blocked = with_port(&mut rt, "blocked", Some(9090));
    match start(&mut rt, &blocked) {
        Err(RuntimeError::Transient(m)) => assert!(
            m.ends_with("Error starting userland proxy: listen tcp4 0.0.0.0:9090: bind: address already in use"),
            "{m}"
        ),
        other => panic!("{other:?}"),
    }
    rt.release_host_port(9090, Protocol::Tcp);
    start(&mut rt, &blocked).expect("released");
}

#[test]
fn a_failed_restart_keeps_a_non_zero_exit_code() {
    let mut rt = runtime();
    let holder = with_port(&mut rt, "holder", Some(8080));
    let create = ContainerCreate {
        name: "exits".into(),
        image: "busybox".into(),
        command: vec!["sh".into(), "-c".into(), "exit 3".into()],
        ports: vec![PortMapping { protocol: Protocol::Tcp, host_port: Some(8080), container_port: 80, host_ip: None }],
        ..Default::default()
    };
    let exits = id_of(rt.execute(&RuntimeRequest::CreateContainer(create)));
    start(&mut rt, &exits).expect("start");
    a_moment_later(&mut rt);
    assert_eq!(info(&rt, &exits).exit_code, Some(3));
    start(&mut rt, &holder).expect("takes the port");
    assert!(start(&mut rt, &exits).is_err());
    let c = info(&rt, &exits);
    assert_eq!((c.state, c.exit_code, c.error.is_some()), (ContainerState::Exited, Some(3), true));
}

#[test]
fn port_zero_and_no_port_get_ephemeral_ports() {
    let mut rt = runtime();
    let a = with_port(&mut rt, "c-a", Some(0));
    let b = with_port(&mut rt, "c-b", None);
    start(&mut rt, &a).expect("start");
    start(&mut rt, &b).expect("start");
    let port = |rt: &SimRuntime, id: &str| info(rt, id).ports.first().map(|p| p.host_port);
    assert_eq!((port(&rt, &a), port(&rt, &b)), (Some(32_769), Some(32_770)));
}

#[test]
fn a_script_that_sleeps_ends_when_its_time_comes() {
    let mut rt = runtime();
    let id = created(&mut rt, "c1", &["sh", "-c", "sleep 2; exit 6"]);
    let quick = created(&mut rt, "c2", &["sleep", "1"]);
    assert_eq!(rt.next_due(), None);
    start(&mut rt, &id).expect("start");
    start(&mut rt, &quick).expect("start");
    assert_eq!(rt.next_due(), Some(WallTime(1_001_000)));
    rt.advance(WallTime(1_000_500));
    assert_eq!(info(&rt, &quick).state, ContainerState::Running, "not due yet");
    rt.advance(WallTime(1_005_000));
    assert_eq!((info(&rt, &id).state, info(&rt, &id).exit_code), (ContainerState::Exited, Some(6)));
    let dies: Vec<(String, WallTime)> = rt
        .recent_events()
        .filter(|e| matches!(e.action, EventAction::Die { .. }))
        .map(|e| (e.container_id.clone(), e.time))
        .collect();
    assert_eq!(dies, vec![(quick, WallTime(1_001_000)), (id, WallTime(1_002_000))], "in time order, at due time");
    assert_eq!(rt.next_due(), None);
}

#[test]
fn requests_apply_due_exits_first() {
    let mut rt = runtime();
    let id = created(&mut rt, "c1", &["sh", "-c", "sleep 1; exit 4"]);
    start(&mut rt, &id).expect("start");
    rt.set_now(WallTime(1_001_000));
    let info = match rt.execute(&RuntimeRequest::InspectContainer { id: id.clone() }) {
        Ok(RuntimeReply::Container(info)) => info,
        other => panic!("{other:?}"),
    };
    assert_eq!((info.state, info.exit_code), (ContainerState::Exited, Some(4)));
}

#[test]
fn commands_that_end_at_once_exit_a_moment_after_their_start() {
    let mut rt = runtime();
    let id = created(&mut rt, "c1", &["sh", "-c", "false || exit 7"]);
    start(&mut rt, &id).expect("start");
    assert_eq!(info(&rt, &id).state, ContainerState::Running, "as the start answers");
    a_moment_later(&mut rt);
    assert_eq!(info(&rt, &id).exit_code, Some(7));
    assert_eq!(
        actions(&rt, &id),
        vec![EventAction::Create, EventAction::Start, EventAction::Die { exit_code: Some(7) }]
    );
}

#[test]
fn stop_exit_codes_follow_the_process() {
    let mut rt = runtime();
    let trapping = created(&mut rt, "trap", &["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]);
    let ignoring = created(&mut rt, "ignore", &["sleep", "3600"]);
    let ending = created(&mut rt, "ending", &["sh", "-c", "sleep 2; exit 6"]);
    for id in [&trapping, &ignoring, &ending] {
        start(&mut rt, id).expect("start");
    }
    rt.set_now(WallTime(1_000_500));
    for id in [&trapping, &ignoring, &ending] {
        stop(&mut rt, id, 10);
    }
    let code = |rt: &SimRuntime, id: &str| info(rt, id).exit_code;
    assert_eq!((code(&rt, &trapping), code(&rt, &ignoring), code(&rt, &ending)), (Some(0), Some(137), Some(6)));
    // A grace period shorter than the rest of the sleep: killed.
    start(&mut rt, &ending).expect("again");
    stop(&mut rt, &ending, 1);
    assert_eq!(code(&rt, &ending), Some(137));
}

#[test]
fn a_daemon_restart_stops_with_the_default_grace_period() {
    let mut rt = runtime();
    let trapping = created(&mut rt, "trap", &["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]);
    let plain = created(&mut rt, "plain", &[]);
    start(&mut rt, &trapping).expect("start");
    start(&mut rt, &plain).expect("start");
    rt.set_now(WallTime(1_000_500)); // the trap is set by then
    assert_eq!(rt.restart_daemon(), 2);
    assert_eq!((info(&rt, &trapping).exit_code, info(&rt, &plain).exit_code), (Some(0), Some(137)));
}

#[test]
fn a_removal_in_progress() {
    let mut rt = runtime();
    let id = created(&mut rt, "c1", &[]);
    start(&mut rt, &id).expect("start");
    assert!(matches!(rt.begin_removal(&id, false), Err(RuntimeError::Conflict(_))), "running needs force");
    assert_eq!(rt.begin_removal("c1", true), Ok(id.clone()));
    assert_eq!(info(&rt, &id).state, ContainerState::Removing);
    assert_eq!(info(&rt, &id).exit_code, Some(137), "killed first");
    assert_eq!(
        rt.execute(&RuntimeRequest::RemoveContainer { id: "c1".into(), force: true }),
        Err(RuntimeError::Conflict("removal of container c1 is already in progress".into()))
    );
    assert_eq!(
        start(&mut rt, &id),
        Err(RuntimeError::Conflict("container is marked for removal and cannot be started".into()))
    );
    stop(&mut rt, &id, 1);
    match rt.execute(&RuntimeRequest::ListContainers { labels: Default::default() }) {
        Ok(RuntimeReply::Containers(list)) => assert_eq!(list[0].state, ContainerState::Removing),
        other => panic!("{other:?}"),
    }
    assert!(rt.finish_removal(&id));
    assert!(!rt.finish_removal(&id), "once");
    assert!(rt.container(&id).is_none());
    assert_eq!(
        actions(&rt, &id),
        vec![EventAction::Create, EventAction::Start, EventAction::Die { exit_code: Some(137) }, EventAction::Destroy]
    );
    created(&mut rt, "c1", &[]);
}

#[test]
fn a_stop_holds_until_the_process_ends_and_the_container_runs_until_then() {
    let mut rt = SimRuntime::new(1);
    rt.add_image("busybox:latest");
    rt.set_now(WallTime(10_000));
    let create = |name: &str, script: &str| ContainerCreate {
        name: name.into(),
        image: "busybox:latest".into(),
        command: vec!["sh".into(), "-c".into(), script.into()],
        ..Default::default()
    };
    for (name, script) in
        [("ignores", "trap '' TERM; sleep 3600"), ("traps", "trap 'exit 7' TERM; while true; do sleep 1; done")]
    {
        rt.execute(&RuntimeRequest::CreateContainer(create(name, script))).expect("created");
        rt.execute(&RuntimeRequest::StartContainer { id: name.into() }).expect("started");
    }
    assert_eq!(rt.begin_stop("ignores", 2), Ok(WallTime(12_000)), "killed when the grace period ends");
    assert_eq!(rt.begin_stop("traps", 2), Ok(WallTime(11_000)), "its trap runs after the current sleep");
    assert_eq!(rt.begin_stop("ignores", 10), Ok(WallTime(12_000)), "a second stop ends it no later");
    let state =
        |rt: &mut SimRuntime, name: &str| match rt.execute(&RuntimeRequest::InspectContainer { id: name.into() }) {
            Ok(RuntimeReply::Container(info)) => (info.state, info.exit_code),
            other => panic!("{other:?}"),
        };
    assert_eq!(state(&mut rt, "ignores"), (ContainerState::Running, None), "running while the stop holds");
    rt.advance(WallTime(11_000));
    assert_eq!(state(&mut rt, "traps"), (ContainerState::Exited, Some(7)));
    assert_eq!(state(&mut rt, "ignores"), (ContainerState::Running, None));
    rt.advance(WallTime(12_000));
    assert_eq!(state(&mut rt, "ignores"), (ContainerState::Exited, Some(137)));
    assert_eq!(rt.begin_stop("ignores", 2), Ok(WallTime(12_000)), "a stopped container's stop is done at once");
    rt.check().expect("consistent");
}

#[test]
fn a_container_on_no_network_publishes_nothing() {
    let mut rt = runtime();
    let id = with_port(&mut rt, "web", Some(8080));
    rt.execute(&RuntimeRequest::DisconnectNetwork { network: "bridge".into(), container: id.clone() })
        .expect("disconnected before its start");
    start(&mut rt, &id).expect("started");
    assert!(info(&rt, &id).ports.is_empty(), "{:?}", info(&rt, &id).ports);
}

/// Docker 20.10.24 joins a starting container's networks in turn, `bridge` first, and publishes
/// its ports as it joins the first: a host port taken is the 500 before a later network that is
/// gone is looked up (`drydock runtime diff --seed 908288`, sequence 19); with the port free,
/// that network is the 404; on no `bridge`, the network gone comes first.
#[test]
fn a_start_publishes_its_ports_on_the_first_network_before_looking_up_the_next() {
    let mut rt = runtime();
    let holder = with_port(&mut rt, "holder", Some(8080));
    let id = with_port(&mut rt, "web", Some(8080));
    let connect = RuntimeRequest::ConnectNetwork { network: "gone".into(), container: id.clone(), aliases: Vec::new() };
    rt.execute(&connect).expect("recorded, unchecked");
    start(&mut rt, &holder).expect("the port is free");
    match start(&mut rt, &id) {
        Err(RuntimeError::Transient(m)) => assert!(m.ends_with("port is already allocated"), "{m}"),
        other => panic!("{other:?}"),
    }
    stop(&mut rt, &holder, 0);
    assert_eq!(start(&mut rt, &id), Err(RuntimeError::NotFound("network gone not found".into())));
    assert!(info(&rt, &id).ports.is_empty(), "the ports are released: {:?}", info(&rt, &id).ports);
    assert_eq!(info(&rt, &id).state, ContainerState::Created);
    start(&mut rt, &holder).expect("the port is free again");
    rt.execute(&RuntimeRequest::DisconnectNetwork { network: "bridge".into(), container: id.clone() })
        .expect("disconnected from bridge");
    assert_eq!(start(&mut rt, &id), Err(RuntimeError::NotFound("network gone not found".into())));
    rt.check().expect("consistent");
}

#[test]
fn the_logs_of_a_container_being_removed_are_refused() {
    let mut rt = runtime();
    let id = created(&mut rt, "app", &["sh", "-c", "echo hi"]);
    start(&mut rt, &id).expect("started");
    assert_eq!(rt.open_logs("app"), Ok(id.clone()));
    rt.begin_removal(&id, true).expect("removing");
    assert!(matches!(rt.open_logs("app"), Err(RuntimeError::Conflict(_))), "{:?}", rt.open_logs("app"));
    rt.finish_removal(&id);
    assert!(matches!(rt.open_logs(&id), Err(RuntimeError::NotFound(_))));
}

#[test]
fn a_container_being_removed_is_neither_connected_nor_disconnected() {
    let mut rt = runtime();
    let id = created(&mut rt, "app", &["sh", "-c", "echo hi"]);
    rt.begin_removal(&id, true).expect("removing");
    for request in [
        RuntimeRequest::ConnectNetwork { network: "bridge".into(), container: id.clone(), aliases: Vec::new() },
        RuntimeRequest::DisconnectNetwork { network: "bridge".into(), container: id.clone() },
    ] {
        assert!(matches!(rt.execute(&request), Err(RuntimeError::Transient(_))), "{request:?}");
    }
}

/// What a main process writes is the container's when it ends: at its natural exit, at the
/// exit a stop brings (what it wrote by then), at a forced removal (what it wrote by then).
#[test]
fn files_a_process_writes_land_when_it_ends() {
    let mut rt = runtime();
    let script = "echo early > /early; sleep 2; echo late > /late; sleep infinity";
    let natural = created(&mut rt, "c1", &["sh", "-c", "echo a > /f; sleep 1; echo b >> /f"]);
    let stopped = created(&mut rt, "c2", &["sh", "-c", script]);
    let removed = created(&mut rt, "c3", &["sh", "-c", script]);
    for id in [&natural, &stopped, &removed] {
        start(&mut rt, id).expect("start");
    }
    assert_eq!(rt.container_file(&natural, "/f"), None, "not before it ends");
    rt.advance(WallTime(1_001_000));
    assert_eq!(rt.container_file(&natural, "/f"), Some("a\nb\n"));
    stop(&mut rt, &stopped, 0);
    assert_eq!((rt.container_file(&stopped, "/early"), rt.container_file(&stopped, "/late")), (Some("early\n"), None));
    rt.begin_removal(&removed, true).expect("forced");
    assert_eq!((rt.container_file(&removed, "/early"), rt.container_file(&removed, "/late")), (Some("early\n"), None));
}
