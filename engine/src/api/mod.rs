//! The API types: objects, their metadata, and the built-in resource kinds.
//!
//! Objects are stored dynamically (`spec` and `status` are JSON values) so that the store and the
//! engine serve user-written kinds exactly like the built-in ones; each built-in kind has a typed
//! view through the [`Resource`] trait.

pub mod logical;
mod meta;
mod object;
pub mod resources;

pub use meta::{Condition, ConditionStatus, ObjectMeta, OwnerReference, Uid};
pub use object::{Object, ObjectKey, Resource, TypedError};
pub use resources::{
    ContainerImage, ContainerImageSpec, ContainerImageStatus, ContainerPhase, ImagePhase, Lease, LeaseSpec, Namespace,
    NamespacePhase, NamespaceSpec, NamespaceStatus, PhysicalContainer, PhysicalContainerSpec, PhysicalContainerStatus,
    PullPolicy, familiar_image_reference, is_runtime_name, normalize_image_reference,
};

/// Labels and finalizers the engine owns. Callers cannot override system labels.
pub mod names {
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
    /// Finalizer held by a physical container until its runtime container is gone.
    pub const FINALIZER_LOGICAL: &str = "drydock.dev/logical-cleanup";
    /// Finalizer a logical container puts on the resources it owns, set at create: they cannot
    /// disappear while it still needs them.
    pub const FINALIZER_HOLD: &str = "drydock.dev/logical-hold";
    /// Runtime label: uid of the logical container a runtime container realises.
    pub const LABEL_LOGICAL_UID: &str = "drydock.dev/logical-uid";
    /// Runtime label: the lifecycle key the container was created with.
    pub const LABEL_LIFECYCLE_KEY: &str = "drydock.dev/lifecycle-key";
    /// Namespace annotation: the workload that owns persistent containers of this namespace.
    pub const ANNOTATION_WORKLOAD: &str = "drydock.dev/workload";
    pub const FINALIZER_RUNTIME: &str = "drydock.dev/runtime-cleanup";
}
