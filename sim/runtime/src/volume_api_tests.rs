//! Volumes: create (idempotent), inspect, list, remove (what Docker 20.10 answers).

use super::super::test_support::create;
use super::*;
use drydock_engine::api::container::Mount;
use drydock_engine::runtime::{ContainerCreate, RuntimeRequest};

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn create_volume(rt: &mut SimRuntime, name: &str, pairs: &[(&str, &str)]) -> RuntimeResult {
    rt.execute(&RuntimeRequest::CreateVolume(VolumeCreate { name: name.into(), labels: labels(pairs) }))
}

fn listed(rt: &mut SimRuntime, pairs: &[(&str, &str)]) -> Vec<String> {
    match rt.execute(&RuntimeRequest::ListVolumes { labels: labels(pairs) }) {
        Ok(RuntimeReply::Volumes(list)) => list.into_iter().map(|v| v.name).collect(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn create_is_idempotent_and_keeps_the_first_labels() {
    let mut rt = SimRuntime::new(1);
    let first = create_volume(&mut rt, "v1", &[("a", "1")]).expect("created");
    assert_eq!(first, RuntimeReply::Volume(VolumeInfo { name: "v1".into(), labels: labels(&[("a", "1")]) }));
    assert_eq!(create_volume(&mut rt, "v1", &[("b", "2")]), Ok(first.clone()), "the existing one, unchanged");
    assert_eq!(rt.execute(&RuntimeRequest::InspectVolume { name: "v1".into() }), Ok(first));
    let bad = create_volume(&mut rt, "bad name", &[]);
    assert_eq!(
        bad,
        Err(RuntimeError::Invalid("create bad name: \"bad name\" includes invalid characters for a local volume name, only \"[a-zA-Z0-9][a-zA-Z0-9_.-]\" are allowed. If you intended to pass a host directory, use absolute path".into()))
    );
    let Ok(RuntimeReply::Volume(generated)) = create_volume(&mut rt, "", &[]) else { panic!("a generated name") };
    assert!(generated.name.len() == 64 && generated.name.bytes().all(|b| b.is_ascii_hexdigit()));
}

#[test]
fn missing_volumes_and_label_lists() {
    let mut rt = SimRuntime::new(1);
    let missing = Err(RuntimeError::NotFound("get nope: no such volume".into()));
    assert_eq!(rt.execute(&RuntimeRequest::InspectVolume { name: "nope".into() }), missing);
    assert_eq!(rt.execute(&RuntimeRequest::RemoveVolume { name: "nope".into() }), missing);
    create_volume(&mut rt, "v2", &[("a", "1"), ("b", "2")]).expect("v2");
    create_volume(&mut rt, "v1", &[("a", "1")]).expect("v1");
    assert_eq!(listed(&mut rt, &[("a", "1")]), ["v1", "v2"]);
    assert_eq!(listed(&mut rt, &[("b", "2")]), ["v2"]);
    rt.execute(&RuntimeRequest::RemoveVolume { name: "v1".into() }).expect("removed");
    assert_eq!(listed(&mut rt, &[]), ["v2"]);
}

#[test]
fn a_volume_in_use_cannot_be_removed_and_a_mount_makes_one_without_labels() {
    let mut rt = SimRuntime::new(1);
    rt.add_image("busybox");
    create_volume(&mut rt, "v1", &[("a", "1")]).expect("v1");
    let RuntimeRequest::CreateContainer(c) = create("c1", "busybox") else { unreachable!() };
    let mounts = ["v1", "made"]
        .iter()
        .enumerate()
        .map(|(i, v)| Mount { source: v.to_string(), target: format!("/m{i}"), read_only: false })
        .collect();
    let Ok(RuntimeReply::Created { id }) =
        rt.execute(&RuntimeRequest::CreateContainer(ContainerCreate { mounts, ..c }))
    else {
        panic!("created")
    };
    assert_eq!(
        rt.execute(&RuntimeRequest::RemoveVolume { name: "v1".into() }),
        Err(RuntimeError::Conflict(format!("remove v1: volume is in use - [{id}]")))
    );
    assert_eq!(
        rt.execute(&RuntimeRequest::InspectVolume { name: "made".into() }),
        Ok(RuntimeReply::Volume(VolumeInfo { name: "made".into(), labels: BTreeMap::new() }))
    );
    assert_eq!(listed(&mut rt, &[("a", "1")]), ["v1"], "the mount's volume has no labels");
}

/// A runtime with `app:1` built `FROM busybox` with `VOLUME /data /cache`.
fn with_volume_image() -> SimRuntime {
    let mut rt = SimRuntime::new(1);
    rt.add_image("busybox");
    let dockerfile = "FROM busybox\nVOLUME [\"/data\", \"/cache\"]\n".to_string();
    rt.add_build_context("/ctx", BTreeMap::from([("Dockerfile".to_string(), dockerfile)]));
    let build = drydock_engine::runtime::ImageBuild {
        context: "/ctx".into(),
        dockerfile: "Dockerfile".into(),
        tag: "app:1".into(),
        ..Default::default()
    };
    rt.execute(&RuntimeRequest::BuildImage(build)).expect("built");
    rt
}

fn is_generated(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

#[test]
fn an_images_volume_not_covered_by_a_mount_is_anonymous_and_goes_with_its_container() {
    let mut rt = with_volume_image();
    let mut spec = ContainerCreate { name: "first".into(), image: "app:1".into(), ..Default::default() };
    spec.command = vec!["sleep".into(), "60".into()];
    spec.mounts = vec![Mount { source: "cache".into(), target: "/cache/".into(), read_only: false }];
    let created = rt.execute(&RuntimeRequest::CreateContainer(spec));
    let Ok(RuntimeReply::Created { id }) = created else { panic!("{created:?}") };
    let volumes = listed(&mut rt, &[]);
    let anonymous: Vec<&String> = volumes.iter().filter(|n| is_generated(n)).collect();
    assert_eq!(anonymous.len(), 1, "/data only: /cache is covered by a mount: {volumes:?}");
    assert!(volumes.contains(&"cache".to_string()));
    assert!(rt.mounts_of(&id).any(|source| source == anonymous[0].as_str()), "mounted at /data");
    assert!(rt.take_journal().resource_changed(drydock_engine::runtime::RuntimeObject::Volume, anonymous[0]));
    let anonymous = anonymous[0].clone();
    rt.check().expect("consistent");
    assert!(matches!(rt.remove_volume(&anonymous), Err(RuntimeError::Conflict(_))), "in use");
    rt.execute(&RuntimeRequest::RemoveContainer { id, force: true }).expect("removed");
    assert_eq!(listed(&mut rt, &[]), ["cache"], "the anonymous volume went with its container, the named one stays");
    assert!(rt.take_journal().resource_changed(drydock_engine::runtime::RuntimeObject::Volume, &anonymous));
    rt.check().expect("consistent");
}

#[test]
fn an_anonymous_volume_another_container_mounts_stays_after_its_own_container() {
    let mut rt = with_volume_image();
    let first = ContainerCreate { name: "first".into(), image: "app:1".into(), ..Default::default() };
    let Ok(RuntimeReply::Created { id: a }) = rt.execute(&RuntimeRequest::CreateContainer(first)) else { panic!() };
    let data = rt.mounts_of(&a).find(|s| is_generated(s)).map(str::to_string).expect("anonymous");
    let mut second = create("second", "busybox");
    if let RuntimeRequest::CreateContainer(spec) = &mut second {
        spec.mounts = vec![Mount { source: data.clone(), target: "/shared".into(), read_only: false }];
    }
    let Ok(RuntimeReply::Created { id: b }) = rt.execute(&second) else { panic!() };
    rt.execute(&RuntimeRequest::RemoveContainer { id: a, force: true }).expect("removed");
    assert!(listed(&mut rt, &[]).contains(&data), "still in use by b");
    rt.check().expect("consistent");
    rt.execute(&RuntimeRequest::RemoveContainer { id: b, force: true }).expect("removed");
    assert!(listed(&mut rt, &[]).contains(&data), "b mounted it by name: no longer anonymous to anyone");
}
