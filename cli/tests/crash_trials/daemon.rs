//! The daemon of a trial, as a user runs it: `drydock daemon` on a state dir, SIGKILLed on drop,
//! and a kube client for its kubeconfig.

use super::*;

// ---------------------------------------------------------------------------------------------
// The daemon, as a user runs it.

/// A running `drydock daemon`; SIGKILLed on drop.
pub(super) struct Daemon {
    pub(super) child: Child,
    pub(super) kubeconfig: PathBuf,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Daemon {
    /// `drydock daemon --state-dir STATE --listen 127.0.0.1:0`, its stderr appended to `log`;
    /// returns once both ready lines are out.
    pub(super) fn start(state: &Path, log: &Path) -> Daemon {
        let stderr = File::options().create(true).append(true).open(log).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_drydock"))
            .arg("daemon")
            .arg("--state-dir")
            .arg(state)
            .args(["--listen", "127.0.0.1:0"])
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            // Keep draining after the ready lines: a closed pipe would fail the daemon's prints.
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut daemon = Daemon { child, kubeconfig: PathBuf::new() };
        let mut next = || match lines.recv_timeout(Duration::from_secs(30)) {
            Ok(line) => line,
            Err(e) => {
                let _ = daemon.child.kill();
                let _ = daemon.child.wait();
                panic!("no ready line from the daemon ({e}); its log:\n{}", tail(log, 40))
            }
        };
        let first = next();
        let second = next();
        assert!(first.starts_with("drydock daemon listening on "), "{first}");
        daemon.kubeconfig = second.strip_prefix("kubeconfig: ").unwrap_or_else(|| panic!("{second}")).into();
        daemon
    }

    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `kill -9`, then reap it.
    pub(super) fn kill9(&mut self) {
        kill9(self.pid());
        let _ = self.child.wait();
    }
}

pub(super) fn kill9(pid: u32) {
    let status = Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap();
    assert!(status.success(), "kill -9 {pid}");
}

/// The last `lines` lines of a file.
pub(super) fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The identity the daemon of `state` runs as (kept in the state dir across restarts).
pub(super) fn identity(state: &Path) -> String {
    let id = std::fs::read_to_string(state.join(drydock_daemon::state_dir::ID_FILE)).unwrap();
    format!("drydock-daemon-{}", id.trim())
}

pub(super) async fn connect(kubeconfig: &Path) -> Client {
    let kubeconfig = Kubeconfig::read_from(kubeconfig).unwrap();
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await.unwrap();
    config.connect_timeout = Some(Duration::from_secs(5));
    config.read_timeout = Some(Duration::from_secs(15));
    Client::try_from(config).unwrap()
}
