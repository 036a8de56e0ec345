//! The container records and their indexes, on their own: insertion, replacement and removal
//! keep the name and label indexes in step; ids and generated names.

use super::*;

fn info(id: &str, name: &str, labels: &[(&str, &str)]) -> ContainerInfo {
    ContainerInfo {
        id: id.into(),
        name: name.into(),
        image: "busybox".into(),
        labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>().into(),
        state: ContainerState::Created,
        exit_code: None,
        error: None,
        ports: Vec::new(),
    }
}

fn record(info: ContainerInfo) -> SimContainer {
    SimContainer::new(info, None, CreatedWith::default())
}

fn labelled(containers: &Containers, label: &str, value: &str) -> Vec<String> {
    containers.labelled(label, value).map(|c| c.id().to_string()).collect()
}

#[test]
fn inserts_replacements_and_removals_keep_the_indexes_in_step() {
    let mut containers = Containers::new(1);
    let first = containers.next_id();
    containers.insert_created(record(info(&first, "web", &[("app", "web"), ("tier", "front")])));
    containers.insert_outside(record(info("outside", "db", &[("app", "db"), ("tier", "front")])));
    containers.check().expect("two containers");
    assert_ne!(containers.next_id(), first, "a create uses its id up");
    assert_eq!(containers.id_named("web"), Some(&first));
    assert_eq!(labelled(&containers, "tier", "front"), {
        let mut ids = vec![first.clone(), "outside".to_string()];
        ids.sort();
        ids
    });
    // Replaced from outside: another name and other labels, the old ones free.
    let due = containers.replace(info("outside", "db2", &[("app", "db2")]), None, None);
    assert_eq!(due, None, "nothing was due");
    containers.check().expect("replaced");
    assert_eq!((containers.id_named("db"), containers.id_named("db2")), (None, Some(&"outside".to_string())));
    assert_eq!(labelled(&containers, "tier", "front"), std::slice::from_ref(&first));
    assert_eq!(labelled(&containers, "app", "db2"), ["outside"]);
    let removed = containers.remove(&first).expect("there");
    assert_eq!(removed.id(), first);
    containers.check().expect("removed");
    assert!(containers.id_named("web").is_none() && labelled(&containers, "app", "web").is_empty());
    assert!(containers.remove(&first).is_none(), "once");
}

#[test]
fn lookups_by_id_name_and_prefix() {
    let mut containers = Containers::new(1);
    containers.insert_outside(record(info("abc1", "one", &[])));
    containers.insert_outside(record(info("abc2", "two", &[])));
    assert_eq!(containers.resolve("abc1"), Ok("abc1".to_string()), "a full id");
    assert_eq!(containers.resolve("/two"), Ok("abc2".to_string()), "a name, with Docker's leading /");
    assert_eq!(
        containers.resolve("abc"),
        Err(RuntimeError::Invalid("Multiple IDs found with provided prefix: abc".into()))
    );
    assert!(matches!(containers.resolve(""), Err(RuntimeError::NotFound(_))), "no prefix at all");
    assert!(matches!(containers.resolve("x"), Err(RuntimeError::NotFound(_))));
}

#[test]
fn ids_and_generated_names_derive_from_the_seed() {
    let containers = Containers::new(1);
    assert_eq!(containers.next_id(), Containers::new(1).next_id());
    assert_ne!(containers.next_id(), Containers::new(2).next_id());
    assert_eq!(containers.next_id().len(), 64);
    let mut containers = Containers::new(1);
    let id = containers.next_id();
    let name = containers.generated_name(&id);
    containers.insert_created(record(info(&id, &name, &[])));
    let again = containers.generated_name(&id);
    assert_eq!(again, format!("{name}1"), "a digit is added while the name is taken");
}

#[test]
fn a_record_changes_state_only_through_its_transitions() {
    let mut container = record(info("c1", "web", &[]));
    container.run(WallTime(5));
    assert_eq!((container.state(), container.started_at), (ContainerState::Running, Some(WallTime(5))));
    container.exit(3);
    assert_eq!(
        (container.state(), container.info().exit_code, container.started_at),
        (ContainerState::Exited, Some(3), None)
    );
    container.fail_start("no", 128);
    assert_eq!(
        (container.state(), container.info().error.as_deref()),
        (ContainerState::Exited, Some("no")),
        "state kept"
    );
    container.run(WallTime(6));
    assert_eq!((container.info().exit_code, container.info().error.as_deref()), (None, None), "cleared by a start");
    container.mark_removing();
    assert_eq!(container.state(), ContainerState::Removing);
    assert_eq!(container.networks.keys().collect::<Vec<_>>(), [DEFAULT_NETWORK], "the default network");
}

#[test]
fn check_finds_an_index_out_of_step() {
    let mut containers = Containers::new(1);
    containers.insert_outside(record(info("c1", "web", &[("app", "web")])));
    let mut broken = containers.clone();
    broken.names.swap_remove("web");
    assert!(broken.check().is_err(), "a container missing from the name index");
    let mut broken = containers.clone();
    broken.labelled.remove("c1", &BTreeMap::from([("app".to_string(), "web".to_string())]));
    assert!(broken.check().is_err(), "a container missing from the label index");
    let mut broken = containers.clone();
    if let Some(c) = broken.records.get_mut("c1") {
        c.info.name = "renamed".into();
    }
    assert!(broken.check().is_err(), "a name changed behind the index");
}
