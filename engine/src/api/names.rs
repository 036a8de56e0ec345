//! Labels, annotations and finalizers the engine owns. Callers cannot override system labels.

/// Runtime label: uid of the API object a runtime container was created for.
pub const LABEL_OWNER_UID: &str = "drydock.dev/owner-uid";
/// Runtime label: name of the namespace of that object.
pub const LABEL_NAMESPACE: &str = "drydock.dev/namespace";
/// Runtime label: uid of the namespace of that object.
pub const LABEL_NAMESPACE_UID: &str = "drydock.dev/namespace-uid";
/// Runtime label: present (`true`) on containers that are kept when their object is deleted.
pub const LABEL_RETAIN: &str = "drydock.dev/retain";
/// Runtime label: identity of the engine process that created the container.
pub const LABEL_CREATOR: &str = "drydock.dev/creator";
/// Namespace annotation: the identity of the engine process responsible for the namespace and
/// everything in it. Without it, every engine is.
pub const ANNOTATION_ENGINE: &str = "drydock.dev/engine";
/// Finalizer held by a namespace until all of its children are gone.
pub const FINALIZER_NAMESPACE: &str = "drydock.dev/namespace-cleanup";
/// Finalizer held by a container image until its pull is cancelled or done.
pub const FINALIZER_IMAGE: &str = "drydock.dev/image-cleanup";
/// Finalizer held by a logical container until the resources it owns are gone.
pub const FINALIZER_LOGICAL: &str = "drydock.dev/logical-cleanup";
/// Finalizer held by a physical container until its runtime container is gone (or, retained or
/// tracked by id, is left alone).
pub const FINALIZER_RUNTIME: &str = "drydock.dev/runtime-cleanup";
/// Finalizer a logical container puts on the resources it owns, set at create: they cannot
/// disappear while it still needs them.
pub const FINALIZER_HOLD: &str = "drydock.dev/logical-hold";
/// Runtime label: uid of the logical container a runtime container realises.
pub const LABEL_LOGICAL_UID: &str = "drydock.dev/logical-uid";
/// Runtime label: the lifecycle key the container was created with.
pub const LABEL_LIFECYCLE_KEY: &str = "drydock.dev/lifecycle-key";
/// Namespace annotation: the workload that owns persistent containers of this namespace.
pub const ANNOTATION_WORKLOAD: &str = "drydock.dev/workload";
