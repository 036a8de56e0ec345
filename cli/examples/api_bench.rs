//! A small benchmark of `drydock daemon`'s API, for the figures a release note quotes: requests/s
//! for get and for create, watch latency from a write to the watcher, and the daemon's memory when
//! idle and after the load.
//!
//! It starts its own daemon (on a temporary state dir, so Docker must be running) and talks to it
//! through the kube client and the kubeconfig the daemon wrote, over TLS and HTTP/2, as any client
//! would:
//!
//! ```sh
//! cargo build --release -p drydock-cli
//! cargo run --release -p drydock-cli --example api_bench -- --seconds 5 --concurrency 8
//! ```
//!
//! *Caveats*: the machine is shared and noisy; run it a few times and quote medians. The creates
//! are of namespaces, which the engine also reconciles (it writes their status), so the create
//! figure includes the engine's share of the store.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use anyhow::{Context as _, Result, bail};
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, PostParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

struct Args {
    drydock: PathBuf,
    seconds: u64,
    concurrency: usize,
    watch_samples: usize,
}

fn parse_args() -> Result<Args> {
    let mut args =
        Args { drydock: PathBuf::from("target/release/drydock"), seconds: 5, concurrency: 8, watch_samples: 200 };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--drydock" => args.drydock = PathBuf::from(value),
            "--seconds" => args.seconds = value.parse()?,
            "--concurrency" => args.concurrency = value.parse()?,
            "--watch-samples" => args.watch_samples = value.parse()?,
            other => bail!("unknown flag {other}: use --drydock PATH, --seconds N, --concurrency N, --watch-samples N"),
        }
    }
    Ok(args)
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = parse_args()?;
    let state = std::env::temp_dir().join(format!("drydock-api-bench-{}", std::process::id()));
    let (mut daemon, kubeconfig) = start_daemon(&args.drydock, &state)?;
    let result = bench(&args, daemon.id(), &kubeconfig).await;
    let _ = Command::new("kill").args(["-TERM", &daemon.id().to_string()]).status();
    let _ = daemon.wait();
    let _ = std::fs::remove_dir_all(&state);
    result
}

async fn bench(args: &Args, pid: u32, kubeconfig: &PathBuf) -> Result<()> {
    let client = connect(kubeconfig).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    println!("daemon idle RSS: {:.1} MiB", rss_mib(pid)?);
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let run = std::process::id();
    namespaces.create(&PostParams::default(), &namespace(&format!("bench-{run}-get"), "get")).await?;

    let window = Duration::from_secs(args.seconds);
    let api = namespaces.clone();
    let gets = load(args.concurrency, window, move |_, _| {
        let api = api.clone();
        let name = format!("bench-{run}-get");
        async move { api.get(&name).await.map(|_| ()) }
    })
    .await?;
    report("get", &gets, window);

    let api = namespaces.clone();
    let creates = load(args.concurrency, window, move |worker, i| {
        let api = api.clone();
        let name = format!("bench-{run}-c{worker}-{i}");
        async move { api.create(&PostParams::default(), &namespace(&name, "create")).await.map(|_| ()) }
    })
    .await?;
    report("create", &creates, window);

    let latencies = watch_latency(&namespaces, run, args.watch_samples).await?;
    let (median, p99) = (percentile(&latencies, 0.5), percentile(&latencies, 0.99));
    println!(
        "watch latency, create sent -> event at the watcher: median {:.2} ms, p99 {:.2} ms ({} samples)",
        ms(median),
        ms(p99),
        latencies.len()
    );
    println!("daemon RSS after the load: {:.1} MiB", rss_mib(pid)?);
    let cleanup =
        namespaces.delete_collection(&DeleteParams::default(), &kube::api::ListParams::default().labels("bench")).await;
    if cleanup.is_err() {
        // Collection deletes are optional in the API; one by one instead.
        for ns in namespaces.list(&kube::api::ListParams::default().labels("bench")).await?.items {
            let _ = namespaces.delete(ns.metadata.name.as_deref().unwrap_or_default(), &DeleteParams::default()).await;
        }
    }
    Ok(())
}

fn namespace(name: &str, purpose: &str) -> Namespace {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": {"bench": purpose}}})).unwrap()
}

/// `concurrency` workers calling `op(worker, i)` back to back for `window`; every latency.
async fn load<F, Fut>(concurrency: usize, window: Duration, op: F) -> Result<Vec<Duration>>
where
    F: Fn(usize, u64) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = kube::Result<()>> + Send,
{
    let op = Arc::new(op);
    let failures = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + window;
    let mut workers = Vec::new();
    for worker in 0..concurrency {
        let (op, failures) = (op.clone(), failures.clone());
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut i = 0;
            while Instant::now() < deadline {
                let started = Instant::now();
                if op(worker, i).await.is_err() {
                    failures.fetch_add(1, Ordering::Relaxed);
                }
                latencies.push(started.elapsed());
                i += 1;
            }
            latencies
        }));
    }
    let mut all = Vec::new();
    for worker in workers {
        all.extend(worker.await?);
    }
    let failed = failures.load(Ordering::Relaxed);
    if failed > 0 {
        bail!("{failed} of {} requests failed", all.len());
    }
    Ok(all)
}

fn report(what: &str, latencies: &[Duration], window: Duration) {
    println!(
        "{what}: {:.0} requests/s ({} in {:.1} s); latency median {:.2} ms, p99 {:.2} ms",
        latencies.len() as f64 / window.as_secs_f64(),
        latencies.len(),
        window.as_secs_f64(),
        ms(percentile(latencies, 0.5)),
        ms(percentile(latencies, 0.99))
    );
}

/// One create at a time, each timed from just before it is sent to its ADDED event arriving on a
/// watch opened beforehand.
async fn watch_latency(api: &Api<Namespace>, run: u32, samples: usize) -> Result<Vec<Duration>> {
    let params = WatchParams::default().labels("bench=watch");
    let mut events = api.watch(&params, "0").await?.boxed();
    let mut latencies = Vec::with_capacity(samples);
    for i in 0..samples {
        let name = format!("bench-{run}-w{i}");
        let started = Instant::now();
        api.create(&PostParams::default(), &namespace(&name, "watch")).await?;
        loop {
            let event = tokio::time::timeout(Duration::from_secs(10), events.next())
                .await
                .context("no watch event within 10 s")?
                .context("the watch ended")??;
            if let WatchEvent::Added(ns) = event
                && ns.metadata.name.as_deref() == Some(name.as_str())
            {
                latencies.push(started.elapsed());
                break;
            }
        }
    }
    Ok(latencies)
}

fn percentile(latencies: &[Duration], q: f64) -> Duration {
    let mut sorted = latencies.to_vec();
    sorted.sort();
    sorted.get(((sorted.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn rss_mib(pid: u32) -> Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .context("no VmRSS in /proc/PID/status")?;
    Ok(kb / 1024.0)
}

fn start_daemon(drydock: &PathBuf, state: &PathBuf) -> Result<(Child, PathBuf)> {
    let mut child = Command::new(drydock)
        .args(["daemon", "--listen", "127.0.0.1:0", "--state-dir"])
        .arg(state)
        .env("DRYDOCK_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| {
            format!("start {} (build it first: cargo build --release -p drydock-cli)", drydock.display())
        })?;
    let stdout = child.stdout.take().context("no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    while let Some(line) = lines.next() {
        if let Some(path) = line?.strip_prefix("kubeconfig: ") {
            // Keep reading, so the daemon never writes into a closed pipe.
            std::thread::spawn(move || lines.for_each(drop));
            return Ok((child, PathBuf::from(path.trim())));
        }
    }
    bail!("the daemon exited before printing its kubeconfig")
}

async fn connect(path: &PathBuf) -> Result<Client> {
    let kubeconfig = Kubeconfig::read_from(path)?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    Ok(Client::try_from(config)?)
}
