//! `drydock daemon` as a user runs it: ready lines, real kubectl over HTTPS with the written
//! kubeconfig, the token required, one daemon per state dir, SIGTERM exits 0, and a restart
//! (found through XDG_STATE_HOME) keeps the token, the CA and the identity.
#![allow(clippy::unwrap_used)]

use drydock_adapters::testing::docker_or_skip;
use std::io::{BufRead as _, BufReader};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const KUBECTL: &str = "/usr/bin/kubectl";

/// kubectl, or `None` (with the reason printed) when it is absent and `CI` is not set.
fn kubectl_or_skip(test: &str) -> Option<&'static str> {
    if Path::new(KUBECTL).exists() {
        return Some(KUBECTL);
    }
    assert!(std::env::var_os("CI").is_none(), "{test}: CI is set and {KUBECTL} is required, but it is absent");
    eprintln!("SKIPPED {test}: no {KUBECTL}; set CI=true to make this a failure");
    None
}

/// A running daemon; killed on drop if the test did not stop it.
struct Daemon {
    child: Child,
    url: String,
    kubeconfig: PathBuf,
    stderr: mpsc::Receiver<String>,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Daemon {
    /// Start `drydock daemon ARGS` and wait for its two ready lines.
    fn start(args: &[&str], env: &[(&str, &Path)]) -> Daemon {
        let mut command = Command::new(env!("CARGO_BIN_EXE_drydock"));
        command.arg("daemon").args(args).env("NO_COLOR", "1").stdout(Stdio::piped()).stderr(Stdio::piped());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().unwrap();
        let stderr = collect(child.stderr.take().unwrap());
        let (lines_tx, lines) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = lines_tx.send(line);
            }
        });
        let mut daemon = Daemon { child, url: String::new(), kubeconfig: PathBuf::new(), stderr };
        let mut next = || lines.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|e| daemon_died(&mut daemon, e));
        let first = next();
        let second = next();
        daemon.url = first.strip_prefix("drydock daemon listening on ").unwrap_or_else(|| panic!("{first}")).into();
        daemon.kubeconfig = second.strip_prefix("kubeconfig: ").unwrap_or_else(|| panic!("{second}")).into();
        daemon
    }

    fn pid(&self) -> String {
        self.child.id().to_string()
    }

    fn stderr_so_far(&self) -> String {
        self.stderr.try_iter().collect()
    }
}

fn daemon_died(daemon: &mut Daemon, error: mpsc::RecvTimeoutError) -> String {
    let _ = daemon.child.kill();
    let _ = daemon.child.wait();
    std::thread::sleep(Duration::from_millis(100));
    panic!("no ready line ({error}); stderr:\n{}", daemon.stderr_so_far())
}

/// Read `stream` to its end on a thread; the text arrives in chunks on the channel.
fn collect(mut stream: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stream.read(&mut buf) {
            if n == 0 || tx.send(String::from_utf8_lossy(&buf[..n]).into_owned()).is_err() {
                break;
            }
        }
    });
    rx
}

fn wait_with_timeout(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

fn kubectl(kubectl: &str, kubeconfig: &Path, extra: &[&str]) -> Output {
    let mut command = Command::new(kubectl);
    command.arg("--kubeconfig").arg(kubeconfig).args(extra).args([
        "--request-timeout",
        "10s",
        "get",
        "--raw",
        "/healthz",
    ]);
    command.output().unwrap()
}

fn kubeconfig_field(path: &Path, pointer: &[&str]) -> String {
    let mut value: serde_yaml_ng::Value = serde_yaml_ng::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for key in pointer {
        value = match key.parse::<usize>() {
            Ok(i) => value[i].clone(),
            Err(_) => value[*key].clone(),
        };
    }
    value.as_str().unwrap().to_string()
}

#[tokio::test]
async fn daemon_serves_kubectl_refuses_a_second_daemon_and_exits_0_on_sigterm() {
    const TEST: &str = "daemon_serves_kubectl_refuses_a_second_daemon_and_exits_0_on_sigterm";
    let Some(kubectl_bin) = kubectl_or_skip(TEST) else { return };
    if docker_or_skip(TEST).await.is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let xdg = tmp.path().join("xdg");
    let state = xdg.join("drydock");
    let kubeconfig = tmp.path().join("kube/config");
    let state_arg = state.to_str().unwrap();
    let mut first = Daemon::start(&["--state-dir", state_arg, "--kubeconfig", kubeconfig.to_str().unwrap()], &[]);
    assert!(first.url.starts_with("https://127.0.0.1:"), "{}", first.url);
    assert_eq!(first.kubeconfig, kubeconfig);
    assert_eq!(std::fs::metadata(&kubeconfig).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(kubeconfig_field(&kubeconfig, &["clusters", "0", "cluster", "server"]), first.url);

    // Real kubectl, trusting the kubeconfig's CA, with the token.
    let out = kubectl(kubectl_bin, &kubeconfig, &[]);
    assert!(out.status.success(), "kubectl: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
    // With a wrong token: 401.
    let out = kubectl(kubectl_bin, &kubeconfig, &["--token", "not-the-token"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Unauthorized"), "{}", String::from_utf8_lossy(&out.stderr));

    // A second daemon on the same state dir is refused, with the first one's pid.
    let mut second = Command::new(env!("CARGO_BIN_EXE_drydock"))
        .args(["daemon", "--state-dir", state_arg])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let second_stderr = collect(second.stderr.take().unwrap());
    let status = wait_with_timeout(&mut second, Duration::from_secs(10)).unwrap_or_else(|| {
        let _ = second.kill();
        panic!("the second daemon ran beside the first")
    });
    let message: String = second_stderr.iter().collect();
    assert!(!status.success(), "{message}");
    let expected = format!(
        "another drydock daemon (pid {}) holds the state dir {}; stop it first or use --state-dir",
        first.pid(),
        state.canonicalize().unwrap().display()
    );
    assert!(message.contains(&expected), "{message}");

    // The token never shows in the logs.
    let token = kubeconfig_field(&kubeconfig, &["users", "0", "user", "token"]);
    let ca = kubeconfig_field(&kubeconfig, &["clusters", "0", "cluster", "certificate-authority-data"]);

    // SIGTERM: exit 0, promptly.
    let kill = Command::new("kill").args(["-TERM", &first.pid()]).status().unwrap();
    assert!(kill.success());
    let status = wait_with_timeout(&mut first.child, Duration::from_secs(15)).expect("exits within 15 s of SIGTERM");
    std::thread::sleep(Duration::from_millis(100));
    let logs = first.stderr_so_far();
    assert_eq!(status.code(), Some(0), "{logs}");
    assert!(logs.contains("SIGTERM"), "{logs}");
    assert!(!logs.contains(&token), "the token is in the logs");
    // Nothing was in flight: the stop is recorded, so the next start need not wait as after a crash.
    let record = state.join(drydock_daemon::state_dir::CLEAN_STOP_FILE);
    assert!(record.exists(), "no clean-stop record after SIGTERM: {logs}");
    let identity = logs.split("identity=").nth(1).and_then(|s| s.split_whitespace().next()).map(str::to_string);

    // A restart found through XDG_STATE_HOME, on another loopback address: same token, CA and
    // identity; a server certificate for the new address; kubectl works again.
    let restarted = Daemon::start(&["--listen", "127.0.0.2:0"], &[("XDG_STATE_HOME", &xdg)]);
    assert!(restarted.url.starts_with("https://127.0.0.2:"), "{}", restarted.url);
    assert_eq!(restarted.kubeconfig, state.canonicalize().unwrap().join("kubeconfig"));
    assert_eq!(kubeconfig_field(&restarted.kubeconfig, &["users", "0", "user", "token"]), token);
    assert_eq!(
        kubeconfig_field(&restarted.kubeconfig, &["clusters", "0", "cluster", "certificate-authority-data"]),
        ca
    );
    let out = kubectl(kubectl_bin, &restarted.kubeconfig, &[]);
    assert!(out.status.success(), "kubectl: {}", String::from_utf8_lossy(&out.stderr));
    assert!(!record.exists(), "the record is taken at start: a kill -9 of this life must not find it");
    std::thread::sleep(Duration::from_millis(100));
    let logs = restarted.stderr_so_far();
    let identity2 = logs.split("identity=").nth(1).and_then(|s| s.split_whitespace().next()).map(str::to_string);
    assert!(identity.is_some() && identity == identity2, "{identity:?} {identity2:?}");
}

#[test]
fn daemon_without_docker_fails_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_drydock"))
        .args(["daemon", "--state-dir"])
        .arg(tmp.path())
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("error: cannot reach Docker"), "{stderr}");
    assert!(stderr.contains("/nonexistent/docker.sock"), "{stderr}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("listening"), "never ready");
}

/// SIGTERM with a `kubectl get -w` open: the watch ends as shutdown starts, so the daemon exits at
/// once instead of waiting out its 10 s grace for the watch.
#[tokio::test]
async fn sigterm_ends_open_watches_at_once() {
    const TEST: &str = "sigterm_ends_open_watches_at_once";
    let Some(kubectl_bin) = kubectl_or_skip(TEST) else { return };
    if docker_or_skip(TEST).await.is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let mut daemon = Daemon::start(&["--state-dir", state.to_str().unwrap(), "--shutdown-grace-secs", "10"], &[]);
    // A namespace, so that the watch prints a row (on an empty list `get -w` prints nothing).
    let created = Command::new(kubectl_bin)
        .arg("--kubeconfig")
        .arg(&daemon.kubeconfig)
        .args(["create", "namespace", "watched"])
        .output()
        .unwrap();
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let mut watch = Command::new(kubectl_bin)
        .arg("--kubeconfig")
        .arg(&daemon.kubeconfig)
        .args(["get", "namespaces", "-w", "--request-timeout", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let watch_out = collect(watch.stdout.take().unwrap());
    let watch_err = collect(watch.stderr.take().unwrap());
    // kubectl lists first, then opens the watch. Its output comes in chunks as written: the
    // header may come alone, before the row.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut listed = String::new();
    while !listed.contains("watched") {
        let left = deadline.saturating_duration_since(Instant::now());
        match watch_out.recv_timeout(left) {
            Ok(chunk) => listed.push_str(&chunk),
            Err(_) => break,
        }
    }
    assert!(listed.contains("watched"), "kubectl listed {listed:?}: {}", daemon.stderr_so_far());
    std::thread::sleep(Duration::from_millis(1000));
    assert!(watch.try_wait().unwrap().is_none(), "the watch is open: {}", watch_err.try_iter().collect::<String>());

    let sent = Instant::now();
    let kill = Command::new("kill").args(["-TERM", &daemon.pid()]).status().unwrap();
    assert!(kill.success());
    let status = wait_with_timeout(&mut daemon.child, Duration::from_secs(15));
    let took = sent.elapsed();
    // The watch ended cleanly: kubectl's `get -w` returns 0 on its own.
    let watch_status = wait_with_timeout(&mut watch, Duration::from_secs(5));
    let _ = watch.kill();
    let _ = watch.wait();
    std::thread::sleep(Duration::from_millis(100));
    let logs = daemon.stderr_so_far();
    eprintln!("{TEST}: the daemon exited {:.3} s after SIGTERM with a watch open", took.as_secs_f64());
    let status = status.unwrap_or_else(|| panic!("still running 15 s after SIGTERM: {logs}"));
    assert_eq!(status.code(), Some(0), "{logs}");
    // At once, not after the grace (10 s); the margin is for a loaded machine.
    assert!(took < Duration::from_secs(3), "exited {took:?} after SIGTERM, waiting for the watch: {logs}");
    assert!(!logs.contains("still open after the grace period"), "{logs}");
    let kubectl_said: String = watch_err.try_iter().collect();
    assert_eq!(watch_status.and_then(|s| s.code()), Some(0), "kubectl get -w: {kubectl_said}");
}
