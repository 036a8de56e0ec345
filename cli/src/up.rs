//! `drydock up -f FILE`: apply a manifest, run the engine against Docker in the foreground, show
//! each object's phase as it changes, and tear everything down on Ctrl-C or SIGTERM.

use anyhow::{Context as _, Result};
use clap::Args;
use drydock_adapters::{Components, DockerRuntime, Driver, Predecessor, Runtime, SharedStore};
use drydock_engine::api::{Namespace, Object, ObjectKey, Resource, names};
use drydock_engine::runtime::{RuntimeReply, RuntimeRequest};
use drydock_engine::store::{DeleteOptions, EventType, StoreReply, StoreRequest};
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
    /// Where the objects are kept between runs (a SQLite store and a lock) [default: `.drydock`
    /// beside the manifest]. A re-run over the same state finds its objects and adopts their
    /// containers, even after a crash.
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Return once every object has settled (running, exited, ready or failed), leaving them
    /// running: exit 0 if none failed, 1 if any did or the wait timed out. `drydock down -f FILE`
    /// tears them down.
    #[arg(long)]
    wait: bool,
    /// How long `--wait` waits for the objects to settle.
    #[arg(long, default_value_t = 300, value_name = "SECS")]
    wait_timeout_secs: u64,
    /// How long teardown may take before what is left is reported. After a run that was killed
    /// (no clean stop recorded), deleted containers are confirmed gone only 30 s after start, in
    /// case a create the killed run sent still lands. The report then waits at most 30 s more for
    /// the runtime.
    #[arg(long, default_value_t = 60, value_name = "SECS")]
    teardown_timeout_secs: u64,
}

#[derive(Args)]
pub struct DownArgs {
    /// The manifest `drydock up` ran (its state dir is found beside it).
    #[arg(short = 'f', long = "file", required_unless_present = "state_dir")]
    file: Option<PathBuf>,
    /// The state dir `drydock up --state-dir` used.
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// How long teardown may take before what is left is reported. After a run that was killed
    /// (no clean stop recorded), deleted containers are confirmed gone only 30 s after start, in
    /// case a create the killed run sent still lands. The report then waits at most 30 s more for
    /// the runtime.
    #[arg(long, default_value_t = 60, value_name = "SECS")]
    teardown_timeout_secs: u64,
}

/// `program` is the command line's name, for the commands it prints.
pub fn run(args: &UpArgs, components: &Components, program: &str) -> Result<ExitCode> {
    // Validate before touching Docker or the state: a bad manifest creates nothing.
    let objects = crate::manifest::load(&args.file, components.registry())?;
    let state_dir = args.state_dir.clone().unwrap_or_else(|| crate::state::beside(&args.file));
    // The store holds specs and env values: its files are the user's alone, as the daemon's are.
    drydock_daemon::state_dir::restrict_umask();
    block_on(up(args, state_dir, objects, components, program))
}

pub fn down(args: &DownArgs, components: &Components) -> Result<ExitCode> {
    let state_dir = match (&args.state_dir, &args.file) {
        (Some(dir), _) => dir.clone(),
        (None, Some(file)) => crate::state::beside(file),
        (None, None) => anyhow::bail!("give -f FILE or --state-dir DIR"),
    };
    block_on(down_in(state_dir, Duration::from_secs(args.teardown_timeout_secs), components))
}

fn block_on(future: impl std::future::Future<Output = Result<ExitCode>>) -> Result<ExitCode> {
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("start the tokio runtime")?;
    runtime.block_on(future)
}

async fn up(
    args: &UpArgs,
    state_dir: PathBuf,
    objects: Vec<Object>,
    components: &Components,
    program: &str,
) -> Result<ExitCode> {
    let docker = Arc::new(DockerRuntime::connect().await?);
    let state = crate::state::UpState::open(&state_dir, components)?;
    let store = state.store.clone();
    let since = store.read(|s| s.resource_version());
    let mut applied = Vec::new();
    for object in objects {
        let key = object.key();
        let outcome = apply(&store, object).with_context(|| format!("apply {key}"))?;
        println!("  {:<40} {outcome}", key.to_string());
        applied.push(key);
    }
    println!(
        "applied {} objects from {} (state in {}); engine running as {}{}",
        applied.len(),
        args.file.display(),
        state_dir.display(),
        state.identity,
        if args.wait { "" } else { " (Ctrl-C to tear down)" }
    );
    let printer = tokio::spawn(print_phases(store.clone(), since, true));
    let mut driver =
        Driver::with_components(&state.identity, store.clone(), docker.clone(), state.predecessor, components);
    if args.wait {
        let code = wait_settled(&mut driver, &store, &applied, Duration::from_secs(args.wait_timeout_secs)).await;
        tokio::time::sleep(Duration::from_millis(50)).await; // let the printer catch up
        printer.abort();
        stop(driver, &state).await;
        println!("left running; `{program} down -f {}` tears them down", args.file.display());
        return Ok(code);
    }
    driver.run(shutdown_signal()).await;
    printer.abort();
    teardown(driver, &state, docker.as_ref(), applied, Duration::from_secs(args.teardown_timeout_secs)).await
}

/// Stop the engine, letting its runtime requests finish, and record a clean stop if they did.
async fn stop<R: Runtime>(driver: Driver<R>, state: &crate::state::UpState) {
    if driver.stop(STOP_GRACE).await
        && let Err(e) = state.record_clean_stop()
    {
        eprintln!("warning: {e:#}; the next run will wait for this one's requests as after a crash");
    }
}

/// How long teardown's last look at the runtime (removing an earlier run's leftovers, listing
/// what is left) may take: a runtime that stopped answering must not hold `down` past its timeout
/// by more than this.
const REPORT_LIMIT: Duration = Duration::from_secs(30);

/// How long a stop waits for runtime requests in flight.
const STOP_GRACE: Duration = Duration::from_secs(10);

async fn down_in(state_dir: PathBuf, timeout: Duration, components: &Components) -> Result<ExitCode> {
    if !state_dir.exists() {
        anyhow::bail!("no drydock state at {}: nothing was brought up there", state_dir.display());
    }
    let docker = Arc::new(DockerRuntime::connect().await?);
    let state = crate::state::UpState::open(&state_dir, components)?;
    let store = state.store.clone();
    // What a user applied: every object but the engine's own leases, namespaces first as applied.
    let mut applied: Vec<ObjectKey> = store.read(|s| {
        let mut keys: Vec<ObjectKey> =
            s.list(None, None).iter().map(|o| o.key()).filter(|k| k.kind != drydock_engine::api::Lease::KIND).collect();
        keys.sort_by_key(|k| k.namespace.is_some());
        keys
    });
    applied.dedup();
    let driver = Driver::with_components(&state.identity, store.clone(), docker.clone(), state.predecessor, components);
    teardown(driver, &state, docker.as_ref(), applied, timeout).await
}

/// Create `object`, or bring the stored one's spec, labels and annotations in line with it.
fn apply(store: &SharedStore, object: Object) -> Result<&'static str> {
    let key = object.key();
    let Some(existing) = store.get(&key) else {
        store.execute(StoreRequest::Create { object })?;
        return Ok("created");
    };
    if existing.metadata.is_deleting() {
        anyhow::bail!("{key} is still being deleted from an earlier run; wait for it to go and run again");
    }
    let mut next = (*existing).clone();
    next.spec = object.spec;
    next.metadata.labels = object.metadata.labels;
    next.metadata.annotations = object.metadata.annotations;
    let reply = store.execute(StoreRequest::Update { object: next })?;
    let StoreReply::Object(stored) = reply else { anyhow::bail!("the store answered an update with a list") };
    Ok(if stored.metadata.resource_version == existing.metadata.resource_version { "unchanged" } else { "configured" })
}

/// Run until every applied object has settled; 0 if none failed, 1 if any did or time ran out.
async fn wait_settled<R: Runtime>(
    driver: &mut Driver<R>,
    store: &SharedStore,
    applied: &[ObjectKey],
    timeout: Duration,
) -> ExitCode {
    let stop = async {
        tokio::select! {
            () = tokio::time::sleep(timeout) => {}
            () = shutdown_signal() => {}
        }
    };
    let registry = store.read(|s| s.registry().clone());
    let settled = |o: &Object| phase::settled(o, &registry);
    let all_settled = driver.run_until(stop, |s| applied.iter().all(|k| s.get(k).is_none_or(|o| settled(o)))).await;
    let objects: Vec<Arc<Object>> = applied.iter().filter_map(|k| store.get(k)).collect();
    let failed: Vec<&Arc<Object>> = objects.iter().filter(|o| phase::of(o) == "Failed").collect();
    for object in &failed {
        let message = object.status.get("message").and_then(Value::as_str).unwrap_or("no message");
        eprintln!("  failed: {}: {message}", object.key());
    }
    if !all_settled {
        for object in objects.iter().filter(|o| !settled(o)) {
            eprintln!("  not settled after {} s: {} ({})", timeout.as_secs(), object.key(), phase::of(object));
        }
        return ExitCode::from(1);
    }
    if failed.is_empty() {
        println!("all {} objects settled; none failed", objects.len());
        ExitCode::SUCCESS
    } else {
        eprintln!("{} of {} objects failed", failed.len(), objects.len());
        ExitCode::from(1)
    }
}

/// What `--wait` waits for.
mod phase {
    use drydock_engine::api::Object;
    use drydock_engine::store::Registry;
    use serde_json::Value;

    pub fn of(object: &Object) -> &str {
        object.status.get("phase").and_then(Value::as_str).unwrap_or("Pending")
    }

    /// Nothing more will happen without a change, by the kind's own rule
    /// (`KindInfo::with_settled`: running, ended or failed for good, for the built-in kinds);
    /// at once for a kind without one.
    pub fn settled(object: &Object, registry: &Registry) -> bool {
        registry.get(&object.kind).and_then(|info| info.settled(object)).unwrap_or(true)
    }
}

/// Delete what was applied (dependents before their namespace), run the engine until it is gone,
/// and report anything left behind.
async fn teardown<R: Runtime>(
    mut driver: Driver<R>,
    state: &crate::state::UpState,
    runtime: &R,
    applied: Vec<ObjectKey>,
    timeout: Duration,
) -> Result<ExitCode> {
    let (store, identity) = (&state.store, state.identity.as_str());
    println!("tearing down {} objects", applied.len());
    if state.predecessor == Predecessor::MayHaveCrashed {
        println!(
            "  the last run over {} did not stop cleanly: deletions are confirmed once requests it may have left in flight can no longer land (30 s after start)",
            state.path().display()
        );
    }
    let started = Instant::now();
    let since = store.read(|s| s.resource_version());
    for key in applied.iter().rev() {
        let deletable = key.kind == Namespace::KIND || !applied.iter().any(|k| Some(&k.name) == key.namespace.as_ref());
        if deletable && store.get(key).is_some() {
            let _ = store.execute(StoreRequest::Delete { key: key.clone(), options: DeleteOptions::default() });
        }
    }
    let printer = tokio::spawn(print_phases(store.clone(), since, false));
    let stop = async {
        tokio::select! {
            () = tokio::time::sleep(timeout) => {}
            () = shutdown_signal() => eprintln!("second signal: not waiting for teardown"),
        }
    };
    let clean = driver.run_until(stop, |s| applied.iter().all(|k| s.get(k).is_none())).await;
    tokio::time::sleep(Duration::from_millis(50)).await; // let the printer catch up
    printer.abort();
    self::stop(driver, state).await;
    report_leftovers(store, runtime, identity, &applied, clean, started).await
}

/// What the runtime holds that `identity` created.
async fn list_created<R: Runtime>(runtime: &R, identity: &str) -> Vec<drydock_engine::runtime::ContainerInfo> {
    let labels = BTreeMap::from([(names::LABEL_CREATOR.to_string(), identity.to_string())]);
    match runtime.execute(RuntimeRequest::ListContainers { labels }).await {
        Ok(RuntimeReply::Containers(list)) => list,
        _ => Vec::new(),
    }
}

/// Remove what an earlier run left whose object the store no longer has (a crash before the
/// container was recorded, a deleted state dir's objects): the engine's harvester rule, run now
/// rather than at the harvester's next pass.
async fn harvest<R: Runtime>(store: &SharedStore, runtime: &R, identity: &str) {
    let listed = list_created(runtime, identity).await;
    let objects = store.read(|s| s.list(None, None));
    for leftover in drydock_engine::controllers::harvest::leftovers(identity, &listed, &objects) {
        let remove = RuntimeRequest::RemoveContainer { id: leftover.id.clone(), force: true };
        match runtime.execute(remove).await {
            Ok(_) => println!("  removed a leftover of an earlier run: {} ({})", leftover.name, short_id(&leftover.id)),
            Err(e) => eprintln!("  cannot remove leftover {} ({}): {e}", leftover.name, short_id(&leftover.id)),
        }
    }
}

fn short_id(id: &str) -> &str {
    &id[..12.min(id.len())]
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
    let ask_runtime = async {
        harvest(store, runtime, identity).await;
        list_created(runtime, identity).await
    };
    let Ok(all) = tokio::time::timeout(REPORT_LIMIT, ask_runtime).await else {
        eprintln!(
            "teardown incomplete after {:.1} s: the runtime did not answer within {} s when asked what is left",
            started.elapsed().as_secs_f64(),
            REPORT_LIMIT.as_secs()
        );
        for key in objects {
            eprintln!("  object still present: {key}");
        }
        eprintln!(
            "  containers this run created may remain: docker ps -a --filter label={}={identity}",
            names::LABEL_CREATOR
        );
        return Ok(ExitCode::from(1));
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

/// Print `Kind/ns/name  Phase` whenever an object's phase changes after `since`, and `deleted`
/// when it goes; with `show_current`, first each object's phase as it is now (a re-run's objects
/// may already be running and change no more).
async fn print_phases(store: Arc<SharedStore>, since: u64, show_current: bool) {
    let mut revisions = store.subscribe();
    let mut seen = since;
    let mut phases: BTreeMap<ObjectKey, String> = BTreeMap::new();
    if show_current {
        for object in store.read(|s| s.list(None, None)) {
            show_phase(&object, &mut phases);
        }
    }
    loop {
        // Compacted past what was seen (a long pause): carry on from now.
        let events = store.read(|s| match s.events_since(seen) {
            Ok(events) => events.cloned().collect::<Vec<_>>(),
            Err(_) => {
                seen = s.resource_version();
                Vec::new()
            }
        });
        for event in events {
            seen = event.resource_version();
            if event.event != EventType::Deleted {
                show_phase(&event.object, &mut phases);
            } else if event.object.kind != drydock_engine::api::Lease::KIND {
                phases.remove(&event.object.key());
                println!("  {:<40} deleted", event.object.key().to_string());
            }
        }
        if revisions.changed().await.is_err() {
            return;
        }
    }
}

/// Print `object`'s phase if it is not the one last printed for it.
fn show_phase(object: &Object, phases: &mut BTreeMap<ObjectKey, String>) {
    let key = object.key();
    if key.kind == drydock_engine::api::Lease::KIND {
        return; // bookkeeping, not something the user applied
    }
    let status = &object.status;
    let mut phase = status.get("phase").and_then(Value::as_str).unwrap_or("Pending").to_string();
    if object.metadata.is_deleting() && phase != "Terminating" {
        phase = format!("{phase} (deleting)");
    }
    if phases.get(&key) == Some(&phase) {
        return;
    }
    phases.insert(key.clone(), phase.clone());
    let mut detail = status.get("message").and_then(Value::as_str).map(|m| format!("  {m}")).unwrap_or_default();
    if let Some(code) = status.get("exitCode").and_then(Value::as_i64) {
        detail = format!("  exit code {code}{detail}");
    }
    println!("  {:<40} {phase}{detail}", key.to_string());
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

#[cfg(test)]
mod tests {
    use super::*;
    use drydock_engine::runtime::RuntimeResult;

    /// A runtime that never answers, as a wedged Docker daemon does.
    struct Wedged;

    impl Runtime for Wedged {
        fn execute(&self, _request: RuntimeRequest) -> impl Future<Output = RuntimeResult> + Send {
            std::future::pending()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_leftover_report_gives_up_on_a_runtime_that_does_not_answer() {
        let store = SharedStore::in_memory();
        let asked = tokio::time::Instant::now();
        let code =
            report_leftovers(&store, &Wedged, "test", &[], true, Instant::now()).await.expect("a report, not an error");
        assert_eq!(code, ExitCode::from(1), "a runtime that cannot say what is left is not a clean teardown");
        assert_eq!(asked.elapsed(), REPORT_LIMIT, "waited for the runtime exactly as long as the limit");
    }
}
