//! Tests of the invariants about what a terminal status says (`failures`).

use super::*;
use drydock_engine::logs::{Channel, Subject};
use drydock_engine::runtime::RuntimeError;

const REFUSAL: &str = "OCI runtime create failed: exec: \"/no/such\": stat /no/such: no such file or directory";

/// Physical container `a`, about to be stored `phase` with `reason` and `message` (its system
/// stream saying so, as `system-records-terminal-failures` requires).
fn turning(fx: &mut Fixture, phase: &str, reason: Option<&str>, message: &str) -> (Arc<Object>, StoreRequest) {
    let pc = fx.pc("a", busybox(), "c1");
    let own = Subject::Object(pc.metadata.uid.clone());
    fx.logs.hub.append(&own, Channel::System, WallTime(1), format!("phase Pending -> {phase}: {message}"));
    let mut next = (*pc).clone();
    next.status["phase"] = phase.into();
    if let Some(reason) = reason {
        next.status["reason"] = reason.into();
    }
    next.status["message"] = message.into();
    (pc, StoreRequest::UpdateStatus { object: next })
}

/// The runtime refused `pc`'s start with `REFUSAL`, as request 7 of process 0.
fn refused_start(fx: &mut Fixture, pc: &Object) {
    let start = RuntimeRequest::StartContainer { id: "c1".into() };
    let refused = Err(RuntimeError::Invalid(REFUSAL.into()));
    fx.observe(Happening::RuntimeSent { process: 0, id: OpId(7), request: &start, issuer: &pc.key() });
    fx.observe(Happening::RuntimeApplied { process: 0, id: OpId(7), request: &start, result: &refused, removed: None });
}

#[test]
fn a_runtime_refusal_stored_without_the_runtimes_words_is_caught() {
    let mut fx = Fixture::new();
    let (pc, request) = turning(&mut fx, "Failed", Some("StartFailed"), "the container could not start");
    refused_start(&mut fx, &pc);
    fx.observe(Happening::StoreApplying { process: 0, id: OpId(8), request: &request });
    assert_eq!(fx.violated().as_deref(), Some("failure-quotes-the-runtime"), "{}", fx.message());
    assert!(fx.message().contains("stat /no/such"), "the message names what the runtime said: {}", fx.message());
}

#[test]
fn a_runtime_refusal_quoting_the_runtime_passes_and_only_its_own_answers_count() {
    let quoting = format!("the runtime refused to start the container: {REFUSAL}");
    let mut fx = Fixture::new();
    let (pc, request) = turning(&mut fx, "Failed", Some("StartFailed"), &quoting);
    refused_start(&mut fx, &pc);
    fx.observe(Happening::StoreApplying { process: 0, id: OpId(8), request: &request });
    assert_eq!(fx.violated(), None, "{}", fx.message());

    // The same words, heard by another object's request, do not count for this one.
    let mut fx = Fixture::new();
    let (_, request) = turning(&mut fx, "Failed", Some("StartFailed"), &quoting);
    let other = fx.pc("b", busybox(), "c2");
    refused_start(&mut fx, &other);
    fx.observe(Happening::StoreApplying { process: 0, id: OpId(8), request: &request });
    assert_eq!(fx.violated().as_deref(), Some("failure-quotes-the-runtime"));

    // A failure of the engine's own finding has no runtime answer to quote.
    let mut fx = Fixture::new();
    let (_, request) = turning(&mut fx, "Failed", Some("NameTaken"), "the name is taken by a stranger");
    fx.observe(Happening::StoreApplying { process: 0, id: OpId(8), request: &request });
    assert_eq!(fx.violated(), None, "{}", fx.message());
}

#[test]
fn a_failed_or_missing_status_without_a_reason_is_caught() {
    for phase in ["Failed", "Missing"] {
        let mut fx = Fixture::new();
        let (_, request) = turning(&mut fx, phase, None, "gone");
        fx.observe(Happening::StoreApplying { process: 0, id: OpId(8), request: &request });
        assert_eq!(fx.violated().as_deref(), Some("terminal-status-has-reason"), "{phase}");
    }
    let mut fx = Fixture::new();
    let (_, request) = turning(&mut fx, "Missing", Some("RemovedExternally"), "removed outside drydock");
    fx.observe(Happening::StoreApplying { process: 0, id: OpId(8), request: &request });
    assert_eq!(fx.violated(), None, "{}", fx.message());
}

/// Network object `name` tracking runtime network `tracked`.
fn network(fx: &mut Fixture, name: &str, tracked: &str) {
    use drydock_engine::api::{ContainerNetwork, ContainerNetworkSpec};
    let spec = ContainerNetworkSpec { network_id: Some(tracked.into()), ..Default::default() };
    fx.store
        .create(WallTime(1), Object::from_spec::<ContainerNetwork>(ObjectMeta::named(Some("ns"), name), &spec))
        .unwrap();
}

/// Physical container `a` attached to `networks` (object name, aliases), about to be stored
/// Failed with NetworksRefused.
fn refused_with(fx: &mut Fixture, networks: &[(&str, &[&str])]) -> StoreRequest {
    use drydock_engine::api::container::NetworkAttachment;
    let networks = networks
        .iter()
        .map(|(name, aliases)| NetworkAttachment {
            name: name.to_string(),
            aliases: aliases.iter().map(|a| a.to_string()).collect(),
        })
        .collect();
    let pc = fx.pc("a", PhysicalContainerSpec { networks, ..busybox() }, "c1");
    let mut next = (*pc).clone();
    next.status["phase"] = "Failed".into();
    next.status["reason"] = "NetworksRefused".into();
    next.status["message"] = "spec.networks[0]: refused".into();
    StoreRequest::UpdateStatus { object: next }
}

#[test]
fn a_networks_refusal_docker_would_not_make_is_caught() {
    for allowed in [&[("bridge", &[][..]), ("mine", &[][..])][..], &[("mine", &["db"][..])][..]] {
        let mut fx = Fixture::new();
        network(&mut fx, "bridge", "bridge");
        network(&mut fx, "mine", "ns-mine");
        let request = refused_with(&mut fx, allowed);
        fx.observe(Happening::StoreApplying { process: 0, id: OpId(8), request: &request });
        assert_eq!(fx.violated().as_deref(), Some("networks-refused-as-docker-would"), "{allowed:?}");
    }
    for refused in [&[("host", &[][..]), ("mine", &[][..])][..], &[("bridge", &["db"][..])][..]] {
        let mut fx = Fixture::new();
        network(&mut fx, "bridge", "bridge");
        network(&mut fx, "host", "host");
        network(&mut fx, "mine", "ns-mine");
        let request = refused_with(&mut fx, refused);
        fx.observe(Happening::StoreApplying { process: 0, id: OpId(8), request: &request });
        assert_ne!(fx.violated().as_deref(), Some("networks-refused-as-docker-would"), "{refused:?}: {}", fx.message());
    }
}

#[test]
fn an_unavailable_status_saying_nothing_of_why_is_caught() {
    let mut fx = Fixture::new();
    let (_, request) = turning(&mut fx, "Unavailable", None, "");
    fx.observe(Happening::StoreApplying { process: 0, id: OpId(8), request: &request });
    assert_eq!(fx.violated().as_deref(), Some("terminal-status-has-reason"));
    let mut fx = Fixture::new();
    let (_, request) = turning(&mut fx, "Unavailable", None, "image sha256:1 was removed from the runtime");
    fx.observe(Happening::StoreApplying { process: 0, id: OpId(8), request: &request });
    assert_eq!(fx.violated(), None, "{}", fx.message());
}
