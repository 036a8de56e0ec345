//! The built-in controllers: the garbage collector ([`gc`]), namespaces ([`namespace`]), the
//! runtime-facing ones, physical containers ([`physical`]), container images ([`image`]),
//! networks and volumes ([`runtime_resource`]) and logical containers ([`logical`]), and the [`harvest`]er of containers whose object is gone.
//! The runtime-facing ones are written with the public [`toolkit`](crate::toolkit), as a user's
//! controller would be.

pub mod gc;
pub mod harvest;
pub mod image;
pub mod logical;
pub mod namespace;
pub mod physical;
pub mod runtime_resource;

use crate::controller::Controller;
use std::time::Duration;

/// The labels of what a controller creates in the runtime for `obj` (of namespace `ns`): the
/// caller's, then the system labels (owner uid, namespace and its uid, creator, retain), last, so
/// a caller can never override them.
pub(crate) fn system_labels(
    ctx: &crate::controller::Context<'_>,
    obj: &crate::api::Object,
    ns: &crate::api::Object,
    caller: &std::collections::BTreeMap<String, String>,
    retain: bool,
) -> std::collections::BTreeMap<String, String> {
    use crate::api::names;
    let mut labels = caller.clone();
    labels.insert(names::LABEL_OWNER_UID.into(), obj.metadata.uid.0.clone());
    labels.insert(names::LABEL_NAMESPACE.into(), obj.metadata.namespace.as_deref().unwrap_or_default().to_string());
    labels.insert(names::LABEL_NAMESPACE_UID.into(), ns.metadata.uid.0.clone());
    labels.insert(names::LABEL_CREATOR.into(), ctx.identity().to_string());
    if retain {
        labels.insert(names::LABEL_RETAIN.into(), "true".into());
    } else {
        labels.remove(names::LABEL_RETAIN);
    }
    labels
}

/// Tunables of the built-in controllers.
#[derive(Clone, Debug)]
pub struct ControllerConfig {
    /// How often a steady container is re-inspected, to notice what no event told us.
    pub monitor_interval: Duration,
    /// At most this many child deletes per namespace reconcile.
    pub max_namespace_deletes: usize,
    /// The workload recorded for persistent containers of namespaces without a
    /// `drydock.dev/workload` annotation.
    pub default_workload: Option<String>,
    /// How often the harvester looks for containers whose object is gone (besides at start).
    pub harvest_interval: Duration,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            monitor_interval: Duration::from_secs(30),
            max_namespace_deletes: 16,
            default_workload: None,
            harvest_interval: Duration::from_secs(60),
        }
    }
}

/// The controllers every engine runs: garbage collector, namespaces, physical containers,
/// container images, networks, volumes, logical containers and the harvester.
pub fn builtin(config: &ControllerConfig) -> Vec<Box<dyn Controller>> {
    let mut all: Vec<Box<dyn Controller>> = vec![
        Box::new(gc::GarbageCollector::default()),
        Box::new(namespace::NamespaceController::new(config.max_namespace_deletes)),
        Box::new(physical::PhysicalContainerController::new(config.monitor_interval)),
        Box::new(image::ContainerImageController::new(config.monitor_interval)),
    ];
    // One per runtime resource flavor (networks, volumes), listed with the flavors.
    all.extend(runtime_resource::flavor::controllers(config.monitor_interval));
    all.push(Box::new(logical::LogicalContainerController::new(config.default_workload.clone())));
    all.push(Box::new(harvest::Harvester::new(config.harvest_interval)));
    all
}
