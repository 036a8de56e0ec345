//! Helpers for tests that need a real Docker daemon: an offline runnable image, a local registry
//! to pull from, and the rule for when a missing daemon is a skip and when it is a failure.
//!
//! The CI machines have a Docker engine but no registry and no images. [`ensure_test_image`]
//! builds one offline: a root filesystem holding Debian's statically linked `busybox` (package
//! `busybox-static`) with its applets linked in, imported with `docker import`.
//!
//! [`ensure_test_registry`] runs Debian's `docker-registry` (the CNCF distribution registry,
//! package `docker-registry`) on [`TEST_REGISTRY`], loopback only, and pushes the test image
//! there; [`registry_push`] publishes fresh content under a tag. Docker allows plain HTTP to
//! registries on 127.0.0.0/8 without any daemon configuration.
//!
//! Compiled only with the crate's `testing` feature, which only tests enable.

use crate::docker::DockerRuntime;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The offline test image: busybox, default command `sleep 3600`.
pub const TEST_IMAGE: &str = "drydock-test/busybox:latest";

const APPLETS: &[&str] = &["sh", "sleep", "true", "false", "echo", "cat", "ls", "ps", "env", "id", "kill", "wget"];

/// A connected Docker runtime, or `None` (with the reason printed) when there is no daemon and
/// `CI` is not set. In CI a missing daemon panics: it must never pass silently.
pub async fn docker_or_skip(test: &str) -> Option<DockerRuntime> {
    match DockerRuntime::connect().await {
        Ok(runtime) => Some(runtime),
        Err(error) if std::env::var_os("CI").is_some() => {
            panic!("{test}: CI is set and Docker is required, but: {error}")
        }
        Err(error) => {
            eprintln!("SKIPPED {test}: no Docker daemon ({error}); set CI=true to make this a failure");
            None
        }
    }
}

/// The names of the Docker containers (running or not, or running only) that start with
/// `prefix`, as `docker ps` lists them.
pub fn docker_names_with(prefix: &str) -> Vec<String> {
    docker_ps(&["ps", "-a", "--format", "{{.Names}}"], prefix)
}

/// The names of the running Docker containers that start with `prefix`.
pub fn running_names_with(prefix: &str) -> Vec<String> {
    docker_ps(&["ps", "--format", "{{.Names}}"], prefix)
}

fn docker_ps(args: &[&str], prefix: &str) -> Vec<String> {
    names_listed(args, prefix).unwrap_or_else(|error| panic!("{error}"))
}

/// The names `docker args...` prints, one per line, that start with `prefix`.
fn names_listed(args: &[&str], prefix: &str) -> Result<Vec<String>, String> {
    let out = docker_bounded(args)?;
    Ok(String::from_utf8_lossy(&out.stdout).lines().filter(|n| n.starts_with(prefix)).map(str::to_string).collect())
}

/// How long one `docker` command of a test's checks or cleanup may take.
const DOCKER_CLI_LIMIT: Duration = Duration::from_secs(60);

/// Run `docker args...` and wait at most [`DOCKER_CLI_LIMIT`] for it: the output, or why there is
/// none. A wedged daemon (seen on Docker 20.10: `docker rm -f` of a just-killed container hanging
/// until `dockerd` restarts) then fails the test that met it, instead of hanging its cleanup and
/// with it the whole test run.
pub fn docker_bounded(args: &[&str]) -> Result<std::process::Output, String> {
    run_bounded("docker", args, DOCKER_CLI_LIMIT).map_err(|error| {
        if error.timed_out {
            format!(
                "{error}: the Docker daemon is not answering (wedged? `docker info` tells; restarting dockerd mends it)"
            )
        } else {
            error.to_string()
        }
    })
}

/// Why [`run_bounded`] has no output.
#[derive(Debug)]
struct Unfinished {
    command: String,
    why: String,
    timed_out: bool,
}

impl std::fmt::Display for Unfinished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}` {}", self.command, self.why)
    }
}

/// Run `program args...`, killing it if it has not finished within `limit`.
fn run_bounded(program: &str, args: &[&str], limit: Duration) -> Result<std::process::Output, Unfinished> {
    let command = format!("{program} {}", args.join(" "));
    let unfinished = |why: String, timed_out: bool| Unfinished { command: command.clone(), why, timed_out };
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| unfinished(format!("does not run: {error}"), false))?;
    // Drain the pipes on their own threads so that a chatty command cannot block on a full pipe.
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let started = std::time::Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < limit => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(unfinished(format!("did not finish in {:.1} s", limit.as_secs_f64()), true));
            }
            Err(error) => return Err(unfinished(format!("cannot be waited for: {error}"), false)),
        }
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    Ok(std::process::Output { status, stdout, stderr })
}

/// Read `pipe` to its end on a thread of its own.
fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

/// `docker rm -f` every container whose name starts with `prefix` (what a failed test left). A
/// command that does not finish in time is reported on stderr and left behind.
pub fn remove_containers_with(prefix: &str) {
    let names = names_listed(&["ps", "-a", "--format", "{{.Names}}"], prefix).unwrap_or_else(|error| {
        eprintln!("cleanup of {prefix}*: {error}");
        Vec::new()
    });
    for name in names {
        if let Err(error) = docker_bounded(&["rm", "-f", &name]) {
            eprintln!("cleanup: {error}");
        }
    }
}

/// Removes the containers whose names start with its prefix when it is dropped: a test's
/// cleanup, however the test ends.
pub struct RemoveOnDrop(pub String);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        remove_containers_with(&self.0);
    }
}

/// Whether `kubectl` runs: `false` (with the reason printed) when it does not and `CI` is not set;
/// in CI its absence panics.
pub fn kubectl_or_skip(test: &str) -> bool {
    match Command::new("kubectl").args(["version", "--client"]).output() {
        Ok(out) if out.status.success() => true,
        _ if std::env::var_os("CI").is_some() => {
            panic!("{test}: CI is set and kubectl is required, but it does not run")
        }
        _ => {
            eprintln!("SKIPPED {test}: no kubectl on PATH; set CI=true to make this a failure");
            false
        }
    }
}

/// Make sure [`TEST_IMAGE`] exists, importing it if needed. Safe to call from parallel tests.
pub fn ensure_test_image() -> Result<(), String> {
    static IMPORTED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    IMPORTED.get_or_init(import_test_image).clone()
}

fn import_test_image() -> Result<(), String> {
    if docker(&["image", "inspect", TEST_IMAGE]).is_ok() {
        return Ok(());
    }
    import_busybox(TEST_IMAGE, &[])
}

/// Import a fresh busybox root filesystem as `reference`, with `sleep 3600` as its command and
/// `changes` (Dockerfile instructions) on top.
fn import_busybox(reference: &str, changes: &[String]) -> Result<(), String> {
    static DIRS: AtomicU64 = AtomicU64::new(0);
    let busybox = ["/bin/busybox", "/usr/bin/busybox"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .ok_or("no busybox binary: install Debian's busybox-static (apt-get install busybox-static)")?;
    let n = DIRS.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("drydock-rootfs-{}-{n}", std::process::id()));
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).map_err(|e| format!("create {}: {e}", bin.display()))?;
    std::fs::copy(&busybox, bin.join("busybox")).map_err(|e| format!("copy {}: {e}", busybox.display()))?;
    for applet in APPLETS {
        let link = bin.join(applet);
        if !link.exists() {
            std::os::unix::fs::symlink("busybox", &link).map_err(|e| format!("link {}: {e}", link.display()))?;
        }
    }
    let result = import(&dir, reference, changes);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn import(rootfs: &Path, reference: &str, changes: &[String]) -> Result<(), String> {
    let tar = Command::new("tar")
        .args(["-C"])
        .arg(rootfs)
        // A reproducible archive (GNU tar): every import shares one layer, so published test
        // content costs the registry and the daemon a config and a manifest, not a layer.
        .args(["--sort=name", "--mtime=@0", "--owner=0", "--group=0", "--numeric-owner", "-cf", "-", "."])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("run tar: {e}"))?;
    let stdout = tar.stdout.ok_or("tar has no stdout")?;
    let mut args = vec!["import", "-c", r#"CMD ["sleep", "3600"]"#];
    for change in changes {
        args.extend(["-c", change]);
    }
    let output = Command::new("docker")
        .args(args)
        .args(["-", reference])
        .stdin(stdout)
        .output()
        .map_err(|e| format!("run docker import: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!("docker import failed: {}", String::from_utf8_lossy(&output.stderr).trim()))
    }
}

fn docker(args: &[&str]) -> Result<String, String> {
    let output = Command::new("docker").args(args).output().map_err(|e| format!("run docker: {e}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

/// Where [`ensure_test_registry`] serves: loopback only, a fixed port so that every test process
/// (and the next run) finds the one already listening.
pub const TEST_REGISTRY: &str = "127.0.0.1:5487";

/// [`TEST_IMAGE`] as [`ensure_test_registry`] pushes it.
pub fn test_registry_image() -> String {
    format!("{TEST_REGISTRY}/{TEST_IMAGE}")
}

/// Make sure a registry answers on [`TEST_REGISTRY`] and holds [`TEST_IMAGE`] as
/// [`test_registry_image`], starting Debian's `docker-registry` if nothing listens there yet.
/// Safe to call from parallel tests and processes.
///
/// A registry this process starts lives as long as the process: it runs under a small shell that
/// holds the read end of a pipe whose write end only this process holds, so when the process
/// ends (passes, fails, panics or is killed) the shell stops the registry, removes the local
/// images of the registry's references (`127.0.0.1:5487/...`: the test image's tag and what tests
/// pulled) and deletes the registry's config and storage (`$TMPDIR/drydock-registry-<port>-<pid>/`).
/// A registry some other process started is used as it is and left to that process.
///
/// *Caveats*: a process that uses another's registry loses it when that one ends (`cargo test`
/// runs its test binaries one after the other, so that does not happen there).
pub fn ensure_test_registry() -> Result<(), String> {
    static READY: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    READY.get_or_init(start_registry_and_push_test_image).clone()
}

fn start_registry_and_push_test_image() -> Result<(), String> {
    ensure_test_image()?;
    match registry_answers()? {
        true => {}
        false => start_registry()?,
    }
    let remote = test_registry_image();
    docker(&["tag", TEST_IMAGE, &remote]).map_err(|e| format!("docker tag {TEST_IMAGE} {remote}: {e}"))?;
    docker(&["push", &remote]).map_err(|e| format!("docker push {remote}: {e}"))?;
    Ok(())
}

/// Whether the registry API answers on [`TEST_REGISTRY`]; an error if something else listens there.
fn registry_answers() -> Result<bool, String> {
    let addr: SocketAddr = TEST_REGISTRY.parse().map_err(|e| format!("{TEST_REGISTRY}: {e}"))?;
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) else { return Ok(false) };
    let request = format!("GET /v2/ HTTP/1.0\r\nHost: {TEST_REGISTRY}\r\n\r\n");
    let mut response = String::new();
    let answered = stream.set_read_timeout(Some(Duration::from_secs(5))).is_ok()
        && stream.write_all(request.as_bytes()).is_ok()
        && stream.read_to_string(&mut response).is_ok();
    if !answered || response.is_empty() {
        return Ok(false); // still starting
    }
    let head = response.to_ascii_lowercase();
    if head.starts_with("http/1.") && head.contains("docker-distribution-api-version: registry/2.0") {
        Ok(true)
    } else {
        let first = response.lines().next().unwrap_or_default();
        Err(format!("{TEST_REGISTRY} is taken by something that is not a registry (it answered {first:?})"))
    }
}

/// What the shell a registry runs under does: start it, and when its stdin closes (the test
/// process ended) stop it and remove what it left: the local images of its references and its
/// directory. A registry that exits by itself (its port taken) ends the shell, leaving the
/// directory, with the log, to the caller. `$1` the binary, `$2` the config, `$3` the directory,
/// `$4` the registry's address.
const REGISTRY_SUPERVISOR: &str = r#"
exec 3<&0
"$1" serve "$2" </dev/null >"$3/log" 2>&1 &
registry=$!
echo "$registry" >"$3/pid"
{ while read -r _ <&3; do :; done; : >"$3/stopping"; kill "$registry" 2>/dev/null; } &
reader=$!
wait "$registry"
if [ -e "$3/stopping" ]; then
  docker images --format '{{.Repository}} {{.Tag}} {{.ID}}' | while read -r repo tag id; do
    case "$repo" in
      "$4"/*) if [ "$tag" = "<none>" ]; then docker rmi "$id"; else docker rmi "$repo:$tag"; fi ;;
    esac
  done >/dev/null 2>&1
  rm -rf "$3"
else
  kill "$reader" 2>/dev/null
fi
"#;

/// The write ends of the pipes the supervisors of the registries this process started read:
/// never closed but by the process's end, which is what stops them.
static REGISTRY_LIFELINES: std::sync::Mutex<Vec<std::process::ChildStdin>> = std::sync::Mutex::new(Vec::new());

fn start_registry() -> Result<(), String> {
    let binary = ["/usr/bin/docker-registry", "/usr/local/bin/docker-registry"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .ok_or("no docker-registry binary: install Debian's docker-registry (apt-get install docker-registry)")?;
    let port = TEST_REGISTRY.rsplit(':').next().unwrap_or_default();
    let dir = std::env::temp_dir().join(format!("drydock-registry-{port}-{}", std::process::id()));
    let storage = dir.join("storage");
    std::fs::create_dir_all(&storage).map_err(|e| format!("create {}: {e}", storage.display()))?;
    let config = dir.join("config.yml");
    // Loopback only. Deletes allowed; a fixed secret keeps the startup warning away. (Each push
    // logs a few routine "blob unknown" errors: its existence checks.)
    let yaml = format!(
        "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {TEST_REGISTRY}\n  secret: drydock-test-registry\n",
        storage.display()
    );
    std::fs::write(&config, yaml).map_err(|e| format!("write {}: {e}", config.display()))?;
    let log_path = dir.join("log");
    // Its own process group: a Ctrl-C of the tests reaches the tests, whose end then stops it,
    // not the supervisor before it could clean up.
    let mut supervisor = std::os::unix::process::CommandExt::process_group(
        Command::new("sh")
            .args(["-c", REGISTRY_SUPERVISOR, "drydock-test-registry"])
            .arg(&binary)
            .arg(&config)
            .arg(&dir)
            .arg(TEST_REGISTRY)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
        0,
    )
    .spawn()
    .map_err(|e| format!("run {} under sh: {e}", binary.display()))?;
    match (supervisor.stdin.take(), REGISTRY_LIFELINES.lock()) {
        (Some(lifeline), Ok(mut lifelines)) => lifelines.push(lifeline),
        // Without its lifeline the supervisor stops the registry at once.
        _ => return Err("cannot keep the registry's supervisor running".into()),
    }
    for _ in 0..100 {
        if registry_answers()? {
            return Ok(());
        }
        if let Ok(Some(status)) = supervisor.try_wait() {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            let _ = std::fs::remove_dir_all(&dir);
            // Another process may have started one first: then that one answers.
            std::thread::sleep(Duration::from_millis(200));
            if registry_answers()? {
                return Ok(());
            }
            return Err(format!("docker-registry exited ({status}): {}", log.trim()));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(format!("docker-registry did not answer on {TEST_REGISTRY} within 10 s (log: {})", log_path.display()))
}

/// Content published in the test registry: its manifest digest, and the id its image has once
/// pulled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Published {
    pub digest: String,
    pub id: String,
}

/// Publish new, runnable content (busybox, `sleep 3600`) in the test registry under every one of
/// `references` (`127.0.0.1:5487/name:tag`; a tag there moves to the new content), as
/// `docker import && docker push` would, leaving the local image store as it was: a local tag
/// the push had to move is put back, and the new image is not kept locally.
pub fn registry_push(references: &[&str]) -> Result<Published, String> {
    static CONTENT: AtomicU64 = AtomicU64::new(0);
    ensure_test_registry()?;
    let (first, _) = references.split_first().ok_or("registry_push: no reference")?;
    let before: Vec<Option<String>> = references.iter().map(|r| local_image_id(r)).collect();
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or_default();
    let unique = format!("{}-{}-{nanos}", std::process::id(), CONTENT.fetch_add(1, Ordering::Relaxed));
    import_busybox(first, &[format!("LABEL drydock.test.content={unique}")])?;
    let id = local_image_id(first).ok_or_else(|| format!("{first}: imported but not found"))?;
    let mut digest = None;
    for reference in references {
        if reference != first {
            docker(&["tag", &id, reference]).map_err(|e| format!("docker tag {reference}: {e}"))?;
        }
        docker(&["push", reference]).map_err(|e| format!("docker push {reference}: {e}"))?;
        let name = repository_name(reference);
        let digests = docker(&["image", "inspect", "--format", "{{range .RepoDigests}}{{println .}}{{end}}", &id])?;
        let pushed = digests
            .lines()
            .find_map(|d| d.strip_prefix(&format!("{name}@")).map(str::to_string))
            .ok_or_else(|| format!("docker push {reference}: no repo digest for {name} in {digests:?}"))?;
        if digest.as_ref().is_some_and(|d| *d != pushed) {
            return Err(format!("one content, two digests: {digest:?} and {pushed}"));
        }
        digest = Some(pushed);
    }
    for (reference, before) in references.iter().zip(before) {
        if let Some(previous) = before {
            docker(&["tag", &previous, reference]).map_err(|e| format!("docker tag {previous} {reference}: {e}"))?;
        }
    }
    docker(&["rmi", "--force", &id]).map_err(|e| format!("docker rmi {id}: {e}"))?;
    Ok(Published { digest: digest.unwrap_or_default(), id })
}

fn local_image_id(reference: &str) -> Option<String> {
    docker(&["image", "inspect", "--format", "{{.Id}}", reference]).ok().map(|s| s.trim().to_string())
}

/// `127.0.0.1:5487/a/b:1` -> `127.0.0.1:5487/a/b`.
fn repository_name(reference: &str) -> &str {
    let reference = reference.split('@').next().unwrap_or(reference);
    let slash = reference.rfind('/').map_or(0, |i| i + 1);
    match reference[slash..].rfind(':') {
        Some(colon) => &reference[..slash + colon],
        None => reference,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_past_its_limit_is_killed_and_reported() {
        let started = std::time::Instant::now();
        let error = run_bounded("sleep", &["30"], Duration::from_millis(200)).expect_err("sleep 30 outlives 0.2 s");
        assert!(error.timed_out, "{error}");
        assert_eq!(error.to_string(), "`sleep 30` did not finish in 0.2 s");
        assert!(started.elapsed() < Duration::from_secs(20), "killed, not waited for: {:?}", started.elapsed());
    }

    #[test]
    fn a_command_within_its_limit_gives_its_output() {
        let out =
            run_bounded("sh", &["-c", "echo out; echo err >&2; exit 3"], Duration::from_secs(20)).expect("sh runs");
        assert_eq!(
            (out.status.code(), out.stdout.as_slice(), out.stderr.as_slice()),
            (Some(3), &b"out\n"[..], &b"err\n"[..])
        );
    }
}
