//! `logs`: log sources under faults. Containers that print (bursts past the hub's window, lines
//! over time, both streams, a farewell on TERM, a start that fails), logical containers whose
//! inline images are pulled (startup output) or referenced, stops and deletions (of objects and
//! of their namespace) with readers attached; readers of every source, fast and slow, opened
//! before what they read exists, cancelled, and stalled by the `reader-stall` fault.
//!
//! [`add_readers`] adds readers to any workload (`mixed` has some).

use crate::draw::{Ops, between, chance, pick};
use drydock_engine::MonoTime;
use drydock_engine::api::logical::LogicalContainer;
use drydock_engine::api::logical::{LogicalContainerSpec, LogicalMode};
use drydock_engine::api::{ContainerImage, PhysicalContainer, PullPolicy, Resource};
use drydock_sim::workload::{ClientOp, ContainerOp, LogRead, Propagation, Target, TimedOp, Workload};
use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;

/// What a container of this scenario prints.
fn printing_command(rng: &mut ChaCha8Rng) -> Vec<String> {
    let sh = |script: String| vec!["sh".to_string(), "-c".to_string(), script];
    match rng.next_u64() % 8 {
        // Quiet at first: a follower must not take the silence for the end.
        7 => sh(format!("sleep {}; echo late; echo late >&2", 1 + rng.next_u64() % 3)),
        // A burst, sometimes larger than the hub keeps, then a pause and an end.
        0 | 1 => sh(format!("seq 1 {}; sleep {}; echo done", 1 + rng.next_u64() % 900, rng.next_u64() % 5)),
        // A line a second until TERM, then a farewell.
        2 => sh("trap 'echo bye; exit 0' TERM; while true; do echo tick; sleep 1; done".into()),
        // Both streams, over time, and a failure.
        3 => sh(format!("echo out; echo err >&2; sleep {}; echo again; exit 3", rng.next_u64() % 4)),
        // Prints, then runs until stopped (killed: no trap).
        4 => sh("echo ready; while true; do sleep 1; done".into()),
        // Cannot start: a terminal failure, with the runtime's words in the system stream.
        5 => vec!["/no/such/program".into()],
        _ => sh("echo hello; exit 0".into()),
    }
}

pub fn generate(rng: &mut ChaCha8Rng) -> Workload {
    let mut ops = Ops::default();
    let namespaces: Vec<String> = (0..1 + rng.next_u64() % 2).map(|i| format!("logs-{i}")).collect();
    for (i, ns) in namespaces.iter().enumerate() {
        ops.at(
            between(rng, 0, 300),
            ClientOp::CreateNamespace { name: ns.clone(), engine: Some(i % 2), workload: None },
        );
        ops.at(
            between(rng, 300, 800),
            ClientOp::CreateImage {
                namespace: ns.clone(),
                name: "shared".into(),
                image: "redis:7".into(),
                pull_policy: PullPolicy::Missing,
                pull_retry_limit: 2,
            },
        );
    }
    for i in 0..2 + rng.next_u64() % 4 {
        let ns = pick(rng, &namespaces).clone();
        let name = format!("c-{i}");
        let created = between(rng, 500, 8_000);
        let container = ContainerOp {
            namespace: ns.clone(),
            name: name.clone(),
            image: Some("busybox:latest".into()),
            command: printing_command(rng),
            ..ContainerOp::default()
        };
        ops.at(created, ClientOp::CreateContainer(container));
        if chance(rng, 0.3) {
            ops.at(
                created + between(rng, 1_000, 15_000),
                ClientOp::StopContainer { namespace: ns.clone(), name: name.clone() },
            );
        }
        if chance(rng, 0.3) {
            let propagation = Propagation::Background;
            ops.at(created + between(rng, 100, 20_000), ClientOp::DeleteContainer { namespace: ns, name, propagation });
        }
    }
    for j in 0..1 + rng.next_u64() % 3 {
        let ns = pick(rng, &namespaces).clone();
        let name = format!("l-{j}");
        let mut spec = LogicalContainerSpec { mode: LogicalMode::Session, ..Default::default() };
        if chance(rng, 0.25) {
            spec.image_ref = Some("shared".into());
        } else {
            spec.image = Some(pick(rng, &["nginx:1.27", "docker.io/library/redis:7", "busybox:latest"]).to_string());
        }
        spec.command = printing_command(rng);
        let created = between(rng, 500, 8_000);
        ops.at(created, ClientOp::CreateLogical { namespace: ns.clone(), name: name.clone(), spec: Box::new(spec) });
        if chance(rng, 0.25) {
            ops.at(
                created + between(rng, 1_000, 15_000),
                ClientOp::StopLogical { namespace: ns.clone(), name: name.clone() },
            );
        }
        if chance(rng, 0.3) {
            let propagation = Propagation::Background;
            ops.at(created + between(rng, 100, 20_000), ClientOp::DeleteLogical { namespace: ns, name, propagation });
        }
    }
    for ns in &namespaces {
        if chance(rng, 0.3) {
            ops.at(between(rng, 10_000, 30_000), ClientOp::DeleteNamespace { name: ns.clone() });
        }
    }
    let mut workload = Workload {
        images: vec!["busybox:latest".into()],
        registry: vec!["nginx:1.27".into(), "redis:7".into()],
        ops: ops.finish(),
    };
    let readers = 2 + rng.next_u64() % 5;
    add_readers(rng, &mut workload, readers);
    workload
}

/// The sources a reader of `kind` may ask for (and, now and then, one it has not).
fn sources(kind: &str) -> &'static [&'static str] {
    match kind {
        PhysicalContainer::KIND => &["stdout", "stdout", "stderr", "system"],
        LogicalContainer::KIND => &["stdout", "stdout", "stderr", "startup_stdout", "startup_stderr", "system"],
        ContainerImage::KIND => &["stdout", "system"],
        _ => &["system"],
    }
}

/// Add `count` log readers of objects the workload creates: each opens around the object's
/// creation (sometimes before it, or before its container exists), follows it or not, at a fast
/// or a slow pace, sometimes from a tail, and gives up after a while.
pub fn add_readers(rng: &mut ChaCha8Rng, workload: &mut Workload, count: u64) {
    let created: Vec<(Target, MonoTime)> = workload
        .ops
        .iter()
        .filter_map(|op| {
            let target = match &op.op {
                ClientOp::CreateContainer(c) => Target::of::<PhysicalContainer>(&c.namespace, &c.name),
                ClientOp::CreateLogical { namespace, name, .. } => Target::of::<LogicalContainer>(namespace, name),
                ClientOp::CreateImage { namespace, name, .. } => Target::of::<ContainerImage>(namespace, name),
                _ => return None,
            };
            Some((target, op.at))
        })
        .collect();
    if created.is_empty() {
        return;
    }
    for _ in 0..count {
        let (target, at) = pick(rng, &created).clone();
        let source = if chance(rng, 0.03) { "bogus" } else { *pick(rng, sources(&target.kind)) };
        let fast = chance(rng, 0.6);
        let read = LogRead {
            source: source.to_string(),
            follow: chance(rng, 0.85),
            every_ms: if fast { 100 + rng.next_u64() % 200 } else { 1_000 + rng.next_u64() % 2_000 },
            batch: if fast { 1_000 } else { 1 + (rng.next_u64() % 5) as usize },
            tail_lines: chance(rng, 0.1).then(|| 1 + rng.next_u64() % 5),
            close_after_ms: between(rng, 5_000, 45_000).as_millis() as u64,
            target,
        };
        let opens = if chance(rng, 0.25) {
            at.as_duration().saturating_sub(between(rng, 0, 2_000))
        } else {
            at.as_duration() + between(rng, 0, 6_000)
        };
        workload.ops.push(TimedOp { at: MonoTime::from_duration(opens), op: ClientOp::ReadLogs(read) });
    }
    workload.ops.sort_by_key(|o| o.at);
}

/// Whether `workload` reads logs (then the `reader-stall` fault is drawn for it).
pub fn reads_logs(workload: &Workload) -> bool {
    workload.ops.iter().any(|o| matches!(o.op, ClientOp::ReadLogs(_)))
}
