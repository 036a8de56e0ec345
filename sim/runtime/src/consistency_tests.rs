//! Random sequences of every kind of request and outside action, with the runtime checked after
//! each step: its parts' guarantees, their agreement, and the journal's completeness.

use super::super::SimRuntime;
use drydock_engine::WallTime;
use drydock_engine::api::container::{CopiedFile, Mount, NetworkAttachment, PortMapping, Protocol};
use drydock_engine::runtime::{
    ContainerCreate, ContainerInfo, ContainerState, ImageBuild, NetworkCreate, RuntimeObject, RuntimeRequest,
    VolumeCreate,
};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};

const REGISTRY_IMAGE: &str = "127.0.0.1:5000/team/app:1";

fn pick<'a, T: ?Sized>(rng: &mut ChaCha8Rng, items: &[&'a T]) -> &'a T {
    items[rng.next_u32() as usize % items.len()]
}

fn runtime() -> SimRuntime {
    let mut rt = SimRuntime::new(3);
    rt.add_image("busybox");
    rt.registry_push(REGISTRY_IMAGE);
    rt.set_now(WallTime(1_000_000));
    rt.add_build_context(
        "/ctx",
        BTreeMap::from([
            ("Dockerfile".to_string(), "FROM busybox\nCOPY a.txt /a.txt\nCMD [\"cat\", \"/a.txt\"]\n".to_string()),
            ("a.txt".to_string(), "a".to_string()),
        ]),
    );
    rt
}

fn create(rng: &mut ChaCha8Rng) -> RuntimeRequest {
    let name = format!("c{}", rng.next_u32() % 6);
    let command: &[&str] = pick(
        rng,
        &[
            &[][..],
            &["sh", "-c", "sleep 1; echo done"],
            &["sh", "-c", "echo out; exit 3"],
            &["sh", "-c", "trap 'echo bye; exit 0' TERM; while true; do sleep 1; done"],
            &["sh", "-c", "sleep 2; cat /a.txt"],
            &["nosuch"],
        ],
    );
    let host_ip = pick(rng, &[&None, &Some("127.0.0.1"), &Some("127.0.0.2")]).map(str::to_string);
    let ports = match rng.next_u32() % 3 {
        0 => vec![],
        1 => vec![PortMapping { protocol: Protocol::Tcp, host_port: Some(8080), container_port: 80, host_ip }],
        _ => vec![PortMapping { protocol: Protocol::Udp, host_port: None, container_port: 53, host_ip }],
    };
    let mounts = match rng.next_u32() % 3 {
        0 => vec![],
        1 => vec![Mount { source: format!("v{}", rng.next_u32() % 3), target: "/data".into(), read_only: false }],
        _ => vec![Mount { source: "/tmp".into(), target: "/host".into(), read_only: true }],
    };
    let networks: &[&str] = pick(
        rng,
        &[&[][..], &["n0"], &["n1", "bridge"], &["zzz"], &["host"], &["none"], &["host", "n0"], &["n0", "none"]],
    );
    let aliases: Vec<String> = if rng.next_u32().is_multiple_of(3) { vec!["alias".into()] } else { vec![] };
    let image = pick(rng, &["busybox", REGISTRY_IMAGE, "built:1", "absent"]);
    let app = pick(rng, &["web", "db"]);
    RuntimeRequest::CreateContainer(ContainerCreate {
        name,
        image: image.into(),
        command: command.iter().map(|s| s.to_string()).collect(),
        labels: BTreeMap::from([("app".to_string(), app.to_string())]),
        ports,
        mounts,
        networks: networks
            .iter()
            .map(|n| NetworkAttachment { name: n.to_string(), aliases: aliases.clone() })
            .collect(),
        ..Default::default()
    })
}

/// One random step: a request, or something from outside (time, a daemon restart, an insert).
/// Returns what it did.
fn step(rt: &mut SimRuntime, rng: &mut ChaCha8Rng) -> String {
    let container = format!("c{}", rng.next_u32() % 6);
    let network = pick(rng, &["n0", "n1", "n2", "bridge", "zzz", "host", "none"]).to_string();
    let aliases: Vec<String> = if rng.next_u32().is_multiple_of(3) { vec!["alias".into()] } else { vec![] };
    let request = match rng.next_u32() % 24 {
        0..=2 => create(rng),
        3..=5 => RuntimeRequest::StartContainer { id: container },
        6 => RuntimeRequest::StopContainer { id: container, timeout_secs: rng.next_u32() % 3 },
        7 => RuntimeRequest::RemoveContainer { id: container, force: rng.next_u32().is_multiple_of(2) },
        8 => {
            let began = rt.begin_removal(&container, rng.next_u32().is_multiple_of(2));
            return format!("begin removal of {container}: {began:?}");
        }
        9 => {
            let removing: Vec<String> =
                rt.containers().filter(|c| c.state == ContainerState::Removing).map(|c| c.id.clone()).collect();
            for id in &removing {
                rt.finish_removal(id);
            }
            return format!("finish removals {removing:?}");
        }
        10 => return format!("daemon restart: {} stopped", rt.restart_daemon()),
        11 => {
            let now = rt.clock.now();
            match rt.next_due().filter(|_| rng.next_u32().is_multiple_of(2)) {
                Some(due) => rt.advance(due),
                None => rt.set_now(WallTime(now.0 + u64::from(rng.next_u32() % 3_000))),
            }
            return "time passes".into();
        }
        12 => RuntimeRequest::ConnectNetwork { network, container, aliases },
        13 => RuntimeRequest::DisconnectNetwork { network, container },
        14 => RuntimeRequest::CreateNetwork(NetworkCreate { name: network, labels: BTreeMap::new() }),
        15 => RuntimeRequest::RemoveNetwork { id: network },
        16 => {
            let id = rt.insert_network(&network, BTreeMap::new());
            return format!("insert network {network}: {id}");
        }
        17 => match rng.next_u32() % 2 {
            0 => RuntimeRequest::CreateVolume(VolumeCreate {
                name: pick(rng, &["v0", "v1", ""]).into(),
                labels: BTreeMap::new(),
            }),
            _ => RuntimeRequest::RemoveVolume { name: format!("v{}", rng.next_u32() % 3) },
        },
        18 => match rng.next_u32() % 3 {
            0 => RuntimeRequest::PullImage { reference: REGISTRY_IMAGE.into() },
            1 => RuntimeRequest::RemoveImage {
                reference: pick(rng, &["busybox", REGISTRY_IMAGE, "built:1"]).into(),
                force: rng.next_u32().is_multiple_of(2),
            },
            _ => {
                let digest = rt.registry_push(REGISTRY_IMAGE);
                return format!("push {digest}");
            }
        },
        19 => RuntimeRequest::CopyFiles {
            id: container,
            files: vec![CopiedFile {
                destination: pick(
                    rng,
                    &["/a.txt", "/host/x", "/a.txt/below", "/data/x", "/data", "/data/x/y", "/host"],
                )
                .into(),
                contents: "copied".into(),
                mode: 0o644,
                owner: 0,
                group: 0,
            }],
        },
        20 => RuntimeRequest::BuildImage(ImageBuild {
            context: "/ctx".into(),
            dockerfile: "Dockerfile".into(),
            tag: "built:1".into(),
            ..Default::default()
        }),
        21 => {
            let state = pick(rng, &[&ContainerState::Running, &ContainerState::Exited]);
            // A container that is there again (replaced), else a fresh id: Docker never reuses
            // one, and a removed container's output stays marked removed.
            let live: Vec<String> =
                rt.containers().filter(|c| c.id.starts_with("outside")).map(|c| c.id.clone()).collect();
            let id = match live.first() {
                Some(id) if rng.next_u32().is_multiple_of(2) => id.clone(),
                _ => format!("outside{}", rng.next_u64()),
            };
            // A name no other container holds: Docker keeps names unique (an insert could break
            // that, and the name index then names one of the two).
            let name = match rt.containers.id_named(&container) {
                Some(holder) if *holder != id => format!("outside-{}", rng.next_u64()),
                _ => container.clone(),
            };
            rt.insert(ContainerInfo {
                id,
                name,
                image: "busybox".into(),
                labels: BTreeMap::from([("app".to_string(), "outside".to_string())]).into(),
                state: *state,
                exit_code: None,
                error: None,
                ports: Vec::new(),
            });
            return format!("insert {container} {state:?}");
        }
        22 => {
            if rng.next_u32().is_multiple_of(2) {
                rt.hold_host_port(8080, Protocol::Tcp);
            } else {
                rt.release_host_port(8080, Protocol::Tcp);
            }
            return "host port".into();
        }
        _ => {
            rt.add_image(pick(rng, &["busybox", "other"]));
            return "add image".into();
        }
    };
    let result = rt.execute(&request);
    format!("{request:?} -> {result:?}")
}

#[test]
fn every_part_and_their_agreement_hold_after_every_step() {
    let mut steps_that_changed_something = 0;
    for seed in 0..60 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut rt = runtime();
        for n in 0..150 {
            let what = step(&mut rt, &mut rng);
            if let Err(e) = rt.check() {
                panic!("seed {seed}, step {n} ({what}): {e}");
            }
            if rng.next_u32().is_multiple_of(8) {
                rt.take_events();
            }
            steps_that_changed_something += usize::from(!rt.take_journal().is_empty());
        }
    }
    assert!(steps_that_changed_something > 2_000, "the steps do things: {steps_that_changed_something}");
}

/// Everything a checker can see of the runtime, by what the journal names it by.
fn snapshot(rt: &SimRuntime) -> [BTreeMap<String, String>; 3] {
    [
        rt.containers.values().map(|c| (c.id().to_string(), format!("{c:?}"))).collect(),
        rt.network_labels().map(|(id, name, labels)| (id.to_string(), format!("{name} {labels:?}"))).collect(),
        rt.volume_labels().map(|(name, labels)| (name.to_string(), format!("{labels:?}"))).collect(),
    ]
}

/// The journal's guarantee: whatever changed is in it.
#[test]
fn the_journal_names_everything_that_changed() {
    for seed in 0..60 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut rt = runtime();
        rt.take_journal();
        for n in 0..150 {
            let before = snapshot(&rt);
            let what = step(&mut rt, &mut rng);
            let after = snapshot(&rt);
            let journal = rt.take_journal();
            let networks = journal.resources(RuntimeObject::Network).map(str::to_string).collect();
            let volumes = journal.resources(RuntimeObject::Volume).map(str::to_string).collect();
            let journalled: [&BTreeSet<String>; 3] = [&journal.containers, &networks, &volumes];
            for (kind, ((before, after), journalled)) in
                ["container", "network", "volume"].iter().zip(before.iter().zip(&after).zip(journalled))
            {
                let keys = before.keys().chain(after.keys());
                for key in keys.filter(|k| before.get(*k) != after.get(*k)) {
                    assert!(
                        journalled.contains(key),
                        "seed {seed}, step {n} ({what}): {kind} {key} changed, unjournalled"
                    );
                }
            }
        }
    }
}
