//! The cases. Each takes a fixture and asserts one piece of the contract.

use super::fixture::{Fixture, RUN_LABEL};
use drydock_adapters::Runtime;
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
    fx.registry.ensure();
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
