//! The cases. Each takes a fixture and asserts one piece of the contract.

use super::fixture::{Fixture, RUN_LABEL};
use super::host::send_to_docker_and_hang_up;
use drydock_adapters::{DockerRuntime, Runtime};
use drydock_engine::runtime::{ContainerState, EventAction, RuntimeError, RuntimeReply, RuntimeRequest};

type Fx<R> = Fixture<R>;

fn is_not_found<T: std::fmt::Debug>(r: &Result<T, RuntimeError>) -> bool {
    matches!(r, Err(RuntimeError::NotFound(_)))
}

fn is_conflict<T: std::fmt::Debug>(r: &Result<T, RuntimeError>) -> bool {
    matches!(r, Err(RuntimeError::Conflict(_)))
}

async fn state<R: Runtime>(fx: &Fx<R>, id: &str) -> ContainerState {
    fx.inspect(id).await.unwrap().state
}

/// A running container (default command: sleep).
async fn running<R: Runtime>(fx: &Fx<R>, suffix: &str) -> String {
    let id = fx.create(suffix).await;
    fx.start(&id).await;
    id
}

/// A container that ran `sh -c 'exit <code>'` and has exited.
async fn exited<R: Runtime>(fx: &Fx<R>, suffix: &str, code: i64) -> String {
    let script = format!("exit {code}");
    let id = fx.create_with(fx.spec(suffix, &["sh", "-c", &script])).await;
    fx.start(&id).await;
    fx.eventually("the container to exit", async || (state(fx, &id).await == ContainerState::Exited).then_some(()))
        .await;
    id
}

/// The stdout and stderr lines a capture of container `id` delivers, until it ends by itself
/// (within 30 s).
async fn captured<R: Runtime>(fx: &Fx<R>, id: &str, follow: bool) -> (Vec<String>, Vec<String>) {
    use futures_util::StreamExt;
    let mut stream = fx.rt.capture(id, follow, None).expect("the runtime captures output");
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let read = async {
        while let Some(line) = stream.next().await {
            let line = line.expect("a capture of a container that exists");
            match line.channel {
                drydock_engine::logs::Channel::Stderr => err.push(line.text),
                _ => out.push(line.text),
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(30), read).await.expect("the capture did not end by itself");
    (out, err)
}

/// Docker: a line longer than 16 KiB is cut into frames of 16 KiB that share the line's one
/// timestamp (only the last holds the newline); a capture gives the line whole, and then the next.
pub async fn a_line_of_32768_characters_is_captured_whole<R: Runtime>(fx: &Fx<R>) {
    let long = "0123456789abcdef".repeat(2_048);
    let id = fx.create_with(fx.spec("a", &["sh", "-c", &format!("echo {long}; echo after")])).await;
    fx.start(&id).await;
    fx.eventually("the container to exit", async || (state(fx, &id).await == ContainerState::Exited).then_some(()))
        .await;
    let (out, err) = captured(fx, &id, false).await;
    assert_eq!(out.iter().map(String::len).collect::<Vec<_>>(), [32_768, 5], "the long line whole, then the next");
    assert_eq!((out[0] == long, out[1].as_str(), err.len()), (true, "after", 0));
}

pub async fn capture_reads_both_streams_in_order<R: Runtime>(fx: &Fx<R>) {
    let id =
        fx.create_with(fx.spec("a", &["sh", "-c", "echo one; echo two >&2; echo three; echo gone >/dev/null"])).await;
    fx.start(&id).await;
    fx.eventually("the container to exit", async || (state(fx, &id).await == ContainerState::Exited).then_some(()))
        .await;
    let (out, err) = captured(fx, &id, false).await;
    assert_eq!((out, err), (vec!["one".to_string(), "three".to_string()], vec!["two".to_string()]));
}

pub async fn a_follow_ends_when_the_container_exits<R: Runtime>(fx: &Fx<R>) {
    let id = fx.create_with(fx.spec("a", &["sh", "-c", "echo a; sleep 1; echo b; seq 3"])).await;
    fx.start(&id).await;
    let (out, _) = captured(fx, &id, true).await;
    assert_eq!(out, ["a", "b", "1", "2", "3"], "every line, then the end");
}

pub async fn a_follow_ends_when_the_container_is_removed<R: Runtime>(fx: &Fx<R>) {
    let id = fx.create_with(fx.spec("a", &["sh", "-c", "echo up; while true; do sleep 1; done"])).await;
    fx.start(&id).await;
    let follower = {
        let (rt, id) = (fx.rt.clone(), id.clone());
        tokio::spawn(async move {
            use futures_util::StreamExt;
            let mut stream = rt.capture(&id, true, None).expect("the runtime captures output");
            let mut lines = Vec::new();
            while let Some(Ok(line)) = stream.next().await {
                lines.push(line.text);
            }
            lines
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    fx.remove(&id, true).await.unwrap();
    let lines = tokio::time::timeout(std::time::Duration::from_secs(30), follower)
        .await
        .expect("the follow did not end when the container was removed")
        .unwrap();
    assert_eq!(lines, ["up"]);
}

pub async fn a_follow_of_a_created_container_ends_at_once_with_nothing<R: Runtime>(fx: &Fx<R>) {
    let id = fx.create_with(fx.spec("a", &["sh", "-c", "echo never"])).await;
    let (out, err) = captured(fx, &id, true).await;
    assert!(out.is_empty() && err.is_empty(), "{out:?} {err:?}");
}

pub async fn create_with_missing_image_is_not_found<R: Runtime>(fx: &Fx<R>) {
    let mut spec = fx.spec("a", &[]);
    spec.image = "drydock-test/no-such-image:1".into();
    let result = fx.try_create(spec).await;
    assert!(is_not_found(&result), "{result:?}");
    assert!(fx.list(&[(RUN_LABEL, &fx.case)]).await.is_empty(), "nothing was created");
}

pub async fn create_returns_an_id_and_the_container_is_created<R: Runtime>(fx: &Fx<R>) {
    let id = fx.create("a").await;
    assert_eq!(id.len(), 64, "full 64-hex id: {id}");
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    let info = fx.inspect(&id).await.unwrap();
    assert_eq!((info.id.as_str(), info.state, info.exit_code), (id.as_str(), ContainerState::Created, None));
}

pub async fn create_with_a_taken_name_is_conflict<R: Runtime>(fx: &Fx<R>) {
    fx.create("a").await;
    let again = fx.try_create(fx.spec("a", &[])).await;
    assert!(is_conflict(&again), "{again:?}");
    assert_eq!(fx.list(&[(RUN_LABEL, &fx.case)]).await.len(), 1);
}

pub async fn conflict_message_names_the_container<R: Runtime>(fx: &Fx<R>) {
    fx.create("a").await;
    match fx.try_create(fx.spec("a", &[])).await {
        Err(RuntimeError::Conflict(message)) => assert!(message.contains(&fx.name("a")), "{message}"),
        other => panic!("{other:?}"),
    }
}

pub async fn a_name_is_free_again_after_remove<R: Runtime>(fx: &Fx<R>) {
    let first = fx.create("a").await;
    fx.remove(&first, false).await.unwrap();
    let second = fx.create("a").await;
    assert_ne!(first, second);
}

/// Docker: 400 `Invalid container name (NAME), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed`, and
/// nothing is created.
pub async fn create_with_an_invalid_name_fails<R: Runtime>(fx: &Fx<R>) {
    let mut spec = fx.spec("a", &[]);
    spec.name = format!("{} bad name!", fx.case);
    let result = fx.try_create(spec.clone()).await;
    let expected = format!("Invalid container name ({}), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed", spec.name);
    assert_eq!(result, Err(RuntimeError::Invalid(expected)));
    assert!(fx.list(&[(RUN_LABEL, &fx.case)]).await.is_empty(), "nothing was created");
}

pub async fn create_without_command_uses_the_image_default<R: Runtime>(fx: &Fx<R>) {
    let id = running(fx, "a").await;
    assert_eq!(state(fx, &id).await, ContainerState::Running, "the image's default command keeps running");
}

pub async fn create_from_an_image_id<R: Runtime>(fx: &Fx<R>) {
    let image_id = match fx.exec(RuntimeRequest::InspectImage { reference: fx.image.clone() }).await.unwrap() {
        RuntimeReply::Image(image) => image.id,
        other => panic!("{other:?}"),
    };
    let mut spec = fx.spec("a", &[]);
    spec.image = image_id;
    let id = fx.create_with(spec).await;
    assert_eq!(state(fx, &id).await, ContainerState::Created);
}

pub async fn start_runs_the_container<R: Runtime>(fx: &Fx<R>) {
    let id = running(fx, "a").await;
    assert_eq!(state(fx, &id).await, ContainerState::Running);
}

pub async fn start_twice_is_fine<R: Runtime>(fx: &Fx<R>) {
    let id = running(fx, "a").await;
    fx.exec(RuntimeRequest::StartContainer { id: id.clone() }).await.unwrap();
    assert_eq!(state(fx, &id).await, ContainerState::Running);
}

pub async fn start_missing_is_not_found<R: Runtime>(fx: &Fx<R>) {
    let r = fx.exec(RuntimeRequest::StartContainer { id: fx.name("missing") }).await;
    assert!(is_not_found(&r), "{r:?}");
}

pub async fn start_after_remove_is_not_found<R: Runtime>(fx: &Fx<R>) {
    let id = fx.create("a").await;
    fx.remove(&id, false).await.unwrap();
    let r = fx.exec(RuntimeRequest::StartContainer { id }).await;
    assert!(is_not_found(&r), "{r:?}");
}

pub async fn stop_a_running_container_records_the_kill_exit_code<R: Runtime>(fx: &Fx<R>) {
    let id = running(fx, "a").await;
    fx.stop(&id).await.unwrap();
    let info = fx.inspect(&id).await.unwrap();
    // `sleep` as PID 1 ignores SIGTERM; after the grace period it is killed.
    assert_eq!((info.state, info.exit_code), (ContainerState::Exited, Some(137)));
}

pub async fn stop_a_stopped_container_is_fine<R: Runtime>(fx: &Fx<R>) {
    let id = exited(fx, "a", 4).await;
    fx.stop(&id).await.unwrap();
    assert_eq!(fx.inspect(&id).await.unwrap().exit_code, Some(4), "stopping again changes nothing");
}

pub async fn stop_a_created_container_is_fine_and_leaves_it_created<R: Runtime>(fx: &Fx<R>) {
    let id = fx.create("a").await;
    fx.stop(&id).await.unwrap();
    assert_eq!(state(fx, &id).await, ContainerState::Created);
}

pub async fn stop_missing_is_not_found<R: Runtime>(fx: &Fx<R>) {
    let r = fx.stop(&fx.name("missing")).await;
    assert!(is_not_found(&r), "{r:?}");
}

pub async fn remove_running_without_force_is_conflict<R: Runtime>(fx: &Fx<R>) {
    let id = running(fx, "a").await;
    let r = fx.remove(&id, false).await;
    assert!(is_conflict(&r), "{r:?}");
    assert_eq!(state(fx, &id).await, ContainerState::Running, "still there, still running");
}

pub async fn remove_running_with_force<R: Runtime>(fx: &Fx<R>) {
    let id = running(fx, "a").await;
    fx.remove(&id, true).await.unwrap();
    assert!(is_not_found(&fx.inspect(&id).await));
}

pub async fn remove_stopped_without_force<R: Runtime>(fx: &Fx<R>) {
    let id = exited(fx, "a", 0).await;
    fx.remove(&id, false).await.unwrap();
    assert!(is_not_found(&fx.inspect(&id).await));
}

pub async fn remove_created_without_force<R: Runtime>(fx: &Fx<R>) {
    let id = fx.create("a").await;
    fx.remove(&id, false).await.unwrap();
    assert!(is_not_found(&fx.inspect(&id).await));
}

pub async fn remove_missing_is_not_found<R: Runtime>(fx: &Fx<R>) {
    let r = fx.remove(&fx.name("missing"), true).await;
    assert!(is_not_found(&r), "{r:?}");
}

pub async fn remove_twice_is_not_found_the_second_time<R: Runtime>(fx: &Fx<R>) {
    let id = fx.create("a").await;
    fx.remove(&id, false).await.unwrap();
    let r = fx.remove(&id, true).await;
    assert!(is_not_found(&r), "{r:?}");
}

pub async fn inspect_after_remove_is_not_found<R: Runtime>(fx: &Fx<R>) {
    let id = running(fx, "a").await;
    fx.remove(&id, true).await.unwrap();
    assert!(is_not_found(&fx.inspect(&id).await));
    assert!(is_not_found(&fx.inspect(&fx.name("a")).await), "by name too");
}

pub async fn inspect_by_name<R: Runtime>(fx: &Fx<R>) {
    let id = fx.create("a").await;
    assert_eq!(fx.inspect(&fx.name("a")).await.unwrap().id, id);
}

pub async fn inspect_by_id_prefix<R: Runtime>(fx: &Fx<R>) {
    let id = fx.create("a").await;
    assert_eq!(fx.inspect(&id[..12]).await.unwrap().id, id);
}

pub async fn inspect_missing_is_not_found<R: Runtime>(fx: &Fx<R>) {
    assert!(is_not_found(&fx.inspect(&fx.name("missing")).await));
}

pub async fn inspect_reports_labels_name_and_image<R: Runtime>(fx: &Fx<R>) {
    let mut spec = fx.spec("a", &[]);
    spec.labels.insert("drydock.dev/owner-uid".into(), "uid-1".into());
    spec.labels.insert("app".into(), "web".into());
    let id = fx.create_with(spec.clone()).await;
    let info = fx.inspect(&id).await.unwrap();
    assert_eq!(info.name, spec.name, "the name without Docker's leading slash");
    assert_eq!(info.image, spec.image, "the image as given at create");
    for (k, v) in &spec.labels {
        assert_eq!(info.labels.get(k), Some(v), "label {k}");
    }
}

pub async fn a_running_container_has_no_exit_code<R: Runtime>(fx: &Fx<R>) {
    let id = running(fx, "a").await;
    assert_eq!(fx.inspect(&id).await.unwrap().exit_code, None);
}

pub async fn list_by_one_label<R: Runtime>(fx: &Fx<R>) {
    let mut a = fx.spec("a", &[]);
    a.labels.insert("role".into(), "web".into());
    let mut b = fx.spec("b", &[]);
    b.labels.insert("role".into(), "db".into());
    let a = fx.create_with(a).await;
    fx.create_with(b).await;
    let found = fx.list(&[(RUN_LABEL, &fx.case), ("role", "web")]).await;
    assert_eq!(found.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), vec![a.as_str()]);
}

pub async fn list_needs_every_label_to_match<R: Runtime>(fx: &Fx<R>) {
    let mut a = fx.spec("a", &[]);
    a.labels.insert("x".into(), "1".into());
    fx.create_with(a).await;
    assert!(fx.list(&[(RUN_LABEL, &fx.case), ("x", "1"), ("y", "2")]).await.is_empty());
    assert!(fx.list(&[(RUN_LABEL, &fx.case), ("x", "2")]).await.is_empty());
    assert_eq!(fx.list(&[(RUN_LABEL, &fx.case), ("x", "1")]).await.len(), 1);
}

pub async fn list_includes_stopped_and_created_containers<R: Runtime>(fx: &Fx<R>) {
    fx.create("created").await;
    exited(fx, "exited", 2).await;
    running(fx, "running").await;
    assert_eq!(fx.list(&[(RUN_LABEL, &fx.case)]).await.len(), 3);
}

pub async fn list_with_no_match_is_empty<R: Runtime>(fx: &Fx<R>) {
    fx.create("a").await;
    assert!(fx.list(&[(RUN_LABEL, "no-such-case")]).await.is_empty());
}

pub async fn list_reports_each_state<R: Runtime>(fx: &Fx<R>) {
    let created = fx.create("created").await;
    let exited = exited(fx, "exited", 5).await;
    let running = running(fx, "running").await;
    let list = fx.list(&[(RUN_LABEL, &fx.case)]).await;
    let find = |id: &str| list.iter().find(|c| c.id == id).map(|c| (c.state, c.exit_code));
    assert_eq!(find(&created), Some((ContainerState::Created, None)));
    assert_eq!(find(&exited), Some((ContainerState::Exited, Some(5))));
    assert_eq!(find(&running), Some((ContainerState::Running, None)));
}

pub async fn list_after_remove_leaves_it_out<R: Runtime>(fx: &Fx<R>) {
    let a = fx.create("a").await;
    let b = fx.create("b").await;
    fx.remove(&a, false).await.unwrap();
    let ids: Vec<String> = fx.list(&[(RUN_LABEL, &fx.case)]).await.into_iter().map(|c| c.id).collect();
    assert_eq!(ids, vec![b]);
}

pub async fn exit_code_of_a_container_that_exits_by_itself<R: Runtime>(fx: &Fx<R>) {
    let id = exited(fx, "a", 3).await;
    assert_eq!(fx.inspect(&id).await.unwrap().exit_code, Some(3));
}

pub async fn exit_code_zero<R: Runtime>(fx: &Fx<R>) {
    let id = fx.create_with(fx.spec("a", &["true"])).await;
    fx.start(&id).await;
    let code =
        fx.eventually("exit", async || fx.inspect(&id).await.ok().filter(|i| i.state == ContainerState::Exited)).await;
    assert_eq!(code.exit_code, Some(0));
}

pub async fn a_container_that_keeps_running<R: Runtime>(fx: &Fx<R>) {
    let id = fx.create_with(fx.spec("a", &["sleep", "600"])).await;
    fx.start(&id).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(state(fx, &id).await, ContainerState::Running);
}

pub async fn start_an_exited_container_again<R: Runtime>(fx: &Fx<R>) {
    let id = running(fx, "a").await;
    fx.stop(&id).await.unwrap();
    fx.start(&id).await;
    let info = fx.inspect(&id).await.unwrap();
    assert_eq!((info.state, info.exit_code), (ContainerState::Running, None));
}

fn actions(events: &[drydock_engine::runtime::RuntimeEvent]) -> Vec<EventAction> {
    events.iter().map(|e| e.action.clone()).collect()
}

pub async fn events_for_create_start_die_destroy<R: Runtime>(fx: &Fx<R>) {
    let id = running(fx, "a").await;
    fx.stop(&id).await.unwrap();
    fx.remove(&id, false).await.unwrap();
    let want =
        vec![EventAction::Create, EventAction::Start, EventAction::Die { exit_code: Some(137) }, EventAction::Destroy];
    let got = fx.eventually("four events", async || Some(actions(&fx.events(&id).await)).filter(|a| *a == want)).await;
    assert_eq!(got, want);
    assert!(fx.events(&id).await.iter().all(|e| e.container_id == id));
}

pub async fn events_for_a_container_that_exits_by_itself<R: Runtime>(fx: &Fx<R>) {
    let id = exited(fx, "a", 9).await;
    let want = vec![EventAction::Create, EventAction::Start, EventAction::Die { exit_code: Some(9) }];
    fx.eventually("die with exit code 9", async || Some(actions(&fx.events(&id).await)).filter(|a| *a == want)).await;
}

pub async fn events_for_force_remove_of_a_running_container<R: Runtime>(fx: &Fx<R>) {
    let id = running(fx, "a").await;
    fx.remove(&id, true).await.unwrap();
    let want =
        vec![EventAction::Create, EventAction::Start, EventAction::Die { exit_code: Some(137) }, EventAction::Destroy];
    fx.eventually("die then destroy", async || Some(actions(&fx.events(&id).await)).filter(|a| *a == want)).await;
}

/// Docker keeps its last 256 events for replay: once 256 more have happened, a container's first
/// events are gone from a `since` query, while the newest are still there. (A live stream sees
/// them all.) On Docker other tests' events count too, which only makes the first ones go sooner.
pub async fn events_replay_only_the_last_256<R: Runtime>(fx: &Fx<R>) {
    let first = fx.create("first").await;
    let want = vec![EventAction::Create];
    fx.eventually("the first create", async || Some(actions(&fx.events(&first).await)).filter(|a| *a == want)).await;
    // Each filler makes two events (create, destroy): 280 in all, more than 256.
    for n in 0..140 {
        let id = fx.create(&format!("filler-{n}")).await;
        fx.remove(&id, false).await.unwrap();
    }
    let last = fx.create("last").await;
    fx.eventually("the newest create", async || Some(actions(&fx.events(&last).await)).filter(|a| *a == want)).await;
    let gone = fx.events(&first).await;
    assert!(gone.is_empty(), "a replay still reaches the first container's events: {:?}", actions(&gone));
}

pub async fn image_inspect_of_a_present_image<R: Runtime>(fx: &Fx<R>) {
    match fx.exec(RuntimeRequest::InspectImage { reference: fx.image.clone() }).await.unwrap() {
        RuntimeReply::Image(image) => {
            assert!(image.id.starts_with("sha256:") && image.id.len() == 71, "{}", image.id);
            assert!(image.tags.contains(&fx.image), "{:?}", image.tags);
        }
        other => panic!("{other:?}"),
    }
}

pub async fn image_inspect_of_a_missing_image_is_not_found<R: Runtime>(fx: &Fx<R>) {
    let r = fx.exec(RuntimeRequest::InspectImage { reference: "drydock-test/absent:9".into() }).await;
    assert!(is_not_found(&r), "{r:?}");
}

pub async fn image_inspect_normalizes_references<R: Runtime>(fx: &Fx<R>) {
    let mut ids = Vec::new();
    for reference in ["drydock-test/busybox", "drydock-test/busybox:latest", "docker.io/drydock-test/busybox:latest"] {
        match fx.exec(RuntimeRequest::InspectImage { reference: reference.into() }).await {
            Ok(RuntimeReply::Image(image)) => ids.push(image.id),
            other => panic!("{reference}: {other:?}"),
        }
    }
    assert!(ids.windows(2).all(|w| w[0] == w[1]), "one image: {ids:?}");
}

pub async fn image_inspect_by_id<R: Runtime>(fx: &Fx<R>) {
    let id = match fx.exec(RuntimeRequest::InspectImage { reference: fx.image.clone() }).await.unwrap() {
        RuntimeReply::Image(image) => image.id,
        other => panic!("{other:?}"),
    };
    let short = &id["sha256:".len()..][..12];
    for reference in [id.clone(), short.to_string()] {
        match fx.exec(RuntimeRequest::InspectImage { reference: reference.clone() }).await {
            Ok(RuntimeReply::Image(image)) => assert_eq!(image.id, id),
            other => panic!("{reference}: {other:?}"),
        }
    }
}

pub async fn labels_with_an_owner_uid_find_exactly_that_container<R: Runtime>(fx: &Fx<R>) {
    // What uncertain-create verification relies on: the list by uid label finds the container
    // whether or not the create's reply arrived, and only that one.
    let uid = format!("{}-uid", fx.case);
    let mut ours = fx.spec("ours", &[]);
    ours.labels.insert("drydock.dev/owner-uid".into(), uid.clone());
    let mut other = fx.spec("other", &[]);
    other.labels.insert("drydock.dev/owner-uid".into(), format!("{uid}-other"));
    let ours = fx.create_with(ours).await;
    fx.create_with(other).await;
    let found = fx.list(&[("drydock.dev/owner-uid", &uid)]).await;
    assert_eq!(found.into_iter().map(|c| c.id).collect::<Vec<_>>(), vec![ours]);
}

// Images: pulls from the test registry (Debian's docker-registry on the loopback for Docker, the
// simulated registry for the simulator) and removal while containers use them. Every case
// publishes content of its own, in a repository of its own.

/// A container made from `image` (created, or also started).
async fn container_from<R: Runtime>(fx: &Fx<R>, suffix: &str, image: &str, start: bool) -> String {
    let mut spec = fx.spec(suffix, &[]);
    spec.image = image.to_string();
    let id = fx.create_with(spec).await;
    if start {
        fx.start(&id).await;
    }
    id
}

/// Published and pulled `<repo>:1`: (reference, content).
async fn pulled<R: Runtime>(fx: &Fx<R>) -> (String, drydock_adapters::testing::Published) {
    let reference = format!("{}:1", fx.repo("app"));
    let published = fx.publish(&[&reference]);
    fx.pull(&reference).await.unwrap();
    (reference, published)
}

pub async fn image_pull_then_inspect_gives_the_registry_content_id<R: Runtime>(fx: &Fx<R>) {
    let reference = format!("{}:1", fx.repo("app"));
    let published = fx.publish(&[&reference]);
    assert!(is_not_found(&fx.inspect_image(&reference).await), "only in the registry so far");
    fx.pull(&reference).await.unwrap();
    let image = fx.inspect_image(&reference).await.unwrap();
    assert_eq!(image.id, published.id);
    assert_ne!(image.id, published.digest, "the image id is not the manifest digest");
    assert_eq!(image.tags, vec![reference.clone()]);
    let id = container_from(fx, "a", &reference, true).await;
    assert_eq!(state(fx, &id).await, ContainerState::Running, "the pulled image runs");
}

pub async fn image_pull_progress_names_the_repository_digest_and_outcome<R: Runtime>(fx: &Fx<R>) {
    let reference = format!("{}:1", fx.repo("app"));
    let published = fx.publish(&[&reference]);
    let progress = fx.pull(&reference).await.unwrap();
    let path = fx.repo("app").split_once('/').unwrap().1.to_string();
    assert_eq!(progress.first(), Some(&format!("1: Pulling from {path}")), "{progress:?}");
    assert!(progress.contains(&format!("Digest: {}", published.digest)), "{progress:?}");
    assert_eq!(progress.last(), Some(&format!("Status: Downloaded newer image for {reference}")), "{progress:?}");
}

pub async fn image_pull_again_is_up_to_date<R: Runtime>(fx: &Fx<R>) {
    let (reference, published) = pulled(fx).await;
    let progress = fx.pull(&reference).await.unwrap();
    assert_eq!(progress.last(), Some(&format!("Status: Image is up to date for {reference}")), "{progress:?}");
    assert!(progress.contains(&format!("Digest: {}", published.digest)), "{progress:?}");
    assert_eq!(fx.inspect_image(&reference).await.unwrap().id, published.id);
}

pub async fn image_pull_of_a_missing_tag_or_repository_is_not_found<R: Runtime>(fx: &Fx<R>) {
    let repo = fx.repo("app");
    fx.publish(&[&format!("{repo}:1")]);
    for reference in [format!("{repo}:2"), format!("{}:1", fx.repo("absent"))] {
        match fx.pull(&reference).await {
            Err(RuntimeError::NotFound(message)) => assert!(message.contains("manifest unknown"), "{message}"),
            other => panic!("{reference}: {other:?}"),
        }
        assert!(is_not_found(&fx.inspect_image(&reference).await), "{reference}: nothing stored");
    }
}

pub async fn image_pull_of_an_unknown_digest_is_not_found<R: Runtime>(fx: &Fx<R>) {
    let repo = fx.repo("app");
    fx.publish(&[&format!("{repo}:1")]);
    let reference = format!("{repo}@sha256:{}", "0".repeat(64));
    let r = fx.pull(&reference).await;
    assert!(is_not_found(&r), "{r:?}");
}

pub async fn image_pull_by_digest_adds_no_tag<R: Runtime>(fx: &Fx<R>) {
    let repo = fx.repo("app");
    let published = fx.publish(&[&format!("{repo}:1")]);
    let by_digest = format!("{repo}@{}", published.digest);
    let progress = fx.pull(&by_digest).await.unwrap();
    assert_eq!(progress.last(), Some(&format!("Status: Downloaded newer image for {by_digest}")), "{progress:?}");
    let image = fx.inspect_image(&by_digest).await.unwrap();
    assert_eq!(image.id, published.id);
    assert!(image.tags.is_empty(), "{:?}", image.tags);
    assert!(is_not_found(&fx.inspect_image(&format!("{repo}:1")).await), "the tag is not pulled");
    let id = container_from(fx, "a", &by_digest, false).await;
    assert_eq!(fx.inspect(&id).await.unwrap().image, by_digest);
}

pub async fn image_pull_of_a_moved_tag_gives_a_new_id_and_keeps_the_old_image<R: Runtime>(fx: &Fx<R>) {
    let repo = fx.repo("app");
    let (reference, first) = pulled(fx).await;
    let second = fx.publish(&[&reference]);
    assert_ne!((&first.digest, &first.id), (&second.digest, &second.id), "new content under the same tag");
    assert_eq!(fx.inspect_image(&reference).await.unwrap().id, first.id, "the local tag moves only with a pull");
    let progress = fx.pull(&reference).await.unwrap();
    assert_eq!(progress.last(), Some(&format!("Status: Downloaded newer image for {reference}")), "{progress:?}");
    assert_eq!(fx.inspect_image(&reference).await.unwrap().id, second.id);
    let old = fx.inspect_image(&first.id).await.unwrap();
    assert!(old.tags.is_empty(), "the old image lost its tag: {:?}", old.tags);
    assert_eq!(fx.inspect_image(&format!("{repo}@{}", first.digest)).await.unwrap().id, first.id, "by repo digest");
}

pub async fn image_pull_of_the_pushed_test_image_keeps_its_id<R: Runtime>(fx: &Fx<R>) {
    fx.host.ensure();
    let remote = drydock_adapters::testing::test_registry_image();
    let progress = fx.pull(&remote).await.unwrap();
    assert_eq!(progress.last(), Some(&format!("Status: Image is up to date for {remote}")), "{progress:?}");
    let local = fx.inspect_image(&fx.image).await.unwrap();
    let pulled = fx.inspect_image(&remote).await.unwrap();
    assert_eq!(pulled.id, local.id, "content-addressed: pushing and pulling keep the id");
    assert!(pulled.tags.contains(&remote) && pulled.tags.contains(&fx.image), "{:?}", pulled.tags);
}

pub async fn image_remove_by_tag_while_a_container_uses_it_is_conflict<R: Runtime>(fx: &Fx<R>) {
    let (reference, published) = pulled(fx).await;
    let container = container_from(fx, "a", &reference, false).await;
    match fx.remove_image(&reference, false).await {
        Err(RuntimeError::Conflict(message)) => assert!(message.contains(&container[..12]), "{message}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(fx.inspect_image(&reference).await.unwrap().id, published.id, "untouched");
}

pub async fn image_remove_while_a_running_container_uses_it_is_conflict_even_with_force<R: Runtime>(fx: &Fx<R>) {
    let (reference, published) = pulled(fx).await;
    let container = container_from(fx, "a", &reference, true).await;
    for (what, force) in [(&reference, false), (&published.id, false), (&published.id, true)] {
        let r = fx.remove_image(what, force).await;
        assert!(is_conflict(&r), "{what} force={force}: {r:?}");
    }
    assert_eq!(fx.inspect_image(&reference).await.unwrap().id, published.id, "untouched");
    assert_eq!(state(fx, &container).await, ContainerState::Running);
}

/// Docker untags a forced tag removal and reports success even while a running container uses
/// the image: the image stays, untagged, by id.
pub async fn image_force_remove_by_tag_while_running_only_untags<R: Runtime>(fx: &Fx<R>) {
    let (reference, published) = pulled(fx).await;
    let container = container_from(fx, "a", &reference, true).await;
    fx.remove_image(&reference, true).await.unwrap();
    assert!(is_not_found(&fx.inspect_image(&reference).await), "the tag is gone");
    assert!(fx.inspect_image(&published.id).await.unwrap().tags.is_empty(), "the image is not");
    assert_eq!(state(fx, &container).await, ContainerState::Running);
}

pub async fn image_force_remove_with_a_stopped_container_deletes_the_image<R: Runtime>(fx: &Fx<R>) {
    let (reference, published) = pulled(fx).await;
    let container = container_from(fx, "a", &reference, true).await;
    fx.stop(&container).await.unwrap();
    fx.remove_image(&reference, true).await.unwrap();
    assert!(is_not_found(&fx.inspect_image(&published.id).await), "deleted");
    let info = fx.inspect(&container).await.unwrap();
    assert_eq!((info.state, info.image), (ContainerState::Exited, reference), "the container stays");
}

pub async fn image_remove_of_an_unused_image_then_inspect_is_not_found<R: Runtime>(fx: &Fx<R>) {
    let (reference, published) = pulled(fx).await;
    fx.remove_image(&reference, false).await.unwrap();
    let by_digest = format!("{}@{}", fx.repo("app"), published.digest);
    for what in [&reference, &published.id, &by_digest] {
        assert!(is_not_found(&fx.inspect_image(what).await), "{what}");
    }
}

pub async fn image_remove_missing_is_not_found<R: Runtime>(fx: &Fx<R>) {
    for (what, force) in [(format!("{}:1", fx.repo("absent")), false), (format!("sha256:{}", "0".repeat(64)), true)] {
        let r = fx.remove_image(&what, force).await;
        assert!(is_not_found(&r), "{what}: {r:?}");
    }
}

/// Removing one of two tags only untags, even while a running container uses the image.
pub async fn image_remove_one_of_two_tags_only_untags<R: Runtime>(fx: &Fx<R>) {
    let (a, b) = (format!("{}:a", fx.repo("app")), format!("{}:b", fx.repo("app")));
    let published = fx.publish(&[&a, &b]);
    fx.pull(&a).await.unwrap();
    fx.pull(&b).await.unwrap();
    let container = container_from(fx, "a", &a, true).await;
    fx.remove_image(&a, false).await.unwrap();
    assert_eq!(fx.inspect_image(&published.id).await.unwrap().tags, vec![b.clone()]);
    let r = fx.remove_image(&b, false).await;
    assert!(is_conflict(&r), "the last tag of a used image: {r:?}");
    assert_eq!(state(fx, &container).await, ContainerState::Running);
}

pub async fn image_remove_by_id_with_two_tags_needs_force<R: Runtime>(fx: &Fx<R>) {
    let (a, b) = (format!("{}:a", fx.repo("app")), format!("{}:b", fx.repo("app")));
    let published = fx.publish(&[&a, &b]);
    fx.pull(&a).await.unwrap();
    fx.pull(&b).await.unwrap();
    let r = fx.remove_image(&published.id, false).await;
    assert!(is_conflict(&r), "{r:?}");
    fx.remove_image(&published.id, true).await.unwrap();
    for what in [&a, &b, &published.id] {
        assert!(is_not_found(&fx.inspect_image(what).await), "{what}");
    }
}

pub async fn image_a_container_pins_the_image_id_not_the_tag<R: Runtime>(fx: &Fx<R>) {
    let (reference, first) = pulled(fx).await;
    let container = container_from(fx, "a", &reference, false).await;
    let second = fx.publish(&[&reference]);
    fx.pull(&reference).await.unwrap();
    assert_eq!(fx.inspect_image(&reference).await.unwrap().id, second.id);
    fx.remove_image(&reference, false).await.unwrap();
    assert!(is_not_found(&fx.inspect_image(&second.id).await), "the new image was unused");
    let r = fx.remove_image(&first.id, false).await;
    assert!(is_conflict(&r), "the container still uses the old image: {r:?}");
    assert_eq!(fx.inspect(&container).await.unwrap().image, reference, "as given at create");
}

pub async fn ports_are_published_while_running<R: Runtime>(fx: &Fx<R>) {
    use drydock_engine::api::container::{PortMapping, Protocol};
    let mut spec = fx.spec("a", &[]);
    spec.ports = vec![
        PortMapping { protocol: Protocol::Tcp, host_port: None, container_port: 8080, host_ip: None },
        PortMapping { protocol: Protocol::Udp, host_port: None, container_port: 5353, host_ip: None },
    ];
    let id = fx.create_with(spec).await;
    assert!(fx.inspect(&id).await.unwrap().ports.is_empty(), "nothing is published before start");
    fx.start(&id).await;
    let ports = fx.inspect(&id).await.unwrap().ports;
    let published: Vec<(u16, Protocol)> = ports.iter().map(|p| (p.container_port, p.protocol)).collect();
    assert_eq!(published, vec![(5353, Protocol::Udp), (8080, Protocol::Tcp)], "{ports:?}");
    assert!(ports.iter().all(|p| p.host_port > 0), "{ports:?}");
    fx.stop(&id).await.unwrap();
    assert!(fx.inspect(&id).await.unwrap().ports.is_empty(), "nothing is published once stopped");
}

pub async fn a_bind_mount_is_visible_inside<R: Runtime>(fx: &Fx<R>) {
    use drydock_engine::api::container::Mount;
    let mut spec = fx.spec("a", &["sh", "-c", "test -d /data/mounted"]);
    spec.mounts = vec![Mount { source: "/".into(), target: "/data/mounted".into(), read_only: true }];
    let id = fx.create_with(spec).await;
    fx.start(&id).await;
    let info =
        fx.eventually("exit", async || fx.inspect(&id).await.ok().filter(|i| i.state == ContainerState::Exited)).await;
    assert_eq!(info.exit_code, Some(0), "the mount target exists inside the container");
}

// Failures as Docker 20.10 has them: starts that fail and keep failing, creates it refuses,
// the main process and signals, removals in progress, ambiguous prefixes, named volumes,
// registries out of reach, and the owner-labelled event stream.

fn invalid<T: std::fmt::Debug>(r: Result<T, RuntimeError>) -> String {
    match r {
        Err(RuntimeError::Invalid(message)) => message,
        other => panic!("expected Invalid, got {other:?}"),
    }
}

fn transient<T: std::fmt::Debug>(r: Result<T, RuntimeError>) -> String {
    match r {
        Err(RuntimeError::Transient(message)) => message,
        other => panic!("expected Transient, got {other:?}"),
    }
}

/// A create the runtime must refuse as invalid, leaving nothing behind: its message.
async fn refused<R: Runtime>(fx: &Fx<R>, spec: drydock_engine::runtime::ContainerCreate) -> String {
    let message = invalid(fx.try_create(spec).await);
    assert!(fx.list(&[(RUN_LABEL, &fx.case)]).await.is_empty(), "nothing was created");
    message
}

/// The exit code of `sh -c SCRIPT` once it has ended by itself.
async fn exit_code_of<R: Runtime>(fx: &Fx<R>, suffix: &str, script: &str) -> Option<i64> {
    let id = fx.create_with(fx.spec(suffix, &["sh", "-c", script])).await;
    fx.start(&id).await;
    fx.eventually("the script to end", async || {
        fx.inspect(&id).await.ok().filter(|i| i.state == ContainerState::Exited)
    })
    .await
    .exit_code
}

/// Start `sh -c SCRIPT` and give the shell time to set its traps: a TERM that reaches PID 1
/// before its handler is set is lost (the kernel drops a signal PID 1 has no handler for).
async fn started_script<R: Runtime>(fx: &Fx<R>, suffix: &str, script: &str) -> String {
    let id = fx.create_with(fx.spec(suffix, &["sh", "-c", script])).await;
    fx.start(&id).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    id
}

/// A container of this case publishing TCP port 80 on `host_port`, running `command`.
fn publishing<R: Runtime>(
    fx: &Fx<R>,
    suffix: &str,
    host_port: Option<u16>,
    command: &[&str],
) -> drydock_engine::runtime::ContainerCreate {
    use drydock_engine::api::container::{PortMapping, Protocol};
    let mut spec = fx.spec(suffix, command);
    spec.ports = vec![PortMapping { protocol: Protocol::Tcp, host_port, container_port: 80, host_ip: None }];
    spec
}

fn mount(source: &str, target: &str) -> drydock_engine::api::container::Mount {
    drydock_engine::api::container::Mount { source: source.into(), target: target.into(), read_only: false }
}

/// Docker: a command runc cannot find fails the start with 400 `failed to create shim task: OCI
/// runtime create failed: runc create failed: unable to start container process: exec:
/// "NAME": executable file not found in $PATH: unknown`; the container stays `created`, with
/// exit code 127 and that text as `State.Error`.
pub async fn start_of_a_command_not_in_the_image_is_invalid_and_leaves_it_created<R: Runtime>(fx: &Fx<R>) {
    let id = fx.create_with(fx.spec("a", &["drydock-no-such-command"])).await;
    let message = invalid(fx.exec(RuntimeRequest::StartContainer { id: id.clone() }).await);
    assert!(message.contains("exec: \"drydock-no-such-command\": executable file not found in $PATH"), "{message}");
    let info = fx.inspect(&id).await.unwrap();
    assert_eq!((info.state, info.exit_code), (ContainerState::Created, Some(127)));
    assert_eq!(info.error.as_deref(), Some(message.as_str()), "State.Error is the start's error");
}

/// Docker: every later start of it fails the same way: the failure persists.
pub async fn start_of_a_command_not_in_the_image_fails_every_time<R: Runtime>(fx: &Fx<R>) {
    let id = fx.create_with(fx.spec("a", &["drydock-no-such-command"])).await;
    let first = invalid(fx.exec(RuntimeRequest::StartContainer { id: id.clone() }).await);
    let second = invalid(fx.exec(RuntimeRequest::StartContainer { id: id.clone() }).await);
    assert_eq!(first, second);
    let info = fx.inspect(&id).await.unwrap();
    assert_eq!((info.state, info.exit_code), (ContainerState::Created, Some(127)));
}

/// Docker: a start that fails emits no event: the container's only event is `create`.
pub async fn a_command_not_in_the_image_emits_only_a_create_event<R: Runtime>(fx: &Fx<R>) {
    let id = fx.create_with(fx.spec("a", &["drydock-no-such-command"])).await;
    invalid(fx.exec(RuntimeRequest::StartContainer { id: id.clone() }).await);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(actions(&fx.events(&id).await), vec![EventAction::Create]);
}

/// Docker: a path to no file fails the same way: 400 `exec: "/no/such": stat /no/such: no such
/// file or directory`, created, 127.
pub async fn start_of_a_missing_path_is_invalid<R: Runtime>(fx: &Fx<R>) {
    let id = fx.create_with(fx.spec("a", &["/drydock/no/such"])).await;
    let message = invalid(fx.exec(RuntimeRequest::StartContainer { id: id.clone() }).await);
    assert!(message.contains("stat /drydock/no/such: no such file or directory"), "{message}");
    let info = fx.inspect(&id).await.unwrap();
    assert_eq!((info.state, info.exit_code), (ContainerState::Created, Some(127)));
}

/// Docker: a command a shell script cannot find is the script's business: the start succeeds,
/// `sh` says "not found" and the script ends with 127 (or goes on).
pub async fn a_command_missing_inside_a_script_exits_127<R: Runtime>(fx: &Fx<R>) {
    assert_eq!(exit_code_of(fx, "a", "drydock-no-such-command").await, Some(127));
    assert_eq!(exit_code_of(fx, "b", "drydock-no-such-command; exit 5").await, Some(5));
}

/// Docker: a host port another running container publishes fails the start with 500 `driver
/// failed programming external connectivity on endpoint NAME (ID): Bind for 0.0.0.0:PORT
/// failed: port is already allocated` (the container stays `created`, exit code 128, no event);
/// once the holder stops, the same start succeeds.
pub async fn start_with_a_host_port_another_container_holds_fails_until_it_is_freed<R: Runtime>(fx: &Fx<R>) {
    let port = fx.host.free_port();
    let holder = fx.create_with(publishing(fx, "holder", Some(port), &[])).await;
    let waiting = fx.create_with(publishing(fx, "waiting", Some(port), &[])).await;
    fx.start(&holder).await;
    for _ in 0..2 {
        let message = transient(fx.exec(RuntimeRequest::StartContainer { id: waiting.clone() }).await);
        assert!(message.starts_with("500: driver failed programming external connectivity on endpoint"), "{message}");
        assert!(message.ends_with(&format!("Bind for 0.0.0.0:{port} failed: port is already allocated")), "{message}");
        let info = fx.inspect(&waiting).await.unwrap();
        assert_eq!((info.state, info.exit_code), (ContainerState::Created, Some(128)));
        assert!(info.error.is_some_and(|e| e.contains("port is already allocated")));
    }
    assert_eq!(actions(&fx.events(&waiting).await), vec![EventAction::Create], "failed starts emit nothing");
    fx.stop(&holder).await.unwrap();
    fx.start(&waiting).await;
    let info = fx.inspect(&waiting).await.unwrap();
    assert_eq!(info.ports.first().map(|p| p.host_port), Some(port));
}

/// Docker: a host port a process on the host listens on fails the start with 500 `... Error
/// starting userland proxy: listen tcp4 0.0.0.0:PORT: bind: address already in use` (created,
/// 128) until the process lets go of it.
pub async fn start_with_a_host_port_a_host_process_holds_fails_until_it_is_freed<R: Runtime>(fx: &Fx<R>) {
    let hold = fx.host.listen();
    let port = hold.port;
    let id = fx.create_with(publishing(fx, "a", Some(port), &[])).await;
    let message = transient(fx.exec(RuntimeRequest::StartContainer { id: id.clone() }).await);
    assert!(
        message.ends_with(&format!(
            "Error starting userland proxy: listen tcp4 0.0.0.0:{port}: bind: address already in use"
        )),
        "{message}"
    );
    let info = fx.inspect(&id).await.unwrap();
    assert_eq!((info.state, info.exit_code), (ContainerState::Created, Some(128)));
    drop(hold);
    fx.start(&id).await;
    assert_eq!(state(fx, &id).await, ContainerState::Running);
}

/// Docker: a failed restart of a container that exited with a non-zero code keeps that code (it
/// writes 128 only over 0) and sets `State.Error`; the state stays `exited`.
pub async fn a_failed_restart_keeps_the_earlier_exit_code<R: Runtime>(fx: &Fx<R>) {
    let port = fx.host.free_port();
    let exits = fx.create_with(publishing(fx, "exits", Some(port), &["sh", "-c", "exit 3"])).await;
    fx.start(&exits).await;
    fx.eventually("exit 3", async || (state(fx, &exits).await == ContainerState::Exited).then_some(())).await;
    let holder = fx.create_with(publishing(fx, "holder", Some(port), &[])).await;
    fx.start(&holder).await;
    transient(fx.exec(RuntimeRequest::StartContainer { id: exits.clone() }).await);
    let info = fx.inspect(&exits).await.unwrap();
    assert_eq!((info.state, info.exit_code), (ContainerState::Exited, Some(3)));
    assert!(info.error.is_some_and(|e| e.contains("port is already allocated")));
}

/// Docker: a successful start clears `State.Error` (and the exit code) a failed one left.
pub async fn a_good_start_clears_the_error_of_a_failed_one<R: Runtime>(fx: &Fx<R>) {
    let hold = fx.host.listen();
    let id = fx.create_with(publishing(fx, "a", Some(hold.port), &[])).await;
    transient(fx.exec(RuntimeRequest::StartContainer { id: id.clone() }).await);
    assert!(fx.inspect(&id).await.unwrap().error.is_some());
    drop(hold);
    fx.start(&id).await;
    let info = fx.inspect(&id).await.unwrap();
    assert_eq!((info.state, info.exit_code, info.error), (ContainerState::Running, None, None));
}

/// Docker: host port 0 (like no host port) gets a free port of the ephemeral range at start,
/// reported in inspect; none before the start.
pub async fn host_port_zero_gets_an_ephemeral_port_reported_in_inspect<R: Runtime>(fx: &Fx<R>) {
    let id = fx.create_with(publishing(fx, "a", Some(0), &[])).await;
    assert!(fx.inspect(&id).await.unwrap().ports.is_empty());
    fx.start(&id).await;
    let ports = fx.inspect(&id).await.unwrap().ports;
    assert_eq!(ports.len(), 1, "{ports:?}");
    assert!((32_768..=60_999).contains(&ports[0].host_port), "{ports:?}");
    assert_eq!(ports[0].container_port, 80);
}

/// Docker: a mount source that is not absolute names a volume, and `rel/src` is no volume name:
/// 400 `create rel/src: "rel/src" includes invalid characters for a local volume name, only
/// "[a-zA-Z0-9][a-zA-Z0-9_.-]" are allowed. If you intended to pass a host directory, use
/// absolute path`.
pub async fn create_with_a_relative_mount_source_is_invalid<R: Runtime>(fx: &Fx<R>) {
    let mut spec = fx.spec("a", &[]);
    spec.mounts = vec![mount("rel/src", "/data")];
    assert_eq!(
        refused(fx, spec).await,
        "create rel/src: \"rel/src\" includes invalid characters for a local volume name, only \"[a-zA-Z0-9][a-zA-Z0-9_.-]\" are allowed. If you intended to pass a host directory, use absolute path"
    );
}

/// Docker: a relative target is an invalid volume specification (20.10 answers 500, though it
/// can never succeed: the adapter makes it Invalid): `invalid volume specification: '/tmp:data':
/// invalid mount config for type "bind": invalid mount path: 'data' mount path must be absolute`.
pub async fn create_with_a_relative_mount_target_is_invalid<R: Runtime>(fx: &Fx<R>) {
    let mut spec = fx.spec("a", &[]);
    spec.mounts = vec![mount("/tmp", "data")];
    assert_eq!(
        refused(fx, spec).await,
        "invalid volume specification: '/tmp:data': invalid mount config for type \"bind\": invalid mount path: 'data' mount path must be absolute"
    );
}

/// Docker: 400 `Duplicate mount point: /data` (targets compared cleaned: `/data/` is `/data`).
pub async fn create_with_two_mounts_on_one_target_is_invalid<R: Runtime>(fx: &Fx<R>) {
    let mut spec = fx.spec("a", &[]);
    spec.mounts = vec![mount("/tmp", "/data"), mount("/var", "/data/")];
    assert_eq!(refused(fx, spec).await, "Duplicate mount point: /data");
}

/// Docker: 500 (Invalid here) `invalid volume specification: '/tmp:/': invalid mount config for
/// type "bind": invalid specification: destination can't be '/'`.
pub async fn create_with_a_mount_on_root_is_invalid<R: Runtime>(fx: &Fx<R>) {
    let mut spec = fx.spec("a", &[]);
    spec.mounts = vec![mount("/tmp", "/")];
    assert_eq!(
        refused(fx, spec).await,
        "invalid volume specification: '/tmp:/': invalid mount config for type \"bind\": invalid specification: destination can't be '/'"
    );
}

/// Docker's name grammar is `[a-zA-Z0-9][a-zA-Z0-9_.-]+`: one character is too short (400).
pub async fn create_with_a_one_character_name_is_invalid<R: Runtime>(fx: &Fx<R>) {
    let mut spec = fx.spec("a", &[]);
    spec.name = "x".into();
    assert_eq!(refused(fx, spec).await, "Invalid container name (x), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed");
}

/// Docker: 400 `invalid environment variable: =x` for an entry with an empty name.
pub async fn create_with_an_empty_env_name_is_invalid<R: Runtime>(fx: &Fx<R>) {
    let mut spec = fx.spec("a", &[]);
    spec.env.insert(String::new(), "x".into());
    assert_eq!(refused(fx, spec).await, "invalid environment variable: =x");
}

/// Docker: an image reference outside its grammar (`app-`, `app:-x`, `a..b`) is 400 `invalid
/// reference format`, not "No such image".
pub async fn create_with_an_image_reference_outside_the_grammar_is_invalid<R: Runtime>(fx: &Fx<R>) {
    for image in ["drydock-app-", "drydock-app:-x", "drydock..app"] {
        let mut spec = fx.spec("a", &[]);
        spec.image = image.into();
        assert_eq!(refused(fx, spec).await, "invalid reference format", "{image}");
    }
}

/// Docker: an uppercase repository is 400 `invalid reference format: repository name must be
/// lowercase` (a first component is a registry only with a `.` or `:`, or `localhost`).
pub async fn create_with_an_uppercase_repository_is_invalid<R: Runtime>(fx: &Fx<R>) {
    for image in ["Drydock-App", "DRYDOCK/app:1"] {
        let mut spec = fx.spec("a", &[]);
        spec.image = image.into();
        assert_eq!(refused(fx, spec).await, "invalid reference format: repository name must be lowercase", "{image}");
    }
}

/// Docker checks a create in order: the environment, then the image, then the name, then the
/// mounts; the first failure answers.
pub async fn create_checks_environment_image_name_then_mounts<R: Runtime>(fx: &Fx<R>) {
    let mut env_and_image = fx.spec("a", &[]);
    env_and_image.env.insert(String::new(), "x".into());
    env_and_image.image = "drydock-test/no-such-image:1".into();
    assert_eq!(invalid(fx.try_create(env_and_image).await), "invalid environment variable: =x");
    let mut image_and_name = fx.spec("a", &[]);
    image_and_name.image = "drydock-test/no-such-image:1".into();
    image_and_name.name = "x".into();
    assert!(is_not_found(&fx.try_create(image_and_name).await));
    let mut name_and_mount = fx.spec("a", &[]);
    name_and_mount.name = "x".into();
    name_and_mount.mounts = vec![mount("/tmp", "/")];
    assert!(invalid(fx.try_create(name_and_mount).await).starts_with("Invalid container name (x)"));
    assert!(fx.list(&[(RUN_LABEL, &fx.case)]).await.is_empty());
}

/// Docker names a container created without a name (`adjective_surname`); it is found by it.
pub async fn create_without_a_name_gets_a_generated_one<R: Runtime>(fx: &Fx<R>) {
    let mut spec = fx.spec("a", &[]);
    spec.name = String::new();
    let id = fx.create_with(spec).await;
    let name = fx.inspect(&id).await.unwrap().name;
    assert!(name.contains('_') && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'), "{name}");
    assert_eq!(fx.inspect(&name).await.unwrap().id, id);
}

/// Docker: `sh -c` ends with the status of the last command it ran: `false || exit 7` is 7,
/// `true && false` is 1, `exit 300` is 44 (statuses are modulo 256).
pub async fn a_script_ends_with_the_status_of_its_last_command<R: Runtime>(fx: &Fx<R>) {
    assert_eq!(exit_code_of(fx, "a", "false || exit 7").await, Some(7));
    assert_eq!(exit_code_of(fx, "b", "true && false").await, Some(1));
    assert_eq!(exit_code_of(fx, "c", "exit 300").await, Some(44));
}

/// Docker: inside the container, `/etc` exists and `/tmp` does not (the test image is busybox's
/// `/bin` alone; Docker adds `/dev`, `/etc`, `/proc`, `/sys`).
pub async fn test_d_sees_the_containers_directories<R: Runtime>(fx: &Fx<R>) {
    let script = "test -d /etc && test -d /proc && test -d /bin && ! test -d /tmp";
    assert_eq!(exit_code_of(fx, "a", script).await, Some(0));
}

/// Docker: a script whose sleeps add up to D runs for D, then exits with its status.
pub async fn a_script_whose_sleeps_end_exits_after_them<R: Runtime>(fx: &Fx<R>) {
    runs_a_while_then_exits_6(fx, "sleep 0.5; exit 6").await;
}

/// Start `sh -c script`: it is still running just after its start, then exits 6.
async fn runs_a_while_then_exits_6<R: Runtime>(fx: &Fx<R>, script: &str) {
    let id = fx.create_with(fx.spec("a", &["sh", "-c", script])).await;
    fx.start(&id).await;
    assert_eq!(state(fx, &id).await, ContainerState::Running, "still sleeping");
    let info = fx
        .eventually("exit 6", async || fx.inspect(&id).await.ok().filter(|i| i.state == ContainerState::Exited))
        .await;
    assert_eq!(info.exit_code, Some(6));
}

/// Docker: `sleep infinity` runs until it is stopped (killed: it ignores TERM as PID 1).
pub async fn sleep_infinity_runs_until_stopped<R: Runtime>(fx: &Fx<R>) {
    let id = fx.create_with(fx.spec("a", &["sleep", "infinity"])).await;
    fx.start(&id).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(state(fx, &id).await, ContainerState::Running);
    fx.stop(&id).await.unwrap();
    assert_eq!(fx.inspect(&id).await.unwrap().exit_code, Some(137));
}

/// Docker: stop sends TERM; a shell that traps it with `exit 0` exits 0 once its current
/// foreground command (`sleep 0.1`) ends, well within the grace period.
pub async fn stop_of_a_script_trapping_term_exits_with_the_trap_status<R: Runtime>(fx: &Fx<R>) {
    let id = started_script(fx, "a", "trap 'exit 0' TERM; while true; do sleep 0.1; done").await;
    fx.stop(&id).await.unwrap();
    let info = fx.inspect(&id).await.unwrap();
    assert_eq!((info.state, info.exit_code), (ContainerState::Exited, Some(0)));
}

/// Docker: the trap's action decides the status: `trap 'exit 3' TERM` exits 3 on stop.
pub async fn a_term_trap_decides_the_exit_code<R: Runtime>(fx: &Fx<R>) {
    let id = started_script(fx, "a", "trap 'exit 3' TERM; while true; do sleep 0.1; done").await;
    fx.stop(&id).await.unwrap();
    assert_eq!(fx.inspect(&id).await.unwrap().exit_code, Some(3));
}

/// Docker: a process that ignores TERM (`trap '' TERM`) is killed when the grace period ends:
/// 137.
pub async fn stop_of_a_script_ignoring_term_kills_it_with_137<R: Runtime>(fx: &Fx<R>) {
    let id = started_script(fx, "a", "trap '' TERM; while true; do sleep 0.1; done").await;
    fx.stop(&id).await.unwrap();
    assert_eq!(fx.inspect(&id).await.unwrap().exit_code, Some(137));
}

/// Docker (POSIX sh): a trap runs only once the foreground command ends, so `trap 'exit 0'
/// TERM; sleep 3600` is killed (137) when the grace period ends.
pub async fn a_term_trap_waits_for_the_foreground_command<R: Runtime>(fx: &Fx<R>) {
    let id = started_script(fx, "a", "trap 'exit 0' TERM; sleep 3600").await;
    fx.stop(&id).await.unwrap();
    assert_eq!(fx.inspect(&id).await.unwrap().exit_code, Some(137));
}

/// Docker: stop waits up to the grace period; a process that ends by itself within it exits
/// with its own status (here 6), not 137.
pub async fn stop_waits_for_a_process_that_ends_within_the_grace_period<R: Runtime>(fx: &Fx<R>) {
    let id = fx.create_with(fx.spec("a", &["sh", "-c", "sleep 0.4; exit 6"])).await;
    fx.start(&id).await;
    fx.stop(&id).await.unwrap();
    assert_eq!(fx.inspect(&id).await.unwrap().exit_code, Some(6));
}

/// Docker: while a removal is in progress the container is `removing` (in inspect and in label
/// lists), a second remove gets 409 `removal of container NAME is already in progress`, a start
/// 409 `container is marked for removal and cannot be started`, a stop 304 (done); then it is
/// gone. Docker removes quickly: its side fills the container with files so that deleting its
/// layer takes a moment, and polls; an answer that finds it gone already is accepted there, the
/// simulated runtime holds the removal open and must give each answer.
pub async fn a_removal_in_progress_shows_removing_and_refuses_a_second_remove_and_a_start<R: Runtime>(fx: &Fx<R>) {
    for attempt in 0..3 {
        if watch_a_removal(fx, &format!("a{attempt}"), attempt).await {
            return;
        }
    }
    panic!("the removal was never seen in progress (in 3 attempts, each slower)");
}

/// Remove a stopped container slowly and check every answer while it is `removing`; whether
/// that state was seen before it was gone.
async fn watch_a_removal<R: Runtime>(fx: &Fx<R>, suffix: &str, attempt: u32) -> bool {
    let id = exited(fx, suffix, 0).await;
    let name = fx.name(suffix);
    let removal = fx.host.begin_slow_removal(&id, attempt);
    let gone = |r: &Result<RuntimeReply, RuntimeError>| is_not_found(r);
    let mut watched = false;
    for _ in 0..5_000 {
        match fx.inspect(&id).await {
            Ok(info) if info.state == ContainerState::Removing => {
                let second = fx.remove(&name, false).await;
                let in_progress = format!("removal of container {name} is already in progress");
                assert!(second == Err(RuntimeError::Conflict(in_progress)) || gone(&second), "{second:?}");
                let start = fx.exec(RuntimeRequest::StartContainer { id: id.clone() }).await;
                let marked = "container is marked for removal and cannot be started".to_string();
                assert!(start == Err(RuntimeError::Conflict(marked)) || gone(&start), "{start:?}");
                let stop = fx.stop(&id).await;
                assert!(stop == Ok(RuntimeReply::Done) || gone(&stop), "{stop:?}");
                let listed: Vec<(String, ContainerState)> =
                    fx.list(&[(RUN_LABEL, &fx.case)]).await.into_iter().map(|c| (c.id, c.state)).collect();
                let removing = vec![(id.clone(), ContainerState::Removing)];
                assert!(listed == removing || listed.is_empty(), "{listed:?}");
                watched = true;
                break;
            }
            Ok(info) => assert_eq!(info.state, ContainerState::Exited, "not begun yet"),
            Err(RuntimeError::NotFound(_)) => break,
            Err(e) => panic!("{e}"),
        }
    }
    tokio::task::spawn_blocking(move || removal.wait()).await.unwrap().unwrap();
    assert!(is_not_found(&fx.inspect(&id).await), "gone once the removal completes");
    watched
}

/// Docker: a prefix several container ids share is an error of its own, 500 `Multiple IDs found
/// with provided prefix: P` (Invalid: only a longer id names one container), never NotFound.
pub async fn an_ambiguous_id_prefix_is_invalid_not_not_found<R: Runtime>(fx: &Fx<R>) {
    let mut ids = Vec::new();
    for i in 0..17 {
        ids.push(fx.create(&format!("c{i}")).await);
    }
    // 17 ids, 16 hex digits: two share their first.
    let prefix =
        ids.iter().find_map(|a| ids.iter().find(|b| *b != a && b[..1] == a[..1]).map(|_| a[..1].to_string())).unwrap();
    let message = format!("Multiple IDs found with provided prefix: {prefix}");
    assert_eq!(invalid(fx.inspect(&prefix).await), message);
    assert_eq!(invalid(fx.exec(RuntimeRequest::StartContainer { id: prefix.clone() }).await), message);
}

/// Docker: a mount source without a slash names a local volume, created with the container and
/// kept when the container is removed (`docker rm` without `-v`); `docker volume rm` removes it.
pub async fn a_mount_source_without_a_slash_creates_a_volume_that_outlives_the_container<R: Runtime>(fx: &Fx<R>) {
    let volume = fx.volume("data");
    let mut spec = fx.spec("a", &["sh", "-c", "test -d /data"]);
    spec.mounts = vec![mount(&volume, "/data")];
    let id = fx.create_with(spec).await;
    assert!(fx.host.volume_exists(&volume), "created with the container");
    fx.start(&id).await;
    fx.eventually("exit", async || (state(fx, &id).await == ContainerState::Exited).then_some(())).await;
    assert_eq!(fx.inspect(&id).await.unwrap().exit_code, Some(0), "mounted on /data");
    fx.remove(&id, false).await.unwrap();
    assert!(fx.host.volume_exists(&volume), "kept after the container");
    fx.host.remove_volume(&volume).unwrap();
    assert!(!fx.host.volume_exists(&volume));
}

/// Docker: an image's `VOLUME` gives each container made from it an anonymous volume (a
/// generated name of 64 hex digits, no labels) mounted there, unless a mount covers the path;
/// the runtime contract's removal (Docker's `rm -v`) removes it with the container, where a
/// plain `docker rm` leaves it for ever. A named volume mounted on another `VOLUME` path stays.
pub async fn an_images_volume_is_anonymous_and_removed_with_its_container<R: Runtime>(fx: &Fx<R>) {
    let dockerfile = format!("FROM drydock-test/busybox:latest\nLABEL {RUN_LABEL}={}\nVOLUME /data /cache\n", fx.case);
    let context = fx.context("ctx", &[("Dockerfile", &dockerfile)]);
    let tag = fx.tag("volumes");
    fx.build(&context, &tag, None).await.unwrap();
    let named = fx.volume("cache");
    let before: std::collections::BTreeSet<String> = list_volumes(fx, &[]).await.into_iter().collect();
    let mut spec = fx.spec("a", &["sh", "-c", "test -d /data && test -d /cache"]);
    spec.image = tag.clone();
    spec.mounts = vec![mount(&named, "/cache")];
    let id = fx.create_with(spec).await;
    // Other cases make volumes meanwhile; an anonymous one has a generated name.
    let generated = |name: &&String| name.len() == 64 && name.bytes().all(|b| b.is_ascii_hexdigit());
    let made: Vec<String> = list_volumes(fx, &[]).await.into_iter().filter(|n| !before.contains(n)).collect();
    let anonymous: Vec<&String> = made.iter().filter(generated).collect();
    assert_eq!(anonymous.len(), 1, "one anonymous volume, for /data and not /cache: {made:?}");
    assert!(made.contains(&named), "the named volume, made by its mount: {made:?}");
    fx.start(&id).await;
    fx.eventually("exit", async || (state(fx, &id).await == ContainerState::Exited).then_some(())).await;
    assert_eq!(fx.inspect(&id).await.unwrap().exit_code, Some(0), "both paths are directories");
    fx.remove(&id, false).await.unwrap();
    assert!(!fx.host.volume_exists(anonymous[0]), "the anonymous volume goes with its container");
    assert!(fx.host.volume_exists(&named), "a named volume stays");
}

/// Docker: a volume a container (in any state) mounts cannot be removed: 409 `remove NAME:
/// volume is in use - [ID]`.
pub async fn a_volume_in_use_cannot_be_removed<R: Runtime>(fx: &Fx<R>) {
    let volume = fx.volume("data");
    let mut spec = fx.spec("a", &[]);
    spec.mounts = vec![mount(&volume, "/data")];
    let id = fx.create_with(spec).await;
    match fx.host.remove_volume(&volume) {
        Err(RuntimeError::Conflict(message)) => {
            assert_eq!(message, format!("remove {volume}: volume is in use - [{id}]"));
        }
        other => panic!("{other:?}"),
    }
    fx.remove(&id, false).await.unwrap();
    fx.host.remove_volume(&volume).unwrap();
}

/// Docker: a one-character volume name is too short: 400 `create a: volume name is too short,
/// names should be at least two alphanumeric characters`.
pub async fn a_one_character_volume_name_is_invalid<R: Runtime>(fx: &Fx<R>) {
    let mut spec = fx.spec("a", &[]);
    spec.mounts = vec![mount("a", "/data")];
    assert_eq!(
        refused(fx, spec).await,
        "create a: volume name is too short, names should be at least two alphanumeric characters"
    );
}

/// Docker registers mounts one by one: a volume created for an earlier mount stays when a later
/// one fails the create (nothing else is created).
pub async fn a_volume_made_before_a_failing_mount_stays<R: Runtime>(fx: &Fx<R>) {
    let volume = fx.volume("early");
    let mut spec = fx.spec("a", &[]);
    spec.mounts = vec![mount(&volume, "/a"), mount("/tmp", "/a")];
    assert_eq!(refused(fx, spec).await, "Duplicate mount point: /a");
    assert!(fx.host.volume_exists(&volume));
}

/// Docker: a pull from a registry nothing answers is 500 `Get "http://127.0.0.1:1/v2/": dial tcp
/// 127.0.0.1:1: connect: connection refused` (plain HTTP for a loopback registry): Transient,
/// with Docker's text, never NotFound; nothing is stored.
pub async fn image_pull_from_an_unreachable_registry_is_transient<R: Runtime>(fx: &Fx<R>) {
    let reference = "127.0.0.1:1/drydock-test/unreachable:1";
    assert_eq!(
        transient(fx.pull(reference).await),
        "500: Get \"http://127.0.0.1:1/v2/\": dial tcp 127.0.0.1:1: connect: connection refused"
    );
    assert!(is_not_found(&fx.inspect_image(reference).await));
}

/// Docker: a pull of a reference outside the grammar is 400 `invalid reference format`.
pub async fn image_pull_of_an_invalid_reference_is_invalid<R: Runtime>(fx: &Fx<R>) {
    for reference in ["drydock-app-", "drydock-app:-x"] {
        assert_eq!(invalid(fx.pull(reference).await), "invalid reference format", "{reference}");
    }
}

/// Docker: inspecting an image by a reference outside the grammar is 400 `no such image: REF:
/// invalid reference format` (Invalid, although the text says "no such image").
pub async fn image_inspect_of_an_invalid_reference_is_invalid<R: Runtime>(fx: &Fx<R>) {
    let message = invalid(fx.inspect_image("drydock-app-").await);
    assert_eq!(message, "no such image: drydock-app-: invalid reference format");
}

/// The events of containers carrying an owner uid label, read from the runtime's stream until
/// `id` is destroyed.
async fn streamed_until_destroyed(
    stream: &mut tokio::sync::mpsc::UnboundedReceiver<drydock_adapters::RuntimeNotice>,
    id: &str,
) -> Vec<drydock_engine::runtime::RuntimeEvent> {
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while let Ok(Some(notice)) = tokio::time::timeout_at(deadline, stream.recv()).await {
        let drydock_adapters::RuntimeNotice::Event(event) = notice else { continue };
        let done = event.container_id == id && event.action == EventAction::Destroy;
        seen.push(event);
        if done {
            break;
        }
    }
    seen
}

/// Docker: the event stream filtered on the owner uid label delivers, for a container carrying
/// it, `create`, `start`, `die` with its exit code and `destroy`, in that order, each with the
/// container's labels.
pub async fn owner_label_event_stream_delivers_create_start_die_destroy_in_order<R: Runtime>(fx: &Fx<R>) {
    use drydock_engine::api::names::LABEL_OWNER_UID;
    let mut stream = fx.rt.events().expect("the runtime streams events");
    let uid = format!("{}-uid", fx.case);
    let mut spec = fx.spec("a", &["sh", "-c", "exit 3"]);
    spec.labels.insert(LABEL_OWNER_UID.into(), uid.clone());
    let id = fx.create_with(spec).await;
    fx.start(&id).await;
    fx.eventually("exit", async || (state(fx, &id).await == ContainerState::Exited).then_some(())).await;
    fx.remove(&id, false).await.unwrap();
    let ours: Vec<_> =
        streamed_until_destroyed(&mut stream, &id).await.into_iter().filter(|e| e.container_id == id).collect();
    let want =
        vec![EventAction::Create, EventAction::Start, EventAction::Die { exit_code: Some(3) }, EventAction::Destroy];
    assert_eq!(actions(&ours), want);
    for event in &ours {
        assert_eq!(event.labels.get(LABEL_OWNER_UID), Some(&uid), "{event:?}");
        assert_eq!(event.labels.get(RUN_LABEL), Some(&fx.case), "every label: {event:?}");
    }
}

/// Docker: containers without the owner uid label are not in that stream.
pub async fn owner_label_event_stream_leaves_out_unlabelled_containers<R: Runtime>(fx: &Fx<R>) {
    use drydock_engine::api::names::LABEL_OWNER_UID;
    let mut stream = fx.rt.events().expect("the runtime streams events");
    let plain = fx.create("plain").await;
    fx.remove(&plain, false).await.unwrap();
    let mut spec = fx.spec("owned", &[]);
    spec.labels.insert(LABEL_OWNER_UID.into(), format!("{}-uid", fx.case));
    let owned = fx.create_with(spec).await;
    fx.remove(&owned, false).await.unwrap();
    let seen = streamed_until_destroyed(&mut stream, &owned).await;
    assert!(seen.iter().all(|e| e.container_id != plain), "{seen:?}");
    assert!(seen.iter().all(|e| e.labels.contains_key(LABEL_OWNER_UID)));
    assert_eq!(seen.iter().filter(|e| e.container_id == owned).count(), 2, "create and destroy: {seen:?}");
}

// Networks, volumes, builds and copied files.

fn created_id(r: Result<RuntimeReply, RuntimeError>) -> String {
    match r {
        Ok(RuntimeReply::Created { id }) => id,
        other => panic!("expected Created, got {other:?}"),
    }
}

fn not_found_message<T: std::fmt::Debug>(r: Result<T, RuntimeError>) -> String {
    match r {
        Err(RuntimeError::NotFound(message)) => message,
        other => panic!("expected NotFound, got {other:?}"),
    }
}

fn conflict_message<T: std::fmt::Debug>(r: Result<T, RuntimeError>) -> String {
    match r {
        Err(RuntimeError::Conflict(message)) => message,
        other => panic!("expected Conflict, got {other:?}"),
    }
}

async fn list_networks<R: Runtime>(fx: &Fx<R>, labels: &[(&str, &str)]) -> Vec<drydock_engine::runtime::NetworkInfo> {
    let labels = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    match fx.exec(RuntimeRequest::ListNetworks { labels }).await.unwrap() {
        RuntimeReply::Networks(list) => list,
        other => panic!("list-networks replied {other:?}"),
    }
}

async fn list_volumes<R: Runtime>(fx: &Fx<R>, labels: &[(&str, &str)]) -> Vec<String> {
    let labels = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    match fx.exec(RuntimeRequest::ListVolumes { labels }).await.unwrap() {
        RuntimeReply::Volumes(list) => list.into_iter().map(|v| v.name).collect(),
        other => panic!("list-volumes replied {other:?}"),
    }
}

fn attachment(name: &str, aliases: &[&str]) -> drydock_engine::api::container::NetworkAttachment {
    drydock_engine::api::container::NetworkAttachment {
        name: name.into(),
        aliases: aliases.iter().map(|a| a.to_string()).collect(),
    }
}

async fn remove_network<R: Runtime>(fx: &Fx<R>, id: &str) -> Result<RuntimeReply, RuntimeError> {
    fx.exec(RuntimeRequest::RemoveNetwork { id: id.into() }).await
}

async fn connect<R: Runtime>(
    fx: &Fx<R>,
    network: &str,
    container: &str,
    aliases: &[&str],
) -> Result<RuntimeReply, RuntimeError> {
    let aliases = aliases.iter().map(|a| a.to_string()).collect();
    fx.exec(RuntimeRequest::ConnectNetwork { network: network.into(), container: container.into(), aliases }).await
}

async fn disconnect<R: Runtime>(fx: &Fx<R>, network: &str, container: &str) -> Result<RuntimeReply, RuntimeError> {
    fx.exec(RuntimeRequest::DisconnectNetwork { network: network.into(), container: container.into() }).await
}

/// Docker: a created network is found by name and by id with its labels, listed by label (lists
/// are sorted by name here), removed with 204, and then missing: 404 `network ID not found`.
pub async fn network_create_inspect_list_by_label_and_remove<R: Runtime>(fx: &Fx<R>) {
    const WHICH: &str = "drydock.test/which";
    let (one, two) = (fx.network("one"), fx.network("two"));
    let id = created_id(fx.create_network(&one, &[(WHICH, "one")]).await);
    created_id(fx.create_network(&two, &[(WHICH, "two")]).await);
    let by_name = fx.inspect_network(&one).await.unwrap();
    assert_eq!((by_name.id.as_str(), by_name.name.as_str()), (id.as_str(), one.as_str()));
    assert_eq!(by_name.labels.get(WHICH).map(String::as_str), Some("one"));
    assert_eq!(by_name.labels.get(RUN_LABEL), Some(&fx.case));
    assert!(by_name.containers.is_empty());
    assert_eq!(fx.inspect_network(&id).await.unwrap(), by_name, "by id");
    let names = |list: Vec<drydock_engine::runtime::NetworkInfo>| list.into_iter().map(|n| n.name).collect::<Vec<_>>();
    assert_eq!(names(list_networks(fx, &[(RUN_LABEL, &fx.case), (WHICH, "one")]).await), std::slice::from_ref(&one));
    assert_eq!(names(list_networks(fx, &[(RUN_LABEL, &fx.case)]).await), [one.clone(), two.clone()]);
    assert_eq!(remove_network(fx, &one).await, Ok(RuntimeReply::Done));
    assert_eq!(not_found_message(fx.inspect_network(&id).await), format!("network {id} not found"));
    assert_eq!(not_found_message(remove_network(fx, &one).await), format!("network {one} not found"));
}

/// Docker 20.10: the duplicate check of a network create is best-effort (made as the create
/// begins, some 140 ms before the network exists): three creates of one name at once each make
/// a network of their own. A lookup by the name is then ambiguous (400), by id it is not; once
/// they exist, a further create of the name is refused.
pub async fn creates_of_one_network_name_at_once_each_make_a_network<R: Runtime>(fx: &Fx<R>) {
    let name = fx.network("dup");
    let (a, b, c) =
        tokio::join!(fx.create_network(&name, &[]), fx.create_network(&name, &[]), fx.create_network(&name, &[]));
    let mut ids = vec![created_id(a), created_id(b), created_id(c)];
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3, "three networks");
    let mut listed: Vec<(String, String)> =
        list_networks(fx, &[(RUN_LABEL, &fx.case)]).await.into_iter().map(|n| (n.id, n.name)).collect();
    listed.sort();
    assert_eq!(listed, ids.iter().map(|id| (id.clone(), name.clone())).collect::<Vec<_>>());
    let ambiguous = match fx.inspect_network(&name).await {
        Err(RuntimeError::Invalid(message)) => message,
        other => panic!("expected Invalid, got {other:?}"),
    };
    assert_eq!(ambiguous, format!("3 matches found based on name: network {name} is ambiguous"));
    assert_eq!(fx.inspect_network(&ids[0]).await.map(|n| n.name), Ok(name.clone()));
    assert_eq!(
        conflict_message(fx.create_network(&name, &[]).await),
        format!("network with name {name} already exists")
    );
    for id in &ids {
        assert_eq!(remove_network(fx, id).await, Ok(RuntimeReply::Done));
    }
}

/// Docker (with `CheckDuplicate`): a network name taken is 409 `network with name N already
/// exists`.
pub async fn network_create_with_a_taken_name_is_conflict<R: Runtime>(fx: &Fx<R>) {
    let name = fx.network("n");
    created_id(fx.create_network(&name, &[]).await);
    let message = conflict_message(fx.create_network(&name, &[]).await);
    assert_eq!(message, format!("network with name {name} already exists"));
    assert_eq!(list_networks(fx, &[(RUN_LABEL, &fx.case)]).await.len(), 1);
}

/// Docker: `bridge`, `host` and `none` can be neither created (403 `operation is not permitted on
/// predefined bridge network `) nor removed (403 `bridge is a pre-defined network and cannot be
/// removed`): Invalid.
pub async fn network_builtin_create_and_remove_are_invalid<R: Runtime>(fx: &Fx<R>) {
    for name in drydock_engine::runtime::BUILTIN_NETWORKS {
        let message = invalid(fx.create_network(name, &[]).await);
        assert_eq!(message, format!("operation is not permitted on predefined {name} network "));
        let message = invalid(remove_network(fx, name).await);
        assert_eq!(message, format!("{name} is a pre-defined network and cannot be removed"));
        assert_eq!(fx.inspect_network(name).await.unwrap().name, name, "still there");
    }
}

/// Docker: a network a running container is attached to cannot be removed (403 `error while
/// removing network: network N id ID has active endpoints`: Conflict); its inspect lists the
/// running container; once it stops, the removal succeeds.
pub async fn network_remove_with_a_running_container_is_conflict<R: Runtime>(fx: &Fx<R>) {
    let id = fx.new_network("n").await;
    let name = fx.name("n");
    let mut spec = fx.spec("a", &[]);
    spec.networks = vec![attachment(&id, &["web"])];
    let container = fx.create_with(spec).await;
    assert!(fx.inspect_network(&id).await.unwrap().containers.is_empty(), "no endpoint before it runs");
    fx.start(&container).await;
    assert_eq!(fx.inspect_network(&id).await.unwrap().containers, std::slice::from_ref(&container));
    let message = conflict_message(remove_network(fx, &id).await);
    assert_eq!(message, format!("error while removing network: network {name} id {id} has active endpoints"));
    fx.stop(&container).await.unwrap();
    assert!(fx.inspect_network(&id).await.unwrap().containers.is_empty(), "only running containers");
    assert_eq!(remove_network(fx, &id).await, Ok(RuntimeReply::Done));
}

/// Docker: a network only created or stopped containers are attached to is removed (204); their
/// next start fails with 404 `network X not found` (NotFound) naming the network as the
/// container knows it: by name if it never ran, by id if it did. The container keeps its state,
/// with that error and exit code 128 (or its earlier one).
pub async fn network_removed_under_created_and_stopped_containers_fails_their_start<R: Runtime>(fx: &Fx<R>) {
    let id = fx.new_network("n").await;
    let name = fx.name("n");
    let mut spec = fx.spec("created", &[]);
    spec.networks = vec![attachment(&name, &[])];
    let created = fx.create_with(spec).await;
    let mut spec = fx.spec("stopped", &[]);
    spec.networks = vec![attachment(&name, &[])];
    let stopped = fx.create_with(spec).await;
    fx.start(&stopped).await;
    fx.stop(&stopped).await.unwrap();
    assert_eq!(remove_network(fx, &id).await, Ok(RuntimeReply::Done));
    let start = |id: String| fx.exec(RuntimeRequest::StartContainer { id });
    assert_eq!(not_found_message(start(created.clone()).await), format!("network {name} not found"));
    assert_eq!(not_found_message(start(stopped.clone()).await), format!("network {id} not found"));
    let info = fx.inspect(&created).await.unwrap();
    assert_eq!((info.state, info.exit_code), (ContainerState::Created, Some(128)));
    assert_eq!(info.error, Some(format!("network {name} not found")));
    let info = fx.inspect(&stopped).await.unwrap();
    assert_eq!((info.state, info.exit_code), (ContainerState::Exited, Some(137)), "keeps its exit code");
}

/// Docker: a create naming a network that does not exist succeeds; the start fails with 404
/// `network N not found` (NotFound), until a network of that name exists.
pub async fn create_on_a_missing_network_succeeds_and_its_start_is_not_found<R: Runtime>(fx: &Fx<R>) {
    let name = fx.network("later");
    let mut spec = fx.spec("a", &[]);
    spec.networks = vec![attachment(&name, &["web"])];
    let container = fx.create_with(spec).await;
    let start = || fx.exec(RuntimeRequest::StartContainer { id: container.clone() });
    assert_eq!(not_found_message(start().await), format!("network {name} not found"));
    assert_eq!(state(fx, &container).await, ContainerState::Created);
    let id = created_id(fx.create_network(&name, &[]).await);
    assert_eq!(start().await, Ok(RuntimeReply::Done));
    assert_eq!(fx.inspect_network(&id).await.unwrap().containers, std::slice::from_ref(&container));
}

/// Docker: a container created with two networks is attached to both (Docker takes one at
/// create: the adapter connects the other), with their aliases; once it runs, both list it.
pub async fn create_with_two_networks_attaches_both<R: Runtime>(fx: &Fx<R>) {
    let (one, two) = (fx.new_network("one").await, fx.new_network("two").await);
    let mut spec = fx.spec("a", &[]);
    spec.networks = vec![attachment(&one, &["first"]), attachment(&two, &["second", "other"])];
    let container = fx.create_with(spec).await;
    fx.start(&container).await;
    for network in [&one, &two] {
        assert_eq!(
            fx.inspect_network(network).await.unwrap().containers,
            std::slice::from_ref(&container),
            "{network}"
        );
    }
    fx.remove(&container, true).await.unwrap();
    for network in [&one, &two] {
        assert!(fx.inspect_network(network).await.unwrap().containers.is_empty());
        assert_eq!(remove_network(fx, network).await, Ok(RuntimeReply::Done));
    }
}

/// Docker: connecting a container that is not running only records it (200, again 200); once it
/// runs, a second connect is 403 `endpoint with name C already exists in network N` (Conflict),
/// a disconnect detaches it at once, and a second disconnect is 500 `container ID is not
/// connected to network N` (NotFound: there is nothing to detach). A missing container is 404
/// `No such container: X` whatever the network.
pub async fn network_connect_and_disconnect_with_aliases<R: Runtime>(fx: &Fx<R>) {
    let id = fx.new_network("n").await;
    let name = fx.name("n");
    let container = fx.create("a").await;
    let container_name = fx.name("a");
    assert_eq!(connect(fx, &id, &container, &["alias-one"]).await, Ok(RuntimeReply::Done));
    assert_eq!(connect(fx, &id, &container, &["alias-two"]).await, Ok(RuntimeReply::Done), "not running: again");
    fx.start(&container).await;
    assert_eq!(fx.inspect_network(&id).await.unwrap().containers, std::slice::from_ref(&container));
    let message = conflict_message(connect(fx, &name, &container, &[]).await);
    assert_eq!(message, format!("endpoint with name {container_name} already exists in network {name}"));
    assert_eq!(disconnect(fx, &name, &container).await, Ok(RuntimeReply::Done));
    assert!(fx.inspect_network(&id).await.unwrap().containers.is_empty());
    let message = not_found_message(disconnect(fx, &name, &container).await);
    assert_eq!(message, format!("container {container} is not connected to network {name}"));
    assert_eq!(connect(fx, &id, &container, &["again"]).await, Ok(RuntimeReply::Done), "running: at once");
    assert_eq!(fx.inspect_network(&id).await.unwrap().containers, std::slice::from_ref(&container));
    let missing = fx.name("missing");
    assert_eq!(not_found_message(connect(fx, &id, &missing, &[]).await), format!("No such container: {missing}"));
    assert_eq!(not_found_message(disconnect(fx, &id, &missing).await), format!("No such container: {missing}"));
    fx.remove(&container, true).await.unwrap();
}

/// Docker: a volume create is idempotent: a name taken answers the existing volume with its
/// labels, not the create's; inspect agrees.
pub async fn volume_create_is_idempotent_and_keeps_the_first_labels<R: Runtime>(fx: &Fx<R>) {
    const WHICH: &str = "drydock.test/which";
    let name = fx.volume("v");
    let first = fx.create_volume(&name, &[(RUN_LABEL, &fx.case), (WHICH, "first")]).await.unwrap();
    assert_eq!(first.name, name);
    assert_eq!(first.labels.get(WHICH).map(String::as_str), Some("first"));
    let again = fx.create_volume(&name, &[(RUN_LABEL, &fx.case), (WHICH, "second")]).await.unwrap();
    assert_eq!(again, first, "the existing volume, its labels unchanged");
    let inspected = fx.exec(RuntimeRequest::InspectVolume { name: name.clone() }).await.unwrap();
    assert_eq!(inspected, RuntimeReply::Volume(first));
}

/// Docker: volumes are listed by label; a removed one is 404 `get NAME: no such volume` to
/// inspect and to remove; a bad name is 400 (Invalid).
pub async fn volume_list_by_label_and_missing_volumes<R: Runtime>(fx: &Fx<R>) {
    const WHICH: &str = "drydock.test/which";
    let (a, b) = (fx.volume("a"), fx.volume("b"));
    fx.create_volume(&a, &[(RUN_LABEL, &fx.case), (WHICH, "a")]).await.unwrap();
    fx.create_volume(&b, &[(RUN_LABEL, &fx.case), (WHICH, "b")]).await.unwrap();
    assert_eq!(list_volumes(fx, &[(RUN_LABEL, &fx.case)]).await, [a.clone(), b.clone()]);
    assert_eq!(list_volumes(fx, &[(RUN_LABEL, &fx.case), (WHICH, "b")]).await, std::slice::from_ref(&b));
    assert_eq!(fx.exec(RuntimeRequest::RemoveVolume { name: a.clone() }).await, Ok(RuntimeReply::Done));
    let missing = format!("get {a}: no such volume");
    assert_eq!(not_found_message(fx.exec(RuntimeRequest::InspectVolume { name: a.clone() }).await), missing);
    assert_eq!(not_found_message(fx.exec(RuntimeRequest::RemoveVolume { name: a.clone() }).await), missing);
    assert_eq!(list_volumes(fx, &[(RUN_LABEL, &fx.case)]).await, std::slice::from_ref(&b));
    assert_eq!(
        invalid(fx.create_volume("bad name", &[]).await),
        "create bad name: \"bad name\" includes invalid characters for a local volume name, only \"[a-zA-Z0-9][a-zA-Z0-9_.-]\" are allowed. If you intended to pass a host directory, use absolute path"
    );
}

/// Docker: removing a volume a container (here a created one) mounts is 409 `remove NAME: volume
/// is in use - [ID]` (Conflict); once the container is gone it is removed.
pub async fn volume_remove_while_in_use_is_conflict<R: Runtime>(fx: &Fx<R>) {
    let name = fx.volume("v");
    fx.create_volume(&name, &[(RUN_LABEL, &fx.case)]).await.unwrap();
    let mut spec = fx.spec("a", &[]);
    spec.mounts = vec![mount(&name, "/data")];
    let container = fx.create_with(spec).await;
    let remove = || fx.exec(RuntimeRequest::RemoveVolume { name: name.clone() });
    assert_eq!(conflict_message(remove().await), format!("remove {name}: volume is in use - [{container}]"));
    fx.remove(&container, false).await.unwrap();
    assert_eq!(remove().await, Ok(RuntimeReply::Done));
}

/// A Dockerfile of two stages, the second failing. The case's label makes its steps its own:
/// Docker's build cache would share identical steps between cases running at once (and one
/// case's cleanup would remove images another's build is using).
fn build_dockerfile(case: &str) -> String {
    format!(
        "FROM drydock-test/busybox:latest AS base
LABEL {RUN_LABEL}={case}
ARG GREETING=hello
COPY hello.txt /data/hello.txt
RUN echo built $GREETING
CMD [\"cat\", \"/data/hello.txt\"]

FROM base AS broken
RUN exit 3
"
    )
}

/// Docker's classic builder: a build from a context directory (the test image as base, a file
/// copied in, a `RUN`, a `CMD`; `target` stopping before a failing stage) tags its image, which
/// inspect finds under the id the progress names, and whose containers run its command on its
/// files. The progress has each step and what `RUN` printed. The same inputs build the same id.
pub async fn build_from_a_context_tags_an_image_that_runs_its_command<R: Runtime>(fx: &Fx<R>) {
    let dockerfile = build_dockerfile(&fx.case);
    let context = fx.context("ctx", &[("Dockerfile", &dockerfile), ("hello.txt", "hi there\n")]);
    let tag = fx.tag("built");
    let progress = fx.build(&context, &tag, Some("base")).await.unwrap();
    assert!(progress[0].starts_with("Step 1/6 : FROM drydock-test/busybox:latest AS base"), "{progress:#?}");
    assert!(progress.contains(&"built hello".to_string()), "RUN's output: {progress:#?}");
    let image = fx.inspect_image(&tag).await.unwrap();
    let short = &image.id["sha256:".len().."sha256:".len() + 12];
    assert_eq!(progress[progress.len() - 2], format!("Successfully built {short}"), "{progress:#?}");
    assert_eq!(progress[progress.len() - 1], format!("Successfully tagged {tag}"));
    assert_eq!(image.tags, std::slice::from_ref(&tag));
    let mut spec = fx.spec("a", &[]);
    spec.image = tag.clone();
    let container = fx.create_with(spec).await;
    fx.start(&container).await;
    let (out, err) = captured(fx, &container, true).await;
    assert_eq!((out, err), (vec!["hi there".to_string()], vec![]));
    assert_eq!(fx.inspect(&container).await.unwrap().exit_code, Some(0));
    fx.remove(&container, false).await.unwrap();
    fx.build(&context, &tag, Some("base")).await.unwrap();
    assert_eq!(fx.inspect_image(&tag).await.unwrap().id, image.id, "the same inputs, the same id");
}

/// Docker's classic builder: a step that fails fails the build with its message (`The command
/// '/bin/sh -c exit 3' returned a non-zero code: 3`), as does an unknown instruction, a missing
/// Dockerfile or context, or a base image that is not there (no registry to pull it from): all
/// Invalid, and nothing is tagged.
pub async fn a_failing_build_is_invalid_and_tags_nothing<R: Runtime>(fx: &Fx<R>) {
    let dockerfile = build_dockerfile(&fx.case);
    let context = fx.context("ctx", &[("Dockerfile", &dockerfile), ("hello.txt", "hi there\n")]);
    let tag = fx.tag("broken");
    let message = invalid(fx.build(&context, &tag, None).await);
    assert_eq!(message, "The command '/bin/sh -c exit 3' returned a non-zero code: 3");
    assert!(is_not_found(&fx.inspect_image(&tag).await), "nothing tagged");
    let unknown = fx.context("unknown", &[("Dockerfile", "FROM drydock-test/busybox:latest\nFOO bar\n")]);
    let message = invalid(fx.build(&unknown, &tag, None).await);
    assert_eq!(message, "dockerfile parse error line 2: unknown instruction: FOO");
    let empty = fx.context("empty", &[("README", "no Dockerfile here")]);
    assert_eq!(invalid(fx.build(&empty, &tag, None).await), "Cannot locate specified Dockerfile: Dockerfile");
    let nowhere = format!("{context}-nowhere");
    assert_eq!(
        invalid(fx.build(&nowhere, &tag, None).await),
        format!("unable to prepare context: path {nowhere:?} not found")
    );
    let base = fx.context("base", &[("Dockerfile", "FROM drydock-test/absent-base:1\nRUN true\n")]);
    invalid(fx.build(&base, &tag, None).await);
    assert!(is_not_found(&fx.inspect_image(&tag).await), "still nothing tagged");
}

/// The docker CLI's `.dockerignore`: a build sends the context less what it excludes (a comment
/// line, a file, a rooted directory with an exception under it, a `**` glob), so `COPY . /app/`
/// copies none of it; the Dockerfile is sent though listed (the build reads it) but not copied;
/// `.dockerignore`, not listed, is copied like any file. An excluded file is no part of the
/// build: changing it builds the same id.
pub async fn a_build_leaves_out_what_dockerignore_excludes<R: Runtime>(fx: &Fx<R>) {
    let dockerfile = format!("FROM drydock-test/busybox:latest\nLABEL {RUN_LABEL}={}\nCOPY . /app/\n", fx.case);
    let dockerignore =
        "# secrets and build output stay out\nsecret.env\n/target/\n!target/keep.txt\n**/*.tmp\nDockerfile\n";
    let files = |secret: &str| {
        vec![
            ("Dockerfile", dockerfile.clone()),
            (".dockerignore", dockerignore.to_string()),
            ("kept.txt", "kept\n".to_string()),
            ("secret.env", format!("SECRET={secret}\n")),
            ("target/out.bin", "binary\n".to_string()),
            ("target/keep.txt", "keep\n".to_string()),
            ("src/main.sh", "echo main\n".to_string()),
            ("src/cache.tmp", "temporary\n".to_string()),
        ]
    };
    let context_of = |secret: &str| {
        let files = files(secret);
        let borrowed: Vec<(&str, &str)> = files.iter().map(|(p, c)| (*p, c.as_str())).collect();
        fx.context("ctx", &borrowed)
    };
    let context = context_of("1");
    let tag = fx.tag("ignoring");
    fx.build(&context, &tag, None).await.unwrap();
    let paths = [
        "kept.txt",
        "target/keep.txt",
        "src/main.sh",
        ".dockerignore",
        "secret.env",
        "target/out.bin",
        "src/cache.tmp",
        "Dockerfile",
    ];
    let mut script: Vec<String> =
        paths.iter().map(|p| format!("test -e /app/{p} && echo present {p} || echo absent {p}")).collect();
    script.push("cat /app/kept.txt /app/target/keep.txt".into());
    let script = script.join("; ");
    let mut spec = fx.spec("a", &["sh", "-c", &script]);
    spec.image = tag.clone();
    let container = fx.create_with(spec).await;
    fx.start(&container).await;
    let (out, err) = captured(fx, &container, true).await;
    let expected = [
        "present kept.txt",
        "present target/keep.txt",
        "present src/main.sh",
        "present .dockerignore",
        "absent secret.env",
        "absent target/out.bin",
        "absent src/cache.tmp",
        "absent Dockerfile",
        "kept",
        "keep",
    ];
    assert_eq!((out, err), (expected.map(String::from).to_vec(), vec![]));
    fx.remove(&container, false).await.unwrap();
    let id = fx.inspect_image(&tag).await.unwrap().id;
    assert_eq!(context_of("2"), context, "the same directory, the secret changed");
    fx.build(&context, &tag, None).await.unwrap();
    assert_eq!(fx.inspect_image(&tag).await.unwrap().id, id, "an excluded file is no part of the build");
}

/// Docker's archive upload: files copied into a created container (parent directories made)
/// are there when it runs: `cat` prints one. A missing container is 404 `No such container: X`.
pub async fn copied_files_are_read_by_the_container<R: Runtime>(fx: &Fx<R>) {
    use drydock_engine::api::container::CopiedFile;
    let container = fx.create_with(fx.spec("a", &["cat", "/etc/drydock/app/conf.txt"])).await;
    let file = |contents: &str| CopiedFile {
        destination: "/etc/drydock/app/conf.txt".into(),
        contents: contents.into(),
        mode: 0o640,
        owner: 0,
        group: 0,
    };
    let copy = |id: &str, files: Vec<CopiedFile>| fx.exec(RuntimeRequest::CopyFiles { id: id.into(), files });
    assert_eq!(copy(&container, vec![file("first\n")]).await, Ok(RuntimeReply::Done));
    assert_eq!(copy(&container, vec![file("line 1\nline 2\n")]).await, Ok(RuntimeReply::Done), "replaced");
    fx.start(&container).await;
    let (out, err) = captured(fx, &container, true).await;
    assert_eq!((out, err), (vec!["line 1".to_string(), "line 2".to_string()], vec![]));
    assert_eq!(fx.inspect(&container).await.unwrap().exit_code, Some(0));
    let missing = fx.name("missing");
    assert_eq!(not_found_message(copy(&missing, vec![file("x")]).await), format!("No such container: {missing}"));
}

/// Docker's archive upload extracts in order and stops at the first file it cannot write,
/// answering 500 `Error processing tar file(exit status 1): open PATH: WHY` (the adapter says
/// `Invalid`: the same copy fails the same way): a destination under a read-only mount (`read-only
/// file system`) or below a file (`not a directory`). The files before it are written, those
/// after it are not.
pub async fn a_copy_stops_at_a_file_it_cannot_write<R: Runtime>(fx: &Fx<R>) {
    use drydock_engine::api::container::CopiedFile;
    let volume = fx.volume("ro");
    let mut spec = fx.spec("a", &["cat", "/etc/drydock/first", "/etc/drydock/after"]);
    spec.mounts =
        vec![drydock_engine::api::container::Mount { source: volume.clone(), target: "/data".into(), read_only: true }];
    let container = fx.create_with(spec).await;
    let file = |destination: &str| CopiedFile {
        destination: destination.into(),
        contents: format!("{destination}\n"),
        mode: 0o644,
        owner: 0,
        group: 0,
    };
    let copy = |files: Vec<CopiedFile>| fx.exec(RuntimeRequest::CopyFiles { id: container.clone(), files });
    let refused = copy(vec![file("/etc/drydock/first"), file("/data/f"), file("/etc/drydock/after")]).await;
    assert_eq!(invalid(refused), "Error processing tar file(exit status 1): open /data/f: read-only file system");
    let below = copy(vec![file("/etc/drydock/first/x")]).await;
    assert_eq!(invalid(below), "Error processing tar file(exit status 1): open /etc/drydock/first/x: not a directory");
    fx.start(&container).await;
    let (out, err) = captured(fx, &container, true).await;
    assert_eq!(out, ["/etc/drydock/first"], "the file before the refused one was written");
    assert_eq!(err, ["cat: can't open '/etc/drydock/after': No such file or directory"], "the one after was not");
    fx.remove(&container, false).await.unwrap();
    fx.host.remove_volume(&volume).unwrap();
}

// Issue 44: Docker's behaviours the simulated runtime models since (logs that go with their
// container, the built-in networks' rules, ports by host address, the replay window of every
// event type, short image-id prefixes, copies through volume mounts).

/// Docker: a container's logs go with it. Once it is removed, a capture of it, followed or not,
/// is 404 `No such container: ID` (NotFound), whatever it printed.
pub async fn a_capture_of_a_removed_container_is_not_found<R: Runtime>(fx: &Fx<R>) {
    use futures_util::StreamExt;
    let id = fx.create_with(fx.spec("a", &["sh", "-c", "echo printed"])).await;
    fx.start(&id).await;
    fx.eventually("the container to exit", async || (state(fx, &id).await == ContainerState::Exited).then_some(()))
        .await;
    assert_eq!(captured(fx, &id, false).await.0, ["printed"], "its logs while it exists");
    fx.remove(&id, false).await.unwrap();
    for follow in [false, true] {
        let mut stream = fx.rt.capture(&id, follow, None).expect("the runtime captures output");
        let first = tokio::time::timeout(std::time::Duration::from_secs(30), stream.next())
            .await
            .expect("the capture answered");
        match first {
            Some(Err(RuntimeError::NotFound(message))) => assert_eq!(message, format!("No such container: {id}")),
            other => panic!("follow {follow}: expected NotFound, got {other:?}"),
        }
    }
}

/// Docker: network-scoped aliases need a user-defined network. Connecting a container to
/// `bridge` with aliases is 400 `network-scoped alias is supported only for containers in user
/// defined networks` (Invalid), running or not; without aliases it is taken. A create naming
/// `bridge` with aliases after another network is refused so (the adapter's connect of the
/// second fails, and it removes the container). A create naming it first succeeds (Docker
/// checks aliases when it attaches the endpoint): the start is refused with that message,
/// leaving the container created with exit code 128 and the error.
pub async fn network_aliases_on_the_default_bridge_are_invalid<R: Runtime>(fx: &Fx<R>) {
    const REFUSED: &str = "network-scoped alias is supported only for containers in user defined networks";
    let network = fx.new_network("n").await;
    let created = fx.create("created").await;
    assert_eq!(invalid(connect(fx, "bridge", &created, &["web"]).await), REFUSED);
    assert_eq!(connect(fx, "bridge", &created, &[]).await, Ok(RuntimeReply::Done), "without aliases");
    let mut spec = fx.spec("first", &[]);
    spec.networks = vec![attachment("bridge", &["web"])];
    let first = fx.create_with(spec).await;
    assert_eq!(invalid(fx.exec(RuntimeRequest::StartContainer { id: first.clone() }).await), REFUSED);
    let info = fx.inspect(&first).await.unwrap();
    assert_eq!((info.state, info.exit_code), (ContainerState::Created, Some(128)));
    assert_eq!(info.error.as_deref(), Some(REFUSED));
    let mut spec = fx.spec("second", &[]);
    spec.networks = vec![attachment(&network, &[]), attachment("bridge", &["web"])];
    assert_eq!(invalid(fx.try_create(spec).await), REFUSED);
    let names: Vec<String> = fx.list(&[(RUN_LABEL, &fx.case)]).await.into_iter().map(|c| c.name).collect();
    assert!(!names.contains(&fx.name("second")), "the refused create left nothing: {names:?}");
    let mut spec = fx.spec("running", &[]);
    spec.networks = vec![attachment(&network, &[])];
    let running = fx.create_with(spec).await;
    fx.start(&running).await;
    assert_eq!(invalid(connect(fx, "bridge", &running, &["web"]).await), REFUSED);
    assert_eq!(connect(fx, "bridge", &running, &[]).await, Ok(RuntimeReply::Done), "without aliases");
}

/// Docker: a container on `host` or `none` has no other network, running or not. Connecting one
/// on `host` anywhere is 400 `container sharing network namespace with another container or host
/// cannot be connected to any other network`; one on `none`, or anything to `none`, 400
/// `container cannot be connected to multiple networks with one of the networks in private
/// (none) mode`; another container to `host`, 400 `container cannot be disconnected from host
/// network or connected to host network`: all Invalid. A create naming such a pair is refused
/// the same way (the adapter's connect of the second network fails) and leaves nothing.
pub async fn the_host_and_none_networks_exclude_any_other<R: Runtime>(fx: &Fx<R>) {
    const SHARED: &str =
        "container sharing network namespace with another container or host cannot be connected to any other network";
    const NONE: &str =
        "container cannot be connected to multiple networks with one of the networks in private (none) mode";
    const HOST: &str = "container cannot be disconnected from host network or connected to host network";
    let network = fx.new_network("n").await;
    let on = |suffix: &str, networks: &[&str]| {
        let mut spec = fx.spec(suffix, &[]);
        spec.networks = networks.iter().map(|n| attachment(n, &[])).collect();
        spec
    };
    let host = fx.create_with(on("host", &["host"])).await;
    let none = fx.create_with(on("none", &["none"])).await;
    let bridged = fx.create("bridged").await;
    for running in [false, true] {
        assert_eq!(invalid(connect(fx, &network, &host, &[]).await), SHARED, "running: {running}");
        assert_eq!(invalid(connect(fx, "bridge", &host, &[]).await), SHARED, "running: {running}");
        assert_eq!(invalid(connect(fx, &network, &none, &[]).await), NONE, "running: {running}");
        assert_eq!(invalid(connect(fx, "host", &bridged, &[]).await), HOST, "running: {running}");
        assert_eq!(invalid(connect(fx, "none", &bridged, &[]).await), NONE, "running: {running}");
        for id in [&host, &none, &bridged] {
            fx.start(id).await;
        }
    }
    assert_eq!(invalid(fx.try_create(on("host-first", &["host", &network])).await), SHARED);
    assert_eq!(invalid(fx.try_create(on("host-second", &[&network, "host"])).await), HOST);
    assert_eq!(invalid(fx.try_create(on("none-first", &["none", &network])).await), NONE);
    assert_eq!(fx.list(&[(RUN_LABEL, &fx.case)]).await.len(), 3, "the refused creates left nothing");
}

/// Docker: a container on `host` publishes nothing (its create warns "Published ports are
/// discarded when using host network mode"): its start binds no port, so a port a host process
/// listens on is no obstacle, and inspect shows no ports. Nor does one on `none`.
pub async fn ports_are_not_published_on_the_host_or_none_network<R: Runtime>(fx: &Fx<R>) {
    let hold = fx.host.listen();
    for network in ["host", "none"] {
        let mut spec = publishing(fx, network, Some(hold.port), &[]);
        spec.networks = vec![attachment(network, &[])];
        let id = fx.create_with(spec).await;
        assert_eq!(fx.exec(RuntimeRequest::StartContainer { id: id.clone() }).await, Ok(RuntimeReply::Done));
        let info = fx.inspect(&id).await.unwrap();
        assert_eq!((info.state, info.ports), (ContainerState::Running, vec![]), "on {network}");
    }
}

/// Docker: host ports are told apart by address. 127.0.0.1:P and 127.0.0.2:P are both
/// published; the same address again is refused by Docker's allocator (`Bind for 127.0.0.1:P
/// failed: port is already allocated`), the wildcard while a specific address holds the port,
/// or the reverse, by the kernel (`Error starting userland proxy: listen tcp4 0.0.0.0:P: bind:
/// address already in use`): Transient, as any port taken.
pub async fn port_conflicts_depend_on_the_host_address<R: Runtime>(fx: &Fx<R>) {
    let port = fx.host.free_port();
    let at = |suffix: &str, ip: Option<&str>| {
        let mut spec = publishing(fx, suffix, Some(port), &[]);
        spec.ports[0].host_ip = ip.map(str::to_string);
        spec
    };
    let start = |id: &str| fx.exec(RuntimeRequest::StartContainer { id: id.into() });
    let one = fx.create_with(at("one", Some("127.0.0.1"))).await;
    let two = fx.create_with(at("two", Some("127.0.0.2"))).await;
    let any = fx.create_with(at("any", None)).await;
    let again = fx.create_with(at("again", Some("127.0.0.1"))).await;
    assert_eq!(start(&one).await, Ok(RuntimeReply::Done));
    assert_eq!(start(&two).await, Ok(RuntimeReply::Done), "another address, the same port");
    let message = transient(start(&any).await);
    let in_use =
        |ip: &str| format!("Error starting userland proxy: listen tcp4 {ip}:{port}: bind: address already in use");
    assert!(message.contains(&in_use("0.0.0.0")), "{message}");
    let message = transient(start(&again).await);
    assert!(message.contains(&format!("Bind for 127.0.0.1:{port} failed: port is already allocated")), "{message}");
    fx.stop(&one).await.unwrap();
    fx.stop(&two).await.unwrap();
    assert_eq!(start(&any).await, Ok(RuntimeReply::Done), "the wildcard, once the port is free");
    let message = transient(start(&again).await);
    assert!(message.contains(&in_use("127.0.0.1")), "{message}");
}

/// Docker's replay window is its last 256 events of every type, not only container events:
/// 280 volume events (140 volumes created and removed) push a container's create out of a
/// `since` query.
pub async fn events_replay_counts_events_of_every_type<R: Runtime>(fx: &Fx<R>) {
    let first = fx.create("first").await;
    let want = vec![EventAction::Create];
    fx.eventually("the first create", async || Some(actions(&fx.events(&first).await)).filter(|a| *a == want)).await;
    for n in 0..140 {
        let name = fx.volume(&format!("filler-{n}"));
        fx.create_volume(&name, &[(RUN_LABEL, &fx.case)]).await.unwrap();
        assert_eq!(fx.exec(RuntimeRequest::RemoveVolume { name }).await, Ok(RuntimeReply::Done));
    }
    let last = fx.create("last").await;
    fx.eventually("the newest create", async || Some(actions(&fx.events(&last).await)).filter(|a| *a == want)).await;
    let gone = fx.events(&first).await;
    assert!(gone.is_empty(), "a replay still reaches the first container's events: {:?}", actions(&gone));
}

/// Docker's image lookup: a reference first, else an id prefix of any length that names one
/// image: six hex digits (a valid repository name too, with no such tag), with or without
/// `sha256:`.
pub async fn image_inspect_by_a_short_id_prefix<R: Runtime>(fx: &Fx<R>) {
    let id = fx.inspect_image(&fx.image).await.unwrap().id;
    let hex = &id["sha256:".len()..];
    for reference in [hex[..6].to_string(), format!("sha256:{}", &hex[..6])] {
        assert_eq!(fx.inspect_image(&reference).await.map(|i| i.id), Ok(id.clone()), "{reference}");
    }
}

/// Docker's archive upload writes through the container's mounts: a file copied under a
/// volume's mount point lands in the volume, where another container mounting it reads it. A
/// file at a mount point itself cannot replace it: the extraction removes what is there first
/// (the volume's contents), then fails at the mount point, 500 `Error processing tar file(exit
/// status 1): unlinkat //data: device or resource busy` (Invalid); the files before it are
/// written, those after it not.
pub async fn a_copy_under_a_volume_mount_lands_in_the_volume<R: Runtime>(fx: &Fx<R>) {
    use drydock_engine::api::container::CopiedFile;
    let volume = fx.volume("v");
    let mut spec = fx.spec("writer", &["cat", "/etc/drydock/first", "/data/sub/f.txt", "/etc/drydock/after"]);
    spec.mounts = vec![mount(&volume, "/data")];
    let writer = fx.create_with(spec).await;
    let file = |destination: &str, contents: &str| CopiedFile {
        destination: destination.into(),
        contents: contents.into(),
        mode: 0o644,
        owner: 0,
        group: 0,
    };
    let copy = |files: Vec<CopiedFile>| fx.exec(RuntimeRequest::CopyFiles { id: writer.clone(), files });
    assert_eq!(copy(vec![file("/data/sub/f.txt", "in the volume\n")]).await, Ok(RuntimeReply::Done));
    let mut spec = fx.spec("reader", &["cat", "/mnt/sub/f.txt"]);
    spec.mounts = vec![mount(&volume, "/mnt")];
    let reader = fx.create_with(spec).await;
    fx.start(&reader).await;
    assert_eq!(captured(fx, &reader, true).await, (vec!["in the volume".to_string()], vec![]), "through the volume");
    let refused =
        copy(vec![file("/etc/drydock/first", "first\n"), file("/data", "x\n"), file("/etc/drydock/after", "")]);
    assert_eq!(
        invalid(refused.await),
        "Error processing tar file(exit status 1): unlinkat //data: device or resource busy"
    );
    fx.start(&writer).await;
    let (out, err) = captured(fx, &writer, true).await;
    assert_eq!(out, ["first"], "the file before the refused one");
    assert_eq!(
        err,
        [
            "cat: can't open '/data/sub/f.txt': No such file or directory",
            "cat: can't open '/etc/drydock/after': No such file or directory"
        ],
        "the volume was emptied, the file after the refused one not written"
    );
}

/// Found by `drydock runtime diff --seed 44` (sequence 6, shrunk to 3 steps): the
/// simulated runtime disagreed with Docker at the last step. (The model lost a TERM sent the
/// instant the script started, before its `trap`; on Docker the trap is set by then.)
pub async fn runtime_diff_seed_44_sequence_6<R: Runtime>(fx: &Fx<R>) {
    use drydock_runtime_diff::ops::*;
    fx.replay(&[
        (
            Op::Create {
                c: 1,
                program: Program::TrapsTerm,
                image: ImageChoice::Base,
                volume: None,
                network: None,
                port: None,
            },
            r##""created""##,
        ),
        (Op::Start { c: 1 }, r##""done""##),
        (Op::Stop { c: 1, timeout_secs: 2 }, r##"{"held_grace_period":false,"stop":"done"}"##),
    ])
    .await;
}

/// Found by `drydock runtime diff --seed 455607` (sequence 94, shrunk to 4 steps): the
/// simulated runtime disagreed with Docker at the last step. (A container disconnected from
/// `bridge` before its start is on no network and publishes nothing; the model published.)
pub async fn runtime_diff_seed_455607_sequence_94<R: Runtime>(fx: &Fx<R>) {
    use drydock_runtime_diff::ops::*;
    fx.replay(&[
        (Op::Create { c: 1, program: Program::TrapsTerm, image: ImageChoice::Base, volume: None, network: None, port: Some(PortChoice::Ephemeral) }, r##""created""##),
        (Op::Disconnect { n: NetworkChoice::Bridge, c: 1 }, r##""done""##),
        (Op::Start { c: 1 }, r##""done""##),
        (Op::Inspect { c: 1 }, r##"{"container": "c1", "exit_code": null, "failed_start": false, "image": "base", "ports": [], "state": "Running"}"##),
    ])
    .await;
}

/// Found by `drydock runtime diff --seed 908288` (sequence 19, shrunk to 5 steps): the
/// simulated runtime disagreed with Docker at the last step. (Docker joins a starting
/// container's networks in turn, `bridge` first, and publishes its ports as it joins the first:
/// c0's host port, taken by c1, is the 500 before its own network, which was never made, is
/// looked up; the model looked every network up first and answered the 404.) The volume's
/// labels name the run, here the case: `drydock.diff.run` is `fx.case`, the sequence `0`.
pub async fn runtime_diff_seed_908288_sequence_19<R: Runtime>(fx: &Fx<R>) {
    use drydock_runtime_diff::ops::*;
    let together = format!(
        r##"[{{"labels":{{"drydock.diff.run":"{}","drydock.diff.sequence":"0"}},"volume":"v0"}},{{"error":"Transient"}}]"##,
        fx.case
    );
    fx.replay(&[
        (
            Op::Create {
                c: 0,
                program: Program::Default,
                image: ImageChoice::Base,
                volume: None,
                network: None,
                port: Some(PortChoice::Fixed),
            },
            r##""created""##,
        ),
        (
            Op::Create {
                c: 1,
                program: Program::Default,
                image: ImageChoice::Base,
                volume: None,
                network: None,
                port: Some(PortChoice::Fixed),
            },
            r##""created""##,
        ),
        (Op::Connect { n: NetworkChoice::Own(0), c: 0, alias: false }, r##""done""##),
        (Op::Start { c: 1 }, r##""done""##),
        (Op::Together(Box::new(Op::VolumeCreate { v: 0 }), Box::new(Op::Start { c: 0 })), &together),
    ])
    .await;
}

// Issue 44: the shell model (`$VAR`, pipes, `for`, `printf`, scripts run by path, files a
// process writes), each expectation as Docker 20.10's busybox `sh` showed it.

/// What container `spec` printed on each stream and its exit code, once it ended by itself.
async fn ran<R: Runtime>(
    fx: &Fx<R>,
    spec: drydock_engine::runtime::ContainerCreate,
) -> (String, Vec<String>, Vec<String>, Option<i64>) {
    let id = fx.create_with(spec).await;
    fx.start(&id).await;
    let (out, err) = captured(fx, &id, true).await;
    let info = fx
        .eventually("the container to exit", async || {
            fx.inspect(&id).await.ok().filter(|i| i.state == ContainerState::Exited)
        })
        .await;
    (id, out, err, info.exit_code)
}

fn strings(lines: &[&str]) -> Vec<String> {
    lines.iter().map(|s| s.to_string()).collect()
}

/// Docker: a process's environment is the create's variables with `PATH` (Docker's default),
/// `HOSTNAME` (the short id) and `HOME` (`/`); `$X` and `${X}` expand to a value (empty when
/// unset), split into fields unless quoted; `X=1` sets a shell variable, `X=1 cmd` gives it to
/// `cmd` only, `export` to every child; `$0` is `sh` and `$#` 0 for `sh -c`.
pub async fn a_script_expands_its_environment_and_variables<R: Runtime>(fx: &Fx<R>) {
    let script = "echo $FOO ${FOO}x \"$SP\" $SP; echo [$NOPE]; X=1; echo $X; Y=2 sh -c 'echo [$Y]'; echo [$Y]; \
                  export Z=3; sh -c 'echo $Z'; echo $HOME $PATH; echo $HOSTNAME; echo $0 $#; unset X; echo [$X]";
    let mut spec = fx.spec("a", &["sh", "-c", script]);
    spec.env = [("FOO", "bar"), ("SP", "a  b")].iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let (id, out, err, code) = ran(fx, spec).await;
    let path = "/ /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    let expected = ["bar barx a  b a b", "[]", "1", "[2]", "[]", "3", path, &id[..12], "sh 0", "[]"];
    assert_eq!((out, err, code), (strings(&expected), vec![], Some(0)));
}

/// Docker: `for x in WORDS` runs its body once per field (expansions split); `printf` reuses
/// its format while arguments are left, a missing one is empty, a `%d` of a non-number prints
/// 0 and `sh: invalid number 'X'` and makes the status 1; without a newline a line goes on.
pub async fn for_loops_and_printf_print_what_busybox_does<R: Runtime>(fx: &Fx<R>) {
    let script = "L='b c'; for x in a $L \"$L\"; do echo \"[$x]\"; done; printf '%s-%d|\\n' a 1 b 2 c; echo $?; \
                  printf 'x\\ty%%\\n'; printf abc; printf 'd\\n'";
    let (_, out, err, code) = ran(fx, fx.spec("a", &["sh", "-c", script])).await;
    let expected = ["[a]", "[b]", "[c]", "[b c]", "a-1|", "b-2|", "c-0|", "1", "x\ty%", "abcd"];
    assert_eq!((out, err, code), (strings(&expected), strings(&["sh: invalid number ''"]), Some(0)));
}

/// Docker: a pipeline feeds each command what the one before printed, and ends with the last
/// one's status; its commands run in subshells (an assignment or `exit` there does not reach
/// the script); standard error does not go down the pipe unless redirected (`2>&1`).
pub async fn a_pipeline_feeds_each_command_the_one_before<R: Runtime>(fx: &Fx<R>) {
    let script = "seq 12 | grep 1 | wc -l; echo a:b | tr : ' '; seq 5 | head -n 2; printf 'x\\ny\\n' | cat; \
                  echo hello | tr a-z A-Z; seq 3 | tail -n 1; echo err >&2 | wc -c; echo out 2>&1 | cat; \
                  X=1 | true; echo [$X]; exit 3 | true; false | true; echo $?; true | false";
    let (_, out, err, code) = ran(fx, fx.spec("a", &["sh", "-c", script])).await;
    let expected = ["4", "a b", "1", "2", "x", "y", "HELLO", "3", "0", "out", "[]", "0"];
    assert_eq!((out, err, code), (strings(&expected), strings(&["err"]), Some(1)));
}

/// Docker: the commands of a pipeline run at once, so it lasts as long as its longest one.
pub async fn a_pipeline_lasts_as_long_as_its_longest_command<R: Runtime>(fx: &Fx<R>) {
    runs_a_while_then_exits_6(fx, "sleep 0.5 | sleep 1; exit 6").await;
}

/// Docker: `>` writes a file, `>>` appends, `cat` and `test -f` see it; the file is the
/// container's: there again when it restarts, not in a new container from the same image.
pub async fn files_a_script_writes_stay_with_its_container<R: Runtime>(fx: &Fx<R>) {
    let script = "test -f /f && echo again; echo a >> /f; echo b>>/f; cat /f; echo c > /g; cat /g";
    let id = fx.create_with(fx.spec("a", &["sh", "-c", script])).await;
    fx.start(&id).await;
    let exited = async || fx.inspect(&id).await.ok().filter(|i| i.state == ContainerState::Exited);
    fx.eventually("the first run to end", exited).await;
    fx.start(&id).await;
    let (out, err) = captured(fx, &id, true).await;
    let both_runs = ["a", "b", "c", "again", "a", "b", "a", "b", "c"];
    assert_eq!((out, err), (strings(&both_runs), vec![]), "the restart read what the first run wrote");
    let (_, out, _, _) = ran(fx, fx.spec("b", &["sh", "-c", script])).await;
    assert_eq!(out, ["a", "b", "c"], "a new container has none of it");
}

/// Docker: a file written under a named volume's mount point is in the volume, where another
/// container mounting it reads it; a write into a directory that does not exist (or is a
/// file), onto a directory or under a read-only mount fails with busybox's message and status
/// 1, and the script goes on.
pub async fn a_file_written_under_a_volume_mount_is_in_the_volume<R: Runtime>(fx: &Fx<R>) {
    let volume = fx.volume("v");
    let script = "echo in the volume > /data/f; echo x > /no/such/f; echo $?; echo x > /etc; echo x > /etc/hosts/x; \
                  cat < /nofile; echo $?";
    let mut spec = fx.spec("writer", &["sh", "-c", script]);
    spec.mounts = vec![mount(&volume, "/data")];
    let (_, out, err, code) = ran(fx, spec).await;
    let messages = [
        "sh: can't create /no/such/f: nonexistent directory",
        "sh: can't create /etc: Is a directory",
        "sh: can't create /etc/hosts/x: nonexistent directory",
        "sh: can't open /nofile: no such file",
    ];
    assert_eq!((out, err, code), (strings(&["1", "1"]), strings(&messages), Some(0)));
    let mut spec = fx.spec("reader", &["sh", "-c", "cat /mnt/f; echo x > /mnt/g"]);
    spec.mounts =
        vec![drydock_engine::api::container::Mount { source: volume.clone(), target: "/mnt".into(), read_only: true }];
    let (_, out, err, code) = ran(fx, spec).await;
    let refused = "sh: can't create /mnt/g: Read-only file system";
    assert_eq!((out, err, code), (strings(&["in the volume"]), strings(&[refused]), Some(1)));
}

/// Docker: a file copied in (`docker cp`) runs by path as its mode allows. `sh FILE` runs it
/// whatever its mode (`$0` is the path); run directly from a script it needs an `x` (`sh:
/// PATH: Permission denied`, 126), then runs by its `#!` line, or by `sh` without one. As the
/// container's command, runc refuses a file without `x` (`exec: "PATH": permission denied`,
/// 126, the container stays created) and runs one with it; without `#!` the process then fails
/// (`exec PATH: exec format error`, status 1).
pub async fn a_copied_script_runs_by_path_as_its_mode_allows<R: Runtime>(fx: &Fx<R>) {
    use drydock_engine::api::container::CopiedFile;
    let file = |destination: &str, contents: &str, mode: u32| CopiedFile {
        destination: destination.into(),
        contents: contents.into(),
        mode,
        owner: 0,
        group: 0,
    };
    let files = vec![
        file("/etc/drydock/s.sh", "#!/bin/sh\necho hi from $0 $1\nexit 4\n", 0o755),
        file("/etc/drydock/p.sh", "#!/bin/sh\necho hi from $0 $1\nexit 4\n", 0o644),
        file("/etc/drydock/n.sh", "echo no line\n", 0o755),
    ];
    let with_scripts = async |suffix: &str, command: &[&str]| {
        let id = fx.create_with(fx.spec(suffix, command)).await;
        let copy = fx.exec(RuntimeRequest::CopyFiles { id: id.clone(), files: files.clone() }).await;
        assert_eq!(copy, Ok(RuntimeReply::Done));
        id
    };
    let script = "sh /etc/drydock/p.sh a; echo $?; /etc/drydock/p.sh; echo $?; /etc/drydock/s.sh b; echo $?; \
                  /etc/drydock/n.sh; sh /nope.sh; echo $?";
    let id = with_scripts("a", &["sh", "-c", script]).await;
    fx.start(&id).await;
    let (out, err) = captured(fx, &id, true).await;
    let expected = ["hi from /etc/drydock/p.sh a", "4", "126", "hi from /etc/drydock/s.sh b", "4", "no line", "2"];
    let messages = ["sh: /etc/drydock/p.sh: Permission denied", "sh: can't open '/nope.sh': No such file or directory"];
    assert_eq!((out, err), (strings(&expected), strings(&messages)));
    let id = with_scripts("b", &["/etc/drydock/s.sh", "a1"]).await;
    fx.start(&id).await;
    assert_eq!(captured(fx, &id, true).await, (strings(&["hi from /etc/drydock/s.sh a1"]), vec![]));
    let exited = async || fx.inspect(&id).await.ok().filter(|i| i.state == ContainerState::Exited);
    assert_eq!(fx.eventually("s.sh to end", exited).await.exit_code, Some(4));
    let id = with_scripts("c", &["/etc/drydock/p.sh"]).await;
    let message = invalid(fx.exec(RuntimeRequest::StartContainer { id: id.clone() }).await);
    assert!(message.contains("exec: \"/etc/drydock/p.sh\": permission denied"), "{message}");
    let info = fx.inspect(&id).await.unwrap();
    assert_eq!((info.state, info.exit_code), (ContainerState::Created, Some(126)));
    let id = with_scripts("d", &["/etc/drydock/n.sh"]).await;
    fx.start(&id).await;
    assert_eq!(captured(fx, &id, true).await, (vec![], strings(&["exec /etc/drydock/n.sh: exec format error"])));
    let exited = async || fx.inspect(&id).await.ok().filter(|i| i.state == ContainerState::Exited);
    assert_eq!(fx.eventually("n.sh to fail", exited).await.exit_code, Some(1));
}

/// Docker's classic builder: a `RUN` step sees the stage's `ENV` (and `ARG`) variables, and
/// what it writes is in the image; a container of the image gets its `ENV` under the create's
/// variables, and reads the files.
pub async fn a_built_image_keeps_its_env_and_what_its_run_steps_wrote<R: Runtime>(fx: &Fx<R>) {
    let dockerfile = format!(
        "FROM drydock-test/busybox:latest
LABEL {RUN_LABEL}={case}
ENV GREETING=hello WHO=world
COPY show.sh /show.sh
RUN echo \"$GREETING from RUN\" > /built.txt && sh /show.sh
CMD [\"sh\", \"/show.sh\"]
",
        case = fx.case
    );
    let show = "echo $GREETING $WHO; cat /built.txt\n";
    let context = fx.context("ctx", &[("Dockerfile", &dockerfile), ("show.sh", show)]);
    let tag = fx.tag("env");
    let progress = fx.build(&context, &tag, None).await.unwrap();
    for line in ["hello world", "hello from RUN"] {
        assert!(progress.contains(&line.to_string()), "the RUN step printed {line:?}: {progress:#?}");
    }
    let mut spec = fx.spec("a", &[]);
    spec.image = tag.clone();
    spec.env.insert("WHO".into(), "you".into());
    let (_, out, err, code) = ran(fx, spec).await;
    assert_eq!((out, err, code), (strings(&["hello you", "hello from RUN"]), vec![], Some(0)));
}

/// Docker: `touch` makes a missing file, empty, and leaves one that exists as it is; a missing
/// directory is `touch: PATH: No such file or directory` and status 1; the file is the
/// container's (there again at its restart).
pub async fn touch_makes_an_empty_file<R: Runtime>(fx: &Fx<R>) {
    let script = "test -f /t && echo again; touch /t /etc; wc -c /t; echo a > /u; touch /u; cat /u; touch /no/such/t";
    let id = fx.create_with(fx.spec("a", &["sh", "-c", script])).await;
    fx.start(&id).await;
    let exited = async || fx.inspect(&id).await.ok().filter(|i| i.state == ContainerState::Exited);
    assert_eq!(fx.eventually("the first run to end", exited).await.exit_code, Some(1));
    fx.start(&id).await;
    let (out, err) = captured(fx, &id, true).await;
    let message = "touch: /no/such/t: No such file or directory";
    assert_eq!((out, err), (strings(&["0 /t", "a", "again", "0 /t", "a"]), strings(&[message, message])));
}

// Docker only: how the daemon itself behaves where the simulated runtime has nothing to model
// (its HTTP connections). `main.rs` runs these against Docker alone.

/// Docker: a request whose client hung up before the answer came is carried out all the same. A
/// stop with a grace period of 3 s of a script ignoring TERM is sent on a connection of our own,
/// which closes 300 ms later without reading anything: the container is still running then, and
/// is killed (137) when the grace period ends, with nobody waiting for the answer.
///
/// The engine relies on this: a change it stopped waiting for (its timeout) is *detached*, not
/// taken as never having happened, because it may still land; its retry waits for it to leave the
/// runtime instead of joining it there (`engine/src/engine/gate.rs`).
pub async fn a_stop_whose_client_hung_up_is_carried_out(fx: &Fx<DockerRuntime>) {
    use std::time::{Duration, Instant};
    let id = started_script(fx, "a", "trap '' TERM; while true; do sleep 0.1; done").await;
    let version = fx.rt.client().client_version();
    let request =
        format!("POST /v{version}/containers/{id}/stop?t=3 HTTP/1.1\r\nHost: docker\r\nContent-Length: 0\r\n\r\n");
    let sent = Instant::now();
    send_to_docker_and_hang_up(&request, Duration::from_millis(300)).await;
    let hung_up = sent.elapsed();
    assert_eq!(state(fx, &id).await, ContainerState::Running, "the stop had not finished when its client left");
    let info = loop {
        let info = fx.inspect(&id).await.unwrap();
        if info.state == ContainerState::Exited {
            break info;
        }
        assert!(sent.elapsed() < Duration::from_secs(10), "still {:?} 10 s after the stop was sent", info.state);
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let stopped = sent.elapsed();
    assert_eq!(info.exit_code, Some(137), "killed when the grace period ended");
    assert!(
        stopped >= Duration::from_millis(2_500),
        "exited {stopped:?} after the stop was sent (its client left after {hung_up:?}): before the grace period ended"
    );
}
