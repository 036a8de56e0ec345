//! The `reason` of a status: a stable, machine-readable word for why an object is in its phase
//! (Kubernetes' convention), beside the `message` that says it in words and carries the
//! runtime's own text. Set for the terminal phases (`Failed`) and for `Missing`.

/// `PhysicalContainer`, `ContainerNetwork`, `ContainerVolume` `Failed`: the runtime refused the
/// create as invalid (Docker's 400): it can never succeed as written, so it is never retried.
pub const CREATE_REFUSED: &str = "CreateRefused";
/// `PhysicalContainer` `Failed`: the create answered that the image is not present.
pub const IMAGE_NOT_FOUND: &str = "ImageNotFound";
/// `PhysicalContainer` `Failed`: the `ContainerImage` it is created from failed for good.
pub const IMAGE_FAILED: &str = "ImageFailed";
/// `PhysicalContainer` `Failed`: a `ContainerNetwork` it attaches to, or a `ContainerVolume` it
/// mounts, failed or went missing for good.
pub const DEPENDENCY_FAILED: &str = "DependencyFailed";
/// `PhysicalContainer` `Failed`: its networks are a combination Docker refuses, seen once the
/// `ContainerNetwork`s resolved: aliases on a built-in network (Docker takes network-scoped
/// aliases only on user-defined ones), or `host` or `none` beside another network.
pub const NETWORKS_REFUSED: &str = "NetworksRefused";
/// `PhysicalContainer`, `ContainerNetwork`, `ContainerVolume` `Failed`: the runtime name is held
/// by an object drydock did not create for this one, and `replaceExisting` is not set.
pub const NAME_TAKEN: &str = "NameTaken";
/// `PhysicalContainer` `Failed`: the runtime refused to start the container (a command not in
/// the image, a host port already taken, ...) as invalid, or recorded the same start failure
/// on the container for the whole start budget.
pub const START_FAILED: &str = "StartFailed";
/// `PhysicalContainer`, `ContainerNetwork`, `ContainerVolume` `Missing`: the runtime object was
/// removed outside drydock (or, for a tracked network or volume, never existed).
pub const REMOVED_EXTERNALLY: &str = "RemovedExternally";

/// `ContainerImage` `Failed`: every pull attempt (`pullRetryLimit + 1`) failed.
pub const PULL_FAILED: &str = "PullFailed";
/// `ContainerImage` `Failed`: the runtime refused a pull or an inspection of the reference as
/// invalid: no attempt can succeed.
pub const REFERENCE_REFUSED: &str = "ReferenceRefused";
/// `ContainerImage` `Failed`: the build failed (a step failed, a bad Dockerfile, a missing
/// context): the same inputs fail the same way, so it is not retried.
pub const BUILD_FAILED: &str = "BuildFailed";
/// `PhysicalContainer` `Failed`: copying its files into the created container failed.
pub const FILE_COPY_FAILED: &str = "FileCopyFailed";
/// `ContainerImage` `Failed`: the image was pulled, but inspecting it kept answering NotFound.
pub const NOT_VERIFIED: &str = "NotVerified";

/// `LogicalContainer` `Failed`: its backing `PhysicalContainer` disappeared, was replaced by
/// another object or lost its hold. (A backing that failed passes its own reason up.)
pub const BACKING_LOST: &str = "BackingLost";
/// `LogicalContainer` `Failed`: the name of its backing is taken by an object it did not create.
pub const BACKING_NOT_OURS: &str = "BackingNotOurs";
