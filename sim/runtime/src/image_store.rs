//! The local image store, following Docker 20.10 (`daemon/images`): images by id, and the
//! references that point to them.
//!
//! - The store keys images by id; references (`name:tag` tags and `name@digest` repo digests,
//!   normalized) point to ids. Pulling a tag that moved re-points the local tag and leaves the old
//!   image reachable by id and by its repo digest.
//! - Docker's `GetImage` finds an image by full id, else by reference, else by unique id prefix.
//!
//! What the image API does with it (inspect, removal and its conflicts) is in `images`.

use super::references::{full_id, is_tag_ref, normalize_reference, ref_name};
use std::collections::{BTreeMap, BTreeSet};

/// The command images get when none is given (`docker import -c 'CMD ...'`).
pub const DEFAULT_IMAGE_COMMAND: [&str; 2] = ["sleep", "3600"];

/// What a container made from an image starts with: its entrypoint and default command, the
/// files a build copied into it, and whether it has the test image's busybox at all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ImageConfig {
    pub(crate) entrypoint: Vec<String>,
    pub(crate) command: Vec<String>,
    /// Absolute path -> contents, of the files a build copied in (`COPY`, `ADD`).
    pub(crate) files: BTreeMap<String, String>,
    /// Built `FROM scratch`: no busybox, no `/bin/sh`; nothing but `files`.
    pub(crate) scratch: bool,
    /// The mount points its `VOLUME` instructions declared, cleaned: a container made from it
    /// gets an anonymous volume at each one no mount of its create covers.
    pub(crate) volumes: std::collections::BTreeSet<String>,
    /// The variables its `ENV` instructions set: a container's environment under the create's.
    pub(crate) env: BTreeMap<String, String>,
}

impl ImageConfig {
    /// The test image's: busybox, with [`DEFAULT_IMAGE_COMMAND`].
    pub(crate) fn busybox() -> Self {
        ImageConfig { command: DEFAULT_IMAGE_COMMAND.iter().map(|s| s.to_string()).collect(), ..Default::default() }
    }
}

/// A local image: its id, its config and every reference (normalized `name:tag` or
/// `name@sha256:...`) that points to it.
#[derive(Clone, Debug)]
pub(crate) struct SimImage {
    pub(crate) id: String,
    pub(crate) config: ImageConfig,
    refs: BTreeSet<String>,
}

impl SimImage {
    /// The references that point to it, in order.
    pub(crate) fn refs(&self) -> &BTreeSet<String> {
        &self.refs
    }
}

/// Images by id, and the references that point to them.
///
/// *Guarantees* (see [`ImageStore::check`]): an image is stored under its id; a reference
/// points to one stored image, which lists it among its references, and an image lists only
/// the references that point to it. A reference moves from one image to another in one step
/// ([`ImageStore::set_ref`]); deleting an image takes its references with it.
#[derive(Clone, Debug, Default)]
pub(crate) struct ImageStore {
    /// Image id -> image.
    images: BTreeMap<String, SimImage>,
    /// Normalized reference -> image id.
    refs: BTreeMap<String, String>,
    /// Every (normalized reference, image id) pair this store has ever had: a container made
    /// from a tag that moved since still ran an image the tag named.
    named: BTreeSet<(String, String)>,
}

impl ImageStore {
    /// Store an image unless one with that id is here already. Whether it was new.
    pub(crate) fn add(&mut self, id: &str, config: impl FnOnce() -> ImageConfig) -> bool {
        if self.images.contains_key(id) {
            return false;
        }
        self.images.insert(id.to_string(), SimImage { id: id.to_string(), config: config(), refs: BTreeSet::new() });
        true
    }

    /// Point `reference` (normalized) at image `id` (stored), taking it from any image it
    /// pointed to. Whether anything changed.
    pub(crate) fn set_ref(&mut self, reference: &str, id: &str) -> bool {
        debug_assert!(self.images.contains_key(id), "a reference to image {id}, which is not stored");
        if self.refs.get(reference).is_some_and(|old| old == id) {
            return false;
        }
        self.unset_ref(reference);
        self.refs.insert(reference.to_string(), id.to_string());
        self.named.insert((reference.to_string(), id.to_string()));
        if let Some(image) = self.images.get_mut(id) {
            image.refs.insert(reference.to_string());
        }
        true
    }

    /// Whether `reference` (normalized) has ever pointed at image `id`.
    pub(crate) fn has_named(&self, reference: &str, id: &str) -> bool {
        self.named.contains(&(reference.to_string(), id.to_string()))
    }

    /// Take `reference` from the image it points to, if any.
    pub(crate) fn unset_ref(&mut self, reference: &str) {
        if let Some(old) = self.refs.remove(reference)
            && let Some(image) = self.images.get_mut(&old)
        {
            image.refs.remove(reference);
        }
    }

    /// Delete image `id` with every reference to it.
    pub(crate) fn remove(&mut self, id: &str) {
        for r in self.refs_of(id) {
            self.unset_ref(&r);
        }
        self.images.remove(id);
    }

    /// The references to image `id`, in order.
    pub(crate) fn refs_of(&self, id: &str) -> Vec<String> {
        self.images.get(id).map(|i| i.refs.iter().cloned().collect()).unwrap_or_default()
    }

    /// Docker's `isSingleReference`: at least one reference, at most one of them a tag, all in
    /// one repository.
    pub(crate) fn is_single_reference(&self, id: &str) -> bool {
        let refs = self.refs_of(id);
        if refs.len() <= 1 {
            return refs.len() == 1;
        }
        let tags: Vec<&String> = refs.iter().filter(|r| is_tag_ref(r)).collect();
        if tags.len() > 1 {
            return false;
        }
        let names: BTreeSet<String> = refs.iter().map(|r| ref_name(r)).collect();
        names.len() == 1
    }

    /// Docker's `GetImage`: a full id is only an id; otherwise a reference (tag or repo digest),
    /// else a unique id prefix of any length (its digest set's `Lookup`), with or without
    /// `sha256:`. So a reference that could be either (`9a2d85`, a valid repository name) is the
    /// tag when there is one, else the image whose id it begins; a prefix of several ids names
    /// none (Docker: 404, as for no match). Seen on Docker 20.10.24: prefixes of 1, 2, 4 and 11
    /// hex digits inspect the image; a tag `e1413c` wins over the image whose id begins so.
    pub(crate) fn resolve(&self, reference: &str) -> Option<&SimImage> {
        if let Some(id) = full_id(reference) {
            return self.images.get(&id);
        }
        if let Some(image) =
            normalize_reference(reference).and_then(|r| self.refs.get(&r)).and_then(|id| self.images.get(id))
        {
            return Some(image);
        }
        let prefix = reference.strip_prefix("sha256:").unwrap_or(reference);
        if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return None;
        }
        // Ids are keys in order: the images a prefix begins are a run of them.
        let from = format!("sha256:{prefix}");
        let mut matches = self.images.range(from.clone()..).take_while(|(id, _)| id.starts_with(&from));
        match (matches.next(), matches.next()) {
            (Some((_, image)), None) => Some(image),
            _ => None,
        }
    }

    /// Whether the guarantees hold.
    pub(crate) fn check(&self) -> Result<(), String> {
        for (id, image) in &self.images {
            if image.id != *id {
                return Err(format!("image store: image {} stored as {id}", image.id));
            }
            if let Some(r) = image.refs.iter().find(|r| self.refs.get(*r) != Some(id)) {
                return Err(format!("image store: image {id} lists {r}, which points elsewhere"));
            }
        }
        for (r, id) in &self.refs {
            if !self.images.get(id).is_some_and(|image| image.refs.contains(r)) {
                return Err(format!("image store: {r} points to {id}, which does not list it"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID_A: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const ID_B: &str = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
    const DIGEST: &str =
        "docker.io/library/app@sha256:1111111111111111111111111111111111111111111111111111111111111111";

    #[test]
    fn references_move_between_images_and_go_with_them() {
        let mut store = ImageStore::default();
        assert!(store.add(ID_A, ImageConfig::busybox) && !store.add(ID_A, ImageConfig::default), "added once");
        store.add(ID_B, ImageConfig::default);
        let tag = "docker.io/library/app:1";
        assert!(store.set_ref(tag, ID_A) && !store.set_ref(tag, ID_A), "changed once");
        store.set_ref(DIGEST, ID_A);
        store.check().expect("tagged");
        assert_eq!(store.resolve("app:1").map(|i| i.id.as_str()), Some(ID_A), "by reference");
        assert_eq!(store.resolve(&ID_B[7..19]).map(|i| i.id.as_str()), Some(ID_B), "by id prefix");
        for short in ["b", "bb", "sha256:b", "sha256:bbbb"] {
            assert_eq!(store.resolve(short).map(|i| i.id.as_str()), Some(ID_B), "a prefix of any length: {short}");
        }
        assert!(store.resolve("sha256:").is_none() && store.resolve("B").is_none(), "no hex, or not lowercase");
        assert!(store.resolve("c").is_none(), "no image's id begins so");
        assert!(store.is_single_reference(ID_A), "one tag and a digest of one repository");
        store.set_ref(tag, ID_B);
        store.check().expect("moved");
        assert_eq!(store.refs_of(ID_A), [DIGEST]);
        assert_eq!(store.refs_of(ID_B), [tag]);
        store.remove(ID_B);
        store.check().expect("deleted with its references");
        assert!(store.resolve("app:1").is_none() && store.resolve(ID_B).is_none());
    }

    #[test]
    fn a_reference_wins_over_an_id_prefix_and_a_prefix_of_several_names_none() {
        let mut store = ImageStore::default();
        let id_c = "sha256:abcdef1111111111111111111111111111111111111111111111111111111111";
        let id_d = "sha256:abcdef2222222222222222222222222222222222222222222222222222222222";
        store.add(ID_A, ImageConfig::default);
        store.add(id_c, ImageConfig::default);
        store.add(id_d, ImageConfig::default);
        assert!(store.resolve("abcdef").is_none(), "two ids begin so");
        assert_eq!(store.resolve("abcdef1").map(|i| i.id.as_str()), Some(id_c));
        store.set_ref("docker.io/library/abcdef1:latest", ID_A);
        assert_eq!(store.resolve("abcdef1").map(|i| i.id.as_str()), Some(ID_A), "the tag, not the prefix");
        assert_eq!(store.resolve("sha256:abcdef1").map(|i| i.id.as_str()), Some(id_c), "`sha256:` is only an id");
    }

    #[test]
    fn check_finds_a_reference_that_points_nowhere() {
        let mut store = ImageStore::default();
        store.add(ID_A, ImageConfig::default);
        store.set_ref("docker.io/library/app:1", ID_A);
        let mut broken = store.clone();
        broken.images.clear();
        assert!(broken.check().is_err(), "a reference to an image not stored");
        let mut broken = store.clone();
        broken.refs.clear();
        assert!(broken.check().is_err(), "an image listing a reference that points elsewhere");
    }
}
