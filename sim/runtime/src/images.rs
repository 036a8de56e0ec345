//! The image API over the local image store (see `image_store`), following Docker 20.10
//! (`daemon/images`): images made present outside any registry, inspect, and removal.
//!
//! - A container records the id of the image it was created from.
//! - Removal follows `ImageService.ImageDelete` (checked against the daemon by the conformance
//!   suite). By tag (or repo digest) it *untags*, and deletes the image only with its last
//!   reference: without force that is refused while any container uses the image and the tag is
//!   its only one; with force the tag always goes, and the image too unless a *running* container
//!   uses it, in which case it stays, untagged, and the removal still succeeds. By id it deletes
//!   the image with all its references: refused while a running container uses it (even forced),
//!   and without force also while a stopped one does or it has tags in several repositories.

use super::image_store::{ImageConfig, SimImage};
use super::references::{
    check_reference, familiar_reference, full_id, is_tag_ref, ref_name, reference_key, truncate_id,
};
use super::{SimRuntime, sha256_of};
use drydock_engine::runtime::{ContainerState, ImageInfo, RuntimeError, RuntimeReply, RuntimeResult};

impl SimRuntime {
    /// Make an image present under `reference` (as `docker load` or `docker import` would), with
    /// the default command; no registry involved. Its id is derived from the reference alone.
    pub fn add_image(&mut self, reference: &str) {
        let normalized = reference_key(reference);
        let id = sha256_of(&[normalized.as_bytes()]);
        self.images.add(&id, ImageConfig::busybox);
        self.images.set_ref(&normalized, &id);
    }

    pub fn has_image(&self, reference: &str) -> bool {
        self.images.resolve(reference).is_some()
    }

    /// Whether `reference` has ever named image `id` here (by tag or digest, pulled, built,
    /// tagged or loaded), even if it names another image now.
    pub fn has_named(&self, reference: &str, id: &str) -> bool {
        self.images.has_named(&reference_key(reference), id)
    }

    /// Docker's `GET /images/{name}/json`: a reference outside the grammar is refused (400),
    /// an unknown one is `NotFound`.
    pub(super) fn inspect_image(&self, reference: &str) -> RuntimeResult {
        if let Err(RuntimeError::Invalid(why)) = check_reference(reference) {
            return Err(RuntimeError::Invalid(format!("no such image: {reference}: {why}")));
        }
        self.images
            .resolve(reference)
            .map(|i| RuntimeReply::Image(image_info(i)))
            .ok_or_else(|| RuntimeError::NotFound(format!("No such image: {reference}")))
    }

    /// Docker 20.10's `ImageService.ImageDelete`, step by step.
    pub(super) fn remove_image(&mut self, reference: &str, force: bool) -> RuntimeResult {
        let Some(image) = self.images.resolve(reference) else {
            let shown = familiar_reference(reference)
                .filter(|_| full_id(reference).is_none())
                .unwrap_or_else(|| reference.to_string());
            return Err(RuntimeError::NotFound(format!("No such image: {shown}")));
        };
        let id = image.id.clone();
        // Docker's `isImageIDPrefix`.
        let is_id = id.starts_with(reference) || id["sha256:".len()..].starts_with(reference);
        let mut quiet = false;
        if !is_id {
            // A repository reference: untag it. Refused while a container uses the image and this
            // is its only tag, unless forced (the image would be left dangling).
            if !force
                && self.images.is_single_reference(&id)
                && let Some(container) = self.containers.first_using_image(&id, |_| true)
            {
                return Err(RuntimeError::Conflict(format!(
                    "conflict: unable to remove repository reference \"{reference}\" (must force) - container {} is using its referenced image {}",
                    truncate_id(&container),
                    truncate_id(&id)
                )));
            }
            let removed = reference_key(reference);
            self.images.unset_ref(&removed);
            self.other_events("image untag", 1);
            if is_tag_ref(&removed) {
                // With no tag of that repository left, its repo digests go too.
                let name = ref_name(&removed);
                let refs = self.images.refs_of(&id);
                if !refs.iter().any(|r| is_tag_ref(r) && ref_name(r) == name) {
                    for r in refs.iter().filter(|r| !is_tag_ref(r) && ref_name(r) == name) {
                        self.images.unset_ref(r);
                        self.other_events("image untag", 1);
                    }
                }
            }
            if !self.images.refs_of(&id).is_empty() {
                return Ok(RuntimeReply::Done);
            }
            quiet = true;
        } else if self.images.is_single_reference(&id) {
            // An id, and at most one tag: the references go first, if nothing stops the deletion.
            let conflicts = if force { Conflicts::Hard } else { Conflicts::AllButReferences };
            if let Some(conflict) = self.delete_conflict(&id, conflicts) {
                return Err(conflict.into_error(&id));
            }
            for r in self.images.refs_of(&id) {
                self.images.unset_ref(&r);
                self.other_events("image untag", 1);
            }
        }
        let conflicts = if force { Conflicts::Hard } else { Conflicts::All };
        if let Some(conflict) = self.delete_conflict(&id, conflicts) {
            // Having untagged, a conflict over a container leaves the image, untagged, in place.
            if quiet && conflict.used {
                return Ok(RuntimeReply::Done);
            }
            return Err(conflict.into_error(&id));
        }
        self.images.remove(&id);
        self.other_events("image delete", 1);
        Ok(RuntimeReply::Done)
    }

    /// `checkImageDeleteConflict`, in Docker's order: running containers, other references,
    /// stopped containers.
    fn delete_conflict(&self, id: &str, conflicts: Conflicts) -> Option<DeleteConflict> {
        if let Some(c) = self.containers.first_using_image(id, |c| c.state == ContainerState::Running) {
            return Some(DeleteConflict {
                hard: true,
                used: true,
                message: format!("image is being used by running container {}", truncate_id(&c)),
            });
        }
        if conflicts == Conflicts::All && !self.images.refs_of(id).is_empty() {
            return Some(DeleteConflict {
                hard: false,
                used: false,
                message: "image is referenced in multiple repositories".into(),
            });
        }
        if conflicts != Conflicts::Hard
            && let Some(c) = self.containers.first_using_image(id, |c| c.state != ContainerState::Running)
        {
            return Some(DeleteConflict {
                hard: false,
                used: true,
                message: format!("image is being used by stopped container {}", truncate_id(&c)),
            });
        }
        None
    }
}

/// Which containers stop an image's deletion (`checkImageDeleteConflict`).
#[derive(Copy, Clone, PartialEq, Eq)]
enum Conflicts {
    /// A running container (cannot be forced).
    Hard,
    /// A running or stopped container, or other references (must be forced).
    All,
    /// Hard and stopped containers, but not references.
    AllButReferences,
}

/// Why an image cannot be deleted (Docker's `imageDeleteConflict`).
struct DeleteConflict {
    /// Cannot be forced.
    hard: bool,
    /// A container uses the image.
    used: bool,
    message: String,
}

impl DeleteConflict {
    fn into_error(self, id: &str) -> RuntimeError {
        let force = if self.hard { "cannot be forced" } else { "must be forced" };
        RuntimeError::Conflict(format!("conflict: unable to delete {} ({force}) - {}", truncate_id(id), self.message))
    }
}

fn image_info(image: &SimImage) -> ImageInfo {
    ImageInfo {
        id: image.id.clone(),
        tags: image
            .refs()
            .iter()
            .filter(|r| is_tag_ref(r))
            .map(|r| familiar_reference(r).unwrap_or_else(|| r.clone()))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{create, id_of, image, is_sha256, pull};
    use super::*;
    use drydock_engine::runtime::RuntimeRequest;

    fn rmi(rt: &mut SimRuntime, reference: &str, force: bool) -> RuntimeResult {
        rt.execute(&RuntimeRequest::RemoveImage { reference: reference.into(), force })
    }

    const REG: &str = "127.0.0.1:5000/team/app";

    #[test]
    fn add_image_keeps_working() {
        let mut rt = SimRuntime::new(1);
        rt.add_image("drydock-test/busybox:latest");
        let info = image(&mut rt, "docker.io/drydock-test/busybox").expect("present");
        assert!(is_sha256(&info.id));
        assert_eq!(info.tags, vec!["drydock-test/busybox:latest".to_string()]);
        assert_eq!(image(&mut rt, &info.id).expect("by id").id, info.id);
        assert_eq!(image(&mut rt, &info.id[7..19]).expect("by 12-char prefix").id, info.id);
        assert_eq!(image(&mut rt, &info.id[7..9]).expect("by 2-char prefix").id, info.id, "any length, as Docker");
        rt.add_image("drydock-test/busybox:latest");
        assert_eq!(image(&mut rt, "drydock-test/busybox").expect("again").id, info.id, "adding again is a no-op");
        assert_eq!(SimRuntime::new(2).tap_add("drydock-test/busybox").id, info.id, "the id depends on the name only");
    }

    impl SimRuntime {
        fn tap_add(mut self, reference: &str) -> ImageInfo {
            self.add_image(reference);
            image(&mut self, reference).expect("just added")
        }
    }

    /// A container (created, or started) from a freshly pulled `REG:1`.
    fn used(running: bool) -> (SimRuntime, String, String) {
        let mut rt = SimRuntime::new(1);
        let tag = format!("{REG}:1");
        rt.registry_push(&tag);
        pull(&mut rt, &tag).expect("pull");
        let container = id_of(rt.execute(&create("c1", &tag)));
        if running {
            rt.execute(&RuntimeRequest::StartContainer { id: container.clone() }).expect("start");
        }
        let id = image(&mut rt, &tag).expect("pulled").id;
        (rt, id, container)
    }

    fn conflict(r: RuntimeResult) -> String {
        match r {
            Err(RuntimeError::Conflict(m)) => m,
            other => panic!("expected Conflict, got {other:?}"),
        }
    }

    #[test]
    fn remove_image_while_a_container_uses_it() {
        // What Docker 20.10 answers (checked with the daemon; see the conformance suite).
        let tag = format!("{REG}:1");
        for running in [false, true] {
            let (mut rt, id, container) = used(running);
            let m = conflict(rmi(&mut rt, &tag, false));
            assert!(m.contains("(must force)") && m.contains(&container[..12]), "{m}");
            let m = conflict(rmi(&mut rt, &id, false));
            let how = if running {
                "(cannot be forced) - image is being used by running container"
            } else {
                "(must be forced) - image is being used by stopped container"
            };
            assert!(m.contains(how), "{m}");
            assert_eq!(image(&mut rt, &tag).expect("untouched").id, id);
        }
        // By id with force: refused while running, done when stopped (the container stays).
        let (mut rt, id, container) = used(true);
        let m = conflict(rmi(&mut rt, &id, true));
        assert!(m.contains("cannot be forced"), "{m}");
        let (mut rt2, id2, container2) = used(false);
        rmi(&mut rt2, &id2, true).expect("forced");
        assert!(image(&mut rt2, &id2).is_err(), "deleted");
        assert!(rt2.container(&container2).is_some(), "the container stays");
        // By tag with force while running: only untagged; the image stays, by id.
        rmi(&mut rt, &tag, true).expect("untagged");
        assert!(matches!(image(&mut rt, &tag), Err(RuntimeError::NotFound(_))));
        assert!(image(&mut rt, &id).expect("kept").tags.is_empty());
        assert_eq!(rt.container(&container).map(|c| c.state), Some(ContainerState::Running));
        // By tag with force while stopped: deleted.
        let (mut rt, id, _) = used(false);
        rmi(&mut rt, &tag, true).expect("removed");
        assert!(image(&mut rt, &id).is_err(), "deleted");
    }

    #[test]
    fn remove_unused_and_missing_images() {
        let mut rt = SimRuntime::new(1);
        let tag = format!("{REG}:1");
        let digest = rt.registry_push(&tag);
        pull(&mut rt, &tag).expect("pull");
        let id = image(&mut rt, &tag).expect("pulled").id;
        rmi(&mut rt, "127.0.0.1:5000/team/app:1", false).expect("removed");
        for reference in [tag.clone(), id.clone(), format!("{REG}@{digest}")] {
            assert!(matches!(image(&mut rt, &reference), Err(RuntimeError::NotFound(_))), "{reference}");
        }
        match rmi(&mut rt, &tag, true) {
            Err(RuntimeError::NotFound(m)) => assert_eq!(m, format!("No such image: {tag}")),
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(rmi(&mut rt, "busybox", false), Err(RuntimeError::NotFound(m)) if m == "No such image: busybox:latest")
        );
        // By id prefix.
        pull(&mut rt, &tag).expect("pull again");
        rmi(&mut rt, &id[7..19], false).expect("by id prefix");
        assert!(!rt.has_image(&id));
    }

    #[test]
    fn remove_one_of_two_tags_only_untags() {
        let mut rt = SimRuntime::new(1);
        let (a, b) = (format!("{REG}:a"), format!("{REG}:b"));
        rt.registry_push(&a);
        rt.registry_tag(&a, &b).expect("tagged");
        pull(&mut rt, &a).expect("a");
        pull(&mut rt, &b).expect("b");
        let id = image(&mut rt, &a).expect("a").id;
        assert_eq!(image(&mut rt, &b).expect("b").id, id);
        let running = id_of(rt.execute(&create("c1", &a)));
        rt.execute(&RuntimeRequest::StartContainer { id: running.clone() }).expect("start");
        rmi(&mut rt, &a, false).expect("untagged although a running container uses the image");
        assert_eq!(image(&mut rt, &id).expect("kept").tags, vec![b.clone()]);
        let m = conflict(rmi(&mut rt, &b, false));
        assert!(m.contains("must force"), "the last tag: {m}");
        rt.execute(&RuntimeRequest::RemoveContainer { id: running, force: true }).expect("rm");
        rt.execute(&RuntimeRequest::PullImage { reference: a.clone() }).expect("tag a again");
        let m = conflict(rmi(&mut rt, &id, false));
        assert!(m.contains("(must be forced) - image is referenced in multiple repositories"), "{m}");
        rmi(&mut rt, &id, true).expect("by id with force: every tag goes");
        assert!(!rt.has_image(&a) && !rt.has_image(&b) && !rt.has_image(&id));
    }

    #[test]
    fn a_container_pins_the_image_id_not_the_tag() {
        let (mut rt, old, container) = used(false);
        let tag = format!("{REG}:1");
        rt.registry_push(&tag);
        pull(&mut rt, &tag).expect("moved");
        rmi(&mut rt, &tag, false).expect("the new image is unused");
        let m = conflict(rmi(&mut rt, &old, false));
        assert!(m.contains(&format!("stopped container {}", &container[..12])), "{m}");
        assert_eq!(rt.container(&container).map(|c| c.image.clone()), Some(tag), "the image as given at create");
    }
}
