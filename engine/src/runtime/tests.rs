//! The runtime contract's own tests: every request classified, described and summarized.

use super::*;

/// One request of every kind, with what `is_read` must say of it.
fn every_request() -> Vec<(RuntimeRequest, bool)> {
    let id = || "c1".to_string();
    let labels = BTreeMap::from([("drydock.dev/owner".to_string(), "u1".to_string())]);
    vec![
        (RuntimeRequest::CreateContainer(ContainerCreate::default()), false),
        (RuntimeRequest::StartContainer { id: id() }, false),
        (RuntimeRequest::StopContainer { id: id(), timeout_secs: 10 }, false),
        (RuntimeRequest::RemoveContainer { id: id(), force: true }, false),
        (RuntimeRequest::InspectContainer { id: id() }, true),
        (RuntimeRequest::ListContainers { labels: labels.clone() }, true),
        (RuntimeRequest::InspectImage { reference: "busybox".into() }, true),
        (RuntimeRequest::PullImage { reference: "busybox".into() }, false),
        (RuntimeRequest::RemoveImage { reference: "busybox".into(), force: false }, false),
        (RuntimeRequest::ContainerEvents { id: id(), since: WallTime(0) }, true),
        (RuntimeRequest::CopyFiles { id: id(), files: Vec::new() }, false),
        (RuntimeRequest::BuildImage(ImageBuild::default()), false),
        (RuntimeRequest::CreateNetwork(NetworkCreate::default()), false),
        (RuntimeRequest::InspectNetwork { id: id() }, true),
        (RuntimeRequest::ListNetworks { labels: labels.clone() }, true),
        (RuntimeRequest::RemoveNetwork { id: id() }, false),
        (RuntimeRequest::ConnectNetwork { network: "n".into(), container: id(), aliases: Vec::new() }, false),
        (RuntimeRequest::DisconnectNetwork { network: "n".into(), container: id() }, false),
        (RuntimeRequest::CreateVolume(VolumeCreate::default()), false),
        (RuntimeRequest::InspectVolume { name: "v".into() }, true),
        (RuntimeRequest::ListVolumes { labels }, true),
        (RuntimeRequest::RemoveVolume { name: "v".into() }, false),
    ]
}

#[test]
fn inspections_lists_and_events_read_everything_else_changes_the_world() {
    for (request, read) in every_request() {
        assert_eq!(request.is_read(), read, "{}", request.describe());
        assert_eq!(request.changes_world(), !read, "{}", request.describe());
        let verb = request.describe().split([' ', '-']).next().unwrap_or_default().to_string();
        let reading_verb = ["inspect", "list", "events"].contains(&verb.as_str());
        assert_eq!(reading_verb, read, "`{}` reads by its name, and only then", request.describe());
    }
}

#[test]
fn a_request_names_its_target_unless_it_lists_or_creates_a_container_network_or_volume() {
    for (request, _) in every_request() {
        let (object, verb) = request.class();
        let names_none =
            matches!(verb, Verb::Create) && object != RuntimeObject::Image || request.describe().starts_with("list");
        assert_eq!(request.target().is_none(), names_none, "{request}");
    }
    let remove = RuntimeRequest::RemoveVolume { name: "data".into() };
    assert_eq!((remove.class(), remove.target()), ((RuntimeObject::Volume, Verb::Remove), Some("data")));
    let disconnect = RuntimeRequest::DisconnectNetwork { network: "n1".into(), container: "c1".into() };
    assert_eq!(disconnect.target(), Some("n1"), "a network's connections act on the network");
}

/// The codes a summary writes, and nothing else.
#[derive(Default)]
struct Codes(Vec<u16>);

impl Fields for Codes {
    fn code(&mut self, code: u16) {
        self.0.push(code);
    }
    fn text(&mut self, _: &str) {}
    fn flag(&mut self, _: bool) {}
    fn count(&mut self, _: usize) {}
    fn labels(&mut self, _: &BTreeMap<String, String>) {}
    fn state(&mut self, _: ContainerState) {}
}

#[test]
fn every_request_and_reply_summarizes_with_a_code_of_its_own() {
    let mut seen = std::collections::BTreeSet::new();
    for (request, _) in every_request() {
        let mut codes = Codes::default();
        request.summarize(&mut codes);
        assert_eq!(codes.0.len(), 1, "{request}: one code");
        assert!(seen.insert(codes.0[0]), "{request}: code {} taken", codes.0[0]);
    }
    let info = ContainerInfo {
        id: "c1".into(),
        name: "n".into(),
        image: "i".into(),
        labels: Labels::default(),
        state: ContainerState::Running,
        exit_code: None,
        error: None,
        ports: Vec::new(),
    };
    let replies = [
        RuntimeReply::Created { id: "c1".into() },
        RuntimeReply::Done,
        RuntimeReply::Container(info),
        RuntimeReply::Containers(Vec::new()),
        RuntimeReply::Image(ImageInfo { id: "i".into(), tags: Vec::new() }),
        RuntimeReply::Events(Vec::new()),
        RuntimeReply::Pulled { progress: Vec::new() },
        RuntimeReply::Built { progress: Vec::new() },
        RuntimeReply::Network(NetworkInfo {
            id: "n".into(),
            name: "n".into(),
            labels: BTreeMap::new(),
            containers: Vec::new(),
        }),
        RuntimeReply::Networks(Vec::new()),
        RuntimeReply::Volume(VolumeInfo { name: "v".into(), labels: BTreeMap::new() }),
        RuntimeReply::Volumes(Vec::new()),
    ];
    for reply in replies {
        let mut codes = Codes::default();
        reply.summarize(&mut codes);
        assert_eq!(codes.0.len(), 1, "{reply}: one code");
        assert!(seen.insert(codes.0[0]), "{reply}: code {} taken", codes.0[0]);
    }
    let mut codes = Codes::default();
    RuntimeError::NotFound("no such container".into()).summarize(&mut codes);
    assert!(seen.insert(codes.0[0]), "a failure's code {} taken", codes.0[0]);
    for code in seen {
        assert!(is_contract_code(code), "code {code} is outside the contract's block of trace codes");
    }
}
