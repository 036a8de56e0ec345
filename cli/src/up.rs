//! `drydock up -f FILE`: apply a manifest, run the engine against Docker in the foreground, show
//! each object's phase as it changes, and tear everything down on Ctrl-C or SIGTERM.

use anyhow::{Context as _, Result};
use clap::Args;
use drydock_adapters::{DockerRuntime, Driver, Runtime, SharedStore};
use drydock_engine::api::{Namespace, Object, ObjectKey, Resource, names};
use drydock_engine::runtime::{RuntimeReply, RuntimeRequest};
use drydock_engine::store::{DeleteOptions, EventType, StoreRequest};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct UpArgs {
    /// Manifest: a YAML (one or more documents) or JSON file holding objects, a list of objects,
    /// or `{items: [...]}`.
    #[arg(short = 'f', long = "file")]
    file: PathBuf,
    /// How long teardown may take before what is left is reported.
    #[arg(long, default_value_t = 30)]
    teardown_timeout_secs: u64,
}

pub fn run(args: &UpArgs) -> Result<ExitCode> {
    // Validate before touching Docker: a bad manifest creates nothing.
    let objects = crate::manifest::load(&args.file)?;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("start the tokio runtime")?;
    runtime.block_on(up(args, objects))
}

async fn up(args: &UpArgs, objects: Vec<Object>) -> Result<ExitCode> {
    let docker = Arc::new(DockerRuntime::connect().await?);
    let identity = format!("drydock-up-{}", std::process::id());
    let store = SharedStore::in_memory();
    let mut applied = Vec::new();
    for object in objects {
        let key = object.key();
        store.execute(StoreRequest::Create { object }).with_context(|| format!("apply {key}"))?;
        applied.push(key);
    }
    println!(
        "applied {} objects from {}; engine running as {identity} (Ctrl-C to tear down)",
        applied.len(),
        args.file.display()
    );
    let printer = tokio::spawn(print_phases(store.clone()));
    let mut driver = Driver::builtin(&identity, store.clone(), docker.clone());
    driver.run(shutdown_signal()).await;

    println!("tearing down {} objects", applied.len());
    let started = Instant::now();
    for key in applied.iter().rev() {
        let deletable = key.kind == Namespace::KIND || !applied.iter().any(|k| Some(&k.name) == key.namespace.as_ref());
        if deletable && store.get(key).is_some() {
            let _ = store.execute(StoreRequest::Delete { key: key.clone(), options: DeleteOptions::default() });
        }
    }
    let all_gone = |s: &drydock_engine::store::Store| applied.iter().all(|k| s.get(k).is_none());
    let deadline = tokio::time::sleep(Duration::from_secs(args.teardown_timeout_secs));
    let stop = async {
        tokio::select! {
            () = deadline => {}
            () = shutdown_signal() => eprintln!("second signal: not waiting for teardown"),
        }
    };
    let clean = driver.run_until(stop, all_gone).await;
    tokio::time::sleep(Duration::from_millis(50)).await; // let the printer catch up
    printer.abort();
    report_leftovers(&store, docker.as_ref(), &identity, &applied, clean, started).await
}

async fn report_leftovers<R: Runtime>(
    store: &SharedStore,
    runtime: &R,
    identity: &str,
    applied: &[ObjectKey],
    clean: bool,
    started: Instant,
) -> Result<ExitCode> {
    let objects: Vec<ObjectKey> = applied.iter().filter(|k| store.get(k).is_some()).cloned().collect();
    let labels = BTreeMap::from([(names::LABEL_CREATOR.to_string(), identity.to_string())]);
    let all = match runtime.execute(RuntimeRequest::ListContainers { labels }).await {
        Ok(RuntimeReply::Containers(list)) => list,
        _ => Vec::new(),
    };
    // Persistent and retained containers stay on purpose.
    let (kept, containers): (Vec<_>, Vec<_>) =
        all.into_iter().partition(|c| c.labels.get(names::LABEL_RETAIN).is_some_and(|v| v == "true"));
    for c in &kept {
        println!("  kept (persistent or retained): {} ({})", c.name, &c.id[..12.min(c.id.len())]);
    }
    if clean && objects.is_empty() && containers.is_empty() {
        println!("torn down in {:.1} s: nothing left", started.elapsed().as_secs_f64());
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!("teardown incomplete after {:.1} s:", started.elapsed().as_secs_f64());
    for key in objects {
        eprintln!("  object still present: {key}");
    }
    for c in containers {
        eprintln!(
            "  runtime container not removed: {} ({}), remove it with: docker rm -f {}",
            c.name,
            &c.id[..12.min(c.id.len())],
            c.name
        );
    }
    Ok(ExitCode::from(1))
}

/// Print `Kind/ns/name  Phase` whenever an object's phase changes, and `deleted` when it goes.
async fn print_phases(store: Arc<SharedStore>) {
    let mut revisions = store.subscribe();
    let mut seen = 0;
    let mut phases: BTreeMap<ObjectKey, String> = BTreeMap::new();
    loop {
        let events = store.read(|s| s.events_since(seen).map(|e| e.cloned().collect::<Vec<_>>()).unwrap_or_default());
        for event in events {
            seen = event.resource_version();
            let key = event.object.key();
            if key.kind == drydock_engine::api::Lease::KIND {
                continue; // bookkeeping, not something the user applied
            }
            let line = if event.event == EventType::Deleted {
                phases.remove(&key);
                "deleted".to_string()
            } else {
                let status = &event.object.status;
                let mut phase = status.get("phase").and_then(Value::as_str).unwrap_or("Pending").to_string();
                if event.object.metadata.is_deleting() && phase != "Terminating" {
                    phase = format!("{phase} (deleting)");
                }
                if phases.get(&key) == Some(&phase) {
                    continue;
                }
                phases.insert(key.clone(), phase.clone());
                let mut detail =
                    status.get("message").and_then(Value::as_str).map(|m| format!("  {m}")).unwrap_or_default();
                if let Some(code) = status.get("exitCode").and_then(Value::as_i64) {
                    detail = format!("  exit code {code}{detail}");
                }
                format!("{phase}{detail}")
            };
            println!("  {:<40} {line}", key.to_string());
        }
        if revisions.changed().await.is_err() {
            return;
        }
    }
}

/// Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}
