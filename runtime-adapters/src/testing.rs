//! Helpers for tests that need a real Docker daemon: an offline runnable image, and the rule for
//! when a missing daemon is a skip and when it is a failure.
//!
//! The CI machines have a Docker engine but no registry and no images. [`ensure_test_image`]
//! builds one offline: a root filesystem holding Debian's statically linked `busybox` (package
//! `busybox-static`) with its applets linked in, imported with `docker import`.

use crate::docker::DockerRuntime;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

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

/// Make sure [`TEST_IMAGE`] exists, importing it if needed. Safe to call from parallel tests.
pub fn ensure_test_image() -> Result<(), String> {
    static IMPORTED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    IMPORTED.get_or_init(import_test_image).clone()
}

fn import_test_image() -> Result<(), String> {
    if docker(&["image", "inspect", TEST_IMAGE]).is_ok() {
        return Ok(());
    }
    let busybox = ["/bin/busybox", "/usr/bin/busybox"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .ok_or("no busybox binary: install Debian's busybox-static (apt-get install busybox-static)")?;
    let dir = std::env::temp_dir().join(format!("drydock-rootfs-{}", std::process::id()));
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).map_err(|e| format!("create {}: {e}", bin.display()))?;
    std::fs::copy(&busybox, bin.join("busybox")).map_err(|e| format!("copy {}: {e}", busybox.display()))?;
    for applet in APPLETS {
        let link = bin.join(applet);
        if !link.exists() {
            std::os::unix::fs::symlink("busybox", &link).map_err(|e| format!("link {}: {e}", link.display()))?;
        }
    }
    let result = import(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn import(rootfs: &Path) -> Result<(), String> {
    let tar = Command::new("tar")
        .args(["-C"])
        .arg(rootfs)
        .args(["-cf", "-", "."])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("run tar: {e}"))?;
    let stdout = tar.stdout.ok_or("tar has no stdout")?;
    let output = Command::new("docker")
        .args(["import", "-c", r#"CMD ["sleep", "3600"]"#, "-", TEST_IMAGE])
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
