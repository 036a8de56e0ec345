//! The API's network layer on turmoil's simulated network: the real HTTP server
//! ([`serve_plain`], plain HTTP: there is no TLS on the simulated network) and the real client
//! ([`drydock_daemon::client`]) over simulated TCP, with lost replies, partitions, latency,
//! random link failures and a crashing server host, deterministically from a seed.
//!
//! Each test runs `DRYDOCK_TURMOIL_SEEDS` seeds (default 50). A failing seed names itself and
//! the command that runs only it: `DRYDOCK_TURMOIL_SEED=S cargo test -p drydock-daemon --test
//! turmoil -- NAME`.
//!
//! What is deterministic: the network (latency, losses, partitions), the fault schedule and every
//! task's interleaving come from the seed. What is not: `generateName` suffixes and timestamps
//! (the server reads the wall clock), which no check depends on.
//!
//! The server keeps its objects in the SQLite store (on tmpfs when there is one), so the crash
//! test restarts it on its durable state.

#![allow(clippy::unwrap_used)]

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use drydock_adapters::SharedStore;
use drydock_daemon::api::{ApiOptions, REQUEST_ID_ANNOTATION, router};
use drydock_daemon::client::{Client, ClientOptions, Connector, Deleted, WatchEvent, Watcher, WatcherStats};
use drydock_daemon::server::{Listener, serve_plain};
use drydock_engine::api::{Namespace, NamespaceSpec, Object, ObjectMeta, Resource};
use drydock_engine::store::{EventType, Registry, StoreConfig, StoreRequest};
use http_body_util::BodyExt;
use parking_lot::Mutex;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
mod clients;
mod server;
mod watches;

use clients::*;
use server::*;
use watches::*;

const PORT: u16 = 6443;

const PCS: &str = "/apis/drydock.dev/v1/namespaces/demo/physicalcontainers";

const KIND: &str = "PhysicalContainer";

// ---------------------------------------------------------------- seeds

fn seeds() -> Vec<u64> {
    if let Ok(seed) = std::env::var("DRYDOCK_TURMOIL_SEED") {
        return vec![seed.parse().expect("DRYDOCK_TURMOIL_SEED must be a number")];
    }
    let count = std::env::var("DRYDOCK_TURMOIL_SEEDS").ok().and_then(|n| n.parse().ok()).unwrap_or(50u64);
    (0..count).collect()
}

/// Run `check` for every seed; the first failure names its seed and how to run only it.
fn for_each_seed(test: &str, check: impl Fn(u64)) {
    for seed in seeds() {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(seed)));
        if let Err(panic) = outcome {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!(
                "{test} failed at seed {seed}: {message}\nreproduce: DRYDOCK_TURMOIL_SEED={seed} cargo test -p drydock-daemon --test turmoil -- {test}"
            );
        }
    }
}

fn rng(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

fn between(rng: &mut impl RngCore, low: u64, high: u64) -> u64 {
    low + rng.next_u64() % (high - low + 1)
}

fn millis(rng: &mut impl RngCore, low: u64, high: u64) -> Duration {
    Duration::from_millis(between(rng, low, high))
}

/// A simulation with the seed's network: latency between 1 ms and 1-40 ms, and, when
/// `fail_rate` > 0, links that break at random and heal.
fn sim(seed: u64, fail_rate: f64) -> turmoil::Sim<'static> {
    let mut knobs = rng(seed, 99);
    let mut builder = turmoil::Builder::new();
    builder
        .rng_seed(seed)
        .simulation_duration(Duration::from_secs(600))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(millis(&mut knobs, 1, 40))
        .fail_rate(fail_rate)
        .repair_rate(0.3);
    builder.build()
}

// ---------------------------------------------------------------- the tests

/// A reply lost after the commit: the client's retry (same request id) is answered with the
/// object the first attempt made, so nothing is duplicated and no write that happened is
/// reported as failed, for named and `generateName` creates alike.
#[test]
fn lost_reply_after_commit_does_not_duplicate() {
    let replayed = Arc::new(AtomicU64::new(0));
    for_each_seed("lost_reply_after_commit_does_not_duplicate", |seed| {
        let dir = store_dir();
        let clients: Vec<String> = (0..2).map(|i| format!("client{i}")).collect();
        let setup = setup(seed, &dir, 100_000, 0.3, &clients);
        let mut sim = sim(seed, 0.0);
        add_server(&mut sim, setup.clone());
        let answers = Arc::new(Mutex::new(Answers::default()));
        for (i, name) in clients.iter().enumerate() {
            let (client, name, answers) = (client(name), name.clone(), answers.clone());
            sim.client(name.clone(), workload(client, name, 12, seed, i as u64, answers));
        }
        sim.run().unwrap();
        drop(sim);
        let record = setup.record.lock();
        check_no_loss_no_duplicate(&setup.db, &record, &answers.lock());
        replayed.fetch_add(record.replayed.len() as u64, Ordering::SeqCst);
    });
    if seeds().len() >= 10 {
        assert!(replayed.load(Ordering::SeqCst) > 0, "no seed lost a reply: the test tests nothing");
    }
}

/// Partitions between a watcher and the server while a writer changes things: the watcher
/// resumes from its last resourceVersion (a long log) or relists on `410 Gone` (a log of 4
/// events, odd seeds), and the consumer sees every change once, in order.
#[test]
fn partitioned_watch_sees_every_change_once_in_order() {
    let (resumes, gone) = (AtomicU64::new(0), AtomicU64::new(0));
    for_each_seed("partitioned_watch_sees_every_change_once_in_order", |seed| {
        let run = partitioned_watch(seed);
        check_watch(&run.view, &run.history, &run.stored, seed % 2 == 1);
        resumes.fetch_add(run.view.stats.resumes, Ordering::SeqCst);
        gone.fetch_add(run.view.stats.gone, Ordering::SeqCst);
    });
    if seeds().len() >= 10 {
        assert!(resumes.load(Ordering::SeqCst) > 0, "no watch was ever resumed: the test tests nothing");
        assert!(gone.load(Ordering::SeqCst) > 0, "no watch was ever answered 410 Gone: the relist is untested");
    }
}

/// What one run of the partitioned watch gave.
struct WatchRun {
    view: View,
    history: Vec<(u64, EventType, String)>,
    stored: BTreeMap<String, Value>,
    elapsed: Duration,
}

/// A writer, a watcher, and partitions between the watcher and the server (a log of 4 events
/// on odd seeds).
fn partitioned_watch(seed: u64) -> WatchRun {
    let dir = store_dir();
    let short_log = seed % 2 == 1;
    let setup = setup(seed, &dir, if short_log { 4 } else { 100_000 }, 0.0, &[]);
    let mut sim = sim(seed, 0.0);
    add_server(&mut sim, setup.clone());
    let answers = Arc::new(Mutex::new(Answers::default()));
    let target = Arc::new(AtomicU64::new(0));
    let view = Arc::new(Mutex::new(View::default()));
    {
        let (answers, target) = (answers.clone(), target.clone());
        sim.client("writer", async move {
            let writer = client("writer");
            workload(writer.clone(), "writer".into(), 30, seed, 1, answers).await?;
            let list = writer.list(PCS).await.map_err(|e| e.to_string())?;
            target.store(list.resource_version, Ordering::SeqCst);
            Ok(())
        });
    }
    {
        let (view, target) = (view.clone(), target.clone());
        sim.client("watcher", async move { watch_until(client("watcher").watcher(PCS), target, view).await });
    }
    sim.client("chaos", async move {
        let mut chaos = rng(seed, 7);
        for _ in 0..between(&mut chaos, 1, 4) {
            tokio::time::sleep(millis(&mut chaos, 100, 2500)).await;
            turmoil::partition("server", "watcher");
            tokio::time::sleep(millis(&mut chaos, 200, 5000)).await;
            turmoil::repair("server", "watcher");
        }
        Ok(())
    });
    sim.run().unwrap();
    let elapsed = sim.elapsed();
    drop(sim);
    let history = std::mem::take(&mut setup.record.lock().history);
    let stored = stored(&setup.db);
    let view = std::mem::take(&mut *view.lock());
    WatchRun { view, history, stored, elapsed }
}

/// A seed reproduces: the same seed run twice gives the same run, to the simulated millisecond
/// (names made by `generateName` aside: they come from the wall clock).
#[test]
fn a_seed_reproduces() {
    let shape = |run: &WatchRun| {
        let seen: Vec<(u64, Option<EventType>)> = run.view.seen.iter().map(|(rv, kind, _)| (*rv, *kind)).collect();
        let history: Vec<(u64, EventType)> = run.history.iter().map(|(rv, kind, _)| (*rv, *kind)).collect();
        (run.elapsed, seen, history, run.view.stats, run.stored.len())
    };
    for seed in [2, 3] {
        let (first, second) = (partitioned_watch(seed), partitioned_watch(seed));
        assert_eq!(shape(&first), shape(&second), "seed {seed} ran differently twice");
    }
}

/// The server host crashes (once or twice, at seeded moments) and restarts on its durable
/// state while clients write and watch: every client request succeeds once, and every
/// watcher's view converges to the server's state.
#[test]
fn host_crash_and_restart_clients_converge() {
    for_each_seed("host_crash_and_restart_clients_converge", |seed| {
        let dir = store_dir();
        let clients: Vec<String> = (0..3).map(|i| format!("client{i}")).collect();
        let setup = setup(seed, &dir, 100_000, 0.0, &[]);
        let mut sim = sim(seed, 0.0);
        add_server(&mut sim, setup.clone());
        let answers = Arc::new(Mutex::new(Answers::default()));
        let done = Arc::new(AtomicU64::new(0));
        let target = Arc::new(AtomicU64::new(0));
        let views: Vec<Arc<Mutex<View>>> = (0..2).map(|_| Arc::default()).collect();
        for (i, name) in clients.iter().enumerate() {
            let (client, name, answers, done, target) =
                (client(name), name.clone(), answers.clone(), done.clone(), target.clone());
            let writers = clients.len() as u64;
            sim.client(name.clone(), async move {
                workload(client.clone(), name, 15, seed, i as u64, answers).await?;
                if done.fetch_add(1, Ordering::SeqCst) + 1 == writers {
                    let list = client.list(PCS).await.map_err(|e| e.to_string())?;
                    target.store(list.resource_version, Ordering::SeqCst);
                }
                Ok(())
            });
        }
        for (i, view) in views.iter().enumerate() {
            let (view, target) = (view.clone(), target.clone());
            let name = format!("watcher{i}");
            sim.client(name.clone(), async move { watch_until(client(&name).watcher(PCS), target, view).await });
        }
        let mut schedule = rng(seed, 5);
        let mut crashes: Vec<(Duration, Duration)> = (0..between(&mut schedule, 1, 2))
            .map(|_| (millis(&mut schedule, 100, 1000), millis(&mut schedule, 10, 1500)))
            .collect();
        crashes.sort();
        let mut next = crashes.into_iter().peekable();
        let mut down_until = None;
        loop {
            let elapsed = sim.elapsed();
            if let Some(until) = down_until
                && elapsed >= until
            {
                sim.bounce("server");
                down_until = None;
            }
            if down_until.is_none()
                && let Some((at, _)) = next.peek()
                && elapsed >= *at
            {
                let (_, downtime) = next.next().unwrap();
                sim.crash("server");
                down_until = Some(elapsed + downtime);
            }
            if sim.step().unwrap() {
                break;
            }
        }
        assert!(
            setup.boots.load(Ordering::SeqCst) >= 2,
            "the server never restarted (finished at {:?}, {} creates answered)",
            sim.elapsed(),
            answers.lock().created.len()
        );
        drop(sim);
        let stored = stored(&setup.db);
        check_no_loss_no_duplicate(&setup.db, &setup.record.lock(), &answers.lock());
        for view in &views {
            let want: BTreeMap<String, u64> =
                stored.iter().map(|(name, o)| (name.clone(), o["resourceVersion"].as_u64().unwrap())).collect();
            let view = view.lock();
            let seen: Vec<u64> = view.seen.iter().map(|(rv, _, _)| *rv).collect();
            assert!(seen.windows(2).all(|w| w[0] < w[1]), "versions not increasing: {seen:?}");
            assert_eq!(view.objects, want, "a watcher did not converge");
        }
    });
}

/// Eight clients at once on a lossy, slow network: every create is answered once with the
/// object it made, no object is made twice, every delete is answered.
#[test]
fn many_clients_no_request_lost_or_doubled() {
    for_each_seed("many_clients_no_request_lost_or_doubled", |seed| {
        let dir = store_dir();
        let clients: Vec<String> = (0..8).map(|i| format!("client{i}")).collect();
        let setup = setup(seed, &dir, 100_000, 0.1, &clients);
        let mut sim = sim(seed, 0.02);
        add_server(&mut sim, setup.clone());
        let answers = Arc::new(Mutex::new(Answers::default()));
        for (i, name) in clients.iter().enumerate() {
            let (client, name, answers) = (client(name), name.clone(), answers.clone());
            sim.client(name.clone(), workload(client, name, 9, seed, i as u64, answers));
        }
        sim.run().unwrap();
        drop(sim);
        check_no_loss_no_duplicate(&setup.db, &setup.record.lock(), &answers.lock());
        let answers = answers.lock();
        assert_eq!(answers.created.len(), clients.len() * 9, "a create was lost");
        assert_eq!(answers.deleted.len(), clients.len() * 3, "a delete was lost");
    });
}
