//! `drydock up -f FILE`: apply a manifest, run the engine against Docker in the foreground, show
//! each object's phase as it changes, and tear everything down on Ctrl-C or SIGTERM.

use anyhow::{Context as _, Result};
use clap::Args;
use drydock_adapters::{Components, DockerRuntime, Driver, Predecessor, Runtime, SharedStore};
use drydock_engine::api::{Namespace, Object, ObjectKey, Resource, names};
use drydock_engine::runtime::{RuntimeReply, RuntimeRequest};
use drydock_engine::store::{DeleteOptions, EventType, StoreError, StoreReply, StoreRequest};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct UpArgs {
    /// Manifest: a YAML (one or more documents) or JSON file holding objects, a list of objects,
    /// or `{items: [...]}`.
    #[arg(short = 'f', long = "file")]
    file: PathBuf,
    /// The project the objects belong to: its state is kept in `.drydock/NAME/` beside the
    /// manifest [default: the manifest's file name, so each manifest has its own state,
    /// e.g. `.drydock/demo.yaml/`]. Manifests run under one project share one state, and
    /// `drydock down -p NAME` in the manifest's folder tears down all of them.
    #[arg(short = 'p', long = "project", value_name = "NAME", value_parser = crate::state::project_name, conflicts_with = "state_dir")]
    project: Option<String>,
    /// Keep the state (a SQLite store of the objects, a lock and the engine's identity) in DIR
    /// instead of `.drydock/<project>/` beside the manifest. A re-run over the same state finds
    /// its objects and adopts their containers, even after a crash.
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Return once every object has settled (running, exited, ready or failed), leaving them
    /// running: exit 0 if none failed, 1 if any did or the wait timed out. `drydock down` with
    /// the same -f (and -p or --state-dir, if given) tears them down.
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
    /// The manifest `drydock up` ran: its state is in `.drydock/<file name>/` beside it (or
    /// `.drydock/NAME/` with -p). Only its own objects are torn down, not those of other
    /// manifests in the same folder.
    #[arg(short = 'f', long = "file", required_unless_present_any = ["state_dir", "project"])]
    file: Option<PathBuf>,
    /// The project `drydock up -p NAME` ran under: its state is in `.drydock/NAME/` beside the
    /// manifest given with -f, or in the current directory without -f.
    #[arg(short = 'p', long = "project", value_name = "NAME", value_parser = crate::state::project_name, conflicts_with = "state_dir")]
    project: Option<String>,
    /// The state dir `drydock up --state-dir DIR` used.
    #[arg(long, value_name = "DIR")]
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
    let state_dir =
        crate::state::resolve(Some(&args.file), args.project.as_deref(), args.state_dir.as_deref(), program)?;
    let down = down_command(program, Some(&args.file), args.project.as_deref(), args.state_dir.as_deref());
    // The store holds specs and env values: its files are the user's alone, as the daemon's are.
    drydock_daemon::state_dir::restrict_umask();
    block_on(up(args, state_dir, objects, components, &down))
}

/// `program` is the command line's name, for the commands it prints.
pub fn down(args: &DownArgs, components: &Components, program: &str) -> Result<ExitCode> {
    let state_dir =
        crate::state::resolve(args.file.as_deref(), args.project.as_deref(), args.state_dir.as_deref(), program)?;
    if !state_dir.exists() {
        let what = match (&args.file, &args.project) {
            (_, Some(project)) => format!("project {project}"),
            (Some(file), None) => file.display().to_string(),
            (None, None) => "that state dir".to_string(),
        };
        let mut message =
            format!("no drydock state for {what} at {}: nothing was brought up with it", state_dir.display());
        if args.state_dir.is_none() {
            let others = crate::state::projects_beside(&state_dir);
            if !others.is_empty() {
                message.push_str(&format!(
                    "; state dirs beside it: {} (an `up` with -p NAME needs the same -p here)",
                    others.join(", ")
                ));
            }
        }
        anyhow::bail!(message);
    }
    block_on(down_in(state_dir, Duration::from_secs(args.teardown_timeout_secs), components))
}

/// The `down` that tears down what an `up` with these options left.
fn down_command(program: &str, file: Option<&Path>, project: Option<&str>, state_dir: Option<&Path>) -> String {
    let mut command = format!("{program} down");
    if let Some(dir) = state_dir {
        return format!("{command} --state-dir {}", crate::shell_word(&dir.display().to_string()));
    }
    if let Some(file) = file {
        command.push_str(&format!(" -f {}", crate::shell_word(&file.display().to_string())));
    }
    if let Some(project) = project {
        command.push_str(&format!(" -p {project}"));
    }
    command
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
    down: &str,
) -> Result<ExitCode> {
    let docker = Arc::new(DockerRuntime::connect().await?);
    let state = crate::state::UpState::open(&state_dir, components)?;
    let store = state.store.clone();
    let since = store.read(|s| s.resource_version());
    let applied = match apply_all(&store, objects, &args.file, &state_dir, down) {
        Ok(applied) => applied,
        Err(error) => {
            // The engine never ran: no request of this run is in flight, so the next run need not
            // wait for any, unless an earlier one left some.
            if state.predecessor == Predecessor::StoppedCleanly
                && let Err(e) = state.record_clean_stop()
            {
                eprintln!("warning: {e:#}; the next run will wait for this one's requests as after a crash");
            }
            return Err(error);
        }
    };
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
        println!("left running; `{down}` tears them down");
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

/// Apply `objects` in order, after checking that every one can be: nothing is changed when an
/// object an earlier run left cannot become what the manifest says.
fn apply_all(
    store: &SharedStore,
    objects: Vec<Object>,
    file: &Path,
    state: &Path,
    down: &str,
) -> Result<Vec<ObjectKey>> {
    check_updates(store, &objects, file, state, down)?;
    let mut applied = Vec::new();
    for object in objects {
        let key = object.key();
        let outcome = apply(store, object).with_context(|| format!("apply {key}"))?;
        println!("  {:<40} {outcome}", key.to_string());
        applied.push(key);
    }
    Ok(applied)
}

/// Refuse, before anything changes, a manifest whose objects an earlier run left in the state
/// and cannot become what the manifest says (a logical or physical container's spec, an image's,
/// is immutable but for `stop`), or are still being deleted; naming each and what to do.
fn check_updates(store: &SharedStore, objects: &[Object], file: &Path, state: &Path, down: &str) -> Result<()> {
    let mut problems = Vec::new();
    let mut deleting = Vec::new();
    for object in objects {
        let Some(existing) = store.get(&object.key()) else { continue };
        if existing.metadata.is_deleting() {
            deleting.push(object.key().to_string());
            continue;
        }
        match store.dry_run(StoreRequest::Update { object: updated(&existing, object) }) {
            Ok(_) => {}
            Err(StoreError::Invalid { errors, .. }) => {
                let fields: Vec<String> = errors.iter().map(|e| format!("{}: {}", e.path, e.message)).collect();
                problems.push(format!("{} ({})", object.key(), fields.join("; ")));
            }
            Err(other) => return Err(other).with_context(|| format!("check {}", object.key())),
        }
    }
    if !deleting.is_empty() {
        anyhow::bail!(
            "{} still being deleted from an earlier run over {}; wait for that run's teardown (or run `{down}`) and run again",
            deleting.join(", "),
            state.display()
        );
    }
    if !problems.is_empty() {
        anyhow::bail!(
            "{}: cannot change what an earlier run left in {}: {}. Its objects still exist there (`up --wait` \
             leaves them running); run `{down}` first to delete them (persistent and retained containers are kept; \
             a persistent one is then reused or replaced by its lifecycle key), then run up again",
            file.display(),
            state.display(),
            problems.join(", ")
        );
    }
    Ok(())
}

/// `existing` with the spec, labels and annotations `object` gives it.
fn updated(existing: &Object, object: &Object) -> Object {
    let mut next = existing.clone();
    next.spec = object.spec.clone();
    next.metadata.labels = object.metadata.labels.clone();
    next.metadata.annotations = object.metadata.annotations.clone();
    next
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
    let reply = store.execute(StoreRequest::Update { object: updated(&existing, &object) })?;
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
