//! What the daemon's end-to-end tests share: a `drydock daemon` on a temporary state dir, and
//! kubectl and drydock's own verbs pointed at it.
#![allow(dead_code, clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub const KUBECTL: &str = "kubectl";

/// `out`, after printing it as a transcript (`$ program args`, then what it wrote), so a failing
/// test shows every command it ran.
pub fn transcript(program: &str, args: &[&str], out: Output) -> Output {
    eprintln!(
        "$ {program} {}\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `drydock ARGS` run in `dir`, printed.
pub fn drydock_in(dir: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_drydock")).args(args).current_dir(dir).output().unwrap();
    transcript("drydock", args, out)
}

pub fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("{prefix}-{}-{}", std::process::id(), nanos % 100_000)
}

/// A running `drydock daemon` on a temporary state dir; SIGTERM on drop.
pub struct Daemon {
    pub child: Child,
    pub kubeconfig: PathBuf,
    lines: mpsc::Receiver<String>,
    pub state_dir: PathBuf,
}

impl Daemon {
    pub fn start(state_dir: &Path) -> Daemon {
        let mut child = Command::new(env!("CARGO_BIN_EXE_drydock"))
            .args(["daemon", "--listen", "127.0.0.1:0", "--state-dir"])
            .arg(state_dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let (tx, lines) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut kubeconfig = None;
        let mut listening = false;
        while !(listening && kubeconfig.is_some()) {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = lines.recv_timeout(left).expect("the daemon did not print its address and kubeconfig");
            if line.contains("listening on https://") {
                listening = true;
            }
            if let Some(path) = line.strip_prefix("kubeconfig: ") {
                kubeconfig = Some(PathBuf::from(path.trim()));
            }
        }
        Daemon { child, kubeconfig: kubeconfig.unwrap(), lines, state_dir: state_dir.to_path_buf() }
    }

    pub fn kubectl(&self, args: &[&str]) -> Output {
        let out = Command::new(KUBECTL).arg("--kubeconfig").arg(&self.kubeconfig).args(args).output().unwrap();
        transcript("kubectl", args, out)
    }

    /// kubectl that must succeed; its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(out.status.success(), "kubectl {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn watch(&self, args: &[&str]) -> Child {
        Command::new(KUBECTL)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// drydock's own client verb `args`, with this daemon's kubeconfig.
    pub fn verb(&self, args: &[&str]) -> Output {
        let out = self.drydock(args).output().unwrap();
        transcript("drydock", args, out)
    }

    /// drydock's client verb `args`, with this daemon's kubeconfig, not yet run.
    pub fn drydock(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_drydock"));
        command.args(args).arg("--kubeconfig").arg(&self.kubeconfig);
        command
    }

    /// SIGTERM, then the exit code; the state dir stays, for a daemon started on it again.
    #[allow(dead_code)]
    pub fn stop_keeping_state(mut self) -> Option<i32> {
        self.state_dir = PathBuf::new();
        self.stop()
    }

    /// SIGTERM, then the exit code.
    pub fn stop(mut self) -> Option<i32> {
        terminate(&self.child);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            assert!(Instant::now() < deadline, "the daemon did not exit within 30 s of SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        while self.lines.try_recv().is_ok() {}
        let _ = std::fs::remove_dir_all(&self.state_dir);
    }
}

pub fn terminate(child: &Child) {
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
}

pub fn eventually(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !check() {
        assert!(Instant::now() < deadline, "timed out after {timeout:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(250));
    }
}
