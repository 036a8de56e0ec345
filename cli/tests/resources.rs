//! Networks, volumes, builds and copied files through `drydock daemon` on real Docker: two
//! containers on a drydock network reach each other by alias; a volume's data survives the
//! replacement of the container that wrote it; an image built from a Dockerfile runs; a copied
//! file is read by the container's command; deleting the namespace then leaves only the retained
//! volume.
//!
//! Skips with a printed reason where Docker is absent and `CI` is unset; with `CI` set its
//! absence is a failure.
#![allow(clippy::unwrap_used)]

mod support;

use drydock_adapters::testing::{RemoveOnDrop, TEST_IMAGE, docker_bounded, docker_or_skip, ensure_test_image};
use std::process::Output;
use std::time::Duration;
use support::{Daemon, eventually, unique};

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn docker(args: &[&str]) -> String {
    text(&docker_bounded(args).unwrap_or_else(|error| panic!("{error}")))
}

/// Removes what the test made in Docker beyond containers, however it ends.
struct Leftovers {
    prefix: String,
    image: String,
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        // No panics here: this may run while a failed test unwinds.
        let list = |what: &str| {
            docker_bounded(&[what, "ls", "--format", "{{.Name}}"]).map(|out| text(&out)).unwrap_or_default()
        };
        for name in list("network").lines() {
            if name.starts_with(&self.prefix) {
                let _ = docker_bounded(&["network", "rm", name]);
            }
        }
        for name in list("volume").lines() {
            if name.starts_with(&self.prefix) {
                let _ = docker_bounded(&["volume", "rm", name]);
            }
        }
        let _ = docker_bounded(&["rmi", "-f", &self.image]);
    }
}

fn manifest(ns: &str, context: &str, tag: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Namespace
metadata: {{name: {ns}}}
---
apiVersion: drydock.dev/v1
kind: ContainerNetwork
metadata: {{name: net, namespace: {ns}}}
spec: {{}}
---
apiVersion: drydock.dev/v1
kind: ContainerVolume
metadata: {{name: data, namespace: {ns}}}
spec: {{}}
---
apiVersion: drydock.dev/v1
kind: ContainerVolume
metadata: {{name: scratch, namespace: {ns}}}
spec: {{retain: false}}
---
apiVersion: drydock.dev/v1
kind: ContainerImage
metadata: {{name: app, namespace: {ns}}}
spec:
  image: {tag}
  build: {{context: {context}, buildArgs: {{GREETING: built-and-run}}}}
---
apiVersion: drydock.dev/v1
kind: PhysicalContainer
metadata: {{name: server, namespace: {ns}}}
spec:
  image: {TEST_IMAGE}
  networks: [{{name: net, aliases: [db]}}]
  mounts: [{{source: scratch, target: /scratch}}]
  command: [sh, -c, "busybox mkdir -p /www && echo hello-from-db > /www/index.html && exec busybox httpd -f -p 8080 -h /www"]
---
apiVersion: drydock.dev/v1
kind: PhysicalContainer
metadata: {{name: client, namespace: {ns}}}
spec:
  image: {TEST_IMAGE}
  networks: [{{name: net}}]
  command: [sh, -c, "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do wget -qO- http://db:8080/ && exit 0; sleep 1; done; exit 1"]
---
apiVersion: drydock.dev/v1
kind: PhysicalContainer
metadata: {{name: writer, namespace: {ns}}}
spec:
  image: {TEST_IMAGE}
  mounts: [{{source: data, target: /data}}]
  command: [sh, -c, "echo kept > /data/file"]
---
apiVersion: drydock.dev/v1
kind: PhysicalContainer
metadata: {{name: built, namespace: {ns}}}
spec:
  imageRef: app
---
apiVersion: drydock.dev/v1
kind: PhysicalContainer
metadata: {{name: copier, namespace: {ns}}}
spec:
  image: {TEST_IMAGE}
  files: [{{destination: /etc/app/config, contents: "copied-in\n", mode: 384}}]
  command: [cat, /etc/app/config]
"#
    )
}

fn reader(ns: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Namespace
metadata: {{name: {ns}}}
---
apiVersion: drydock.dev/v1
kind: PhysicalContainer
metadata: {{name: reader, namespace: {ns}}}
spec:
  image: {TEST_IMAGE}
  mounts: [{{source: data, target: /data, readOnly: true}}]
  command: [cat, /data/file]
"#
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn networks_volumes_builds_and_files_on_docker() {
    if docker_or_skip("networks_volumes_builds_and_files_on_docker").await.is_none() {
        return;
    }
    ensure_test_image().unwrap();
    let ns = unique("res");
    let tag = format!("drydock-test/{ns}-app:1");
    // Dropped in reverse: the containers go first, then the networks and volumes they used.
    let _leftovers = Leftovers { prefix: ns.clone(), image: tag.clone() };
    let _containers = RemoveOnDrop(ns.clone());
    let state_dir = std::env::temp_dir().join(unique("drydock-resources-e2e"));
    let context = state_dir.join("context");
    std::fs::create_dir_all(&context).unwrap();
    std::fs::write(
        context.join("Dockerfile"),
        format!("FROM {TEST_IMAGE}\nARG GREETING\nRUN echo \"$GREETING\" > /greeting\nCMD [\"cat\", \"/greeting\"]\n"),
    )
    .unwrap();
    let daemon = Daemon::start(&state_dir);
    let file = state_dir.join("resources.yaml");
    std::fs::write(&file, manifest(&ns, context.to_str().unwrap(), &tag)).unwrap();
    let applied = daemon.verb(&["apply", "-f", file.to_str().unwrap()]);
    assert!(applied.status.success(), "{}", String::from_utf8_lossy(&applied.stderr));
    let logs = |name: &str| text(&daemon.verb(&["logs", &format!("pc/{name}"), "-n", &ns]));

    // Two containers on a drydock network reach each other by alias.
    eventually("the client to fetch from the server by its alias", Duration::from_secs(120), || {
        logs("client") == "hello-from-db\n"
    });
    let attached = docker(&["network", "inspect", &format!("{ns}-net"), "--format", "{{json .Containers}}"]);
    assert!(attached.contains(&format!("{ns}-server")), "the server is attached: {attached}");

    // An image built from a Dockerfile, run.
    eventually("the built image's container to print", Duration::from_secs(120), || logs("built") == "built-and-run\n");
    let startup = text(&daemon.verb(&["logs", "img/app", "-n", &ns]));
    assert!(startup.contains("Successfully built") || startup.contains("Step"), "the build's output: {startup}");

    // A copied file, read by the container's command.
    eventually("the copier to print its copied file", Duration::from_secs(60), || logs("copier") == "copied-in\n");

    // A volume's data survives the container's replacement.
    eventually("the writer to exit", Duration::from_secs(60), || {
        docker(&["inspect", "--format", "{{.State.Status}}", &format!("{ns}-writer")]).trim() == "exited"
    });
    assert!(daemon.verb(&["delete", "pc", "writer", "-n", &ns]).status.success());
    eventually("the writer's container to be removed", Duration::from_secs(60), || {
        !docker(&["ps", "-a", "--format", "{{.Names}}"]).lines().any(|n| n == format!("{ns}-writer"))
    });
    let reader_file = state_dir.join("reader.yaml");
    std::fs::write(&reader_file, reader(&ns)).unwrap();
    let applied = daemon.verb(&["apply", "-f", reader_file.to_str().unwrap()]);
    assert!(applied.status.success(), "{}", String::from_utf8_lossy(&applied.stderr));
    eventually("the reader to print what the writer left", Duration::from_secs(60), || logs("reader") == "kept\n");

    // Deleting the namespace leaves only the retained volume.
    assert!(daemon.verb(&["delete", "ns", &ns]).status.success());
    eventually("the namespace to be gone", Duration::from_secs(120), || {
        !daemon.verb(&["get", "ns", &ns]).status.success()
    });
    let containers: Vec<String> = docker(&["ps", "-a", "--format", "{{.Names}}"])
        .lines()
        .filter(|n| n.starts_with(&ns))
        .map(String::from)
        .collect();
    assert!(containers.is_empty(), "containers left: {containers:?}");
    let networks: Vec<String> = docker(&["network", "ls", "--format", "{{.Name}}"])
        .lines()
        .filter(|n| n.starts_with(&ns))
        .map(String::from)
        .collect();
    assert!(networks.is_empty(), "networks left: {networks:?}");
    let volumes: Vec<String> = docker(&["volume", "ls", "--format", "{{.Name}}"])
        .lines()
        .filter(|n| n.starts_with(&ns))
        .map(String::from)
        .collect();
    assert_eq!(volumes, [format!("{ns}-data")], "only the retained volume stays");
    daemon.stop();
}
