//! The registry: repositories of tags and manifests, as a Docker registry (the distribution
//! project's, API v2) serves them to `docker push` and `docker pull`.
//!
//! As in Docker 20.10, a repository maps `name:tag` to a manifest digest;
//! pushing a tag again moves it to new content. Content has an image id (the digest of its
//! config), distinct from its manifest digest, and one manifest per content, so pushing one image
//! under two tags gives one digest. The transfers between the registry and the local image store
//! are in `distribution`.

use super::image_store::ImageConfig;
use super::references::{Selector, split_reference};
use super::sha256_of;
use std::collections::{BTreeMap, BTreeSet};

/// What a manifest in the registry describes.
#[derive(Clone, Debug)]
pub(crate) struct Content {
    pub(crate) image_id: String,
    pub(crate) config: ImageConfig,
}

/// One repository of the registry: its tags and the manifests it holds.
#[derive(Clone, Debug, Default)]
struct Repository {
    tags: BTreeMap<String, String>,
    manifests: BTreeSet<String>,
}

/// The registry's repositories and the content their manifests describe.
///
/// *Guarantees* (see [`Registry::check`]): a tag names a manifest its repository holds, a
/// manifest a repository holds has its content here, and a manifest's digest is that of its
/// content's image id (one manifest per content). Nothing is ever deleted: a tag only moves.
/// New content's image ids derive from the seed and a count of pushes, so the same pushes give
/// the same ids.
#[derive(Clone, Debug, Default)]
pub(crate) struct Registry {
    /// Normalized repository name (`127.0.0.1:5000/a/b`, `docker.io/library/busybox`) -> repository.
    repositories: BTreeMap<String, Repository>,
    /// Manifest digest -> content.
    contents: BTreeMap<String, Content>,
    /// Content pushed so far, for fresh digests.
    pushes: u64,
    seed: u64,
}

impl Registry {
    /// An empty registry whose new content's ids derive from `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        Registry { seed, ..Registry::default() }
    }

    /// Publish new content (the test image's config, a fresh image id) under `reference`.
    /// Returns its manifest digest.
    pub(crate) fn push_new(&mut self, reference: &str) -> String {
        self.pushes += 1;
        let n = self.pushes.to_le_bytes();
        let image_id = sha256_of(&[b"config", &self.seed.to_le_bytes(), &n]);
        self.publish(reference, Content { image_id, config: ImageConfig::busybox() })
    }

    /// Store `content` and point `reference` at it: a tag moves, a digest reference only adds the
    /// manifest to the repository. Returns the manifest digest.
    pub(crate) fn publish(&mut self, reference: &str, content: Content) -> String {
        let digest = manifest_digest(&content.image_id);
        let (name, selector) = split_reference(reference);
        self.contents.insert(digest.clone(), content);
        let repository = self.repositories.entry(name).or_default();
        repository.manifests.insert(digest.clone());
        if let Selector::Tag(tag) = selector {
            repository.tags.insert(tag, digest.clone());
        }
        digest
    }

    /// What `reference` names: its manifest digest and content.
    pub(crate) fn lookup(&self, reference: &str) -> Option<(&String, &Content)> {
        let (name, selector) = split_reference(reference);
        let repository = self.repositories.get(&name)?;
        let digest = match selector {
            Selector::Tag(tag) => repository.tags.get(&tag)?,
            Selector::Digest(digest) => repository.manifests.get(&digest)?,
        };
        Some((digest, self.contents.get(digest)?))
    }

    /// Whether anything was ever pushed to the repository `name` (normalized, without tag).
    pub(crate) fn has_repository(&self, name: &str) -> bool {
        self.repositories.contains_key(name)
    }

    /// Whether anything was ever pushed to a repository on registry `host`.
    pub(crate) fn has_host(&self, host: &str) -> bool {
        self.repositories.keys().any(|name| name.split_once('/').is_some_and(|(h, _)| h == host))
    }

    /// Whether the guarantees hold.
    pub(crate) fn check(&self) -> Result<(), String> {
        for (name, repository) in &self.repositories {
            if let Some((tag, _)) = repository.tags.iter().find(|(_, d)| !repository.manifests.contains(*d)) {
                return Err(format!("registry: tag {name}:{tag} names a manifest its repository lacks"));
            }
            if let Some(digest) = repository.manifests.iter().find(|d| !self.contents.contains_key(*d)) {
                return Err(format!("registry: {name}@{digest} has no content"));
            }
        }
        if let Some((digest, _)) = self.contents.iter().find(|(d, c)| **d != manifest_digest(&c.image_id)) {
            return Err(format!("registry: manifest {digest} is not its content's"));
        }
        Ok(())
    }
}

/// The manifest digest of content with image id `id`: one manifest per content, so pushing the
/// same image under two tags gives one digest, as in Docker.
fn manifest_digest(id: &str) -> String {
    sha256_of(&[b"manifest", id.as_bytes()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_move_and_one_content_has_one_manifest() {
        let mut registry = Registry::new(1);
        let first = registry.push_new("127.0.0.1:5000/team/app:1");
        let second = registry.push_new("127.0.0.1:5000/team/app:1");
        assert_ne!(first, second, "pushing a tag again publishes new content");
        registry.check().expect("after pushes");
        let (digest, content) = registry.lookup("127.0.0.1:5000/team/app:1").expect("tagged");
        assert_eq!(digest, &second, "the tag moved");
        let content = content.clone();
        let again = registry.publish("127.0.0.1:5000/team/other:latest", content);
        assert_eq!(again, second, "the same content, the same manifest");
        assert!(registry.lookup(&format!("127.0.0.1:5000/team/app@{first}")).is_some(), "the old one by digest");
        assert!(registry.lookup(&format!("127.0.0.1:5000/team/other@{first}")).is_none(), "not in that repository");
        assert!(registry.has_repository("127.0.0.1:5000/team/other") && registry.has_host("127.0.0.1:5000"));
        assert!(!registry.has_host("127.0.0.1"));
        assert_eq!(Registry::new(1).push_new("a:1"), Registry::new(1).push_new("a:1"), "same seed, same content");
        registry.check().expect("after a publish");
    }

    #[test]
    fn check_finds_a_dangling_tag_or_a_foreign_manifest() {
        let mut registry = Registry::new(1);
        registry.push_new("app:1");
        let mut broken = registry.clone();
        if let Some(repository) = broken.repositories.values_mut().next() {
            repository.manifests.clear();
        }
        assert!(broken.check().is_err(), "a tag without its manifest");
        let mut broken = registry.clone();
        if let Some(content) = broken.contents.values_mut().next() {
            content.image_id = "sha256:other".into();
        }
        assert!(broken.check().is_err(), "a manifest of other content");
    }
}
